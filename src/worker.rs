//! The page's side of the engine worker: its life cycle as a type. The worker runs
//! the page's own WebAssembly module (see `engine::host`): it is started from
//! `engine-worker.js` and sent the compiled module and the URL of the bindings. A
//! worker is *loading* (messages queue until it says `Ready`, since the worker
//! drops what arrives before its wasm has set `onmessage`), *ready*, or *broken* (it
//! failed to load, or said something unreadable). A broken worker is terminated at
//! once, and the next message starts a fresh one, so one failure never leaves the
//! page waiting forever.

use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::{prelude::Closure, JsCast, JsValue};
use web_sys::{MessageEvent, Worker, WorkerOptions, WorkerType};

use tokenmeter_core::{said, schema::Said};

use crate::protocol::{FromWorker, ToWorker};

/// Where Trunk copies the worker's loader, relative to the page (so a sub-path works).
const WORKER_URL: &str = "./engine-worker.js";

/// The URL of the page's wasm-bindgen bindings, which the worker imports to
/// instantiate the module: Trunk names them (with a hash) in the page's one
/// `<link rel="modulepreload">`.
fn bindings_url() -> Result<String, Said> {
    leptos::prelude::document()
        .query_selector("link[rel=modulepreload]")
        .ok()
        .flatten()
        .and_then(|link| js_sys::Reflect::get(&link, &"href".into()).ok())
        .and_then(|href| href.as_string())
        .filter(|href| !href.is_empty())
        .ok_or_else(|| {
            said!(
                "the engine worker cannot start: index.html names no bindings (<link rel=\"modulepreload\">); build the page with Trunk (`cargo xtask build`)",
                "测量引擎 worker 无法启动：index.html 没有指明绑定文件（<link rel=\"modulepreload\">）；请用 Trunk 构建页面（`cargo xtask build`）",
            )
        })
}

/// What the loader needs: this module, compiled already, and its bindings.
fn bootstrap() -> Result<JsValue, Said> {
    let message = js_sys::Object::new();
    let bindings = bindings_url()?;
    for (key, value) in [
        ("bindings", JsValue::from_str(&bindings)),
        ("module", wasm_bindgen::module()),
    ] {
        js_sys::Reflect::set(&message, &key.into(), &value).map_err(|err| {
            said!(
                "the engine worker cannot start: {err:?}",
                "测量引擎 worker 无法启动：{err:?}"
            )
        })?;
    }
    Ok(message.into())
}

/// Messages travel as JSON strings: one copy across threads, however large the
/// run document (a JS object tree would cost one allocation per field).
fn json(message: &ToWorker) -> String {
    serde_json::to_string(message).expect("messages serialise")
}

/// What the worker said, or that it broke.
pub enum WorkerEvent {
    Message(FromWorker),
    /// The worker is gone; the sentence says why.
    Broken(Said),
}

/// How long a new worker may take to say `Ready`: its script loads, but its wasm
/// may not (missing, or a stale cached copy), and then nothing else would tell.
const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(15);

/// A started worker and the handlers that live as long as it does.
struct Started {
    /// Which start this is, so that a late watchdog knows its own worker.
    generation: u64,
    worker: Worker,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::Event)>,
}

enum WorkerState {
    /// No worker yet, or the last one broke (and was terminated).
    None,
    /// Started; these messages wait for `Ready`.
    Loading {
        started: Started,
        queued: Vec<String>,
    },
    Ready(Started),
}

/// The engine worker, started on first use and replaced when it breaks.
#[derive(Clone, Copy)]
pub struct EngineWorker {
    state: StoredValue<WorkerState, LocalStorage>,
    n_started: StoredValue<u64>,
    on_event: StoredValue<Rc<dyn Fn(WorkerEvent)>, LocalStorage>,
}

impl EngineWorker {
    /// A handle that calls `on_event` with every message and every failure.
    pub fn new(on_event: impl Fn(WorkerEvent) + 'static) -> EngineWorker {
        EngineWorker {
            state: StoredValue::new_local(WorkerState::None),
            n_started: StoredValue::new(0),
            on_event: StoredValue::new_local(Rc::new(on_event)),
        }
    }

    /// Posts a message, starting a worker first when there is none.
    pub fn post(&self, message: &ToWorker) -> Result<(), Said> {
        if self.state.with_value(|s| matches!(s, WorkerState::None)) {
            let started = self.start()?;
            // A new worker learns whether the page is hidden before anything else.
            let hidden = leptos::prelude::document().hidden();
            let queued = hidden
                .then(|| json(&ToWorker::Visibility { hidden }))
                .into_iter()
                .collect();
            self.state
                .set_value(WorkerState::Loading { started, queued });
        }
        self.post_to_current(message)
    }

    /// Posts a message to the worker there is, if any; never starts one.
    pub fn post_to_current(&self, message: &ToWorker) -> Result<(), Said> {
        let json = json(message);
        let sent = self.state.try_update_value(|state| match state {
            WorkerState::None => Ok(()),
            WorkerState::Loading { queued, .. } => {
                queued.push(json);
                Ok(())
            }
            WorkerState::Ready(started) => started
                .worker
                .post_message(&JsValue::from_str(&json))
                .map_err(|err| {
                    said!(
                        "the engine worker refused the message: {err:?}",
                        "测量引擎 worker 拒收了消息：{err:?}"
                    )
                }),
        });
        sent.unwrap_or(Ok(()))
    }

    /// Takes back what waits for a worker still loading (a run's start, say), so
    /// that it never reaches the worker; whether there was one loading. The worker
    /// goes on loading, for the next message (it is told whether the page is
    /// hidden, as every new worker is).
    pub fn withdraw_queued(&self) -> bool {
        let hidden = leptos::prelude::document().hidden();
        self.state
            .try_update_value(|state| match state {
                WorkerState::Loading { queued, .. } => {
                    queued.clear();
                    if hidden {
                        queued.push(json(&ToWorker::Visibility { hidden }));
                    }
                    true
                }
                _ => false,
            })
            .unwrap_or(false)
    }

    // Long: the worker's start and its message handler, which share its state.
    fn start(&self) -> Result<Started, Said> {
        let generation = self.n_started.get_value() + 1;
        self.n_started.set_value(generation);
        let bootstrap = bootstrap()?;
        // A module worker: the loader imports the bindings, an ES module.
        let options = WorkerOptions::new();
        options.set_type(WorkerType::Module);
        let worker = Worker::new_with_options(WORKER_URL, &options).map_err(|err| {
            said!(
                "the engine worker could not start: {err:?}",
                "测量引擎 worker 未能启动：{err:?}"
            )
        })?;
        worker.post_message(&bootstrap).map_err(|err| {
            said!(
                "the engine worker could not start: {err:?}",
                "测量引擎 worker 未能启动：{err:?}"
            )
        })?;
        // Messages are read in the order they came, by one task: reading needs the
        // `read` piece (see `pieces`), which the first message may wait for. The
        // task ends when this worker's handler is dropped (the worker replaced).
        let (texts, mut to_read) = futures_channel::mpsc::unbounded::<String>();
        let handle = *self;
        wasm_bindgen_futures::spawn_local(async move {
            use futures_util::StreamExt;
            while let Some(text) = to_read.next().await {
                let read = crate::pieces::read_message(text).await;
                // A worker broken (and replaced) meanwhile: what it said is past.
                if !handle.is_current(generation) {
                    return;
                }
                match read {
                    Ok(Ok(FromWorker::Ready)) => handle.ready(),
                    Ok(Ok(message)) => handle.emit(WorkerEvent::Message(message)),
                    Err(missing) => handle.broke(missing.said()),
                    // A worker from another build (a stale cached copy) speaks another
                    // protocol: start afresh rather than guess.
                    Ok(Err(err)) => handle.broke(said!(
                        "unreadable message from the engine: {err}",
                        "无法读取测量引擎发来的消息：{err}"
                    )),
                }
            }
        });
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(text) = event.data().as_string() {
                let _ = texts.unbounded_send(text);
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |event: web_sys::Event| {
            let loading = handle
                .state
                .with_value(|s| matches!(s, WorkerState::Loading { .. }));
            let message = js_sys::Reflect::get(&event, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_default();
            handle.broke(if loading {
                let why = if message.is_empty() { String::new() } else { format!(": {message}") };
                said!(
                    "the engine worker failed to load ({WORKER_URL}{why}); see the browser console",
                    "测量引擎 worker 加载失败（{WORKER_URL}{why}）；请查看浏览器控制台"
                )
            } else {
                said!(
                    "the engine worker stopped with an error ({message}); the next Run starts a new one",
                    "测量引擎 worker 因错误停止（{message}）；下一次运行会启动新的 worker"
                )
            });
        });
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        // The watchdog: still loading after a while means it never will.
        let handle = *self;
        wasm_bindgen_futures::spawn_local(async move {
            gloo_timers::future::sleep(READY_WITHIN).await;
            let stuck = handle.state.try_with_value(|s| {
                matches!(s, WorkerState::Loading { started, .. } if started.generation == generation)
            });
            if stuck == Some(true) {
                let within_s = READY_WITHIN.as_secs();
                handle.broke(said!(
                    "the engine worker did not start within {within_s} s: engine-worker.js did not start the engine (a stale cached copy, or a host that does not serve it: reload the page, and make sure the host serves engine-worker.js beside index.html)",
                    "测量引擎 worker 在 {within_s} 秒内没有启动：engine-worker.js 没有启动引擎（可能是过期的缓存副本，或托管方没有提供该文件：请重新加载页面，并确认 engine-worker.js 与 index.html 放在一起）",
                ));
            }
        });
        Ok(Started {
            generation,
            worker,
            _on_message: on_message,
            _on_error: on_error,
        })
    }

    /// Whether the worker there is is the one of this start.
    fn is_current(&self, generation: u64) -> bool {
        self.state
            .try_with_value(|s| match s {
                WorkerState::Loading { started, .. } | WorkerState::Ready(started) => {
                    started.generation == generation
                }
                WorkerState::None => false,
            })
            .unwrap_or(false)
    }

    /// The worker listens: send what waited.
    fn ready(&self) {
        let previous = self
            .state
            .try_update_value(|state| std::mem::replace(state, WorkerState::None));
        let Some(WorkerState::Loading { started, queued }) = previous else {
            // Ready twice, or from a worker already dropped: keep what was there.
            if let Some(previous) = previous {
                self.state.set_value(previous);
            }
            return;
        };
        let mut refused = None;
        for json in queued {
            if let Err(err) = started.worker.post_message(&JsValue::from_str(&json)) {
                refused = Some(said!(
                    "the engine worker refused the message: {err:?}",
                    "测量引擎 worker 拒收了消息：{err:?}"
                ));
            }
        }
        self.state.set_value(WorkerState::Ready(started));
        if let Some(reason) = refused {
            self.broke(reason);
        }
    }

    /// The page judged the worker gone (it went silent): it is terminated, and the
    /// next message starts a new one.
    pub fn declare_broken(&self, reason: Said) {
        self.broke(reason);
    }

    /// Terminates the worker (its pending messages go with it) and says why.
    fn broke(&self, reason: Said) {
        let previous = self
            .state
            .try_update_value(|state| std::mem::replace(state, WorkerState::None));
        match previous {
            Some(WorkerState::Loading { started, .. }) | Some(WorkerState::Ready(started)) => {
                started.worker.terminate();
                // The handlers are dropped after this call returns: the event
                // being handled may be one of theirs.
                let handlers = Rc::new(started);
                wasm_bindgen_futures::spawn_local(async move { drop(handlers) });
            }
            _ => {}
        }
        self.emit(WorkerEvent::Broken(reason));
    }

    fn emit(&self, event: WorkerEvent) {
        if let Some(on_event) = self.on_event.try_get_value() {
            on_event(event);
        }
    }
}
