//! The page's side of a run: what the results area shows ([`RunView`]), starting
//! and cancelling through the engine worker, and turning its messages into that
//! view. No timing happens here, and nothing here knows about history: the app
//! shell hands in what to do with a finished run.
//!
//! A run that never ends is not lost either. Progress brings the requests finished
//! since the last one, and the page keeps them: if the engine stops (it crashed, or
//! went silent for [`SILENT_FOR`]), the run ends with what was measured; while a run
//! goes, what came since the last save is saved every [`SAVE_EVERY`], and the rest
//! when the page is left (after asking; see `in_progress`), and the next page load
//! hands it to history ([`take_interrupted`]).

use std::{cell::RefCell, rc::Rc, sync::Arc, time::Duration};

use leptos::prelude::*;
use tokenmeter_core::{
    chart::OverTime,
    said,
    schema::{Interruption, Plan, RequestRecord, RunDocument, RunStatus, Said},
    Prompts,
};
use wasm_bindgen::{prelude::Closure, JsCast};

use crate::{
    in_progress::{self, Saved},
    pieces::{self, interrupted_document, Interrupted, ShowWhenReady},
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

/// An engine that says nothing for this long while a run goes (it sends progress
/// ten times a second, and the page counts only while it is visible) has stopped.
const SILENT_FOR: Duration = Duration::from_secs(15);

/// How often a run in progress is saved, for the next page load should this one end.
const SAVE_EVERY: Duration = Duration::from_secs(5);

/// What the page has of the run that goes.
struct Partial {
    run_id: String,
    started_at: String,
    plan: Plan,
    records: Vec<RequestRecord>,
    /// Output tokens over time so far, for the live chart: grown by each request
    /// as it arrives, not recomputed.
    over_time: OverTime,
    /// How far `records` are saved for the next page load.
    saved: Rc<RefCell<Saved>>,
}

impl Partial {
    /// What the run's document is built from, as far as the run went, ended by
    /// `cause`: the run's records moved, not copied (the partial ends here).
    fn into_interrupted(self, cause: Interruption) -> Interrupted {
        Interrupted {
            run_id: self.run_id,
            started_at: self.started_at,
            plan: self.plan,
            records: self.records,
            cause,
        }
    }
}

/// The run a previous page load was running when it ended, if any, as a
/// cancelled run that says it was interrupted (see `in_progress`); one saved by an
/// earlier tokenmeter, as the document it saved.
pub async fn take_interrupted() -> Option<RunDocument> {
    if let Some(document) = take_legacy().await {
        return Some(document);
    }
    let (start, records) = in_progress::take().await?;
    // Nothing measured: nothing to keep.
    if records.is_empty() {
        return None;
    }
    let run = Interrupted {
        run_id: start.run_id,
        started_at: start.started_at,
        plan: start.plan,
        records,
        cause: Interruption::PageClosed,
    };
    interrupted_document(run).await.ok()
}

/// A run in progress an earlier tokenmeter saved as a whole document; it goes back
/// for the next load when the code that reads it cannot be fetched.
async fn take_legacy() -> Option<RunDocument> {
    let storage = crate::local_storage()?;
    let json = storage
        .get_item(in_progress::LEGACY_STORAGE)
        .ok()
        .flatten()?;
    let _ = storage.remove_item(in_progress::LEGACY_STORAGE);
    match pieces::read_documents(vec![json.clone()]).await {
        Ok(documents) => documents.into_iter().next().flatten(),
        Err(_) => {
            let _ = storage.set_item(in_progress::LEGACY_STORAGE, &json);
            None
        }
    }
}

/// The current run, and the worker behind it.
#[derive(Clone, Copy)]
pub struct RunController {
    pub view: RwSignal<RunView>,
    /// Why the last run (or the last plan action) could not start.
    pub problems: RwSignal<Vec<Said>>,
    worker: EngineWorker,
    partial: StoredValue<Option<Partial>, LocalStorage>,
    /// When the engine last said anything, `performance.now()` ms.
    last_heard_ms: StoredValue<f64>,
    finished_view: ShowWhenReady,
}

impl RunController {
    /// `on_finished` is called with every finished or cancelled run before it is
    /// shown (the app keeps it in history: a finished run is never lost);
    /// `finished_view` fetches what showing it needs (see [`ShowWhenReady`]).
    // Long: the run's signals, and the worker's messages handled in one match.
    pub fn new(
        on_finished: impl Fn(&Arc<RunDocument>) + 'static,
        finished_view: ShowWhenReady,
    ) -> RunController {
        let view = RwSignal::new(RunView::Idle);
        let problems = RwSignal::new(Vec::new());
        let partial = StoredValue::new_local(None::<Partial>);
        let last_heard_ms = StoredValue::new(0.0);
        // Also called from a task (an interrupted run's document is built in one).
        let on_finished = Rc::new(on_finished);
        let worker = EngineWorker::new(move |event| {
            last_heard_ms.set_value(now_ms());
            match event {
                // (`Sent` is a helper's word to the measuring worker, never the page's.)
                WorkerEvent::Message(FromWorker::Ready | FromWorker::Sent(_)) => {}
                WorkerEvent::Message(FromWorker::Progress(mut progress)) => {
                    let records = std::mem::take(&mut progress.records);
                    partial.update_value(|p| {
                        if let Some(p) = p {
                            for record in &records {
                                p.over_time.add(record);
                            }
                            p.records.extend(records);
                        }
                    });
                    if view.with_untracked(RunView::is_running) {
                        view.set(RunView::Running(Some(progress)));
                    }
                }
                WorkerEvent::Message(FromWorker::Finished {
                    mut document,
                    n_records,
                }) => {
                    let mut records = Vec::new();
                    partial.update_value(|p| {
                        if let Some(p) = p {
                            records = std::mem::take(&mut p.records);
                        }
                    });
                    end_partial(partial);
                    if let Some(shortfall) = records_shortfall(records.len() as u64, n_records) {
                        problems.update(|p| p.push(shortfall));
                    }
                    document.put_records(records);
                    let document = Arc::new(*document);
                    on_finished(&document);
                    show_finished(view, document, finished_view);
                }
                WorkerEvent::Message(FromWorker::Failed { problems: why }) => {
                    end_partial(partial);
                    problems.set(why);
                    view.set(RunView::Idle);
                }
                WorkerEvent::Broken(reason) => {
                    problems.set(vec![reason.clone()]);
                    if !view.with_untracked(RunView::is_running) {
                        return;
                    }
                    // The engine is gone mid-run: the run ends with what reached
                    // the page, and says why. An engine that never measured anything
                    // (it failed to load) leaves nothing to keep.
                    let taken = partial
                        .try_update_value(Option::take)
                        .flatten()
                        .filter(|p| !p.records.is_empty());
                    let Some(taken) = taken else {
                        end_partial(partial);
                        view.set(RunView::Idle);
                        return;
                    };
                    // The document keeps the English, as every reason it keeps.
                    let interrupted =
                        taken.into_interrupted(Interruption::EngineStopped { reason: reason.en });
                    let on_finished = Rc::clone(&on_finished);
                    leptos::task::spawn_local(async move {
                        match interrupted_document(interrupted).await {
                            Ok(document) => {
                                end_partial(partial);
                                let document = Arc::new(document);
                                on_finished(&document);
                                show_finished(view, document, finished_view);
                            }
                            Err(missing) => {
                                // What was saved as the run went stays saved: the
                                // next page load hands it to history.
                                problems.update(|p| p.push(missing.said()));
                                view.set(RunView::Idle);
                            }
                        }
                    });
                }
            }
        });
        let run = RunController {
            view,
            problems,
            finished_view,
            worker,
            partial,
            last_heard_ms,
        };
        run.watch_visibility();
        run.ask_before_leaving();
        run
    }

    pub fn is_running(&self) -> bool {
        self.view.with(RunView::is_running)
    }

    /// `f` of the output tokens over time of the run that goes, if one does (not
    /// reactive: read it when the progress changes).
    pub fn with_over_time<R>(&self, f: impl FnOnce(&OverTime) -> R) -> Option<R> {
        self.partial
            .with_value(|p| p.as_ref().map(|p| f(&p.over_time)))
    }

    /// Starts a run; the key goes to the worker's memory and nowhere else.
    pub fn start(
        &self,
        plan: Plan,
        api_key: Option<String>,
        target_keys: Vec<Option<String>>,
        prompts: Option<Arc<Prompts>>,
    ) {
        if self.view.with_untracked(RunView::is_running) {
            return;
        }
        let message = ToWorker::Start {
            run_id: format!("run-{}", js_sys::Date::now() as u64),
            started_at: String::from(js_sys::Date::new_0().to_iso_string()),
            plan: Box::new(plan),
            api_key,
            target_keys,
            prompts,
        };
        let ToWorker::Start {
            run_id,
            started_at,
            plan,
            ..
        } = &message
        else {
            unreachable!("a start message");
        };
        self.partial.set_value(Some(Partial {
            run_id: run_id.clone(),
            started_at: started_at.clone(),
            plan: (**plan).clone(),
            records: Vec::new(),
            over_time: OverTime::live(),
            saved: in_progress::begin(run_id, started_at, plan),
        }));
        // Saving the run as it goes writes its records at once: that code is
        // fetched now (see `in_progress`).
        leptos::task::spawn_local(pieces::when_run_starts(self.finished_view));
        self.last_heard_ms.set_value(now_ms());
        self.problems.set(Vec::new());
        self.view.set(RunView::Running(None));
        if let Err(problem) = self.worker.post(&message) {
            end_partial(self.partial);
            self.problems.set(vec![problem]);
            self.view.set(RunView::Idle);
            return;
        }
        self.watch_run(run_id.clone());
    }

    /// While the run `run_id` goes: saves it every [`SAVE_EVERY`], and declares the
    /// engine stopped when it has been silent for [`SILENT_FOR`] with the page shown.
    fn watch_run(&self, run_id: String) {
        let run = *self;
        wasm_bindgen_futures::spawn_local(async move {
            let mut since_save = Duration::ZERO;
            const TICK: Duration = Duration::from_secs(1);
            loop {
                gloo_timers::future::sleep(TICK).await;
                let same_run = run
                    .partial
                    .with_value(|p| p.as_ref().is_some_and(|p| p.run_id == run_id));
                if !same_run || !run.view.with_untracked(RunView::is_running) {
                    return;
                }
                since_save += TICK;
                if since_save >= SAVE_EVERY {
                    since_save = Duration::ZERO;
                    run.save_in_progress();
                }
                let silent_ms = now_ms() - run.last_heard_ms.get_value();
                if !leptos::prelude::document().hidden()
                    && silent_ms > SILENT_FOR.as_secs_f64() * 1e3
                {
                    let silent_s = SILENT_FOR.as_secs();
                    run.worker.declare_broken(said!(
                        "it said nothing for {silent_s} s: it may have run out of memory, or the browser stopped it",
                        "它 {silent_s} 秒没有任何消息：可能内存耗尽，或被浏览器停止了"
                    ));
                    return;
                }
            }
        });
    }

    /// Saves what the run in progress measured since the last save, in the
    /// background.
    fn save_in_progress(&self) {
        self.partial.with_value(|p| {
            if let Some(p) = p {
                in_progress::save_chunk(&p.saved, &p.run_id, &p.records);
            }
        });
    }

    /// Leaving the page while a run goes asks first, and saves the run so far.
    fn ask_before_leaving(&self) {
        let run = *self;
        let on_leave = Closure::<dyn FnMut(web_sys::Event)>::new(move |event: web_sys::Event| {
            if run.view.with_untracked(RunView::is_running) {
                // At once: the page may be closing.
                run.partial.with_value(|p| {
                    if let Some(p) = p {
                        in_progress::save_tail(&p.saved, &p.records);
                    }
                });
                event.prevent_default();
                // Older browsers ask only when returnValue is set.
                let _ = js_sys::Reflect::set(&event, &"returnValue".into(), &"".into());
            }
        });
        let _ = leptos::prelude::window()
            .add_event_listener_with_callback("beforeunload", on_leave.as_ref().unchecked_ref());
        // Lives as long as the page.
        on_leave.forget();
    }

    /// Aborts every request in flight; the worker then finishes with what it has.
    /// Before the engine has started, the run is withdrawn at once: nothing was
    /// sent, so there is nothing to keep, and the page does not wait for the engine.
    pub fn cancel(&self) {
        if self.view.with_untracked(RunView::is_running) {
            if self.worker.withdraw_queued() {
                end_partial(self.partial);
                self.problems.set(vec![said!(
                    "Cancelled before the engine had started: no request was sent, so there is no run to keep.",
                    "在测量引擎启动之前已取消：没有发出任何请求，因此没有可保存的运行。"
                )]);
                self.view.set(RunView::Idle);
                return;
            }
            if let Err(problem) = self.worker.post_to_current(&ToWorker::Cancel) {
                self.problems.set(vec![problem]);
            }
        }
    }

    /// Shows a kept run (not while a run goes: the live view stays).
    pub fn show(&self, document: Arc<RunDocument>) {
        if !self.view.with_untracked(RunView::is_running) {
            show_finished(self.view, document, self.finished_view);
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

/// Shows a finished run once its view's code is here: at once in the usual case (a
/// split build fetches it while the run goes), so that the status never says
/// "done" before the run is on the page. A run that starts meanwhile wins.
fn show_finished(
    view: RwSignal<RunView>,
    document: Arc<RunDocument>,
    finished_view: ShowWhenReady,
) {
    let was_running = view.with_untracked(RunView::is_running);
    leptos::task::spawn_local(async move {
        // One that cannot be fetched is said where the results go.
        finished_view().await;
        if was_running || !view.with_untracked(RunView::is_running) {
            view.set(RunView::Finished(document));
        }
    });
}

/// What to say when fewer of a finished run's records reached the page with its
/// progress (`n_brought`) than the engine says it had (`n_records`); nothing when
/// all did.
pub fn records_shortfall(n_brought: u64, n_records: u64) -> Option<Said> {
    (n_brought < n_records).then(|| {
        said!(
            "{n_brought} of the run's {n_records} requests reached the page: the figures count them all, the records shown and exported are those",
            "本次运行的 {n_records} 个请求中有 {n_brought} 个到达了页面：统计包含全部请求，显示和导出的明细只有这些"
        )
    })
}

/// The run ended (one way or another): nothing of it needs saving any more.
fn end_partial(partial: StoredValue<Option<Partial>, LocalStorage>) {
    partial.set_value(None);
    in_progress::end();
}

/// The page's `performance.now()`, ms.
fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}
