//! The page's side of a run: what the results area shows ([`RunView`]), starting
//! and cancelling through the engine worker, and turning its messages into that
//! view. No timing happens here, and nothing here knows about history: the app
//! shell hands in what to do with a finished run.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    plan::Plan,
    report::{RunDocument, RunStatus},
};
use wasm_bindgen::{prelude::Closure, JsCast};

use crate::{
    protocol::{FromWorker, Progress, ToWorker},
    worker::{EngineWorker, WorkerEvent},
};

/// What the results area shows.
#[derive(Clone, Debug)]
pub enum RunView {
    Idle,
    /// A run goes; `None` until the first progress arrives.
    Running(Option<Progress>),
    /// A finished or cancelled run: the one that just ended, or one from history.
    Finished(Arc<RunDocument>),
}

impl RunView {
    /// The `status` hook's exact text.
    pub fn status(&self) -> &'static str {
        match self {
            RunView::Idle => "idle",
            RunView::Running(_) => "running",
            RunView::Finished(document) => match document.status {
                RunStatus::Done => "done",
                RunStatus::Cancelled => "cancelled",
            },
        }
    }

    pub fn is_running(&self) -> bool {
        matches!(self, RunView::Running(_))
    }

    pub fn progress(&self) -> Option<&Progress> {
        match self {
            RunView::Running(progress) => progress.as_ref(),
            _ => None,
        }
    }

    /// Which view this is, without its changing figures: equal while the same run
    /// goes, or while the same document is shown (compared by identity, not by
    /// content, which may hold every token's timestamp).
    pub fn shown(&self) -> Shown {
        match self {
            RunView::Idle => Shown::Idle,
            RunView::Running(_) => Shown::Running,
            RunView::Finished(document) => Shown::Finished(DocumentRef(document.clone())),
        }
    }
}

/// See [`RunView::shown`].
#[derive(Clone, Debug, PartialEq)]
pub enum Shown {
    Idle,
    Running,
    Finished(DocumentRef),
}

/// A shared document, equal to another only when it is the same one.
#[derive(Clone, Debug)]
pub struct DocumentRef(pub Arc<RunDocument>);

impl PartialEq for DocumentRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The current run, and the worker behind it.
#[derive(Clone, Copy)]
pub struct RunController {
    pub view: RwSignal<RunView>,
    /// Why the last run (or the last plan action) could not start.
    pub problems: RwSignal<Vec<String>>,
    worker: EngineWorker,
}

impl RunController {
    /// `on_finished` is called with every finished or cancelled run before it is
    /// shown (the app keeps it in history: a finished run is never lost).
    pub fn new(on_finished: impl Fn(&Arc<RunDocument>) + 'static) -> RunController {
        let view = RwSignal::new(RunView::Idle);
        let problems = RwSignal::new(Vec::new());
        let worker = EngineWorker::new(move |event| match event {
            WorkerEvent::Message(FromWorker::Ready) => {}
            WorkerEvent::Message(FromWorker::Progress(progress)) => {
                if view.with_untracked(RunView::is_running) {
                    view.set(RunView::Running(Some(progress)));
                }
            }
            WorkerEvent::Message(FromWorker::Finished { document }) => {
                let document = Arc::new(*document);
                on_finished(&document);
                view.set(RunView::Finished(document));
            }
            WorkerEvent::Message(FromWorker::Failed { problems: why }) => {
                problems.set(why);
                view.set(RunView::Idle);
            }
            WorkerEvent::Broken(reason) => {
                problems.set(vec![reason]);
                if view.with_untracked(RunView::is_running) {
                    view.set(RunView::Idle);
                }
            }
        });
        let run = RunController {
            view,
            problems,
            worker,
        };
        run.watch_visibility();
        run
    }

    pub fn is_running(&self) -> bool {
        self.view.with(RunView::is_running)
    }

    /// Starts a run; the key goes to the worker's memory and nowhere else.
    pub fn start(&self, plan: Plan, api_key: Option<String>) {
        if self.view.with_untracked(RunView::is_running) {
            return;
        }
        let message = ToWorker::Start {
            run_id: format!("run-{}", js_sys::Date::now() as u64),
            started_at: String::from(js_sys::Date::new_0().to_iso_string()),
            plan: Box::new(plan),
            api_key,
        };
        self.problems.set(Vec::new());
        self.view.set(RunView::Running(None));
        if let Err(problem) = self.worker.post(&message) {
            self.problems.set(vec![problem]);
            self.view.set(RunView::Idle);
        }
    }

    /// Aborts every request in flight; the worker then finishes with what it has.
    pub fn cancel(&self) {
        if self.view.with_untracked(RunView::is_running) {
            if let Err(problem) = self.worker.post_to_current(&ToWorker::Cancel) {
                self.problems.set(vec![problem]);
            }
        }
    }

    /// Shows a kept run (not while a run goes: the live view stays).
    pub fn show(&self, document: Arc<RunDocument>) {
        if !self.view.with_untracked(RunView::is_running) {
            self.view.set(RunView::Finished(document));
        }
    }

    /// Tells the worker whenever the page is hidden or shown: a hidden tab is
    /// throttled, and the levels it overlapped are flagged in the document.
    fn watch_visibility(&self) {
        let document = leptos::prelude::document();
        let worker = self.worker;
        let on_change = Closure::<dyn FnMut()>::new({
            let document = document.clone();
            move || {
                let hidden = document.hidden();
                // Only a worker that exists needs to know; a new one is told at start.
                let _ = worker.post_to_current(&ToWorker::Visibility { hidden });
            }
        });
        let _ = document.add_event_listener_with_callback(
            "visibilitychange",
            on_change.as_ref().unchecked_ref(),
        );
        // Lives as long as the page.
        on_change.forget();
    }
}
