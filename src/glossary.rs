//! What each metric means, in the words of the definitions the core implements
//! (vLLM's `bench serve`), so that the page and the README never disagree.

use leptos::prelude::*;

/// `(name, definition)` of every metric the results table shows.
pub const METRICS: [(&str, &str); 7] = [
    ("TTFT", "Time to first token: from sending the request to the first token of any kind (reasoning or answer). Queueing and prefill live here."),
    ("TPOT", "Time per output token: (E2E − TTFT) / (N_out − 1). How smoothly the answer streams once it has started."),
    ("ITL", "Inter-token latency: every gap between two token-bearing events, pooled over all requests. Its p99 shows stalls that TPOT averages away."),
    ("E2E", "End-to-end latency: from sending the request to the end of the response body."),
    ("TPS", "Per-request decode speed: (N_out − 1) / (last token − first token), in tokens/s."),
    ("Output tok/s", "Aggregate throughput: all output tokens of successful requests / the level's wall time. Not the sum of per-request rates, which overstates it under load."),
    ("Queue", "Client queue time: waiting for a free slot before sending. Kept out of TTFT."),
];

#[component]
pub fn MetricGlossary() -> impl IntoView {
    view! {
        <details class="glossary" data-testid="glossary">
            <summary>"What the metrics mean"</summary>
            <dl>
                {METRICS
                    .iter()
                    .map(|(name, definition)| view! {
                        <dt>{*name}</dt>
                        <dd>{*definition}</dd>
                    })
                    .collect_view()}
            </dl>
        </details>
    }
}
