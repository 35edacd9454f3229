//! Capacity analysis: the knee of the throughput curve, the safe concurrency, the
//! SLO per level, each with sentences that explain the verdict from the numbers.
//!
//! - **Knee.** Between two consecutive levels, the *gain share* is the relative
//!   throughput gain divided by the relative concurrency gain (1.0: throughput grew
//!   in proportion; 0.126: doubling concurrency added 12.6%). The knee is the last
//!   level before the first step whose gain share falls below
//!   [`AnalysisParams::knee_gain_share`] while p95 latency (TTFT or E2E) rises.
//! - **Safe concurrency.** `⌊knee × safe_fraction⌋` (the article's 70% rule), kept
//!   only where the p95 TTFT, TPOT and E2E there are within the SLO. Between two
//!   measured levels p95s are interpolated linearly; when the rule's value breaks
//!   the SLO, the highest measured level below it that meets the SLO is used instead.

use serde::{Deserialize, Serialize};

use crate::{
    plan::{AnalysisParams, Slo},
    summary::Summary,
};

/// The figures of one level that the analysis uses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelPoint {
    pub concurrency: u32,
    /// Aggregate output tokens/s.
    pub output_tps: f64,
    pub ttft_p95_ms: Option<f64>,
    pub tpot_p95_ms: Option<f64>,
    pub e2e_p95_ms: Option<f64>,
    pub n_ok: u64,
    pub n_fail: u64,
}

impl LevelPoint {
    /// `None` for a run-wide summary (no concurrency).
    pub fn from_summary(s: &Summary) -> Option<LevelPoint> {
        Some(LevelPoint {
            concurrency: s.concurrency?,
            output_tps: s.output_tps,
            ttft_p95_ms: s.ttft_ms.map(|d| d.p95),
            tpot_p95_ms: s.tpot_ms.map(|d| d.p95),
            e2e_p95_ms: s.e2e_ms.map(|d| d.p95),
            n_ok: s.n_ok,
            n_fail: s.n_fail,
        })
    }

    /// Names of the SLO limits this level's p95s exceed.
    fn slo_breaches(&self, slo: &Slo) -> Vec<String> {
        let mut breaches = Vec::new();
        let mut check = |name: &str, limit: Option<f64>, value: Option<f64>| {
            if let (Some(limit), Some(value)) = (limit, value) {
                if value > limit {
                    breaches.push(format!("p95 {name} {value:.0} ms > {limit:.0} ms"));
                }
            }
        };
        check("TTFT", slo.ttft_p95_ms, self.ttft_p95_ms);
        check("TPOT", slo.tpot_p95_ms, self.tpot_p95_ms);
        check("E2E", slo.e2e_p95_ms, self.e2e_p95_ms);
        if self.n_ok == 0 && slo.is_set() {
            breaches.push("no successful request".into());
        }
        breaches
    }
}

/// The verdict on one level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelVerdict {
    pub concurrency: u32,
    /// Gain share of the step from the previous level (see the module docs).
    pub gain_share: Option<f64>,
    pub meets_slo: bool,
    /// What breaks the SLO, e.g. `p95 TTFT 2401 ms > 1000 ms`.
    pub slo_breaches: Vec<String>,
}

/// The verdict on a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub knee: Option<u32>,
    pub safe_concurrency: Option<u32>,
    /// The highest level that, with every level below it, meets the SLO.
    pub slo_ok_up_to: Option<u32>,
    pub levels: Vec<LevelVerdict>,
    pub explanation_en: String,
    pub explanation_zh: String,
}

/// Analyses the per-level summaries of a ladder.
pub fn analyse(summaries: &[Summary], slo: &Slo, params: &AnalysisParams) -> Verdict {
    let points: Vec<LevelPoint> = summaries
        .iter()
        .filter_map(LevelPoint::from_summary)
        .collect();
    analyse_points(&points, slo, params)
}

/// Analyses level points (sorted here by concurrency).
pub fn analyse_points(points: &[LevelPoint], slo: &Slo, params: &AnalysisParams) -> Verdict {
    let mut points = points.to_vec();
    points.sort_by_key(|p| p.concurrency);
    let mut en = Vec::new();
    let mut zh = Vec::new();

    let levels: Vec<LevelVerdict> = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let breaches = p.slo_breaches(slo);
            LevelVerdict {
                concurrency: p.concurrency,
                gain_share: i.checked_sub(1).and_then(|j| gain_share(&points[j], p)),
                meets_slo: breaches.is_empty(),
                slo_breaches: breaches,
            }
        })
        .collect();

    let measured: Vec<&LevelPoint> = points.iter().filter(|p| p.n_ok > 0).collect();
    if measured.is_empty() {
        return Verdict {
            knee: None,
            safe_concurrency: None,
            slo_ok_up_to: None,
            levels,
            explanation_en: "No level had a successful request, so there is nothing to analyse: see the errors panel.".into(),
            explanation_zh: "没有任何一档有成功的请求，无法分析：请看错误面板。".into(),
        };
    }

    // The knee.
    let mut knee = None;
    for pair in measured.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let Some(share) = gain_share(a, b) else {
            continue;
        };
        let latency_rising =
            rising(a.ttft_p95_ms, b.ttft_p95_ms) || rising(a.e2e_p95_ms, b.e2e_p95_ms);
        if share < params.knee_gain_share && latency_rising {
            knee = Some(a.concurrency);
            let gain_pct = (b.output_tps / a.output_tps - 1.0) * 100.0;
            let first = measured[0];
            en.push(format!(
                "Throughput grows from {:.0} tok/s at concurrency {} to {:.0} tok/s at {}, but going to {} adds only {gain_pct:.1}% ({:.0} tok/s) while p95 TTFT rises from {} to {}: the knee is at concurrency {}.",
                first.output_tps, first.concurrency, a.output_tps, a.concurrency, b.concurrency, b.output_tps,
                ms(a.ttft_p95_ms), ms(b.ttft_p95_ms), a.concurrency
            ));
            zh.push(format!(
                "吞吐从并发 {} 的 {:.0} tok/s 涨到并发 {} 的 {:.0} tok/s，但加到并发 {} 只多了 {gain_pct:.1}%（{:.0} tok/s），同时 p95 TTFT 从 {} 升到 {}：拐点在并发 {}。",
                first.concurrency, first.output_tps, a.concurrency, a.output_tps, b.concurrency, b.output_tps,
                ms(a.ttft_p95_ms), ms(b.ttft_p95_ms), a.concurrency
            ));
            if b.n_fail > 0 {
                en.push(format!(
                    "At {} there were also {} failed requests.",
                    b.concurrency, b.n_fail
                ));
                zh.push(format!(
                    "并发 {} 时还出现了 {} 个失败请求。",
                    b.concurrency, b.n_fail
                ));
            }
            break;
        }
    }
    if knee.is_none() {
        let last = measured[measured.len() - 1];
        if measured.len() >= 2 {
            let prev = measured[measured.len() - 2];
            let gain_pct = (last.output_tps / prev.output_tps - 1.0) * 100.0;
            en.push(format!(
                "No knee up to concurrency {}: throughput still grew {gain_pct:.1}% from {} to {} ({:.0} → {:.0} tok/s). Test higher concurrency to find where it stops growing.",
                last.concurrency, prev.concurrency, last.concurrency, prev.output_tps, last.output_tps
            ));
            zh.push(format!(
                "到并发 {} 还没有拐点：从并发 {} 到 {} 吞吐仍增长了 {gain_pct:.1}%（{:.0} → {:.0} tok/s）。请加大并发梯度继续找拐点。",
                last.concurrency, prev.concurrency, last.concurrency, prev.output_tps, last.output_tps
            ));
        } else {
            en.push(format!(
                "Only one level (concurrency {}) was measured: a knee needs at least two.",
                last.concurrency
            ));
            zh.push(format!(
                "只测了一档（并发 {}），找拐点至少需要两档。",
                last.concurrency
            ));
        }
    }

    // The SLO, level by level.
    let mut slo_ok_up_to = None;
    for (p, v) in points.iter().zip(&levels) {
        if !v.meets_slo {
            break;
        }
        slo_ok_up_to = Some(p.concurrency);
    }
    if slo.is_set() {
        match (slo_ok_up_to, levels.iter().find(|v| !v.meets_slo)) {
            (_, None) => {
                en.push("Every level meets the SLO.".into());
                zh.push("每一档都满足 SLO。".into());
            }
            (up_to, Some(first_bad)) => {
                let reasons = first_bad.slo_breaches.join(", ");
                match up_to {
                    Some(c) => {
                        en.push(format!(
                            "The SLO holds up to concurrency {c}; at {} it breaks ({reasons}).",
                            first_bad.concurrency
                        ));
                        zh.push(format!(
                            "并发 {c} 及以下满足 SLO；到并发 {} 不再满足（{reasons}）。",
                            first_bad.concurrency
                        ));
                    }
                    None => {
                        en.push(format!(
                            "Even concurrency {} breaks the SLO ({reasons}).",
                            first_bad.concurrency
                        ));
                        zh.push(format!(
                            "连并发 {} 都不满足 SLO（{reasons}）。",
                            first_bad.concurrency
                        ));
                    }
                }
            }
        }
    }

    // The safe concurrency.
    let mut safe = None;
    if let Some(knee) = knee {
        let rule = ((knee as f64 * params.safe_fraction).floor() as u32).max(1);
        let pct = (params.safe_fraction * 100.0).round();
        let at_rule = interpolate(&points, rule);
        let breaches = at_rule.slo_breaches(slo);
        if breaches.is_empty() {
            safe = Some(rule);
            let ttft = at_rule
                .ttft_p95_ms
                .map(|t| format!(" (p95 TTFT there about {t:.0} ms)"))
                .unwrap_or_default();
            let ttft_zh = at_rule
                .ttft_p95_ms
                .map(|t| format!("（该处 p95 TTFT 约 {t:.0} ms）"))
                .unwrap_or_default();
            en.push(format!(
                "{pct}% of the knee is {rule}{ttft}: the safe concurrency is {rule}."
            ));
            zh.push(format!(
                "取拐点的 {pct}% 为 {rule}{ttft_zh}：安全并发为 {rule}。"
            ));
        } else {
            safe = points
                .iter()
                .zip(&levels)
                .filter(|(p, v)| p.concurrency <= rule && v.meets_slo)
                .map(|(p, _)| p.concurrency)
                .max();
            let reasons = breaches.join(", ");
            match safe {
                Some(c) => {
                    en.push(format!("{pct}% of the knee is {rule}, but there the SLO breaks ({reasons}): the safe concurrency is {c}, the highest measured level within the SLO."));
                    zh.push(format!("拐点的 {pct}% 是 {rule}，但该处不满足 SLO（{reasons}）：安全并发取满足 SLO 的最高实测档 {c}。"));
                }
                None => {
                    en.push(format!("{pct}% of the knee is {rule}, but no level up to it meets the SLO ({reasons}): there is no safe concurrency for this SLO."));
                    zh.push(format!("拐点的 {pct}% 是 {rule}，但到该档为止没有满足 SLO 的档位（{reasons}）：在这个 SLO 下没有安全并发。"));
                }
            }
        }
    } else if let Some(c) = slo_ok_up_to.filter(|_| slo.is_set()) {
        en.push(format!(
            "Without a knee the 70% rule does not apply; within the SLO, concurrency {c} was fine."
        ));
        zh.push(format!(
            "没有拐点，70% 规则不适用；在 SLO 之内，并发 {c} 是没问题的。"
        ));
    }

    Verdict {
        knee,
        safe_concurrency: safe,
        slo_ok_up_to,
        levels,
        explanation_en: en.join(" "),
        explanation_zh: zh.join(""),
    }
}

fn gain_share(a: &LevelPoint, b: &LevelPoint) -> Option<f64> {
    let concurrency_gain = b.concurrency as f64 / a.concurrency as f64 - 1.0;
    (a.output_tps > 0.0 && concurrency_gain > 0.0 && a.n_ok > 0 && b.n_ok > 0)
        .then(|| (b.output_tps / a.output_tps - 1.0) / concurrency_gain)
}

fn rising(a: Option<f64>, b: Option<f64>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if b > a)
}

fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".into(), |v| format!("{v:.0} ms"))
}

/// The p95s at `concurrency`, interpolated linearly between the measured levels
/// around it (exact when it was measured; the nearest level's beyond the ends).
fn interpolate(points: &[LevelPoint], concurrency: u32) -> LevelPoint {
    let measured: Vec<&LevelPoint> = points.iter().filter(|p| p.n_ok > 0).collect();
    let after = measured.iter().position(|p| p.concurrency >= concurrency);
    let (a, b) = match after {
        Some(0) => (measured[0], measured[0]),
        Some(i) => (measured[i - 1], measured[i]),
        None => (measured[measured.len() - 1], measured[measured.len() - 1]),
    };
    let t = if b.concurrency == a.concurrency {
        0.0
    } else {
        (concurrency - a.concurrency) as f64 / (b.concurrency - a.concurrency) as f64
    };
    let lerp = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => Some(x + t * (y - x)),
        _ => None,
    };
    LevelPoint {
        concurrency,
        output_tps: a.output_tps + t * (b.output_tps - a.output_tps),
        ttft_p95_ms: lerp(a.ttft_p95_ms, b.ttft_p95_ms),
        tpot_p95_ms: lerp(a.tpot_p95_ms, b.tpot_p95_ms),
        e2e_p95_ms: lerp(a.e2e_p95_ms, b.e2e_p95_ms),
        n_ok: a.n_ok.min(b.n_ok),
        n_fail: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference article's section 4 table (its `tps_sum` as the throughput).
    fn article_table() -> Vec<LevelPoint> {
        let row = |c, ok, fail, ttft95, tpot95, tps| LevelPoint {
            concurrency: c,
            output_tps: tps,
            ttft_p95_ms: Some(ttft95),
            tpot_p95_ms: Some(tpot95),
            e2e_p95_ms: None,
            n_ok: ok,
            n_fail: fail,
        };
        vec![
            row(1, 8, 0, 510.2, 22.1, 436.8),
            row(2, 8, 0, 620.7, 25.4, 808.0),
            row(4, 8, 0, 810.3, 31.2, 1356.8),
            row(8, 8, 0, 1250.6, 45.8, 2028.8),
            row(16, 7, 1, 2400.9, 72.3, 2284.5),
        ]
    }

    #[test]
    fn the_article_table_has_its_knee_at_8_and_is_safe_at_5() {
        let slo = Slo {
            ttft_p95_ms: Some(1000.0),
            tpot_p95_ms: None,
            e2e_p95_ms: None,
        };
        let v = analyse_points(&article_table(), &slo, &AnalysisParams::default());
        assert_eq!(v.knee, Some(8));
        // 70% of 8 = 5.6 → 5; p95 TTFT at 5 ≈ 810.3 + (1/4)(1250.6 − 810.3) = 920.4 ms.
        assert_eq!(v.safe_concurrency, Some(5));
        assert_eq!(v.slo_ok_up_to, Some(4));
        let shares: Vec<f64> = v.levels.iter().filter_map(|l| l.gain_share).collect();
        let expected = [
            808.0 / 436.8 - 1.0,
            1356.8 / 808.0 - 1.0,
            2028.8 / 1356.8 - 1.0,
            2284.5 / 2028.8 - 1.0,
        ];
        for (got, want) in shares.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12);
        }
        assert!(
            v.explanation_en.contains("adds only 12.6%"),
            "{}",
            v.explanation_en
        );
        assert!(v.explanation_en.contains("the knee is at concurrency 8"));
        assert!(
            v.explanation_en.contains("about 920 ms"),
            "{}",
            v.explanation_en
        );
        assert!(v.explanation_en.contains("1 failed requests"));
        assert!(v.explanation_zh.contains("拐点在并发 8"));
        assert!(v.explanation_zh.contains("安全并发为 5"));
        assert!(!v.levels[3].meets_slo);
        assert_eq!(v.levels[3].slo_breaches, ["p95 TTFT 1251 ms > 1000 ms"]);
    }

    #[test]
    fn a_tight_slo_moves_the_safe_concurrency_down() {
        let slo = Slo {
            ttft_p95_ms: Some(700.0),
            ..Slo::default()
        };
        let v = analyse_points(&article_table(), &slo, &AnalysisParams::default());
        assert_eq!(v.knee, Some(8));
        assert_eq!(v.safe_concurrency, Some(2));
        assert!(
            v.explanation_en.contains("the safe concurrency is 2"),
            "{}",
            v.explanation_en
        );
    }

    #[test]
    fn an_impossible_slo_gives_no_safe_concurrency() {
        let slo = Slo {
            ttft_p95_ms: Some(100.0),
            ..Slo::default()
        };
        let v = analyse_points(&article_table(), &slo, &AnalysisParams::default());
        assert_eq!(v.safe_concurrency, None);
        assert_eq!(v.slo_ok_up_to, None);
        assert!(v.explanation_en.contains("no safe concurrency"));
    }

    #[test]
    fn still_scaling_means_no_knee() {
        let v = analyse_points(
            &article_table()[..4],
            &Slo::default(),
            &AnalysisParams::default(),
        );
        assert_eq!(v.knee, None);
        assert_eq!(v.safe_concurrency, None);
        assert!(
            v.explanation_en.contains("No knee up to concurrency 8"),
            "{}",
            v.explanation_en
        );
    }

    #[test]
    fn flat_throughput_without_rising_latency_is_no_knee() {
        let mut table = article_table();
        table[4].output_tps = 2030.0;
        table[4].ttft_p95_ms = Some(1000.0);
        let v = analyse_points(&table, &Slo::default(), &AnalysisParams::default());
        assert_eq!(v.knee, None);
    }

    #[test]
    fn nothing_succeeded() {
        let mut table = article_table();
        for p in &mut table {
            p.n_ok = 0;
        }
        let v = analyse_points(&table, &Slo::default(), &AnalysisParams::default());
        assert_eq!((v.knee, v.safe_concurrency), (None, None));
        assert!(v.explanation_en.contains("errors panel"));
    }
}
