//! Run conditions: what, besides the server, shaped a run's figures (the browser's
//! HTTP/1.1 queue, uncached CORS preflights, a hidden page, the engine's own lag, a
//! coarse timer). Each is data, found from the measurements, and says itself in
//! English or Chinese on the model of [`ErrorKind::hint`](crate::error::ErrorKind::hint).
//!
//! The run document keeps them typed (`environment.conditions`) and, for readers of
//! schema 1, as English sentences (`environment.notes`).

use crate::vecmap::VecMap;

use serde::{
    de::{self, IntoDeserializer},
    Deserialize, Deserializer, Serialize,
};

use crate::{
    browser::{self, Engine, HTTP1, HTTP1_CONNECTIONS_PER_HOST, QUIET_IN_FLIGHT, SLOW_SEND_US},
    error::Lang,
    lag::{StallCount, LAG_DISTORTS_P95_MS, LAG_NOTE_MS},
    network::Network,
    plan::PromptMode,
    record::RequestRecord,
    summary::Summary,
    tagged::{need, WireError},
};

fn http1() -> String {
    HTTP1.to_owned()
}

fn six() -> u32 {
    HTTP1_CONNECTIONS_PER_HOST
}

/// Something that affected the figures of a run or of one level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "ConditionWire")]
pub enum RunCondition {
    /// The network's round trip from the browser to the server was `rtt_ms` (the
    /// fastest of `n_probes` small requests before the run; see
    /// [`crate::network`]), `after_ms` after it when that differs enough to say
    /// the network moved; of TTFT p50 at `concurrency` (`ttft_p50_ms`), one round
    /// trip is the network's.
    NetworkRoundTrip {
        /// The fastest probe's round trip before the run, ms.
        rtt_ms: f64,
        /// How many probes answered.
        n_probes: u32,
        /// The fastest after the run, when the network moved meanwhile, ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_ms: Option<f64>,
        /// The level whose TTFT the round trip is set against.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        concurrency: Option<u32>,
        /// That level's TTFT p50, ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttft_p50_ms: Option<f64>,
    },
    /// The browser spoke HTTP/1.1 at a level above its per-host connection limit
    /// and held requests back before sending them.
    BrowserQueue {
        /// The level.
        concurrency: u32,
        /// Browser wait at p95, when Resource Timing told it.
        wait_p95_ms: Option<f64>,
        /// TTFT after the request left the browser, at p50.
        ttft_after_send_p50_ms: Option<f64>,
        /// The protocol the browser spoke (`nextHopProtocol`).
        #[serde(default = "http1")]
        protocol: String,
        /// How many requests the browser had in flight to the host.
        #[serde(default = "six")]
        connections: u32,
        /// This engine's Resource Timing does not show the wait (Firefox; WebKitGTK
        /// over HTTP/2), so it cannot be split off TTFT.
        #[serde(default)]
        wait_hidden: bool,
    },
    /// Requests waited in the browser on an open connection as long as a CORS
    /// preflight takes, more than once: the server probably sends no
    /// `Access-Control-Max-Age`.
    UncachedPreflight {
        /// Requests that waited so.
        n_requests: u64,
        /// The largest per-level median of those waits.
        wait_ms: f64,
    },
    /// The page was hidden during a level (browsers throttle hidden tabs).
    HiddenPage {
        /// The level.
        concurrency: u32,
        /// How long the page was hidden during it, ms.
        hidden_ms: f64,
    },
    /// The engine's own event loop ran late while a level's requests were in
    /// flight: the browser itself was saturated, and timestamps taken then moved.
    EngineLag {
        /// The level.
        concurrency: u32,
        /// The worst lateness, ms.
        lag_ms: f64,
        /// Lateness at p95 of the engine's ticks while requests were in flight, ms
        /// (absent in documents from before it was measured).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lag_p95_ms: Option<f64>,
        /// What the stalls did to the level's token events (see
        /// [`crate::lag::StallLog`]; absent in documents from before they were
        /// counted).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stalls: Option<StallCount>,
    },
    /// The server sends no `Timing-Allow-Origin`, so the browser hides when each
    /// request left it: TTFT holds the browser's own wait and cannot be split.
    TimingHidden {
        /// Requests whose Resource Timing was hidden.
        n_requests: u64,
    },
    /// `performance.now()` is coarse because the page is not cross-origin isolated.
    CoarseTimer {
        /// The smallest step the clock took, µs.
        resolution_us: f64,
    },
    /// Requests got no response the page could read (network errors), and a probe
    /// after the run told why.
    NoResponse {
        /// Requests that got no response.
        n_requests: u64,
        /// What the probe after the run found.
        cause: NoResponseCause,
        /// This page's origin, which the server must allow.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        page_origin: Option<String>,
    },
    /// The run did not end: the page was closed or reloaded, or the engine
    /// stopped, after `n_records` requests; what they measured is kept.
    Interrupted {
        /// What ended it.
        cause: Interruption,
        /// Requests measured before it ended, all kept.
        n_records: u64,
    },
    /// The run as kept in the browser's history lost its per-request records (too
    /// large for the browser's storage); the summaries, verdict and notes stay.
    RecordsNotKept {
        /// How many records the run had.
        n_records: u64,
    },
    /// The run was imported from another tool's result (`tool`), which does not
    /// measure what `missing` lists.
    Imported {
        /// The tool's name (`vllm`).
        tool: String,
        /// What it does not measure, in words.
        missing: Vec<String>,
    },
    /// The run was measured by Locust worker processes running tokenmeter's
    /// exported plan (see [`crate::locust`]), not by this browser.
    Locust {
        /// The Locust version the workers ran.
        locust_version: String,
        /// How many worker processes sent requests.
        n_workers: u32,
        /// The workers' hosts, as they named themselves.
        hosts: Vec<String>,
    },
    /// A level bounded by time sent as many requests as one run may hold
    /// ([`crate::plan::MAX_REQUESTS_PER_RUN`]) and stopped before its time was up.
    RequestCapReached {
        /// The level.
        concurrency: u32,
        /// The cap it reached.
        limit: u32,
    },
    /// The server answered `n_hits` of the `n_requests` measured requests that
    /// said how much of their prompt it had cached mostly from its prompt cache
    /// (see [`prompt_cache`]), `cached_pct` percent of those hits' prompt tokens:
    /// their TTFT is a cache hit's. `mode` is what the plan sent.
    PromptCacheHits {
        /// What the plan sent.
        mode: PromptMode,
        /// Measured requests whose usage said how much was cached.
        n_requests: u64,
        /// Of those, the ones mostly answered from the cache.
        n_hits: u64,
        /// The share of those hits' prompt tokens read from the cache, percent.
        cached_pct: f64,
    },
    /// At `levels`, most streams arrived in bursts (`n_requests` of them,
    /// `share_pct` of their token events at most, up to `largest` in one read):
    /// a gateway or proxy buffers or compresses the stream (see
    /// [`crate::summary::Distortion::Buffered`]).
    BufferedStream {
        /// The levels.
        levels: Vec<u32>,
        /// Requests whose stream arrived in bursts.
        n_requests: u64,
        /// The largest share of a level's token events that came in bursts, percent.
        share_pct: f64,
        /// The most token events in one network read.
        largest: u64,
    },
    /// `n_early` of the `n_requests` successful requests ended on their own before
    /// the output length they asked for (`asked_mean` asked, `produced_mean`
    /// produced on average); `forced` when the plan asked the server to go on.
    StoppedEarly {
        /// Successful requests.
        n_requests: u64,
        /// Of those, the ones that ended before their asked length.
        n_early: u64,
        /// Output tokens asked, mean.
        asked_mean: f64,
        /// Output tokens produced, mean.
        produced_mean: f64,
        /// The plan asked the server to go on to the asked length.
        forced: bool,
    },
}

/// Why requests got no response (see [`RunCondition::NoResponse`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoResponseCause {
    /// An https:// page may not call a plain http:// endpoint (other than loopback).
    MixedContent,
    /// The host answers (a request without CORS reached it), but does not allow
    /// this page's origin.
    Cors,
    /// The host allows this page's origin for a plain GET (`/models` was readable),
    /// yet the requests failed without a response: their CORS preflight (OPTIONS)
    /// was refused, or the server dropped the connection.
    CorsPreflight,
    /// The host did not answer at all, not even a request without CORS.
    Unreachable,
    /// A cross-origin isolated page cannot probe without CORS: one of the two.
    CorsOrUnreachable,
    /// A page on the public internet calling an address on this machine or a
    /// private network: browsers guard those (Private Network Access; Chrome 141
    /// and later ask the user's permission, Local Network Access), and the server
    /// must allow it on its preflight.
    PrivateNetwork,
}

/// What interrupted a run (see [`RunCondition::Interrupted`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case", try_from = "InterruptionWire")]
pub enum Interruption {
    /// The page was closed or reloaded (or the browser stopped) during the run.
    PageClosed,
    /// The engine worker stopped: it crashed, ran out of memory, or went silent.
    EngineStopped {
        /// What the page saw: the worker's error, or its silence.
        reason: String,
    },
}

/// Every field of every [`RunCondition`], read in one pass (see [`crate::tagged`]).
#[derive(Deserialize)]
struct ConditionWire {
    kind: String,
    concurrency: Option<u32>,
    wait_p95_ms: Option<f64>,
    ttft_after_send_p50_ms: Option<f64>,
    protocol: Option<String>,
    connections: Option<u32>,
    wait_hidden: Option<bool>,
    n_requests: Option<u64>,
    wait_ms: Option<f64>,
    hidden_ms: Option<f64>,
    lag_ms: Option<f64>,
    lag_p95_ms: Option<f64>,
    stalls: Option<StallCount>,
    resolution_us: Option<f64>,
    cause: Option<CauseWire>,
    page_origin: Option<String>,
    n_records: Option<u64>,
    tool: Option<String>,
    missing: Option<Vec<String>>,
    locust_version: Option<String>,
    n_workers: Option<u32>,
    hosts: Option<Vec<String>>,
    limit: Option<u32>,
    mode: Option<PromptMode>,
    n_hits: Option<u64>,
    cached_pct: Option<f64>,
    levels: Option<Vec<u32>>,
    share_pct: Option<f64>,
    largest: Option<u64>,
    n_early: Option<u64>,
    asked_mean: Option<f64>,
    produced_mean: Option<f64>,
    forced: Option<bool>,
    rtt_ms: Option<f64>,
    n_probes: Option<u32>,
    after_ms: Option<f64>,
    ttft_p50_ms: Option<f64>,
}

/// `cause` is a string in `no_response` and an object in `interrupted`.
enum CauseWire {
    NoResponse(NoResponseCause),
    Interrupted(Interruption),
}

impl<'de> Deserialize<'de> for CauseWire {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> de::Visitor<'de> for Visitor {
            type Value = CauseWire;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a no-response cause (a string) or an interruption (an object)")
            }

            fn visit_str<E: de::Error>(self, cause: &str) -> Result<CauseWire, E> {
                NoResponseCause::deserialize(cause.into_deserializer()).map(CauseWire::NoResponse)
            }

            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<CauseWire, A::Error> {
                Interruption::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(CauseWire::Interrupted)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl TryFrom<ConditionWire> for RunCondition {
    type Error = WireError;

    // Long: the wire form of every condition kind read back, an arm each.
    fn try_from(w: ConditionWire) -> Result<Self, WireError> {
        let k = w.kind.as_str();
        let wrong_cause = || WireError::Missing {
            tag: k.to_owned(),
            field: "cause",
        };
        Ok(match k {
            "browser_queue" => RunCondition::BrowserQueue {
                concurrency: need(w.concurrency, k, "concurrency")?,
                wait_p95_ms: w.wait_p95_ms,
                ttft_after_send_p50_ms: w.ttft_after_send_p50_ms,
                protocol: w.protocol.unwrap_or_else(http1),
                connections: w.connections.unwrap_or_else(six),
                wait_hidden: w.wait_hidden.unwrap_or_default(),
            },
            "uncached_preflight" => RunCondition::UncachedPreflight {
                n_requests: need(w.n_requests, k, "n_requests")?,
                wait_ms: need(w.wait_ms, k, "wait_ms")?,
            },
            "hidden_page" => RunCondition::HiddenPage {
                concurrency: need(w.concurrency, k, "concurrency")?,
                hidden_ms: need(w.hidden_ms, k, "hidden_ms")?,
            },
            "engine_lag" => RunCondition::EngineLag {
                concurrency: need(w.concurrency, k, "concurrency")?,
                lag_ms: need(w.lag_ms, k, "lag_ms")?,
                lag_p95_ms: w.lag_p95_ms,
                stalls: w.stalls,
            },
            "timing_hidden" => RunCondition::TimingHidden {
                n_requests: need(w.n_requests, k, "n_requests")?,
            },
            "coarse_timer" => RunCondition::CoarseTimer {
                resolution_us: need(w.resolution_us, k, "resolution_us")?,
            },
            "no_response" => RunCondition::NoResponse {
                n_requests: need(w.n_requests, k, "n_requests")?,
                cause: match w.cause {
                    Some(CauseWire::NoResponse(cause)) => cause,
                    _ => return Err(wrong_cause()),
                },
                page_origin: w.page_origin,
            },
            "interrupted" => RunCondition::Interrupted {
                cause: match w.cause {
                    Some(CauseWire::Interrupted(cause)) => cause,
                    _ => return Err(wrong_cause()),
                },
                n_records: need(w.n_records, k, "n_records")?,
            },
            "records_not_kept" => RunCondition::RecordsNotKept {
                n_records: need(w.n_records, k, "n_records")?,
            },
            "imported" => RunCondition::Imported {
                tool: need(w.tool, k, "tool")?,
                missing: need(w.missing, k, "missing")?,
            },
            "locust" => RunCondition::Locust {
                locust_version: need(w.locust_version, k, "locust_version")?,
                n_workers: need(w.n_workers, k, "n_workers")?,
                hosts: need(w.hosts, k, "hosts")?,
            },
            "request_cap_reached" => RunCondition::RequestCapReached {
                concurrency: need(w.concurrency, k, "concurrency")?,
                limit: need(w.limit, k, "limit")?,
            },
            "stopped_early" => RunCondition::StoppedEarly {
                n_requests: need(w.n_requests, k, "n_requests")?,
                n_early: need(w.n_early, k, "n_early")?,
                asked_mean: need(w.asked_mean, k, "asked_mean")?,
                produced_mean: need(w.produced_mean, k, "produced_mean")?,
                forced: w.forced.unwrap_or(false),
            },
            "buffered_stream" => RunCondition::BufferedStream {
                levels: need(w.levels, k, "levels")?,
                n_requests: need(w.n_requests, k, "n_requests")?,
                share_pct: need(w.share_pct, k, "share_pct")?,
                largest: need(w.largest, k, "largest")?,
            },
            "network_round_trip" => RunCondition::NetworkRoundTrip {
                rtt_ms: need(w.rtt_ms, k, "rtt_ms")?,
                n_probes: need(w.n_probes, k, "n_probes")?,
                after_ms: w.after_ms,
                concurrency: w.concurrency,
                ttft_p50_ms: w.ttft_p50_ms,
            },
            "prompt_cache_hits" => RunCondition::PromptCacheHits {
                mode: need(w.mode, k, "mode")?,
                n_requests: need(w.n_requests, k, "n_requests")?,
                n_hits: need(w.n_hits, k, "n_hits")?,
                cached_pct: need(w.cached_pct, k, "cached_pct")?,
            },
            _ => return Err(WireError::UnknownTag { tag: w.kind }),
        })
    }
}

/// Every field of every [`Interruption`] (see [`crate::tagged`]).
#[derive(Deserialize)]
struct InterruptionWire {
    by: String,
    reason: Option<String>,
}

impl TryFrom<InterruptionWire> for Interruption {
    type Error = WireError;

    fn try_from(w: InterruptionWire) -> Result<Self, WireError> {
        match w.by.as_str() {
            "page_closed" => Ok(Interruption::PageClosed),
            "engine_stopped" => Ok(Interruption::EngineStopped {
                reason: need(w.reason, &w.by, "reason")?,
            }),
            _ => Err(WireError::UnknownTag { tag: w.by }),
        }
    }
}

impl RunCondition {
    /// The condition as a sentence a user can act on.
    // Long: one sentence per condition kind, in both languages.
    pub fn text(&self, lang: Lang) -> String {
        let zh = lang == Lang::Zh;
        match *self {
            RunCondition::BrowserQueue {
                concurrency,
                wait_p95_ms,
                ttft_after_send_p50_ms,
                ref protocol,
                connections: max,
                wait_hidden,
            } => {
                if zh {
                    let wait = match wait_p95_ms {
                        Some(ms) => format!("p95 为 {ms:.0} ms"),
                        None if wait_hidden => {
                            "时长未知：这个浏览器的 Resource Timing 不显示这段等待".into()
                        }
                        None => "未知的时长".into(),
                    };
                    let after = ttft_after_send_p50_ms
                        .map(|ms| format!("；发出后的 TTFT p50 为 {ms:.0} ms"))
                        .unwrap_or_default();
                    if protocol == HTTP1 {
                        format!("并发 {concurrency}：浏览器使用 HTTP/1.1，每个主机最多 {max} 个连接，请求在发出前被浏览器扣住（{wait}）{after}；要测超过 {max} 的并发，请使用 HTTPS 端点（HTTP/2）")
                    } else {
                        format!("并发 {concurrency}：这个浏览器即使用 {protocol} 也最多同时向一个主机发 {max} 个请求，其余请求在发出前被扣住（{wait}）{after}；要测超过 {max} 的并发，请用 Chromium 或 Firefox")
                    }
                } else {
                    let wait = match wait_p95_ms {
                        Some(ms) => format!("{ms:.0} ms at p95"),
                        None if wait_hidden => {
                            "a time this browser's Resource Timing does not show".into()
                        }
                        None => "an unknown time".into(),
                    };
                    let after = ttft_after_send_p50_ms
                        .map(|ms| format!("; TTFT after sending was {ms:.0} ms at p50"))
                        .unwrap_or_default();
                    if protocol == HTTP1 {
                        format!("concurrency {concurrency}: the browser spoke HTTP/1.1, which allows {max} connections per host, and held requests back for {wait} before sending them{after}; use an HTTPS endpoint (HTTP/2) to measure the server beyond {max}")
                    } else {
                        format!("concurrency {concurrency}: this browser sends at most {max} requests at a time to one host even over {protocol}, and held the others back for {wait} before sending them{after}; use Chromium or Firefox to measure the server beyond {max}")
                    }
                }
            }
            RunCondition::UncachedPreflight {
                n_requests,
                wait_ms,
            } => {
                if zh {
                    format!("有 {n_requests} 个请求在已打开的连接上于浏览器内等了约 {wait_ms:.0} ms，正是一次 CORS 预检的耗时：服务端可能没有发送 Access-Control-Max-Age，浏览器每隔几秒就要重新预检，这段时间计入了 TTFT；请让服务端发送 Access-Control-Max-Age（例如 86400）")
                } else {
                    format!("{n_requests} requests waited about {wait_ms:.0} ms in the browser on an open connection, as a CORS preflight costs: the server probably sends no Access-Control-Max-Age, so the browser repeats the preflight every few seconds and that time counts in TTFT; have the server send Access-Control-Max-Age (e.g. 86400)")
                }
            }
            RunCondition::HiddenPage {
                concurrency,
                hidden_ms,
            } => {
                let level = level_name(concurrency, lang);
                let s = hidden_ms / 1e3;
                if zh {
                    format!("{level}：这一档有 {s:.1} s 页面处于隐藏状态；浏览器会限制隐藏标签页，所以这一档的计时可能偏晚")
                } else {
                    format!("{level}: the page was hidden for {s:.1} s of this level; browsers throttle hidden tabs, so its timings may be late")
                }
            }
            RunCondition::EngineLag {
                concurrency,
                lag_ms,
                lag_p95_ms,
                stalls,
            } => {
                let level = level_name(concurrency, lang);
                let late = stalls.filter(|s| s.n_late > 0);
                match (lag_p95_ms, zh) {
                    // Stalls, and which token events they held.
                    (Some(p95), true) if p95 <= LAG_DISTORTS_P95_MS && late.is_some() => {
                        let s = late.unwrap_or_default();
                        format!("{level}：请求进行中，测量引擎自身的事件循环偶有停顿，最长 {lag_ms:.0} ms（p95 为 {p95:.0} ms）：{} 个 token 事件中有 {} 个（其中 {} 个是请求的首 token）是在停顿中记下的，最多晚了 {:.0} ms，可能体现在 ITL 和 TTFT 的 p99 上", s.n_events, s.n_late, s.n_late_first, s.late_max_ms)
                    }
                    (Some(p95), false) if p95 <= LAG_DISTORTS_P95_MS && late.is_some() => {
                        let s = late.unwrap_or_default();
                        format!("{level}: while requests were in flight the engine's own event loop stalled at times, for up to {lag_ms:.0} ms ({p95:.0} ms at p95): {} of {} token events ({} of them first tokens) were stamped during a stall, up to {:.0} ms late, which can show in ITL and TTFT at p99", s.n_late, s.n_events, s.n_late_first, s.late_max_ms)
                    }
                    // Mostly on time, with stalls: only what arrived during them moved.
                    (Some(p95), true) if p95 <= LAG_DISTORTS_P95_MS => format!("{level}：请求进行中，测量引擎自身的事件循环偶有停顿，最长 {lag_ms:.0} ms（p95 为 {p95:.0} ms）：停顿期间到达的 token 被晚记了最多这么久，可能体现在 ITL 和 TTFT 的 p99 上"),
                    (Some(p95), false) if p95 <= LAG_DISTORTS_P95_MS => format!("{level}: while requests were in flight the engine's own event loop stalled at times, for up to {lag_ms:.0} ms ({p95:.0} ms at p95): tokens that arrived during a stall were stamped up to that late, which can show in ITL and TTFT at p99"),
                    (Some(p95), true) => format!("{level}：请求进行中，测量引擎自身的事件循环最多晚了 {lag_ms:.0} ms（p95 为 {p95:.0} ms），这段时间里记下的时间戳也晚了这么多：浏览器本身已饱和，这一档测到的有一部分是工具而不是服务端"),
                    (Some(p95), false) => format!("{level}: while requests were in flight the engine's own event loop ran up to {lag_ms:.0} ms late ({p95:.0} ms at p95), and timestamps taken then are late by as much: the browser itself was saturated, and part of what this level measured is the tool, not the server"),
                    (None, true) => format!("{level}：测量引擎自身的事件循环最多晚了 {lag_ms:.0} ms，说明浏览器本身已饱和：这一档测到的有一部分是工具而不是服务端"),
                    (None, false) => format!("{level}: the engine's own event loop ran up to {lag_ms:.0} ms late, so the browser itself was saturated: part of what this level measured is the tool, not the server"),
                }
            }
            RunCondition::TimingHidden { n_requests } => {
                if zh {
                    format!("服务端没有发送 Timing-Allow-Origin，浏览器隐藏了 {n_requests} 个请求离开浏览器的时刻：TTFT 包含浏览器自身的等待（连接排队、建连、CORS 预检），无法拆分为浏览器和服务端两部分；请让服务端在响应中加上 `Timing-Allow-Origin: *`（或本页面的源），例如 nginx：`add_header Timing-Allow-Origin * always;`")
                } else {
                    format!("the server sends no Timing-Allow-Origin, so the browser hid when {n_requests} requests left it: TTFT holds the browser's own wait (connection queue, set-up, CORS preflight) and cannot be split into the browser's part and the server's; have the server add `Timing-Allow-Origin: *` (or this page's origin) to its responses, e.g. nginx `add_header Timing-Allow-Origin * always;`")
                }
            }
            RunCondition::NoResponse {
                n_requests: n,
                cause,
                ref page_origin,
            } => no_response_text(n, cause, page_origin.as_deref().unwrap_or("this page's origin"), zh),
            RunCondition::Interrupted {
                ref cause,
                n_records,
            } => match (cause, zh) {
                (Interruption::PageClosed, true) => format!("运行没有结束：页面在运行中被关闭或重新加载；这里保留了此前完成的 {n_records} 个请求的测量结果"),
                (Interruption::PageClosed, false) => format!("the run did not end: the page was closed or reloaded while it went; the {n_records} requests finished before are kept here"),
                (Interruption::EngineStopped { reason }, true) => format!("运行没有结束：测量引擎停止了（{reason}）；这里保留了此前完成的 {n_records} 个请求的测量结果"),
                (Interruption::EngineStopped { reason }, false) => format!("the run did not end: the measuring engine stopped ({reason}); the {n_records} requests finished before are kept here"),
            },
            RunCondition::RecordsNotKept { n_records } => records_not_kept_text(n_records, zh),
            RunCondition::Imported {
                ref tool,
                ref missing,
            } => {
                if zh {
                    format!("从 {tool} 的结果导入（在服务端运行的客户端，而不是本浏览器）；它没有测量：{}；吞吐量是它自己在其运行时长上算出的", missing.join("；"))
                } else {
                    format!("imported from {tool} results (a client on the server side, not this browser); it does not measure: {}; the throughputs are its own, over its duration", missing.join("; "))
                }
            }
            RunCondition::Locust {
                ref locust_version,
                n_workers,
                ref hosts,
            } => {
                let hosts = hosts.join(", ");
                if zh {
                    format!("由 Locust {locust_version} 的 {n_workers} 个 worker 进程（主机：{hosts}）执行导出的计划测得，而不是本浏览器：没有浏览器等待；各 worker 的时钟按系统时间对齐，多台机器时，按时间的吞吐图带有机器之间的时钟偏差（每个请求自身的时间不受影响）")
                } else {
                    format!("measured by {n_workers} Locust {locust_version} worker process(es) on {hosts} running the exported plan, not by this browser: there is no browser wait; the workers' clocks are put on one time line by their wall clocks, so across machines the tokens-over-time chart carries their clock offset (each request's own timings do not)")
                }
            }
            RunCondition::RequestCapReached { concurrency, limit } => {
                if zh {
                    format!("并发 {concurrency}：已发出单次运行可保存的最多 {limit} 个请求，在设定时长结束前停止；要测更久，请拆成几次较短的运行")
                } else {
                    format!("concurrency {concurrency} sent {limit} requests, the most one run holds, and stopped before its duration was up; to measure longer, split the test into several shorter runs")
                }
            }
            RunCondition::CoarseTimer { resolution_us } => {
                if zh {
                    format!("计时器精度为 {resolution_us:.0} µs：以跨源隔离（COOP + COEP）方式提供本页面可达到 5 µs")
                } else {
                    format!("timer resolution is {resolution_us:.0} µs: serve the page cross-origin isolated (COOP + COEP) for 5 µs")
                }
            }
            RunCondition::StoppedEarly {
                n_requests,
                n_early,
                asked_mean,
                produced_mean,
                forced,
            } => match (forced, zh) {
                (false, true) => format!("{n_requests} 个成功的请求中有 {n_early} 个在达到所要求的输出长度之前就自行结束了（finish_reason 为 stop）：平均要求 {asked_mean:.0} 个 token，实际生成 {produced_mean:.0} 个。每个 token 的 TTFT、TPOT 不受影响，但 E2E 和吞吐是更短回答的数值；要测量计划的长度，请勾选“强制输出长度”（min_tokens 与 ignore_eos，vLLM 和 SGLang 支持）"),
                (false, false) => format!("{n_early} of {n_requests} successful requests ended on their own (finish_reason stop) before the output length they asked for: {produced_mean:.0} tokens produced on average where {asked_mean:.0} were asked. TTFT and TPOT hold per token, but E2E and throughput are those of shorter answers than the plan's; tick Force output lengths (min_tokens and ignore_eos, which vLLM and SGLang read) to measure the lengths asked"),
                (true, true) => format!("{n_requests} 个成功的请求中有 {n_early} 个在达到所要求的输出长度之前就结束了（平均要求 {asked_mean:.0} 个 token，实际 {produced_mean:.0} 个），尽管计划要求服务端继续（min_tokens、ignore_eos）：这个服务端不理会这两个字段；E2E 和吞吐是更短回答的数值"),
                (true, false) => format!("{n_early} of {n_requests} successful requests ended before the output length they asked for ({produced_mean:.0} tokens produced on average where {asked_mean:.0} were asked) although the plan asked the server to go on (min_tokens, ignore_eos): this server ignores them, and E2E and throughput are those of shorter answers than the plan's"),
            },
            RunCondition::BufferedStream {
                ref levels,
                n_requests,
                share_pct,
                largest,
            } => {
                let at = levels.iter().map(u32::to_string).collect::<Vec<_>>();
                if zh {
                    format!("并发 {} 时，{n_requests} 个请求的流是成批到达的（最多 {share_pct:.0}% 的 token 与其他 token 一起到达，一次最多 {largest} 个），而服务端是逐个生成 token 的：中间有网关或代理在缓冲或压缩 text/event-stream，这几档的 TTFT、TPOT 和 ITL 是它放行的节奏。nginx：对该类型关闭 gzip（gzip_types 不含 text/event-stream），设置 proxy_buffering off，或让服务端发送响应头 X-Accel-Buffering: no；Caddy、CDN 和 API 网关同样关闭对 text/event-stream 的缓冲与压缩", at.join("、"))
                } else {
                    format!("at concurrency {}, {n_requests} streams arrived in bursts (up to {share_pct:.0}% of their tokens together with others, up to {largest} at once) though the server makes tokens one by one: a gateway or proxy buffers or compresses text/event-stream, and TTFT, TPOT and ITL there are its releases. For nginx, turn gzip off for that type (leave text/event-stream out of gzip_types) and set proxy_buffering off, or have the server send the header X-Accel-Buffering: no; turn buffering and compression off for text/event-stream on Caddy, a CDN or an API gateway alike", at.join(", "))
                }
            }
            RunCondition::NetworkRoundTrip {
                rtt_ms,
                n_probes,
                after_ms,
                concurrency,
                ttft_p50_ms,
            } => {
                let counted = n_probes.saturating_sub(1).max(1);
                let share = match (concurrency, ttft_p50_ms) {
                    (Some(c), Some(ttft)) if ttft > 0.0 => {
                        let pct = (rtt_ms / ttft * 100.0).min(100.0);
                        if zh {
                            format!("；TTFT 里包含一次往返：并发 {c} 时 TTFT p50（{ttft:.0} 毫秒）中约 {pct:.0}% 是网络的，不是服务端的")
                        } else {
                            format!("; a TTFT holds one: about {pct:.0}% of TTFT p50 at concurrency {c} ({ttft:.0} ms) is the network's, not the server's")
                        }
                    }
                    _ => String::new(),
                };
                let moved = match after_ms {
                    Some(after) if zh => format!("；测试结束后往返为 {after:.0} 毫秒：网络在测试期间发生了变化，各档之间的差异可能来自网络"),
                    Some(after) => format!("; after the run it was {after:.0} ms: the network changed while the run went, and differences between levels may be its"),
                    None => String::new(),
                };
                if zh {
                    format!("从这个浏览器到服务端的网络往返约 {rtt_ms:.0} 毫秒（测试前向 /models 发出的 {counted} 个小请求中最快的一个）{share}{moved}")
                } else {
                    format!("the network's round trip from this browser to the server was about {rtt_ms:.0} ms (the fastest of {counted} small requests to /models before the run){share}{moved}")
                }
            }
            RunCondition::PromptCacheHits {
                mode,
                n_requests,
                n_hits,
                cached_pct,
            } => match (mode, zh) {
                (PromptMode::Same, true) => format!("{n_requests} 个请求中有 {n_hits} 个由服务端的提示词缓存（prefix cache）作答（其提示 token 的 {cached_pct:.0}% 来自缓存）：每个请求都发送同一个提示词，所以这里的 TTFT 是缓存命中的 TTFT，而不是用户用各自的提示词时感受到的；要测量预填充，请让每个请求发送各自的提示词（计划的默认设置）"),
                (PromptMode::Same, false) => format!("{n_hits} of {n_requests} requests were answered from the server's prompt cache ({cached_pct:.0}% of their prompt tokens cached): every request sent the same prompt, so their TTFT is a cache hit's, not what users with prompts of their own feel; send each request its own prompt (the plan's default) to measure prefill"),
                (PromptMode::Unique, true) => format!("{n_requests} 个请求中有 {n_hits} 个大部分由服务端的提示词缓存作答（其提示 token 的 {cached_pct:.0}%），尽管每个请求的提示词都不同：提示词前面有被共享的内容（较长的系统提示词或对话模板），这些请求的 TTFT 比没有共享前缀时低"),
                (PromptMode::Unique, false) => format!("{n_hits} of {n_requests} requests were answered mostly from the server's prompt cache ({cached_pct:.0}% of their prompt tokens) although each sent a prompt of its own: something in front of the prompt is shared (a long system prompt or chat template), and their TTFT is lower than without it"),
                (PromptMode::SharedPrefix, true) => format!("{n_requests} 个请求中有 {n_hits} 个的共享前缀由服务端的提示词缓存作答（其提示 token 的 {cached_pct:.0}%），正如计划所要求：它们的 TTFT 是缓存了这段前缀后的 TTFT"),
                (PromptMode::SharedPrefix, false) => format!("{n_hits} of {n_requests} requests had their shared prefix served from the server's prompt cache ({cached_pct:.0}% of their prompt tokens), as the plan asked: their TTFT is what a cached prefix of that length gives"),
                (PromptMode::File, true) => format!("{n_requests} 个请求中有 {n_hits} 个大部分由服务端的提示词缓存作答（其提示 token 的 {cached_pct:.0}%）：文件中的提示词有共享的开头（系统提示词、同一段文档），或者请求数多于提示词数、同一提示词被重复发送；前者也是用户会得到的，后者不是"),
                (PromptMode::File, false) => format!("{n_hits} of {n_requests} requests were answered mostly from the server's prompt cache ({cached_pct:.0}% of their prompt tokens): the file's prompts share their beginning (a system prompt, one document), or the run sent more requests than the file has prompts and repeated them; the first is what users get too, the second is not"),
            },
        }
    }
}

/// Answers that ended before the length asked are worth a note from this share of
/// the successful requests: one short answer among many says nothing.
pub(crate) const STOPPED_EARLY_SHARE: f64 = 0.1;

/// The network's round trip, when worth a note (see [`Network::is_worth_a_note`]),
/// with the share of TTFT p50 it is at the lowest level measured clean.
pub(crate) fn network(network: &Network, levels: &[Summary]) -> Option<RunCondition> {
    if !network.is_worth_a_note() {
        return None;
    }
    let lowest = levels
        .iter()
        .filter(|s| s.distorted.is_none() && s.concurrency.is_some_and(|c| c > 0))
        .filter_map(|s| Some((s.concurrency?, s.ttft_ms?.p50)))
        .min_by_key(|(c, _)| *c);
    Some(RunCondition::NetworkRoundTrip {
        rtt_ms: network.rtt_ms,
        n_probes: network.before_ms.len() as u32,
        after_ms: network.moved_to_ms(),
        concurrency: lowest.map(|(c, _)| c),
        ttft_p50_ms: lowest.map(|(_, t)| t),
    })
}

/// The run's answers that ended on their own before the length asked (`total`,
/// the whole run's summary), when they are a tenth of the successes or more.
pub(crate) fn stopped_early(total: &Summary, forced: bool) -> Option<RunCondition> {
    let early = total.early;
    let n = total.n_ok;
    (early.n_requests > 0 && early.n_requests as f64 >= STOPPED_EARLY_SHARE * n as f64).then(|| {
        RunCondition::StoppedEarly {
            n_requests: n,
            n_early: early.n_requests,
            asked_mean: early.asked_tokens as f64 / early.n_requests as f64,
            produced_mean: early.produced_tokens as f64 / early.n_requests as f64,
            forced,
        }
    })
}

/// The levels whose streams arrived in bursts (marked
/// [`Distortion::Buffered`](crate::summary::Distortion::Buffered)), in one note.
pub(crate) fn buffered_stream(levels: &[Summary]) -> Option<RunCondition> {
    let buffered: Vec<(u32, u64, f64, u64)> = levels
        .iter()
        .filter_map(|level| match (level.concurrency, &level.distorted) {
            (
                Some(c),
                Some(crate::summary::Distortion::Buffered {
                    n_requests,
                    share_pct,
                    largest,
                }),
            ) => Some((c, *n_requests, *share_pct, *largest)),
            _ => None,
        })
        .collect();
    (!buffered.is_empty()).then(|| RunCondition::BufferedStream {
        levels: buffered.iter().map(|b| b.0).collect(),
        n_requests: buffered.iter().map(|b| b.1).sum(),
        share_pct: buffered.iter().map(|b| b.2).fold(0.0, f64::max),
        largest: buffered.iter().map(|b| b.3).max().unwrap_or(0),
    })
}

/// A request counts as answered from the prompt cache when at least this share of
/// its prompt tokens, and at least [`CACHE_HIT_MIN_TOKENS`], were cached: a chat
/// template's shared first block (16 tokens in vLLM) is no hit.
pub(crate) const CACHE_HIT_SHARE: f64 = 0.5;
/// See [`CACHE_HIT_SHARE`].
pub(crate) const CACHE_HIT_MIN_TOKENS: u64 = 32;

/// Measured requests the server answered mostly from its prompt cache, from what
/// it said of each (`cached_tokens`, or llama.cpp's timings); `None` when none
/// was, or none said. With a shared prefix, where the plan asks for the cache,
/// any request with [`CACHE_HIT_MIN_TOKENS`] cached counts: the note then says
/// how much the prefix was served from it.
pub(crate) fn prompt_cache(mode: PromptMode, records: &[RequestRecord]) -> Option<RunCondition> {
    let share = match mode {
        PromptMode::SharedPrefix => 0.0,
        PromptMode::Unique | PromptMode::Same | PromptMode::File => CACHE_HIT_SHARE,
    };
    let reported: Vec<(u64, u64)> = records
        .iter()
        .filter(|r| !r.warmup && r.is_ok())
        // A conversation's later turns read its earlier ones from the cache: asked for.
        .filter(|r| r.turn.is_none_or(|t| t.index == 0))
        .filter_map(|r| {
            let prompt = r.usage.as_ref()?.prompt_tokens.filter(|&p| p > 0)?;
            Some((prompt, r.cached_prompt_tokens()?.min(prompt)))
        })
        .collect();
    let hits: Vec<&(u64, u64)> = reported
        .iter()
        .filter(|(prompt, cached)| {
            *cached >= CACHE_HIT_MIN_TOKENS && *cached as f64 >= share * *prompt as f64
        })
        .collect();
    if hits.is_empty() {
        return None;
    }
    let (prompt, cached) = hits.iter().fold((0u64, 0u64), |(p, c), (prompt, cached)| {
        (p + prompt, c + cached)
    });
    Some(RunCondition::PromptCacheHits {
        mode,
        n_requests: reported.len() as u64,
        n_hits: hits.len() as u64,
        cached_pct: 100.0 * cached as f64 / prompt as f64,
    })
}

/// The engine-lag condition of one level: its event loop's worst and p95 lateness
/// while requests were in flight (ms), and what its stalls did to the token events
/// (`None` when not counted). `None` when the loop stayed within [`LAG_NOTE_MS`],
/// or when it only stalled now and then (p95 within [`LAG_DISTORTS_P95_MS`]) and
/// the stalls held too few token events to move a p99 the page reports.
pub fn engine_lag(
    concurrency: u32,
    lag_max_ms: f64,
    lag_p95_ms: f64,
    stalls: Option<StallCount>,
) -> Option<RunCondition> {
    let moved_nothing = lag_p95_ms <= LAG_DISTORTS_P95_MS && stalls.is_some_and(|s| !s.moves_p99());
    (lag_max_ms > LAG_NOTE_MS && !moved_nothing).then_some(RunCondition::EngineLag {
        concurrency,
        lag_ms: lag_max_ms,
        lag_p95_ms: Some(lag_p95_ms),
        stalls,
    })
}

/// What to do about requests that got no response, per cause, with how to allow
/// `origin` on the servers people run.
fn no_response_text(n: u64, cause: NoResponseCause, origin: &str, zh: bool) -> String {
    match (cause, zh) {
        (NoResponseCause::MixedContent, false) => format!("{n} requests got no response: this page is served over https:// and the endpoint is plain http://, which browsers block (mixed content); serve the endpoint over HTTPS, or open this page over http:// (e.g. `cargo xtask serve` on your own machine)"),
        (NoResponseCause::MixedContent, true) => format!("{n} 个请求没有得到响应：本页面通过 https:// 提供，而端点是明文 http://，浏览器会拦截（混合内容）；请让端点使用 HTTPS，或通过 http:// 打开本页面（例如在本机运行 `cargo xtask serve`）"),
        (NoResponseCause::Cors, false) => format!("{n} requests got no response this page may read: the server answers (a request without CORS reached it), but does not allow this page's origin, {origin}. Allow it on the server: vLLM `--allowed-origins '[\"{origin}\"]'`; Ollama `OLLAMA_ORIGINS={origin}`; llama.cpp `llama-server --cors-origins {origin}`; LiteLLM `LITELLM_CORS_ORIGINS={origin}` (it allows every origin when that is unset); nginx in front: `add_header Access-Control-Allow-Origin {origin} always;` and `add_header Access-Control-Allow-Headers \"authorization, content-type\" always;`, with OPTIONS answered 204; Caddy: `header Access-Control-Allow-Origin {origin}` and `header Access-Control-Allow-Headers \"authorization, content-type\"`. Any server: answer the OPTIONS preflight, allow the Authorization (or api-key) and Content-Type headers, and send Access-Control-Allow-Origin on every response, errors and the stream included"),
        (NoResponseCause::Cors, true) => format!("{n} 个请求没有得到本页面可读取的响应：服务端有应答（不带 CORS 的请求能到达），但没有允许本页面的源 {origin}。请在服务端允许它：vLLM `--allowed-origins '[\"{origin}\"]'`；Ollama `OLLAMA_ORIGINS={origin}`；llama.cpp `llama-server --cors-origins {origin}`；LiteLLM `LITELLM_CORS_ORIGINS={origin}`（不设置时它允许所有源）；前面有 nginx：`add_header Access-Control-Allow-Origin {origin} always;` 和 `add_header Access-Control-Allow-Headers \"authorization, content-type\" always;`，并对 OPTIONS 返回 204；Caddy：`header Access-Control-Allow-Origin {origin}` 和 `header Access-Control-Allow-Headers \"authorization, content-type\"`。任何服务端都要：应答 OPTIONS 预检，允许 Authorization（或 api-key）和 Content-Type 请求头，并在每个响应（包括错误和流）上发送 Access-Control-Allow-Origin"),
        (NoResponseCause::CorsPreflight, false) => format!("{n} requests got no response: the server allows this page's origin ({origin}) for a plain GET (/models was readable), but not these requests: its CORS preflight (OPTIONS) refused them, or it dropped the connection; have it answer OPTIONS with 204 and `Access-Control-Allow-Headers: authorization, content-type` (and `api-key` if the key goes in that header), and look at its log for dropped connections"),
        (NoResponseCause::CorsPreflight, true) => format!("{n} 个请求没有得到响应：服务端对普通 GET 允许本页面的源（{origin}）（/models 可以读取），却不允许这些请求：它的 CORS 预检（OPTIONS）拒绝了它们，或者它断开了连接；请让它对 OPTIONS 返回 204 并带上 `Access-Control-Allow-Headers: authorization, content-type`（密钥放在 api-key 头时还要加上 `api-key`），并查看它的日志里是否有断开的连接"),
        (NoResponseCause::Unreachable, false) => format!("{n} requests got no response: the host did not answer at all, not even a request without CORS; check the base URL, that the server runs and listens on that address and port, any firewall between, and for https:// a certificate this browser trusts (open the base URL in a tab once to see)"),
        (NoResponseCause::Unreachable, true) => format!("{n} 个请求没有得到响应：主机完全没有应答，连不带 CORS 的请求也没有；请检查 Base URL、服务是否在该地址和端口上运行、中间的防火墙，以及 https:// 时浏览器是否信任其证书（在新标签页打开一次 Base URL 即可看到）"),
        (NoResponseCause::CorsOrUnreachable, false) => format!("{n} requests got no response: either the server does not allow this page's origin ({origin}) by CORS, or it is not reachable; this page is cross-origin isolated, so it cannot probe which. Open the base URL's /models in a tab: if it answers, allow the origin on the server (vLLM `--allowed-origins`, Ollama `OLLAMA_ORIGINS`, llama.cpp `--cors-origins`, LiteLLM `LITELLM_CORS_ORIGINS`, or Access-Control-Allow-Origin in the proxy in front)"),
        (NoResponseCause::PrivateNetwork, false) => format!("{n} requests got no response: this page is on the public internet ({origin}) and the endpoint is on this machine or a private network, which browsers guard (Private Network Access: Chrome 141 and later ask your permission to reach devices on your local network). Allow it when the browser asks, and have the server answer the CORS preflight with `Access-Control-Allow-Private-Network: true` besides its other CORS headers; or open tokenmeter from this machine instead (`cargo xtask serve`, or `trunk serve` beside the server), or reach the server by a public HTTPS address (a TLS proxy in front of it)"),
        (NoResponseCause::PrivateNetwork, true) => format!("{n} 个请求没有得到响应：本页面位于公网（{origin}），而端点在本机或私有网络上，浏览器会对此加以防护（Private Network Access：Chrome 141 及之后的版本会请求你允许访问本地网络上的设备）。请在浏览器询问时允许，并让服务端在 CORS 预检的应答中除其他 CORS 头外再带上 `Access-Control-Allow-Private-Network: true`；或者改为在本机打开 tokenmeter（`cargo xtask serve`，或在服务端旁运行 `trunk serve`），或通过公网 HTTPS 地址访问服务端（在它前面加一个 TLS 代理）"),
        (NoResponseCause::CorsOrUnreachable, true) => format!("{n} 个请求没有得到响应：要么服务端没有通过 CORS 允许本页面的源（{origin}），要么无法连接；本页面是跨源隔离的，无法探测是哪一种。请在新标签页打开 Base URL 的 /models：如果有应答，就在服务端允许这个源（vLLM `--allowed-origins`、Ollama `OLLAMA_ORIGINS`、llama.cpp `--cors-origins`、LiteLLM `LITELLM_CORS_ORIGINS`，或前面代理的 Access-Control-Allow-Origin）"),
    }
}

/// Why requests got no response, as far as it can be told without a probe: an
/// https:// page calling plain http:// off loopback is mixed content; a cross-origin
/// isolated page cannot probe without CORS. `None`: probe (see
/// [`no_response_from_probes`]).
pub fn no_response_before_probe(
    page_origin: Option<&str>,
    base_url: &str,
    cross_origin_isolated: bool,
) -> Option<NoResponseCause> {
    let page_is_https = page_origin.is_some_and(|o| o.starts_with("https://"));
    if page_is_https && browser::is_plain_http(base_url) && !is_loopback(base_url) {
        return Some(NoResponseCause::MixedContent);
    }
    let page_is_public = page_origin.is_some_and(|o| !is_private(o));
    if page_is_public && is_private(base_url) {
        return Some(NoResponseCause::PrivateNetwork);
    }
    cross_origin_isolated.then_some(NoResponseCause::CorsOrUnreachable)
}

/// Why requests got no response, from two probes of `GET {base}/models`: one
/// without CORS (`reached`: the host answered anything), one with (`readable`: its
/// answer allowed this origin).
pub fn no_response_from_probes(reached: bool, readable: bool) -> NoResponseCause {
    match (reached, readable) {
        (false, _) => NoResponseCause::Unreachable,
        (true, false) => NoResponseCause::Cors,
        (true, true) => NoResponseCause::CorsPreflight,
    }
}

/// The host of an http(s) URL or origin, without its port or brackets.
fn host_of(url: &str) -> &str {
    let rest = url.trim().split_once("://").map_or("", |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or("");
    match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    }
}

/// An address on this machine or a private network, as browsers' Private
/// Network Access tells them: loopback, RFC 1918 and link-local IPv4, unique
/// local and link-local IPv6, `localhost` and `.local` names.
fn is_private(url: &str) -> bool {
    let host = host_of(url).to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") || host.ends_with(".local") {
        return true;
    }
    if let Ok(v4) = host.parse::<std::net::Ipv4Addr>() {
        return v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified();
    }
    if let Ok(v6) = host.parse::<std::net::Ipv6Addr>() {
        let first = v6.segments()[0];
        return v6.is_loopback() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80;
    }
    false
}

/// Browsers let an https:// page call these over plain http://.
fn is_loopback(base_url: &str) -> bool {
    let rest = base_url.trim().get(7..).unwrap_or("");
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    };
    host == "localhost" || host.ends_with(".localhost") || host == "::1" || host.starts_with("127.")
}

/// "concurrency 8", or "open loop" for arrivals at a rate (concurrency 0).
pub(crate) fn level_name(concurrency: u32, lang: Lang) -> String {
    match (concurrency, lang) {
        (0, Lang::En) => "open loop".into(),
        (0, Lang::Zh) => "开环".into(),
        (c, Lang::En) => format!("concurrency {c}"),
        (c, Lang::Zh) => format!("并发 {c}"),
    }
}

/// Levels where `engine` itself queued requests (see [`Summary::browser_queued`]).
pub(crate) fn browser_queue(levels: &[Summary], engine: Engine) -> Vec<RunCondition> {
    levels
        .iter()
        .filter_map(|s| {
            browser_queue_at(
                engine,
                s.concurrency.unwrap_or(0),
                &s.protocols,
                s.browser_wait_ms.map(|d| d.p95),
                s.ttft_after_send_ms.map(|d| d.p50),
            )
        })
        .collect()
}

/// The browser-queue condition of one level, from the protocols its requests went
/// over and, where Resource Timing showed them, its browser wait p95 and TTFT after
/// sending p50 (ms); `None` when `engine` did not queue there.
pub(crate) fn browser_queue_at(
    engine: Engine,
    concurrency: u32,
    protocols: &VecMap<String, u64>,
    wait_p95_ms: Option<f64>,
    ttft_after_send_p50_ms: Option<f64>,
) -> Option<RunCondition> {
    let protocol = browser::queued_protocol(engine, concurrency, protocols)?;
    let wait_hidden = !engine.shows_queue(protocol);
    Some(RunCondition::BrowserQueue {
        concurrency,
        wait_p95_ms: wait_p95_ms.filter(|_| !wait_hidden),
        ttft_after_send_p50_ms: ttft_after_send_p50_ms.filter(|_| !wait_hidden),
        protocol: protocol.to_owned(),
        connections: engine.connections_per_host(protocol).unwrap_or(0),
        wait_hidden,
    })
}

/// Requests whose Resource Timing hid when they left the browser, over the run:
/// the server sends no `Timing-Allow-Origin`.
pub(crate) fn timing_hidden(levels: &[Summary]) -> Option<RunCondition> {
    let n_requests: u64 = levels.iter().map(|s| s.n_timing_hidden).sum();
    (n_requests > 0).then_some(RunCondition::TimingHidden { n_requests })
}

/// Repeated slow sends look like CORS preflights that the browser could not cache:
/// without `Access-Control-Max-Age`, Chromium keeps a preflight for 5 s only, so a
/// long run pays one every 5 s. (Browsers do not expose preflights themselves.)
///
/// A request counts as preflighted again when, on an open connection with no
/// browser queue in front, it waited at least [`PREFLIGHT_WORTH_NOTING_US`] and at
/// least three times what such requests waited at the median: a preflight is a round
/// trip to the server, far above the few ms a send takes, while a busy machine's
/// stray waits of 10–30 ms (measured: a loaded 2-core machine, debug build) sit
/// just above the rest. The run's first request is left out (it pays a preflight
/// whatever the server sends, along with connection set-up), and it takes two such
/// waits to make a pattern. Only levels with at most [`QUIET_IN_FLIGHT`] requests in
/// flight count: above it the browser's own burst of sends makes such waits. And
/// only engines whose timings show preflights and little else count (see
/// [`Engine::shows_preflights`]): elsewhere the note would be a guess.
pub(crate) fn uncached_preflight(
    levels: &[Summary],
    records: &[RequestRecord],
    engine: Engine,
) -> Option<RunCondition> {
    if !engine.shows_preflights() {
        return None;
    }
    let quiet = |concurrency: u32| {
        levels
            .iter()
            .any(|s| s.concurrency == Some(concurrency) && s.peak_concurrency <= QUIET_IN_FLIGHT)
    };
    let first_sent_us = records
        .iter()
        .filter(|r| r.browser.is_some())
        .map(|r| r.sent_us)
        .min()?;
    let mut waits: Vec<f64> = records
        .iter()
        .filter(|r| !r.warmup && r.sent_us != first_sent_us && quiet(r.concurrency))
        .filter(|r| {
            // Waits in the browser's own connection queue are no preflight.
            let protocol = r.browser.as_ref().and_then(|b| b.protocol.as_deref());
            !protocol.is_some_and(|p| browser::queues(engine, r.concurrency, p))
        })
        .filter_map(RequestRecord::unexplained_wait_us)
        .map(|us| us as f64)
        .collect();
    let usual_us = crate::stats::percentile_select(&mut waits.clone(), 50.0)?;
    let threshold_us = (PREFLIGHT_WORTH_NOTING_US as f64).max(3.0 * usual_us);
    waits.retain(|&w| w >= threshold_us);
    if waits.len() < 2 {
        return None;
    }
    let wait_ms = crate::stats::percentile_select(&mut waits, 50.0)? / 1e3;
    Some(RunCondition::UncachedPreflight {
        n_requests: waits.len() as u64,
        wait_ms,
    })
}

/// A wait shorter than this is not taken for a preflight: a loaded machine (a
/// debug build at 32 streams on 2 cores, measured) makes sends wait 20–30 ms now and
/// then with every preflight cached; and a preflight cheaper than this is not
/// worth a note.
pub(crate) const PREFLIGHT_WORTH_NOTING_US: u64 = 3 * SLOW_SEND_US;

fn records_not_kept_text(n_records: u64, zh: bool) -> String {
    if zh {
        format!("历史记录里的这次运行没有保存 {n_records} 条逐请求记录（超出浏览器存储的容量），汇总、结论和说明都还在；要保留全部记录，请在运行结束时导出 JSON")
    } else {
        format!("kept in history without its {n_records} per-request records (too large for this browser's storage); the summaries, verdict and notes are whole; export the JSON when a run ends to keep everything")
    }
}

/// The note of [`RunCondition::RecordsNotKept`], in English, on its own: history
/// adds it to a kept run without the page's code holding every condition's text
/// (which the page's first download does without).
pub(crate) fn records_not_kept_note(n_records: u64) -> String {
    records_not_kept_text(n_records, false)
}

/// The English sentences of `conditions`: the document's `notes`.
pub(crate) fn notes(conditions: &[RunCondition]) -> Vec<String> {
    conditions.iter().map(|c| c.text(Lang::En)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_condition_speaks_both_languages() {
        let all = [
            RunCondition::BrowserQueue {
                concurrency: 8,
                wait_p95_ms: Some(912.4),
                ttft_after_send_p50_ms: Some(101.0),
                protocol: HTTP1.into(),
                connections: 6,
                wait_hidden: false,
            },
            RunCondition::UncachedPreflight {
                n_requests: 3,
                wait_ms: 40.2,
            },
            RunCondition::HiddenPage {
                concurrency: 0,
                hidden_ms: 1_340.0,
            },
            RunCondition::EngineLag {
                concurrency: 64,
                lag_ms: 86.4,
                lag_p95_ms: None,
                stalls: None,
            },
            RunCondition::CoarseTimer {
                resolution_us: 100.0,
            },
            RunCondition::RequestCapReached {
                concurrency: 16,
                limit: 100_000,
            },
        ];
        let en: Vec<String> = all.iter().map(|c| c.text(Lang::En)).collect();
        assert_eq!(
            en,
            [
                "concurrency 8: the browser spoke HTTP/1.1, which allows 6 connections per host, and held requests back for 912 ms at p95 before sending them; TTFT after sending was 101 ms at p50; use an HTTPS endpoint (HTTP/2) to measure the server beyond 6",
                "3 requests waited about 40 ms in the browser on an open connection, as a CORS preflight costs: the server probably sends no Access-Control-Max-Age, so the browser repeats the preflight every few seconds and that time counts in TTFT; have the server send Access-Control-Max-Age (e.g. 86400)",
                "open loop: the page was hidden for 1.3 s of this level; browsers throttle hidden tabs, so its timings may be late",
                "concurrency 64: the engine's own event loop ran up to 86 ms late, so the browser itself was saturated: part of what this level measured is the tool, not the server",
                "timer resolution is 100 µs: serve the page cross-origin isolated (COOP + COEP) for 5 µs",
                "concurrency 16 sent 100000 requests, the most one run holds, and stopped before its duration was up; to measure longer, split the test into several shorter runs",
            ]
        );
        assert_eq!(notes(&all), en);
        let zh: Vec<String> = all.iter().map(|c| c.text(Lang::Zh)).collect();
        assert!(
            zh[0].starts_with("并发 8：") && zh[0].contains("p95 为 912 ms"),
            "{}",
            zh[0]
        );
        assert!(zh[1].contains("Access-Control-Max-Age") && zh[1].contains("40 ms"));
        assert!(zh[2].starts_with("开环："));
        assert!(zh[3].contains("86 ms"));
        assert!(zh[4].contains("100 µs"));
        assert!(zh[5].starts_with("并发 16：") && zh[5].contains("100000"));
        for text in &zh {
            assert!(
                text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{text}"
            );
        }
    }

    #[test]
    fn an_unknown_wait_is_said_so() {
        let c = RunCondition::BrowserQueue {
            concurrency: 12,
            wait_p95_ms: None,
            ttft_after_send_p50_ms: None,
            protocol: HTTP1.into(),
            connections: 6,
            wait_hidden: false,
        };
        assert!(c
            .text(Lang::En)
            .contains("held requests back for an unknown time before sending them; use"));
        assert!(c.text(Lang::Zh).contains("未知的时长"));
    }

    #[test]
    fn webkitgtk_queues_over_http2_and_hides_the_wait() {
        let c = RunCondition::BrowserQueue {
            concurrency: 16,
            wait_p95_ms: None,
            ttft_after_send_p50_ms: None,
            protocol: "h2".into(),
            connections: 6,
            wait_hidden: true,
        };
        assert_eq!(
            c.text(Lang::En),
            "concurrency 16: this browser sends at most 6 requests at a time to one host even over h2, and held the others back for a time this browser's Resource Timing does not show before sending them; use Chromium or Firefox to measure the server beyond 6"
        );
        assert!(c.text(Lang::Zh).contains("Resource Timing 不显示"));
    }

    #[test]
    fn a_condition_from_before_protocols_reads_as_http1() {
        let json = r#"{"kind":"browser_queue","concurrency":8,"wait_p95_ms":900.0,"ttft_after_send_p50_ms":null}"#;
        let c: RunCondition = serde_json::from_str(json).unwrap();
        assert!(c
            .text(Lang::En)
            .starts_with("concurrency 8: the browser spoke HTTP/1.1, which allows 6"));
    }

    #[test]
    fn conditions_round_trip_as_tagged_json() {
        let c = RunCondition::EngineLag {
            concurrency: 4,
            lag_ms: 60.0,
            lag_p95_ms: None,
            stalls: None,
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"engine_lag","concurrency":4,"lag_ms":60.0}"#
        );
        assert_eq!(serde_json::from_str::<RunCondition>(&json).unwrap(), c);
    }

    #[test]
    fn every_condition_reads_back_as_written() {
        let all = vec![
            RunCondition::BrowserQueue {
                concurrency: 8,
                wait_p95_ms: Some(900.5),
                ttft_after_send_p50_ms: None,
                protocol: "h2".into(),
                connections: 6,
                wait_hidden: true,
            },
            RunCondition::UncachedPreflight {
                n_requests: 5,
                wait_ms: 41.0,
            },
            RunCondition::HiddenPage {
                concurrency: 2,
                hidden_ms: 1500.0,
            },
            RunCondition::EngineLag {
                concurrency: 64,
                lag_ms: 41.0,
                lag_p95_ms: Some(3.5),
                stalls: Some(StallCount {
                    n_events: 6_400,
                    n_late: 80,
                    n_requests: 64,
                    n_late_first: 0,
                    late_max_ms: 41.0,
                }),
            },
            RunCondition::TimingHidden { n_requests: 12 },
            RunCondition::CoarseTimer {
                resolution_us: 100.0,
            },
            RunCondition::NoResponse {
                n_requests: 3,
                cause: NoResponseCause::CorsPreflight,
                page_origin: Some("https://tm.example".into()),
            },
            RunCondition::Interrupted {
                cause: Interruption::PageClosed,
                n_records: 7,
            },
            RunCondition::Interrupted {
                cause: Interruption::EngineStopped {
                    reason: "went silent".into(),
                },
                n_records: 0,
            },
            RunCondition::RecordsNotKept { n_records: 10_000 },
            RunCondition::Imported {
                tool: "vllm bench serve".into(),
                missing: vec!["ITL".into()],
            },
            RunCondition::Locust {
                locust_version: "2.32.0".into(),
                n_workers: 2,
                hosts: vec!["a".into(), "b".into()],
            },
            RunCondition::RequestCapReached {
                concurrency: 512,
                limit: 100_000,
            },
            RunCondition::PromptCacheHits {
                mode: PromptMode::Same,
                n_requests: 32,
                n_hits: 31,
                cached_pct: 99.6,
            },
            RunCondition::BufferedStream {
                levels: vec![1, 2],
                n_requests: 16,
                share_pct: 98.5,
                largest: 100,
            },
            RunCondition::StoppedEarly {
                n_requests: 40,
                n_early: 12,
                asked_mean: 256.0,
                produced_mean: 80.5,
                forced: true,
            },
        ];
        let json = serde_json::to_string(&all).unwrap();
        assert_eq!(
            serde_json::from_str::<Vec<RunCondition>>(&json).unwrap(),
            all
        );
    }

    #[test]
    fn a_condition_that_cannot_be_read_says_why() {
        let error = |json: &str| {
            serde_json::from_str::<RunCondition>(json)
                .unwrap_err()
                .to_string()
        };
        assert!(error(r#"{"kind":"hidden_page","concurrency":2}"#).contains("hidden_ms"));
        assert!(error(r#"{"kind":"weather"}"#).contains("weather"));
        // Each variant's `cause` has its own shape.
        assert!(
            error(r#"{"kind":"no_response","n_requests":1,"cause":{"by":"page_closed"}}"#)
                .contains("cause")
        );
        assert!(error(r#"{"kind":"interrupted","n_records":1,"cause":"cors"}"#).contains("cause"));
        assert!(error(r#"{"kind":"no_response","n_requests":1,"cause":"rain"}"#).contains("rain"));
        assert!(
            error(r#"{"kind":"interrupted","n_records":1,"cause":{"by":"engine_stopped"}}"#)
                .contains("reason")
        );
    }

    #[test]
    fn engine_lag_is_a_note_only_above_its_threshold_and_says_how_much() {
        assert_eq!(engine_lag(64, 19.9, 19.9, None), None);
        let c = engine_lag(64, 41.0, 32.4, Some(StallCount::default())).unwrap();
        assert_eq!(
            c.text(Lang::En),
            "concurrency 64: while requests were in flight the engine's own event loop ran up to 41 ms late (32 ms at p95), and timestamps taken then are late by as much: the browser itself was saturated, and part of what this level measured is the tool, not the server"
        );
        assert!(c.text(Lang::Zh).contains("最多晚了 41 ms（p95 为 32 ms）"));
        // Stalls now and then, on time otherwise: said as what they are.
        let stalls = engine_lag(16, 44.0, 2.0, None).unwrap();
        assert_eq!(
            stalls.text(Lang::En),
            "concurrency 16: while requests were in flight the engine's own event loop stalled at times, for up to 44 ms (2 ms at p95): tokens that arrived during a stall were stamped up to that late, which can show in ITL and TTFT at p99"
        );
        assert!(stalls.text(Lang::Zh).contains("最长 44 ms（p95 为 2 ms）"));
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<RunCondition>(&json).unwrap(), c);
    }

    #[test]
    fn a_stall_is_a_note_only_when_the_events_it_held_can_move_a_p99() {
        let stalls = |n_late, n_late_first| StallCount {
            n_events: 25_600,
            n_late,
            n_requests: 256,
            n_late_first,
            late_max_ms: 46.0,
        };
        // The level-start burst of `fetch` calls: a stall before any token arrived.
        assert_eq!(engine_lag(256, 135.0, 3.0, Some(stalls(0, 0))), None);
        // Three events of 25,600, no first token among them: no p99 moved.
        assert_eq!(engine_lag(256, 64.0, 1.0, Some(stalls(3, 0))), None);
        // Enough to move ITL's p99: said, with how many and how late.
        let held = engine_lag(64, 64.0, 1.0, Some(stalls(300, 2))).unwrap();
        assert_eq!(
            held.text(Lang::En),
            "concurrency 64: while requests were in flight the engine's own event loop stalled at times, for up to 64 ms (1 ms at p95): 300 of 25600 token events (2 of them first tokens) were stamped during a stall, up to 46 ms late, which can show in ITL and TTFT at p99"
        );
        assert!(held
            .text(Lang::Zh)
            .contains("25600 个 token 事件中有 300 个（其中 2 个是请求的首 token）"));
        let json = serde_json::to_string(&held).unwrap();
        assert!(
            json.contains(r#""stalls":{"n_events":25600,"n_late":300"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<RunCondition>(&json).unwrap(), held);
        // The first tokens of 1% of the requests move TTFT's p99.
        assert!(engine_lag(64, 64.0, 1.0, Some(stalls(3, 3))).is_some());
        // A loop late at p95 distorts the level whether or not a stall held an event.
        assert!(engine_lag(128, 90.0, 32.0, Some(stalls(0, 0))).is_some());
    }

    #[test]
    fn hidden_timing_is_said_with_the_fix() {
        let c = RunCondition::TimingHidden { n_requests: 12 };
        assert!(c.text(Lang::En).contains("sends no Timing-Allow-Origin"));
        assert!(c
            .text(Lang::En)
            .contains("add_header Timing-Allow-Origin * always;"));
        assert!(c.text(Lang::Zh).contains("Timing-Allow-Origin: *"));
    }

    #[test]
    fn an_interrupted_run_says_why_and_what_is_kept() {
        let closed = RunCondition::Interrupted {
            cause: Interruption::PageClosed,
            n_records: 7,
        };
        assert!(closed.text(Lang::En).contains("closed or reloaded"));
        assert!(closed.text(Lang::Zh).contains("7 个请求"));
        let stopped = RunCondition::Interrupted {
            cause: Interruption::EngineStopped {
                reason: "out of memory".into(),
            },
            n_records: 3,
        };
        assert!(stopped
            .text(Lang::En)
            .contains("the measuring engine stopped (out of memory)"));
        let json = serde_json::to_string(&stopped).unwrap();
        assert_eq!(
            serde_json::from_str::<RunCondition>(&json).unwrap(),
            stopped
        );
    }

    #[test]
    fn no_response_says_the_cause_and_how_to_allow_the_origin() {
        let cors = RunCondition::NoResponse {
            n_requests: 4,
            cause: NoResponseCause::Cors,
            page_origin: Some("https://tm.example".into()),
        };
        let en = cors.text(Lang::En);
        assert!(en.contains("does not allow this page's origin, https://tm.example"));
        assert!(
            en.contains(r#"vLLM `--allowed-origins '["https://tm.example"]'`"#),
            "{en}"
        );
        assert!(en.contains("OLLAMA_ORIGINS=https://tm.example"));
        assert!(en.contains("LITELLM_CORS_ORIGINS=https://tm.example"));
        assert!(en.contains("llama-server --cors-origins https://tm.example"));
        assert!(cors
            .text(Lang::Zh)
            .contains("没有允许本页面的源 https://tm.example"));
        let private = RunCondition::NoResponse {
            n_requests: 2,
            cause: NoResponseCause::PrivateNetwork,
            page_origin: Some("https://tm.example".into()),
        };
        assert!(private
            .text(Lang::En)
            .contains("public internet (https://tm.example)"));
        assert!(private
            .text(Lang::En)
            .contains("Access-Control-Allow-Private-Network: true"));
        assert!(private.text(Lang::En).contains("cargo xtask serve"));
        assert!(private.text(Lang::Zh).contains("私有网络"));
        for cause in [
            NoResponseCause::MixedContent,
            NoResponseCause::Unreachable,
            NoResponseCause::CorsOrUnreachable,
            NoResponseCause::PrivateNetwork,
        ] {
            let c = RunCondition::NoResponse {
                n_requests: 1,
                cause,
                page_origin: None,
            };
            assert!(c.text(Lang::En).starts_with("1 requests got no response"));
            assert!(c.text(Lang::Zh).starts_with("1 个请求没有得到响应"));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<RunCondition>(&json).unwrap(), c);
        }
    }

    #[test]
    fn the_cause_of_no_response_is_told_apart() {
        use NoResponseCause::*;
        let https = Some("https://tm.example");
        assert_eq!(
            no_response_before_probe(https, "http://10.0.0.5:8000/v1", false),
            Some(MixedContent)
        );
        assert_eq!(
            no_response_before_probe(https, "http://10.0.0.5:8000/v1", true),
            Some(MixedContent)
        );
        // A public page calling this machine or a private network: the browser's
        // Private Network Access, whatever the scheme.
        for private in [
            "http://127.0.0.1:8000/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8000/v1",
            "https://192.168.1.20/v1",
            "https://llm.office.local/v1",
            "https://[fd00::7]:8443/v1",
        ] {
            assert_eq!(
                no_response_before_probe(https, private, false),
                Some(PrivateNetwork),
                "{private}"
            );
        }
        // A page on this machine or the same private network: the probes tell.
        for page in [
            "http://127.0.0.1:8080",
            "http://10.0.0.9:8080",
            "http://localhost:8080",
        ] {
            assert_eq!(
                no_response_before_probe(Some(page), "http://192.168.1.20/v1", false),
                None,
                "{page}"
            );
        }
        assert_eq!(
            no_response_before_probe(https, "https://172.32.0.1/v1", false),
            None,
            "172.32/16 is public"
        );
        assert_eq!(
            no_response_before_probe(Some("http://127.0.0.1:8080"), "http://10.0.0.5/v1", false),
            None
        );
        assert_eq!(
            no_response_before_probe(https, "https://api.example/v1", true),
            Some(CorsOrUnreachable)
        );
        assert_eq!(no_response_from_probes(false, false), Unreachable);
        assert_eq!(no_response_from_probes(true, false), Cors);
        assert_eq!(no_response_from_probes(true, true), CorsPreflight);
    }

    /// A measured request of `prompt` tokens of which the server said `cached`
    /// were cached (through usage, or llama.cpp's timings).
    fn cached(id: u64, prompt: u64, cached: Option<u64>, by_timings: bool) -> RequestRecord {
        let mut r = crate::chart::tests_support::record(id, 1, 100, 20);
        let usage = r.usage.get_or_insert_with(Default::default);
        usage.prompt_tokens = Some(prompt);
        if by_timings {
            r.server_timings = Some(crate::stream::ServerTimings {
                prompt_ms: Some(1.0),
                prompt_n: cached.map(|c| prompt - c),
                ..Default::default()
            });
        } else {
            usage.cached_tokens = cached;
        }
        r
    }

    #[test]
    fn the_network_s_round_trip_is_said_when_it_is_long_or_moved_and_only_then() {
        let mut level = crate::summary::LevelStats::new(1);
        for i in 0..4 {
            level.add(&crate::chart::tests_support::record(i + 1, 1, 200, 20));
        }
        let levels = vec![level.summary(&Default::default())];
        let far = Network::estimate(
            vec![180.0, 61.0, 60.0, 62.0, 64.0],
            vec![],
            "GET /models",
            crate::network::TimedBy::Fetch,
        )
        .unwrap();
        let said = network(&far, &levels).unwrap();
        assert_eq!(
            said,
            RunCondition::NetworkRoundTrip {
                rtt_ms: 60.0,
                n_probes: 5,
                after_ms: None,
                concurrency: Some(1),
                ttft_p50_ms: Some(200.0)
            }
        );
        assert_eq!(said.text(Lang::En), "the network's round trip from this browser to the server was about 60 ms (the fastest of 4 small requests to /models before the run); a TTFT holds one: about 30% of TTFT p50 at concurrency 1 (200 ms) is the network's, not the server's");
        assert!(said.text(Lang::Zh).contains("约 30% 是网络的"));
        let json = serde_json::to_string(&said).unwrap();
        assert_eq!(serde_json::from_str::<RunCondition>(&json).unwrap(), said);
        // Loopback: nothing to say.
        let near = Network::estimate(
            vec![1.5, 0.3, 0.4],
            vec![0.4, 0.3],
            "GET /models",
            crate::network::TimedBy::Fetch,
        )
        .unwrap();
        assert_eq!(network(&near, &levels), None);
        // A network that moved is said, whatever its length.
        let moved = Network::estimate(
            vec![3.0, 2.0, 2.5],
            vec![40.0, 30.0],
            "GET /models",
            crate::network::TimedBy::Fetch,
        )
        .unwrap();
        assert!(network(&moved, &levels)
            .unwrap()
            .text(Lang::En)
            .contains("after the run it was 30 ms: the network changed"));
    }

    #[test]
    fn a_file_s_prompts_served_from_the_cache_are_said_and_only_then() {
        // Prompts of their own, nothing cached: silent.
        let fresh: Vec<RequestRecord> = (0..8).map(|i| cached(i, 600, Some(0), false)).collect();
        assert_eq!(prompt_cache(PromptMode::File, &fresh), None);
        // A file of one prompt, sent eight times: the repeats are cache hits.
        let repeated: Vec<RequestRecord> = (0..8)
            .map(|i| cached(i, 600, Some(if i == 0 { 0 } else { 592 }), false))
            .collect();
        let said = prompt_cache(PromptMode::File, &repeated).unwrap();
        assert!(
            said.text(Lang::En)
                .contains("7 of 8 requests were answered mostly from the server's prompt cache"),
            "{}",
            said.text(Lang::En)
        );
        assert!(said.text(Lang::En).contains("repeated them"));
        assert!(said.text(Lang::Zh).contains("同一提示词被重复发送"));
    }

    #[test]
    fn cache_hits_are_said_when_the_server_says_so_and_only_then() {
        // One prompt for all: the first computed, the rest from the cache.
        let same: Vec<RequestRecord> = (0..8)
            .map(|i| cached(i, 818, Some(if i == 0 { 0 } else { 817 }), false))
            .collect();
        let c = prompt_cache(PromptMode::Same, &same).unwrap();
        assert_eq!(
            c,
            RunCondition::PromptCacheHits {
                mode: PromptMode::Same,
                n_requests: 8,
                n_hits: 7,
                cached_pct: 100.0 * 817.0 / 818.0,
            }
        );
        assert!(c.text(Lang::En).starts_with("7 of 8 requests were answered from the server's prompt cache (100% of their prompt tokens cached): every request sent the same prompt"));
        assert!(c.text(Lang::Zh).contains("每个请求都发送同一个提示词"));
        // llama.cpp's timings say it as well.
        let llama: Vec<RequestRecord> = (0..4).map(|i| cached(i, 818, Some(817), true)).collect();
        assert!(prompt_cache(PromptMode::Same, &llama).is_some());
        // Unique prompts: a chat template's shared block is no hit; nothing said.
        let unique: Vec<RequestRecord> = (0..8).map(|i| cached(i, 818, Some(16), false)).collect();
        assert_eq!(prompt_cache(PromptMode::Unique, &unique), None);
        let none: Vec<RequestRecord> = (0..8).map(|i| cached(i, 818, Some(0), false)).collect();
        assert_eq!(prompt_cache(PromptMode::Unique, &none), None);
        // A server that says nothing of its cache: nothing said either.
        let silent: Vec<RequestRecord> = (0..8).map(|i| cached(i, 818, None, false)).collect();
        assert_eq!(prompt_cache(PromptMode::Same, &silent), None);
        // Short prompts mostly cached: below 32 tokens, no hit worth saying.
        let short: Vec<RequestRecord> = (0..8).map(|i| cached(i, 20, Some(19), false)).collect();
        assert_eq!(prompt_cache(PromptMode::Same, &short), None);
        // Unique prompts behind a long shared system prompt: said, as such.
        let shared: Vec<RequestRecord> =
            (0..4).map(|i| cached(i, 2000, Some(1600), false)).collect();
        let c = prompt_cache(PromptMode::Unique, &shared).unwrap();
        assert!(
            c.text(Lang::En)
                .contains("although each sent a prompt of its own"),
            "{}",
            c.text(Lang::En)
        );
        assert!(c.text(Lang::Zh).contains("尽管每个请求的提示词都不同"));
        // Conversations: later turns read the earlier ones from the cache, as
        // asked; only first turns that hit it would be said.
        let turns: Vec<RequestRecord> = (0..6)
            .map(|i| {
                let cached_tokens = if i % 3 == 0 { 0 } else { 600 };
                let mut r = cached(i, 800, Some(cached_tokens), false);
                r.turn = Some(crate::record::Turn {
                    session: i / 3,
                    index: (i % 3) as u32,
                    n_turns: 0,
                });
                r
            })
            .collect();
        assert_eq!(prompt_cache(PromptMode::Unique, &turns), None);
        let mut first_hit = turns.clone();
        first_hit[3] = cached(3, 800, Some(700), false);
        first_hit[3].turn = Some(crate::record::Turn {
            session: 1,
            index: 0,
            n_turns: 0,
        });
        assert!(prompt_cache(PromptMode::Unique, &first_hit).is_some());
    }

    #[test]
    fn answers_that_end_before_the_length_asked_are_said_from_a_tenth_of_them() {
        let build = |n_early: u64| {
            let mut stats = crate::summary::LevelStats::new(1);
            for id in 0..20u64 {
                let mut r = crate::chart::tests_support::record(id, 1, 100, 20);
                r.finish_reason = Some(if id < n_early { "stop" } else { "length" }.into());
                r.asked_tokens = Some(if id < n_early { 64 } else { 10 });
                stats.add(&r);
            }
            stats.summary(&Default::default())
        };
        let total = build(4);
        assert_eq!(total.early.n_requests, 4);
        assert_eq!(total.output_tokens.unwrap().mean, 10.0);
        let c = stopped_early(&total, false).unwrap();
        assert!(c.text(Lang::En).starts_with("4 of 20 successful requests ended on their own (finish_reason stop) before the output length they asked for: 10 tokens produced on average where 64 were asked"), "{}", c.text(Lang::En));
        assert!(c.text(Lang::Zh).contains("强制输出长度"));
        assert!(stopped_early(&total, true)
            .unwrap()
            .text(Lang::En)
            .contains("this server ignores them"));
        // One in twenty: not worth saying; none: nothing.
        assert_eq!(stopped_early(&build(1), false), None);
        assert_eq!(stopped_early(&build(0), false), None);
    }
}
