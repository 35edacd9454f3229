//! Where the bottleneck is, read from the levels as the reference article reads its
//! table (§4, §6): a p95 TTFT that grows faster than p50 is queueing; a TPOT that
//! rises at every step is decode; failures that appear only at the top are
//! capacity; 429s are a quota; a slow first token with no load is prefill; time
//! held in the browser is the browser's; a first token much later than the server
//! says it took (llama.cpp's `timings`) is the network's or a gateway's. Each finding carries the figures that
//! triggered it and the direction the article gives, and nothing is said that the
//! numbers do not support: every rule has a threshold, and levels the tool did not
//! measure cleanly (see `Summary::distorted`) are left out, except by the browser
//! finding, which is about them.

use crate::{
    error::ErrorKind,
    error::Lang,
    report::RunDocument,
    summary::{Distortion, Summary},
};

/// What a finding blames (the `data-cause` hook).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Requests waited in a queue before the server computed them.
    Queueing,
    /// Prompt processing (prefill) took the time.
    Prefill,
    /// Generating tokens (decode) slowed with the load.
    Decode,
    /// The server failed requests it had no room for (5xx).
    CapacityErrors,
    /// The server or a gateway limited the rate (429).
    RateLimited,
    /// The browser, not the server, held requests back.
    Browser,
    /// Time went outside the server: the network or a gateway.
    NetworkOrGateway,
    /// A gateway buffered or compressed the stream.
    BufferedStream,
    /// The KV cache was full and the server preempted requests.
    MemoryPressure,
}

impl Cause {
    /// The stable name of the cause (its `snake_case` id).
    pub fn name(self) -> &'static str {
        match self {
            Cause::Queueing => "queueing",
            Cause::Prefill => "prefill",
            Cause::Decode => "decode",
            Cause::CapacityErrors => "capacity_errors",
            Cause::RateLimited => "rate_limited",
            Cause::Browser => "browser",
            Cause::NetworkOrGateway => "network_or_gateway",
            Cause::BufferedStream => "buffered_stream",
            Cause::MemoryPressure => "memory_pressure",
        }
    }
}

/// One finding: its cause and the figures behind it.
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// p95 TTFT grew `p95_growth` times from `from` to `to`, p50 only `p50_growth`;
    /// the most requests the server itself reported waiting at `to`, where its
    /// metrics tell (see
    /// [`crate::server_metrics::ServerLevel::waiting_seen`]): with none waiting, the
    /// tail grew outside the server.
    Queueing {
        from: u32,
        to: u32,
        p50_growth: f64,
        p95_growth: f64,
        p95_ms: f64,
        server_waiting: Option<f64>,
    },
    /// At `concurrency` (the first such level) the server's KV cache reached
    /// `kv_pct` and it preempted `preemptions` requests (its metrics).
    MemoryPressure {
        concurrency: u32,
        kv_pct: f64,
        preemptions: f64,
    },
    /// TTFT p50 at the lowest level, with no one else in the queue.
    Prefill {
        concurrency: u32,
        ttft_ms: f64,
        tpot_ms: f64,
        prompt_tokens: Option<f64>,
        /// TTFT's growth per 1,000 computed input tokens at that level, where
        /// input lengths varied ([`Summary::ttft_ms_per_1k_input`]).
        ms_per_1k_input: Option<f64>,
        /// The network's round trip, left out of `ttft_ms` (when measured and
        /// worth saying).
        network_ms: Option<f64>,
    },
    /// TPOT p50 rose at every step, `from_ms` → `to_ms`; per-request speed fell while
    /// the total grew (when `batching` holds those figures).
    Decode {
        from: u32,
        to: u32,
        from_ms: f64,
        to_ms: f64,
        batching: Option<[f64; 4]>,
    },
    /// Failures (not configuration ones) at `levels` only, none below.
    CapacityErrors {
        first: u32,
        n_failed: u64,
        n_requests: u64,
        below: u32,
    },
    /// 429s, from the level `first`.
    RateLimited { first: u32, n: u64 },
    /// The browser held requests back: at `concurrency`, browser wait p95 `wait_ms`
    /// of a p95 TTFT of `ttft_ms` (or the level was left out of the verdict for it).
    Browser {
        concurrency: u32,
        wait_ms: Option<f64>,
        ttft_ms: Option<f64>,
    },
    /// At `concurrency`, the first token came `ttft_ms` after the request was sent
    /// (after it left the browser, when `after_send`), but the server says it
    /// spent `server_ms` on the prompt: `overhead_ms` is between the two (p50s over
    /// the requests that carried the server's timings).
    NetworkOrGateway {
        concurrency: u32,
        ttft_ms: f64,
        server_ms: f64,
        overhead_ms: f64,
        after_send: bool,
    },
    /// At `concurrency` (the first such level), `n_requests` streams arrived in
    /// bursts: `share_pct` of their token events, up to `largest` in one read (see
    /// [`crate::summary::Distortion::Buffered`]).
    BufferedStream {
        concurrency: u32,
        n_requests: u64,
        share_pct: f64,
        largest: u64,
    },
}

/// The KV cache this full, with preemptions, is the server's memory at its limit.
const KV_FULL_PCT: f64 = 90.0;

/// Growth of p95 over p50 that counts as a tail of its own.
const TAIL_EXCESS: f64 = 1.2;
/// TPOT must rise by this much over the ladder, and not fall by more than
/// [`STEP_TOLERANCE`] at any step, to name decode.
const TPOT_GROWTH: f64 = 1.5;
const STEP_TOLERANCE: f64 = 0.03;
/// A first token this slow with no load (ms, and TPOTs) is prefill's.
const PREFILL_MS: f64 = 1000.0;
const PREFILL_TPOTS: f64 = 50.0;
/// Browser wait this large a share of p95 TTFT is the browser's.
const BROWSER_SHARE: f64 = 0.2;
/// Successful requests a level needs before its percentiles are read for growth:
/// with fewer, p95 is the slowest request and a tail is noise.
const MIN_SAMPLES: u64 = 5;
/// A tail of its own is also this far above the median at the top level (share
/// of p50, and ms).
const TAIL_GAP_SHARE: f64 = 0.25;
const TAIL_GAP_MS: f64 = 50.0;
/// Time between the client and the server's own prompt processing that is the
/// network's or a gateway's: at least this many ms, and this share of TTFT.
const GATEWAY_MS: f64 = 50.0;
const GATEWAY_SHARE: f64 = 0.25;

impl Finding {
    pub fn cause(&self) -> Cause {
        match self {
            // The tail grew while the server said nothing waited: it is on the path.
            Finding::Queueing {
                server_waiting: Some(w),
                ..
            } if *w == 0.0 => Cause::NetworkOrGateway,
            Finding::Queueing { .. } => Cause::Queueing,
            Finding::MemoryPressure { .. } => Cause::MemoryPressure,
            Finding::Prefill { .. } => Cause::Prefill,
            Finding::Decode { .. } => Cause::Decode,
            Finding::CapacityErrors { .. } => Cause::CapacityErrors,
            Finding::RateLimited { .. } => Cause::RateLimited,
            Finding::Browser { .. } => Cause::Browser,
            Finding::NetworkOrGateway { .. } => Cause::NetworkOrGateway,
            Finding::BufferedStream { .. } => Cause::BufferedStream,
        }
    }

    /// The finding and what to try, in `lang`.
    // Long: one sentence per diagnosis, in both languages.
    pub fn text(&self, lang: Lang) -> String {
        let zh = lang == Lang::Zh;
        match *self {
            Finding::BufferedStream { concurrency, n_requests, share_pct, largest } => if zh {
                format!("并发 {concurrency} 时有 {n_requests} 个请求的流是成批到达的：{share_pct:.0}% 的 token 与其他 token 一起到达，一次最多 {largest} 个，而服务端是逐个生成的：中间有网关或代理在缓冲或压缩 text/event-stream，用户看到的也是这样的成批输出。TPOT 和 ITL 反映的是它的放行节奏。方向：nginx 对 text/event-stream 关闭 gzip（gzip_types 不含它），设置 proxy_buffering off 或让服务端发送 X-Accel-Buffering: no；CDN 和 API 网关关闭对该类型的缓冲与压缩。")
            } else {
                format!("at concurrency {concurrency}, {n_requests} streams arrived in bursts: {share_pct:.0}% of their tokens came together with others, up to {largest} at once, though the server makes them one by one: a gateway or proxy buffers or compresses text/event-stream, and users see the answer in the same bursts. TPOT and ITL are its releases. Try, for nginx, gzip off for text/event-stream (leave it out of gzip_types) and proxy_buffering off, or have the server send X-Accel-Buffering: no; on a CDN or API gateway, turn buffering and compression off for that type.")
            },
            Finding::Queueing { from, to, p50_growth, p95_growth, p95_ms, server_waiting: Some(0.0) } => {
                if zh {
                    format!("从并发 {from} 到 {to}，p95 TTFT 涨到原来的 {p95_growth:.1} 倍（{p95_ms:.0} 毫秒），p50 涨到 {p50_growth:.1} 倍，但服务端自身的指标（/metrics）显示并发 {to} 时没有请求在它的队列里等待：长尾来自服务端之外——网络、它前面的网关或代理，或本客户端。方向：对比绕过网关的测量，在离服务更近的地方测量，查看网关的连接与并发限制。")
                } else {
                    format!("from concurrency {from} to {to}, p95 TTFT grew {p95_growth:.1}× (to {p95_ms:.0} ms) while p50 grew {p50_growth:.1}×, but the server's own metrics (/metrics) show no request waiting in its queue at concurrency {to}: the tail grows outside the server, in the network, a gateway or proxy in front of it, or this client. Try measuring past the gateway to compare, from closer to the server, and checking the gateway's connection and concurrency limits.")
                }
            }
            Finding::Queueing { from, to, p50_growth, p95_growth, p95_ms, server_waiting } => {
                // A median that did not grow (shown as 1.0× or less) is not "grew 0.9×".
                let p50_grew = p50_growth >= 1.05;
                let confirmed = match server_waiting {
                    Some(w) if zh => format!("服务端自身的指标证实了这一点：并发 {to} 时最多有 {w:.0} 个请求在它的队列中等待。"),
                    Some(w) => format!(" The server's own metrics confirm it: the requests waiting in its queue peaked at {w:.0} at concurrency {to}."),
                    None => String::new(),
                };
                let text = match (zh, p50_grew) {
                    (true, true) => format!("从并发 {from} 到 {to}，p95 TTFT 涨到原来的 {p95_growth:.1} 倍（{p95_ms:.0} 毫秒），p50 只涨到 {p50_growth:.1} 倍：排队是长尾的主要来源。方向：加推理实例横向扩容、优化调度让请求更早被接纳，或对长请求限流。"),
                    (true, false) => format!("从并发 {from} 到 {to}，p95 TTFT 涨到原来的 {p95_growth:.1} 倍（{p95_ms:.0} 毫秒），p50 却没有增长（{p50_growth:.1} 倍）：排队是长尾的主要来源。方向：加推理实例横向扩容、优化调度让请求更早被接纳，或对长请求限流。"),
                    (false, true) => format!("from concurrency {from} to {to}, p95 TTFT grew {p95_growth:.1}× (to {p95_ms:.0} ms) while p50 grew {p50_growth:.1}×: queueing is the main source of the long tail. Try more instances, scheduling that admits requests sooner, or limits on long requests."),
                    (false, false) => format!("from concurrency {from} to {to}, p95 TTFT grew {p95_growth:.1}× (to {p95_ms:.0} ms) while p50 did not grow ({p50_growth:.1}×): queueing is the main source of the long tail. Try more instances, scheduling that admits requests sooner, or limits on long requests."),
                };
                text + &confirmed
            }
            Finding::MemoryPressure { concurrency, kv_pct, preemptions } => if zh {
                format!("并发 {concurrency} 时服务端的 KV 缓存占用达到 {kv_pct:.0}%，并抢占了 {preemptions:.0} 个请求（其 /metrics）：显存是瓶颈，被抢占的请求要换出后重算，TTFT 和 TPOT 都会变差。方向：减少同时处理的序列数（vLLM --max-num-seqs），给 KV 缓存更多显存（--gpu-memory-utilization），缩短 max_tokens 或上下文，使用量化的 KV 缓存（--kv-cache-dtype fp8），或增加实例。")
            } else {
                format!("at concurrency {concurrency} the server's KV cache reached {kv_pct:.0}% and it preempted {preemptions:.0} requests (its /metrics): memory is the limit, and preempted requests are evicted and recomputed, which slows TTFT and TPOT. Try fewer sequences at once (vLLM --max-num-seqs), more memory for the KV cache (--gpu-memory-utilization), shorter max_tokens or contexts, a quantized KV cache (--kv-cache-dtype fp8), or more instances.")
            },
            Finding::Prefill { concurrency, ttft_ms, tpot_ms, prompt_tokens, ms_per_1k_input, network_ms } => {
                let network = match network_ms {
                    Some(rtt) if zh => format!("（已除去 {rtt:.0} 毫秒的网络往返）"),
                    Some(rtt) => format!(" (the network's round trip of {rtt:.0} ms left out)"),
                    None => String::new(),
                };
                let prompt = match (prompt_tokens, ms_per_1k_input) {
                    (Some(n), Some(slope)) if zh => format!("（提示约 {n:.0} 个 token，每多 1000 个输入 token 首 token 晚 {slope:.0} 毫秒）"),
                    (Some(n), Some(slope)) => format!(" (prompts of about {n:.0} tokens; each 1,000 more input tokens delayed the first token by {slope:.0} ms)"),
                    (Some(n), None) if zh => format!("（提示约 {n:.0} 个 token）"),
                    (Some(n), None) => format!(" (prompts of about {n:.0} tokens)"),
                    (None, _) => String::new(),
                };
                if zh {
                    format!("并发 {concurrency} 时没有排队，首 token 仍要 {ttft_ms:.0} 毫秒{network}{prompt}，是 TPOT（{tpot_ms:.1} 毫秒）的 {:.0} 倍：时间花在预填充（以及网络）上。方向：缩短输入、前缀缓存、更快的预填充。", ttft_ms / tpot_ms)
                } else {
                    format!("at concurrency {concurrency}, with no queue, the first token still took {ttft_ms:.0} ms{network}{prompt}, {:.0}× the TPOT of {tpot_ms:.1} ms: the time goes to prefill (and the network). Try shorter inputs, prefix caching, a faster prefill.", ttft_ms / tpot_ms)
                }
            }
            Finding::Decode { from, to, from_ms, to_ms, batching } => {
                let mut text = if zh {
                    format!("TPOT p50 随并发逐档上升，从并发 {from} 的 {from_ms:.1} 毫秒到 {to} 的 {to_ms:.1} 毫秒（{:.1} 倍）：decode 阶段是瓶颈，batch 变大后每个请求解码变慢。方向：调整 batch 策略、量化、更快的解码 kernel（decode 吃显存带宽）。", to_ms / from_ms)
                } else {
                    format!("TPOT p50 rose at every step, from {from_ms:.1} ms at concurrency {from} to {to_ms:.1} ms at {to} ({:.1}×): decode is the bottleneck, each request decoding slower as the batch grows. Try the batch policy, quantisation, faster decode kernels (decode is bound by memory bandwidth).", to_ms / from_ms)
                };
                if let Some([tps_from, tps_to, total_from, total_to]) = batching {
                    text.push(' ');
                    text.push_str(&if zh {
                        format!("单请求速度从 {tps_from:.1} 降到 {tps_to:.1} token/秒，而总输出从 {total_from:.0} 增到 {total_to:.0} token/秒：这是批处理正常的代价。")
                    } else {
                        format!("Per-request speed fell from {tps_from:.1} to {tps_to:.1} tokens/s while the total grew from {total_from:.0} to {total_to:.0}: the healthy price of batching.")
                    });
                }
                text
            }
            Finding::CapacityErrors { first, n_failed, n_requests, below } => if zh {
                format!("{n_failed} 个请求（共 {n_requests} 个）在并发 {first} 及以上失败，{below} 及以下没有：这是容量问题，不是通道坏了。方向：留在更低的并发，或横向扩容。")
            } else {
                format!("{n_failed} of {n_requests} requests failed from concurrency {first} up, none at {below} or below: that is capacity, not a broken channel. Stay below it, or scale out.")
            },
            Finding::RateLimited { first, n } => if zh {
                format!("从并发 {first} 起，服务端限流了 {n} 个请求（429）：这是配额，不是算力。方向：申请更高的限额，或降低并发。")
            } else {
                format!("the server rate-limited {n} requests (429) from concurrency {first}: a quota, not capacity. Ask for a higher limit, or lower the concurrency.")
            },
            Finding::Browser { concurrency, wait_ms, ttft_ms } => match (wait_ms, ttft_ms, zh) {
                (Some(wait), Some(ttft), false) => format!("at concurrency {concurrency} the browser held requests back {wait:.0} ms at p95 of a p95 TTFT of {ttft:.0} ms: part of the latency is this browser's, not the server's. Use an https:// endpoint (HTTP/2), or measure the level from another machine."),
                (Some(wait), Some(ttft), true) => format!("并发 {concurrency} 时浏览器把请求压住了 p95 {wait:.0} 毫秒（p95 TTFT 为 {ttft:.0} 毫秒）：部分时延属于本浏览器而不是服务端。方向：使用 https:// 接口（HTTP/2），或从另一台机器测这一档。"),
                (_, _, false) => format!("at concurrency {concurrency} the browser shaped the level (it is left out of the verdict): use an https:// endpoint (HTTP/2) to measure beyond it."),
                (_, _, true) => format!("并发 {concurrency} 这一档受浏览器影响（未计入结论）：使用 https:// 接口（HTTP/2）才能测得更高。"),
            },
            Finding::NetworkOrGateway { concurrency, ttft_ms, server_ms, overhead_ms, after_send } => {
                let pct = overhead_ms / ttft_ms * 100.0;
                match (after_send, zh) {
                    (true, false) => format!("at concurrency {concurrency} the first token came {ttft_ms:.0} ms after the request left the browser (p50), but the server reports only {server_ms:.0} ms of prompt processing: {overhead_ms:.0} ms ({pct:.0}%) went between this browser and the model: network round trips, TLS, a gateway or proxy, or the server's queue before prefill. Try measuring from closer to the server, bypassing the gateway to compare, and keeping connections alive."),
                    (false, false) => format!("at concurrency {concurrency} the first token came {ttft_ms:.0} ms after the request was sent (p50), but the server reports only {server_ms:.0} ms of prompt processing: {overhead_ms:.0} ms ({pct:.0}%) went between this client and the model: network round trips, TLS, a gateway or proxy, or the server's queue before prefill. Try measuring from closer to the server, bypassing the gateway to compare, and keeping connections alive."),
                    (true, true) => format!("并发 {concurrency} 时，请求离开浏览器后 {ttft_ms:.0} 毫秒才收到首 token（p50），而服务端报告的提示词处理只有 {server_ms:.0} 毫秒：有 {overhead_ms:.0} 毫秒（{pct:.0}%）花在本浏览器与模型之间——网络往返、TLS、网关或代理，或服务端在预填充之前的排队。方向：在离服务更近的地方测量、绕过网关对比，并保持连接复用。"),
                    (false, true) => format!("并发 {concurrency} 时，请求发出后 {ttft_ms:.0} 毫秒才收到首 token（p50），而服务端报告的提示词处理只有 {server_ms:.0} 毫秒：有 {overhead_ms:.0} 毫秒（{pct:.0}%）花在本客户端与模型之间——网络往返、TLS、网关或代理，或服务端在预填充之前的排队。方向：在离服务更近的地方测量、绕过网关对比，并保持连接复用。"),
                }
            }
        }
    }
}

fn p50_ms(s: &Summary, pick: fn(&Summary) -> Option<crate::stats::Distribution>) -> Option<f64> {
    pick(s).map(|d| d.p50).filter(|v| v.is_finite() && *v > 0.0)
}

/// The successful requests at `concurrency` that carried the server's prompt time,
/// as (TTFT from when the request left the client, the server's prompt ms, whether
/// the first is after the browser's wait).
fn with_server_prompt(document: &RunDocument, concurrency: u32) -> Vec<(f64, f64, bool)> {
    document
        .records
        .iter()
        .filter(|r| !r.warmup && r.concurrency == concurrency && r.is_ok())
        .filter_map(|r| {
            let server = r.server_timings?.prompt_ms?;
            let (ttft_us, after_send) = match r.ttft_after_send_us() {
                Some(t) => (t, true),
                None => (r.ttft_us()?, false),
            };
            Some((ttft_us as f64 / 1e3, server, after_send))
        })
        .collect()
}

fn median(values: Vec<f64>) -> Option<f64> {
    crate::stats::Distribution::of(&values).map(|d| d.p50)
}

/// The server's p50 prompt time at `concurrency`, from enough requests.
fn server_prompt_p50(document: &RunDocument, concurrency: u32) -> Option<f64> {
    let rows = with_server_prompt(document, concurrency);
    (rows.len() as u64 >= MIN_SAMPLES)
        .then(|| median(rows.iter().map(|r| r.1).collect()))
        .flatten()
}

/// The network-or-gateway finding at `concurrency`, when the server's timings
/// leave enough of the first token's wait unexplained.
fn gateway(document: &RunDocument, concurrency: u32) -> Option<Finding> {
    let rows = with_server_prompt(document, concurrency);
    if (rows.len() as u64) < MIN_SAMPLES {
        return None;
    }
    let ttft_ms = median(rows.iter().map(|r| r.0).collect())?;
    let server_ms = median(rows.iter().map(|r| r.1).collect())?;
    let overhead_ms = median(rows.iter().map(|r| r.0 - r.1).collect())?;
    (overhead_ms >= GATEWAY_MS.max(GATEWAY_SHARE * ttft_ms)).then_some(Finding::NetworkOrGateway {
        concurrency,
        ttft_ms,
        server_ms,
        overhead_ms,
        after_send: rows.iter().all(|r| r.2),
    })
}

/// The findings of `document`, in the order a person should read them.
// Long: the diagnosis' rules in their order of precedence, read in one place.
pub fn diagnose(document: &RunDocument) -> Vec<Finding> {
    let mut findings = Vec::new();
    // The browser first: it changes how everything else reads.
    for level in &document.levels {
        let Some(concurrency) = level.concurrency.filter(|&c| c > 0) else {
            continue;
        };
        let wait = level.browser_wait_ms.map(|d| d.p95);
        let ttft = level.ttft_ms.map(|d| d.p95);
        let large_wait =
            matches!((wait, ttft), (Some(w), Some(t)) if t > 0.0 && w >= BROWSER_SHARE * t);
        // Only the browser's own queue is the browser's (the engine's lag and a
        // gateway's bursts have findings or notes of their own).
        let queued = matches!(level.distorted, Some(Distortion::BrowserQueue { .. }));
        if queued || large_wait {
            findings.push(Finding::Browser {
                concurrency,
                wait_ms: wait,
                ttft_ms: ttft,
            });
            break;
        }
    }
    // A gateway that released the streams in bursts: said once, at the first level.
    if let Some((
        concurrency,
        Distortion::Buffered {
            n_requests,
            share_pct,
            largest,
        },
    )) = document
        .levels
        .iter()
        .filter_map(|l| Some((l.concurrency?, l.distorted.clone()?)))
        .find(|(_, d)| matches!(d, Distortion::Buffered { .. }))
    {
        findings.push(Finding::BufferedStream {
            concurrency,
            n_requests,
            share_pct,
            largest,
        });
    }
    let clean: Vec<(u32, &Summary)> = document
        .levels
        .iter()
        .filter(|s| s.distorted.is_none())
        .filter_map(|s| Some((s.concurrency.filter(|&c| c > 0)?, s)))
        .collect();
    let answered: Vec<(u32, &Summary)> = clean
        .iter()
        .copied()
        .filter(|(_, s)| s.n_ok >= MIN_SAMPLES)
        .collect();

    if let (Some(&(from, lo)), Some(&(to, hi))) = (answered.first(), answered.last()) {
        // The network or a gateway: the lowest level, where the server's own
        // timings leave little room for a queue.
        let gateway = gateway(document, from);
        if let Some(finding @ Finding::NetworkOrGateway { .. }) = &gateway {
            findings.push(finding.clone());
        }
        // Prefill: the lowest level, no queue; as long as the server says so, when
        // it reports its own prompt time.
        let server_prompt_ms = match gateway {
            Some(Finding::NetworkOrGateway { server_ms, .. }) => Some(server_ms),
            _ => server_prompt_p50(document, from),
        };
        // What the browser measured holds the network's round trip: left out
        // before prefill is blamed.
        let network_ms = document
            .environment
            .network
            .as_ref()
            .filter(|n| n.is_worth_a_note() && server_prompt_ms.is_none())
            .map(|n| n.rtt_ms);
        if let (Some(ttft), Some(tpot)) = (
            server_prompt_ms
                .or(p50_ms(lo, |s| s.ttft_ms).map(|t| (t - network_ms.unwrap_or(0.0)).max(0.0))),
            p50_ms(lo, |s| s.tpot_ms),
        ) {
            if ttft >= PREFILL_MS.max(PREFILL_TPOTS * tpot) {
                findings.push(Finding::Prefill {
                    concurrency: from,
                    ttft_ms: ttft,
                    tpot_ms: tpot,
                    prompt_tokens: lo.input_tokens.map(|d| d.mean),
                    ms_per_1k_input: lo.ttft_ms_per_1k_input,
                    network_ms,
                });
            }
        }
        if to > from {
            // Queueing: the tail outgrows the median.
            let ttft = |s: &Summary| s.ttft_ms.filter(|d| d.p50 > 0.0 && d.p95 > 0.0);
            if let (Some(a), Some(b)) = (ttft(lo), ttft(hi)) {
                let (g50, g95) = (b.p50 / a.p50, b.p95 / a.p95);
                let gap = b.p95 - b.p50;
                if g95 >= TAIL_EXCESS * g50
                    && g95 > 1.0
                    && gap >= TAIL_GAP_MS.max(TAIL_GAP_SHARE * b.p50)
                {
                    findings.push(Finding::Queueing {
                        from,
                        to,
                        p50_growth: g50,
                        p95_growth: g95,
                        p95_ms: b.p95,
                        server_waiting: hi.server.and_then(|s| s.waiting_seen()),
                    });
                }
            }
            // Decode: TPOT up at every step.
            let tpots: Vec<f64> = answered
                .iter()
                .filter_map(|(_, s)| p50_ms(s, |s| s.tpot_ms))
                .collect();
            if tpots.len() == answered.len() && tpots.len() >= 2 {
                let rising = tpots
                    .windows(2)
                    .all(|w| w[1] >= w[0] * (1.0 - STEP_TOLERANCE));
                let (first, last) = (tpots[0], tpots[tpots.len() - 1]);
                if rising && last >= TPOT_GROWTH * first {
                    let tps = |s: &Summary| s.decode_tps.map(|d| d.mean);
                    let batching = match (tps(lo), tps(hi)) {
                        (Some(a), Some(b)) if b < a && hi.output_tps > lo.output_tps => {
                            Some([a, b, lo.output_tps, hi.output_tps])
                        }
                        _ => None,
                    };
                    findings.push(Finding::Decode {
                        from,
                        to,
                        from_ms: first,
                        to_ms: last,
                        batching,
                    });
                }
            }
        }
    }

    // The server's memory at its limit, by its own metrics: said once, where first.
    if let Some((concurrency, kv_pct, preemptions)) = clean.iter().find_map(|&(c, s)| {
        let server = s.server?;
        let (kv, preempted) = (server.kv_max_pct?, server.preemptions?);
        (kv >= KV_FULL_PCT && preempted > 0.0).then_some((c, kv, preempted))
    }) {
        findings.push(Finding::MemoryPressure {
            concurrency,
            kv_pct,
            preemptions,
        });
    }

    // Failures: 429s apart; the others when they start above a clean level.
    let failed = |s: &Summary, kind: fn(ErrorKind) -> bool| -> u64 {
        s.fails_by_kind
            .iter()
            .filter(|(k, _)| kind(**k))
            .map(|(_, n)| n)
            .sum()
    };
    let limited: Vec<(u32, u64)> = clean
        .iter()
        .map(|&(c, s)| (c, failed(s, |k| k == ErrorKind::RateLimited)))
        .filter(|(_, n)| *n > 0)
        .collect();
    if let Some(&(first, _)) = limited.first() {
        findings.push(Finding::RateLimited {
            first,
            n: limited.iter().map(|(_, n)| n).sum(),
        });
    }
    let capacity = |k: ErrorKind| {
        !matches!(
            k,
            ErrorKind::RateLimited
                | ErrorKind::Auth
                | ErrorKind::NotFound
                | ErrorKind::BadRequest
                | ErrorKind::Network
                | ErrorKind::Cancelled
                | ErrorKind::EngineStopped
        )
    };
    if let Some(i) = clean.iter().position(|(_, s)| failed(s, capacity) > 0) {
        if i > 0 {
            let tail = &clean[i..];
            findings.push(Finding::CapacityErrors {
                first: clean[i].0,
                n_failed: tail.iter().map(|(_, s)| failed(s, capacity)).sum(),
                n_requests: tail.iter().map(|(_, s)| s.n_ok + s.n_fail).sum(),
                below: clean[i - 1].0,
            });
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        plan::Plan,
        report::{Environment, RunStatus},
        stats::Distribution,
    };

    fn empty() -> RunDocument {
        RunDocument::build(
            "r".into(),
            "t".into(),
            RunStatus::Done,
            Plan::default_for_simulator("http://127.0.0.1:8000/v1"),
            Environment::default(),
            Vec::new(),
        )
    }

    fn dist(p50: f64, p95: f64, n: u64) -> Distribution {
        Distribution {
            n,
            mean: p50,
            std: 0.0,
            min: p50,
            max: p95,
            p50,
            p90: p95,
            p95,
            p99: p95,
        }
    }

    /// A level as the article prints one.
    fn level(
        c: u32,
        n_ok: u64,
        n_fail: u64,
        ttft: (f64, f64),
        tpot: (f64, f64),
        tps_mean: f64,
        tps_sum: f64,
    ) -> Summary {
        let mut s = empty().total;
        s.concurrency = Some(c);
        s.n_requests = n_ok + n_fail;
        s.n_ok = n_ok;
        s.n_fail = n_fail;
        if n_fail > 0 {
            s.fails_by_kind.insert(ErrorKind::TimeoutMidStream, n_fail);
        }
        s.ttft_ms = Some(dist(ttft.0, ttft.1, n_ok));
        s.tpot_ms = Some(dist(tpot.0, tpot.1, n_ok));
        s.decode_tps = Some(dist(tps_mean, tps_mean, n_ok));
        s.output_tps = tps_sum;
        s
    }

    /// The article's §4 table.
    fn article() -> RunDocument {
        let mut doc = empty();
        doc.levels = vec![
            level(1, 8, 0, (420.5, 510.2), (18.3, 22.1), 54.6, 436.8),
            level(2, 8, 0, (455.1, 620.7), (19.8, 25.4), 50.5, 808.0),
            level(4, 8, 0, (530.9, 810.3), (23.6, 31.2), 42.4, 1356.8),
            level(8, 8, 0, (720.4, 1250.6), (31.5, 45.8), 31.7, 2028.8),
            level(16, 7, 1, (1180.2, 2400.9), (48.9, 72.3), 20.4, 2284.5),
        ];
        doc
    }

    #[test]
    fn the_articles_table_reads_as_the_article_reads_it() {
        let findings = diagnose(&article());
        let causes: Vec<Cause> = findings.iter().map(Finding::cause).collect();
        assert_eq!(
            causes,
            [Cause::Queueing, Cause::Decode, Cause::CapacityErrors]
        );
        let en: Vec<String> = findings.iter().map(|f| f.text(Lang::En)).collect();
        assert!(en[0].starts_with("from concurrency 1 to 16, p95 TTFT grew 4.7× (to 2401 ms) while p50 grew 2.8×: queueing"), "{}", en[0]);
        assert!(
            en[1].contains(
                "from 18.3 ms at concurrency 1 to 48.9 ms at 16 (2.7×): decode is the bottleneck"
            ),
            "{}",
            en[1]
        );
        assert!(en[1].contains("fell from 54.6 to 20.4 tokens/s while the total grew from 437 to 2284: the healthy price of batching"), "{}", en[1]);
        assert_eq!(en[2], "1 of 8 requests failed from concurrency 16 up, none at 8 or below: that is capacity, not a broken channel. Stay below it, or scale out.");
        let zh: Vec<String> = findings.iter().map(|f| f.text(Lang::Zh)).collect();
        assert!(zh[0].contains("排队是长尾的主要来源"));
        assert!(zh[1].contains("decode 阶段是瓶颈"));
        assert!(zh[2].contains("容量问题"));
    }

    #[test]
    fn nothing_is_said_without_its_figures() {
        // Flat latency, growing throughput: nothing to blame.
        let mut doc = empty();
        doc.levels = vec![
            level(1, 8, 0, (100.0, 110.0), (20.0, 21.0), 50.0, 50.0),
            level(2, 8, 0, (102.0, 112.0), (20.5, 21.5), 49.0, 98.0),
            level(4, 8, 0, (104.0, 115.0), (21.0, 22.0), 48.0, 190.0),
        ];
        assert_eq!(diagnose(&doc), []);
        // Two requests a level (p95 is the slowest one), and a tail of 22 ms: noise.
        doc.levels = vec![
            level(1, 2, 0, (49.9, 50.8), (20.1, 20.1), 49.8, 46.9),
            level(2, 2, 0, (74.9, 97.1), (23.1, 23.7), 43.4, 77.9),
        ];
        assert_eq!(diagnose(&doc), []);
        doc.levels[0].n_ok = 8;
        doc.levels[1].n_ok = 8;
        assert_eq!(diagnose(&doc), [], "a 22 ms tail is not a queue");
        // One level: no growth to read; a slow first token with no load is prefill.
        doc.levels = vec![level(1, 8, 0, (2400.0, 2600.0), (20.0, 21.0), 50.0, 50.0)];
        let findings = diagnose(&doc);
        assert_eq!(findings.len(), 1);
        assert!(findings[0]
            .text(Lang::En)
            .contains("first token still took 2400 ms"));
        // Failures at every level, the lowest included: not capacity (a broken channel).
        doc.levels = vec![
            level(1, 7, 1, (100.0, 110.0), (20.0, 21.0), 50.0, 50.0),
            level(2, 7, 1, (100.0, 110.0), (20.0, 21.0), 50.0, 98.0),
        ];
        assert_eq!(diagnose(&doc), []);
    }

    #[test]
    fn rate_limits_are_a_quota_and_the_browser_speaks_first() {
        let mut doc = empty();
        let mut top = level(8, 6, 2, (100.0, 110.0), (20.0, 21.0), 50.0, 300.0);
        top.fails_by_kind.clear();
        top.fails_by_kind.insert(ErrorKind::RateLimited, 2);
        let mut browser = level(4, 8, 0, (500.0, 900.0), (20.0, 21.0), 50.0, 190.0);
        browser.browser_wait_ms = Some(dist(300.0, 400.0, 8));
        doc.levels = vec![
            level(1, 8, 0, (100.0, 110.0), (20.0, 21.0), 50.0, 50.0),
            browser,
            top,
        ];
        let causes: Vec<Cause> = diagnose(&doc).iter().map(Finding::cause).collect();
        assert_eq!(causes[0], Cause::Browser);
        assert!(causes.contains(&Cause::RateLimited));
        assert!(
            !causes.contains(&Cause::CapacityErrors),
            "429s are not capacity errors"
        );
        assert_eq!(
            diagnose(&doc)[0].text(Lang::En),
            "at concurrency 4 the browser held requests back 400 ms at p95 of a p95 TTFT of 900 ms: part of the latency is this browser's, not the server's. Use an https:// endpoint (HTTP/2), or measure the level from another machine."
        );
    }

    /// A run of 1 and 2 streams whose requests carry the server's timings: the
    /// first token `ttft_ms` after sending, `prompt_ms` of it the server's.
    fn with_timings(ttft_ms: u64, prompt_ms: Option<f64>) -> RunDocument {
        let records = (0..16u64)
            .map(|i| {
                let mut r = crate::chart::tests_support::record(i, 1 + (i % 2) as u32, ttft_ms, 20);
                r.server_timings = prompt_ms.map(|prompt_ms| crate::stream::ServerTimings {
                    prompt_ms: Some(prompt_ms),
                    predicted_ms: Some(180.0),
                    ..Default::default()
                });
                r
            })
            .collect();
        RunDocument::build(
            "gateway".into(),
            "2026-12-03T10:00:00Z".into(),
            RunStatus::Done,
            Plan::default_for_simulator("http://127.0.0.1:8000/v1"),
            Environment::default(),
            records,
        )
    }

    #[test]
    fn a_first_token_later_than_the_server_says_is_the_network_or_a_gateway() {
        let findings = diagnose(&with_timings(200, Some(40.0)));
        let gateway = findings
            .iter()
            .find(|f| f.cause() == Cause::NetworkOrGateway)
            .expect("named");
        assert_eq!(
            *gateway,
            Finding::NetworkOrGateway {
                concurrency: 1,
                ttft_ms: 200.0,
                server_ms: 40.0,
                overhead_ms: 160.0,
                after_send: false,
            }
        );
        assert!(gateway
            .text(Lang::En)
            .contains("160 ms (80%) went between this client and the model"));
        assert!(gateway
            .text(Lang::Zh)
            .contains("有 160 毫秒（80%）花在本客户端与模型之间"));
        // Silent when the server accounts for the wait, or says nothing of it.
        for quiet in [
            with_timings(200, Some(180.0)),
            with_timings(60, Some(20.0)),
            with_timings(200, None),
        ] {
            assert!(!diagnose(&quiet)
                .iter()
                .any(|f| f.cause() == Cause::NetworkOrGateway));
        }
    }

    #[test]
    fn prefill_says_what_each_thousand_input_tokens_cost_where_lengths_varied() {
        // A first token of 1.5 s at concurrency 1 over 18 ms TPOT: prefill.
        let mut doc = empty();
        doc.levels = vec![level(1, 8, 0, (1500.0, 1600.0), (18.3, 22.1), 54.6, 436.8)];
        let said = |doc: &RunDocument, lang| {
            let findings = diagnose(doc);
            let f = findings
                .iter()
                .find(|f| f.cause() == Cause::Prefill)
                .unwrap();
            f.text(lang)
        };
        assert!(
            !said(&doc, Lang::En).contains("prompts of about"),
            "no input said, none claimed"
        );
        doc.levels[0].input_tokens = Some(dist(2000.0, 3000.0, 8));
        assert!(said(&doc, Lang::En).contains("(prompts of about 2000 tokens)"));
        doc.levels[0].ttft_ms_per_1k_input = Some(190.0);
        assert!(said(&doc, Lang::En).contains("(prompts of about 2000 tokens; each 1,000 more input tokens delayed the first token by 190 ms)"));
        assert!(said(&doc, Lang::Zh).contains("每多 1000 个输入 token 首 token 晚 190 毫秒"));
    }

    #[test]
    fn the_network_s_round_trip_is_left_out_before_prefill_is_blamed() {
        // 1.1 s to the first token, of which 300 ms the network: 800 ms of prefill
        // is under the threshold.
        let mut doc = empty();
        doc.levels = vec![level(1, 8, 0, (1100.0, 1200.0), (18.3, 22.1), 54.6, 436.8)];
        let prefill = |doc: &RunDocument| {
            diagnose(doc)
                .into_iter()
                .find(|f| f.cause() == Cause::Prefill)
        };
        assert!(
            prefill(&doc).is_some(),
            "without a measured network, all of it is the server's"
        );
        doc.environment.network = crate::network::Network::estimate(
            vec![320.0, 300.0, 301.0],
            vec![],
            "GET /models",
            crate::network::TimedBy::Fetch,
        );
        assert!(prefill(&doc).is_none(), "{:?}", diagnose(&doc));
        // 1.5 s with 300 ms of network: still prefill, and said so.
        doc.levels = vec![level(1, 8, 0, (1500.0, 1600.0), (18.3, 22.1), 54.6, 436.8)];
        let text = prefill(&doc).unwrap().text(Lang::En);
        assert!(
            text.contains(
                "the first token still took 1200 ms (the network's round trip of 300 ms left out)"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_slow_first_token_the_server_did_not_spend_is_not_prefill() {
        // 1.5 s to the first token at no load: prefill, unless the server says it
        // spent 30 ms on the prompt.
        assert!(diagnose(&with_timings(1_500, None))
            .iter()
            .any(|f| f.cause() == Cause::Prefill));
        let causes: Vec<Cause> = diagnose(&with_timings(1_500, Some(30.0)))
            .iter()
            .map(Finding::cause)
            .collect();
        assert!(causes.contains(&Cause::NetworkOrGateway));
        assert!(!causes.contains(&Cause::Prefill));
    }

    use crate::server_metrics::SERVER_SAMPLES;

    fn with_server(
        mut level: Summary,
        waiting_max: f64,
        kv_max_pct: f64,
        preemptions: f64,
    ) -> Summary {
        level.server = Some(crate::server_metrics::ServerLevel {
            n_samples: 6,
            n_skipped: 0,
            running_mean: Some(4.0),
            running_max: Some(4.0),
            waiting_mean: Some(waiting_max / 2.0),
            waiting_max: Some(waiting_max),
            kv_max_pct: Some(kv_max_pct),
            preemptions: Some(preemptions),
            prefix_hit_pct: None,
        });
        level
    }

    #[test]
    fn the_server_s_queue_confirms_queueing_or_puts_the_tail_outside_it() {
        // Waiting requests at the top level: queueing, confirmed.
        let mut doc = article();
        doc.levels = doc
            .levels
            .into_iter()
            .map(|l| {
                let waiting = if l.concurrency == Some(16) { 12.0 } else { 0.0 };
                with_server(l, waiting, 40.0, 0.0)
            })
            .collect();
        let findings = diagnose(&doc);
        assert_eq!(findings[0].cause(), Cause::Queueing);
        assert!(findings[0].text(Lang::En).ends_with("The server's own metrics confirm it: the requests waiting in its queue peaked at 12 at concurrency 16."), "{}", findings[0].text(Lang::En));
        assert!(findings[0].text(Lang::Zh).contains("最多有 12 个请求"));
        assert!(
            !findings.iter().any(|f| f.cause() == Cause::MemoryPressure),
            "a cache at 40% without preemptions"
        );

        // None waited, from enough samples: the tail is on the path.
        for level in &mut doc.levels {
            level.server = with_server(level.clone(), 0.0, 40.0, 0.0).server;
        }
        let findings = diagnose(&doc);
        assert_eq!(findings[0].cause(), Cause::NetworkOrGateway);
        assert!(findings[0]
            .text(Lang::En)
            .contains("no request waiting in its queue at concurrency 16"));
        assert!(findings[0]
            .text(Lang::Zh)
            .contains("没有请求在它的队列里等待"));

        // Too few samples to tell: the finding stays as the table alone says it.
        for level in &mut doc.levels {
            if let Some(server) = level.server.as_mut() {
                server.n_samples = SERVER_SAMPLES - 1;
            }
        }
        let findings = diagnose(&doc);
        assert_eq!(findings[0].cause(), Cause::Queueing);
        assert!(!findings[0].text(Lang::En).contains("metrics"));

        // Enough samples, but polls skipped while every connection was busy
        // (HTTP/1.1 at six streams): the busiest moments are not among them.
        for level in &mut doc.levels {
            if let Some(server) = level.server.as_mut() {
                (server.n_samples, server.n_skipped) = (6, 3);
            }
        }
        let findings = diagnose(&doc);
        assert_eq!(findings[0].cause(), Cause::Queueing, "no false alarm");
        assert!(!findings[0].text(Lang::En).contains("metrics"));
    }

    #[test]
    fn a_full_kv_cache_with_preemptions_is_memory_pressure_and_one_without_is_not() {
        let mut doc = article();
        doc.levels = doc
            .levels
            .into_iter()
            .map(|l| match l.concurrency {
                Some(8) => with_server(l, 3.0, 97.0, 5.0),
                Some(16) => with_server(l, 9.0, 99.0, 40.0),
                _ => with_server(l, 0.0, 50.0, 0.0),
            })
            .collect();
        let findings = diagnose(&doc);
        let memory: Vec<&Finding> = findings
            .iter()
            .filter(|f| f.cause() == Cause::MemoryPressure)
            .collect();
        assert_eq!(memory.len(), 1, "said once");
        assert_eq!(
            *memory[0],
            Finding::MemoryPressure {
                concurrency: 8,
                kv_pct: 97.0,
                preemptions: 5.0
            }
        );
        assert!(memory[0].text(Lang::En).contains("--max-num-seqs"));
        assert!(memory[0].text(Lang::Zh).contains("显存是瓶颈"));
        // Full but nothing preempted (a server that keeps its cache full on
        // purpose), or preemptions with room: not memory pressure.
        for (kv, preempted) in [(99.0, 0.0), (60.0, 3.0)] {
            let mut doc = article();
            doc.levels = doc
                .levels
                .into_iter()
                .map(|l| with_server(l, 0.0, kv, preempted))
                .collect();
            assert!(
                !diagnose(&doc)
                    .iter()
                    .any(|f| f.cause() == Cause::MemoryPressure),
                "{kv} {preempted}"
            );
        }
    }

    #[test]
    fn a_median_that_did_not_grow_is_not_said_to_grow() {
        let finding = |p50_growth| Finding::Queueing {
            from: 1,
            to: 8,
            p50_growth,
            p95_growth: 4.0,
            p95_ms: 2400.0,
            server_waiting: None,
        };
        assert!(finding(0.9)
            .text(Lang::En)
            .contains("while p50 did not grow (0.9×)"));
        assert!(finding(0.9)
            .text(Lang::Zh)
            .contains("p50 却没有增长（0.9 倍）"));
        assert!(finding(1.6).text(Lang::En).contains("while p50 grew 1.6×"));
        assert!(finding(1.6).text(Lang::Zh).contains("p50 只涨到 1.6 倍"));
    }
}
