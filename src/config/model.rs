//! The model field with "Load models": the list goes into the field's suggestions.
//! A new click aborts the request before it, and leaving the page aborts the last.

use std::{cell::Cell, rc::Rc};

use gloo_timers::callback::Timeout;
use leptos::prelude::*;
use tokenmeter_core::{
    normalize_base_url, said,
    schema::{Plan, Said},
};
use web_sys::AbortController;

use super::{draft::DraftSignals, key::KeyState};
use crate::language::{self, w, words};

/// How long "Load models" waits for the list.
const MODELS_TIMEOUT_MS: u32 = 15_000;

#[component]
// Long: the field, its models fetch and its states share signals; split, they would pass them all around.
pub fn ModelField(
    draft: DraftSignals,
    key: KeyState,
    base: StoredValue<Plan>,
    running: Signal<bool>,
) -> impl IntoView {
    let models = RwSignal::new(Vec::<String>::new());
    // `(ok, sentence)`.
    let note = RwSignal::new(None::<(bool, Said)>);
    let lang = language::current();
    let in_flight = StoredValue::new_local(None::<AbortController>);
    on_cleanup(move || {
        if let Some(controller) = in_flight.try_get_value().flatten() {
            controller.abort();
        }
    });
    let on_load = move |_| {
        // The whole plan when it is valid; otherwise the base URL is enough.
        let plan = match draft.plan(&base.get_value()) {
            Ok(plan) => plan,
            Err(_) => {
                let mut plan = base.get_value();
                match normalize_base_url(&draft.base_url.get_untracked()) {
                    Ok((url, _)) => plan.base_url = url,
                    Err(problem) => {
                        note.set(Some((false, problem)));
                        return;
                    }
                }
                plan
            }
        };
        let Ok(controller) = AbortController::new() else {
            note.set(Some((
                false,
                said!(
                    "this browser has no AbortController",
                    "这个浏览器没有 AbortController"
                ),
            )));
            return;
        };
        if let Some(previous) = in_flight.get_value() {
            previous.abort();
        }
        in_flight.set_value(Some(controller.clone()));
        let key = match key.key_for(&plan.base_url) {
            Ok(key) => key,
            Err(why) => {
                note.set(Some((false, why)));
                return;
            }
        };
        note.set(Some((true, said!("asking the server…", "正在询问服务端…"))));
        // A server that never answers must not leave "asking…" forever.
        let timed_out = Rc::new(Cell::new(false));
        let timer = Timeout::new(MODELS_TIMEOUT_MS, {
            let (controller, timed_out) = (controller.clone(), timed_out.clone());
            move || {
                timed_out.set(true);
                controller.abort();
            }
        });
        leptos::task::spawn_local(async move {
            let answer = crate::models::list(&plan, key.as_deref(), &controller.signal()).await;
            drop(timer);
            if timed_out.get() {
                note.set(Some((false, {
                    let (base, within_s) = (&plan.base_url, MODELS_TIMEOUT_MS / 1000);
                    said!(
                        "{base}/models did not answer within {within_s} s",
                        "{base}/models 在 {within_s} 秒内没有回应"
                    )
                })));
                return;
            }
            if controller.signal().aborted() {
                // A newer request (or the page going away) replaced this one.
                return;
            }
            match answer {
                Ok(ids) if ids.is_empty() => note.set(Some((
                    false,
                    said!("the server lists no models", "服务端没有列出任何模型"),
                ))),
                Ok(ids) => {
                    note.set(Some((true, {
                        let ids = ids.join(", ");
                        said!("models on the server: {ids}", "服务端的模型：{ids}")
                    })));
                    if !ids.contains(&draft.model.get_untracked()) {
                        draft.model.set(ids[0].clone());
                    }
                    models.set(ids);
                }
                Err(problem) => note.set(Some((false, problem))),
            }
        });
    };
    view! {
        <label class="field">
            <span class="field-label">{words(w("Model", "模型"))}</span>
            <div class="field-inline">
                <input
                    data-testid="model"
                    type="text"
                    spellcheck="false"
                    list="model-list"
                    prop:value=draft.model
                    prop:disabled=running
                    on:input=move |ev| draft.model.set(event_target_value(&ev))
                />
                <button data-testid="load-models" prop:disabled=running on:click=on_load>
                    {words(w("Load models", "读取模型列表"))}
                </button>
            </div>
            <datalist id="model-list">
                {move || models.get().into_iter().map(|id| view! { <option value=id></option> }).collect_view()}
            </datalist>
            {move || note.get().map(|(ok, note)| view! {
                <p class=if ok { "field-note" } else { "field-error" } data-testid="models-note">{note.text(lang.get()).to_owned()}</p>
            })}
        </label>
    }
}
