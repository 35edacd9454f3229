//! The plan panel: where the run's endpoint, key and ladder are entered and
//! checked, and where a run starts and is cancelled.
//!
//! The `data-testid` names here are a public interface (outside scripts drive the
//! page through them): see the README.

use leptos::prelude::*;
use tokenmeter_core::plan::{
    import_config, is_mixed_content, normalize_base_url, parse_levels, LoadMode, Plan, PromptSpec,
};
use wasm_bindgen::{prelude::Closure, JsCast};

use crate::{
    advanced::{Advanced, AdvancedFields},
    run::{Phase, RunHandle},
};

use tokenmeter_core::browser::HTTP1_CONNECTIONS_PER_HOST;

/// The form's fields, as typed.
#[derive(Clone, Copy)]
struct Form {
    base_url: RwSignal<String>,
    api_key: RwSignal<String>,
    model: RwSignal<String>,
    prompt: RwSignal<String>,
    max_tokens: RwSignal<String>,
    levels: RwSignal<String>,
    requests_per_level: RwSignal<String>,
    warmup: RwSignal<String>,
    timeout_s: RwSignal<String>,
    advanced: Advanced,
}

impl Form {
    fn from_plan(plan: &Plan) -> Form {
        let form = Form {
            base_url: RwSignal::new(String::new()),
            api_key: RwSignal::new(String::new()),
            model: RwSignal::new(String::new()),
            prompt: RwSignal::new(String::new()),
            max_tokens: RwSignal::new(String::new()),
            levels: RwSignal::new(String::new()),
            requests_per_level: RwSignal::new(String::new()),
            warmup: RwSignal::new(String::new()),
            timeout_s: RwSignal::new(String::new()),
            advanced: Advanced::new(),
        };
        form.fill(plan);
        form
    }

    /// Puts a plan's values into the fields (the key field is left alone).
    fn fill(&self, plan: &Plan) {
        let (levels, requests) = match &plan.load {
            LoadMode::Ladder {
                levels,
                requests_per_level,
            } => (
                levels
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                requests_per_level.to_string(),
            ),
            LoadMode::Duration { concurrency, .. } => (concurrency.to_string(), "8".into()),
            LoadMode::Arrivals { n_requests, .. } => ("1".into(), n_requests.to_string()),
        };
        self.base_url.set(plan.base_url.clone());
        self.model.set(plan.model.clone());
        self.prompt.set(plan.prompt_text());
        self.max_tokens.set(plan.max_tokens.to_string());
        self.levels.set(levels);
        self.requests_per_level.set(requests);
        self.warmup.set(plan.warmup_requests.to_string());
        self.timeout_s.set(format!("{}", plan.timeout_s));
        self.advanced.fill(plan);
    }

    /// The plan the form describes, on top of `base`; every problem as a sentence.
    fn plan(&self, base: &Plan) -> Result<Plan, Vec<String>> {
        let mut problems = Vec::new();
        let mut plan = base.clone();
        match normalize_base_url(&self.base_url.get_untracked()) {
            Ok((url, _)) => plan.base_url = url,
            Err(problem) => problems.push(problem),
        }
        plan.model = self.model.get_untracked().trim().to_owned();
        plan.prompt = PromptSpec::Text(self.prompt.get_untracked());
        match self.max_tokens.get_untracked().trim().parse::<u32>() {
            Ok(n) if n > 0 => plan.max_tokens = n,
            _ => problems.push("max_tokens must be a whole number above 0".into()),
        }
        let requests = self
            .requests_per_level
            .get_untracked()
            .trim()
            .parse::<u32>();
        if !matches!(requests, Ok(n) if n > 0) {
            problems.push("requests per level must be a whole number above 0".into());
        }
        match (parse_levels(&self.levels.get_untracked()), requests) {
            (Ok(levels), Ok(requests_per_level)) => {
                plan.load = LoadMode::Ladder {
                    levels,
                    requests_per_level,
                }
            }
            (Err(problem), _) => problems.push(problem),
            _ => {}
        }
        match self.warmup.get_untracked().trim().parse::<u32>() {
            Ok(n) => plan.warmup_requests = n,
            Err(_) => problems.push("warm-up requests must be a whole number (0 for none)".into()),
        }
        match self.timeout_s.get_untracked().trim().parse::<f64>() {
            Ok(t) if t.is_finite() && t > 0.0 => plan.timeout_s = t,
            _ => problems.push("the timeout must be a number of seconds above 0".into()),
        }
        self.advanced.apply(&mut plan, &mut problems);
        if let Err(more) = plan.validate() {
            for problem in more {
                if !problems.contains(&problem) {
                    problems.push(problem);
                }
            }
        }
        if problems.is_empty() {
            Ok(plan)
        } else {
            Err(problems)
        }
    }
}

/// A labelled text input bound to a signal (the plan panel's and the advanced
/// settings' fields).
#[component]
pub(crate) fn Field(
    label: &'static str,
    testid: &'static str,
    value: RwSignal<String>,
    #[prop(default = "text")] kind: &'static str,
    #[prop(optional)] hint: Option<&'static str>,
    #[prop(optional)] disabled: Option<Signal<bool>>,
) -> impl IntoView {
    view! {
        <label class="field">
            <span class="field-label">{label}</span>
            <input
                data-testid=testid
                type=kind
                spellcheck="false"
                autocomplete="off"
                prop:value=value
                prop:disabled=move || disabled.is_some_and(|d| d.get())
                on:input=move |ev| value.set(event_target_value(&ev))
            />
            {hint.map(|hint| view! { <p class="field-note">{hint}</p> })}
        </label>
    }
}

#[component]
pub fn ConfigPanel(plan: Plan, run: RunHandle) -> impl IntoView {
    let form = Form::from_plan(&plan);
    // The plan behind the form: what the form does not show (SLO, analysis, extra
    // fields) comes from here, and an import or a shared link replaces it.
    let base = StoredValue::new(plan.clone());
    let import_notes = RwSignal::new(Vec::<String>::new());
    let import_error = RwSignal::new(None::<String>);
    let apply_import = move |json: &str| match import_config(json) {
        Ok(imported) => {
            form.fill(&imported.plan);
            base.set_value(imported.plan);
            let mut notes = imported.notes;
            if let Some(key) = imported.api_key {
                form.api_key.set(key);
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
    };
    if let Some(json) = plan_from_location() {
        apply_import(&json);
    }
    let import_text = RwSignal::new(String::new());
    // The key is stored only when the user asks, and forgotten when they untick.
    let remember_key = RwSignal::new(false);
    if let Some(key) = stored_key() {
        form.api_key.set(key);
        remember_key.set(true);
    }
    Effect::new(move |_| store_key(remember_key.get().then(|| form.api_key.get())));
    let models = RwSignal::new(Vec::<String>::new());
    let models_note = RwSignal::new(None::<(bool, String)>);
    let on_load_models = move |_| {
        let plan = match form.plan(&base.get_value()) {
            Ok(plan) => plan,
            Err(_) => {
                let mut plan = base.get_value();
                match normalize_base_url(&form.base_url.get_untracked()) {
                    Ok((url, _)) => plan.base_url = url,
                    Err(problem) => {
                        models_note.set(Some((false, problem)));
                        return;
                    }
                }
                plan
            }
        };
        let key = form.api_key.get_untracked();
        models_note.set(Some((true, "asking the server…".into())));
        leptos::task::spawn_local(async move {
            match crate::models::list(&plan, Some(key.as_str()).filter(|k| !k.trim().is_empty()))
                .await
            {
                Ok(ids) if ids.is_empty() => {
                    models_note.set(Some((false, "the server lists no models".into())))
                }
                Ok(ids) => {
                    models_note.set(Some((
                        true,
                        format!("models on the server: {}", ids.join(", ")),
                    )));
                    if !ids.contains(&form.model.get_untracked()) {
                        form.model.set(ids[0].clone());
                    }
                    models.set(ids);
                }
                Err(problem) => models_note.set(Some((false, problem))),
            }
        });
    };
    let share_url = RwSignal::new(None::<String>);
    let on_share = move |_| match form.plan(&base.get_value()) {
        Ok(plan) => {
            let url = share_link(&plan);
            share_url.set(Some(url.clone()));
            // Also into the clipboard, where the browser allows it.
            if let Some(window) = web_sys::window() {
                let copied = window.navigator().clipboard().write_text(&url);
                // A refusal (no permission, no focus) is fine: the link is shown too.
                leptos::task::spawn_local(async move {
                    let _ = wasm_bindgen_futures::JsFuture::from(copied).await;
                });
            }
        }
        Err(problems) => run.problems.set(problems),
    };
    let running = Signal::derive(move || run.phase.get() == Phase::Running);

    let base_url_check = move || {
        match normalize_base_url(&form.base_url.get()) {
        Ok((url, notes)) if notes.is_empty() => view! {
            <p class="field-note" data-testid="base-url-note">
                "Requests go to " <code>{format!("{url}/chat/completions")}</code>
            </p>
        }
        .into_any(),
        Ok((url, notes)) => view! {
            <p class="field-note warn" data-testid="base-url-note">
                {notes.join("; ")} ": requests go to " <code>{format!("{url}/chat/completions")}</code>
            </p>
        }
        .into_any(),
        Err(problem) => view! {
            <p class="field-error" data-testid="base-url-error">{problem}</p>
        }
        .into_any(),
    }
    };
    let levels_check = move || match parse_levels(&form.levels.get()) {
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
    };
    // Over plain HTTP the browser speaks HTTP/1.1 and holds requests beyond six per host.
    let connection_warning = move || {
        let plain_http = form
            .base_url
            .get()
            .trim()
            .to_ascii_lowercase()
            .starts_with("http://");
        let top = parse_levels(&form.levels.get())
            .ok()
            .and_then(|l| l.last().copied())
            .unwrap_or(0);
        (plain_http && top > HTTP1_CONNECTIONS_PER_HOST).then(|| {
            view! {
                <p class="callout warn" data-testid="connection-warning">
                    {format!(
                        "Concurrency {top} over http:// runs on HTTP/1.1, where the browser opens at most {HTTP1_CONNECTIONS_PER_HOST} connections per host and holds the other requests back: from concurrency {} on, part of the measured TTFT is the browser's own queue. Use an https:// endpoint (HTTP/2) to test higher concurrency.",
                        HTTP1_CONNECTIONS_PER_HOST + 1
                    )}
                </p>
            }
        })
    };

    let mixed_content_warning = move || {
        let page_is_https = web_sys::window()
            .and_then(|w| w.location().protocol().ok())
            .is_some_and(|p| p == "https:");
        is_mixed_content(page_is_https, &form.base_url.get()).then(|| {
            view! {
                <p class="callout warn" data-testid="mixed-content-warning">
                    "This page was loaded over HTTPS and the endpoint is http://: the browser will block every request (mixed content). Use an https:// endpoint, or open tokenmeter over http:// (e.g. cargo xtask serve)."
                </p>
            }
        })
    };
    let on_run = {
        move |_| match form.plan(&base.get_value()) {
            Ok(plan) => {
                let key = form.api_key.get_untracked();
                run.start(plan, (!key.trim().is_empty()).then_some(key));
            }
            Err(problems) => run.problems.set(problems),
        }
    };

    view! {
        <section class="panel config" data-testid="config-panel" aria-labelledby="config-title">
            <h2 id="config-title">"Plan"</h2>
            <label class="field">
                <span class="field-label">"Base URL"</span>
                <input
                    data-testid="base-url"
                    type="url"
                    spellcheck="false"
                    prop:value=form.base_url
                    prop:disabled=running
                    on:input=move |ev| form.base_url.set(event_target_value(&ev))
                />
                {base_url_check}
            </label>
            <Field
                label="API key"
                testid="api-key"
                value=form.api_key
                kind="password"
                hint="Kept in this page's memory; never exported or put in a URL, and stored only if you tick the box. The simulator needs none."
                disabled=running
            />
            <label class="check">
                <input
                    data-testid="remember-key"
                    type="checkbox"
                    prop:checked=remember_key
                    on:change=move |ev| remember_key.set(event_target_checked(&ev))
                />
                "Remember the key on this device (in this browser's local storage)"
            </label>
            <label class="field">
                <span class="field-label">"Model"</span>
                <div class="field-inline">
                    <input
                        data-testid="model"
                        type="text"
                        spellcheck="false"
                        list="model-list"
                        prop:value=form.model
                        prop:disabled=running
                        on:input=move |ev| form.model.set(event_target_value(&ev))
                    />
                    <button data-testid="load-models" prop:disabled=running on:click=on_load_models>
                        "Load models"
                    </button>
                </div>
                <datalist id="model-list">
                    {move || models.get().into_iter().map(|id| view! { <option value=id></option> }).collect_view()}
                </datalist>
                {move || models_note.get().map(|(ok, note)| view! {
                    <p class=if ok { "field-note" } else { "field-error" } data-testid="models-note">{note}</p>
                })}
            </label>
            <label class="field">
                <span class="field-label">"Prompt"</span>
                <textarea
                    data-testid="prompt"
                    rows="2"
                    prop:value=form.prompt
                    prop:disabled=running
                    on:input=move |ev| form.prompt.set(event_target_value(&ev))
                ></textarea>
            </label>
            <div class="field-row">
                <Field label="max_tokens" testid="max-tokens" value=form.max_tokens kind="number" disabled=running/>
                <Field label="Timeout (s)" testid="timeout" value=form.timeout_s kind="number" disabled=running/>
            </div>
            <label class="field">
                <span class="field-label">"Concurrency levels"</span>
                <input
                    data-testid="levels"
                    type="text"
                    inputmode="numeric"
                    prop:value=form.levels
                    prop:disabled=running
                    on:input=move |ev| form.levels.set(event_target_value(&ev))
                />
                {levels_check}
            </label>
            <div class="field-row">
                <Field
                    label="Requests per level"
                    testid="requests-per-level"
                    value=form.requests_per_level
                    kind="number"
                    disabled=running
                />
                <Field
                    label="Warm-up requests"
                    testid="warmup"
                    value=form.warmup
                    kind="number"
                    disabled=running
                />
            </div>
            <AdvancedFields advanced=form.advanced running=running/>
            {connection_warning}
            {mixed_content_warning}
            <div class="actions">
                <button
                    class="primary"
                    data-testid="run"
                    prop:disabled=running
                    on:click=on_run
                >
                    "Run"
                </button>
                <button data-testid="cancel" prop:disabled=move || !running.get() on:click=move |_| run.cancel()>
                    "Cancel"
                </button>
                <span class="status" data-phase=move || run.phase.get().as_str()>
                    "Status: " <span data-testid="status">{move || run.phase.get().as_str()}</span>
                </span>
            </div>
            <div class="share">
                <button data-testid="share-link" on:click=on_share>"Link to this plan"</button>
                {move || share_url.get().map(|url| view! {
                    <input class="share-url" data-testid="share-url" readonly prop:value=url/>
                    <p class="field-note">"The link holds the plan, never the key."</p>
                })}
            </div>
            <details class="import" data-testid="import">
                <summary>"Import a config.json"</summary>
                <p class="field-note">
                    "The reference article's config.json, or a plan saved by tokenmeter. A key in the file goes to the key field, in memory only."
                </p>
                <input
                    type="file"
                    accept="application/json,.json"
                    data-testid="import-file"
                    on:change=move |ev| read_file(ev, apply_import)
                />
                <textarea
                    data-testid="import-text"
                    rows="4"
                    placeholder="…or paste it here"
                    prop:value=import_text
                    on:input=move |ev| import_text.set(event_target_value(&ev))
                ></textarea>
                <button data-testid="import-apply" on:click=move |_| apply_import(&import_text.get_untracked())>
                    "Import"
                </button>
                {move || import_error.get().map(|e| view! { <p class="field-error" data-testid="import-error">{e}</p> })}
                {move || (!import_notes.get().is_empty()).then(|| view! {
                    <p class="field-note" data-testid="import-note">{import_notes.get().join("; ")}</p>
                })}
            </details>
            <Show when=move || !run.problems.get().is_empty()>
                <ul class="problems" data-testid="plan-error">
                    {move || run.problems.get().into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}
                </ul>
            </Show>
        </section>
    }
}

/// The fragment that carries a shared plan: `#plan=<URI-encoded JSON>`. A fragment
/// never reaches a server, and the plan never holds the key.
const PLAN_FRAGMENT: &str = "#plan=";

/// A link to this page that opens with `plan` in the form.
fn share_link(plan: &Plan) -> String {
    let json = serde_json::to_string(plan).expect("a plan serialises");
    let encoded = String::from(js_sys::encode_uri_component(&json));
    let page = web_sys::window()
        .and_then(|w| w.location().href().ok())
        .map(|href| href.split('#').next().unwrap_or_default().to_owned())
        .unwrap_or_default();
    format!("{page}{PLAN_FRAGMENT}{encoded}")
}

/// The plan JSON of a shared link this page was opened with.
fn plan_from_location() -> Option<String> {
    let hash = web_sys::window()?.location().hash().ok()?;
    let encoded = hash.strip_prefix(PLAN_FRAGMENT)?;
    js_sys::decode_uri_component(encoded).ok().map(String::from)
}

/// Reads the file chosen in a file input and hands its text to `apply`.
fn read_file(event: leptos::ev::Event, apply: impl Fn(&str) + Copy + 'static) {
    let Some(input) = event
        .target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
    else {
        return;
    };
    let Some(file) = input.files().and_then(|files| files.get(0)) else {
        return;
    };
    let Ok(reader) = web_sys::FileReader::new() else {
        return;
    };
    let on_load = Closure::once({
        let reader = reader.clone();
        move || {
            if let Some(text) = reader.result().ok().and_then(|r| r.as_string()) {
                apply(&text);
            }
        }
    });
    reader.set_onload(Some(on_load.as_ref().unchecked_ref()));
    // The closure must outlive this call; it runs once, when the file is read.
    on_load.forget();
    let _ = reader.read_as_text(&file);
}

/// Where a remembered key lives: this browser's local storage, for this origin.
const KEY_STORAGE: &str = "tokenmeter.api_key";

fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

fn stored_key() -> Option<String> {
    local_storage()?.get_item(KEY_STORAGE).ok().flatten()
}

/// Stores the key, or removes it with `None`.
fn store_key(key: Option<String>) {
    let Some(storage) = local_storage() else {
        return;
    };
    let _ = match key {
        Some(key) => storage.set_item(KEY_STORAGE, &key),
        None => storage.remove_item(KEY_STORAGE),
    };
}
