//! A run: warm-up, then the plan's schedule (closed-loop ladder, open-loop arrivals,
//! or a fixed duration), progress for the page at most ten times a second, and the
//! run document at the end, cancelled or not.
//!
//! Concurrency is `spawn_local` tasks (or lanes joined in one task): a closed-loop
//! level runs `c` lanes, each sending its next request as soon as its previous one
//! ended. Open-loop arrivals are spawned at their scheduled instants; if the timer
//! fires late, the delay is recorded as client queue time, not as TTFT.

use std::{
    cell::{Cell, RefCell},
    rc::Rc,
    time::Duration,
};

use futures_channel::mpsc;
use futures_util::{future::join_all, StreamExt};
use tokenmeter_core::{
    plan::{arrival_offsets_ms, AuthStyle, LoadMode, Plan},
    record::{RecordOptions, RequestRecord, RequestStart},
    report::{browser_queue_notes, Environment, RunDocument, RunStatus},
    stream::request_body,
    summary::LevelStats,
};

use super::{
    cancel::CancelToken,
    clock::Clock,
    request::{send, Target},
};
use crate::protocol::{FromWorker, LevelProgress, LevelState, Progress};

/// How often the page hears about progress: ten times a second at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// A level whose engine loop ran this much later than asked is flagged: the
/// browser, not the server, was the bottleneck for part of what it measured.
const LAG_FLAG_MS: f64 = 50.0;

/// Everything a run needs.
pub struct RunInput {
    pub run_id: String,
    pub started_at: String,
    pub plan: Plan,
    pub api_key: Option<String>,
    /// When the page was hidden, as the page reports it.
    pub visibility: Rc<Visibility>,
}

/// When the page was hidden (browsers throttle hidden tabs, and their timers),
/// on the worker's `performance.now()` timeline.
#[derive(Default)]
pub struct Visibility {
    hidden_since: Cell<Option<f64>>,
    spans: RefCell<Vec<(f64, f64)>>,
}

impl Visibility {
    /// The page says it became hidden (or visible again).
    pub fn set_hidden(&self, hidden: bool) {
        let now = super::clock::performance().now();
        match (hidden, self.hidden_since.get()) {
            (true, None) => self.hidden_since.set(Some(now)),
            (false, Some(since)) => {
                self.spans.borrow_mut().push((since, now));
                self.hidden_since.set(None);
            }
            _ => {}
        }
    }

    /// How long the page was hidden between `from` and `to` (same timeline), ms.
    fn hidden_ms(&self, from: f64, to: f64) -> f64 {
        let ongoing = self.hidden_since.get().map(|since| (since, to));
        self.spans
            .borrow()
            .iter()
            .copied()
            .chain(ongoing)
            .map(|(a, b)| (b.min(to) - a.max(from)).max(0.0))
            .sum()
    }
}

/// The state shared by the lanes and the progress ticker.
struct Shared {
    clock: Clock,
    records: RefCell<Vec<RequestRecord>>,
    progress: RefCell<Progress>,
    /// One accumulator per level, for the live percentiles.
    live: RefCell<Vec<LevelStats>>,
    level_started_ms: RefCell<Vec<f64>>,
    next_id: Cell<u64>,
    finished: Cell<bool>,
    /// The level running now, for the lag monitor.
    current_level: Cell<Option<usize>>,
    /// Per level, the worst lateness of the engine's own 100 ms tick, ms.
    max_lag_ms: RefCell<Vec<f64>>,
    /// Conditions that affect the figures, for the document.
    notes: RefCell<Vec<String>>,
}

impl Shared {
    fn next_id(&self) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }

    fn level(&self, index: usize, f: impl FnOnce(&mut LevelProgress)) {
        if let Some(level) = self.progress.borrow_mut().levels.get_mut(index) {
            f(level);
        }
    }

    fn record_done(&self, level_index: Option<usize>, record: RequestRecord) {
        match level_index {
            Some(index) => {
                let failed = !record.is_ok();
                self.live.borrow_mut()[index].add(&record);
                self.level(index, |level| {
                    level.n_done += 1;
                    level.n_in_flight = level.n_in_flight.saturating_sub(1);
                    level.n_failed += u32::from(failed);
                });
            }
            None => self.progress.borrow_mut().n_warmup_done += 1,
        }
        self.records.borrow_mut().push(record);
    }

    /// The progress with live figures, as of now.
    fn snapshot(&self, plan: &Plan) -> Progress {
        let mut progress = self.progress.borrow().clone();
        progress.elapsed_ms = self.clock.now_ms();
        let live = self.live.borrow();
        let started = self.level_started_ms.borrow();
        let mut summaries = Vec::with_capacity(progress.levels.len());
        for (i, level) in progress.levels.iter_mut().enumerate() {
            let summary = live[i].summary(&plan.slo);
            level.ttft_p50_ms = summary.ttft_ms.map(|d| d.p50);
            level.ttft_p95_ms = summary.ttft_ms.map(|d| d.p95);
            level.output_tps = summary.output_tps;
            if level.state == LevelState::Running {
                level.elapsed_ms = progress.elapsed_ms - started[i];
            }
            summaries.push(summary);
        }
        // The same words the finished run's environment notes will have, as soon as
        // a level's first requests show the protocol: no need to wait for the end.
        progress.notes = browser_queue_notes(&summaries);
        progress
    }
}

/// The request every request of the run sends.
pub fn target(plan: &Plan, api_key: Option<&str>) -> Target {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if let Some(key) = api_key.map(str::trim).filter(|k| !k.is_empty()) {
        match plan.auth {
            AuthStyle::Bearer => headers.push(("authorization".into(), format!("Bearer {key}"))),
            AuthStyle::ApiKeyHeader => headers.push(("api-key".into(), key.to_owned())),
        }
    }
    headers.extend(plan.extra_headers.iter().cloned());
    Target {
        url: plan.endpoint_url(),
        body: request_body(&plan.body_spec()).to_string(),
        headers,
        timeout_ms: plan.timeout_s * 1e3,
    }
}

/// Runs a plan to the end (or to Cancel), posting progress and then the document.
pub async fn run(input: RunInput, cancel: CancelToken, post: Rc<dyn Fn(FromWorker)>) {
    if let Err(problems) = input.plan.validate() {
        post(FromWorker::Failed { problems });
        return;
    }
    let plan = input.plan;
    let target = target(&plan, input.api_key.as_deref());
    let options = RecordOptions::default();
    let clock = Clock::start();
    let resolution_us = clock.resolution_us();
    super::request::reset_resource_timing();

    let levels: Vec<(u32, u32)> = match &plan.load {
        LoadMode::Ladder {
            levels,
            requests_per_level,
        } => levels.iter().map(|&c| (c, *requests_per_level)).collect(),
        LoadMode::Arrivals { n_requests, .. } => vec![(0, *n_requests)],
        LoadMode::Duration { concurrency, .. } => vec![(*concurrency, 0)],
    };
    let shared = Rc::new(Shared {
        clock: clock.clone(),
        records: RefCell::new(Vec::new()),
        progress: RefCell::new(Progress {
            n_warmup: plan.warmup_requests,
            levels: levels
                .iter()
                .map(|&(concurrency, n_planned)| LevelProgress {
                    concurrency,
                    n_planned,
                    ..LevelProgress::default()
                })
                .collect(),
            ..Progress::default()
        }),
        live: RefCell::new(levels.iter().map(|&(c, _)| LevelStats::new(c)).collect()),
        level_started_ms: RefCell::new(vec![0.0; levels.len()]),
        next_id: Cell::new(0),
        finished: Cell::new(false),
        current_level: Cell::new(None),
        max_lag_ms: RefCell::new(vec![0.0; levels.len()]),
        notes: RefCell::new(Vec::new()),
    });

    // Progress, at a bounded rate, until the run ends.
    wasm_bindgen_futures::spawn_local({
        let shared = shared.clone();
        let post = post.clone();
        let plan = plan.clone();
        async move {
            while !shared.finished.get() {
                post(FromWorker::Progress(shared.snapshot(&plan)));
                // The tick doubles as a monitor of the engine's own event loop: when
                // it wakes late, so did every timestamp waiting behind it.
                let asked_ms = PROGRESS_EVERY.as_secs_f64() * 1e3;
                let before = shared.clock.now_ms();
                gloo_timers::future::sleep(PROGRESS_EVERY).await;
                let lag = shared.clock.now_ms() - before - asked_ms;
                if let Some(index) = shared.current_level.get() {
                    let mut max_lag = shared.max_lag_ms.borrow_mut();
                    max_lag[index] = max_lag[index].max(lag);
                }
            }
        }
    });

    // Warm-up: sequential, never summarised; it pays for connection set-up and the
    // first CORS preflight.
    let warmup_concurrency = levels.first().map_or(1, |l| l.0.max(1));
    for _ in 0..plan.warmup_requests {
        if cancel.is_cancelled() {
            break;
        }
        let now = clock.now_us();
        let start = RequestStart {
            id: shared.next_id(),
            concurrency: warmup_concurrency,
            warmup: true,
            wanted_us: now,
            sent_us: now,
        };
        let record = send(&target, start, &clock, &cancel, options).await;
        shared.record_done(None, record);
    }

    for (index, &(concurrency, n_planned)) in levels.iter().enumerate() {
        if cancel.is_cancelled() {
            break;
        }
        shared.level_started_ms.borrow_mut()[index] = clock.now_ms();
        shared.current_level.set(Some(index));
        shared.level(index, |l| l.state = LevelState::Running);
        let ctx = LevelContext {
            shared: &shared,
            target: &target,
            cancel: &cancel,
            options,
            index,
        };
        match &plan.load {
            LoadMode::Ladder { .. } => ctx.closed_loop(concurrency, Some(n_planned), None).await,
            LoadMode::Duration { seconds, .. } => {
                ctx.closed_loop(concurrency, None, Some(seconds * 1e3))
                    .await
            }
            LoadMode::Arrivals {
                rate_rps,
                poisson,
                seed,
                ..
            } => {
                ctx.open_loop(&arrival_offsets_ms(*rate_rps, *poisson, n_planned, *seed))
                    .await
            }
        }
        let started_ms = shared.level_started_ms.borrow()[index];
        let elapsed = clock.now_ms() - started_ms;
        shared.current_level.set(None);
        shared.level(index, |l| {
            l.state = LevelState::Done;
            l.elapsed_ms = elapsed;
        });
        let name = if concurrency == 0 {
            "open loop".to_owned()
        } else {
            format!("concurrency {concurrency}")
        };
        let hidden_ms = input.visibility.hidden_ms(
            clock.origin_ms() + started_ms,
            clock.origin_ms() + started_ms + elapsed,
        );
        if hidden_ms > 0.0 {
            shared.notes.borrow_mut().push(format!(
                "{name}: the page was hidden for {:.1} s of this level; browsers throttle hidden tabs, so its timings may be late",
                hidden_ms / 1e3
            ));
        }
        let lag = shared.max_lag_ms.borrow()[index];
        if lag > LAG_FLAG_MS {
            shared.notes.borrow_mut().push(format!(
                "{name}: the engine's own event loop ran up to {lag:.0} ms late, so the browser itself was saturated: part of what this level measured is the tool, not the server"
            ));
        }
    }

    let status = if cancel.is_cancelled() {
        RunStatus::Cancelled
    } else {
        RunStatus::Done
    };
    post(FromWorker::Progress(shared.snapshot(&plan)));
    shared.finished.set(true);
    let records = std::mem::take(&mut *shared.records.borrow_mut());
    let mut environment = environment(resolution_us);
    environment
        .notes
        .extend(shared.notes.borrow_mut().drain(..));
    let document = RunDocument::build(
        input.run_id,
        input.started_at,
        status,
        plan,
        environment,
        records,
    );
    post(FromWorker::Finished {
        document: Box::new(document),
    });
}

/// What one level's scheduling needs.
struct LevelContext<'a> {
    shared: &'a Rc<Shared>,
    target: &'a Target,
    cancel: &'a CancelToken,
    options: RecordOptions,
    index: usize,
}

impl LevelContext<'_> {
    /// `concurrency` lanes, each sending its next request when its previous one
    /// ended, until `limit` requests were sent or `duration_ms` passed.
    async fn closed_loop(&self, concurrency: u32, limit: Option<u32>, duration_ms: Option<f64>) {
        let clock = &self.shared.clock;
        let n_sent = Cell::new(0u32);
        let deadline_ms = duration_ms.map(|d| clock.now_ms() + d);
        let lanes = (0..concurrency).map(|_| async {
            loop {
                if self.cancel.is_cancelled()
                    || limit.is_some_and(|n| n_sent.get() >= n)
                    || deadline_ms.is_some_and(|d| clock.now_ms() >= d)
                {
                    break;
                }
                n_sent.set(n_sent.get() + 1);
                self.shared.level(self.index, |l| l.n_in_flight += 1);
                let now = clock.now_us();
                let start = RequestStart {
                    id: self.shared.next_id(),
                    concurrency,
                    warmup: false,
                    wanted_us: now,
                    sent_us: now,
                };
                let record = send(self.target, start, clock, self.cancel, self.options).await;
                self.shared.record_done(Some(self.index), record);
            }
        });
        join_all(lanes).await;
    }

    /// Requests that arrive at `offsets_ms` after now, whatever the server's speed.
    async fn open_loop(&self, offsets_ms: &[f64]) {
        let clock = &self.shared.clock;
        let level_start_ms = clock.now_ms();
        let (done_tx, mut done_rx) = mpsc::unbounded::<()>();
        let mut n_spawned = 0usize;
        for &offset in offsets_ms {
            if self.cancel.is_cancelled() {
                break;
            }
            let due_ms = level_start_ms + offset;
            let wait_ms = due_ms - clock.now_ms();
            if wait_ms >= 1.0 {
                gloo_timers::future::sleep(Duration::from_micros((wait_ms * 1e3) as u64)).await;
            }
            if self.cancel.is_cancelled() {
                break;
            }
            let start = RequestStart {
                id: self.shared.next_id(),
                concurrency: 0,
                warmup: false,
                // The arrival was due then; a late timer is client queue time.
                wanted_us: (due_ms * 1e3).max(0.0) as u64,
                sent_us: clock.now_us(),
            };
            self.shared.level(self.index, |l| l.n_in_flight += 1);
            n_spawned += 1;
            let shared = self.shared.clone();
            let target = self.target.clone();
            let cancel = self.cancel.clone();
            let options = self.options;
            let index = self.index;
            let done_tx = done_tx.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let record = send(&target, start, &shared.clock, &cancel, options).await;
                shared.record_done(Some(index), record);
                let _ = done_tx.unbounded_send(());
            });
        }
        for _ in 0..n_spawned {
            if done_rx.next().await.is_none() {
                break;
            }
        }
    }
}

/// What can be known about where the run was measured from.
fn environment(timer_resolution_us: f64) -> Environment {
    let global = js_sys::global();
    let get = |object: &wasm_bindgen::JsValue, key: &str| {
        js_sys::Reflect::get(object, &key.into()).unwrap_or(wasm_bindgen::JsValue::UNDEFINED)
    };
    let navigator = get(&global, "navigator");
    let location = get(&global, "location");
    let mut notes = Vec::new();
    let isolated = get(&global, "crossOriginIsolated").as_bool();
    if isolated == Some(false) && timer_resolution_us > 20.0 {
        notes.push(format!(
            "timer resolution is {timer_resolution_us:.0} µs: serve the page cross-origin isolated (COOP + COEP) for 5 µs"
        ));
    }
    Environment {
        user_agent: get(&navigator, "userAgent").as_string(),
        page_origin: get(&location, "origin").as_string(),
        timer_resolution_us: timer_resolution_us
            .is_finite()
            .then_some(timer_resolution_us),
        cross_origin_isolated: isolated,
        hardware_concurrency: get(&navigator, "hardwareConcurrency")
            .as_f64()
            .map(|n| n as u32),
        notes,
    }
}
