//! The engine's side of the worker. The page and the engine are one WebAssembly
//! module: the page starts a module worker (`engine-worker.js`) and posts it the
//! module it compiled and the URL of its bindings; the worker instantiates them, and
//! `main` (which sees no window) calls [`listen`]. One module instead of two saves
//! the second copy of what both use (the standard library, serde, the core) in the
//! download, and the worker compiles nothing.
//!
//! [`listen`] reads `ToWorker`, runs the plan off the UI thread, and posts progress
//! and the document as `FromWorker`. The same worker, started by another engine
//! worker and told `Shard`, is a helper: it sends the requests it is given (see
//! [`super::shards`]).

use std::{cell::RefCell, rc::Rc};

use tokenmeter_core::said;

use super::{
    cancel::CancelToken,
    conditions::Visibility,
    helper::Helper,
    runner::{run, RunInput},
};
use crate::protocol::{FromWorker, ToWorker};
use wasm_bindgen::{prelude::Closure, JsCast, JsValue};
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

split_off! { engine:
    /// Listens for the page's messages in this worker, and says `Ready`. In a split
    /// build this, and all of the engine that only the worker runs, is
    /// `split_engine.wasm`: the page never fetches it.
    pub fn listen() { listen_here() }
}

fn listen_here() {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let post: Rc<dyn Fn(FromWorker)> = Rc::new({
        let scope = scope.clone();
        move |message: FromWorker| {
            let json = serde_json::to_string(&message).expect("messages serialise");
            // Posting fails only when the page is gone; then nobody is listening.
            let _ = scope.post_message(&JsValue::from_str(&json));
        }
    });
    let current: Rc<RefCell<Option<CancelToken>>> = Rc::default();
    // In a helper worker: the run it sends requests for.
    let helper: Rc<RefCell<Option<Rc<Helper>>>> = Rc::default();
    let visibility: Rc<Visibility> = Rc::default();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
        let post = post.clone();
        move |event: MessageEvent| {
            let Some(text) = event.data().as_string() else {
                return;
            };
            match serde_json::from_str::<ToWorker>(&text) {
                Ok(ToWorker::Start {
                    run_id,
                    started_at,
                    plan,
                    api_key,
                    target_keys,
                    prompts,
                }) => {
                    let cancel = CancelToken::default();
                    if let Some(previous) = current.borrow_mut().replace(cancel.clone()) {
                        previous.cancel();
                    }
                    let input = RunInput {
                        run_id,
                        started_at,
                        plan: *plan,
                        api_key,
                        target_keys,
                        prompts,
                        visibility: visibility.clone(),
                    };
                    wasm_bindgen_futures::spawn_local(run(input, cancel, post.clone()));
                }
                Ok(ToWorker::Visibility { hidden }) => visibility.set_hidden(hidden),
                Ok(ToWorker::Shard(start)) => {
                    let cancel = CancelToken::default();
                    if let Some(previous) = current.borrow_mut().replace(cancel.clone()) {
                        previous.cancel();
                    }
                    *helper.borrow_mut() = Some(Helper::start(*start, cancel, post.clone()));
                }
                Ok(ToWorker::Send(order)) => {
                    if let Some(helper) = helper.borrow().as_ref() {
                        helper.send(order);
                    }
                }
                Ok(ToWorker::Cancel) => {
                    if let Some(cancel) = current.borrow().as_ref() {
                        cancel.cancel();
                    }
                }
                Err(err) => post(FromWorker::Failed {
                    problems: vec![said!(
                        "the worker could not read a message: {err}",
                        "worker 无法读取一条消息：{err}"
                    )],
                }),
            }
        }
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    post(FromWorker::Ready);
}
