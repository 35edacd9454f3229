//! The plan panel: where the run's endpoint, key and ladder are entered and
//! checked, and where a run starts and is cancelled.
//!
//! - this module: [`ConfigPanel`], the fields' checks and warnings, Run and Cancel;
//! - [`draft`]: the fields as signals (the checking is `tokenmeter_core::draft`'s);
//! - [`advanced`]: the folded advanced settings;
//! - [`key`]: the key field and the remembered-key hook;
//! - [`provider`]: the provider chooser, which fills the endpoint's fields;
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
mod prompt_file;
mod provider;
mod share;
mod targets;

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    import_config, is_mixed_content, is_plain_http, normalize_base_url, parse_levels, said,
    schema::{Engine, Lang, Plan, PromptMode, Said},
    will_queue, Imported, PlanDraft, Prompts, HTTP1_CONNECTIONS_PER_HOST,
};

use self::{
    advanced::AdvancedFields, draft::DraftSignals, import::ImportConfig, key::KeyField,
    locust::LocustExport, model::ModelField, prompt_file::PromptFileField, provider::ProviderField,
    share::ShareLink, targets::Targets,
};
use crate::{
    language::{self, w, words, Words},
    run::RunController,
    widgets::{Field, Select, TextArea},
};

/// What each request sends, with the codes scripts select by (`data-testid`
/// interface: `prompt-mode`).
const PROMPT_MODES: &[(PromptMode, &str, Words)] = &[
    (
        PromptMode::Unique,
        "unique",
        w(
            "each request its own (a short header of its own in front)",
            "每个请求各不相同（前面加一段各自的短标头）",
        ),
    ),
    (
        PromptMode::SharedPrefix,
        "shared_prefix",
        w(
            "a shared prefix, then each request's own (measures what a cached prefix buys)",
            "共享前缀，后接各请求自己的部分（测量前缀缓存带来的收益）",
        ),
    ),
    (
        PromptMode::Same,
        "same",
        w(
            "the same for every request (measures a cache hit)",
            "所有请求相同（测到的是缓存命中）",
        ),
    ),
    (
        PromptMode::File,
        "file",
        w(
            "from a file: your own prompts, sent as written",
            "来自文件：你自己的提示词，原样发送",
        ),
    ),
];

split_off! { plans:
    /// The article's `config.json`, a plan file or a shared link's plan, read: a
    /// split build fetches the readers (the plan's every field) when the first is
    /// opened, so a first visit without a link does without them.
    fn read_config(json: String) -> Result<Imported, Said> {
        import_config(&json)
    }
}

#[component]
// Long: the plan panel's layout and its Run handler; its parts are components already.
pub fn ConfigPanel(plan: Plan, run: RunController) -> impl IntoView {
    let draft = DraftSignals::new(PlanDraft::from_plan(&plan));
    let key = RwSignal::new(String::new());
    // A prompt file's prompts, in this page's memory only.
    let prompts = RwSignal::new(None::<Arc<Prompts>>);
    // The plan behind the form: what the form does not show (the E2E limit, the
    // analysis parameters) comes from here, and an import or a shared link replaces it.
    let base = StoredValue::new(plan);
    let import_notes = RwSignal::new(Vec::<Said>::new());
    let import_error = RwSignal::new(None::<Said>);
    let lang = language::current();
    // A configuration read and put in the form; whether it was.
    let apply = move |json: String| async move {
        let problem = match read_config(json).await {
            Ok(Ok(imported)) => {
                draft.fill(&imported.plan);
                base.set_value(imported.plan);
                let mut notes = imported.notes;
                if let Some(api_key) = imported.api_key {
                    key.set(api_key);
                    notes.push(said!(
                        "the file's api_key is in the key field, in this page's memory only",
                        "文件中的 api_key 已填入密钥栏，只保存在本页内存中",
                    ));
                }
                import_notes.set(notes);
                import_error.set(None);
                return true;
            }
            Ok(Err(problem)) => problem,
            Err(missing) => missing.said(),
        };
        import_notes.set(Vec::new());
        import_error.set(Some(problem));
        false
    };
    let apply_import = Callback::new(move |json: String| {
        leptos::task::spawn_local(async move {
            apply(json).await;
        });
    });
    // A shared link's plan is read as the page opens (its readers fetched first):
    // `data-plan-link` says when it is in the form, for scripts that open links.
    let plan_link = RwSignal::new(None::<&'static str>);
    if let Some(json) = share::plan_from_location() {
        plan_link.set(Some("reading"));
        leptos::task::spawn_local(async move {
            let read = apply(json).await;
            plan_link.set(Some(if read { "read" } else { "refused" }));
        });
    }
    // After the link: a remembered key fills the field, bound to its own endpoint.
    let key_state = key::use_remembered_key(key, draft.base_url);
    let running = Signal::derive(move || run.is_running());
    let on_run = move |_| match draft.plan(&base.get_value()) {
        Ok(plan) => {
            // A file's prompts go beside the plan: those of the file it names.
            let prompts = match (plan.prompt_mode, &plan.prompt_file) {
                (PromptMode::File, Some(file)) => {
                    let loaded = prompts.get_untracked();
                    if !prompt_file::are_the_plans(loaded.as_ref(), Some(file)) {
                        run.problems
                            .set(vec![tokenmeter_core::missing_prompt_file(file)]);
                        return;
                    }
                    loaded
                }
                _ => None,
            };
            match key_state.key_for(&plan.base_url) {
                Ok(key) => {
                    let target_keys = draft
                        .targets
                        .with_untracked(|rows| rows.iter().map(|r| r.key()).collect());
                    run.start(plan, key, target_keys, prompts)
                }
                Err(why) => run.problems.set(vec![why]),
            }
        }
        Err(problems) => run.problems.set(problems),
    };

    view! {
        <section class="panel config" data-testid="config-panel" data-plan-link=move || plan_link.get() aria-labelledby="config-title">
            <h2 id="config-title">{words(w("Plan", "测试计划"))}</h2>
            <ProviderField draft=draft running=running/>
            <Field label=w("Base URL", "接口地址（Base URL）") testid="base-url" value=draft.base_url kind="url" disabled=running>
                <BaseUrlCheck base_url=draft.base_url/>
            </Field>
            <KeyField state=key_state running=running/>
            <ModelField draft=draft key=key_state base=base running=running/>
            <Targets draft=draft running=running/>
            <TextArea label=w("Prompt", "提示词") testid="prompt" value=draft.prompt disabled=running/>
            <Select label=w("Prompts", "各请求的提示词") testid="prompt-mode" value=draft.prompt_mode options=PROMPT_MODES disabled=running/>
            <Show when=move || draft.prompt_mode.get() == PromptMode::SharedPrefix>
                <div class="field-row">
                    <Field label=w("Shared prefix (tokens)", "共享前缀（token 数）") testid="prefix-tokens" value=draft.prefix_tokens kind="number" disabled=running/>
                    <Field
                        label=w("Prefix groups", "前缀分组数")
                        testid="prefix-groups"
                        value=draft.prefix_groups
                        kind="number"
                        disabled=running
                        hint=w("Request n shares its group's prefix (n mod groups); 1: all share one.", "第 n 个请求使用其所在组的前缀（n mod 组数）；1 表示全部共用一个。")
                    />
                </div>
            </Show>
            <Show when=move || draft.prompt_mode.get() == PromptMode::File>
                <PromptFileField draft=draft prompts=prompts running=running/>
            </Show>
            <Show when=move || draft.prompt_mode.get() == PromptMode::Same>
                <p class="callout warn" data-testid="prompt-mode-warning">
                    {words(w(
                        "Every request sends the same prompt: a server with a prompt cache (vLLM, SGLang, llama.cpp and hosted APIs keep one by default) answers all but the first from it, so TTFT measures a cache hit, not the prefill your users' own prompts pay.",
                        "每个请求都发送同一个提示词：带提示词缓存的服务（vLLM、SGLang、llama.cpp 和托管 API 默认都有）除第一个请求外都从缓存作答，于是 TTFT 测到的是缓存命中，而不是用户各自的提示词要付出的预填充（prefill）时间。",
                    ))}
                </p>
            </Show>
            <div class="field-row">
                <Field label=w("max_tokens", "max_tokens（最大输出）") testid="max-tokens" value=draft.max_tokens kind="number" disabled=running/>
                <Field label=w("Timeout (s)", "超时（秒）") testid="timeout" value=draft.timeout_s kind="number" disabled=running/>
            </div>
            <Field label=w("Concurrency levels", "并发阶梯") testid="levels" value=draft.levels disabled=running>
                <LevelsCheck levels=draft.levels/>
            </Field>
            <div class="field-row">
                <Field label=w("Requests per level", "每档请求数") testid="requests-per-level" value=draft.requests_per_level kind="number" disabled=running/>
                <Field label=w("Warm-up requests", "预热请求数") testid="warmup" value=draft.warmup kind="number" disabled=running/>
            </div>
            <AdvancedFields draft=draft running=running/>
            <ConnectionWarning draft=draft/>
            <MixedContentWarning base_url=draft.base_url/>
            <div class="actions">
                <button class="primary" data-testid="run" prop:disabled=running on:click=on_run>
                    {words(w("Run", "开始测试"))}
                </button>
                <button data-testid="cancel" prop:disabled=move || !running.get() on:click=move |_| run.cancel()>
                    {words(w("Cancel", "取消"))}
                </button>
                <span class="status" data-phase=move || run.view.with(|v| v.status())>
                    {words(w("Status: ", "状态："))} <span data-testid="status">{move || run.view.with(|v| v.status())}</span>
                </span>
            </div>
            <ShareLink draft=draft base=base problems=run.problems/>
            <LocustExport draft=draft base=base prompts=prompts problems=run.problems/>
            <ImportConfig apply=apply_import notes=import_notes error=import_error/>
            <Show when=move || run.problems.with(|p| !p.is_empty())>
                <ul class="problems" data-testid="plan-error">
                    {move || run.problems.get().into_iter().map(|p| view! { <li>{p.text(lang.get()).to_owned()}</li> }).collect_view()}
                </ul>
            </Show>
        </section>
    }
}

/// Where requests will go, or why the base URL will not do.
#[component]
fn BaseUrlCheck(base_url: RwSignal<String>) -> impl IntoView {
    let lang = language::current();
    let goes_to = words(w("Requests go to ", "请求发往 "));
    let then_goes_to = words(w(": requests go to ", "：请求发往 "));
    move || {
        match normalize_base_url(&base_url.get()) {
        Ok((url, notes)) => {
            let endpoint = format!("{url}/chat/completions");
            if notes.is_empty() {
                view! {
                    <p class="field-note" data-testid="base-url-note">
                        {goes_to} <code>{endpoint}</code>
                    </p>
                }
                .into_any()
            } else {
                view! {
                    <p class="field-note warn" data-testid="base-url-note">
                        {notes.iter().map(|n| n.text(lang.get())).collect::<Vec<_>>().join("; ")} {then_goes_to} <code>{endpoint}</code>
                    </p>
                }
                .into_any()
            }
        }
        Err(problem) => view! {
            <p class="field-error" data-testid="base-url-error">{problem.text(lang.get()).to_owned()}</p>
        }
        .into_any(),
    }
    }
}

/// The levels as read, or why they cannot be.
#[component]
fn LevelsCheck(levels: RwSignal<String>) -> impl IntoView {
    let lang = language::current();
    move || {
        match parse_levels(&levels.get()) {
        Ok(levels) => view! {
            <p class="field-note" data-testid="levels-note">
                {match lang.get() {
                    Lang::En => format!("{} levels: ", levels.len()),
                    Lang::Zh => format!("{} 档：", levels.len()),
                }}
                {levels
                    .iter()
                    .map(|c| view! { <span class="level-chip">{*c}</span> })
                    .collect_view()}
            </p>
        }
        .into_any(),
        Err(problem) => view! {
            <p class="field-error" data-testid="levels-error">{problem.text(lang.get()).to_owned()}</p>
        }
        .into_any(),
    }
    }
}

/// Over plain HTTP the browser speaks HTTP/1.1 and holds requests beyond six per
/// host (WebKitGTK does over HTTP/2 too): said before the run, from the URL, the
/// top level and this browser's engine.
#[component]
fn ConnectionWarning(draft: DraftSignals) -> impl IntoView {
    let lang = language::current();
    let engine = web_sys::window()
        .and_then(|w| w.navigator().user_agent().ok())
        .map_or(Engine::Unknown, |ua| Engine::from_user_agent(&ua));
    move || {
        let top = parse_levels(&draft.levels.get())
            .ok()
            .and_then(|l| l.last().copied())
            .unwrap_or(0);
        let plain = draft.base_url.with(|url| is_plain_http(url));
        let queues = draft.base_url.with(|url| will_queue(engine, url, top));
        let max = HTTP1_CONNECTIONS_PER_HOST;
        queues.then(|| {
            let next = max + 1;
            let text = match (plain, lang.get()) {
                (true, Lang::En) => format!(
                    "Concurrency {top} over http:// runs on HTTP/1.1, where the browser opens at most {max} connections per host and holds the other requests back: from concurrency {next} on, part of the measured TTFT is the browser's own queue. Use an https:// endpoint (HTTP/2) to test higher concurrency."
                ),
                (true, Lang::Zh) => format!(
                    "并发 {top} 走 http:// 时使用 HTTP/1.1，浏览器对每个主机最多开 {max} 个连接，其余请求在浏览器里排队：从并发 {next} 起，测到的 TTFT 有一部分是浏览器自己的排队。要测更高并发，请使用 https:// 接口（HTTP/2）。"
                ),
                (false, Lang::En) => format!(
                    "This browser sends at most {max} requests at a time to one host, even over HTTP/2: from concurrency {next} on, part of the measured TTFT is the browser's own queue. Use Chromium or Firefox to test higher concurrency."
                ),
                (false, Lang::Zh) => format!(
                    "这个浏览器即使走 HTTP/2 也最多同时向一个主机发 {max} 个请求：从并发 {next} 起，测到的 TTFT 有一部分是浏览器自己的排队。要测更高并发，请使用 Chromium 或 Firefox。"
                ),
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
                    {words(w(
                        "This page was loaded over HTTPS and the endpoint is http://: the browser will block every request (mixed content). Use an https:// endpoint, or open tokenmeter over http:// (e.g. cargo xtask serve).",
                        "本页通过 HTTPS 打开，而接口是 http://：浏览器会拦截所有请求（混合内容）。请使用 https:// 接口，或通过 http:// 打开 tokenmeter（例如 cargo xtask serve）。",
                    ))}
                </p>
            }
        })
    }
}
