//! Summaries of many requests: per concurrency level, and for a whole run.
//!
//! [`LevelStats`] is the accumulator: it keeps every sample it needs (so percentiles
//! stay exact) and merges with another one (`+=`), like ripgrep's `Stats`.
//! [`LevelStats::summary`] computes a [`Summary`], the figures people read.
//!
//! Two throughputs are reported, because they answer different questions:
//! - `output_tps` = Σ `N_out` of successful requests / the level's wall time: what
//!   the server delivered per second. This is the aggregate throughput.
//! - `tps_sum_article` = Σ of per-request decode rates, the reference article's
//!   `tps_sum`. It counts each request's rate as if it ran for the whole level, so
//!   it is too high whenever requests do not overlap perfectly (queueing, TTFT,
//!   uneven lengths), and the error grows under load. Reported for comparison only.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use crate::server_metrics::ServerLevel;
use crate::{
    browser::{self, Engine, SLOW_SEND_US},
    error::ErrorKind,
    plan::Slo,
    record::{RequestRecord, TokenSource},
    stats::Distribution,
    tagged::{need, WireError},
    vecmap::VecMap,
};

const US_PER_S: f64 = 1e6;
const US_PER_MS: f64 = 1e3;

/// The per-request figures of one successful request that summaries need.
#[derive(Clone, Copy, Debug, PartialEq)]
struct OkRow {
    ttft_us: u64,
    ttfat_us: Option<u64>,
    tpot_us: Option<f64>,
    e2e_us: u64,
    n_out: u64,
    decode_tps: Option<f64>,
    article_tps: Option<f64>,
    /// Input tokens as the server counted them (`usage.prompt_tokens`).
    input_tokens: Option<u64>,
    /// Of those, read from the server's prompt cache, where it said.
    cached_tokens: Option<u64>,
}

/// A mergeable accumulator of request records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelStats {
    /// The concurrency level, `None` for a merge of several levels.
    pub concurrency: Option<u32>,
    /// The engine that measured the records: it decides where its own queue hides
    /// in the browser's timings (see [`browser::Engine`]).
    pub engine: Engine,
    n_ok: u64,
    n_cancelled: u64,
    fails: VecMap<ErrorKind, u64>,
    rows: Vec<OkRow>,
    queue_us: Vec<u64>,
    /// Successful requests with Resource Timing: time in the browser before sending,
    /// and TTFT after sending.
    browser_wait_us: Vec<u64>,
    ttft_after_send_us: Vec<u64>,
    /// Requests per `nextHopProtocol`.
    protocols: VecMap<String, u64>,
    /// Unexplained browser waits of slow sends (see `SLOW_SEND_US`).
    slow_send_us: Vec<u64>,
    itl_us: Vec<u64>,
    /// Output tokens per whole second of the run's time origin.
    token_bins: VecMap<u64, u64>,
    /// `(sent, end)` of every request, for the peak concurrency.
    spans: Vec<(u64, u64)>,
    first_wanted_us: Option<u64>,
    last_end_us: Option<u64>,
    /// `(first wanted, last end)` per pass of a repeated ladder: a level's wall
    /// time is the sum of its passes', not the span from its first to its last
    /// (the other levels ran in between).
    passes: VecMap<u32, (u64, u64)>,
    n_usage_counted: u64,
    n_mismatched: u64,
    abs_mismatch_total: u64,
    /// Reasoning tokens counted in usage but never streamed, of successful requests.
    hidden_reasoning: u64,
    /// Requests whose Resource Timing entry hides when they left the browser (the
    /// server sends no `Timing-Allow-Origin`).
    n_timing_hidden: u64,
    /// Successful requests that ended on their own before the length they asked
    /// for: how many, and their lengths asked and produced in all.
    early: Early,
    /// How successful requests' token events came in reads (see
    /// [`Reads`](crate::record::Reads)):
    /// requests delivered in bursts, their token events in bursts, all token
    /// events, and the largest burst.
    bursts: Bursts,
}

/// Answers that ended on their own (`finish_reason` `stop`) before the output
/// length their request asked for, summed over successful requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Early {
    /// Requests that ended early.
    pub n_requests: u64,
    /// Output tokens they asked for.
    pub asked_tokens: u64,
    /// Output tokens they produced.
    pub produced_tokens: u64,
}

impl Early {
    fn is_empty(&self) -> bool {
        self.n_requests == 0
    }
}

/// How a level's streams were delivered, summed over successful requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bursts {
    /// Requests that arrived in bursts (see
    /// [`Reads::is_burst_delivery`](crate::record::Reads::is_burst_delivery)).
    pub n_requests: u64,
    /// Token events in bursts, of those requests.
    pub n_in_bursts: u64,
    /// Token events of every successful request.
    pub n_events: u64,
    /// The most token events one read carried.
    pub largest: u64,
}

impl Bursts {
    fn is_empty(&self) -> bool {
        self.n_requests == 0
    }

    /// Token events delivered in bursts, percent of all.
    pub fn share_pct(&self) -> f64 {
        if self.n_events == 0 {
            0.0
        } else {
            100.0 * self.n_in_bursts as f64 / self.n_events as f64
        }
    }
}

impl AddAssign<&Bursts> for Bursts {
    fn add_assign(&mut self, other: &Bursts) {
        self.n_requests += other.n_requests;
        self.n_in_bursts += other.n_in_bursts;
        self.n_events += other.n_events;
        self.largest = self.largest.max(other.largest);
    }
}

impl LevelStats {
    /// An empty accumulator for the level `concurrency`.
    pub fn new(concurrency: u32) -> Self {
        LevelStats {
            concurrency: Some(concurrency),
            ..LevelStats::default()
        }
    }

    /// A level measured in `engine`.
    pub fn for_engine(concurrency: u32, engine: Engine) -> Self {
        LevelStats {
            engine,
            ..LevelStats::new(concurrency)
        }
    }

    /// Requests seen (warm-ups excluded).
    pub fn n_requests(&self) -> u64 {
        self.n_ok + self.n_cancelled + self.fails.values().sum::<u64>()
    }

    /// Adds one record. Warm-up requests are ignored.
    // Long: one record into each of a level's accumulators, a few lines each.
    pub fn add(&mut self, record: &RequestRecord) {
        if record.warmup {
            return;
        }
        self.first_wanted_us = Some(
            self.first_wanted_us
                .map_or(record.wanted_us, |t| t.min(record.wanted_us)),
        );
        self.last_end_us = Some(
            self.last_end_us
                .map_or(record.end_us, |t| t.max(record.end_us)),
        );
        let pass = self
            .passes
            .entry_or_insert_with(record.repetition, || (record.wanted_us, record.end_us));
        *pass = (pass.0.min(record.wanted_us), pass.1.max(record.end_us));
        self.spans.push((record.sent_us, record.end_us));
        self.queue_us.push(record.queue_us());
        let protocol = record.browser.as_ref().and_then(|b| b.protocol.clone());
        if record.browser.is_some() && record.browser_wait_us().is_none() {
            self.n_timing_hidden += 1;
        }
        if let Some(protocol) = protocol {
            // Where the browser queues, waits are its queue instead.
            let unqueued = !browser::queues(self.engine, record.concurrency, &protocol);
            if let Some(wait) = record
                .unexplained_wait_us()
                .filter(|&w| unqueued && w >= SLOW_SEND_US)
            {
                self.slow_send_us.push(wait);
            }
            *self.protocols.entry_or_default(protocol) += 1;
        }
        match &record.error {
            Some(err) if err.kind == ErrorKind::Cancelled => {
                self.n_cancelled += 1;
                return;
            }
            Some(err) => {
                *self.fails.entry_or_default(err.kind) += 1;
                return;
            }
            None => {}
        }
        let (Some(ttft_us), Some(n_out)) = (record.ttft_us(), record.n_out) else {
            // A successful record always has a first token; be defensive all the same.
            *self.fails.entry_or_default(ErrorKind::EmptyStream) += 1;
            return;
        };
        self.n_ok += 1;
        self.rows.push(OkRow {
            ttft_us,
            ttfat_us: record.ttfat_us(),
            tpot_us: record.tpot_us(),
            e2e_us: record.e2e_us(),
            n_out,
            decode_tps: record.decode_tps(),
            article_tps: record.article_tps(),
            input_tokens: record.usage.as_ref().and_then(|u| u.prompt_tokens),
            cached_tokens: record.cached_prompt_tokens(),
        });
        self.itl_us.extend(record.itls_us());
        if record.stopped_early() {
            self.early.n_requests += 1;
            self.early.asked_tokens += u64::from(record.asked_tokens.unwrap_or(0));
            self.early.produced_tokens = self.early.produced_tokens.saturating_add(n_out);
        }
        let reads = record.reads();
        self.bursts.n_events += reads.n_events;
        if reads.is_burst_delivery(record.e2e_us()) {
            self.bursts.n_requests += 1;
            self.bursts.n_in_bursts += reads.n_in_bursts;
            self.bursts.largest = self.bursts.largest.max(reads.largest);
        }
        if let Some((wait, after)) = browser_split_us(self.engine, record) {
            self.browser_wait_us.push(wait);
            self.ttft_after_send_us.push(after);
        }
        // Spread N_out over the events in whole tokens (event i gets
        // ⌊(i+1)·N/n⌋ − ⌊i·N/n⌋), so bins stay exact integers whatever the merge order.
        let n_events = record.token_times_us.len() as u64;
        for (i, &t) in (0u64..).zip(&record.token_times_us) {
            // This runs per token: u64 when it cannot overflow, u128 (a library
            // call on wasm32) only for a server that claims an absurd N_out.
            let share = match (i + 1).checked_mul(n_out) {
                Some(upper) => upper / n_events - i * n_out / n_events,
                None => {
                    let (i, n, e) = (u128::from(i), u128::from(n_out), u128::from(n_events));
                    u64::try_from((i + 1) * n / e - i * n / e).unwrap_or(u64::MAX)
                }
            };
            let bin = self.token_bins.entry_or_default(t / 1_000_000);
            *bin = bin.saturating_add(share);
        }
        if record.token_source == TokenSource::Usage {
            self.n_usage_counted += 1;
        }
        self.hidden_reasoning = self
            .hidden_reasoning
            .saturating_add(record.hidden_reasoning_tokens());
        if let Some(m) = record.token_mismatch.filter(|&m| m != 0) {
            self.n_mismatched += 1;
            self.abs_mismatch_total = self.abs_mismatch_total.saturating_add(m.unsigned_abs());
        }
    }

    /// Computes the figures; `slo` decides which requests count as goodput.
    // Long: every figure of a level, a field each.
    pub fn summary(&self, slo: &Slo) -> Summary {
        let ms = |v: &[f64]| Distribution::of(v).map(|d| d.scaled(1.0 / US_PER_MS));
        let collect = |f: &dyn Fn(&OkRow) -> Option<f64>| -> Vec<f64> {
            self.rows.iter().filter_map(f).collect()
        };
        let wall_us = match (self.first_wanted_us, self.last_end_us) {
            _ if self.passes.len() > 1 => self
                .passes
                .values()
                .map(|(a, b)| b.saturating_sub(*a))
                .sum(),
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        };
        let wall_s = wall_us as f64 / US_PER_S;
        let per_s = |x: f64| if wall_s > 0.0 { x / wall_s } else { 0.0 };
        let n_out_total: u64 = self
            .rows
            .iter()
            .fold(0u64, |total, r| total.saturating_add(r.n_out));
        let n_good = self
            .rows
            .iter()
            .filter(|r| slo.is_met_by(r.ttft_us, r.tpot_us, r.e2e_us))
            .count() as u64;
        Summary {
            concurrency: self.concurrency,
            n_requests: self.n_requests(),
            n_ok: self.n_ok,
            n_fail: self.fails.values().sum(),
            n_cancelled: self.n_cancelled,
            fails_by_kind: self.fails.clone(),
            ttft_ms: ms(&collect(&|r| Some(r.ttft_us as f64))),
            ttfat_ms: ms(&collect(&|r| r.ttfat_us.map(|t| t as f64))),
            tpot_ms: ms(&collect(&|r| r.tpot_us)),
            itl_ms: ms(&self.itl_us.iter().map(|&t| t as f64).collect::<Vec<_>>()),
            e2e_ms: ms(&collect(&|r| Some(r.e2e_us as f64))),
            queue_ms: ms(&self.queue_us.iter().map(|&t| t as f64).collect::<Vec<_>>()),
            browser_wait_ms: ms(&self
                .browser_wait_us
                .iter()
                .map(|&t| t as f64)
                .collect::<Vec<_>>()),
            ttft_after_send_ms: ms(&self
                .ttft_after_send_us
                .iter()
                .map(|&t| t as f64)
                .collect::<Vec<_>>()),
            protocols: self.protocols.clone(),
            slow_send_ms: ms(&self
                .slow_send_us
                .iter()
                .map(|&t| t as f64)
                .collect::<Vec<_>>()),
            decode_tps: Distribution::of(&collect(&|r| r.decode_tps)),
            wall_s,
            n_out_total,
            request_throughput_rps: per_s(self.n_ok as f64),
            output_tps: per_s(n_out_total as f64),
            tps_sum_article: collect(&|r| r.article_tps).iter().sum(),
            peak_output_tps: self.token_bins.values().copied().max().unwrap_or(0) as f64,
            peak_concurrency: peak_overlap(&self.spans),
            n_usage_counted: self.n_usage_counted,
            n_hidden_reasoning: self.hidden_reasoning,
            n_timing_hidden: self.n_timing_hidden,
            output_tokens: Distribution::of(&collect(&|r| Some(r.n_out as f64))),
            input_tokens: Distribution::of(&collect(&|r| r.input_tokens.map(|n| n as f64))),
            cached_input_pct: cached_input_pct(&self.rows),
            ttft_ms_per_1k_input: ttft_per_input(&self.rows),
            early: self.early,
            // Said only where some stream came in bursts (the document stays lean).
            bursts: if self.bursts.is_empty() {
                Bursts::default()
            } else {
                self.bursts
            },
            distorted: None,
            n_mismatched: self.n_mismatched,
            mean_abs_mismatch: if self.n_mismatched > 0 {
                self.abs_mismatch_total as f64 / self.n_mismatched as f64
            } else {
                0.0
            },
            n_good: slo.is_set().then_some(n_good),
            goodput_rps: slo.is_set().then(|| per_s(n_good as f64)),
            repetitions: Vec::new(),
            turns: Vec::new(),
            sessions: None,
            server: None,
        }
    }
}

/// The fewest requests with input tokens a level's TTFT-per-input slope is fitted
/// to, and the least range of their (uncached) input lengths: below either, the
/// slope is noise.
pub(crate) const PREFILL_MIN_REQUESTS: usize = 8;
/// See [`PREFILL_MIN_REQUESTS`].
pub(crate) const PREFILL_MIN_RANGE_TOKENS: u64 = 64;

fn cached_input_pct(rows: &[OkRow]) -> Option<f64> {
    let (input, cached) = rows
        .iter()
        .filter_map(|r| Some((r.input_tokens?, r.cached_tokens?)))
        .fold((0u64, 0u64), |(i, c), (input, cached)| {
            (i.saturating_add(input), c.saturating_add(cached.min(input)))
        });
    (input > 0).then(|| cached as f64 / input as f64 * 100.0)
}

/// TTFT (ms) per 1,000 computed input tokens: the least-squares slope of TTFT
/// over input tokens less cached ones, where lengths vary enough.
fn ttft_per_input(rows: &[OkRow]) -> Option<f64> {
    let points: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| {
            let computed = r.input_tokens?.saturating_sub(r.cached_tokens.unwrap_or(0));
            Some((computed as f64, r.ttft_us as f64 / US_PER_MS))
        })
        .collect();
    if points.len() < PREFILL_MIN_REQUESTS {
        return None;
    }
    let (lo, hi) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &(x, _)| {
            (lo.min(x), hi.max(x))
        });
    if hi - lo < PREFILL_MIN_RANGE_TOKENS as f64 {
        return None;
    }
    crate::stats::slope(&points).map(|ms_per_token| ms_per_token * 1000.0)
}

/// A successful request's TTFT split into browser wait and TTFT after sending, as
/// far as `engine`'s Resource Timing shows it: where the browser queues and its
/// timings do not show the queue, "after send" would still hold the wait, so no split.
pub(crate) fn browser_split_us(engine: Engine, record: &RequestRecord) -> Option<(u64, u64)> {
    let shown = record
        .browser
        .as_ref()
        .and_then(|b| b.protocol.as_deref())
        .is_none_or(|p| !browser::queues(engine, record.concurrency, p) || engine.shows_queue(p));
    Some((record.browser_wait_us()?, record.ttft_after_send_us()?)).filter(|_| shown)
}

impl AddAssign<&LevelStats> for LevelStats {
    fn add_assign(&mut self, other: &LevelStats) {
        if self.concurrency != other.concurrency {
            self.concurrency = None;
        }
        if self.engine == Engine::Unknown {
            self.engine = other.engine;
        }
        self.n_ok += other.n_ok;
        self.n_cancelled += other.n_cancelled;
        for (kind, n) in &other.fails {
            *self.fails.entry_or_default(*kind) += n;
        }
        self.rows.extend_from_slice(&other.rows);
        self.queue_us.extend_from_slice(&other.queue_us);
        self.browser_wait_us
            .extend_from_slice(&other.browser_wait_us);
        self.ttft_after_send_us
            .extend_from_slice(&other.ttft_after_send_us);
        for (protocol, n) in &other.protocols {
            *self.protocols.entry_or_default(protocol.clone()) += n;
        }
        self.slow_send_us.extend_from_slice(&other.slow_send_us);
        self.itl_us.extend_from_slice(&other.itl_us);
        for (bin, n) in other.token_bins.iter() {
            let total = self.token_bins.entry_or_default(*bin);
            *total = total.saturating_add(*n);
        }
        self.spans.extend_from_slice(&other.spans);
        self.first_wanted_us = min_opt(self.first_wanted_us, other.first_wanted_us);
        self.last_end_us = self.last_end_us.max(other.last_end_us);
        for (&repetition, &(a, b)) in other.passes.iter() {
            let pass = self.passes.entry_or_insert_with(repetition, || (a, b));
            *pass = (pass.0.min(a), pass.1.max(b));
        }
        self.n_usage_counted += other.n_usage_counted;
        self.n_timing_hidden += other.n_timing_hidden;
        self.n_mismatched += other.n_mismatched;
        self.abs_mismatch_total = self
            .abs_mismatch_total
            .saturating_add(other.abs_mismatch_total);
        self.hidden_reasoning = self.hidden_reasoning.saturating_add(other.hidden_reasoning);
        self.bursts += &other.bursts;
        self.early.n_requests += other.early.n_requests;
        self.early.asked_tokens += other.early.asked_tokens;
        self.early.produced_tokens = self
            .early
            .produced_tokens
            .saturating_add(other.early.produced_tokens);
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The most requests in flight at one instant (a request that ends exactly when
/// another starts does not overlap it).
fn peak_overlap(spans: &[(u64, u64)]) -> u32 {
    // Each edge as one number, its instant doubled and a start's low bit set: ends
    // sort before starts at the same instant.
    let mut edges: Vec<u64> = spans
        .iter()
        .flat_map(|&(start, end)| [start << 1 | 1, end.max(start) << 1])
        .collect();
    crate::stats::sort_numbers(&mut edges);
    let (mut now, mut peak) = (0i32, 0i32);
    for edge in edges {
        now += if edge & 1 == 1 { 1 } else { -1 };
        peak = peak.max(now);
    }
    peak as u32
}

/// The figures of one level, or of a whole run. Times in ms, rates per second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The concurrency level; `None` for a whole run.
    pub concurrency: Option<u32>,
    /// Requests sent, warm-up left out.
    pub n_requests: u64,
    /// Of those, the successful ones.
    pub n_ok: u64,
    /// Failures, cancelled requests excluded.
    pub n_fail: u64,
    /// Requests cancelled by the user.
    pub n_cancelled: u64,
    /// Failures by what went wrong.
    pub fails_by_kind: VecMap<ErrorKind, u64>,
    /// Time to first token, from the send.
    pub ttft_ms: Option<Distribution>,
    /// Time to the first answer token (differs from TTFT with reasoning models).
    pub ttfat_ms: Option<Distribution>,
    /// Time per output token after the first, per request.
    pub tpot_ms: Option<Distribution>,
    /// Inter-token latency, pooled over all requests.
    pub itl_ms: Option<Distribution>,
    /// End-to-end latency, from the send to the end.
    pub e2e_ms: Option<Distribution>,
    /// Client queue time: waiting for a free slot before sending.
    pub queue_ms: Option<Distribution>,
    /// Time in the browser between `fetch` and the request leaving it (Resource
    /// Timing; successful requests): the browser's connection queue, set-up, preflight.
    #[serde(default)]
    pub browser_wait_ms: Option<Distribution>,
    /// TTFT from when the request left the browser: what the server (and the network)
    /// took, without the browser's own queue.
    #[serde(default)]
    pub ttft_after_send_ms: Option<Distribution>,
    /// Requests per HTTP version the browser reported (`http/1.1`, `h2`, `h3`).
    #[serde(default)]
    pub protocols: VecMap<String, u64>,
    /// Slow sends: requests that waited at least 10 ms in the browser on an open
    /// connection with no browser queue in front (the cost of a CORS preflight);
    /// their unexplained wait.
    #[serde(default)]
    pub slow_send_ms: Option<Distribution>,
    /// Per-request decode tokens/s.
    pub decode_tps: Option<Distribution>,
    /// From the first request wanting to start to the last one ending.
    pub wall_s: f64,
    /// Output tokens of the successful requests.
    pub n_out_total: u64,
    /// Successful requests per second of wall time.
    pub request_throughput_rps: f64,
    /// Aggregate output tokens/s: Σ N_out / wall time.
    pub output_tps: f64,
    /// The article's `tps_sum`: Σ per-request rates (see the module docs).
    pub tps_sum_article: f64,
    /// The most output tokens in one whole second of the time origin.
    pub peak_output_tps: f64,
    /// The most requests in flight at once.
    pub peak_concurrency: u32,
    /// Successful requests whose N_out came from `usage`.
    pub n_usage_counted: u64,
    /// Reasoning tokens that servers counted in `usage` but never streamed: in
    /// `n_out_total` and the output tok/s, left out of TPOT and decode speed.
    #[serde(default)]
    pub n_hidden_reasoning: u64,
    /// Requests whose Resource Timing hid when they left the browser: the server
    /// sends no `Timing-Allow-Origin`, so their TTFT cannot be split.
    #[serde(default)]
    pub n_timing_hidden: u64,
    /// Output tokens of each successful request: the lengths actually produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<Distribution>,
    /// Input tokens of each successful request, as the server counted them
    /// (`usage.prompt_tokens`; absent when no server said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<Distribution>,
    /// The share of input tokens the server read from its prompt cache, percent,
    /// over the successful requests whose server said both (absent when none said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_pct: Option<f64>,
    /// How much TTFT grew per 1,000 input tokens the server had to compute (cached
    /// ones left out where it said): the least-squares slope over this level's
    /// successful requests, when their input lengths vary enough to show it
    /// ([`PREFILL_MIN_REQUESTS`], [`PREFILL_MIN_RANGE_TOKENS`]); absent otherwise.
    /// At a level without queueing, the prefill cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms_per_1k_input: Option<f64>,
    /// Answers that ended on their own before the length asked (absent when none).
    #[serde(default, skip_serializing_if = "Early::is_empty")]
    pub early: Early,
    /// How the streams were delivered: requests that arrived in bursts, and their
    /// share of the token events (absent when none did).
    #[serde(default, skip_serializing_if = "Bursts::is_empty")]
    pub bursts: Bursts,
    /// What, besides the server, shaped this level's figures so much that the
    /// verdict leaves it out (see [`Distortion`]); `None` for a level measured clean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distorted: Option<Distortion>,
    /// Requests whose usage count differs from their chunk count.
    pub n_mismatched: u64,
    /// Their mean absolute difference, tokens.
    pub mean_abs_mismatch: f64,
    /// Requests meeting every SLO limit (when any is set).
    pub n_good: Option<u64>,
    /// `n_good` per second of wall time.
    pub goodput_rps: Option<f64>,
    /// Each pass's figures when the ladder was repeated (empty otherwise): the
    /// spread between them is the noise floor of this level.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<PassFigures>,
    /// Each turn's figures in a run of conversations (empty otherwise): the first
    /// turn against the later ones is what the conversation's cache is worth.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnFigures>,
    /// The level's conversations as wholes, in a run of conversations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionFigures>,
    /// What the server reported while this level ran (its `/metrics`), where the
    /// page could read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerLevel>,
}

/// One pass of a repeated level.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PassFigures {
    /// Which pass (0 for the first).
    pub repetition: u32,
    /// Successful requests.
    pub n_ok: u64,
    /// Median TTFT, ms.
    pub ttft_p50_ms: Option<f64>,
    /// p95 TTFT, ms.
    pub ttft_p95_ms: Option<f64>,
    /// Median TPOT, ms.
    pub tpot_p50_ms: Option<f64>,
    /// Aggregate output tokens/s.
    pub output_tps: f64,
}

impl PassFigures {
    /// The pass figures of `s`.
    pub fn of(repetition: u32, s: &Summary) -> PassFigures {
        PassFigures {
            repetition,
            n_ok: s.n_ok,
            ttft_p50_ms: s.ttft_ms.map(|d| d.p50),
            ttft_p95_ms: s.ttft_ms.map(|d| d.p95),
            tpot_p50_ms: s.tpot_ms.map(|d| d.p50),
            output_tps: s.output_tps,
        }
    }
}

/// One turn of a level's conversations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnFigures {
    /// 1 for the first turn.
    pub turn: u32,
    /// Successful requests.
    pub n_ok: u64,
    /// Failed requests.
    pub n_fail: u64,
    /// Median TTFT, ms.
    pub ttft_p50_ms: Option<f64>,
    /// p95 TTFT, ms.
    pub ttft_p95_ms: Option<f64>,
    /// Input tokens as the server counted them, mean: the conversation so far.
    pub input_tokens_mean: Option<f64>,
    /// The share of them read from the prompt cache, percent.
    pub cached_input_pct: Option<f64>,
}

impl TurnFigures {
    /// The turn figures of `s`.
    pub fn of(turn: u32, s: &Summary) -> TurnFigures {
        TurnFigures {
            turn,
            n_ok: s.n_ok,
            n_fail: s.n_fail,
            ttft_p50_ms: s.ttft_ms.map(|d| d.p50),
            ttft_p95_ms: s.ttft_ms.map(|d| d.p95),
            input_tokens_mean: s.input_tokens.map(|d| d.mean),
            cached_input_pct: s.cached_input_pct,
        }
    }
}

/// A level's conversations, each from its first request's send to its last's end.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionFigures {
    /// Conversations that started.
    pub n_sessions: u64,
    /// Of those, the ones whose every turn the plan asked for succeeded.
    pub n_whole: u64,
    /// How long the whole ones took, think time included, ms.
    pub duration_ms: Option<Distribution>,
}

impl SessionFigures {
    /// The conversations of `records` (one level's, warm-ups left out), each of
    /// the turns its records say, or of `turns` (the plan's) where they do not.
    pub fn of<'a>(
        records: impl Iterator<Item = &'a RequestRecord>,
        turns: u32,
    ) -> Option<SessionFigures> {
        // (session, first send, last end, successful turns, turns it has).
        let mut sessions: VecMap<u64, (u64, u64, u32, u32)> = VecMap::new();
        for r in records {
            let Some(turn) = r.turn else { continue };
            let own = if turn.n_turns == 0 {
                turns
            } else {
                turn.n_turns
            };
            let s = sessions.entry_or_insert_with(turn.session, || (r.sent_us, r.end_us, 0, own));
            s.0 = s.0.min(r.sent_us);
            s.1 = s.1.max(r.end_us);
            s.2 += u32::from(r.is_ok());
        }
        if sessions.is_empty() {
            return None;
        }
        let whole: Vec<f64> = sessions
            .values()
            .filter(|s| s.2 >= s.3)
            .map(|s| s.1.saturating_sub(s.0) as f64 / 1e3)
            .collect();
        Some(SessionFigures {
            n_sessions: sessions.len() as u64,
            n_whole: whole.len() as u64,
            duration_ms: Distribution::of(&whole),
        })
    }
}

/// Why a level's figures are the tool's or the browser's as much as the server's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case", try_from = "DistortionWire")]
pub enum Distortion {
    /// The browser held requests back in its own per-host queue (`protocol`,
    /// `connections` in flight at most): the server never saw this concurrency.
    BrowserQueue {
        /// The protocol the browser spoke.
        protocol: String,
        /// Requests it had in flight to the host at most.
        connections: u32,
    },
    /// The measuring engine's own event loop ran this late (p95 of its ticks while
    /// requests were in flight, ms): timestamps moved by as much.
    Engine {
        /// The lateness, ms.
        lag_p95_ms: f64,
    },
    /// Most of the level's streams arrived in bursts (`share_pct` of their token
    /// events, up to `largest` in one read) although the server took its time: a
    /// gateway that buffers or compresses the stream held them back. TTFT, TPOT
    /// and ITL there are the gateway's releases, not the server's pace.
    Buffered {
        /// Requests whose stream came in bursts.
        n_requests: u64,
        /// Of the level's token events, the share that came in bursts, percent.
        share_pct: f64,
        /// The most token events in one network read.
        largest: u64,
    },
}

impl Distortion {
    /// Whether most of `level`'s successful streams arrived in bursts.
    pub fn buffered(level: &Summary) -> Option<Distortion> {
        let b = level.bursts;
        (b.n_requests > 0 && 2 * b.n_requests >= level.n_ok).then(|| Distortion::Buffered {
            n_requests: b.n_requests,
            share_pct: b.share_pct(),
            largest: b.largest,
        })
    }
}

/// Every field of every [`Distortion`] (see [`crate::tagged`]).
#[derive(Deserialize)]
struct DistortionWire {
    by: String,
    protocol: Option<String>,
    connections: Option<u32>,
    lag_p95_ms: Option<f64>,
    n_requests: Option<u64>,
    share_pct: Option<f64>,
    largest: Option<u64>,
}

impl TryFrom<DistortionWire> for Distortion {
    type Error = WireError;

    fn try_from(w: DistortionWire) -> Result<Self, WireError> {
        let by = w.by.as_str();
        match by {
            "browser_queue" => Ok(Distortion::BrowserQueue {
                protocol: need(w.protocol, by, "protocol")?,
                connections: need(w.connections, by, "connections")?,
            }),
            "engine" => Ok(Distortion::Engine {
                lag_p95_ms: need(w.lag_p95_ms, by, "lag_p95_ms")?,
            }),
            "buffered" => Ok(Distortion::Buffered {
                n_requests: need(w.n_requests, by, "n_requests")?,
                share_pct: need(w.share_pct, by, "share_pct")?,
                largest: need(w.largest, by, "largest")?,
            }),
            _ => Err(WireError::UnknownTag { tag: w.by }),
        }
    }
}

impl Summary {
    /// The spread of a figure between the passes of a repeated level: (max − min)
    /// over their mean, percent. `None` with fewer than two passes that have it.
    pub fn spread_pct(&self, figure: impl Fn(&PassFigures) -> Option<f64>) -> Option<f64> {
        let values: Vec<f64> = self
            .repetitions
            .iter()
            .filter(|p| p.n_ok > 0)
            .filter_map(figure)
            .filter(|v| v.is_finite())
            .collect();
        if values.len() < 2 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let (lo, hi) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        (mean > 0.0).then(|| (hi - lo) / mean * 100.0)
    }

    /// The protocol over which `engine` held some of this level's requests back in
    /// its own queue (see [`browser::queues`]): part of their TTFT is the browser's.
    pub fn browser_queued(&self, engine: Engine) -> Option<&str> {
        browser::queued_protocol(engine, self.concurrency.unwrap_or(0), &self.protocols)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distortions_read_back_as_written() {
        let all = vec![
            Distortion::BrowserQueue {
                protocol: "http/1.1".into(),
                connections: 6,
            },
            Distortion::Engine { lag_p95_ms: 24.5 },
        ];
        let json = serde_json::to_string(&all).unwrap();
        assert_eq!(
            json,
            r#"[{"by":"browser_queue","protocol":"http/1.1","connections":6},{"by":"engine","lag_p95_ms":24.5}]"#
        );
        assert_eq!(serde_json::from_str::<Vec<Distortion>>(&json).unwrap(), all);
        let error = serde_json::from_str::<Distortion>(r#"{"by":"engine"}"#).unwrap_err();
        assert!(error.to_string().contains("lag_p95_ms"), "{error}");
    }

    #[test]
    fn a_conversation_is_whole_at_its_own_number_of_turns() {
        use crate::record::{RecordBuilder, RecordOptions, RequestStart, StreamEnd, Turn};
        let turn = |id: u64, session: u64, index: u32, n_turns: u32| {
            let mut b = RecordBuilder::new(
                RequestStart {
                    id,
                    concurrency: 1,
                    warmup: false,
                    wanted_us: id * 1_000_000,
                    sent_us: id * 1_000_000,
                },
                RecordOptions::default(),
            );
            b.on_headers(200, Some("text/event-stream"), None, id * 1_000_000 + 1_000);
            b.on_bytes(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n",
                id * 1_000_000 + 2_000,
            );
            let mut r = b.finish(StreamEnd::Complete, id * 1_000_000 + 3_000);
            r.turn = Some(Turn {
                session,
                index,
                n_turns,
            });
            r
        };
        // A file's conversations: one of three turns, one of a single question,
        // one of two cut after its first; and one written before turns were
        // counted (the plan's three).
        let records = [
            turn(0, 0, 0, 3),
            turn(1, 0, 1, 3),
            turn(2, 0, 2, 3),
            turn(3, 1, 0, 1),
            turn(4, 2, 0, 2),
            turn(5, 3, 0, 0),
        ];
        let figures = SessionFigures::of(records.iter(), 3).unwrap();
        assert_eq!((figures.n_sessions, figures.n_whole), (4, 2));
        // The whole ones: the first, from its first send to its last end.
        assert_eq!(
            figures.duration_ms.unwrap().max,
            (records[2].end_us - records[0].sent_us) as f64 / 1e3
        );
    }

    #[test]
    fn a_server_claiming_absurd_usage_panics_nothing() {
        use crate::record::{RecordBuilder, RecordOptions, RequestStart, StreamEnd};
        let mut all = LevelStats::new(1);
        for claimed in [u64::MAX, 1 << 63, (1 << 63) - 1] {
            let mut b = RecordBuilder::new(
                RequestStart {
                    id: 1,
                    concurrency: 1,
                    warmup: false,
                    wanted_us: 0,
                    sent_us: 0,
                },
                RecordOptions::default(),
            );
            b.on_headers(200, Some("text/event-stream"), None, 1_000);
            for t in [100_000, 200_000, 1_300_000] {
                b.on_bytes(
                    b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
                    t,
                );
            }
            let usage = format!(
                "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":1,\"completion_tokens\":{claimed}}}}}\n\ndata: [DONE]\n\n"
            );
            b.on_bytes(usage.as_bytes(), 1_400_000);
            let r = b.finish(StreamEnd::Complete, 1_400_000);
            assert_eq!(r.n_out, Some(claimed));
            assert!(r.token_mismatch.is_some());
            let mut one = LevelStats::new(1);
            one.add(&r);
            all += &one;
            all.add(&r);
        }
        let s = all.summary(&Slo::default());
        assert_eq!(s.n_out_total, u64::MAX, "saturated");
        assert!(s.output_tps.is_finite() && s.peak_output_tps.is_finite());
    }
    use crate::{
        error::RequestError,
        record::{RequestRecord, TokenSource},
    };

    /// A request of `input` tokens (`cached` of them from the cache) whose TTFT is
    /// `ttft_ms`.
    fn with_input(id: u64, input: u64, cached: Option<u64>, ttft_ms: u64) -> RequestRecord {
        let mut r = crate::chart::tests_support::record(id, 1, ttft_ms, 20);
        let usage = r.usage.get_or_insert_with(Default::default);
        usage.prompt_tokens = Some(input);
        usage.cached_tokens = cached;
        r
    }

    fn summary_of(records: &[RequestRecord]) -> Summary {
        let mut stats = LevelStats::new(1);
        records.iter().for_each(|r| stats.add(r));
        stats.summary(&Slo::default())
    }

    #[test]
    fn input_tokens_their_cached_share_and_ttft_per_input() {
        // TTFT = 40 ms + 0.2 ms per computed token (200 ms per 1,000), lengths
        // 500–1,900, ±3 ms of noise; a quarter of each prompt cached.
        let records: Vec<RequestRecord> = (0..16u64)
            .map(|i| {
                let input = 500 + i * 100;
                let cached = input / 4;
                let noise = [0, 3, 0, 3][(i % 4) as usize];
                with_input(
                    i + 1,
                    input,
                    Some(cached),
                    40 + (input - cached) / 5 + noise,
                )
            })
            .collect();
        let s = summary_of(&records);
        let input = s.input_tokens.unwrap();
        assert_eq!((input.min, input.max, input.mean), (500.0, 2000.0, 1250.0));
        assert!(
            (s.cached_input_pct.unwrap() - 25.0).abs() < 0.2,
            "{:?}",
            s.cached_input_pct
        );
        let slope = s.ttft_ms_per_1k_input.unwrap();
        assert!((slope - 200.0).abs() < 5.0, "{slope}");

        // One length for all: no slope (nothing to fit), the rest still said.
        let same: Vec<RequestRecord> = (0..16)
            .map(|i| with_input(i + 1, 800, Some(0), 50))
            .collect();
        let s = summary_of(&same);
        assert_eq!(s.ttft_ms_per_1k_input, None);
        assert_eq!(s.cached_input_pct, Some(0.0));
        // Too few requests to fit.
        assert_eq!(
            summary_of(&records[..PREFILL_MIN_REQUESTS - 1]).ttft_ms_per_1k_input,
            None
        );
        // A server that says nothing of its input: nothing said.
        let silent: Vec<RequestRecord> = (0..16)
            .map(|i| crate::chart::tests_support::record(i + 1, 1, 50 + i, 20))
            .collect();
        let s = summary_of(&silent);
        assert_eq!(
            (s.input_tokens, s.cached_input_pct, s.ttft_ms_per_1k_input),
            (None, None, None)
        );
        // The fields stay out of a document that has none of them.
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("input"), "{json}");
    }

    /// A successful record: sent at `sent`, tokens at the given times, ending at `end`.
    fn ok(id: u64, sent: u64, tokens: &[u64], end: u64, usage: Option<u64>) -> RequestRecord {
        let n_events = tokens.len() as u64;
        RequestRecord {
            id,
            concurrency: 2,
            warmup: false,
            repetition: 0,
            target: 0,
            wanted_us: sent,
            sent_us: sent,
            headers_us: Some(sent),
            first_token_us: tokens.first().copied(),
            first_answer_us: tokens.first().copied(),
            last_token_us: tokens.last().copied(),
            end_us: end,
            status: Some(200),
            response_id: None,
            n_bytes: 0,
            n_token_events: n_events,
            n_reasoning_events: 0,
            n_tool_call_events: 0,
            usage: None,
            n_out: Some(usage.unwrap_or(n_events)),
            token_source: if usage.is_some() {
                TokenSource::Usage
            } else {
                TokenSource::Chunks
            },
            token_mismatch: usage.map(|u| u as i64 - n_events as i64),
            finish_reason: Some("stop".into()),
            saw_done: true,
            token_times_us: tokens.to_vec(),
            n_comment_lines: 0,
            output_text: None,
            error: None,
            browser: None,
            server_timings: None,
            asked_tokens: None,
            turn: None,
        }
    }

    #[test]
    fn two_overlapping_requests() {
        let mut stats = LevelStats::new(2);
        // A: sent 0, tokens at 100, 200, 300 ms, ends 300 ms.
        stats.add(&ok(1, 0, &[100_000, 200_000, 300_000], 300_000, None));
        // B: sent 100 ms, tokens at 400, 500 ms, ends 1000 ms.
        stats.add(&ok(2, 100_000, &[400_000, 500_000], 1_000_000, None));
        let s = stats.summary(&Slo::default());
        assert_eq!((s.n_ok, s.n_fail, s.n_requests), (2, 0, 2));
        let ttft = s.ttft_ms.unwrap();
        assert_eq!((ttft.min, ttft.max, ttft.p50), (100.0, 300.0, 200.0));
        // TPOT: A (300 − 100)/2 = 100 ms; B (900 − 300)/1 = 600 ms.
        let tpot = s.tpot_ms.unwrap();
        assert_eq!((tpot.min, tpot.max), (100.0, 600.0));
        // ITL pooled: 100, 100, 100 ms.
        assert_eq!(s.itl_ms.unwrap().n, 3);
        assert_eq!(s.itl_ms.unwrap().mean, 100.0);
        // Wall 1 s; 5 tokens; 2 requests.
        assert_eq!(s.wall_s, 1.0);
        assert_eq!(s.output_tps, 5.0);
        assert_eq!(s.request_throughput_rps, 2.0);
        // Article: A 2/0.2 = 10/s, B 1/0.1 = 10/s, summed 20/s: four times too high.
        assert_eq!(s.tps_sum_article, 20.0);
        assert_eq!(s.peak_output_tps, 5.0);
        assert_eq!(s.peak_concurrency, 2);
    }

    #[test]
    fn failures_grouped_and_cancelled_apart_and_warmup_ignored() {
        let mut stats = LevelStats::new(2);
        let mut warm = ok(9, 0, &[10, 20], 30, None);
        warm.warmup = true;
        stats.add(&warm);
        for (i, kind) in [
            ErrorKind::Auth,
            ErrorKind::Auth,
            ErrorKind::Cancelled,
            ErrorKind::StreamCut,
        ]
        .into_iter()
        .enumerate()
        {
            let mut r = ok(i as u64, 0, &[], 50, None);
            r.error = Some(RequestError {
                kind,
                detail: String::new(),
                body_sample: None,
                retry_after_s: None,
            });
            stats.add(&r);
        }
        let s = stats.summary(&Slo::default());
        assert_eq!(
            (s.n_requests, s.n_ok, s.n_fail, s.n_cancelled),
            (4, 0, 3, 1)
        );
        assert_eq!(s.fails_by_kind[&ErrorKind::Auth], 2);
        assert_eq!(s.fails_by_kind[&ErrorKind::StreamCut], 1);
        assert_eq!(s.ttft_ms, None);
        assert_eq!(s.output_tps, 0.0);
    }

    #[test]
    fn usage_counts_spread_over_events_for_bins_and_mismatch() {
        let mut stats = LevelStats::new(1);
        // 2 events carrying 8 tokens in all, one in second 0 and one in second 1.
        stats.add(&ok(1, 0, &[500_000, 1_500_000], 2_000_000, Some(8)));
        let s = stats.summary(&Slo::default());
        assert_eq!(s.n_out_total, 8);
        assert_eq!(s.peak_output_tps, 4.0);
        assert_eq!((s.n_usage_counted, s.n_mismatched), (1, 1));
        assert_eq!(s.mean_abs_mismatch, 6.0);
    }

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let records = [
            ok(1, 0, &[100_000, 200_000], 250_000, None),
            ok(2, 50_000, &[300_000, 320_000, 400_000], 500_000, Some(4)),
            ok(3, 600_000, &[700_000, 900_000], 1_200_000, None),
        ];
        let mut all = LevelStats::new(2);
        records.iter().for_each(|r| all.add(r));
        let mut a = LevelStats::new(2);
        a.add(&records[0]);
        let mut b = LevelStats::new(2);
        b.add(&records[1]);
        b.add(&records[2]);
        a += &b;
        let slo = Slo {
            ttft_p95_ms: Some(150.0),
            ..Slo::default()
        };
        assert_eq!(a.summary(&slo), all.summary(&slo));
        let mut other_level = LevelStats::new(4);
        other_level += &a;
        assert_eq!(other_level.summary(&slo).concurrency, None);
    }

    #[test]
    fn goodput_counts_requests_within_every_limit() {
        let mut stats = LevelStats::new(2);
        stats.add(&ok(1, 0, &[100_000, 200_000], 250_000, None)); // TTFT 100, TPOT 150
        stats.add(&ok(2, 0, &[300_000, 320_000], 340_000, None)); // TTFT 300
        stats.add(&ok(3, 0, &[50_000, 60_000], 1_000_000, None)); // TPOT 950
        let slo = Slo {
            ttft_p95_ms: Some(200.0),
            tpot_p95_ms: Some(200.0),
            e2e_p95_ms: None,
            error_rate_pct: None,
        };
        let s = stats.summary(&slo);
        assert_eq!(s.n_good, Some(1));
        assert_eq!(s.goodput_rps, Some(1.0));
        assert_eq!(stats.summary(&Slo::default()).goodput_rps, None);
    }

    #[test]
    fn peak_overlap_touching_spans_do_not_overlap() {
        assert_eq!(peak_overlap(&[(0, 10), (10, 20), (20, 30)]), 1);
        assert_eq!(peak_overlap(&[(0, 10), (5, 20), (6, 7)]), 3);
        assert_eq!(peak_overlap(&[]), 0);
    }
}
