//! `GET /metrics`: the engine's true state in Prometheus' text format, under the
//! names a real server uses (vLLM's by default; SGLang's, TGI's or llama.cpp's with
//! `--metrics-names`), so a client that reads a server's own view can be checked
//! against the truth. Requests waiting and running, the KV cache's use, preemptions
//! (the model never preempts: always 0), and the prompt cache's queries and hits.

use std::sync::{atomic::Ordering, Arc};

use axum::{
    extract::State,
    http::{header, StatusCode},
    response::{IntoResponse, Response},
};
use clap::ValueEnum;
use serde::Serialize;

use super::AppState;

/// Whose names `/metrics` uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricsNames {
    #[default]
    Vllm,
    Sglang,
    Tgi,
    Llamacpp,
    /// No `/metrics` at all (404), as a server started without metrics.
    None,
}

/// The prompt cache's counters, kept by the completion handler.
#[derive(Debug, Default)]
pub(super) struct CacheCounters {
    pub(super) queries: std::sync::atomic::AtomicU64,
    pub(super) hits: std::sync::atomic::AtomicU64,
}

pub(super) async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let names = state.config.metrics_names;
    if names == MetricsNames::None {
        return (StatusCode::NOT_FOUND, "404 page not found\n").into_response();
    }
    let gauges = state.engine.gauges();
    let running = gauges.running.load(Ordering::Relaxed);
    let waiting = gauges.waiting.load(Ordering::Relaxed);
    let kv_fraction = gauges.kv_tokens.load(Ordering::Relaxed) as f64
        / state.config.engine.kv_cache_tokens.max(1) as f64;
    let generated = gauges.generation_tokens.load(Ordering::Relaxed);
    let queries = state.cache_counters.queries.load(Ordering::Relaxed);
    let hits = state.cache_counters.hits.load(Ordering::Relaxed);
    let model = state.config.models.first().map_or("", String::as_str);
    let text = exposition(
        names,
        model,
        running,
        waiting,
        kv_fraction,
        generated,
        queries,
        hits,
    );
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// The text exposition of one moment, with `# HELP` and `# TYPE` lines as real
/// servers write them.
#[allow(clippy::too_many_arguments)]
// Long: every metric in each server's names, written out.
fn exposition(
    names: MetricsNames,
    model: &str,
    running: u64,
    waiting: u64,
    kv_fraction: f64,
    generated: u64,
    queries: u64,
    hits: u64,
) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, labels: &str, value: String| {
        out.push_str(&format!(
            "# HELP {name} tokenmeter-sim's {name}.\n# TYPE {name} {kind}\n{name}{labels} {value}\n"
        ));
    };
    match names {
        MetricsNames::Vllm => {
            let labels = format!("{{engine=\"0\",model_name=\"{model}\"}}");
            metric(
                "vllm:num_requests_running",
                "gauge",
                &labels,
                running.to_string(),
            );
            metric(
                "vllm:num_requests_waiting",
                "gauge",
                &labels,
                waiting.to_string(),
            );
            metric(
                "vllm:kv_cache_usage_perc",
                "gauge",
                &labels,
                kv_fraction.to_string(),
            );
            metric(
                "vllm:num_preemptions_total",
                "counter",
                &labels,
                "0.0".into(),
            );
            metric(
                "vllm:prefix_cache_queries_total",
                "counter",
                &labels,
                format!("{queries}.0"),
            );
            metric(
                "vllm:prefix_cache_hits_total",
                "counter",
                &labels,
                format!("{hits}.0"),
            );
            metric(
                "vllm:generation_tokens_total",
                "counter",
                &labels,
                format!("{generated}.0"),
            );
        }
        MetricsNames::Sglang => {
            let labels = format!("{{model_name=\"{model}\"}}");
            let hit_rate = if queries == 0 {
                0.0
            } else {
                hits as f64 / queries as f64
            };
            metric(
                "sglang:num_running_reqs",
                "gauge",
                &labels,
                running.to_string(),
            );
            metric(
                "sglang:num_queue_reqs",
                "gauge",
                &labels,
                waiting.to_string(),
            );
            metric(
                "sglang:token_usage",
                "gauge",
                &labels,
                kv_fraction.to_string(),
            );
            metric(
                "sglang:cache_hit_rate",
                "gauge",
                &labels,
                hit_rate.to_string(),
            );
            metric(
                "sglang:generation_tokens_total",
                "counter",
                &labels,
                format!("{generated}.0"),
            );
        }
        MetricsNames::Tgi => {
            metric("tgi_batch_current_size", "gauge", "", running.to_string());
            metric("tgi_queue_size", "gauge", "", waiting.to_string());
        }
        MetricsNames::Llamacpp => {
            metric(
                "llamacpp:requests_processing",
                "gauge",
                "",
                running.to_string(),
            );
            metric(
                "llamacpp:requests_deferred",
                "gauge",
                "",
                waiting.to_string(),
            );
            metric(
                "llamacpp:kv_cache_usage_ratio",
                "gauge",
                "",
                kv_fraction.to_string(),
            );
            metric(
                "llamacpp:tokens_predicted_total",
                "counter",
                "",
                generated.to_string(),
            );
        }
        MetricsNames::None => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_s_names() {
        let vllm = exposition(MetricsNames::Vllm, "m", 4, 3, 0.25, 100, 80, 40);
        assert!(vllm.contains("vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 3\n"));
        assert!(vllm.contains("# TYPE vllm:prefix_cache_hits_total counter\n"));
        assert!(vllm.contains("vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n"));
        let sglang = exposition(MetricsNames::Sglang, "m", 4, 3, 0.25, 100, 80, 40);
        assert!(sglang.contains("sglang:cache_hit_rate{model_name=\"m\"} 0.5\n"));
        assert!(
            exposition(MetricsNames::Tgi, "m", 4, 3, 0.0, 0, 0, 0).contains("tgi_queue_size 3\n")
        );
        let llama = exposition(MetricsNames::Llamacpp, "m", 4, 3, 0.0, 0, 0, 0);
        assert!(llama.contains("llamacpp:requests_deferred 3\n"));
    }
}
