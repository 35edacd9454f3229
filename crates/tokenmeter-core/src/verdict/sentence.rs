//! The verdict's sentences as data: each variant holds the figures it states, and
//! [`Sentence::text`] says it in English or Chinese. A document keeps the data, so
//! a run measured on an English page reads in Chinese too.

use serde::{Deserialize, Serialize};

use crate::{
    browser::HTTP1,
    error::Lang,
    tagged::{need, WireError},
};

fn http1() -> String {
    HTTP1.to_owned()
}

/// One sentence of a verdict, with the figures it states.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "SentenceWire")]
pub enum Sentence {
    /// No level had a successful request.
    NothingSucceeded,
    /// Throughput stopped growing after `knee`.
    Knee {
        /// The first level.
        first: u32,
        /// Its output tokens/s.
        first_tps: f64,
        /// The knee.
        knee: u32,
        /// Its output tokens/s.
        knee_tps: f64,
        /// The level after the knee.
        next: u32,
        /// Its output tokens/s.
        next_tps: f64,
        /// The gain from the knee to the next level, percent.
        gain_pct: f64,
        /// p95 TTFT at the knee, ms.
        knee_ttft_p95_ms: Option<f64>,
        /// p95 TTFT at the next level, ms.
        next_ttft_p95_ms: Option<f64>,
        /// p95 E2E at the knee and the next level: said instead of TTFT when it
        /// was E2E that rose (absent from documents before it was kept).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        knee_e2e_p95_ms: Option<f64>,
        /// p95 E2E at the next level, ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_e2e_p95_ms: Option<f64>,
    },
    /// No request succeeded above `knee` (`n_fail` failed at `next`, and
    /// `n_cancelled` were cancelled): the service's capacity ended there.
    CollapsedAbove {
        /// The last level with a success.
        knee: u32,
        /// The level above it.
        next: u32,
        /// Requests that failed there.
        n_fail: u64,
        /// Requests cancelled there.
        #[serde(default, skip_serializing_if = "is_zero")]
        n_cancelled: u64,
    },
    /// Failures at the level after the knee.
    FailuresAfterKnee {
        /// The level.
        concurrency: u32,
        /// Requests that failed there.
        n_fail: u64,
    },
    /// Throughput still grew at the last step.
    NoKnee {
        /// The level before the last.
        prev: u32,
        /// The last level.
        last: u32,
        /// Output tokens/s before the last.
        prev_tps: f64,
        /// Output tokens/s at the last.
        last_tps: f64,
        /// The gain, percent.
        gain_pct: f64,
    },
    /// A single level: no knee can be found.
    OneLevel {
        /// The level.
        concurrency: u32,
    },
    /// Every level meets the SLO.
    SloAll,
    /// The SLO holds up to `up_to` and breaks at `first_bad`.
    SloUpTo {
        /// The highest level that meets it.
        up_to: u32,
        /// The first level that breaks it.
        first_bad: u32,
        /// What breaks it there.
        breaches: Vec<String>,
    },
    /// Even the first level breaks the SLO.
    SloNone {
        /// The first level, which breaks it.
        first_bad: u32,
        /// What breaks it there.
        breaches: Vec<String>,
    },
    /// The 70% rule's level meets the SLO.
    Safe {
        /// The rule's share of the knee, percent.
        pct: f64,
        /// The level the rule gives.
        rule: u32,
        /// p95 TTFT there, ms.
        ttft_p95_ms: Option<f64>,
    },
    /// The rule's level breaks the SLO; a lower measured level does not.
    SafeLowered {
        /// The rule's share of the knee, percent.
        pct: f64,
        /// The level the rule gives.
        rule: u32,
        /// The highest lower level that meets the SLO.
        safe: u32,
        /// What breaks the SLO at the rule's level.
        breaches: Vec<String>,
    },
    /// No level up to the rule's meets the SLO.
    NoSafe {
        /// The rule's share of the knee, percent.
        pct: f64,
        /// The level the rule gives.
        rule: u32,
        /// What breaks the SLO there.
        breaches: Vec<String>,
    },
    /// No knee, but the SLO held up to `up_to`.
    SloOkWithoutKnee {
        /// The highest level that meets it.
        up_to: u32,
    },
    /// The browser held requests to the host back above its limit, which may be
    /// what stopped throughput.
    BrowserLimitedKnee {
        /// Requests the browser had in flight to the host at most.
        connections: u32,
        /// The protocol over which it did (`nextHopProtocol`).
        #[serde(default = "http1")]
        protocol: String,
    },
    /// Levels left out of the analysis: the browser held their requests back to
    /// `connections` at a time over `protocol`.
    LeftOutBrowserQueue {
        /// The levels.
        levels: Vec<u32>,
        /// The protocol the browser spoke.
        protocol: String,
        /// Requests it had in flight to the host at most.
        connections: u32,
    },
    /// Levels left out of the analysis: the engine's own event loop ran late
    /// while their requests were in flight (the worst p95 among them, ms).
    LeftOutEngineLag {
        /// The levels.
        levels: Vec<u32>,
        /// The worst lateness at p95 among them, ms.
        lag_p95_ms: f64,
    },
    /// Levels left out of the analysis: their streams arrived in bursts (up to
    /// `share_pct` of the token events, up to `largest` in one read), as a gateway
    /// that buffers or compresses the stream releases them.
    LeftOutBuffered {
        /// The levels.
        levels: Vec<u32>,
        /// The largest share of a level's token events that came in bursts, percent.
        share_pct: f64,
        /// The most token events in one network read.
        largest: u64,
    },
    /// The noise between the passes of a repeated ladder: the widest spread of
    /// output tokens/s (at `output_tps_at`) and of p95 TTFT, percent.
    Noise {
        /// How many passes.
        passes: u32,
        /// The widest spread of output tokens/s, percent.
        output_tps_pct: f64,
        /// The level where it was.
        output_tps_at: u32,
        /// The widest spread of p95 TTFT, percent.
        ttft_p95_pct: f64,
    },
    /// What an SLO search found (see [`crate::search`]): the highest concurrency
    /// within the SLO, the lowest that broke it and why, and how sure the first
    /// is (`n_good` of `n` requests met every limit).
    SearchFound {
        /// The highest concurrency that met the SLO.
        highest: Option<u32>,
        /// The lowest that broke it.
        lowest_broken: Option<u32>,
        /// The highest the search could go.
        max: u32,
        /// What broke it there.
        breaches: Vec<String>,
        /// Requests at the highest.
        n: u64,
        /// Of those, the ones that met every limit.
        n_good: u64,
        /// How sure it is that the highest meets the SLO, percent.
        confidence_pct: Option<f64>,
    },
}

/// Every field of every [`Sentence`], read in one pass (see [`crate::tagged`]).
#[derive(Deserialize)]
struct SentenceWire {
    kind: String,
    first: Option<u32>,
    first_tps: Option<f64>,
    knee: Option<u32>,
    knee_tps: Option<f64>,
    next: Option<u32>,
    next_tps: Option<f64>,
    gain_pct: Option<f64>,
    knee_ttft_p95_ms: Option<f64>,
    next_ttft_p95_ms: Option<f64>,
    knee_e2e_p95_ms: Option<f64>,
    next_e2e_p95_ms: Option<f64>,
    n_fail: Option<u64>,
    n_cancelled: Option<u64>,
    concurrency: Option<u32>,
    prev: Option<u32>,
    last: Option<u32>,
    prev_tps: Option<f64>,
    last_tps: Option<f64>,
    up_to: Option<u32>,
    first_bad: Option<u32>,
    breaches: Option<Vec<String>>,
    pct: Option<f64>,
    rule: Option<u32>,
    ttft_p95_ms: Option<f64>,
    safe: Option<u32>,
    connections: Option<u32>,
    protocol: Option<String>,
    levels: Option<Vec<u32>>,
    lag_p95_ms: Option<f64>,
    share_pct: Option<f64>,
    largest: Option<u64>,
    passes: Option<u32>,
    output_tps_pct: Option<f64>,
    output_tps_at: Option<u32>,
    ttft_p95_pct: Option<f64>,
    highest: Option<u32>,
    lowest_broken: Option<u32>,
    max: Option<u32>,
    n: Option<u64>,
    n_good: Option<u64>,
    confidence_pct: Option<f64>,
}

impl TryFrom<SentenceWire> for Sentence {
    type Error = WireError;

    // Long: the wire form of every verdict sentence read back, an arm each.
    fn try_from(w: SentenceWire) -> Result<Self, WireError> {
        let k = w.kind.as_str();
        Ok(match k {
            "nothing_succeeded" => Sentence::NothingSucceeded,
            "knee" => Sentence::Knee {
                first: need(w.first, k, "first")?,
                first_tps: need(w.first_tps, k, "first_tps")?,
                knee: need(w.knee, k, "knee")?,
                knee_tps: need(w.knee_tps, k, "knee_tps")?,
                next: need(w.next, k, "next")?,
                next_tps: need(w.next_tps, k, "next_tps")?,
                gain_pct: need(w.gain_pct, k, "gain_pct")?,
                knee_ttft_p95_ms: w.knee_ttft_p95_ms,
                next_ttft_p95_ms: w.next_ttft_p95_ms,
                knee_e2e_p95_ms: w.knee_e2e_p95_ms,
                next_e2e_p95_ms: w.next_e2e_p95_ms,
            },
            "collapsed_above" => Sentence::CollapsedAbove {
                knee: need(w.knee, k, "knee")?,
                next: need(w.next, k, "next")?,
                n_fail: need(w.n_fail, k, "n_fail")?,
                n_cancelled: w.n_cancelled.unwrap_or(0),
            },
            "failures_after_knee" => Sentence::FailuresAfterKnee {
                concurrency: need(w.concurrency, k, "concurrency")?,
                n_fail: need(w.n_fail, k, "n_fail")?,
            },
            "no_knee" => Sentence::NoKnee {
                prev: need(w.prev, k, "prev")?,
                last: need(w.last, k, "last")?,
                prev_tps: need(w.prev_tps, k, "prev_tps")?,
                last_tps: need(w.last_tps, k, "last_tps")?,
                gain_pct: need(w.gain_pct, k, "gain_pct")?,
            },
            "one_level" => Sentence::OneLevel {
                concurrency: need(w.concurrency, k, "concurrency")?,
            },
            "slo_all" => Sentence::SloAll,
            "slo_up_to" => Sentence::SloUpTo {
                up_to: need(w.up_to, k, "up_to")?,
                first_bad: need(w.first_bad, k, "first_bad")?,
                breaches: need(w.breaches, k, "breaches")?,
            },
            "slo_none" => Sentence::SloNone {
                first_bad: need(w.first_bad, k, "first_bad")?,
                breaches: need(w.breaches, k, "breaches")?,
            },
            "safe" => Sentence::Safe {
                pct: need(w.pct, k, "pct")?,
                rule: need(w.rule, k, "rule")?,
                ttft_p95_ms: w.ttft_p95_ms,
            },
            "safe_lowered" => Sentence::SafeLowered {
                pct: need(w.pct, k, "pct")?,
                rule: need(w.rule, k, "rule")?,
                safe: need(w.safe, k, "safe")?,
                breaches: need(w.breaches, k, "breaches")?,
            },
            "no_safe" => Sentence::NoSafe {
                pct: need(w.pct, k, "pct")?,
                rule: need(w.rule, k, "rule")?,
                breaches: need(w.breaches, k, "breaches")?,
            },
            "slo_ok_without_knee" => Sentence::SloOkWithoutKnee {
                up_to: need(w.up_to, k, "up_to")?,
            },
            "browser_limited_knee" => Sentence::BrowserLimitedKnee {
                connections: need(w.connections, k, "connections")?,
                protocol: w.protocol.unwrap_or_else(http1),
            },
            "left_out_browser_queue" => Sentence::LeftOutBrowserQueue {
                levels: need(w.levels, k, "levels")?,
                protocol: need(w.protocol, k, "protocol")?,
                connections: need(w.connections, k, "connections")?,
            },
            "left_out_engine_lag" => Sentence::LeftOutEngineLag {
                levels: need(w.levels, k, "levels")?,
                lag_p95_ms: need(w.lag_p95_ms, k, "lag_p95_ms")?,
            },
            "left_out_buffered" => Sentence::LeftOutBuffered {
                levels: need(w.levels, k, "levels")?,
                share_pct: need(w.share_pct, k, "share_pct")?,
                largest: need(w.largest, k, "largest")?,
            },
            "noise" => Sentence::Noise {
                passes: need(w.passes, k, "passes")?,
                output_tps_pct: need(w.output_tps_pct, k, "output_tps_pct")?,
                output_tps_at: need(w.output_tps_at, k, "output_tps_at")?,
                ttft_p95_pct: need(w.ttft_p95_pct, k, "ttft_p95_pct")?,
            },
            "search_found" => Sentence::SearchFound {
                highest: w.highest,
                lowest_broken: w.lowest_broken,
                max: need(w.max, k, "max")?,
                breaches: need(w.breaches, k, "breaches")?,
                n: need(w.n, k, "n")?,
                n_good: need(w.n_good, k, "n_good")?,
                confidence_pct: w.confidence_pct,
            },
            _ => return Err(WireError::UnknownTag { tag: w.kind }),
        })
    }
}

impl Sentence {
    /// The sentence in `lang`.
    // Long: one sentence per verdict, in both languages.
    pub fn text(&self, lang: Lang) -> String {
        let zh = lang == Lang::Zh;
        match self {
            Sentence::NothingSucceeded => if zh {
                "没有任何一档有成功的请求，无法分析：请看错误面板。"
            } else {
                "No level had a successful request, so there is nothing to analyse: see the errors panel."
            }
            .into(),
            Sentence::Knee {
                first,
                first_tps,
                knee,
                knee_tps,
                next,
                next_tps,
                gain_pct,
                knee_ttft_p95_ms,
                next_ttft_p95_ms,
                knee_e2e_p95_ms,
                next_e2e_p95_ms,
            } => {
                // The latency that rose (the knee's condition): TTFT, else E2E.
                let ttft_rose = matches!((knee_ttft_p95_ms, next_ttft_p95_ms), (Some(a), Some(b)) if b > a);
                let e2e_rose = matches!((knee_e2e_p95_ms, next_e2e_p95_ms), (Some(a), Some(b)) if b > a);
                let (metric, from, to) = if !ttft_rose && e2e_rose {
                    ("E2E", ms(*knee_e2e_p95_ms), ms(*next_e2e_p95_ms))
                } else {
                    ("TTFT", ms(*knee_ttft_p95_ms), ms(*next_ttft_p95_ms))
                };
                let step = Step::of(*gain_pct);
                let change = step.said(*gain_pct, *next_tps, lang);
                let together = matches!(step, Step::Fell | Step::Flat);
                if knee == first {
                    match (zh, together) {
                        (true, true) => format!("并发 {knee} 时吞吐为 {knee_tps:.0} tok/s，加到并发 {next} {change}，同时 p95 {metric} 从 {from} 升到 {to}：这个服务并不能从同时处理多个请求中获益，拐点就在第一档，并发 {knee}。"),
                        (true, false) => format!("并发 {knee} 时吞吐为 {knee_tps:.0} tok/s，加到并发 {next} {change}，同时 p95 {metric} 从 {from} 升到 {to}：拐点就在第一档，并发 {knee}。"),
                        (false, true) => format!("Throughput is {knee_tps:.0} tok/s at concurrency {knee}, and going to {next} {change} while p95 {metric} rises from {from} to {to}: this server does not gain from serving requests together, and the knee is the first level, concurrency {knee}."),
                        (false, false) => format!("Throughput is {knee_tps:.0} tok/s at concurrency {knee}, and going to {next} {change} while p95 {metric} rises from {from} to {to}: the knee is the first level, concurrency {knee}."),
                    }
                } else {
                    // As the figures are shown (whole tok/s): "grows from 22 to 22" never.
                    let opening = match (knee_tps.round().total_cmp(&first_tps.round()), zh) {
                        (std::cmp::Ordering::Greater, true) => format!("吞吐从并发 {first} 的 {first_tps:.0} tok/s 涨到并发 {knee} 的 {knee_tps:.0} tok/s，但"),
                        (std::cmp::Ordering::Greater, false) => format!("Throughput grows from {first_tps:.0} tok/s at concurrency {first} to {knee_tps:.0} tok/s at {knee}, but"),
                        (std::cmp::Ordering::Equal, true) => format!("吞吐从并发 {first} 到 {knee} 一直约为 {knee_tps:.0} tok/s，"),
                        (std::cmp::Ordering::Equal, false) => format!("Throughput stays at about {knee_tps:.0} tok/s from concurrency {first} to {knee}, and"),
                        (std::cmp::Ordering::Less, true) => format!("吞吐从并发 {first} 的 {first_tps:.0} tok/s 降到并发 {knee} 的 {knee_tps:.0} tok/s，"),
                        (std::cmp::Ordering::Less, false) => format!("Throughput falls from {first_tps:.0} tok/s at concurrency {first} to {knee_tps:.0} tok/s at {knee}, and"),
                    };
                    if zh {
                        format!("{opening}加到并发 {next} {change}，同时 p95 {metric} 从 {from} 升到 {to}：拐点在并发 {knee}。")
                    } else {
                        format!("{opening} going to {next} {change} while p95 {metric} rises from {from} to {to}: the knee is at concurrency {knee}.")
                    }
                }
            }
            Sentence::CollapsedAbove {
                knee,
                next,
                n_fail,
                n_cancelled,
            } => match (zh, *n_cancelled) {
                (true, 0) => format!("并发 {next} 时 {n_fail} 个请求全部失败：服务的容量在并发 {knee} 处就到头了，拐点在并发 {knee}。请看错误面板了解失败原因。"),
                (true, c) => format!("并发 {next} 时没有一个请求成功（{n_fail} 个失败，{c} 个被取消）：服务的容量在并发 {knee} 处就到头了，拐点在并发 {knee}。请看错误面板了解失败原因。"),
                (false, 0) => format!("Throughput did not level off, it broke: at concurrency {next} all {n_fail} requests failed, so the service's capacity ended at {knee}, the knee. See the errors panel for why."),
                (false, c) => format!("Throughput did not level off, it broke: at concurrency {next} no request succeeded ({n_fail} failed, {c} cancelled), so the service's capacity ended at {knee}, the knee. See the errors panel for why."),
            },
            Sentence::FailuresAfterKnee {
                concurrency,
                n_fail,
            } => {
                if zh {
                    format!("并发 {concurrency} 时还出现了 {n_fail} 个失败请求。")
                } else {
                    format!("At {concurrency} there were also {n_fail} failed requests.")
                }
            }
            Sentence::NoKnee {
                prev,
                last,
                prev_tps,
                last_tps,
                gain_pct,
            } => match (Step::of(*gain_pct), zh) {
                (Step::Grew, true) => format!("到并发 {last} 还没有拐点：从并发 {prev} 到 {last} 吞吐仍增长了 {gain_pct:.1}%（{prev_tps:.0} → {last_tps:.0} tok/s）。请加大并发梯度继续找拐点。"),
                (Step::Grew, false) => format!("No knee up to concurrency {last}: throughput still grew {gain_pct:.1}% from {prev} to {last} ({prev_tps:.0} → {last_tps:.0} tok/s). Test higher concurrency to find where it stops growing."),
                // Throughput did not grow, yet p95 latency did not rise: not the shape
                // of a server filling up, so no knee is claimed.
                (step, true) => format!("到并发 {last} 没有找到拐点：从并发 {prev} 到 {last} 吞吐{}（{prev_tps:.0} → {last_tps:.0} tok/s），但 p95 时延没有上升，这不像服务端饱和的样子。请看错误面板，并重复运行几轮看噪声有多大。", if step == Step::Fell { format!("下降了 {:.1}%", -gain_pct) } else { "持平".to_owned() }),
                (step, false) => format!("No knee up to concurrency {last}: throughput {} from {prev} to {last} ({prev_tps:.0} → {last_tps:.0} tok/s) while p95 latency did not rise, which is not how a server filling up behaves. See the errors panel, and repeat the ladder to see the noise.", if step == Step::Fell { format!("fell {:.1}%", -gain_pct) } else { "stayed flat".to_owned() }),
            },
            Sentence::OneLevel { concurrency } => {
                if zh {
                    format!("只测了一档（并发 {concurrency}），找拐点至少需要两档。")
                } else {
                    format!("Only one level (concurrency {concurrency}) was measured: a knee needs at least two.")
                }
            }
            Sentence::SloAll => if zh {
                "每一档都满足 SLO。"
            } else {
                "Every level meets the SLO."
            }
            .into(),
            Sentence::SloUpTo {
                up_to,
                first_bad,
                breaches,
            } => {
                let reasons = breaches.join(", ");
                if zh {
                    format!("并发 {up_to} 及以下满足 SLO；到并发 {first_bad} 不再满足（{reasons}）。")
                } else {
                    format!("The SLO holds up to concurrency {up_to}; at {first_bad} it breaks ({reasons}).")
                }
            }
            Sentence::SloNone {
                first_bad,
                breaches,
            } => {
                let reasons = breaches.join(", ");
                if zh {
                    format!("连并发 {first_bad} 都不满足 SLO（{reasons}）。")
                } else {
                    format!("Even concurrency {first_bad} breaks the SLO ({reasons}).")
                }
            }
            Sentence::Safe {
                pct,
                rule,
                ttft_p95_ms,
            } => {
                if zh {
                    let ttft = ttft_p95_ms
                        .map(|t| format!("（该处 p95 TTFT 约 {t:.0} ms）"))
                        .unwrap_or_default();
                    format!("取拐点的 {pct}% 为 {rule}{ttft}：安全并发为 {rule}。")
                } else {
                    let ttft = ttft_p95_ms
                        .map(|t| format!(" (p95 TTFT there about {t:.0} ms)"))
                        .unwrap_or_default();
                    format!("{pct}% of the knee is {rule}{ttft}: the safe concurrency is {rule}.")
                }
            }
            Sentence::SafeLowered {
                pct,
                rule,
                safe,
                breaches,
            } => {
                let reasons = breaches.join(", ");
                if zh {
                    format!("拐点的 {pct}% 是 {rule}，但该处不满足 SLO（{reasons}）：安全并发取满足 SLO 的最高实测档 {safe}。")
                } else {
                    format!("{pct}% of the knee is {rule}, but there the SLO breaks ({reasons}): the safe concurrency is {safe}, the highest measured level within the SLO.")
                }
            }
            Sentence::NoSafe {
                pct,
                rule,
                breaches,
            } => {
                let reasons = breaches.join(", ");
                if zh {
                    format!("拐点的 {pct}% 是 {rule}，但到该档为止没有满足 SLO 的档位（{reasons}）：在这个 SLO 下没有安全并发。")
                } else {
                    format!("{pct}% of the knee is {rule}, but no level up to it meets the SLO ({reasons}): there is no safe concurrency for this SLO.")
                }
            }
            Sentence::SloOkWithoutKnee { up_to } => {
                if zh {
                    format!("没有拐点，70% 规则不适用；在 SLO 之内，并发 {up_to} 是没问题的。")
                } else {
                    format!("Without a knee the 70% rule does not apply; within the SLO, concurrency {up_to} was fine.")
                }
            }
            Sentence::BrowserLimitedKnee {
                connections: n,
                protocol,
            } => match (zh, protocol == HTTP1) {
                (true, true) => format!("注意：并发超过 {n} 时，浏览器经 HTTP/1.1 同时最多只发 {n} 个请求，这个拐点可能是浏览器的限制而不是服务端的；请改用 HTTPS（HTTP/2）测出服务端真正的拐点。"),
                (false, true) => format!("Caution: above concurrency {n} this browser sent at most {n} requests at a time over HTTP/1.1, so this knee may be the browser's limit, not the server's; measure over HTTPS (HTTP/2) to find the server's."),
                (true, false) => format!("注意：这个浏览器即使用 {protocol} 也同时最多只向一个主机发 {n} 个请求，这个拐点可能是浏览器的限制而不是服务端的；请用 Chromium 或 Firefox 测出服务端真正的拐点。"),
                (false, false) => format!("Caution: this browser sent at most {n} requests at a time to one host even over {protocol}, so this knee may be the browser's limit, not the server's; measure in Chromium or Firefox to find the server's."),
            },
            Sentence::LeftOutBrowserQueue {
                levels,
                protocol,
                connections: n,
            } => {
                let list = list(levels, lang);
                match (zh, protocol == HTTP1) {
                    (true, true) => format!("{list}不计入结论：浏览器经 HTTP/1.1 同时最多只发 {n} 个请求，其余在浏览器里排队，服务端从未见到这样的并发；请改用 HTTPS（HTTP/2）端点来测。"),
                    (false, true) => format!("Left out of this verdict: {list}, where the browser sent at most {n} requests at a time over HTTP/1.1 and queued the rest itself, so the server never saw that concurrency; measure over an HTTPS (HTTP/2) endpoint."),
                    (true, false) => format!("{list}不计入结论：这个浏览器即使用 {protocol} 也同时最多只向一个主机发 {n} 个请求，服务端从未见到这样的并发；请用 Chromium 或 Firefox 来测。"),
                    (false, false) => format!("Left out of this verdict: {list}, where this browser sent at most {n} requests at a time to one host even over {protocol}, so the server never saw that concurrency; measure in Chromium or Firefox."),
                }
            }
            Sentence::LeftOutEngineLag { levels, lag_p95_ms } => {
                let list = list(levels, lang);
                if zh {
                    format!("{list}不计入结论：请求进行中，测量引擎自身的事件循环晚了（p95 为 {lag_p95_ms:.0} ms），那里的时间戳有一部分是工具造成的；请减少并发或换一台更快的机器来测。")
                } else {
                    format!("Left out of this verdict: {list}, where the engine's own event loop ran late while requests were in flight ({lag_p95_ms:.0} ms at p95), so part of their timings is the tool's; measure them with fewer streams per browser or on a faster machine.")
                }
            }
            Sentence::LeftOutBuffered {
                levels,
                share_pct,
                largest,
            } => {
                let list = list(levels, lang);
                if zh {
                    format!("{list}不计入结论：流是成批到达的（{share_pct:.0}% 的 token 成批到达，一次最多 {largest} 个），像是中间的网关或代理在缓冲或压缩响应：那里的 TTFT、TPOT 和 ITL 是它放行的节奏，不是服务端的（怎么办见说明）。")
                } else {
                    format!("Left out of this verdict: {list}, where the stream arrived in bursts ({share_pct:.0}% of the tokens, up to {largest} at once), as a gateway or proxy that buffers or compresses it releases them: TTFT, TPOT and ITL there are its releases, not the server's pace (the notes say what to change).")
                }
            }
            Sentence::Noise {
                passes,
                output_tps_pct,
                output_tps_at,
                ttft_p95_pct,
            } => {
                if zh {
                    format!("{passes} 轮之间，输出 tok/s 最多相差 {output_tps_pct:.1}%（并发 {output_tps_at}），p95 TTFT 最多相差 {ttft_p95_pct:.1}%：比这更小的差异是噪声，拐点判断也把噪声内的增长视为没有增长。")
                } else {
                    format!("Between the {passes} passes, output tokens/s varied by up to {output_tps_pct:.1}% (at concurrency {output_tps_at}) and p95 TTFT by up to {ttft_p95_pct:.1}%: differences smaller than that are noise, and the knee counts a gain within it as none.")
                }
            }
            Sentence::SearchFound {
                highest,
                lowest_broken,
                max,
                breaches,
                n,
                n_good,
                confidence_pct,
            } => {
                let why = breaches.join(", ");
                let sure = confidence_pct.map(|c| {
                    if zh {
                        format!("在并发 {} 的 {n} 个请求中有 {n_good} 个满足全部限制：有 {c:.0}% 的把握该并发下至少 95% 的请求满足（每次探测的请求越多，把握越大）。", highest.unwrap_or(0))
                    } else {
                        format!(" {n_good} of {n} requests at {} met every limit: {c:.0}% confidence that at least 95% do (more requests per probe, more confidence).", highest.unwrap_or(0))
                    }
                });
                match (highest, lowest_broken, zh) {
                    (Some(h), Some(b), true) => format!("SLO 搜索：满足 SLO 的最高并发是 {h}（并发 {b} 已不满足：{why}）。{}", sure.unwrap_or_default()),
                    (Some(h), Some(b), false) => format!("SLO search: the highest concurrency within the SLO is {h} ({b} broke it: {why}).{}", sure.unwrap_or_default()),
                    (Some(h), None, true) => format!("SLO 搜索：直到搜索上限并发 {max} 都满足 SLO，满足 SLO 的最高并发至少是 {h}；要找到上限，请提高搜索上限。{}", sure.unwrap_or_default()),
                    (Some(h), None, false) => format!("SLO search: every probe up to the ceiling of {max} met the SLO, so the highest concurrency within it is at least {h}; raise the ceiling to find where it ends.{}", sure.unwrap_or_default()),
                    (None, Some(b), true) => format!("SLO 搜索：连第一次探测（并发 {b}）都不满足 SLO：{why}。"),
                    (None, Some(b), false) => format!("SLO search: not even the first probe (concurrency {b}) met the SLO: {why}."),
                    (None, None, true) => "SLO 搜索没有完成任何探测。".into(),
                    (None, None, false) => "The SLO search finished no probe.".into(),
                }
            }
        }
    }
}

/// Which way throughput went over one step, as it is shown (one decimal of a
/// percent): a fall is a fall, never "adds only −21.6%".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Grew,
    Flat,
    Fell,
}

impl Step {
    fn of(gain_pct: f64) -> Step {
        if gain_pct >= 0.05 {
            Step::Grew
        } else if gain_pct > -0.05 {
            Step::Flat
        } else {
            Step::Fell
        }
    }

    /// What going to the next level did to throughput, after "going to N".
    fn said(self, gain_pct: f64, next_tps: f64, lang: Lang) -> String {
        match (self, lang) {
            (Step::Grew, Lang::En) => format!("adds only {gain_pct:.1}% ({next_tps:.0} tok/s)"),
            (Step::Grew, Lang::Zh) => format!("只多了 {gain_pct:.1}%（{next_tps:.0} tok/s）"),
            (Step::Flat, Lang::En) => format!("leaves it flat ({next_tps:.0} tok/s)"),
            (Step::Flat, Lang::Zh) => format!("吞吐持平（{next_tps:.0} tok/s）"),
            (Step::Fell, Lang::En) => {
                format!("lowers it by {:.1}%, to {next_tps:.0} tok/s,", -gain_pct)
            }
            (Step::Fell, Lang::Zh) => {
                format!("吞吐反而下降了 {:.1}%，降到 {next_tps:.0} tok/s", -gain_pct)
            }
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// "concurrency 8 and 16" / "并发 8、16".
fn list(levels: &[u32], lang: Lang) -> String {
    let names: Vec<String> = levels.iter().map(u32::to_string).collect();
    match lang {
        Lang::Zh => format!("并发 {}", names.join("、")),
        Lang::En => match names.as_slice() {
            [one] => format!("concurrency {one}"),
            [init @ .., last] => format!("concurrency {} and {last}", init.join(", ")),
            [] => String::new(),
        },
    }
}

fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".into(), |v| format!("{v:.0} ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_variant() -> Vec<Sentence> {
        let breaches = vec!["TTFT p95 1200 ms > 1000 ms".to_owned()];
        vec![
            Sentence::NothingSucceeded,
            Sentence::Knee {
                first: 1,
                first_tps: 30.5,
                knee: 8,
                knee_tps: 210.25,
                next: 16,
                next_tps: 215.0,
                gain_pct: 2.3,
                knee_ttft_p95_ms: Some(310.0),
                next_ttft_p95_ms: None,
                knee_e2e_p95_ms: Some(900.0),
                next_e2e_p95_ms: Some(1900.0),
            },
            Sentence::CollapsedAbove {
                knee: 4,
                next: 8,
                n_fail: 32,
                n_cancelled: 3,
            },
            Sentence::FailuresAfterKnee {
                concurrency: 16,
                n_fail: 3,
            },
            Sentence::NoKnee {
                prev: 8,
                last: 16,
                prev_tps: 100.0,
                last_tps: 180.0,
                gain_pct: 80.0,
            },
            Sentence::OneLevel { concurrency: 4 },
            Sentence::SloAll,
            Sentence::SloUpTo {
                up_to: 4,
                first_bad: 8,
                breaches: breaches.clone(),
            },
            Sentence::SloNone {
                first_bad: 1,
                breaches: breaches.clone(),
            },
            Sentence::Safe {
                pct: 70.0,
                rule: 5,
                ttft_p95_ms: Some(250.5),
            },
            Sentence::SafeLowered {
                pct: 70.0,
                rule: 5,
                safe: 4,
                breaches: breaches.clone(),
            },
            Sentence::NoSafe {
                pct: 70.0,
                rule: 2,
                breaches: breaches.clone(),
            },
            Sentence::SloOkWithoutKnee { up_to: 16 },
            Sentence::BrowserLimitedKnee {
                connections: 6,
                protocol: "h3".into(),
            },
            Sentence::LeftOutBrowserQueue {
                levels: vec![8, 16],
                protocol: HTTP1.into(),
                connections: 6,
            },
            Sentence::LeftOutEngineLag {
                levels: vec![256],
                lag_p95_ms: 31.5,
            },
            Sentence::LeftOutBuffered {
                levels: vec![1, 2],
                share_pct: 98.0,
                largest: 64,
            },
            Sentence::Noise {
                passes: 3,
                output_tps_pct: 4.5,
                output_tps_at: 8,
                ttft_p95_pct: 12.0,
            },
            Sentence::SearchFound {
                highest: Some(12),
                lowest_broken: None,
                max: 64,
                breaches,
                n: 400,
                n_good: 398,
                confidence_pct: Some(95.0),
            },
        ]
    }

    #[test]
    fn every_variant_reads_back_as_written() {
        let all = every_variant();
        let json = serde_json::to_string(&all).unwrap();
        let back: Vec<Sentence> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, all);
    }

    #[test]
    fn absent_options_and_defaults_read_as_the_derive_did() {
        let knee: Sentence = serde_json::from_str(
            r#"{"kind":"knee","first":1,"first_tps":1.0,"knee":2,"knee_tps":2.0,"next":4,"next_tps":2.0,"gain_pct":0.0}"#,
        )
        .unwrap();
        assert!(matches!(
            knee,
            Sentence::Knee {
                knee_ttft_p95_ms: None,
                next_ttft_p95_ms: None,
                ..
            }
        ));
        // Documents from before the protocol was kept: the browser's HTTP/1.1 queue.
        let limited: Sentence =
            serde_json::from_str(r#"{"kind":"browser_limited_knee","connections":6}"#).unwrap();
        assert_eq!(
            limited,
            Sentence::BrowserLimitedKnee {
                connections: 6,
                protocol: HTTP1.into()
            }
        );
        // Fields of other variants, and unknown ones, are ignored.
        let one: Sentence =
            serde_json::from_str(r#"{"kind":"one_level","concurrency":2,"knee":9,"later":true}"#)
                .unwrap();
        assert_eq!(one, Sentence::OneLevel { concurrency: 2 });
    }

    #[test]
    fn a_missing_field_or_an_unknown_kind_is_an_error_that_names_it() {
        let missing = serde_json::from_str::<Sentence>(r#"{"kind":"slo_up_to","up_to":4}"#)
            .unwrap_err()
            .to_string();
        assert!(missing.contains("first_bad"), "{missing}");
        let unknown = serde_json::from_str::<Sentence>(r#"{"kind":"verdict_of_doom"}"#)
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("verdict_of_doom"), "{unknown}");
        assert!(serde_json::from_str::<Sentence>(r#"{"knee":4}"#).is_err());
        // A field of the wrong type is still refused.
        assert!(
            serde_json::from_str::<Sentence>(r#"{"kind":"one_level","concurrency":"2"}"#).is_err()
        );
    }
}
