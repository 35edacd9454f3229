//! A helper worker: the measuring worker spreads a level's streams over helpers
//! (see [`super::shards`]), and each sends the requests it is given, stamps them on
//! the run's one clock ([`Clock::on_origin`]), and answers each with its record.
//! It watches its own event loop as the measuring worker watches its own: what
//! its stalls did to its records' token events goes back with each record, so
//! the run counts every worker's stalls.

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    rc::Rc,
};

use tokenmeter_core::{LagHistogram, RecordOptions, RequestStart, StallLog};

use super::{
    cancel::CancelToken,
    clock::Clock,
    request::{send, send_turn, Target},
    runner::{record_options, targets, LAG_TICK},
};
use crate::protocol::{FromWorker, LagSoFar, SendOrder, Sent, ShardStart};

/// How late this worker's loop ran during one level, while it had requests of
/// it in flight.
struct LevelLag {
    lag: LagHistogram,
    stalls: StallLog,
}

/// One run's helper.
pub struct Helper {
    clock: Clock,
    targets: Vec<Target>,
    cancel: CancelToken,
    options: RecordOptions,
    post: Rc<dyn Fn(FromWorker)>,
    levels: RefCell<HashMap<u32, LevelLag>>,
    /// The level of the requests in flight, and how many there are.
    level: Cell<u32>,
    n_in_flight: Cell<u32>,
}

impl Helper {
    /// A helper for the run `start` describes; it watches its loop until the
    /// measuring worker ends it.
    pub fn start(
        start: ShardStart,
        cancel: CancelToken,
        post: Rc<dyn Fn(FromWorker)>,
    ) -> Rc<Helper> {
        let ShardStart {
            origin_epoch_ms,
            plan,
            api_key,
            target_keys,
            prompts,
        } = start;
        super::request::reset_resource_timing();
        let helper = Rc::new(Helper {
            clock: Clock::on_origin(origin_epoch_ms),
            // The measuring worker set the seed: the same bodies here.
            targets: targets(
                &plan,
                plan.seed.unwrap_or_default(),
                &api_key,
                &target_keys,
                prompts.as_ref(),
            ),
            cancel,
            options: record_options(&plan),
            post,
            levels: RefCell::default(),
            level: Cell::new(0),
            n_in_flight: Cell::new(0),
        });
        wasm_bindgen_futures::spawn_local(watch(Rc::downgrade(&helper)));
        helper
    }

    /// Sends one request now, and answers with its record when it ends.
    pub fn send(self: &Rc<Self>, order: SendOrder) {
        let helper = Rc::clone(self);
        wasm_bindgen_futures::spawn_local(async move {
            let SendOrder {
                id,
                level,
                concurrency,
                target,
                wanted_us,
                body,
            } = order;
            let index = (target as usize).min(helper.targets.len().saturating_sub(1));
            let Some(target) = helper.targets.get(index) else {
                return;
            };
            helper.level.set(level);
            helper.n_in_flight.set(helper.n_in_flight.get() + 1);
            let start = RequestStart {
                id,
                concurrency,
                warmup: false,
                wanted_us,
                sent_us: helper.clock.now_us(),
            };
            let (mut record, cost) = match &body {
                Some(body) => {
                    send_turn(
                        target,
                        start,
                        body,
                        &helper.clock,
                        &helper.cancel,
                        helper.options,
                    )
                    .await
                }
                None => send(target, start, &helper.clock, &helper.cancel, helper.options).await,
            };
            helper.n_in_flight.set(helper.n_in_flight.get() - 1);
            record.target = index as u32;
            let (stalls, lag) = {
                let mut levels = helper.levels.borrow_mut();
                let level = levels.entry(level).or_insert_with(LevelLag::new);
                (
                    level.stalls.count_one(&record.token_times_us),
                    level.so_far(),
                )
            };
            (helper.post)(FromWorker::Sent(Box::new(Sent {
                record,
                busy_us: cost.busy_us,
                n_chunks: cost.n_chunks,
                stalls,
                lag,
            })));
        });
    }

    /// This worker's tick woke `lag_ms` late: it counts against the level in
    /// flight, whose timestamps it moved.
    fn note_lag(&self, lag_ms: f64) {
        if self.n_in_flight.get() == 0 {
            return;
        }
        let now_ms = self.clock.now_ms();
        let mut levels = self.levels.borrow_mut();
        let level = levels.entry(self.level.get()).or_insert_with(LevelLag::new);
        level.lag.add(lag_ms, now_ms);
        let woke_us = (now_ms * 1e3).max(0.0).round() as u64;
        let due_us = ((now_ms - lag_ms.max(0.0)) * 1e3).max(0.0).round() as u64;
        level.stalls.add(due_us, woke_us);
    }
}

impl LevelLag {
    fn new() -> LevelLag {
        LevelLag {
            lag: LagHistogram::new(),
            stalls: StallLog::default(),
        }
    }

    fn so_far(&self) -> LagSoFar {
        LagSoFar {
            max_ms: self.lag.max_ms,
            // `add` was given the run's clock.
            max_at_ms: self.lag.max_at_ms,
            p95_ms: self.lag.percentile_ms(95.0),
        }
    }
}

/// The helper's own loop, watched as the measuring worker's is (see
/// `runner::watch`), for as long as the helper is.
async fn watch(helper: std::rc::Weak<Helper>) {
    let asked_ms = LAG_TICK.as_secs_f64() * 1e3;
    loop {
        let Some(before) = helper.upgrade().map(|h| h.clock.now_ms()) else {
            return;
        };
        gloo_timers::future::sleep(LAG_TICK).await;
        let Some(helper) = helper.upgrade() else {
            return;
        };
        helper.note_lag(helper.clock.now_ms() - before - asked_ms);
    }
}
