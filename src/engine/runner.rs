//! A run: warm-up, then the plan's schedule level by level (closed-loop ladder,
//! open-loop arrivals, or a fixed duration: see [`super::schedule`]), progress for
//! the page at most ten times a second (see [`super::live`]), the conditions the
//! engine observed (see [`super::conditions`]), and the run document at the end,
//! cancelled or not.

use std::{rc::Rc, sync::Arc, time::Duration};

use tokenmeter_core::{
    missing_prompt_file, origin,
    schema::{
        EngineLoad, Environment, ErrorKind, Network, Plan, PromptMode, RequestRecord, RunCondition,
        RunDocument, RunStatus, Said, TimedBy,
    },
    Bodies, Prompts, RecordOptions, RequestStart, Schedule, Sending, PROBES_AFTER, PROBES_BEFORE,
};

use super::{
    cancel::CancelToken,
    clock::Clock,
    conditions::{
        environment, level_conditions, no_response, round_trips, Visibility, ROUND_TRIP_PROBE,
    },
    live::Shared,
    request::{send, Target},
    schedule::{Conversing, Level},
    shards::Shards,
};
use crate::protocol::{FromWorker, ShardStart};

/// How often the page hears about progress: ten times a second at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// How often the engine checks its own event loop: a finer tick sees shorter
/// stalls, and costs a wake-up each time.
pub const LAG_TICK: Duration = Duration::from_millis(10);

/// Everything a run needs.
pub struct RunInput {
    pub run_id: String,
    pub started_at: String,
    pub plan: Plan,
    pub api_key: Option<String>,
    /// The keys of an A/B plan's other targets, in order (memory only).
    pub target_keys: Vec<Option<String>>,
    /// A plan of prompts from a file: the file's prompts.
    pub prompts: Option<Arc<Prompts>>,
    /// When the page was hidden, as the page reports it.
    pub visibility: Rc<Visibility>,
}

/// Where and how every request of the run is sent; `seed` makes each request's
/// own prompt, or draws it from a file's `prompts` (see [`Bodies`]).
pub fn target(
    plan: &Plan,
    api_key: Option<&str>,
    seed: u64,
    prompts: Option<&Arc<Prompts>>,
) -> Target {
    let bodies = match prompts {
        Some(prompts) if plan.prompt_mode == PromptMode::File => {
            Bodies::with_prompts(plan, seed, Arc::clone(prompts))
        }
        _ => Bodies::new(plan, seed),
    };
    Target::new(
        plan.endpoint_url(),
        bodies,
        plan.request_headers(api_key),
        api_key
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .into_iter()
            .collect(),
        plan.timeout_s * 1e3,
    )
}

/// A seed no earlier run used, from the browser's random numbers: 53 bits, so
/// that scripts reading the run document in JavaScript read it exactly.
fn fresh_seed() -> u64 {
    (js_sys::Math::random() * (1u64 << 53) as f64) as u64
}

/// Target `index`'s key: its own slot's, or else, for a target on the same origin
/// as A (another model on the same gateway), A's; never A's key to another origin.
fn target_key<'a>(
    plan: &Plan,
    api_key: &'a Option<String>,
    target_keys: &'a [Option<String>],
    index: usize,
) -> Option<&'a str> {
    fn own(key: &Option<String>) -> Option<&str> {
        key.as_deref().map(str::trim).filter(|k| !k.is_empty())
    }
    if index == 0 {
        return own(api_key);
    }
    let slot = target_keys.get(index - 1).and_then(own);
    let same_origin = plan
        .targets
        .get(index - 1)
        .is_some_and(|t| origin(&t.base_url) == origin(&plan.base_url));
    slot.or(own(api_key).filter(|_| same_origin))
}

/// Runs a plan to the end (or to Cancel), posting progress and then the document.
// Long: the run's phases in order; each is a function of its own, this is their sequence.
pub async fn run(input: RunInput, cancel: CancelToken, post: Rc<dyn Fn(FromWorker)>) {
    let RunInput {
        run_id,
        started_at,
        plan,
        api_key,
        target_keys,
        prompts,
        visibility,
    } = input;
    let (plan, targets) = match prepare(plan, &api_key, &target_keys, prompts.as_ref()) {
        Ok(prepared) => prepared,
        Err(problems) => {
            post(FromWorker::Failed { problems });
            return;
        }
    };
    let mut schedule = Schedule::new(&plan);
    let clock = Clock::start();
    super::request::reset_resource_timing();
    let environment = environment(clock.resolution_us());
    let planned: Vec<(u32, u32)> = schedule
        .planned()
        .iter()
        .map(|l| (l.concurrency, l.n_planned))
        .collect();
    let shared = Rc::new(Shared::new(
        clock.clone(),
        environment.engine(),
        plan.warmup_requests,
        &planned,
    ));
    for level in schedule.planned() {
        shared.set_origin(level.index, level.pass, level.target_label());
    }
    watch(&shared, &post);

    // The network's round trip, before anything else is in flight (target A's).
    let (round_trips_before, timed_by) = round_trips(&plan.base_url, PROBES_BEFORE).await;
    // What the server itself reports, from now to the end (target A's), where the
    // plan reads it.
    let server_metrics = plan.metrics_url().map(|url| {
        // Only on the endpoint's own origin do polls share its connections.
        let shared_connections = origin(&url) == origin(&plan.base_url);
        super::server_metrics::start(
            url,
            shared_connections,
            clock.clone(),
            shared.clone(),
            cancel.clone(),
        )
    });

    // Conversations make each turn's body from the answers before it.
    let target_plans: Vec<Plan> = (0..plan.n_targets()).map(|i| plan.for_target(i)).collect();
    let conversing = plan.conversation.map(|conversation| Conversing {
        plans: &target_plans,
        seed: plan.seed.unwrap_or_default(),
        conversation,
        // A file's conversations, each with its own turns.
        prompts: prompts
            .as_deref()
            .filter(|_| plan.prompt_mode == PromptMode::File),
    });
    // Helpers, started when a level wants them, are told the run as it is here.
    let shards = Shards::new(
        ShardStart {
            origin_epoch_ms: clock.origin_epoch_ms(),
            plan: Box::new(plan.clone()),
            api_key: api_key.clone(),
            target_keys: target_keys.clone(),
            prompts: prompts.clone(),
        },
        environment.hardware_concurrency.unwrap_or(1),
        plan.timeout_s * 1e3,
        &cancel,
    );
    let run = Measuring {
        plan: &plan,
        targets: &targets,
        shared: &shared,
        shards: &shards,
        cancel: &cancel,
        options: record_options(&plan),
        conversing,
    };
    run.warm_up(schedule.warmup_concurrency()).await;
    let (conditions, engine_load) = run.levels(&mut schedule, &environment, &visibility).await;
    shards.close();

    let status = if cancel.is_cancelled() {
        RunStatus::Cancelled
    } else {
        RunStatus::Done
    };
    let network = run.network(round_trips_before, timed_by).await;
    post(FromWorker::Progress(shared.snapshot()));
    let records = shared.finish();
    let mut environment = environment;
    environment.conditions.extend(conditions);
    environment.network = network;
    if let Some(cause) = run.no_response_cause(&records, &environment).await {
        environment.conditions.push(cause);
    }
    environment.engine_load = engine_load;
    environment.server_metrics = server_metrics.map(|m| m.borrow().clone());
    let mut document =
        RunDocument::build_ab(run_id, started_at, status, plan, environment, records);
    if let Some(outcome) = schedule.outcome() {
        document.conclude_search(outcome);
    }
    // Every record went to the page with the progress above: not again.
    let n_records = document.take_records().len() as u64;
    post(FromWorker::Finished {
        document: Box::new(document),
        n_records,
    });
}

/// The plan as it will run (with its seed) and where each target's requests go;
/// or why it cannot run.
fn prepare(
    mut plan: Plan,
    api_key: &Option<String>,
    target_keys: &[Option<String>],
    prompts: Option<&Arc<Prompts>>,
) -> Result<(Plan, Vec<Target>), Vec<Said>> {
    plan.validate()?;
    if let Some(file) = plan
        .prompt_file
        .as_ref()
        .filter(|_| plan.prompt_mode == PromptMode::File)
    {
        if prompts.map(|p| &p.file.sha256) != Some(&file.sha256) {
            return Err(vec![missing_prompt_file(file)]);
        }
    }
    // The run's prompts come from the plan's seed, or from one of its own (kept in
    // the document's plan), so that no run resends an earlier run's prompts.
    let seed = *plan.seed.get_or_insert_with(fresh_seed);
    let targets = targets(&plan, seed, api_key, target_keys, prompts);
    Ok((plan, targets))
}

/// Where each of the plan's targets is sent, and how, with `seed`: the same in
/// every worker that sends the run's requests.
pub fn targets(
    plan: &Plan,
    seed: u64,
    api_key: &Option<String>,
    target_keys: &[Option<String>],
    prompts: Option<&Arc<Prompts>>,
) -> Vec<Target> {
    (0..plan.n_targets())
        .map(|i| {
            let key = target_key(plan, api_key, target_keys, i);
            target(&plan.for_target(i), key, seed, prompts)
        })
        .collect()
}

/// How every record of the run is read: a conversation keeps each answer's text,
/// to go on with it.
pub fn record_options(plan: &Plan) -> RecordOptions {
    RecordOptions {
        endpoint: plan.endpoint,
        keep_text: plan.conversation.is_some(),
        ..RecordOptions::default()
    }
}

/// Progress for the page at a bounded rate, and the engine's own event loop
/// watched, until the run ends: a tick that wakes late says every timestamp
/// waiting behind it was taken late too.
fn watch(shared: &Rc<Shared>, post: &Rc<dyn Fn(FromWorker)>) {
    wasm_bindgen_futures::spawn_local({
        let shared = shared.clone();
        let post = post.clone();
        async move {
            while !shared.is_finished() {
                post(FromWorker::Progress(shared.snapshot()));
                gloo_timers::future::sleep(PROGRESS_EVERY).await;
            }
        }
    });
    wasm_bindgen_futures::spawn_local({
        let shared = shared.clone();
        async move {
            let asked_ms = LAG_TICK.as_secs_f64() * 1e3;
            while !shared.is_finished() {
                let before = shared.clock.now_ms();
                gloo_timers::future::sleep(LAG_TICK).await;
                shared.note_lag(shared.clock.now_ms() - before - asked_ms);
            }
        }
    });
}

/// What sending a run's requests needs.
struct Measuring<'a> {
    plan: &'a Plan,
    targets: &'a [Target],
    shared: &'a Rc<Shared>,
    shards: &'a Rc<Shards>,
    cancel: &'a CancelToken,
    options: RecordOptions,
    conversing: Option<Conversing<'a>>,
}

impl Measuring<'_> {
    /// Warm-up: sequential, never summarised; it pays for connection set-up and
    /// the first CORS preflight (of every target of an A/B plan).
    async fn warm_up(&self, concurrency: u32) {
        let clock = &self.shared.clock;
        for (i, target) in self.targets.iter().enumerate() {
            for _ in 0..self.plan.warmup_requests {
                if self.cancel.is_cancelled() {
                    return;
                }
                let now = clock.now_us();
                let start = RequestStart {
                    id: self.shared.next_id(),
                    concurrency,
                    warmup: true,
                    wanted_us: now,
                    sent_us: now,
                };
                let (mut record, cost) =
                    send(target, start, clock, self.cancel, self.options).await;
                record.target = i as u32;
                self.shared.record_done(None, record, cost);
            }
        }
    }

    /// Every level the schedule gives, until it ends or the run is cancelled:
    /// the conditions the engine observed, and its load per level.
    async fn levels(
        &self,
        schedule: &mut Schedule,
        environment: &Environment,
        visibility: &Visibility,
    ) -> (Vec<RunCondition>, Vec<EngineLoad>) {
        let (mut conditions, mut engine_load) = (Vec::new(), Vec::new());
        let clock = &self.shared.clock;
        while let Some(level) = schedule.next_level() {
            if self.cancel.is_cancelled() {
                break;
            }
            if schedule.is_search() {
                self.shared
                    .push_level(level.concurrency, level.n_planned, environment.engine());
            }
            let lanes = match &level.sending {
                Sending::ClosedLoop { .. } if level.target.is_none() => {
                    level.concurrency * self.targets.len() as u32
                }
                Sending::ClosedLoop { .. } => level.concurrency,
                Sending::OpenLoop { .. } => 0,
            };
            let n_wanted = self.plan.engine_workers_for(lanes, self.shards.cores);
            let crew = self.shards.workers(n_wanted).await;
            self.shared.start_level(level.index);
            let sender = Level {
                shared: self.shared,
                targets: self.targets,
                target: level.target.unwrap_or(0),
                interleave: level.target.is_none(),
                cancel: self.cancel,
                options: self.options,
                index: level.index,
                conversing: self.conversing,
                crew: crew.clone(),
            };
            match &level.sending {
                Sending::ClosedLoop { limit, duration_ms } => {
                    let n_sent = sender
                        .closed_loop(level.concurrency, *limit, *duration_ms)
                        .await;
                    conditions.extend(level.cap_reached(n_sent));
                }
                Sending::OpenLoop { offsets_ms } => sender.open_loop(offsets_ms).await,
            }
            let (started_ms, mut load) = self.shared.end_level(level.index);
            load.workers = Some(crew.n_workers());
            if let Some(lag) = self.shards.lag(level.index as u32) {
                // The level's lag is its worst worker's.
                if lag.max_ms > load.lag_max_ms {
                    load.lag_max_ms = lag.max_ms;
                    load.lag_max_at_ms = lag.max_at_ms - started_ms;
                }
                load.lag_p95_ms = load.lag_p95_ms.max(lag.p95_ms);
            }
            let hidden_ms = visibility.hidden_ms(
                clock.origin_ms() + started_ms,
                clock.origin_ms() + started_ms + load.wall_ms,
            );
            conditions.extend(level_conditions(level.concurrency, hidden_ms, &load));
            engine_load.push(load);
            if schedule.is_search() {
                if self.cancel.is_cancelled() {
                    break;
                }
                let met = self.probe_met(level.concurrency, environment, &conditions);
                schedule.observe(met);
            }
        }
        (conditions, engine_load)
    }

    /// The network's round trip from the probes `before` the run and, once
    /// nothing is in flight, a few after it: did the network move? (Those after
    /// are timed as those before were, or not counted.)
    async fn network(&self, before: Vec<f64>, timed_by: TimedBy) -> Option<Network> {
        let after = if self.cancel.is_cancelled() || before.is_empty() {
            Vec::new()
        } else {
            match round_trips(&self.plan.base_url, PROBES_AFTER).await {
                (times, timed) if timed == timed_by => times,
                _ => Vec::new(),
            }
        };
        Network::estimate(before, after, ROUND_TRIP_PROBE, timed_by)
    }

    /// Why requests got no response at all, where some did: the browser hides
    /// why (CORS, mixed content, an unreachable host), and probing once tells.
    async fn no_response_cause(
        &self,
        records: &[RequestRecord],
        environment: &Environment,
    ) -> Option<RunCondition> {
        let n_no_response = records
            .iter()
            .filter(|r| !r.warmup)
            .filter(|r| {
                r.error
                    .as_ref()
                    .is_some_and(|e| e.kind == ErrorKind::Network)
            })
            .count() as u64;
        if n_no_response == 0 || self.cancel.is_cancelled() {
            return None;
        }
        Some(no_response(&self.plan.base_url, n_no_response, environment).await)
    }

    /// Whether the probe at `concurrency` met the SLO, judged as the finished run
    /// will judge its level: by the verdict, distortions (the engine's lag, the
    /// browser's queue) included.
    fn probe_met(
        &self,
        concurrency: u32,
        environment: &Environment,
        conditions: &[RunCondition],
    ) -> bool {
        let mut probe_environment = environment.clone();
        probe_environment
            .conditions
            .extend(conditions.iter().cloned());
        let probe = RunDocument::build(
            String::new(),
            String::new(),
            RunStatus::Done,
            self.plan.clone(),
            probe_environment,
            self.shared.level_records(concurrency),
        );
        probe.verdict.meets_slo_at(concurrency)
    }
}
