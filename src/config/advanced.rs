//! The plan panel's advanced settings: endpoint kind, sampling, usage, auth style,
//! extra headers and body fields, a generated prompt length, the load mode, and the
//! SLO the verdict uses. Folded away by default; the defaults suit the simulator.

use leptos::prelude::*;
use tokenmeter_core::{
    draft::{LengthDist, LoadKind},
    plan::AuthStyle,
    stream::EndpointKind,
};

use super::draft::{DraftSignals, LengthSignals};
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
const LENGTH_DISTS: &[(LengthDist, &str, &str)] = &[
    (LengthDist::Fixed, "fixed", "the same for every request"),
    (
        LengthDist::Uniform,
        "uniform",
        "uniform between min and max",
    ),
    (
        LengthDist::Normal,
        "normal",
        "normal (mean, stdev), clipped to min and max",
    ),
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

/// The hooks of a length's fields: how it is drawn, then `min`, `max`, `mean`
/// and `stdev` (`{how}-min` and so on).
const OUTPUT_LENGTH_HOOKS: [&str; 5] = [
    "output-lengths",
    "output-lengths-min",
    "output-lengths-max",
    "output-lengths-mean",
    "output-lengths-stdev",
];
const INPUT_LENGTH_HOOKS: [&str; 5] = [
    "input-lengths",
    "input-lengths-min",
    "input-lengths-max",
    "input-lengths-mean",
    "input-lengths-stdev",
];

/// A length drawn per request: how, then its figures (a normal one's mean and
/// standard deviation too).
#[component]
fn LengthFields(
    label: &'static str,
    hooks: [&'static str; 5],
    lengths: LengthSignals,
    running: Signal<bool>,
) -> impl IntoView {
    let [testid, min, max, mean, stdev] = hooks;
    view! {
        <Select label=label testid=testid value=lengths.dist options=LENGTH_DISTS disabled=running/>
        <Show when=move || lengths.dist.get() != LengthDist::Fixed>
            <div class="field-row">
                <Field label="min" testid=min value=lengths.min kind="number" disabled=running/>
                <Field label="max" testid=max value=lengths.max kind="number" disabled=running/>
                <Show when=move || lengths.dist.get() == LengthDist::Normal>
                    <Field label="mean" testid=mean value=lengths.mean kind="number" disabled=running/>
                    <Field label="stdev" testid=stdev value=lengths.stdev kind="number" disabled=running/>
                </Show>
            </div>
        </Show>
    }
}

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
            <LengthFields label="Output lengths (max_tokens per request)" hooks=OUTPUT_LENGTH_HOOKS lengths=d.output_lengths running=running/>
            <Check
                label="Force output lengths (min_tokens and ignore_eos, which vLLM and SGLang read)"
                testid="force-output-lengths"
                value=d.force_output_lengths
                disabled=running
            />
            <LengthFields label="Input lengths (a generated prompt of N tokens per request)" hooks=INPUT_LENGTH_HOOKS lengths=d.input_lengths running=running/>
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
