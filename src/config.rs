//! The plan panel: where the run's endpoint, key and ladder are entered and
//! checked, and where a run starts and is cancelled.
//!
//! The `data-testid` names here are a public interface (outside scripts drive the
//! page through them): see the README.

use leptos::prelude::*;
use tokenmeter_core::plan::{normalize_base_url, parse_levels, LoadMode, Plan, PromptSpec};

use crate::run::{Phase, RunHandle};

/// Browsers open at most this many HTTP/1.1 connections to one host.
pub const HTTP1_CONNECTIONS_PER_HOST: u32 = 6;

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
}

impl Form {
    fn from_plan(plan: &Plan) -> Form {
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
            _ => ("1".into(), "8".into()),
        };
        Form {
            base_url: RwSignal::new(plan.base_url.clone()),
            api_key: RwSignal::new(String::new()),
            model: RwSignal::new(plan.model.clone()),
            prompt: RwSignal::new(plan.prompt_text()),
            max_tokens: RwSignal::new(plan.max_tokens.to_string()),
            levels: RwSignal::new(levels),
            requests_per_level: RwSignal::new(requests),
            warmup: RwSignal::new(plan.warmup_requests.to_string()),
            timeout_s: RwSignal::new(format!("{}", plan.timeout_s)),
        }
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

/// A labelled text input bound to a signal.
#[component]
fn Field(
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

    let on_run = {
        let plan = plan.clone();
        move |_| match form.plan(&plan) {
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
                hint="Kept in this page's memory for the run; never stored, exported or put in a URL. The simulator needs none."
                disabled=running
            />
            <Field label="Model" testid="model" value=form.model disabled=running/>
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
            {connection_warning}
            <dl class="plan-facts">
                <dt>"SLO"</dt>
                <dd>
                    {format!(
                        "p95 TTFT ≤ {} ms, p95 TPOT ≤ {} ms",
                        plan.slo.ttft_p95_ms.map_or("–".into(), |v| v.to_string()),
                        plan.slo.tpot_p95_ms.map_or("–".into(), |v| v.to_string())
                    )}
                </dd>
            </dl>
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
            <Show when=move || !run.problems.get().is_empty()>
                <ul class="problems" data-testid="plan-error">
                    {move || run.problems.get().into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}
                </ul>
            </Show>
        </section>
    }
}
