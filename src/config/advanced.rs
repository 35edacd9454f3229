//! The plan panel's advanced settings: endpoint kind, sampling, usage, auth style,
//! extra headers and body fields, a generated prompt length, the load mode, and the
//! SLO the verdict uses. Folded away by default; the defaults suit the simulator.

use leptos::prelude::*;
use tokenmeter_core::{
    schema::{AuthStyle, EndpointKind},
    LengthDist, LoadKind,
};

use super::draft::{DraftSignals, LengthSignals};
use crate::{
    language::{w, words, Words},
    widgets::{Check, Field, Select, TextArea},
};

/// The choices, with the codes scripts select by (`data-testid` interface).
const ENDPOINTS: &[(EndpointKind, &str, Words)] = &[
    (
        EndpointKind::Chat,
        "chat",
        w("/chat/completions", "/chat/completions"),
    ),
    (
        EndpointKind::Completions,
        "completions",
        w("/completions", "/completions"),
    ),
    (
        EndpointKind::Responses,
        "responses",
        w(
            "/responses (OpenAI Responses API)",
            "/responses（OpenAI Responses API）",
        ),
    ),
    (
        EndpointKind::Anthropic,
        "anthropic",
        w(
            "/messages (Anthropic Messages API)",
            "/messages（Anthropic Messages API）",
        ),
    ),
];
const AUTH_STYLES: &[(AuthStyle, &str, Words)] = &[
    (
        AuthStyle::Bearer,
        "bearer",
        w("Authorization: Bearer", "Authorization: Bearer"),
    ),
    (
        AuthStyle::ApiKeyHeader,
        "api_key_header",
        w("api-key header", "api-key 请求头"),
    ),
    (
        AuthStyle::XApiKey,
        "x_api_key",
        w(
            "x-api-key header (Anthropic)",
            "x-api-key 请求头（Anthropic）",
        ),
    ),
];
const LENGTH_DISTS: &[(LengthDist, &str, Words)] = &[
    (
        LengthDist::Fixed,
        "fixed",
        w("the same for every request", "所有请求相同"),
    ),
    (
        LengthDist::Uniform,
        "uniform",
        w("uniform between min and max", "在 min 与 max 之间均匀分布"),
    ),
    (
        LengthDist::Normal,
        "normal",
        w(
            "normal (mean, stdev), clipped to min and max",
            "正态分布（均值、标准差），截断到 min 与 max",
        ),
    ),
];
const LOAD_KINDS: &[(LoadKind, &str, Words)] = &[
    (
        LoadKind::Ladder,
        "ladder",
        w("concurrency ladder (closed loop)", "并发阶梯（闭环）"),
    ),
    (
        LoadKind::Arrivals,
        "arrivals",
        w("arrivals at a rate (open loop)", "按速率到达（开环）"),
    ),
    (
        LoadKind::Duration,
        "duration",
        w("first level for a fixed time", "第一档持续固定时长"),
    ),
    (
        LoadKind::SloSearch,
        "slo_search",
        w(
            "highest concurrency within the SLO (search)",
            "满足 SLO 的最高并发（搜索）",
        ),
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
    label: Words,
    hooks: [&'static str; 5],
    lengths: LengthSignals,
    running: Signal<bool>,
) -> impl IntoView {
    let [testid, min, max, mean, stdev] = hooks;
    view! {
        <Select label=label testid=testid value=lengths.dist options=LENGTH_DISTS disabled=running/>
        <Show when=move || lengths.dist.get() != LengthDist::Fixed>
            <div class="field-row">
                <Field label=w("min", "最小") testid=min value=lengths.min kind="number" disabled=running/>
                <Field label=w("max", "最大") testid=max value=lengths.max kind="number" disabled=running/>
                <Show when=move || lengths.dist.get() == LengthDist::Normal>
                    <Field label=w("mean", "均值") testid=mean value=lengths.mean kind="number" disabled=running/>
                    <Field label=w("stdev", "标准差") testid=stdev value=lengths.stdev kind="number" disabled=running/>
                </Show>
            </div>
        </Show>
    }
}

/// The key's header follows a chosen endpoint kind when it was the other kind's
/// usual one: Anthropic's `x-api-key`, everyone else's `Authorization: Bearer`
/// (a gateway's `api-key`, or a choice made on purpose, stays).
fn auth_for(kind: EndpointKind, auth: RwSignal<AuthStyle>) {
    match (kind, auth.get_untracked()) {
        (EndpointKind::Anthropic, AuthStyle::Bearer) => auth.set(AuthStyle::XApiKey),
        (
            EndpointKind::Chat | EndpointKind::Completions | EndpointKind::Responses,
            AuthStyle::XApiKey,
        ) => auth.set(AuthStyle::Bearer),
        _ => {}
    }
}

#[component]
// Long: the advanced settings' markup, one field after another.
pub fn AdvancedFields(draft: DraftSignals, running: Signal<bool>) -> impl IntoView {
    let d = draft;
    view! {
        <details class="advanced" data-testid="advanced">
            <summary>{words(w("Advanced: endpoint, auth, extra fields, load mode, SLO", "高级：接口类型、认证、附加字段、负载模式、SLO"))}</summary>
            <div class="field-row">
                <Select label=w("Endpoint", "接口") testid="endpoint" value=d.endpoint options=ENDPOINTS disabled=running on_choose=Callback::new(move |kind| auth_for(kind, d.auth))/>
                <Select label=w("Send the key as", "密钥的发送方式") testid="auth" value=d.auth options=AUTH_STYLES disabled=running/>
            </div>
            <div class="field-row">
                <Field label=w("Temperature", "温度（temperature）") testid="temperature" value=d.temperature disabled=running/>
                <Field label=w("Prompt of N tokens", "生成 N 个 token 的提示词") testid="prompt-tokens" value=d.prompt_tokens disabled=running/>
            </div>
            <LengthFields label=w("Output lengths (max_tokens per request)", "输出长度（每个请求的 max_tokens）") hooks=OUTPUT_LENGTH_HOOKS lengths=d.output_lengths running=running/>
            <Check
                label=w("Force output lengths (min_tokens and ignore_eos, which vLLM and SGLang read)", "强制输出长度（min_tokens 与 ignore_eos，vLLM 和 SGLang 支持）")
                testid="force-output-lengths"
                value=d.force_output_lengths
                disabled=running
            />
            <LengthFields label=w("Input lengths (a generated prompt of N tokens per request)", "输入长度（每个请求生成 N 个 token 的提示词）") hooks=INPUT_LENGTH_HOOKS lengths=d.input_lengths running=running/>
            <Check
                label=w("Ask for usage (stream_options.include_usage); turn off for servers that reject it", "请求 usage（stream_options.include_usage）；服务端拒绝时请关闭")
                testid="include-usage"
                value=d.include_usage
                disabled=running
            />
            <div class="field-row">
                <Field
                    label=w("Turns per conversation (1: single requests)", "每段对话的轮数（1：单个请求）")
                    testid="turns"
                    value=d.turns
                    kind="number"
                    disabled=running
                    hint=w("Each turn sends the conversation so far, the model's real answers in it, and a message of its own. With a ShareGPT file, each conversation asks its own human turns, at most this many.", "每一轮都会发送到目前为止的对话（包含模型真实的回答）和一条新的消息。使用 ShareGPT 文件时，每段对话依次发送文件中自己的人类轮次，最多这么多轮。")
                />
                <Field
                    label=w("Think time between turns (ms)", "轮次之间的思考时间（毫秒）")
                    testid="think-time"
                    value=d.think_ms
                    kind="number"
                    disabled=Signal::derive(move || running.get() || d.turns.get().trim() == "1")
                />
            </div>
            <div class="field-row">
                <Check
                    label=w("Read the server's metrics (Prometheus /metrics) while the run goes", "运行期间读取服务端指标（Prometheus /metrics）")
                    testid="poll-metrics"
                    value=d.poll_metrics
                    disabled=running
                />
                <Field
                    label=w("Metrics URL (empty: the base URL's /metrics)", "指标地址（留空：接口地址的 /metrics）")
                    testid="metrics-url"
                    value=d.metrics_url
                    placeholder="http://10.0.0.5:8000/metrics"
                    disabled=Signal::derive(move || running.get() || !d.poll_metrics.get())
                />
            </div>
            <TextArea
                label=w("Extra headers", "附加请求头")
                testid="extra-headers"
                value=d.extra_headers
                placeholder="X-Gateway-Route: east"
                hint=w("One `Name: value` per line. Saved with the plan, so never the key.", "每行一个 `Name: value`。会随计划保存，所以不要放密钥。")
                disabled=running
            />
            <TextArea
                label=w("Extra body fields (JSON)", "附加请求体字段（JSON）")
                testid="extra-body"
                value=d.extra_body
                placeholder="{\"top_p\": 0.9}"
                disabled=running
            />
            <Select label=w("Load", "负载模式") testid="load-mode" value=d.load options=LOAD_KINDS disabled=running/>
            <Show when=move || d.load.get() == LoadKind::Arrivals>
                <div class="field-row">
                    <Field label=w("Arrivals per second", "每秒到达数") testid="rate" value=d.rate_rps disabled=running hint=w("Requests per level is the number sent.", "发送的请求数即“每档请求数”。")/>
                    <Check label=w("Poisson arrivals", "泊松到达") testid="poisson" value=d.poisson disabled=running/>
                </div>
            </Show>
            <Show when=move || d.load.get() == LoadKind::Duration>
                <Field label=w("Duration (s)", "持续时间（秒）") testid="duration" value=d.duration_s disabled=running hint=w("At the first concurrency level.", "在第一档并发下。")/>
            </Show>
            <Show when=move || d.load.get() == LoadKind::Ladder>
                <Field
                    label=w("Repeat the ladder (passes)", "重复阶梯（轮数）")
                    testid="repeat"
                    value=d.repeat
                    disabled=running
                    hint=w("Runs every level, then all again: each level pools its passes, and the spread between them (the noise) is shown, and used by the knee and comparisons.", "跑完所有档位后再全部重跑：每档合并各轮结果，并显示各轮之间的波动（噪声），拐点判断和对比都会用到它。")
                />
            </Show>
            <Show when=move || d.load.get() == LoadKind::SloSearch>
                <Field
                    label=w("Search up to concurrency", "搜索的最高并发")
                    testid="search-max"
                    value=d.search_max
                    disabled=running
                    hint=w("Probes from 1, doubling, then halving the gap, each of requests-per-level requests (at least two waves): the answer is the highest concurrency within the SLO below.", "从 1 开始探测，先倍增再二分，每次探测发“每档请求数”个请求（至少两轮）：结果是满足下方 SLO 的最高并发。")
                />
            </Show>
            <Field
                label=w("Engine workers (0: as each level needs)", "测量引擎 worker 数（0：每档按需）")
                testid="engine-workers"
                value=d.engine_workers
                kind="number"
                disabled=running
                hint=w("Each worker sends and stamps its own share of a level's streams on the run's one clock, so that no event waits behind another stream's work. 0 takes one per 32 streams, up to one per core of this machine; at most 8.", "每个 worker 在同一个运行时钟上发送并打点一档中属于自己的那部分流，任何事件都不必排在别的流的处理之后。0 表示每 32 路流一个，最多每个处理器核心一个；上限 8。")
            />
            <div class="field-row">
                <Field label=w("SLO: p95 TTFT ≤ ms", "SLO：p95 TTFT ≤ 毫秒") testid="slo-ttft" value=d.slo_ttft_ms disabled=running/>
                <Field label=w("SLO: p95 TPOT ≤ ms", "SLO：p95 TPOT ≤ 毫秒") testid="slo-tpot" value=d.slo_tpot_ms disabled=running/>
                <Field label=w("SLO: errors ≤ %", "SLO：错误率 ≤ %") testid="slo-error-rate" value=d.slo_error_pct disabled=running/>
            </div>
        </details>
    }
}
