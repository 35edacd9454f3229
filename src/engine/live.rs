//! What a run knows while it goes: every record so far, one live accumulator per
//! level (a finished level's figures computed once and frozen), the progress the
//! page is shown (at most ten times a second), and the engine's own load per level:
//! how late its event loop ran while requests were in flight, and how long it spent
//! in its own code.

use std::cell::{Cell, RefCell};

use tokenmeter_core::{
    schema::{Engine, EngineLoad, RequestRecord},
    LagHistogram, LiveFigures, LiveLevel, StallLog,
};

use super::{clock::Clock, pace::Pacer, request::SendCost};
use crate::protocol::{LevelProgress, LevelState, Progress};

/// One level's engine-side accounting.
struct LevelLoad {
    started_ms: f64,
    lag: LagHistogram,
    /// The stalls among those ticks, and the token events stamped in them.
    stalls: StallLog,
    busy_us: u64,
    n_chunks: u64,
}

/// The state the lanes, the progress ticker and the lag monitor share.
pub struct Shared {
    pub clock: Clock,
    /// Lets the lanes' sends through one per task.
    pub pacer: Pacer,
    records: RefCell<Vec<RequestRecord>>,
    progress: RefCell<Progress>,
    /// One accumulator per level, for the live percentiles.
    live: RefCell<Vec<LiveLevel>>,
    /// A finished level's live figures, computed once.
    frozen: RefCell<Vec<Option<LiveFigures>>>,
    load: RefCell<Vec<LevelLoad>>,
    next_id: Cell<u64>,
    next_session: Cell<u64>,
    /// Records already handed to the page with a progress message.
    n_records_sent: Cell<usize>,
    finished: Cell<bool>,
    /// The level running now, for the lag monitor.
    current_level: Cell<Option<usize>>,
    /// Some request went over a protocol that multiplexes (HTTP/2 or 3): one more
    /// request to the host never waits for a connection.
    multiplexed: Cell<bool>,
}

impl Shared {
    /// `levels` are `(concurrency, requests planned)`.
    pub fn new(clock: Clock, engine: Engine, n_warmup: u32, levels: &[(u32, u32)]) -> Shared {
        Shared {
            clock,
            pacer: Pacer::default(),
            records: RefCell::new(Vec::new()),
            progress: RefCell::new(Progress {
                n_warmup,
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
            live: RefCell::new(
                levels
                    .iter()
                    .map(|&(c, _)| LiveLevel::new(c, engine))
                    .collect(),
            ),
            frozen: RefCell::new(vec![None; levels.len()]),
            load: RefCell::new(
                levels
                    .iter()
                    .map(|_| LevelLoad {
                        started_ms: 0.0,
                        lag: LagHistogram::new(),
                        stalls: StallLog::default(),
                        busy_us: 0,
                        n_chunks: 0,
                    })
                    .collect(),
            ),
            next_id: Cell::new(0),
            next_session: Cell::new(0),
            n_records_sent: Cell::new(0),
            finished: Cell::new(false),
            current_level: Cell::new(None),
            multiplexed: Cell::new(false),
        }
    }

    /// Adds a level the run decided on as it went (an SLO search's next probe);
    /// returns its index.
    pub fn push_level(&self, concurrency: u32, n_planned: u32, engine: Engine) -> usize {
        let mut progress = self.progress.borrow_mut();
        progress.levels.push(LevelProgress {
            concurrency,
            n_planned,
            ..LevelProgress::default()
        });
        self.live
            .borrow_mut()
            .push(LiveLevel::new(concurrency, engine));
        self.frozen.borrow_mut().push(None);
        self.load.borrow_mut().push(LevelLoad {
            started_ms: 0.0,
            lag: LagHistogram::new(),
            stalls: StallLog::default(),
            busy_us: 0,
            n_chunks: 0,
        });
        progress.levels.len() - 1
    }

    /// Copies of the records of level `concurrency` so far (warm-ups left out).
    pub fn level_records(&self, concurrency: u32) -> Vec<RequestRecord> {
        self.records
            .borrow()
            .iter()
            .filter(|r| !r.warmup && r.concurrency == concurrency)
            .cloned()
            .collect()
    }

    pub fn next_id(&self) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }

    /// The next conversation's number in the run.
    pub fn next_session(&self) -> u64 {
        let session = self.next_session.get();
        self.next_session.set(session + 1);
        session
    }

    /// Level `index` belongs to pass `repetition` of a repeated ladder and
    /// measures `target` of an A/B plan: its records say so.
    pub fn set_origin(&self, index: usize, repetition: u32, target: u32) {
        self.level(index, |l| {
            l.repetition = repetition;
            l.target = target;
        });
    }

    /// Changes one level's progress.
    pub fn level(&self, index: usize, f: impl FnOnce(&mut LevelProgress)) {
        if let Some(level) = self.progress.borrow_mut().levels.get_mut(index) {
            f(level);
        }
    }

    /// A level starts now.
    pub fn start_level(&self, index: usize) {
        self.load.borrow_mut()[index].started_ms = self.clock.now_ms();
        self.current_level.set(Some(index));
        self.level(index, |l| l.state = LevelState::Running);
    }

    /// A level ended now; returns when it started (ms on the run's clock) and the
    /// engine's load during it.
    pub fn end_level(&self, index: usize) -> (f64, EngineLoad) {
        let load = &self.load.borrow()[index];
        let wall_ms = self.clock.now_ms() - load.started_ms;
        self.current_level.set(None);
        let mut concurrency = 0;
        self.level(index, |l| {
            l.state = LevelState::Done;
            l.elapsed_ms = wall_ms;
            concurrency = l.concurrency;
        });
        let figures = self.live.borrow_mut()[index].figures();
        self.frozen.borrow_mut()[index] = Some(figures);
        (
            load.started_ms,
            EngineLoad {
                concurrency,
                wall_ms,
                lag_max_ms: load.lag.max_ms,
                lag_p95_ms: load.lag.percentile_ms(95.0),
                lag_max_at_ms: load.lag.max_at_ms,
                busy_ms: load.busy_us as f64 / 1e3,
                n_chunks: load.n_chunks,
                stalls: Some(load.stalls.count),
                // The runner knows how many workers the level had.
                workers: None,
            },
        )
    }

    /// A request of level `level_index` (`None`: a warm-up) ended, having cost the
    /// engine `cost`.
    pub fn record_done(
        &self,
        level_index: Option<usize>,
        mut record: RequestRecord,
        cost: SendCost,
    ) {
        let protocol = record.browser.as_ref().and_then(|b| b.protocol.as_deref());
        if matches!(protocol, Some("h2" | "h3")) {
            self.multiplexed.set(true);
        }
        match level_index {
            Some(index) => {
                // (The lane that sent it set its target.)
                if let Some(level) = self.progress.borrow().levels.get(index) {
                    record.repetition = level.repetition;
                }
                let failed = !record.is_ok();
                self.live.borrow_mut()[index].add(&record);
                let mut load = self.load.borrow_mut();
                load[index].busy_us += cost.busy_us;
                load[index].n_chunks += cost.n_chunks;
                match &cost.stalls {
                    Some(counted) => load[index].stalls.count.add(counted),
                    None => load[index].stalls.count(&record.token_times_us),
                }
                drop(load);
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

    /// The engine's tick woke `lag_ms` late: it counts against the running level
    /// when requests were in flight, whose timestamps it moved.
    pub fn note_lag(&self, lag_ms: f64) {
        let Some(index) = self.current_level.get() else {
            return;
        };
        let in_flight = self
            .progress
            .borrow()
            .levels
            .get(index)
            .is_some_and(|l| l.n_in_flight > 0);
        if in_flight {
            let mut load = self.load.borrow_mut();
            let now_ms = self.clock.now_ms();
            let at_ms = now_ms - load[index].started_ms;
            load[index].lag.add(lag_ms, at_ms);
            // On the records' clock (µs), as their token times are.
            let woke_us = (now_ms * 1e3).max(0.0).round() as u64;
            let due_us = ((now_ms - lag_ms.max(0.0)) * 1e3).max(0.0).round() as u64;
            load[index].stalls.add(due_us, woke_us);
        }
    }

    /// Whether a request so far went over HTTP/2 or HTTP/3.
    pub fn is_multiplexed(&self) -> bool {
        self.multiplexed.get()
    }

    pub fn is_finished(&self) -> bool {
        self.finished.get()
    }

    /// Ends the run: the ticker stops, and the records are handed over.
    pub fn finish(&self) -> Vec<RequestRecord> {
        self.finished.set(true);
        std::mem::take(&mut *self.records.borrow_mut())
    }

    /// The progress with live figures, as of now: the running level's computed
    /// afresh, the finished ones' as frozen, the others' empty; and the records
    /// finished since the last snapshot.
    pub fn snapshot(&self) -> Progress {
        let mut progress = self.progress.borrow().clone();
        progress.elapsed_ms = self.clock.now_ms();
        let records = self.records.borrow();
        let sent = self.n_records_sent.replace(records.len());
        progress.records = records[sent.min(records.len())..].to_vec();
        drop(records);
        let mut live = self.live.borrow_mut();
        let frozen = self.frozen.borrow();
        let load = self.load.borrow();
        for (i, level) in progress.levels.iter_mut().enumerate() {
            let figures = match (&frozen[i], level.state) {
                (Some(figures), _) => figures.clone(),
                (None, LevelState::Running) => {
                    level.elapsed_ms = progress.elapsed_ms - load[i].started_ms;
                    live[i].figures()
                }
                (None, _) => continue,
            };
            level.ttft_p50_ms = figures.ttft_p50_ms;
            level.ttft_p95_ms = figures.ttft_p95_ms;
            level.output_tps = figures.output_tps;
            // The same conditions the finished run's document will have, as soon as
            // a level's first requests show the protocol.
            progress.conditions.extend(figures.browser_queue);
        }
        progress
    }
}
