//! A level's streams spread over several engine workers. One worker stamps every
//! chunk of every stream on one event loop: at 64 streams and more, a chunk that
//! arrives while the loop handles other streams' chunks waits, and its stamp is
//! late by as much. So the measuring worker (the one the page talks to) starts
//! helpers, the same module in workers of their own (see [`super::helper`]), and
//! gives each its share of the level's lanes: a lane's requests all go to one
//! worker, lane `i` to worker `i % n`, worker 0 being the measuring worker itself.
//! How many a level takes is the plan's (`Plan::engine_workers_for`).
//!
//! Everything else stays with the measuring worker: the schedule, the ids (in
//! send order), the bodies of conversations, progress, the document. A helper is
//! told the run once ([`ShardStart`], with the run's zero on the shared timeline)
//! and then one request at a time; it answers with the record, stamped on the
//! run's clock.
//!
//! A helper that fails to start is left out and the level runs on the others.
//! One that stops mid-run (an error, or no answer within the request's timeout
//! and a grace) is ended: its requests in flight are recorded as lost
//! (`engine_stopped`, not the server's failure), and its lanes go on in the
//! measuring worker. Cancel reaches every helper, whose requests end as cancelled.

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    rc::{Rc, Weak},
    time::Duration,
};

use futures_channel::oneshot;
use futures_util::future::{join_all, select, Either};
use wasm_bindgen::{prelude::Closure, JsCast, JsValue};
use web_sys::{MessageEvent, Worker, WorkerOptions, WorkerType};

use tokenmeter_core::{
    schema::RequestRecord, RecordBuilder, RecordOptions, RequestStart, StreamEnd,
};

use super::{cancel::CancelToken, clock::Clock, request::SendCost};
use crate::protocol::{FromWorker, LagSoFar, SendOrder, Sent, ShardStart, ToWorker};

/// How long a helper may take to say `Ready` (as the page allows the measuring
/// worker).
const READY_WITHIN: Duration = Duration::from_secs(15);

/// How long past a request's own timeout a helper may take to answer for it
/// before it is taken for stopped: its timeout ends every request it sends.
const ANSWER_GRACE: Duration = Duration::from_secs(5);

/// Why a helper did not give a record.
pub enum Lost {
    /// The helper was gone before the request was sent: send it elsewhere.
    NotSent,
    /// The helper stopped while the request was in flight: it is lost.
    InFlight,
}

/// One helper worker and what waits on it.
struct Remote {
    worker: Worker,
    alive: Cell<bool>,
    /// The lanes waiting for their records, by request id.
    pending: RefCell<HashMap<u64, oneshot::Sender<Box<Sent>>>>,
    ready: RefCell<Option<oneshot::Sender<()>>>,
    /// How late the helper's loop ran, per level, as of its last answer.
    lag: RefCell<HashMap<u32, LagSoFar>>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::Event)>,
}

impl Remote {
    /// Ends the helper; its lanes waiting for records hear that it stopped.
    fn stop(&self) {
        if self.alive.replace(false) {
            self.worker.terminate();
        }
        self.pending.borrow_mut().clear();
        self.ready.borrow_mut().take();
    }
}

/// The helpers of one run.
pub struct Shards {
    /// `ToWorker::Shard` as JSON: the first thing every helper hears.
    start: String,
    /// What the measuring worker was loaded with, to load a helper the same way.
    script_url: Option<String>,
    bindings: Option<String>,
    /// Cores the browser reports.
    pub cores: u32,
    /// A helper's answer is due within this of its send, ms.
    answer_within_ms: f64,
    helpers: RefCell<Vec<Rc<Remote>>>,
    /// The run's Cancel: it also cuts short the wait for a helper to start.
    cancel: CancelToken,
}

impl Shards {
    /// The helpers of a run (none started yet), each to be told `start`. Cancel
    /// reaches every one of them.
    pub fn new(start: ShardStart, cores: u32, timeout_ms: f64, cancel: &CancelToken) -> Rc<Shards> {
        let global = js_sys::global();
        let text = |path: &[&str]| {
            path.iter()
                .try_fold(JsValue::from(global.clone()), |at, key| {
                    js_sys::Reflect::get(&at, &(*key).into()).ok()
                })
                .and_then(|value| value.as_string())
        };
        let shards = Rc::new(Shards {
            start: serde_json::to_string(&ToWorker::Shard(Box::new(start)))
                .expect("messages serialise"),
            script_url: text(&["location", "href"]),
            // Kept by the loader (`engine-worker.js`).
            bindings: text(&["tokenmeterBindings"]),
            cores: cores.max(1),
            answer_within_ms: timeout_ms + ANSWER_GRACE.as_secs_f64() * 1e3,
            helpers: RefCell::default(),
            cancel: cancel.clone(),
        });
        wasm_bindgen_futures::spawn_local({
            let shards = Rc::downgrade(&shards);
            let cancel = cancel.clone();
            async move {
                cancel.cancelled().await;
                if let Some(shards) = shards.upgrade() {
                    shards.post_all(&ToWorker::Cancel);
                }
            }
        });
        shards
    }

    /// Workers for a level that wants `n`: helpers started (and told the run) until
    /// `n - 1` of them answer, within [`READY_WITHIN`] or until Cancel. The crew
    /// has `n` workers, the measuring one counted, or fewer where helpers could
    /// not start (or Cancel came first: the level then sends nothing anyway).
    pub async fn workers(self: &Rc<Self>, n: u32) -> Crew {
        let wanted = n.saturating_sub(1) as usize;
        self.helpers.borrow_mut().retain(|h| h.alive.get());
        let n_alive = self.helpers.borrow().len();
        let starting: Vec<_> = (n_alive..wanted).filter_map(|_| self.spawn()).collect();
        for ready in join_all(starting.into_iter().map(|(remote, ready)| async move {
            let within = gloo_timers::future::sleep(READY_WITHIN);
            let cancelled = self.cancel.cancelled();
            futures_util::pin_mut!(within, cancelled);
            let given_up = select(within, cancelled);
            let ok = matches!(select(ready, given_up).await, Either::Left((Ok(()), _)));
            (remote, ok)
        }))
        .await
        {
            let (remote, ok) = ready;
            if ok && remote.alive.get() {
                let _ = remote.worker.post_message(&JsValue::from_str(&self.start));
                self.helpers.borrow_mut().push(remote);
            } else {
                remote.stop();
            }
        }
        let mut helpers = self.alive();
        helpers.truncate(wanted);
        Crew {
            helpers,
            answer_within_ms: self.answer_within_ms,
        }
    }

    fn alive(&self) -> Vec<Rc<Remote>> {
        self.helpers
            .borrow()
            .iter()
            .filter(|h| h.alive.get())
            .cloned()
            .collect()
    }

    /// Starts one helper: the measuring worker's own loader, given the module
    /// this worker runs.
    fn spawn(&self) -> Option<(Rc<Remote>, oneshot::Receiver<()>)> {
        let (script_url, bindings) = (self.script_url.as_ref()?, self.bindings.as_ref()?);
        let options = WorkerOptions::new();
        options.set_type(WorkerType::Module);
        let worker = Worker::new_with_options(script_url, &options).ok()?;
        let (ready_tx, ready_rx) = oneshot::channel();
        let remote = Rc::new_cyclic(|me: &Weak<Remote>| {
            let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
                let me = me.clone();
                move |event: MessageEvent| {
                    if let Some(remote) = me.upgrade() {
                        hear(&remote, event);
                    }
                }
            });
            let on_error = Closure::<dyn FnMut(web_sys::Event)>::new({
                let me = me.clone();
                move |_: web_sys::Event| {
                    if let Some(remote) = me.upgrade() {
                        remote.stop();
                    }
                }
            });
            worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
            Remote {
                worker: worker.clone(),
                alive: Cell::new(true),
                pending: RefCell::default(),
                ready: RefCell::new(Some(ready_tx)),
                lag: RefCell::default(),
                _on_message: on_message,
                _on_error: on_error,
            }
        });
        let bootstrap = js_sys::Object::new();
        let module = wasm_bindgen::module();
        for (key, value) in [
            ("bindings", JsValue::from_str(bindings)),
            ("module", module),
        ] {
            js_sys::Reflect::set(&bootstrap, &key.into(), &value).ok()?;
        }
        if worker.post_message(&bootstrap).is_err() {
            remote.stop();
            return None;
        }
        Some((remote, ready_rx))
    }

    /// How late the helpers' loops ran during level `level`: the worst of them.
    pub fn lag(&self, level: u32) -> Option<LagSoFar> {
        self.helpers
            .borrow()
            .iter()
            .filter_map(|h| h.lag.borrow().get(&level).copied())
            .reduce(|a, b| LagSoFar {
                max_at_ms: if b.max_ms > a.max_ms {
                    b.max_at_ms
                } else {
                    a.max_at_ms
                },
                max_ms: a.max_ms.max(b.max_ms),
                p95_ms: a.p95_ms.max(b.p95_ms),
            })
    }

    fn post_all(&self, message: &ToWorker) {
        let message = serde_json::to_string(message).expect("messages serialise");
        for helper in self.alive() {
            let _ = helper.worker.post_message(&JsValue::from_str(&message));
        }
    }

    /// Ends every helper (the run is over).
    pub fn close(&self) {
        for helper in self.helpers.borrow().iter() {
            helper.stop();
        }
    }
}

impl Drop for Shards {
    fn drop(&mut self) {
        self.close();
    }
}

/// The workers of one level: the measuring worker (shard 0) and its helpers.
#[derive(Clone, Default)]
pub struct Crew {
    helpers: Vec<Rc<Remote>>,
    answer_within_ms: f64,
}

impl Crew {
    /// How many workers send the level's requests.
    pub fn n_workers(&self) -> u32 {
        1 + self.helpers.len() as u32
    }

    /// Has worker `shard` (1 and up: a helper) send `order`, and waits for its
    /// record.
    pub async fn send(&self, shard: u32, order: SendOrder) -> Result<Box<Sent>, Lost> {
        let Some(remote) = shard
            .checked_sub(1)
            .and_then(|i| self.helpers.get(i as usize))
            .filter(|h| h.alive.get())
        else {
            return Err(Lost::NotSent);
        };
        let (id, level) = (order.id, order.level);
        let message = serde_json::to_string(&ToWorker::Send(order)).expect("messages serialise");
        let (tx, rx) = oneshot::channel();
        remote.pending.borrow_mut().insert(id, tx);
        if remote
            .worker
            .post_message(&JsValue::from_str(&message))
            .is_err()
        {
            remote.stop();
            return Err(Lost::NotSent);
        }
        let within =
            gloo_timers::future::sleep(Duration::from_micros((self.answer_within_ms * 1e3) as u64));
        futures_util::pin_mut!(within);
        match select(rx, within).await {
            Either::Left((Ok(sent), _)) => {
                remote.lag.borrow_mut().insert(level, sent.lag);
                Ok(sent)
            }
            // The helper failed, or went silent: it measures nothing more.
            Either::Left((Err(_), _)) | Either::Right(_) => {
                remote.stop();
                Err(Lost::InFlight)
            }
        }
    }
}

/// A request of level `level` for worker `shard`, sent by a helper: its record
/// and what it cost the helper; `None` when it is the measuring worker's to send
/// (shard 0, or a helper gone before it was sent). A helper that stopped with it
/// in flight lost it: its record says so.
// Long: what a request is, and the clock and options to say it was lost.
#[allow(clippy::too_many_arguments)]
pub async fn by_helper(
    crew: &Crew,
    shard: u32,
    level: usize,
    target: usize,
    start: RequestStart,
    body: Option<&str>,
    clock: &Clock,
    options: RecordOptions,
) -> Option<(RequestRecord, SendCost)> {
    if shard == 0 {
        return None;
    }
    let order = SendOrder {
        id: start.id,
        level: level as u32,
        concurrency: start.concurrency,
        target: target as u32,
        wanted_us: start.wanted_us,
        body: body.map(str::to_owned),
    };
    match crew.send(shard, order).await {
        Ok(sent) => {
            let Sent {
                record,
                busy_us,
                n_chunks,
                stalls,
                ..
            } = *sent;
            let cost = SendCost {
                busy_us,
                n_chunks,
                stalls: Some(stalls),
            };
            Some((record, cost))
        }
        Err(Lost::NotSent) => None,
        Err(Lost::InFlight) => {
            let mut record =
                RecordBuilder::new(start, options).finish(StreamEnd::EngineStopped, clock.now_us());
            record.target = target as u32;
            Some((record, SendCost::default()))
        }
    }
}

/// What a helper said.
fn hear(remote: &Remote, event: MessageEvent) {
    let Some(text) = event.data().as_string() else {
        return;
    };
    match serde_json::from_str::<FromWorker>(&text) {
        Ok(FromWorker::Ready) => {
            let ready = remote.ready.borrow_mut().take();
            if let Some(ready) = ready {
                let _ = ready.send(());
            }
        }
        Ok(FromWorker::Sent(sent)) => {
            let lane = remote.pending.borrow_mut().remove(&sent.record.id);
            if let Some(lane) = lane {
                let _ = lane.send(sent);
            }
        }
        // A helper that could not take the run, or says what a helper never says.
        Ok(_) | Err(_) => remote.stop(),
    }
}
