//! The plan panel: where the run's endpoint, key and ladder are entered and
//! checked, and where a run starts and is cancelled.
//!
//! - this module: [`ConfigPanel`], the fields' checks and warnings, Run and Cancel;
//! - [`draft`]: the fields as signals (the checking is `tokenmeter_core::draft`'s);
//! - [`advanced`]: the folded advanced settings;
//! - [`key`]: the key field and the remembered-key hook;
//! - [`model`]: the model field and "Load models";
//! - [`import`] and [`share`]: a config.json in, a plan link out.
//!
//! The `data-testid` names here are a public interface (outside scripts drive the
//! page through them): see the README.

mod advanced;
mod draft;
mod import;
mod key;
mod locust;
mod model;
mod share;
mod targets;

use leptos::prelude::*;
use tokenmeter_core::{
    browser::{self, Engine, HTTP1_CONNECTIONS_PER_HOST},
    draft::PlanDraft,
    plan::{import_config, is_mixed_content, normalize_base_url, parse_levels, Plan, PromptMode},
};

use self::{
    advanced::AdvancedFields, draft::DraftSignals, import::ImportConfig, key::KeyField,
    locust::LocustExport, model::ModelField, share::ShareLink, targets::Targets,
};
use crate::{
    run::RunController,
    widgets::{Field, Select, TextArea},
};

/// What each request sends, with the codes scripts select by (`data-testid`
/// interface: `prompt-mode`).
const PROMPT_MODES: &[(PromptMode, &str, &str)] = &[
    (
        PromptMode::Unique,
        "unique",
        "each request its own (a short header of its own in front)",
    ),
    (
        PromptMode::SharedPrefix,
        "shared_prefix",
        "a shared prefix, then each request's own (measures what a cached prefix buys)",
    ),
    (
        PromptMode::Same,
        "same",
        "the same for every request (measures a cache hit)",
    ),
];

#[component]
pub fn ConfigPanel(plan: Plan, run: RunController) -> impl IntoView {
    let draft = DraftSignals::new(PlanDraft::from_plan(&plan));
    let key = RwSignal::new(String::new());
    // The plan behind the form: what the form does not show (the E2E limit, the
    // analysis parameters) comes from here, and an import or a shared link replaces it.
    let base = StoredValue::new(plan);
    let import_notes = RwSignal::new(Vec::<String>::new());
    let import_error = RwSignal::new(None::<String>);
    let apply_import = Callback::new(move |json: String| match import_config(&json) {
        Ok(imported) => {
            draft.fill(&imported.plan);
            base.set_value(imported.plan);
            let mut notes = imported.notes;
            if let Some(api_key) = imported.api_key {
                key.set(api_key);
                notes.push(
                    "the file's api_key is in the key field, in this page's memory only".into(),
                );
            }
            import_notes.set(notes);
            import_error.set(None);
        }
        Err(problem) => {
            import_notes.set(Vec::new());
            import_error.set(Some(problem));
        }
    });
    if let Some(json) = share::plan_from_location() {
        apply_import.run(json);
    }
    // After the link: a remembered key fills the field, bound to its own endpoint.
    let key_state = key::use_remembered_key(key, draft.base_url);
    let running = Signal::derive(move || run.is_running());
    let on_run = move |_| match draft.plan(&base.get_value()) {
        Ok(plan) => match key_state.key_for(&plan.base_url) {
            Ok(key) => {
                let target_keys = draft
                    .targets
                    .with_untracked(|rows| rows.iter().map(|r| r.key()).collect());
                run.start(plan, key, target_keys)
            }
            Err(why) => run.problems.set(vec![why]),
        },
        Err(problems) => run.problems.set(problems),
    };

    view! {
        <section class="panel config" data-testid="config-panel" aria-labelledby="config-title">
            <h2 id="config-title">"Plan"</h2>
            <Field label="Base URL" testid="base-url" value=draft.base_url kind="url" disabled=running>
                <BaseUrlCheck base_url=draft.base_url/>
            </Field>
            <KeyField state=key_state running=running/>
            <ModelField draft=draft key=key_state base=base running=running/>
            <Targets draft=draft running=running/>
            <TextArea label="Prompt" testid="prompt" value=draft.prompt disabled=running/>
            <Select label="Prompts" testid="prompt-mode" value=draft.prompt_mode options=PROMPT_MODES disabled=running/>
            <Show when=move || draft.prompt_mode.get() == PromptMode::SharedPrefix>
                <div class="field-row">
                    <Field label="Shared prefix (tokens)" testid="prefix-tokens" value=draft.prefix_tokens kind="number" disabled=running/>
                    <Field
                        label="Prefix groups"
                        testid="prefix-groups"
                        value=draft.prefix_groups
                        kind="number"
                        disabled=running
                        hint="Request n shares its group's prefix (n mod groups); 1: all share one."
                    />
                </div>
            </Show>
            <Show when=move || draft.prompt_mode.get() == PromptMode::Same>
                <p class="callout warn" data-testid="prompt-mode-warning">
                    "Every request sends the same prompt: a server with a prompt cache (vLLM, SGLang, llama.cpp and hosted APIs keep one by default) answers all but the first from it, so TTFT measures a cache hit, not the prefill your users' own prompts pay."
                </p>
            </Show>
            <div class="field-row">
                <Field label="max_tokens" testid="max-tokens" value=draft.max_tokens kind="number" disabled=running/>
                <Field label="Timeout (s)" testid="timeout" value=draft.timeout_s kind="number" disabled=running/>
            </div>
            <Field label="Concurrency levels" testid="levels" value=draft.levels disabled=running>
                <LevelsCheck levels=draft.levels/>
            </Field>
            <div class="field-row">
                <Field label="Requests per level" testid="requests-per-level" value=draft.requests_per_level kind="number" disabled=running/>
                <Field label="Warm-up requests" testid="warmup" value=draft.warmup kind="number" disabled=running/>
            </div>
            <AdvancedFields draft=draft running=running/>
            <ConnectionWarning draft=draft/>
            <MixedContentWarning base_url=draft.base_url/>
            <div class="actions">
                <button class="primary" data-testid="run" prop:disabled=running on:click=on_run>
                    "Run"
                </button>
                <button data-testid="cancel" prop:disabled=move || !running.get() on:click=move |_| run.cancel()>
                    "Cancel"
                </button>
                <span class="status" data-phase=move || run.view.with(|v| v.status())>
                    "Status: " <span data-testid="status">{move || run.view.with(|v| v.status())}</span>
                </span>
            </div>
            <ShareLink draft=draft base=base problems=run.problems/>
            <LocustExport draft=draft base=base problems=run.problems/>
            <ImportConfig apply=apply_import notes=import_notes error=import_error/>
            <Show when=move || run.problems.with(|p| !p.is_empty())>
                <ul class="problems" data-testid="plan-error">
                    {move || run.problems.get().into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}
                </ul>
            </Show>
        </section>
    }
}

/// Where requests will go, or why the base URL will not do.
#[component]
fn BaseUrlCheck(base_url: RwSignal<String>) -> impl IntoView {
    move || match normalize_base_url(&base_url.get()) {
        Ok((url, notes)) => {
            let endpoint = format!("{url}/chat/completions");
            if notes.is_empty() {
                view! {
                    <p class="field-note" data-testid="base-url-note">
                        "Requests go to " <code>{endpoint}</code>
                    </p>
                }
                .into_any()
            } else {
                view! {
                    <p class="field-note warn" data-testid="base-url-note">
                        {notes.join("; ")} ": requests go to " <code>{endpoint}</code>
                    </p>
                }
                .into_any()
            }
        }
        Err(problem) => view! {
            <p class="field-error" data-testid="base-url-error">{problem}</p>
        }
        .into_any(),
    }
}

/// The levels as read, or why they cannot be.
#[component]
fn LevelsCheck(levels: RwSignal<String>) -> impl IntoView {
    move || match parse_levels(&levels.get()) {
        Ok(levels) => view! {
            <p class="field-note" data-testid="levels-note">
                {format!("{} levels: ", levels.len())}
                {levels
                    .iter()
                    .map(|c| view! { <span class="level-chip">{*c}</span> })
                    .collect_view()}
            </p>
        }
        .into_any(),
        Err(problem) => view! {
            <p class="field-error" data-testid="levels-error">{problem}</p>
        }
        .into_any(),
    }
}

/// Over plain HTTP the browser speaks HTTP/1.1 and holds requests beyond six per
/// host (WebKitGTK does over HTTP/2 too): said before the run, from the URL, the
/// top level and this browser's engine.
#[component]
fn ConnectionWarning(draft: DraftSignals) -> impl IntoView {
    let engine = web_sys::window()
        .and_then(|w| w.navigator().user_agent().ok())
        .map_or(Engine::Unknown, |ua| Engine::from_user_agent(&ua));
    move || {
        let top = parse_levels(&draft.levels.get())
            .ok()
            .and_then(|l| l.last().copied())
            .unwrap_or(0);
        let plain = draft.base_url.with(|url| browser::is_plain_http(url));
        let queues = draft
            .base_url
            .with(|url| browser::will_queue(engine, url, top));
        let max = HTTP1_CONNECTIONS_PER_HOST;
        queues.then(|| {
            let text = if plain {
                format!(
                    "Concurrency {top} over http:// runs on HTTP/1.1, where the browser opens at most {max} connections per host and holds the other requests back: from concurrency {} on, part of the measured TTFT is the browser's own queue. Use an https:// endpoint (HTTP/2) to test higher concurrency.",
                    max + 1
                )
            } else {
                format!(
                    "This browser sends at most {max} requests at a time to one host, even over HTTP/2: from concurrency {} on, part of the measured TTFT is the browser's own queue. Use Chromium or Firefox to test higher concurrency.",
                    max + 1
                )
            };
            view! { <p class="callout warn" data-testid="connection-warning">{text}</p> }
        })
    }
}

/// An HTTPS page cannot call a plain-http endpoint (except on loopback).
#[component]
fn MixedContentWarning(base_url: RwSignal<String>) -> impl IntoView {
    let page_is_https = web_sys::window()
        .and_then(|w| w.location().protocol().ok())
        .is_some_and(|p| p == "https:");
    move || {
        base_url.with(|url| is_mixed_content(page_is_https, url)).then(|| {
            view! {
                <p class="callout warn" data-testid="mixed-content-warning">
                    "This page was loaded over HTTPS and the endpoint is http://: the browser will block every request (mixed content). Use an https:// endpoint, or open tokenmeter over http:// (e.g. cargo xtask serve)."
                </p>
            }
        })
    }
}
