//! The plan panel's advanced settings: endpoint kind, sampling, usage, auth style,
//! extra headers and body fields, a generated prompt length, the load mode, and the
//! SLO the verdict uses. Folded away by default; the defaults suit the simulator.

use leptos::prelude::*;
use tokenmeter_core::{draft::LoadKind, plan::AuthStyle, stream::EndpointKind};

use super::draft::DraftSignals;
use crate::widgets::{Check, Field, Select, TextArea};

/// The choices, with the codes scripts select by (`data-testid` interface).
const ENDPOINTS: &[(EndpointKind, &str, &str)] = &[
    (EndpointKind::Chat, "chat", "/chat/completions"),
    (EndpointKind::Completions, "completions", "/completions"),
];
const AUTH_STYLES: &[(AuthStyle, &str, &str)] = &[
    (AuthStyle::Bearer, "bearer", "Authorization: Bearer"),
    (AuthStyle::ApiKeyHeader, "api_key_header", "api-key header"),
];
const LOAD_KINDS: &[(LoadKind, &str, &str)] = &[
    (
        LoadKind::Ladder,
        "ladder",
        "concurrency ladder (closed loop)",
    ),
    (
        LoadKind::Arrivals,
        "arrivals",
        "arrivals at a rate (open loop)",
    ),
    (
        LoadKind::Duration,
        "duration",
        "first level for a fixed time",
    ),
    (
        LoadKind::SloSearch,
        "slo_search",
        "highest concurrency within the SLO (search)",
    ),
];

#[component]
pub fn AdvancedFields(draft: DraftSignals, running: Signal<bool>) -> impl IntoView {
    let d = draft;
    view! {
        <details class="advanced" data-testid="advanced">
            <summary>"Advanced: endpoint, auth, extra fields, load mode, SLO"</summary>
            <div class="field-row">
                <Select label="Endpoint" testid="endpoint" value=d.endpoint options=ENDPOINTS disabled=running/>
                <Select label="Send the key as" testid="auth" value=d.auth options=AUTH_STYLES disabled=running/>
            </div>
            <div class="field-row">
                <Field label="Temperature" testid="temperature" value=d.temperature disabled=running/>
                <Field label="Prompt of N tokens" testid="prompt-tokens" value=d.prompt_tokens disabled=running/>
            </div>
            <Check
                label="Ask for usage (stream_options.include_usage); turn off for servers that reject it"
                testid="include-usage"
                value=d.include_usage
                disabled=running
            />
            <TextArea
                label="Extra headers"
                testid="extra-headers"
                value=d.extra_headers
                placeholder="X-Gateway-Route: east"
                hint="One `Name: value` per line. Saved with the plan, so never the key."
                disabled=running
            />
            <TextArea
                label="Extra body fields (JSON)"
                testid="extra-body"
                value=d.extra_body
                placeholder="{\"top_p\": 0.9}"
                disabled=running
            />
            <Select label="Load" testid="load-mode" value=d.load options=LOAD_KINDS disabled=running/>
            <Show when=move || d.load.get() == LoadKind::Arrivals>
                <div class="field-row">
                    <Field label="Arrivals per second" testid="rate" value=d.rate_rps disabled=running hint="Requests per level is the number sent."/>
                    <Check label="Poisson arrivals" testid="poisson" value=d.poisson disabled=running/>
                </div>
            </Show>
            <Show when=move || d.load.get() == LoadKind::Duration>
                <Field label="Duration (s)" testid="duration" value=d.duration_s disabled=running hint="At the first concurrency level."/>
            </Show>
            <Show when=move || d.load.get() == LoadKind::Ladder>
                <Field
                    label="Repeat the ladder (passes)"
                    testid="repeat"
                    value=d.repeat
                    disabled=running
                    hint="Runs every level, then all again: each level pools its passes, and the spread between them (the noise) is shown, and used by the knee and comparisons."
                />
            </Show>
            <Show when=move || d.load.get() == LoadKind::SloSearch>
                <Field
                    label="Search up to concurrency"
                    testid="search-max"
                    value=d.search_max
                    disabled=running
                    hint="Probes from 1, doubling, then halving the gap, each of requests-per-level requests (at least two waves): the answer is the highest concurrency within the SLO below."
                />
            </Show>
            <div class="field-row">
                <Field label="SLO: p95 TTFT ≤ ms" testid="slo-ttft" value=d.slo_ttft_ms disabled=running/>
                <Field label="SLO: p95 TPOT ≤ ms" testid="slo-tpot" value=d.slo_tpot_ms disabled=running/>
                <Field label="SLO: errors ≤ %" testid="slo-error-rate" value=d.slo_error_pct disabled=running/>
            </div>
        </details>
    }
}
