//! The run document (versioned JSON: plan without the key, environment, per-request
//! records, summaries, verdict) and its CSV and Markdown renderings.
//!
//! The document's schema is an interface: `docs/run-document.md` describes every
//! field. Add fields with `#[serde(default)]`; bump [`RUN_SCHEMA`] only for a change
//! an older reader would misread, and keep reading the older versions.

use std::borrow::Borrow;

use serde::{Deserialize, Serialize};

use crate::{
    browser::{Browser, Engine, HTTP1_CONNECTIONS_PER_HOST},
    condition::{self, RunCondition},
    error::{Lang, Said},
    json,
    lag::{StallCount, LAG_DISTORTS_P95_MS},
    network::Network,
    plan::Plan,
    record::RequestRecord,
    said,
    search::{self, SearchOutcome},
    server_metrics::{self, ServerMetrics},
    summary::{Distortion, LevelStats, PassFigures, SessionFigures, Summary, TurnFigures},
    vecmap::VecMap,
    verdict::{analyse, Sentence, Verdict},
};

/// The run document version this crate writes.
pub(crate) const RUN_SCHEMA: u32 = 1;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every planned request ran.
    Done,
    /// The user cancelled it; what was measured is kept.
    Cancelled,
}

/// Which program wrote the document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// The program's name (`tokenmeter`).
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Default for ToolInfo {
    fn default() -> Self {
        ToolInfo {
            name: "tokenmeter".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// Where the run was measured from. Every field is optional: a native caller knows
/// less than a browser.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Who measured, when not this browser: `locust`, `vllm` (an imported run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The browser's user agent.
    #[serde(default)]
    pub user_agent: Option<String>,
    /// The page's origin (never the endpoint's key or query).
    #[serde(default)]
    pub page_origin: Option<String>,
    /// The smallest step of the clock, µs (browsers coarsen `performance.now()`).
    #[serde(default)]
    pub timer_resolution_us: Option<f64>,
    /// Whether the page was cross-origin isolated (a fine clock).
    #[serde(default)]
    pub cross_origin_isolated: Option<bool>,
    /// Cores the browser reported (`navigator.hardwareConcurrency`).
    #[serde(default)]
    pub hardware_concurrency: Option<u32>,
    /// What, besides the server, affected the figures (the browser's HTTP/1.1
    /// queue, uncached preflights, a hidden page, the engine's lag, a coarse timer).
    #[serde(default)]
    pub conditions: Vec<RunCondition>,
    /// The conditions as English sentences, generated from `conditions` by
    /// [`RunDocument::build`] (schema 1 readers know only these).
    #[serde(default)]
    pub notes: Vec<String>,
    /// How hard the measuring engine itself worked, level by level: what says
    /// whether the tool or the server was the limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine_load: Vec<EngineLoad>,
    /// The network's round trip to the server, from probes around the run
    /// (absent when none answered, and in runs measured elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// What the server reported while the run went (its `/metrics`), or why the
    /// page could not read it; absent where it was not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<ServerMetrics>,
}

/// The measuring engine's own load during one level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineLoad {
    /// The level (0 for open-loop arrivals).
    pub concurrency: u32,
    /// The level's wall time, ms.
    pub wall_ms: f64,
    /// How late the engine's event loop ran, worst and at p95 of its ticks while
    /// requests were in flight, ms: timestamps taken then are late by as much.
    pub lag_max_ms: f64,
    /// The lateness at p95 of its ticks while requests were in flight, ms.
    pub lag_p95_ms: f64,
    /// When into the level the worst lateness ended, ms.
    #[serde(default)]
    pub lag_max_at_ms: f64,
    /// Time spent in the engine's own code on the level's requests (sending,
    /// reading and accounting each chunk), ms; over `wall_ms` it is the share of one
    /// core the engine took, browser internals not counted.
    pub busy_ms: f64,
    /// Body chunks read.
    pub n_chunks: u64,
    /// What the loop's stalls did to the level's token events (see
    /// [`crate::lag::StallLog`]; absent in documents from before they were counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalls: Option<StallCount>,
    /// How many engine workers sent the level's requests, each stamping its own
    /// streams on the run's one clock (absent in documents from before the engine
    /// could spread a level: one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
}

impl Environment {
    /// The engine that measured the run (from the user agent).
    pub fn engine(&self) -> Engine {
        self.user_agent
            .as_deref()
            .map_or(Engine::Unknown, Engine::from_user_agent)
    }

    /// The browser that measured the run, as a person names it.
    pub fn browser(&self) -> Option<Browser> {
        self.user_agent.as_deref().map(Browser::from_user_agent)
    }

    /// What was measured of the path besides the requests, a line each with its
    /// hook: the network's round trip, and the server's own metrics (or why they
    /// could not be read).
    pub fn path_lines(&self) -> Vec<(&'static str, Said)> {
        let network = self.network.as_ref().map(|n| ("network-rtt", n.said()));
        let server = self
            .server_metrics
            .as_ref()
            .map(|m| ("server-metrics", m.said()));
        network.into_iter().chain(server).collect()
    }

    /// The conditions in `lang`; a document written before conditions were typed
    /// has only its English notes, shown as they are.
    pub fn notes_in(&self, lang: Lang) -> Vec<String> {
        if self.conditions.is_empty() {
            self.notes.clone()
        } else {
            self.conditions.iter().map(|c| c.text(lang)).collect()
        }
    }
}

/// Everything about one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunDocument {
    /// The document's format ([`RUN_SCHEMA`]).
    pub schema: u32,
    /// Which program wrote it.
    #[serde(default)]
    pub tool: ToolInfo,
    /// The run's id, unique per run.
    pub run_id: String,
    /// ISO 8601, as the caller's clock had it.
    pub started_at: String,
    /// Whether it ran to the end.
    pub status: RunStatus,
    /// The plan, which never holds the key.
    pub plan: Plan,
    /// Where it was measured from, and what affected it.
    #[serde(default)]
    pub environment: Environment,
    /// One summary per concurrency level, ascending.
    pub levels: Vec<Summary>,
    /// All levels together.
    pub total: Summary,
    /// The knee, the safe concurrency and the SLO per level.
    pub verdict: Verdict,
    /// Every request, warm-ups included (marked).
    pub records: Vec<RequestRecord>,
    /// What an SLO search found (plans in the `slo_search` mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchOutcome>,
    /// The other targets of an A/B plan (B, C, …), each a document of its own
    /// (its plan, records, levels and verdict); this document is target A's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ab: Vec<RunDocument>,
}

/// What, besides the server, shaped `level` so much that the verdict leaves it out:
/// the browser held its requests back (it never has more than its limit in flight
/// to one host, so throughput stops growing there whatever the server could do), or
/// the engine's own lag moved its timestamps (see [`LAG_DISTORTS_P95_MS`]).
fn distortion(level: &Summary, engine: Engine, conditions: &[RunCondition]) -> Option<Distortion> {
    if let Some(protocol) = level.browser_queued(engine) {
        return Some(Distortion::BrowserQueue {
            protocol: protocol.to_owned(),
            connections: engine
                .connections_per_host(protocol)
                .unwrap_or(HTTP1_CONNECTIONS_PER_HOST),
        });
    }
    conditions
        .iter()
        .find_map(|c| match *c {
            RunCondition::EngineLag {
                concurrency,
                lag_p95_ms: Some(lag_p95_ms),
                ..
            } if Some(concurrency) == level.concurrency && lag_p95_ms > LAG_DISTORTS_P95_MS => {
                Some(Distortion::Engine { lag_p95_ms })
            }
            _ => None,
        })
        .or_else(|| Distortion::buffered(level))
}

/// When each pass of the level of `concurrency` had requests in flight: from its
/// first send to its last end, µs.
fn pass_windows(records: &[RequestRecord], concurrency: Option<u32>) -> Vec<(u64, u64)> {
    let mut windows: VecMap<(u32, u32), (u64, u64)> = VecMap::new();
    for r in records
        .iter()
        .filter(|r| !r.warmup && Some(r.concurrency) == concurrency)
    {
        let window =
            windows.entry_or_insert_with((r.repetition, r.target), || (r.sent_us, r.end_us));
        window.0 = window.0.min(r.sent_us);
        window.1 = window.1.max(r.end_us);
    }
    windows.values().copied().collect()
}

impl RunDocument {
    /// Computes summaries and the verdict from the records.
    // Long: the document assembled from its parts in order.
    pub fn build(
        run_id: String,
        started_at: String,
        status: RunStatus,
        plan: Plan,
        environment: Environment,
        records: Vec<RequestRecord>,
    ) -> RunDocument {
        let engine = environment.engine();
        let mut by_level: VecMap<u32, LevelStats> = VecMap::new();
        for record in records.iter().filter(|r| !r.warmup) {
            by_level
                .entry_or_insert_with(record.concurrency, || {
                    LevelStats::for_engine(record.concurrency, engine)
                })
                .add(record);
        }
        let mut total = LevelStats::default();
        for stats in by_level.values() {
            total += stats;
        }
        if by_level.len() == 1 {
            // One level: the run total is that level, concurrency included.
            total.concurrency = by_level.keys().next().copied();
        }
        let mut levels: Vec<Summary> = by_level.values().map(|s| s.summary(&plan.slo)).collect();
        for level in &mut levels {
            level.distorted = distortion(level, engine, &environment.conditions);
        }
        if let Some(metrics) = &environment.server_metrics {
            for level in &mut levels {
                let windows = pass_windows(&records, level.concurrency);
                level.server = server_metrics::level(metrics, &windows);
            }
        }
        // A repeated ladder: each level's passes apart, for the noise between them.
        let mut by_pass: VecMap<(u32, u32), LevelStats> = VecMap::new();
        for record in records.iter().filter(|r| !r.warmup && r.repetition > 0) {
            by_pass
                .entry_or_insert_with((record.concurrency, record.repetition), || {
                    LevelStats::for_engine(record.concurrency, engine)
                })
                .add(record);
        }
        if !by_pass.is_empty() {
            for record in records.iter().filter(|r| !r.warmup && r.repetition == 0) {
                by_pass
                    .entry_or_insert_with((record.concurrency, 0), || {
                        LevelStats::for_engine(record.concurrency, engine)
                    })
                    .add(record);
            }
            for level in &mut levels {
                let Some(c) = level.concurrency else { continue };
                level.repetitions = by_pass
                    .iter()
                    .filter(|((level, _), _)| *level == c)
                    .map(|(&(_, repetition), stats)| {
                        PassFigures::of(repetition, &stats.summary(&plan.slo))
                    })
                    .collect();
            }
        }
        // Conversations: each level's turns apart.
        let mut by_turn: VecMap<(u32, u32), LevelStats> = VecMap::new();
        for record in records.iter().filter(|r| !r.warmup) {
            if let Some(turn) = record.turn {
                by_turn
                    .entry_or_insert_with((record.concurrency, turn.index), || {
                        LevelStats::for_engine(record.concurrency, engine)
                    })
                    .add(record);
            }
        }
        let turns = plan.conversation.map_or(0, |c| c.turns);
        for level in &mut levels {
            let Some(c) = level.concurrency else { continue };
            level.sessions = SessionFigures::of(
                records.iter().filter(|r| !r.warmup && r.concurrency == c),
                turns,
            );
            level.turns = by_turn
                .iter()
                .filter(|((level, _), _)| *level == c)
                .map(|(&(_, index), stats)| TurnFigures::of(index + 1, &stats.summary(&plan.slo)))
                .collect();
        }
        let verdict = analyse(&levels, &plan.slo, &plan.analysis);
        let mut environment = environment;
        environment
            .conditions
            .extend(condition::browser_queue(&levels, engine));
        environment
            .conditions
            .extend(condition::uncached_preflight(&levels, &records, engine));
        environment
            .conditions
            .extend(condition::timing_hidden(&levels));
        environment
            .conditions
            .extend(condition::prompt_cache(plan.prompt_mode, &records));
        environment
            .conditions
            .extend(condition::buffered_stream(&levels));
        if let Some(network) = &environment.network {
            environment
                .conditions
                .extend(condition::network(network, &levels));
        }
        let total = total.summary(&plan.slo);
        environment
            .conditions
            .extend(condition::stopped_early(&total, plan.force_output_lengths));
        environment.notes = condition::notes(&environment.conditions);
        RunDocument {
            schema: RUN_SCHEMA,
            tool: ToolInfo::default(),
            run_id,
            started_at,
            status,
            total,
            plan,
            environment,
            levels,
            verdict,
            records,
            search: None,
            ab: Vec::new(),
        }
    }

    /// The document of a run whose plan may hold several targets: target A's
    /// (with the whole plan), and one per other target in [`RunDocument::ab`], each
    /// from its own records.
    pub fn build_ab(
        run_id: String,
        started_at: String,
        status: RunStatus,
        plan: Plan,
        environment: Environment,
        records: Vec<RequestRecord>,
    ) -> RunDocument {
        if plan.targets.is_empty() {
            return RunDocument::build(run_id, started_at, status, plan, environment, records);
        }
        let mut by_target = by_target(plan.n_targets(), records).into_iter().enumerate();
        let (_, own) = by_target.next().expect("target A");
        let ab = by_target
            .map(|(i, records)| {
                let target = plan.for_target(i);
                let mut environment = environment.clone();
                // The metrics are target A's server's: another origin's server
                // is another server.
                if crate::plan::origin(&target.base_url) != crate::plan::origin(&plan.base_url) {
                    environment.server_metrics = None;
                }
                RunDocument::build(
                    format!("{run_id}-{}", Plan::target_label(i)),
                    started_at.clone(),
                    status,
                    target,
                    environment,
                    records,
                )
            })
            .collect();
        let mut document = RunDocument::build(run_id, started_at, status, plan, environment, own);
        document.ab = ab;
        document
    }

    /// The document as kept in a browser's history, and its JSON: without per-token
    /// arrival times and answer texts and, when its JSON is still larger than
    /// `max_bytes`, without its per-request records, which a condition then says
    /// (the summaries, the verdict and the notes stay whole). The full document is
    /// the JSON export. Written once: part by part, and no further than
    /// `max_bytes` when the records will not fit (a large run saved as it goes
    /// costs a megabyte of writing, not the run's size).
    pub fn for_history(&self, max_bytes: usize) -> (RunDocument, String) {
        let document = self.history_copy(max_bytes);
        let mut json = String::new();
        for part in document.json_parts(256, false) {
            json.push_str(&part);
            if json.len() > max_bytes {
                return document.history_copy_without_records();
            }
        }
        (document, json)
    }

    /// [`RunDocument::for_history`]'s copy before its size is known: the records
    /// without their per-token times and answer texts, an A/B run's other targets
    /// kept the same way (each within its share of `max_bytes`). Written a part at
    /// a time ([`JsonParts`]), it is kept if it fits in `max_bytes`; else
    /// [`RunDocument::history_copy_without_records`] is.
    pub fn history_copy(&self, max_bytes: usize) -> RunDocument {
        let mut document = self.clone_without_token_detail();
        let share = max_bytes / (self.ab.len() + 1);
        document.ab = self.ab.iter().map(|d| d.for_history(share).0).collect();
        document
    }

    /// This history copy without its records, as [`RunDocument::drop_records`]
    /// leaves it, and its JSON: what history keeps of a run too large for it.
    pub fn history_copy_without_records(&self) -> (RunDocument, String) {
        let mut document = self.clone_without_records();
        document.records_were(self.records.len());
        let json = serde_json::to_string(&document).expect("a run document always serialises");
        (document, json)
    }

    /// A copy whose records have no per-token times or answer text.
    fn clone_without_token_detail(&self) -> RunDocument {
        let mut document = self.clone_without_records();
        document.records = self
            .records
            .iter()
            .map(|r| RequestRecord {
                token_times_us: Vec::new(),
                output_text: None,
                ..r.clone()
            })
            .collect();
        document
    }

    /// A copy of everything but the records (which it has none of).
    fn clone_without_records(&self) -> RunDocument {
        // Every field but the records, named one by one: a field added to the
        // document is a compile error here until it is copied too.
        let RunDocument {
            schema,
            tool,
            run_id,
            started_at,
            status,
            plan,
            environment,
            levels,
            total,
            verdict,
            records: _,
            search,
            ab,
        } = self;
        RunDocument {
            schema: *schema,
            tool: tool.clone(),
            run_id: run_id.clone(),
            started_at: started_at.clone(),
            status: *status,
            plan: plan.clone(),
            environment: environment.clone(),
            levels: levels.clone(),
            total: total.clone(),
            verdict: verdict.clone(),
            records: Vec::new(),
            search: search.clone(),
            ab: ab.clone(),
        }
    }

    /// Moves the per-request records out, its own and then each A/B target's: how
    /// the engine hands a finished run to the page, which holds them already
    /// (progress brought each as it finished), so that they are not sent and read
    /// twice. [`RunDocument::put_records`] puts them back.
    pub fn take_records(&mut self) -> Vec<RequestRecord> {
        let mut records = std::mem::take(&mut self.records);
        for target in &mut self.ab {
            records.append(&mut target.records);
        }
        records
    }

    /// Puts `records` (warm-ups and every target's, in the order they finished)
    /// where [`RunDocument::build_ab`] puts them: each A/B target's into its own
    /// document, in their order.
    pub fn put_records(&mut self, records: Vec<RequestRecord>) {
        let mut by_target = by_target(self.ab.len() + 1, records).into_iter();
        self.records = by_target.next().unwrap_or_default();
        for (target, records) in self.ab.iter_mut().zip(by_target) {
            target.records = records;
        }
    }

    /// Leaves out the per-request records (a copy kept or shared without them),
    /// saying so in the conditions and the notes; nothing when there are none.
    pub fn drop_records(&mut self) {
        let n_records = std::mem::take(&mut self.records).len();
        self.records_were(n_records);
    }

    /// Says that the document's `n_records` records were left out (nothing when
    /// there were none).
    fn records_were(&mut self, n_records: usize) {
        if n_records == 0 {
            return;
        }
        let n_records = n_records as u64;
        self.environment
            .conditions
            .push(RunCondition::RecordsNotKept { n_records });
        self.environment
            .notes
            .push(condition::records_not_kept_note(n_records));
    }

    /// Keeps an SLO search's outcome in its finished document and says it first in
    /// the verdict, with what broke the SLO and how sure the answer is
    /// ([`search::confidence`]).
    pub fn conclude_search(&mut self, outcome: SearchOutcome) {
        let level = |c: u32| self.levels.iter().find(|l| l.concurrency == Some(c));
        let breaches = outcome.lowest_broken.map_or_else(Vec::new, |b| {
            match self.verdict.levels.iter().find(|l| l.concurrency == b) {
                Some(judged) => judged.slo_breaches.clone(),
                None => vec![match level(b).and_then(|l| l.distorted.as_ref()) {
                    Some(_) => {
                        "the browser or the engine, not the server, shaped this level".to_owned()
                    }
                    None => "no figures".to_owned(),
                }],
            }
        });
        let (n, n_good) = outcome
            .highest_met
            .and_then(level)
            .map_or((0, 0), |l| (l.n_ok + l.n_fail, l.n_good.unwrap_or(0)));
        self.verdict.lead(Sentence::SearchFound {
            highest: outcome.highest_met,
            lowest_broken: outcome.lowest_broken,
            max: outcome.max,
            breaches,
            n,
            n_good,
            confidence_pct: search::confidence(n, n_good).map(|c| c * 100.0),
        });
        self.search = Some(outcome);
    }

    /// The document as indented JSON (the export).
    pub fn to_json(&self) -> String {
        json::pretty(&serde_json::to_string(self).expect("a run document always serialises"))
    }

    /// The document's JSON a part at a time, `records_per_part` records to a part
    /// (at least one): joined, the parts are [`RunDocument::to_json`]'s text
    /// (`pretty`) or `serde_json`'s compact one. A large run is written in slices a
    /// page can yield between, never in one long task.
    pub fn json_parts(&self, records_per_part: usize, pretty: bool) -> JsonParts<&RunDocument> {
        JsonParts::new(self, records_per_part, pretty)
    }

    /// Reads a document written by this or an earlier version.
    pub fn from_json(json: &str) -> Result<RunDocument, DocumentError> {
        // Only the schema field first (the rest skipped unparsed), then the whole
        // document from the text: reading it through a `serde_json::Value` would
        // instantiate every type's deserializer a second time in the page's wasm.
        #[derive(Deserialize)]
        struct SchemaOnly {
            #[serde(default)]
            schema: Option<serde_json::Value>,
        }
        let probe: SchemaOnly =
            serde_json::from_str(json).map_err(|err| DocumentError::NotJson(err.to_string()))?;
        let schema = probe.schema.as_ref().and_then(serde_json::Value::as_u64);
        match schema {
            Some(s) if s <= RUN_SCHEMA as u64 => {
                serde_json::from_str(json).map_err(|err| DocumentError::Damaged(err.to_string()))
            }
            Some(schema) => Err(DocumentError::Newer { schema }),
            None => Err(DocumentError::NotOurs),
        }
    }
}

/// [`RunDocument::json_parts`]: the document's text before its records, its
/// records a slice at a time, then the rest (an A/B run's other targets, with
/// their records, in that last part).
pub struct JsonParts<D> {
    /// The document, borrowed or shared (`Arc`: parts written across tasks).
    document: D,
    per_part: usize,
    indenter: Option<json::Indenter>,
    /// The compact text after the records (made with the first part, the text
    /// before them).
    tail: Option<String>,
    next_record: usize,
    done: bool,
}

impl<D: Borrow<RunDocument>> JsonParts<D> {
    /// The parts of `document`'s JSON (see [`RunDocument::json_parts`]).
    pub fn new(document: D, records_per_part: usize, pretty: bool) -> JsonParts<D> {
        JsonParts {
            document,
            per_part: records_per_part.max(1),
            indenter: pretty.then(json::Indenter::default),
            tail: None,
            next_record: 0,
            done: false,
        }
    }

    /// The document's compact text without its records, cut where they go.
    fn frame(document: &RunDocument) -> (String, String) {
        let without = document.clone_without_records();
        let text = serde_json::to_string(&without).expect("a run document always serialises");
        // The top level's records come before its `search` and `ab` (field order),
        // and no key appears unescaped inside a string: the first is the one.
        const EMPTY: &str = "\"records\":[]";
        let at = text.find(EMPTY).expect("a document writes its records") + EMPTY.len() - 1;
        (text[..at].to_owned(), text[at..].to_owned())
    }

    fn indented(&mut self, compact: String) -> String {
        match &mut self.indenter {
            Some(indenter) => indenter.push(&compact),
            None => compact,
        }
    }
}

impl<D: Borrow<RunDocument>> Iterator for JsonParts<D> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        if self.done {
            return None;
        }
        let records = &self.document.borrow().records;
        let Some(tail) = &self.tail else {
            let (head, tail) = Self::frame(self.document.borrow());
            self.tail = Some(tail);
            return Some(self.indented(head));
        };
        if self.next_record >= records.len() {
            let tail = tail.clone();
            self.done = true;
            return Some(self.indented(tail));
        }
        let to = (self.next_record + self.per_part).min(records.len());
        let mut part = String::new();
        for (i, record) in records[self.next_record..to].iter().enumerate() {
            if self.next_record + i > 0 {
                part.push(',');
            }
            part.push_str(&serde_json::to_string(record).expect("a record always serialises"));
        }
        self.next_record = to;
        Some(self.indented(part))
    }
}

/// `records` split by the target they went to (of `n_targets`, A first), each
/// in its order; a target beyond the last counts as the last.
fn by_target(n_targets: usize, records: Vec<RequestRecord>) -> Vec<Vec<RequestRecord>> {
    let mut by_target: Vec<Vec<RequestRecord>> = vec![Vec::new(); n_targets.max(1)];
    for record in records {
        let i = (record.target as usize).min(by_target.len() - 1);
        by_target[i].push(record);
    }
    by_target
}

/// Why a text is not a run document this version reads: callers tell a damaged
/// or newer document of ours from another tool's result by matching.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DocumentError {
    /// Not JSON at all (the parser's words).
    NotJson(String),
    /// JSON without a `schema` field: not a tokenmeter document (another tool's
    /// result, perhaps).
    NotOurs,
    /// Written by a newer tokenmeter, whose schema this one does not know.
    Newer {
        /// The document's schema.
        schema: u64,
    },
    /// Ours, but a field is not what its schema says (the parser's words).
    Damaged(String),
}

impl DocumentError {
    /// Whether the text says it is a tokenmeter document (it has a schema): then
    /// no other tool's reader should be tried.
    pub fn is_ours(&self) -> bool {
        matches!(
            self,
            DocumentError::Newer { .. } | DocumentError::Damaged(_)
        )
    }

    /// What is wrong, in both languages.
    pub fn said(&self) -> Said {
        match self {
            DocumentError::NotJson(err) => {
                said!("this is not valid JSON: {err}", "这不是有效的 JSON：{err}")
            }
            DocumentError::NotOurs => said!(
                "this is not a tokenmeter run document (no schema field)",
                "这不是 tokenmeter 的运行文档（没有 schema 字段）"
            ),
            DocumentError::Newer { schema } => said!(
                "this run was saved by a newer tokenmeter (schema {schema}); this one reads up to {RUN_SCHEMA}",
                "这次运行由更新版本的 tokenmeter 保存（schema {schema}）；本版本最多读取 {RUN_SCHEMA}",
            ),
            DocumentError::Damaged(err) => said!(
                "this run document is damaged: {err}",
                "这个运行文档已损坏：{err}"
            ),
        }
    }
}

/// Written, the error is its English.
impl std::fmt::Display for DocumentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.said().en)
    }
}

impl std::error::Error for DocumentError {}

impl From<DocumentError> for Said {
    fn from(error: DocumentError) -> Said {
        error.said()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        error::{ErrorKind, RequestError},
        record::{RecordBuilder, RecordOptions, RequestStart, StreamEnd},
    };

    /// A document from `records`, as the page builds it at the end of a run.
    fn built(base_url: &str, records: Vec<RequestRecord>) -> RunDocument {
        RunDocument::build(
            "r".into(),
            "t".into(),
            RunStatus::Done,
            Plan::default_for_simulator(base_url),
            Environment::default(),
            records,
        )
    }

    /// What Resource Timing said of a request that waited `wait_us` in the browser.
    fn timing(fetch_start_us: u64, wait_us: u64, protocol: &str) -> crate::record::BrowserTiming {
        crate::record::BrowserTiming {
            fetch_start_us,
            request_start_us: Some(fetch_start_us + wait_us),
            response_start_us: None,
            protocol: Some(protocol.into()),
            connection_setup_us: None,
        }
    }

    fn record(id: u64, concurrency: u32, sent: u64, n_tokens: u64, gap: u64) -> RequestRecord {
        let mut b = RecordBuilder::new(
            RequestStart {
                id,
                concurrency,
                warmup: false,
                wanted_us: sent,
                sent_us: sent,
            },
            RecordOptions::default(),
        );
        b.on_headers(200, Some("text/event-stream"), None, sent + 1_000);
        let mut t = sent + 100_000;
        for _ in 0..n_tokens {
            b.on_bytes(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
                t,
            );
            t += gap;
        }
        b.on_bytes(b"data: [DONE]\n\n", t);
        b.finish(StreamEnd::Complete, t)
    }

    fn document() -> RunDocument {
        let mut records = vec![
            record(1, 1, 0, 10, 10_000),
            record(2, 2, 1_000_000, 10, 20_000),
            record(3, 2, 1_000_000, 10, 20_000),
        ];
        let mut failed = record(4, 2, 1_500_000, 2, 10_000);
        failed.error = Some(RequestError {
            kind: ErrorKind::RateLimited,
            detail: "HTTP 429, \"slow\"".into(),
            body_sample: None,
            retry_after_s: Some(1.0),
        });
        records.push(failed);
        let mut warm = record(0, 1, 0, 3, 1_000);
        warm.warmup = true;
        records.push(warm);
        RunDocument::build(
            "run-1".into(),
            "2026-12-02T09:00:00Z".into(),
            RunStatus::Done,
            Plan::default_for_simulator("http://127.0.0.1:8000/v1"),
            Environment::default(),
            records,
        )
    }

    #[test]
    fn a_conversation_s_turns_are_figured_apart_per_level() {
        let mut records = Vec::new();
        for (i, (concurrency, session, index, ttft_gap)) in [
            (1, 0, 0, 10_000),
            (1, 0, 1, 10_000),
            (1, 1, 0, 10_000),
            (1, 1, 1, 10_000),
            (2, 2, 0, 20_000),
        ]
        .into_iter()
        .enumerate()
        {
            let mut r = record(i as u64, concurrency, i as u64 * 1_000_000, 4, ttft_gap);
            r.turn = Some(crate::record::Turn {
                session,
                index,
                n_turns: 0,
            });
            records.push(r);
        }
        let doc = built("http://127.0.0.1:8000/v1", records);
        let turns: Vec<(u32, u64)> = doc.levels[0]
            .turns
            .iter()
            .map(|t| (t.turn, t.n_ok))
            .collect();
        assert_eq!(turns, [(1, 2), (2, 2)]);
        assert_eq!(doc.levels[1].turns.len(), 1);
        let sessions = doc.levels[0].sessions.unwrap();
        assert_eq!((sessions.n_sessions, sessions.n_whole), (2, 2));
        // From the first turn's send to the last turn's end.
        assert_eq!(
            sessions.duration_ms.unwrap().max,
            (doc.records[1].end_us - doc.records[0].sent_us) as f64 / 1e3
        );
        let said = crate::render::sessions_said(&doc.levels[0]).unwrap();
        assert!(
            said.en
                .starts_with("concurrency 1: 2 conversations, 2 whole"),
            "{}",
            said.en
        );
        assert!(said.zh.contains("2 段对话"));
        assert_eq!(doc.levels[0].turns[0].ttft_p50_ms, Some(100.0));
        // A run of single requests has none.
        assert!(document().levels.iter().all(|l| l.turns.is_empty()));
        let back = RunDocument::from_json(&doc.to_json()).unwrap();
        assert_eq!(back.levels[0].turns, doc.levels[0].turns);
        assert_eq!(
            back.records[1].turn,
            Some(crate::record::Turn {
                session: 0,
                index: 1,
                n_turns: 0,
            })
        );
    }

    #[test]
    fn what_is_no_run_document_is_said_in_both_languages_and_told_apart() {
        for (text, en, zh, ours) in [
            ("not json", "not valid JSON", "不是有效的 JSON", false),
            ("{}", "no schema field", "没有 schema 字段", false),
            (
                r#"{"schema": 999}"#,
                "a newer tokenmeter (schema 999)",
                "更新版本",
                true,
            ),
            (r#"{"schema": 1, "levels": 3}"#, "damaged", "已损坏", true),
        ] {
            let error = RunDocument::from_json(text).unwrap_err();
            assert_eq!(error.is_ours(), ours, "{text}: {error:?}");
            let why = error.said();
            assert!(why.en.contains(en), "{text}: {}", why.en);
            assert!(why.zh.contains(zh), "{text}: {}", why.zh);
            assert_eq!(error.to_string(), why.en);
        }
        assert_eq!(
            RunDocument::from_json(r#"{"schema": 2}"#),
            Err(DocumentError::Newer { schema: 2 })
        );
    }

    #[test]
    fn build_groups_levels_and_skips_warmups() {
        let doc = document();
        assert_eq!(doc.levels.len(), 2);
        assert_eq!(doc.levels[0].concurrency, Some(1));
        assert_eq!(doc.levels[1].n_ok, 2);
        assert_eq!(doc.levels[1].fails_by_kind[&ErrorKind::RateLimited], 1);
        assert_eq!(doc.total.n_requests, 4);
        assert_eq!(doc.total.concurrency, None);
        assert_eq!(doc.records.len(), 5);
    }

    #[test]
    fn the_export_is_indented_as_serde_json_indents() {
        let mut doc = document();
        doc.plan
            .extra_body
            .insert("stop".into(), serde_json::json!(["}", "\"]"]));
        doc.plan.model = "模型 \"q\": [x]".into();
        assert_eq!(doc.to_json(), serde_json::to_string_pretty(&doc).unwrap());
    }

    #[test]
    fn json_round_trip_and_version_checks() {
        let doc = document();
        let json = doc.to_json();
        assert_eq!(RunDocument::from_json(&json).unwrap(), doc);
        let newer = json.replacen("\"schema\": 1", "\"schema\": 7", 1);
        assert_eq!(
            RunDocument::from_json(&newer),
            Err(DocumentError::Newer { schema: 7 })
        );
        assert_eq!(RunDocument::from_json("{}"), Err(DocumentError::NotOurs));
    }

    #[test]
    fn json_in_parts_is_the_whole_text() {
        let doc = document();
        assert!(doc.records.len() >= 4);
        let mut without = doc.clone();
        without.records.clear();
        let mut one = doc.clone();
        one.records.truncate(1);
        for doc in [&doc, &without, &one] {
            for per_part in [1, 2, 3, 1_000] {
                let parts: Vec<String> = doc.json_parts(per_part, false).collect();
                assert_eq!(parts.len(), 2 + doc.records.len().div_ceil(per_part));
                assert_eq!(parts.concat(), serde_json::to_string(doc).unwrap());
                let pretty: String = doc.json_parts(per_part, true).collect();
                assert_eq!(pretty, doc.to_json(), "{per_part} a part");
            }
        }
    }

    #[test]
    fn csv_rows_and_escaping() {
        let doc = document();
        let levels = crate::render::levels_csv(&doc);
        let lines: Vec<&str> = levels.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("concurrency,n_requests,n_ok,n_fail"));
        // Level 1: one request, TTFT 100 ms, 10 tokens 10 ms apart, E2E 200 ms.
        let fields: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(&fields[..6], ["1", "1", "1", "0", "0", "100"]);
        assert!(lines[2].contains(",rate_limited:1,"), "{}", lines[2]);
        let requests = crate::render::requests_csv(&doc);
        assert_eq!(requests.lines().count(), 6);
        assert!(
            requests.contains("\"HTTP 429, \"\"slow\"\"\""),
            "{requests}"
        );
    }

    #[test]
    fn markdown_in_both_languages() {
        let doc = document();
        let en = crate::render::markdown(&doc, Lang::En);
        assert!(en.contains("| concurrency | n_ok |"));
        assert!(en.contains("| 1 | 1 | 0 | 100.0 ms |"), "{en}");
        assert!(en.contains("Rate limited (429)"));
        let zh = crate::render::markdown(&doc, Lang::Zh);
        assert!(zh.contains("| 并发 | 成功 |"));
        assert!(zh.contains("被限流"));
    }

    #[test]
    fn http1_above_six_connections_is_noted() {
        let mut records = Vec::new();
        for (id, concurrency) in [(1, 8u32), (2, 4)] {
            let mut r = record(id, concurrency, 0, 3, 10_000);
            let mut browser = timing(0, 900_000, "http/1.1");
            browser.response_start_us = Some(950_000);
            r.browser = Some(browser);
            records.push(r);
        }
        let doc = built("http://127.0.0.1:8000/v1", records);
        assert_eq!(
            doc.environment.notes.len(),
            1,
            "{:?}",
            doc.environment.notes
        );
        assert!(doc.environment.notes[0].starts_with("concurrency 8: the browser spoke HTTP/1.1"));
        assert!(doc.environment.notes[0].contains("900 ms at p95"));
        assert_eq!(
            doc.environment.conditions,
            [RunCondition::BrowserQueue {
                concurrency: 8,
                wait_p95_ms: Some(900.0),
                ttft_after_send_p50_ms: Some(0.0),
                protocol: "http/1.1".into(),
                connections: 6,
                wait_hidden: false,
            }]
        );
        assert_eq!(
            doc.environment.notes_in(Lang::En),
            doc.environment.notes,
            "the notes are the conditions in English"
        );
        assert!(doc.environment.notes_in(Lang::Zh)[0].starts_with("并发 8："));
        let level8 = &doc.levels[1];
        assert_eq!(level8.protocols["http/1.1"], 1);
        // TTFT 100 ms in all: 900 ms is impossible here, so the split saturates at 0.
        assert_eq!(level8.ttft_after_send_ms.unwrap().p50, 0.0);
    }

    #[test]
    fn a_level_behind_the_browsers_http1_limit_is_left_out_of_the_verdict() {
        // Level 4: 4 requests of 10 tokens, 100 ms TTFT. Level 8: the same tokens
        // over a longer span, 400 ms TTFT: throughput flat, latency up: a knee at 4.
        let records = |protocol: &str| {
            let mut records = Vec::new();
            for id in 0..4 {
                records.push(record(id, 4, 0, 10, 10_000));
            }
            for id in 4..12 {
                let mut r = record(id, 8, 300_000, 10, 10_000);
                r.sent_us = 0;
                r.wanted_us = 0;
                r.browser = Some(timing(0, 300_000, protocol));
                records.push(r);
            }
            records
        };
        // Over HTTP/1.1 the server never saw 8 at once: level 8 is flagged, and the
        // "knee" it would make is not called one.
        let doc = built("http://127.0.0.1:8000/v1", records("http/1.1"));
        assert_eq!(doc.verdict.knee, None, "{}", doc.verdict.explanation_en);
        assert_eq!(doc.verdict.safe_concurrency, None);
        assert_eq!(
            doc.levels[1].distorted,
            Some(Distortion::BrowserQueue {
                protocol: "http/1.1".into(),
                connections: 6
            })
        );
        assert_eq!(doc.levels[0].distorted, None);
        assert_eq!(
            doc.verdict.sentences.first(),
            Some(&crate::verdict::Sentence::LeftOutBrowserQueue {
                levels: vec![8],
                protocol: "http/1.1".into(),
                connections: 6,
            })
        );
        assert!(doc.verdict.explanation_en.starts_with(
            "Left out of this verdict: concurrency 8, where the browser sent at most 6"
        ));
        assert!(doc.verdict.explanation_zh.starts_with("并发 8不计入结论"));
        assert_eq!(doc.verdict.text(Lang::En), doc.verdict.explanation_en);
        assert!(doc.verdict.levels.iter().all(|l| l.concurrency == 4));
        // The same knee over HTTP/2: the browser held nothing back, so it stands.
        let doc = built("https://127.0.0.1:8000/v1", records("h2"));
        assert_eq!(doc.verdict.knee, Some(4));
        assert!(doc.levels.iter().all(|l| l.distorted.is_none()));
        assert!(
            !doc.verdict.explanation_en.contains("Left out"),
            "{}",
            doc.verdict.explanation_en
        );
    }

    #[test]
    fn a_level_the_engine_lagged_through_is_left_out_and_only_that_one() {
        // A knee at 4 by the numbers; the engine lagged at 8 (p95 35 ms), a little
        // at 4 (max 25 ms, p95 6 ms: a note, not a distortion).
        let mut records = Vec::new();
        for id in 0..4 {
            records.push(record(id, 4, 0, 10, 10_000));
        }
        for id in 4..12 {
            let mut r = record(id, 8, 300_000, 10, 10_000);
            r.sent_us = 0;
            r.wanted_us = 0;
            records.push(r);
        }
        let environment = Environment {
            conditions: [
                condition::engine_lag(4, 25.0, 6.0, None),
                condition::engine_lag(8, 80.0, 35.0, None),
                condition::engine_lag(16, 12.0, 3.0, None),
            ]
            .into_iter()
            .flatten()
            .collect(),
            ..Environment::default()
        };
        assert_eq!(environment.conditions.len(), 2, "12 ms is no note");
        let doc = RunDocument::build(
            "r".into(),
            "t".into(),
            RunStatus::Done,
            Plan::default_for_simulator("https://x/v1"),
            environment,
            records,
        );
        assert_eq!(doc.levels[0].distorted, None);
        assert_eq!(
            doc.levels[1].distorted,
            Some(Distortion::Engine { lag_p95_ms: 35.0 })
        );
        assert_eq!(doc.verdict.knee, None, "{}", doc.verdict.explanation_en);
        assert!(doc.verdict.explanation_en.starts_with(
            "Left out of this verdict: concurrency 8, where the engine's own event loop ran late"
        ));
        assert!(doc.environment.notes[1].contains("up to 80 ms late (35 ms at p95)"));
        assert!(
            doc.environment.notes[0].contains("stalled at times, for up to 25 ms (6 ms at p95)")
        );
    }

    #[test]
    fn each_engine_queues_where_it_does_and_splits_only_what_it_shows() {
        const WEBKITGTK: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15";
        const FIREFOX: &str =
            "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0";
        const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
        let run = |user_agent: &str, protocol: &str, concurrency: u32| {
            let records = (0..concurrency as u64)
                .map(|id| {
                    let mut r = record(id, concurrency, 0, 3, 10_000);
                    r.browser = Some(timing(0, 2_000, protocol));
                    r
                })
                .collect();
            let environment = Environment {
                user_agent: Some(user_agent.into()),
                ..Environment::default()
            };
            RunDocument::build(
                "r".into(),
                "t".into(),
                RunStatus::Done,
                Plan::default_for_simulator("https://x/v1"),
                environment,
                records,
            )
        };
        // WebKitGTK holds HTTP/2 to six per host, and its timings do not show it.
        let doc = run(WEBKITGTK, "h2", 16);
        let [RunCondition::BrowserQueue {
            protocol,
            wait_hidden,
            wait_p95_ms,
            ..
        }] = doc.environment.conditions.as_slice()
        else {
            panic!("{:?}", doc.environment.conditions);
        };
        assert_eq!(
            (protocol.as_str(), *wait_hidden, *wait_p95_ms),
            ("h2", true, None)
        );
        assert_eq!(
            doc.levels[0].ttft_after_send_ms, None,
            "no split where the wait is hidden"
        );
        // Chromium and Firefox multiplex HTTP/2: nothing to say.
        for ua in [CHROME, FIREFOX] {
            let doc = run(ua, "h2", 16);
            assert!(doc.environment.conditions.is_empty(), "{ua}");
            assert!(doc.levels[0].ttft_after_send_ms.is_some());
        }
        // Over HTTP/1.1 every engine queues above six; Firefox's timings hide it.
        let doc = run(FIREFOX, "http/1.1", 8);
        assert_eq!(doc.levels[0].ttft_after_send_ms, None);
        assert!(doc.environment.notes[0].contains("Resource Timing does not show"));
        let doc = run(CHROME, "http/1.1", 8);
        assert!(doc.levels[0].ttft_after_send_ms.is_some());
        assert!(doc.environment.notes[0].contains("ms at p95"));
    }

    #[test]
    fn a_document_without_typed_conditions_or_sentences_still_reads() {
        let mut doc = document();
        doc.environment.conditions.clear();
        doc.environment.notes = vec!["an old note".into()];
        doc.verdict.sentences.clear();
        doc.verdict.explanation_zh = "旧的结论".into();
        let json = doc.to_json();
        let old = RunDocument::from_json(&json).unwrap();
        assert_eq!(old.environment.notes_in(Lang::Zh), ["an old note"]);
        assert_eq!(old.verdict.text(Lang::Zh), "旧的结论");
    }

    #[test]
    fn repeated_slow_sends_suggest_uncached_preflights() {
        let with_wait = |id: u64, wait_us: u64, setup_us: Option<u64>| {
            let mut r = record(id, 2, 1_000_000 * id, 3, 10_000);
            let mut browser = timing(r.sent_us, wait_us, "h2");
            browser.connection_setup_us = setup_us;
            r.browser = Some(browser);
            r
        };
        // A run: the first request (its preflight certain), then `waits` (µs).
        let run = |first_us: u64, waits: &[u64], setup: Option<u64>| {
            let mut records = vec![with_wait(0, first_us, None)];
            records.extend(
                (1..)
                    .zip(waits)
                    .map(|(id, &w)| with_wait(id, w, setup.map(|s| s.min(w)))),
            );
            built("https://x/v1", records)
        };
        let quick = [2_000, 3_000, 2_500, 4_000, 1_800, 3_300, 2_200, 2_900];
        // Two requests paid 41-58 ms on open connections, the rest a few ms: flagged.
        let mut waits = quick.to_vec();
        waits.extend([41_000, 58_000]);
        let doc = run(97_000, &waits, None);
        assert!(
            doc.environment.notes[0].contains("2 requests waited about 50 ms"),
            "{:?}",
            doc.environment.notes
        );
        // The same waits explained by new connections: not flagged.
        let doc = run(97_000, &waits, Some(60_000));
        assert!(
            doc.environment.notes.is_empty(),
            "{:?}",
            doc.environment.notes
        );
        // One slow send besides the first request is no pattern.
        let mut waits = quick.to_vec();
        waits.push(45_000);
        assert!(run(97_000, &waits, None).environment.notes.is_empty());
        // A busy machine: sends of 2-17 ms, two of them 11-12 ms (seen on a loaded
        // machine with Access-Control-Max-Age sent): no preflight.
        let mut waits = vec![
            2_000, 8_600, 14_900, 7_100, 9_900, 10_500, 15_600, 17_300, 13_300,
        ];
        waits.extend([11_000, 12_000]);
        let doc = run(45_000, &waits, None);
        assert!(
            doc.environment.notes.is_empty(),
            "{:?}",
            doc.environment.notes
        );
        // A debug build at 32 streams on that machine, every preflight cached: four
        // sends of 27-29 ms among waits of a few ms (seen in a spec run): no preflight.
        let mut loaded = quick.to_vec();
        loaded.extend([27_000, 28_000, 29_000, 28_500]);
        let doc = run(72_000, &loaded, None);
        assert!(
            doc.environment.notes.is_empty(),
            "{:?}",
            doc.environment.notes
        );
        // And the real thing on that machine: 48-64 ms among those: flagged.
        waits.extend([63_800, 47_700, 57_300]);
        let doc = run(97_000, &waits, None);
        assert!(
            doc.environment.notes[0].contains("3 requests waited about 57 ms"),
            "{:?}",
            doc.environment.notes
        );
        // The same waits with sixteen requests in flight at once are the browser's
        // own burst of sends (Firefox at 16 HTTP/2 streams), not preflights.
        let busy: Vec<RequestRecord> = (0..16)
            .map(|id| {
                let mut r = record(id, 16, 0, 3, 10_000);
                r.browser = Some(timing(0, if id < 3 { 40_000 } else { 300 }, "h2"));
                r
            })
            .collect();
        // In an engine whose timings show waits without preflights, no guess.
        let firefox = Environment {
            user_agent: Some(
                "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0".into(),
            ),
            ..Environment::default()
        };
        let doc = RunDocument::build(
            "r".into(),
            "t".into(),
            RunStatus::Done,
            Plan::default_for_simulator("https://x/v1"),
            firefox,
            vec![
                with_wait(0, 97_000, None),
                with_wait(1, 2_000, None),
                with_wait(2, 40_000, None),
                with_wait(3, 41_000, None),
            ],
        );
        assert_eq!(doc.levels[0].slow_send_ms.unwrap().n, 3);
        assert!(doc.environment.notes.is_empty());
        let doc = built("https://x/v1", busy);
        assert_eq!(doc.levels[0].peak_concurrency, 16);
        assert_eq!(doc.levels[0].slow_send_ms.unwrap().n, 3);
        assert!(
            doc.environment.notes.is_empty(),
            "{:?}",
            doc.environment.notes
        );
    }

    #[test]
    fn history_keeps_the_figures_and_drops_records_only_when_it_must() {
        let doc = document();
        let (kept, json) = doc.for_history(1 << 20);
        assert_eq!(json, serde_json::to_string(&kept).unwrap());
        assert_eq!(kept.records.len(), doc.records.len());
        assert!(kept.records.iter().all(|r| r.token_times_us.is_empty()));
        assert_eq!(kept.levels, doc.levels);
        let (small, json) = doc.for_history(1_000);
        assert_eq!(json, serde_json::to_string(&small).unwrap());
        assert!(small.records.is_empty());
        assert_eq!(small.levels, doc.levels, "the figures are whole");
        assert_eq!(small.verdict, doc.verdict);
        assert_eq!(
            small.environment.conditions.last(),
            Some(&RunCondition::RecordsNotKept { n_records: 5 })
        );
        assert_eq!(
            small.environment.notes,
            condition::notes(&small.environment.conditions),
            "a note per condition, the new one last"
        );
        assert!(small
            .environment
            .notes
            .last()
            .unwrap()
            .contains("without its 5 per-request records"));
        // It reads back as a document.
        assert_eq!(RunDocument::from_json(&small.to_json()).unwrap(), small);
    }

    #[test]
    fn csv_cells_from_servers_cannot_be_formulas() {
        let mut doc = document();
        doc.records[3].error.as_mut().unwrap().detail = "=HYPERLINK(\"http://x\")".into();
        doc.records[3].finish_reason = Some("@SUM(A1)".into());
        doc.records[3].token_mismatch = Some(-3);
        let csv = crate::render::requests_csv(&doc);
        assert!(csv.contains(",\"'=HYPERLINK(\"\"http://x\"\")\","), "{csv}");
        assert!(csv.contains(",'@SUM(A1)"), "{csv}");
        assert!(csv.contains(",-3,"), "numbers stay numbers: {csv}");
    }

    #[test]
    fn numbers_are_compact() {
        assert_eq!(crate::columns::csv_number(100.0), "100");
        assert_eq!(crate::columns::csv_number(0.12345), "0.123");
        assert_eq!(crate::columns::csv_number(-0.0001), "0");
    }

    /// A ladder of 1 and 2 run three times, one pass after another: level 1 the
    /// same in each pass; level 2 at about 87, 105 and 124 tok/s.
    fn repeated() -> RunDocument {
        let mut records = Vec::new();
        let mut id = 0;
        let mut at = 0;
        for repetition in 0..3u32 {
            for (concurrency, gap) in [
                (1u32, 10_000u64),
                (2, [14_000, 10_000, 7_000][repetition as usize]),
            ] {
                for _ in 0..concurrency {
                    id += 1;
                    // 11 tokens: 10 gaps of `gap` after a 100 ms TTFT.
                    let mut r = record(id, concurrency, at, 11, gap);
                    r.repetition = repetition;
                    records.push(r);
                }
                at += 2_000_000;
            }
        }
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.repeat = 3;
        RunDocument::build(
            "repeated".into(),
            "2026-12-03T09:00:00Z".into(),
            RunStatus::Done,
            plan,
            Environment::default(),
            records,
        )
    }

    #[test]
    fn a_repeated_level_pools_its_passes_and_keeps_each_apart() {
        let doc = repeated();
        assert_eq!(doc.levels.len(), 2);
        let one = &doc.levels[0];
        assert_eq!(one.n_ok, 3);
        assert_eq!(one.repetitions.len(), 3);
        // The wall time is the three passes' (210 ms each: TTFT 100 ms, 11 gaps
        // of 10 ms to [DONE]), not the 4.2 s from the first pass's start to the
        // last one's end (level 2 ran in between).
        assert!((one.wall_s - 3.0 * 0.21).abs() < 1e-9, "{}", one.wall_s);
        assert!((one.output_tps - 33.0 / 0.63).abs() < 1e-6);
        assert_eq!(one.spread_pct(|p| Some(p.output_tps)), Some(0.0));
        let two = &doc.levels[1];
        let spread = two.spread_pct(|p| Some(p.output_tps)).unwrap();
        assert!(spread > 30.0 && spread < 40.0, "{spread}");
        // The verdict says the noise floor, in both languages.
        assert!(doc
            .verdict
            .explanation_en
            .contains("Between the 3 passes, output tokens/s varied by up to"));
        assert!(doc.verdict.explanation_zh.contains("3 轮之间"));
        // Records keep their pass; a document without passes writes no field.
        assert!(doc.to_json().contains("\"repetition\": 2"));
        assert!(!document().to_json().contains("repetition"));
        // A ladder run once says nothing of noise.
        assert!(!document().verdict.explanation_en.contains("passes"));
        assert!(!document()
            .verdict
            .sentences
            .iter()
            .any(|s| matches!(s, crate::verdict::Sentence::Noise { .. })));
        assert!(document().levels.iter().all(|l| l.repetitions.is_empty()));
    }

    #[test]
    fn the_knee_counts_a_gain_within_the_noise_as_none() {
        use crate::verdict::{analyse_points, LevelPoint};
        let point = |concurrency, output_tps, ttft, noise| LevelPoint {
            concurrency,
            output_tps,
            ttft_p95_ms: Some(ttft),
            tpot_p95_ms: None,
            e2e_p95_ms: None,
            n_ok: 10,
            n_fail: 0,
            n_cancelled: 0,
            output_tps_noise_pct: noise,
        };
        let params = Default::default();
        // 4 → 8 adds 30%: growth without noise, the knee is past 8 ...
        let quiet = [
            point(1, 100.0, 100.0, None),
            point(4, 380.0, 120.0, None),
            point(8, 494.0, 200.0, None),
        ];
        assert_eq!(
            analyse_points(&quiet, &Default::default(), &params).knee,
            None
        );
        // ... but not when passes at 8 differ by 35%: the knee is 4.
        let noisy = [quiet[0], quiet[1], point(8, 494.0, 200.0, Some(35.0))];
        assert_eq!(
            analyse_points(&noisy, &Default::default(), &params).knee,
            Some(4)
        );
    }

    #[test]
    fn streams_released_in_bursts_leave_their_level_out_and_say_why() {
        use crate::{chart::tests_support, diagnosis, error::Lang};
        // Level 1 delivered as written (ten tokens, 20 ms apart); level 2 held by a
        // gateway and released in one read at the end.
        let mut records = Vec::new();
        for id in 0..6 {
            records.push(tests_support::record(id, 1, 200, 20));
        }
        for id in 6..12 {
            let mut r = tests_support::record(id, 2, 200, 20);
            let last = *r.token_times_us.last().unwrap();
            r.token_times_us.iter_mut().for_each(|t| *t = last);
            r.first_token_us = Some(last);
            r.first_answer_us = Some(last);
            records.push(r);
        }
        let doc = RunDocument::build(
            "r".into(),
            "t".into(),
            RunStatus::Done,
            Plan::default_for_simulator("http://127.0.0.1:8000/v1"),
            Environment::default(),
            records,
        );
        assert_eq!(doc.levels[0].distorted, None);
        assert_eq!(
            doc.levels[1].distorted,
            Some(Distortion::Buffered {
                n_requests: 6,
                share_pct: 100.0,
                largest: 10,
            })
        );
        let en = doc.verdict.text(Lang::En);
        assert!(en.starts_with("Left out of this verdict: concurrency 2, where the stream arrived in bursts (100% of the tokens, up to 10 at once)"), "{en}");
        assert!(doc
            .verdict
            .text(Lang::Zh)
            .starts_with("并发 2不计入结论：流是成批到达的"));
        assert!(doc
            .environment
            .conditions
            .iter()
            .any(|c| matches!(c, RunCondition::BufferedStream { levels, .. } if levels == &[2])));
        assert!(doc
            .environment
            .notes
            .iter()
            .any(|n| n.contains("X-Accel-Buffering: no")));
        let findings = diagnosis::diagnose(&doc);
        assert_eq!(
            findings
                .iter()
                .map(|f| f.cause().name())
                .collect::<Vec<_>>(),
            ["buffered_stream"]
        );
        assert!(findings[0]
            .text(Lang::En)
            .starts_with("at concurrency 2, 6 streams arrived in bursts"));
        // Streams as written: nothing of the kind is said.
        let clean = RunDocument::build(
            "r".into(),
            "t".into(),
            RunStatus::Done,
            Plan::default_for_simulator("http://127.0.0.1:8000/v1"),
            Environment::default(),
            (0..12)
                .map(|id| tests_support::record(id, 1 + (id / 6) as u32, 200, 20))
                .collect(),
        );
        assert!(clean
            .levels
            .iter()
            .all(|l| l.distorted.is_none() && l.bursts.n_requests == 0));
        assert!(!clean
            .environment
            .conditions
            .iter()
            .any(|c| matches!(c, RunCondition::BufferedStream { .. })));
    }
}
