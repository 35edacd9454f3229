//! The plan panel's advanced settings: endpoint kind, sampling, usage, auth style,
//! extra headers and body fields, a generated prompt length, the load mode, and the
//! SLO the verdict uses. Folded away by default; the defaults suit the simulator.

use leptos::prelude::*;
use serde_json::{Map, Value};
use tokenmeter_core::{
    plan::{AuthStyle, LoadMode, Plan, PromptSpec},
    stream::EndpointKind,
};

use crate::config::Field;

/// Header names that carry a key: they belong in the key field, which is never saved.
const KEY_HEADERS: [&str; 4] = [
    "authorization",
    "api-key",
    "x-api-key",
    "proxy-authorization",
];

/// The advanced fields, as typed.
#[derive(Clone, Copy)]
pub struct Advanced {
    pub endpoint: RwSignal<String>,
    pub temperature: RwSignal<String>,
    pub include_usage: RwSignal<bool>,
    pub auth: RwSignal<String>,
    pub extra_headers: RwSignal<String>,
    pub extra_body: RwSignal<String>,
    pub prompt_tokens: RwSignal<String>,
    pub load_mode: RwSignal<String>,
    pub rate_rps: RwSignal<String>,
    pub poisson: RwSignal<bool>,
    pub duration_s: RwSignal<String>,
    pub slo_ttft_ms: RwSignal<String>,
    pub slo_tpot_ms: RwSignal<String>,
}

fn opt(value: Option<f64>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

impl Advanced {
    pub fn new() -> Advanced {
        Advanced {
            endpoint: RwSignal::new("chat".into()),
            temperature: RwSignal::new(String::new()),
            include_usage: RwSignal::new(true),
            auth: RwSignal::new("bearer".into()),
            extra_headers: RwSignal::new(String::new()),
            extra_body: RwSignal::new(String::new()),
            prompt_tokens: RwSignal::new(String::new()),
            load_mode: RwSignal::new("ladder".into()),
            rate_rps: RwSignal::new("2".into()),
            poisson: RwSignal::new(true),
            duration_s: RwSignal::new("30".into()),
            slo_ttft_ms: RwSignal::new(String::new()),
            slo_tpot_ms: RwSignal::new(String::new()),
        }
    }

    pub fn fill(&self, plan: &Plan) {
        self.endpoint.set(
            match plan.endpoint {
                EndpointKind::Chat => "chat",
                EndpointKind::Completions => "completions",
            }
            .into(),
        );
        self.temperature.set(opt(plan.temperature));
        self.include_usage.set(plan.include_usage);
        self.auth.set(
            match plan.auth {
                AuthStyle::Bearer => "bearer",
                AuthStyle::ApiKeyHeader => "api_key_header",
            }
            .into(),
        );
        self.extra_headers.set(
            plan.extra_headers
                .iter()
                .map(|(name, value)| format!("{name}: {value}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        self.extra_body.set(if plan.extra_body.is_empty() {
            String::new()
        } else {
            serde_json::to_string_pretty(&plan.extra_body).unwrap_or_default()
        });
        self.prompt_tokens.set(match plan.prompt {
            PromptSpec::Tokens(n) => n.to_string(),
            PromptSpec::Text(_) => String::new(),
        });
        match &plan.load {
            LoadMode::Ladder { .. } => self.load_mode.set("ladder".into()),
            LoadMode::Arrivals {
                rate_rps, poisson, ..
            } => {
                self.load_mode.set("arrivals".into());
                self.rate_rps.set(rate_rps.to_string());
                self.poisson.set(*poisson);
            }
            LoadMode::Duration { seconds, .. } => {
                self.load_mode.set("duration".into());
                self.duration_s.set(seconds.to_string());
            }
        }
        self.slo_ttft_ms.set(opt(plan.slo.ttft_p95_ms));
        self.slo_tpot_ms.set(opt(plan.slo.tpot_p95_ms));
    }

    /// Applies the fields to `plan` (whose ladder fields the main form has set);
    /// every problem is pushed as a sentence.
    pub fn apply(&self, plan: &mut Plan, problems: &mut Vec<String>) {
        plan.endpoint = match self.endpoint.get_untracked().as_str() {
            "completions" => EndpointKind::Completions,
            _ => EndpointKind::Chat,
        };
        plan.temperature = match self.temperature.get_untracked().trim() {
            "" => None,
            text => match text.parse::<f64>() {
                Ok(t) if (0.0..=2.0).contains(&t) => Some(t),
                _ => {
                    problems.push("temperature must be a number from 0 to 2, or empty for the server's default".into());
                    None
                }
            },
        };
        plan.include_usage = self.include_usage.get_untracked();
        plan.auth = match self.auth.get_untracked().as_str() {
            "api_key_header" => AuthStyle::ApiKeyHeader,
            _ => AuthStyle::Bearer,
        };
        plan.extra_headers = Vec::new();
        for line in self.extra_headers.get_untracked().lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Some((name, value)) = line.split_once(':') else {
                problems.push(format!(
                    "extra header `{line}` needs the form `Name: value`"
                ));
                continue;
            };
            let name = name.trim();
            if KEY_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                problems.push(format!(
                    "put the key in the API key field (and pick how it is sent), not in the `{name}` header: extra headers are saved with the plan, the key never is"
                ));
                continue;
            }
            plan.extra_headers
                .push((name.to_owned(), value.trim().to_owned()));
        }
        plan.extra_body = Map::new();
        let body = self.extra_body.get_untracked();
        if !body.trim().is_empty() {
            match serde_json::from_str::<Value>(&body) {
                Ok(Value::Object(map)) => plan.extra_body = map,
                Ok(_) => problems
                    .push("extra body fields must be a JSON object, e.g. {\"top_p\": 0.9}".into()),
                Err(err) => problems.push(format!("extra body fields are not valid JSON: {err}")),
            }
        }
        match self.prompt_tokens.get_untracked().trim() {
            "" => {}
            text => match text.parse::<u32>() {
                Ok(n) if n > 0 => plan.prompt = PromptSpec::Tokens(n),
                _ => problems
                    .push("the generated prompt length must be a whole number of tokens".into()),
            },
        }
        let first_level = match &plan.load {
            LoadMode::Ladder { levels, .. } => levels.first().copied().unwrap_or(1),
            _ => 1,
        };
        let requests = match &plan.load {
            LoadMode::Ladder {
                requests_per_level, ..
            } => *requests_per_level,
            _ => 1,
        };
        match self.load_mode.get_untracked().as_str() {
            "arrivals" => match self.rate_rps.get_untracked().trim().parse::<f64>() {
                Ok(rate) if rate.is_finite() && rate > 0.0 => {
                    plan.load = LoadMode::Arrivals {
                        rate_rps: rate,
                        poisson: self.poisson.get_untracked(),
                        n_requests: requests,
                        seed: 1,
                    }
                }
                _ => problems.push(
                    "the arrival rate must be a number of requests per second above 0".into(),
                ),
            },
            "duration" => match self.duration_s.get_untracked().trim().parse::<f64>() {
                Ok(seconds) if seconds.is_finite() && seconds > 0.0 => {
                    plan.load = LoadMode::Duration {
                        concurrency: first_level,
                        seconds,
                    }
                }
                _ => problems.push("the duration must be a number of seconds above 0".into()),
            },
            _ => {}
        }
        let limit = |text: String, what: &str, problems: &mut Vec<String>| match text.trim() {
            "" => None,
            text => match text.parse::<f64>() {
                Ok(ms) if ms.is_finite() && ms > 0.0 => Some(ms),
                _ => {
                    problems.push(format!(
                        "the {what} limit must be a number of ms above 0, or empty for none"
                    ));
                    None
                }
            },
        };
        plan.slo.ttft_p95_ms = limit(self.slo_ttft_ms.get_untracked(), "p95 TTFT", problems);
        plan.slo.tpot_p95_ms = limit(self.slo_tpot_ms.get_untracked(), "p95 TPOT", problems);
    }
}

impl Default for Advanced {
    fn default() -> Self {
        Advanced::new()
    }
}

#[component]
pub fn AdvancedFields(advanced: Advanced, running: Signal<bool>) -> impl IntoView {
    let a = advanced;
    let select = move |label: &'static str,
                       testid: &'static str,
                       value: RwSignal<String>,
                       options: &'static [(&'static str, &'static str)]| {
        view! {
            <label class="field">
                <span class="field-label">{label}</span>
                <select
                    data-testid=testid
                    prop:value=value
                    prop:disabled=running
                    on:change=move |ev| value.set(event_target_value(&ev))
                >
                    {options
                        .iter()
                        .map(|(v, text)| view! { <option value=*v selected=move || value.get() == *v>{*text}</option> })
                        .collect_view()}
                </select>
            </label>
        }
    };
    let check = move |label: &'static str, testid: &'static str, value: RwSignal<bool>| {
        view! {
            <label class="check">
                <input
                    data-testid=testid
                    type="checkbox"
                    prop:checked=value
                    prop:disabled=running
                    on:change=move |ev| value.set(event_target_checked(&ev))
                />
                {label}
            </label>
        }
    };
    view! {
        <details class="advanced" data-testid="advanced">
            <summary>"Advanced: endpoint, auth, extra fields, load mode, SLO"</summary>
            <div class="field-row">
                {select("Endpoint", "endpoint", a.endpoint, &[("chat", "/chat/completions"), ("completions", "/completions")])}
                {select("Send the key as", "auth", a.auth, &[("bearer", "Authorization: Bearer"), ("api_key_header", "api-key header")])}
            </div>
            <div class="field-row">
                <Field label="Temperature" testid="temperature" value=a.temperature disabled=running />
                <Field label="Prompt of N tokens" testid="prompt-tokens" value=a.prompt_tokens disabled=running />
            </div>
            {check("Ask for usage (stream_options.include_usage); turn off for servers that reject it", "include-usage", a.include_usage)}
            <label class="field">
                <span class="field-label">"Extra headers"</span>
                <textarea
                    data-testid="extra-headers"
                    rows="2"
                    placeholder="X-Gateway-Route: east"
                    prop:value=a.extra_headers
                    prop:disabled=running
                    on:input=move |ev| a.extra_headers.set(event_target_value(&ev))
                ></textarea>
                <p class="field-note">"One `Name: value` per line. Saved with the plan, so never the key."</p>
            </label>
            <label class="field">
                <span class="field-label">"Extra body fields (JSON)"</span>
                <textarea
                    data-testid="extra-body"
                    rows="2"
                    placeholder="{\"top_p\": 0.9}"
                    prop:value=a.extra_body
                    prop:disabled=running
                    on:input=move |ev| a.extra_body.set(event_target_value(&ev))
                ></textarea>
            </label>
            {select("Load", "load-mode", a.load_mode, &[
                ("ladder", "concurrency ladder (closed loop)"),
                ("arrivals", "arrivals at a rate (open loop)"),
                ("duration", "first level for a fixed time"),
            ])}
            <Show when=move || a.load_mode.get() == "arrivals">
                <div class="field-row">
                    <Field label="Arrivals per second" testid="rate" value=a.rate_rps disabled=running hint="Requests per level is the number sent." />
                    {check("Poisson arrivals", "poisson", a.poisson)}
                </div>
            </Show>
            <Show when=move || a.load_mode.get() == "duration">
                <Field label="Duration (s)" testid="duration" value=a.duration_s disabled=running hint="At the first concurrency level." />
            </Show>
            <div class="field-row">
                <Field label="SLO: p95 TTFT ≤ ms" testid="slo-ttft" value=a.slo_ttft_ms disabled=running />
                <Field label="SLO: p95 TPOT ≤ ms" testid="slo-tpot" value=a.slo_tpot_ms disabled=running />
            </div>
        </details>
    }
}
