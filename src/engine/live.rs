//! What a run knows while it goes: every record so far, one live accumulator per
//! level, the progress the page is shown (at most ten times a second), and the
//! engine's own lag per level.

use std::cell::{Cell, RefCell};

use tokenmeter_core::{
    browser::Engine, condition, plan::Plan, record::RequestRecord, summary::LevelStats,
};

use super::clock::Clock;
use crate::protocol::{LevelProgress, LevelState, Progress};

/// The state the lanes and the progress ticker share.
pub struct Shared {
    pub clock: Clock,
    /// The engine this runs in: where it queues requests, and what it shows of that.
    engine: Engine,
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
}

impl Shared {
    /// `levels` are `(concurrency, requests planned)`.
    pub fn new(clock: Clock, engine: Engine, n_warmup: u32, levels: &[(u32, u32)]) -> Shared {
        Shared {
            clock,
            engine,
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
                    .map(|&(c, _)| LevelStats::for_engine(c, engine))
                    .collect(),
            ),
            level_started_ms: RefCell::new(vec![0.0; levels.len()]),
            next_id: Cell::new(0),
            finished: Cell::new(false),
            current_level: Cell::new(None),
            max_lag_ms: RefCell::new(vec![0.0; levels.len()]),
        }
    }

    pub fn next_id(&self) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }

    /// Changes one level's progress.
    pub fn level(&self, index: usize, f: impl FnOnce(&mut LevelProgress)) {
        if let Some(level) = self.progress.borrow_mut().levels.get_mut(index) {
            f(level);
        }
    }

    /// A level starts now.
    pub fn start_level(&self, index: usize) {
        self.level_started_ms.borrow_mut()[index] = self.clock.now_ms();
        self.current_level.set(Some(index));
        self.level(index, |l| l.state = LevelState::Running);
    }

    /// A level ended now; returns when it started and how long it ran, ms.
    pub fn end_level(&self, index: usize) -> (f64, f64) {
        let started_ms = self.level_started_ms.borrow()[index];
        let elapsed_ms = self.clock.now_ms() - started_ms;
        self.current_level.set(None);
        self.level(index, |l| {
            l.state = LevelState::Done;
            l.elapsed_ms = elapsed_ms;
        });
        (started_ms, elapsed_ms)
    }

    /// A request of level `level_index` (`None`: a warm-up) ended.
    pub fn record_done(&self, level_index: Option<usize>, record: RequestRecord) {
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

    /// The engine's tick woke `lag_ms` late: count it against the running level.
    pub fn note_lag(&self, lag_ms: f64) {
        if let Some(index) = self.current_level.get() {
            let mut max_lag = self.max_lag_ms.borrow_mut();
            max_lag[index] = max_lag[index].max(lag_ms);
        }
    }

    pub fn max_lag_ms(&self, index: usize) -> f64 {
        self.max_lag_ms.borrow()[index]
    }

    pub fn is_finished(&self) -> bool {
        self.finished.get()
    }

    /// Ends the run: the ticker stops, and the records are handed over.
    pub fn finish(&self) -> Vec<RequestRecord> {
        self.finished.set(true);
        std::mem::take(&mut *self.records.borrow_mut())
    }

    /// The progress with live figures, as of now.
    pub fn snapshot(&self, plan: &Plan) -> Progress {
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
        // The same conditions the finished run's document will have, as soon as a
        // level's first requests show the protocol: no need to wait for the end.
        progress.conditions = condition::browser_queue(&summaries, self.engine);
        progress
    }
}
