//! The page's side of a run: it starts the engine worker, sends it the plan and the
//! key, and turns the worker's messages into signals the views read. No timing
//! happens here.

use leptos::prelude::*;
use tokenmeter_core::{plan::Plan, report::RunDocument};
use wasm_bindgen::{prelude::Closure, JsCast, JsValue};
use web_sys::{MessageEvent, Worker, WorkerOptions, WorkerType};

use crate::protocol::{FromWorker, Progress, ToWorker};

/// Where Trunk puts the worker's loader, relative to the page (so a sub-path works).
const WORKER_URL: &str = "./worker_loader.js";

/// The run's phase. `as_str` is the `status` hook's exact text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Idle,
    Running,
    Done,
    Cancelled,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Running => "running",
            Phase::Done => "done",
            Phase::Cancelled => "cancelled",
        }
    }
}

/// Signals of the current run, and the worker behind them.
#[derive(Clone, Copy)]
pub struct RunHandle {
    pub phase: RwSignal<Phase>,
    pub progress: RwSignal<Option<Progress>>,
    pub document: RwSignal<Option<RunDocument>>,
    /// Why the last run could not start.
    pub problems: RwSignal<Vec<String>>,
    /// Kept runs, newest first (see `history`).
    pub history: RwSignal<Vec<RunDocument>>,
    /// A kept run the shown one is compared with.
    pub baseline: RwSignal<Option<RunDocument>>,
    worker: StoredValue<Option<Worker>, LocalStorage>,
    /// Messages posted before the worker said `Ready`: a classic worker drops
    /// messages that arrive before its wasm has set `onmessage`.
    pending: StoredValue<Option<Vec<String>>, LocalStorage>,
}

impl RunHandle {
    pub fn new() -> RunHandle {
        RunHandle {
            phase: RwSignal::new(Phase::Idle),
            progress: RwSignal::new(None),
            document: RwSignal::new(None),
            problems: RwSignal::new(Vec::new()),
            history: RwSignal::new(crate::history::load()),
            baseline: RwSignal::new(None),
            worker: StoredValue::new_local(None),
            pending: StoredValue::new_local(Some(Vec::new())),
        }
    }

    /// Starts a run; the key goes to the worker's memory and nowhere else.
    pub fn start(&self, plan: Plan, api_key: Option<String>) {
        if self.phase.get_untracked() == Phase::Running {
            return;
        }
        let worker = match self.worker() {
            Ok(worker) => worker,
            Err(problem) => {
                self.problems.set(vec![problem]);
                return;
            }
        };
        self.problems.set(Vec::new());
        self.progress.set(None);
        self.document.set(None);
        self.phase.set(Phase::Running);
        let message = ToWorker::Start {
            run_id: format!("run-{}", js_sys::Date::now() as u64),
            started_at: String::from(js_sys::Date::new_0().to_iso_string()),
            plan: Box::new(plan),
            api_key,
        };
        self.post(&worker, &message);
    }

    /// Aborts every request in flight; the worker then finishes with what it has.
    pub fn cancel(&self) {
        if self.phase.get_untracked() != Phase::Running {
            return;
        }
        if let Ok(worker) = self.worker() {
            self.post(&worker, &ToWorker::Cancel);
        }
    }

    fn post(&self, worker: &Worker, message: &ToWorker) {
        let json = serde_json::to_string(message).expect("messages serialise");
        let queued = self.pending.try_update_value(|pending| match pending {
            Some(queue) => {
                queue.push(json.clone());
                true
            }
            None => false,
        });
        if queued != Some(true) {
            self.send(worker, &json);
        }
    }

    fn send(&self, worker: &Worker, json: &str) {
        if let Err(err) = worker.post_message(&JsValue::from_str(json)) {
            self.fail(format!("the engine worker refused the message: {err:?}"));
        }
    }

    fn fail(&self, problem: String) {
        self.problems.set(vec![problem]);
        self.phase.set(Phase::Idle);
    }

    /// The worker, started on first use.
    fn worker(&self) -> Result<Worker, String> {
        if let Some(worker) = self.worker.get_value() {
            return Ok(worker);
        }
        // Trunk's loader uses importScripts: a classic worker, not a module one.
        let options = WorkerOptions::new();
        options.set_type(WorkerType::Classic);
        let worker = Worker::new_with_options(WORKER_URL, &options)
            .map_err(|err| format!("the engine worker could not start: {err:?}"))?;
        let handle = *self;
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let Some(text) = event.data().as_string() else {
                return;
            };
            match serde_json::from_str::<FromWorker>(&text) {
                Ok(FromWorker::Ready) => {
                    let queued = handle.pending.try_update_value(Option::take).flatten();
                    if let Some(worker) = handle.worker.get_value() {
                        for json in queued.unwrap_or_default() {
                            handle.send(&worker, &json);
                        }
                    }
                }
                Ok(FromWorker::Progress(progress)) => handle.progress.set(Some(progress)),
                Ok(FromWorker::Finished { document }) => {
                    let phase = match document.status {
                        tokenmeter_core::report::RunStatus::Done => Phase::Done,
                        tokenmeter_core::report::RunStatus::Cancelled => Phase::Cancelled,
                    };
                    // Kept before anything else: a finished run is never lost.
                    handle.history.set(crate::history::save(
                        &handle.history.get_untracked(),
                        &document,
                    ));
                    handle.document.set(Some(*document));
                    handle.phase.set(phase);
                }
                Ok(FromWorker::Failed { problems }) => {
                    handle.problems.set(problems);
                    handle.phase.set(Phase::Idle);
                }
                Err(err) => handle.fail(format!("unreadable message from the engine: {err}")),
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        // The handler lives as long as the worker, which lives as long as the page.
        on_message.forget();
        let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_: web_sys::Event| {
            handle.fail(format!(
                "the engine worker failed to load ({WORKER_URL}); see the browser console"
            ));
        });
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        self.worker.set_value(Some(worker.clone()));
        self.watch_visibility();
        Ok(worker)
    }
}

impl RunHandle {
    /// Tells the worker whenever the page is hidden or shown: a hidden tab is
    /// throttled, and the levels it overlapped are flagged in the document.
    fn watch_visibility(&self) {
        let document = leptos::prelude::document();
        let handle = *self;
        let on_change = Closure::<dyn FnMut()>::new({
            let document = document.clone();
            move || {
                let hidden = document.hidden();
                if let Some(worker) = handle.worker.get_value() {
                    handle.post(&worker, &ToWorker::Visibility { hidden });
                }
            }
        });
        let _ = document.add_event_listener_with_callback(
            "visibilitychange",
            on_change.as_ref().unchecked_ref(),
        );
        // Lives as long as the page.
        on_change.forget();
        if document.hidden() {
            if let Some(worker) = self.worker.get_value() {
                self.post(&worker, &ToWorker::Visibility { hidden: true });
            }
        }
    }
}

impl Default for RunHandle {
    fn default() -> Self {
        RunHandle::new()
    }
}
