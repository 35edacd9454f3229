//! What each metric means, in the words of the definitions the core implements
//! (vLLM's `bench serve`), so that the page and the README never disagree.

use leptos::prelude::*;

use crate::language::{w, words, Words};

/// `(name, definition)` of every metric the results table shows.
pub const METRICS: [(Words, Words); 7] = [
    (w("TTFT", "TTFT"), w("Time to first token: from sending the request to the first token of any kind (reasoning or answer). Queueing and prefill live here.", "首 token 时间：从发出请求到收到第一个 token（推理或回答均算）。排队和预填充（prefill）都在这里。")),
    (w("TPOT", "TPOT"), w("Time per output token: (E2E − TTFT) / (N_out − 1). How smoothly the answer streams once it has started.", "每个输出 token 的时间：(E2E − TTFT) / (N_out − 1)。回答开始后流式输出有多顺畅。")),
    (w("ITL", "ITL"), w("Inter-token latency: every gap between two token-bearing events, pooled over all requests. Its p99 shows stalls that TPOT averages away.", "token 间延迟：所有请求中每两个带 token 的事件之间的间隔，合在一起统计。它的 p99 能显示被 TPOT 平均掉的卡顿。")),
    (w("E2E", "E2E"), w("End-to-end latency: from sending the request to the end of the response body.", "端到端延迟：从发出请求到响应体结束。")),
    (w("TPS", "TPS"), w("Per-request decode speed: (N_out − 1) / (last token − first token), in tokens/s.", "单请求解码速度：(N_out − 1) / (最后一个 token − 第一个 token)，单位 tokens/s。")),
    (w("Output tok/s", "总输出 tok/s"), w("Aggregate throughput: all output tokens of successful requests / the level's wall time. Not the sum of per-request rates, which overstates it under load.", "总吞吐：成功请求的全部输出 token / 本档总耗时。不是各请求速度之和，那样在负载下会高估。")),
    (w("Queue", "排队"), w("Client queue time: waiting for a free slot before sending. Kept out of TTFT.", "客户端排队时间：发出前等待空位的时间。不计入 TTFT。")),
];

#[component]
pub fn MetricGlossary() -> impl IntoView {
    view! {
        <details class="glossary" data-testid="glossary">
            <summary>{words(w("What the metrics mean", "各指标的含义"))}</summary>
            <dl>
                {METRICS
                    .iter()
                    .map(|(name, definition)| view! {
                        <dt>{words(*name)}</dt>
                        <dd>{words(*definition)}</dd>
                    })
                    .collect_view()}
            </dl>
        </details>
    }
}
