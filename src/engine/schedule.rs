//! How one level sends its requests. Concurrency is `spawn_local` tasks (or lanes
//! joined in one task): a closed-loop level runs `c` lanes, each sending its next
//! request as soon as its previous one ended. Open-loop arrivals are spawned at
//! their scheduled instants; if the timer fires late, the delay is recorded as
//! client queue time, not as TTFT.

use std::{cell::Cell, rc::Rc, time::Duration};

use futures_channel::mpsc;
use futures_util::{
    future::{join_all, select},
    StreamExt,
};
use serde_json::Value;
use tokenmeter_core::{
    schema::{Conversation, Plan, RequestRecord, Turn},
    Prompts, RecordOptions, RequestStart,
};

use super::{
    cancel::CancelToken,
    live::Shared,
    request::{send, send_turn, SendCost, Target},
    shards::{by_helper, Crew},
};

/// What a level of conversations needs beside its targets: each target's plan
/// (their bodies are made turn by turn), the run's seed, the conversation's
/// shape, and a file's conversations when the plan sends them.
#[derive(Clone, Copy)]
pub struct Conversing<'a> {
    pub plans: &'a [Plan],
    pub seed: u64,
    pub conversation: Conversation,
    pub prompts: Option<&'a Prompts>,
}

/// What one level's scheduling needs.
pub struct Level<'a> {
    pub shared: &'a Rc<Shared>,
    /// Every target of the plan (one unless it is an A/B plan).
    pub targets: &'a [Target],
    /// The target this level measures, when it measures one.
    pub target: usize,
    /// An A/B level that runs every target at once (`AbOrder::Requests`): each
    /// keeps the level's concurrency, lanes taking the targets in turn.
    pub interleave: bool,
    pub cancel: &'a CancelToken,
    pub options: RecordOptions,
    /// The level's index in the run.
    pub index: usize,
    /// A plan of conversations: each lane holds one at a time.
    pub conversing: Option<Conversing<'a>>,
    /// The workers that send the level's requests, lanes spread over them.
    pub crew: Crew,
}

impl Level<'_> {
    /// Sends `start` (to `target`, with `body` when the lane made it) from the
    /// worker of lane `lane`: lanes go to the workers in turn (each A/B target's
    /// lanes spread alike), worker 0 being this one.
    async fn send(
        &self,
        lane: u32,
        target: usize,
        start: RequestStart,
        body: Option<&str>,
    ) -> (RequestRecord, SendCost) {
        let n_targets = if self.interleave {
            self.targets.len() as u32
        } else {
            1
        };
        let shard = (lane / n_targets) % self.crew.n_workers();
        let clock = &self.shared.clock;
        let (targets, cancel, options) = (self.targets, self.cancel, self.options);
        if let Some(done) = by_helper(
            &self.crew, shard, self.index, target, start, body, clock, options,
        )
        .await
        {
            return done;
        }
        // Stamped again: a helper gone may have taken a moment to say so.
        let start = RequestStart {
            sent_us: clock.now_us(),
            ..start
        };
        match body {
            Some(body) => send_turn(&targets[target], start, body, clock, cancel, options).await,
            None => send(&targets[target], start, clock, cancel, options).await,
        }
    }

    /// `concurrency` lanes (per target, when interleaved), each sending its next
    /// request when its previous one ended, until `limit` requests were sent (an
    /// equal share per target, when interleaved) or `duration_ms` passed. Returns
    /// how many were sent.
    pub async fn closed_loop(&self, concurrency: u32, limit: u32, duration_ms: Option<f64>) -> u32 {
        if let Some(conversing) = self.conversing {
            return self
                .conversations(conversing, concurrency, limit, duration_ms)
                .await;
        }
        let clock = &self.shared.clock;
        let deadline_ms = duration_ms.map(|d| clock.now_ms() + d);
        let n_targets = if self.interleave {
            self.targets.len() as u32
        } else {
            1
        };
        // Sent so far, per target of this level (one counter unless interleaved).
        let sent: Vec<Cell<u32>> = (0..n_targets).map(|_| Cell::new(0)).collect();
        let sent = &sent;
        let limit = limit / n_targets;
        let lanes = (0..concurrency * n_targets).map(|lane| async move {
            let target = if self.interleave {
                (lane % n_targets) as usize
            } else {
                self.target
            };
            let mut first = true;
            loop {
                if lane > 0 || !first {
                    // Each send in a task of its own, the next one queued behind
                    // what arrived meanwhile (see `pace`).
                    self.shared.pacer.turn().await;
                }
                first = false;
                let n_sent = &sent[(lane % n_targets) as usize];
                if self.cancel.is_cancelled()
                    || n_sent.get() >= limit
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
                let (mut record, cost) = self.send(lane, target, start, None).await;
                record.target = target as u32;
                self.shared.record_done(Some(self.index), record, cost);
            }
        });
        join_all(lanes).await;
        sent.iter().map(Cell::get).sum()
    }

    /// `concurrency` lanes (per target, when interleaved), each holding one
    /// conversation at a time: its turns one after another (the plan's, or a
    /// file's conversation's own, at most the plan's), each the conversation so
    /// far with the model's real answers, `think_ms` after the answer before; a
    /// turn that fails ends its conversation (the next has no answer to go on
    /// from). Conversations start until their turns make `limit` requests (an
    /// equal share per target, when interleaved) or `duration_ms` passed; one
    /// under way goes on to its end, turn by turn, unless the time is up. Returns
    /// how many requests were sent.
    // Long: a conversation lane's loop, whose state is the conversation: its turns, the think time, the answers.
    async fn conversations(
        &self,
        conversing: Conversing<'_>,
        concurrency: u32,
        limit: u32,
        duration_ms: Option<f64>,
    ) -> u32 {
        let clock = &self.shared.clock;
        let deadline_ms = duration_ms.map(|d| clock.now_ms() + d);
        let over =
            || self.cancel.is_cancelled() || deadline_ms.is_some_and(|d| clock.now_ms() >= d);
        let n_targets = if self.interleave {
            self.targets.len() as u32
        } else {
            1
        };
        let Conversing {
            plans,
            seed,
            conversation,
            prompts,
        } = conversing;
        // Turns of the conversations started, and requests sent, per target of
        // this level.
        let planned: Vec<Cell<u32>> = (0..n_targets).map(|_| Cell::new(0)).collect();
        let sent: Vec<Cell<u32>> = (0..n_targets).map(|_| Cell::new(0)).collect();
        let (planned, sent) = (&planned, &sent);
        let limit = limit / n_targets;
        let think = Duration::from_micros((conversation.think_ms * 1e3) as u64);
        let lanes = (0..concurrency * n_targets).map(|lane| async move {
            let slot = (lane % n_targets) as usize;
            let target = if self.interleave { slot } else { self.target };
            let plan = &plans[target.min(plans.len() - 1)];
            if lane > 0 {
                self.shared.pacer.turn().await;
            }
            while !over() && planned[slot].get() < limit {
                let session = self.shared.next_session();
                let prompt = prompts.map(|p| plan.session_prompt(p, seed, session));
                let n_turns = plan.session_turns(prompt);
                planned[slot].set(planned[slot].get() + n_turns);
                let mut history: Vec<Value> = Vec::with_capacity(2 * n_turns as usize + 2);
                for index in 0..n_turns {
                    if index > 0 {
                        // The user reads the answer and types the next message.
                        let pause = gloo_timers::future::sleep(think);
                        let cancelled = self.cancel.cancelled();
                        futures_util::pin_mut!(pause, cancelled);
                        select(pause, cancelled).await;
                    } else {
                        self.shared.pacer.turn().await;
                    }
                    if over() {
                        break;
                    }
                    let id = self.shared.next_id();
                    let (body, said) = plan.turn_body(seed, session, index, id, &history, prompt);
                    sent[slot].set(sent[slot].get() + 1);
                    self.shared.level(self.index, |l| l.n_in_flight += 1);
                    let now = clock.now_us();
                    let start = RequestStart {
                        id,
                        concurrency,
                        warmup: false,
                        wanted_us: now,
                        sent_us: now,
                    };
                    let (mut record, cost) = self.send(lane, target, start, Some(&body)).await;
                    record.target = target as u32;
                    record.turn = Some(Turn {
                        session,
                        index,
                        n_turns,
                    });
                    // The answer goes on in the conversation, not in the record.
                    let answer = record.output_text.take().unwrap_or_default();
                    let ok = record.is_ok();
                    self.shared.record_done(Some(self.index), record, cost);
                    if !ok {
                        break;
                    }
                    history.extend(said);
                    history.push(serde_json::json!({"role": "assistant", "content": answer}));
                }
            }
        });
        join_all(lanes).await;
        sent.iter().map(Cell::get).sum()
    }

    /// Requests that arrive at `offsets_ms` after now, whatever the server's speed.
    pub async fn open_loop(&self, offsets_ms: &[f64]) {
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
                // Until the arrival is due, or Cancel, whichever comes first: at
                // 0.05 requests/s the next one may be 20 s away.
                let due = gloo_timers::future::sleep(Duration::from_micros((wait_ms * 1e3) as u64));
                let cancelled = self.cancel.cancelled();
                futures_util::pin_mut!(due, cancelled);
                select(due, cancelled).await;
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
            // Arrivals go to the workers in turn.
            let shard = n_spawned as u32 % self.crew.n_workers();
            n_spawned += 1;
            let shared = self.shared.clone();
            let target = self.targets[self.target].clone();
            let target_index = self.target;
            let crew = self.crew.clone();
            let cancel = self.cancel.clone();
            let options = self.options;
            let index = self.index;
            let done_tx = done_tx.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let clock = &shared.clock;
                let by_helper = by_helper(
                    &crew,
                    shard,
                    index,
                    target_index,
                    start,
                    None,
                    clock,
                    options,
                )
                .await;
                let (mut record, cost) = match by_helper {
                    Some(done) => done,
                    None => {
                        let start = RequestStart {
                            sent_us: clock.now_us(),
                            ..start
                        };
                        send(&target, start, clock, &cancel, options).await
                    }
                };
                record.target = target_index as u32;
                shared.record_done(Some(index), record, cost);
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
