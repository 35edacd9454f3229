//! What the server itself reports while a run goes: its Prometheus metrics
//! (`GET {origin}/metrics`, polled every [`POLL_EVERY_MS`]), read in the text
//! exposition format, with the names of vLLM, SGLang, TGI and llama.cpp's server
//! recognised from one table ([`NAMES`]): requests running and waiting, the KV
//! cache's use, preemptions, and the prompt (prefix) cache's hits. A level's share
//! of the samples ([`level`]) says whether requests queued in the server, how full
//! its memory was, and how much of the input its cache served.
//!
//! The key is never sent to `/metrics` (the servers above publish them without
//! one); a server that does not let the page read them is said, with why
//! ([`Unreadable`]), and the run goes on without them.

use serde::{Deserialize, Serialize};

use crate::{error::Said, said};

/// How often the engine reads `/metrics` while a run goes.
pub const POLL_EVERY_MS: u32 = 500;
/// The most of one exposition read: a server's metrics are tens of KiB.
pub const MAX_EXPOSITION_BYTES: usize = 4 << 20;

/// Whose names the metrics had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Server {
    /// vLLM (`vllm:`).
    Vllm,
    /// SGLang (`sglang:`).
    Sglang,
    /// Text Generation Inference (`tgi_`).
    Tgi,
    /// llama.cpp's `llama-server` (`llamacpp:`).
    Llamacpp,
}

impl Server {
    /// The server's name as users know it.
    pub fn name(self) -> &'static str {
        match self {
            Server::Vllm => "vLLM",
            Server::Sglang => "SGLang",
            Server::Tgi => "TGI",
            Server::Llamacpp => "llama.cpp",
        }
    }
}

/// What a metric measures, whoever names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quantity {
    Running,
    Waiting,
    /// The KV cache's use, a fraction of one.
    KvFraction,
    /// Preemptions since the server started (a counter).
    Preemptions,
    /// Prompt tokens looked up in the prefix cache, and found (counters).
    PrefixQueries,
    PrefixHits,
    /// The prefix cache's hit rate, a fraction of one (a gauge).
    PrefixHitRate,
}

/// Every metric read, one line per server's name (from each server's
/// documentation and source: vLLM's `vllm/v1/metrics/loggers.py`, with the names
/// of its V0 engine; SGLang's `sglang/srt/metrics/collector.py` with
/// `--enable-metrics`; TGI's `router/src/server.rs`; llama.cpp's
/// `tools/server/server.cpp` with `--metrics`).
const NAMES: [(&str, Server, Quantity); 16] = [
    ("vllm:num_requests_running", Server::Vllm, Quantity::Running),
    ("vllm:num_requests_waiting", Server::Vllm, Quantity::Waiting),
    (
        "vllm:kv_cache_usage_perc",
        Server::Vllm,
        Quantity::KvFraction,
    ),
    (
        "vllm:gpu_cache_usage_perc",
        Server::Vllm,
        Quantity::KvFraction,
    ),
    (
        "vllm:num_preemptions_total",
        Server::Vllm,
        Quantity::Preemptions,
    ),
    (
        "vllm:prefix_cache_queries_total",
        Server::Vllm,
        Quantity::PrefixQueries,
    ),
    (
        "vllm:prefix_cache_hits_total",
        Server::Vllm,
        Quantity::PrefixHits,
    ),
    ("sglang:num_running_reqs", Server::Sglang, Quantity::Running),
    ("sglang:num_queue_reqs", Server::Sglang, Quantity::Waiting),
    ("sglang:token_usage", Server::Sglang, Quantity::KvFraction),
    (
        "sglang:cache_hit_rate",
        Server::Sglang,
        Quantity::PrefixHitRate,
    ),
    ("tgi_batch_current_size", Server::Tgi, Quantity::Running),
    ("tgi_queue_size", Server::Tgi, Quantity::Waiting),
    (
        "llamacpp:requests_processing",
        Server::Llamacpp,
        Quantity::Running,
    ),
    (
        "llamacpp:requests_deferred",
        Server::Llamacpp,
        Quantity::Waiting,
    ),
    (
        "llamacpp:kv_cache_usage_ratio",
        Server::Llamacpp,
        Quantity::KvFraction,
    ),
];

/// Every metric name tokenmeter reads: what a poller elsewhere (the Locust
/// master) keeps of an exposition, for [`parse`] to read later.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    NAMES.iter().map(|(name, _, _)| *name)
}

/// One reading of the server's metrics, at `at_us` on the run's clock (when the
/// answer came). Each figure is the sum over the metric's series (engines,
/// models); absent where the server has no such metric.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// When the answer came, µs on the run's clock.
    pub at_us: u64,
    /// Requests the server was computing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    /// Requests waiting in the server's queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
    /// The KV cache's use, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_pct: Option<f64>,
    /// Counters since the server started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<f64>,
    /// Prefix-cache look-ups, a counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_queries: Option<f64>,
    /// Prefix-cache hits, a counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hits: Option<f64>,
    /// A hit rate the server computes itself, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_pct: Option<f64>,
}

/// Why the page could not read the server's metrics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Unreadable {
    /// No response the page may read: CORS (the server does not allow this
    /// origin on `/metrics`), or no server there.
    NoResponse,
    /// An HTTP status other than 200 (404: no metrics published).
    Status {
        /// The status.
        status: u16,
    },
    /// An answer without any metric of [`NAMES`].
    NoKnownMetric,
    /// An answer over [`MAX_EXPOSITION_BYTES`].
    TooLarge,
}

impl Unreadable {
    /// What happened and what to do, for the page and the reports.
    pub fn said(&self, url: &str) -> Said {
        match self {
            Unreadable::NoResponse => said!(
                "{url} gave no answer the page may read: the server must allow this page's origin there too (CORS), or it is not reachable. vLLM serves /metrics with the same CORS as its API (--allowed-origins); SGLang needs --enable-metrics; llama.cpp --metrics; behind a gateway, let GET /metrics through with Access-Control-Allow-Origin",
                "{url} 没有返回本页可读的响应：服务端需要在这里也允许本页面的来源（CORS），或者它不可达。vLLM 的 /metrics 与 API 使用相同的 CORS 设置（--allowed-origins）；SGLang 需要 --enable-metrics；llama.cpp 需要 --metrics；如有网关，请放行 GET /metrics 并带上 Access-Control-Allow-Origin",
            ),
            Unreadable::Status { status } => said!(
                "{url} answered HTTP {status}: the server publishes no metrics there (SGLang: --enable-metrics; llama.cpp: --metrics; TGI and vLLM publish them by default), or wants a key tokenmeter does not send there",
                "{url} 返回 HTTP {status}：服务端没有在这里发布指标（SGLang 需要 --enable-metrics；llama.cpp 需要 --metrics；TGI 和 vLLM 默认发布），或者需要 tokenmeter 不会发往那里的 Key",
            ),
            Unreadable::NoKnownMetric => said!(
                "{url} answered, but with none of the metrics tokenmeter reads (those of vLLM, SGLang, TGI and llama.cpp's server)",
                "{url} 有响应，但没有 tokenmeter 能读的指标（vLLM、SGLang、TGI 和 llama.cpp server 的指标）",
            ),
            Unreadable::TooLarge => said!(
                "{url} answered with more than 4 MiB: not a server's metrics",
                "{url} 返回了超过 4 MiB 的内容：不是服务端的指标",
            ),
        }
    }
}

/// The server's metrics over a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    /// Where they were read (`{origin}/metrics`).
    pub url: String,
    /// Whose names they had, once read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Server>,
    /// How often they were read, ms.
    pub every_ms: u32,
    /// Why reading stopped (at the first poll that failed); absent when every
    /// poll was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<Unreadable>,
    /// Every reading, in order.
    pub samples: Vec<ServerSample>,
    /// When a poll was skipped because every connection to the host was in use
    /// (HTTP/1.1 allows six): the samples leave the busiest moments out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_at_us: Vec<u64>,
}

impl ServerMetrics {
    /// What was read, in a line: whose metrics, how often, how many samples; or
    /// why they could not be read and what to do.
    pub fn said(&self) -> Said {
        let ServerMetrics {
            url,
            every_ms,
            samples,
            ..
        } = self;
        let n = samples.len();
        let (skipped_en, skipped_zh) = match self.skipped_at_us.len() {
            0 => (String::new(), String::new()),
            k => (
                format!(" ({k} polls skipped while every connection to the host was in use, as HTTP/1.1 allows six: the busiest moments are not among the samples)"),
                format!("（所有连接都在使用时跳过了 {k} 次采样，HTTP/1.1 每个主机只允许六个连接：最忙的时刻不在样本中）"),
            ),
        };
        match (&self.unreadable, self.server) {
            (Some(why), _) if n == 0 => {
                let Said { en, zh } = why.said(url);
                said!("Server metrics not read: {en}", "未读取服务端指标：{zh}")
            }
            (why, server) => {
                let whose = server.map_or("", Server::name);
                let (stopped_en, stopped_zh) = match why {
                    Some(why) => {
                        let Said { en, zh } = why.said(url);
                        (format!("; then no more: {en}"), format!("；之后中断：{zh}"))
                    }
                    None => (String::new(), String::new()),
                };
                said!(
                    "Server metrics ({whose}'s names) read from {url} every {every_ms} ms while the run went: {n} samples{skipped_en}{stopped_en}",
                    "运行期间每 {every_ms} 毫秒从 {url} 读取服务端指标（{whose} 的指标名）：共 {n} 次采样{skipped_zh}{stopped_zh}"
                )
            }
        }
    }
}

/// `{origin}/metrics` of `base_url`, where the servers above publish them.
pub(crate) fn url_of(base_url: &str) -> String {
    let after_scheme = base_url.find("://").map_or(0, |i| i + 3);
    let end = base_url[after_scheme..]
        .find('/')
        .map_or(base_url.len(), |i| after_scheme + i);
    format!("{}/metrics", &base_url[..end])
}

/// Reads one exposition (Prometheus' text format 0.0.4): every sample line of a
/// known name, summed over its series; comments, unknown names and lines that are
/// not samples are passed over. `at_us` is left 0.
pub fn parse(text: &str) -> Result<(Server, ServerSample), Unreadable> {
    if text.len() > MAX_EXPOSITION_BYTES {
        return Err(Unreadable::TooLarge);
    }
    let mut sample = ServerSample::default();
    let mut server = None;
    for line in text.lines() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(|c: char| c == '{' || c.is_ascii_whitespace())
            .unwrap_or(line.len());
        let name = &line[..name_end];
        let Some(&(_, whose, quantity)) = NAMES.iter().find(|(n, _, _)| *n == name) else {
            continue;
        };
        let Some(value) = value_of(&line[name_end..]) else {
            continue;
        };
        server.get_or_insert(whose);
        let slot = match quantity {
            Quantity::Running => &mut sample.running,
            Quantity::Waiting => &mut sample.waiting,
            Quantity::KvFraction => &mut sample.kv_pct,
            Quantity::Preemptions => &mut sample.preemptions,
            Quantity::PrefixQueries => &mut sample.prefix_queries,
            Quantity::PrefixHits => &mut sample.prefix_hits,
            Quantity::PrefixHitRate => &mut sample.prefix_hit_pct,
        };
        let value = match quantity {
            Quantity::KvFraction | Quantity::PrefixHitRate => value * 100.0,
            _ => value,
        };
        *slot = Some(slot.unwrap_or(0.0) + value);
    }
    match server {
        Some(server) => Ok((server, sample)),
        None => Err(Unreadable::NoKnownMetric),
    }
}

/// The value after a sample's name: past its labels (quoted values may hold `}`
/// and escaped quotes), the first number; `None` when it is not one, or not finite.
fn value_of(rest: &str) -> Option<f64> {
    let rest = match rest.strip_prefix('{') {
        Some(labels) => {
            let mut in_quotes = false;
            let mut escaped = false;
            let mut end = None;
            for (i, c) in labels.char_indices() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' if in_quotes => escaped = true,
                    '"' => in_quotes = !in_quotes,
                    '}' if !in_quotes => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            &labels[end? + 1..]
        }
        None => rest,
    };
    rest.split_ascii_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

/// What the server reported during one level.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerLevel {
    /// Samples taken while the level's requests were in flight.
    pub n_samples: u64,
    /// Polls skipped then, every connection to the host in use: the samples are
    /// of the level's quieter moments, and its figures are at least what they say.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n_skipped: u64,
    /// Requests being computed, mean over the samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_mean: Option<f64>,
    /// Requests being computed, the most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_max: Option<f64>,
    /// Requests waiting, mean over the samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_mean: Option<f64>,
    /// Requests waiting, the most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_max: Option<f64>,
    /// The KV cache's use at its highest, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_max_pct: Option<f64>,
    /// Preemptions during the level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<f64>,
    /// The prefix cache's hits over its queries during the level (or the mean of
    /// the rate the server reports), percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_pct: Option<f64>,
}

/// Samples of the server's metrics a level needs before "none waited" is read
/// from them: a queue shorter than the polls apart could slip between them.
pub(crate) const SERVER_SAMPLES: u64 = 4;

impl ServerLevel {
    /// The most requests seen waiting in the server's queue, where that tells
    /// whether it queued: a queue seen is one (however few the samples), but "none
    /// waited" needs [`SERVER_SAMPLES`] samples and no poll skipped, since skipped
    /// polls are the level's busiest moments.
    pub fn waiting_seen(&self) -> Option<f64> {
        let waiting = self.waiting_max?;
        let tells_none = self.n_samples >= SERVER_SAMPLES && self.n_skipped == 0;
        (waiting > 0.0 || tells_none).then_some(waiting)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The samples of `metrics` (in time order) taken within one of `windows` (µs,
/// from the first send of a pass of the level to its last end): gauges averaged
/// and at their most, counters as what they grew by since the sample before the
/// window, and the polls skipped there. `None` without a sample or a skipped poll
/// in any window.
pub(crate) fn level(metrics: &ServerMetrics, windows: &[(u64, u64)]) -> Option<ServerLevel> {
    let inside = |at_us: u64| windows.iter().any(|&(a, b)| (a..=b).contains(&at_us));
    let samples = &metrics.samples[..];
    let in_level: Vec<&ServerSample> = samples.iter().filter(|s| inside(s.at_us)).collect();
    let n_skipped = metrics
        .skipped_at_us
        .iter()
        .filter(|&&at| inside(at))
        .count() as u64;
    if in_level.is_empty() && n_skipped == 0 {
        return None;
    }
    let gauge = |read: fn(&ServerSample) -> Option<f64>| {
        let values: Vec<f64> = in_level.iter().filter_map(|s| read(s)).collect();
        let mean = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
        let max = values.iter().copied().reduce(f64::max);
        (mean, max)
    };
    // A counter's growth in each window: from the last sample before it (or its
    // first) to its last, summed over the windows.
    let growth = |read: fn(&ServerSample) -> Option<f64>| -> Option<f64> {
        let mut total = None;
        for &(a, b) in windows {
            let before = samples.iter().rev().find(|s| s.at_us < a).and_then(read);
            let within: Vec<f64> = samples
                .iter()
                .filter(|s| (a..=b).contains(&s.at_us))
                .filter_map(read)
                .collect();
            let (Some(&first), Some(&last)) = (within.first(), within.last()) else {
                continue;
            };
            let grew = (last - before.unwrap_or(first)).max(0.0);
            total = Some(total.unwrap_or(0.0) + grew);
        }
        total
    };
    let (running_mean, running_max) = gauge(|s| s.running);
    let (waiting_mean, waiting_max) = gauge(|s| s.waiting);
    let (_, kv_max_pct) = gauge(|s| s.kv_pct);
    let queries = growth(|s| s.prefix_queries);
    let hits = growth(|s| s.prefix_hits);
    let prefix_hit_pct = match (queries, hits) {
        (Some(q), Some(h)) if q > 0.0 => Some(100.0 * h / q),
        _ => gauge(|s| s.prefix_hit_pct).0,
    };
    Some(ServerLevel {
        n_samples: in_level.len() as u64,
        n_skipped,
        running_mean,
        running_max,
        waiting_mean,
        waiting_max,
        kv_max_pct,
        preemptions: growth(|s| s.preemptions),
        prefix_hit_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 4.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3-8B"} 3.0
vllm:num_requests_waiting{engine="0",model_name="a \"quoted} name"} 2.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.915
vllm:num_preemptions_total{engine="0",model_name="m"} 7.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 250.0
vllm:time_to_first_token_seconds_bucket{le="0.001"} 0.0
python_gc_objects_collected_total{generation="0"} 12345.0
"#;

    #[test]
    fn vllm_s_metrics_are_read_and_summed_over_engines() {
        let (server, s) = parse(VLLM).unwrap();
        assert_eq!(server, Server::Vllm);
        assert_eq!(s.running, Some(7.0));
        assert_eq!(
            s.waiting,
            Some(2.0),
            "a label value holding a quote and a brace"
        );
        assert!((s.kv_pct.unwrap() - 91.5).abs() < 1e-9);
        assert_eq!(
            (s.preemptions, s.prefix_queries, s.prefix_hits),
            (Some(7.0), Some(1000.0), Some(250.0))
        );
        assert_eq!(s.prefix_hit_pct, None);
    }

    #[test]
    fn every_server_s_names_are_known() {
        for (text, server, running, waiting) in [
            ("sglang:num_running_reqs{model_name=\"m\"} 5\nsglang:num_queue_reqs{model_name=\"m\"} 1\nsglang:cache_hit_rate 0.5\n", Server::Sglang, 5.0, 1.0),
            ("tgi_batch_current_size 3\ntgi_queue_size 9\n", Server::Tgi, 3.0, 9.0),
            ("llamacpp:requests_processing 2\nllamacpp:requests_deferred 0\n", Server::Llamacpp, 2.0, 0.0),
        ] {
            let (whose, s) = parse(text).unwrap();
            assert_eq!((whose, s.running, s.waiting), (server, Some(running), Some(waiting)));
        }
        assert_eq!(
            parse("sglang:cache_hit_rate 0.5\n")
                .unwrap()
                .1
                .prefix_hit_pct,
            Some(50.0)
        );
    }

    #[test]
    fn what_is_not_metrics_is_refused_and_odd_lines_passed_over() {
        assert_eq!(parse("<html>404</html>"), Err(Unreadable::NoKnownMetric));
        assert_eq!(parse(""), Err(Unreadable::NoKnownMetric));
        let text = "vllm:num_requests_running{engine=\"0\" 4\nvllm:num_requests_waiting NaN\nvllm:num_requests_waiting +Inf\nvllm:num_requests_running 2 1700000000000\n";
        let (_, s) = parse(text).unwrap();
        assert_eq!(
            (s.running, s.waiting),
            (Some(2.0), None),
            "broken labels, NaN and Inf left out; a timestamp after the value"
        );
        assert_eq!(
            parse(&"#".repeat(MAX_EXPOSITION_BYTES + 1)),
            Err(Unreadable::TooLarge)
        );
    }

    #[test]
    fn what_was_read_or_why_not_is_said_in_both_languages() {
        let mut metrics = ServerMetrics {
            url: "http://h:8000/metrics".into(),
            server: Some(Server::Vllm),
            every_ms: POLL_EVERY_MS,
            unreadable: None,
            samples: vec![ServerSample::default(); 3],
            skipped_at_us: Vec::new(),
        };
        let said = metrics.said();
        assert!(
            said.en.contains("vLLM's names") && said.en.contains("3 samples"),
            "{}",
            said.en
        );
        assert!(said.zh.contains("3 次采样"), "{}", said.zh);
        metrics.samples.clear();
        metrics.unreadable = Some(Unreadable::NoResponse);
        let said = metrics.said();
        assert!(
            said.en.starts_with("Server metrics not read") && said.en.contains("CORS"),
            "{}",
            said.en
        );
        assert!(said.zh.contains("CORS"), "{}", said.zh);
    }

    #[test]
    fn the_url_is_the_base_url_s_origin() {
        assert_eq!(
            url_of("http://127.0.0.1:8000/v1"),
            "http://127.0.0.1:8000/metrics"
        );
        assert_eq!(
            url_of("https://gw.example.com/api/v1/"),
            "https://gw.example.com/metrics"
        );
        assert_eq!(url_of("https://host"), "https://host/metrics");
    }

    fn at(at_us: u64, running: f64, waiting: f64, hits: f64, queries: f64) -> ServerSample {
        ServerSample {
            at_us,
            running: Some(running),
            waiting: Some(waiting),
            prefix_hits: Some(hits),
            prefix_queries: Some(queries),
            ..ServerSample::default()
        }
    }

    #[test]
    fn a_level_takes_the_samples_of_its_windows_and_the_growth_of_counters() {
        let mut samples = ServerMetrics {
            url: "http://h/metrics".into(),
            server: Some(Server::Vllm),
            every_ms: POLL_EVERY_MS,
            unreadable: None,
            samples: vec![
                at(0, 0.0, 0.0, 0.0, 0.0),
                at(500, 4.0, 2.0, 10.0, 100.0),
                at(1_000, 4.0, 4.0, 20.0, 300.0),
                at(1_500, 1.0, 0.0, 20.0, 400.0),
                at(2_000, 2.0, 0.0, 70.0, 500.0),
            ],
            skipped_at_us: Vec::new(),
        };
        let l = level(&samples, &[(400, 1_100)]).unwrap();
        assert_eq!((l.n_samples, l.n_skipped), (2, 0));
        assert_eq!((l.running_mean, l.running_max), (Some(4.0), Some(4.0)));
        assert_eq!((l.waiting_mean, l.waiting_max), (Some(3.0), Some(4.0)));
        // From the sample before the window (0 hits of 0) to its last (20 of 300).
        assert!((l.prefix_hit_pct.unwrap() - 100.0 * 20.0 / 300.0).abs() < 1e-9);
        // Two passes of the level: both windows count.
        let l = level(&samples, &[(400, 600), (1_900, 2_100)]).unwrap();
        assert_eq!(l.n_samples, 2);
        assert!((l.prefix_hit_pct.unwrap() - 100.0 * (10.0 + 50.0) / (100.0 + 100.0)).abs() < 1e-9);
        assert_eq!(level(&samples, &[(2_100, 3_000)]), None);
        // Polls skipped while every connection was busy: counted where they fell,
        // a level of nothing but skips is still one the server was asked about.
        samples.skipped_at_us = vec![700, 2_500, 2_700];
        assert_eq!(level(&samples, &[(400, 1_100)]).unwrap().n_skipped, 1);
        let busy = level(&samples, &[(2_100, 3_000)]).unwrap();
        assert_eq!((busy.n_samples, busy.n_skipped), (0, 2));
        assert_eq!(busy.waiting_max, None);
        let said = samples.said();
        assert!(said.en.contains("3 polls skipped"), "{}", said.en);
        assert!(said.zh.contains("跳过了 3 次"), "{}", said.zh);
    }
}
