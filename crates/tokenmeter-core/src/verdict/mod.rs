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

mod sentence;

pub use sentence::Sentence;

use crate::{
    error::Lang,
    plan::{AnalysisParams, Slo},
    summary::{Distortion, Summary},
};

/// The figures of one level that the analysis uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LevelPoint {
    pub concurrency: u32,
    /// Aggregate output tokens/s.
    pub output_tps: f64,
    pub ttft_p95_ms: Option<f64>,
    pub tpot_p95_ms: Option<f64>,
    pub e2e_p95_ms: Option<f64>,
    pub n_ok: u64,
    pub n_fail: u64,
    /// Requests the user cancelled (neither successes nor failures).
    pub n_cancelled: u64,
    /// The spread of output tokens/s between the passes of a repeated ladder,
    /// percent of their mean: a gain within it is noise, not growth.
    pub output_tps_noise_pct: Option<f64>,
}

impl LevelPoint {
    /// `None` for a run-wide summary (no concurrency).
    pub(crate) fn from_summary(s: &Summary) -> Option<LevelPoint> {
        Some(LevelPoint {
            concurrency: s.concurrency?,
            output_tps: s.output_tps,
            ttft_p95_ms: s.ttft_ms.map(|d| d.p95),
            tpot_p95_ms: s.tpot_ms.map(|d| d.p95),
            e2e_p95_ms: s.e2e_ms.map(|d| d.p95),
            n_ok: s.n_ok,
            n_fail: s.n_fail,
            n_cancelled: s.n_cancelled,
            output_tps_noise_pct: s.spread_pct(|p| Some(p.output_tps)),
        })
    }

    /// Whether going from `self` to `next` changed throughput by no more than the
    /// noise between passes at either level.
    fn within_noise(&self, next: &LevelPoint) -> bool {
        let noise = match (self.output_tps_noise_pct, next.output_tps_noise_pct) {
            (Some(a), Some(b)) => a.max(b),
            (Some(n), None) | (None, Some(n)) => n,
            (None, None) => return false,
        };
        self.output_tps > 0.0 && (next.output_tps / self.output_tps - 1.0).abs() * 100.0 <= noise
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
        let n = self.n_ok + self.n_fail;
        if let (Some(limit), true) = (slo.error_rate_pct, n > 0) {
            let rate = 100.0 * self.n_fail as f64 / n as f64;
            if rate > limit {
                breaches.push(format!("error rate {rate:.1}% > {limit}%"));
            }
        }
        if self.n_ok == 0 && slo.is_set() {
            breaches.push("no successful request".into());
        }
        breaches
    }
}

/// The verdict on one level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelVerdict {
    /// The level.
    pub concurrency: u32,
    /// Gain share of the step from the previous level (see the module docs).
    pub gain_share: Option<f64>,
    /// Whether the level meets every SLO limit.
    pub meets_slo: bool,
    /// What breaks the SLO, e.g. `p95 TTFT 2401 ms > 1000 ms`.
    pub slo_breaches: Vec<String>,
}

/// The verdict on a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Where throughput stopped growing: the last level before the gain fell under the rule.
    pub knee: Option<u32>,
    /// The concurrency to run at: the knee's share (70%) rounded down to a measured level that meets the SLO.
    pub safe_concurrency: Option<u32>,
    /// The highest level that, with every level below it, meets the SLO.
    pub slo_ok_up_to: Option<u32>,
    /// Each level's verdict, in order.
    pub levels: Vec<LevelVerdict>,
    /// What the verdict says, as data: rendered per language by [`Sentence::text`].
    #[serde(default)]
    pub sentences: Vec<Sentence>,
    /// The sentences in English and in Chinese, for readers of schema 1.
    pub explanation_en: String,
    /// The sentences in Chinese.
    pub explanation_zh: String,
}

impl Verdict {
    /// Whether the level at `concurrency` meets the SLO as this verdict judged it;
    /// a level the verdict left out (the browser or the engine shaped it) does not.
    /// An SLO search's probe is judged so.
    pub fn meets_slo_at(&self, concurrency: u32) -> bool {
        self.levels
            .iter()
            .find(|l| l.concurrency == concurrency)
            .is_some_and(|l| l.meets_slo)
    }

    /// The explanation in `lang`.
    pub fn text(&self, lang: Lang) -> String {
        if self.sentences.is_empty() {
            // A document from before sentences were kept.
            return match lang {
                Lang::En => self.explanation_en.clone(),
                Lang::Zh => self.explanation_zh.clone(),
            };
        }
        let separator = match lang {
            Lang::En => " ",
            Lang::Zh => "",
        };
        self.sentences
            .iter()
            .map(|s| s.text(lang))
            .collect::<Vec<_>>()
            .join(separator)
    }

    /// Adds a sentence and keeps the two explanations in step.
    pub fn push(&mut self, sentence: Sentence) {
        self.sentences.push(sentence);
        self.explanation_en = self.text(Lang::En);
        self.explanation_zh = self.text(Lang::Zh);
    }

    /// Puts a sentence first (the answer to what the run was for), keeping the
    /// two explanations in step.
    pub fn lead(&mut self, sentence: Sentence) {
        self.sentences.insert(0, sentence);
        self.explanation_en = self.text(Lang::En);
        self.explanation_zh = self.text(Lang::Zh);
    }
}

/// Analyses the per-level summaries of a ladder. A level marked
/// [`distorted`](Summary::distorted) is left out, and the verdict says so first:
/// its figures are the browser's or the engine's as much as the server's.
// Long: the verdict's steps in order: the knee, the safe level, the SLO.
pub fn analyse(summaries: &[Summary], slo: &Slo, params: &AnalysisParams) -> Verdict {
    let points: Vec<LevelPoint> = summaries
        .iter()
        .filter(|s| s.distorted.is_none())
        .filter_map(LevelPoint::from_summary)
        .collect();
    let mut left_out = Vec::new();
    let mut by_browser: Option<(Vec<u32>, String, u32)> = None;
    let mut by_engine: Option<(Vec<u32>, f64)> = None;
    let mut by_gateway: Option<(Vec<u32>, f64, u64)> = None;
    for s in summaries {
        let (Some(concurrency), Some(distortion)) = (s.concurrency, &s.distorted) else {
            continue;
        };
        match distortion {
            Distortion::BrowserQueue {
                protocol,
                connections,
            } => {
                by_browser
                    .get_or_insert_with(|| (Vec::new(), protocol.clone(), *connections))
                    .0
                    .push(concurrency);
            }
            Distortion::Engine { lag_p95_ms } => {
                let entry = by_engine.get_or_insert((Vec::new(), 0.0));
                entry.0.push(concurrency);
                entry.1 = entry.1.max(*lag_p95_ms);
            }
            Distortion::Buffered {
                share_pct, largest, ..
            } => {
                let entry = by_gateway.get_or_insert((Vec::new(), 0.0, 0));
                entry.0.push(concurrency);
                entry.1 = entry.1.max(*share_pct);
                entry.2 = entry.2.max(*largest);
            }
        }
    }
    if let Some((levels, protocol, connections)) = by_browser {
        left_out.push(Sentence::LeftOutBrowserQueue {
            levels,
            protocol,
            connections,
        });
    }
    if let Some((levels, lag_p95_ms)) = by_engine {
        left_out.push(Sentence::LeftOutEngineLag { levels, lag_p95_ms });
    }
    if let Some((levels, share_pct, largest)) = by_gateway {
        left_out.push(Sentence::LeftOutBuffered {
            levels,
            share_pct,
            largest,
        });
    }
    let noise = noise_sentence(summaries);
    if left_out.is_empty() {
        let mut verdict = analyse_points(&points, slo, params);
        if let Some(noise) = noise {
            verdict.push(noise);
        }
        return verdict;
    }
    let mut verdict = if points.iter().any(|p| p.n_ok > 0) {
        analyse_points(&points, slo, params)
    } else {
        // Nothing measured cleanly: no knee, no safe concurrency, only why.
        Verdict {
            knee: None,
            safe_concurrency: None,
            slo_ok_up_to: None,
            levels: Vec::new(),
            sentences: Vec::new(),
            explanation_en: String::new(),
            explanation_zh: String::new(),
        }
    };
    let rest = std::mem::take(&mut verdict.sentences);
    for sentence in left_out.into_iter().chain(rest).chain(noise) {
        verdict.push(sentence);
    }
    verdict
}

/// The noise floor of a repeated ladder, said: the largest spread of output
/// tokens/s and of p95 TTFT between passes at any level.
fn noise_sentence(summaries: &[Summary]) -> Option<Sentence> {
    let passes = summaries.iter().map(|s| s.repetitions.len()).max()?;
    if passes < 2 {
        return None;
    }
    let widest = |f: fn(&crate::summary::PassFigures) -> Option<f64>| {
        summaries
            .iter()
            .filter_map(|s| Some((s.concurrency?, s.spread_pct(f)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let (tps_at, output_tps_pct) = widest(|p| Some(p.output_tps))?;
    let ttft_p95_pct = widest(|p| p.ttft_p95_ms).map_or(0.0, |(_, pct)| pct);
    Some(Sentence::Noise {
        passes: passes as u32,
        output_tps_pct,
        output_tps_at: tps_at,
        ttft_p95_pct,
    })
}

/// Analyses level points (sorted here by concurrency).
// Long: the knee and safe-concurrency rules in order, read in one place.
pub(crate) fn analyse_points(points: &[LevelPoint], slo: &Slo, params: &AnalysisParams) -> Verdict {
    let order = crate::stats::order_with(points.len(), &|a, b| {
        points[a].concurrency.cmp(&points[b].concurrency)
    });
    let points = crate::stats::reorder(points.to_vec(), &order);

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
    let mut verdict = Verdict {
        knee: None,
        safe_concurrency: None,
        slo_ok_up_to: None,
        levels,
        sentences: Vec::new(),
        explanation_en: String::new(),
        explanation_zh: String::new(),
    };

    let measured: Vec<&LevelPoint> = points.iter().filter(|p| p.n_ok > 0).collect();
    if measured.is_empty() {
        verdict.push(Sentence::NothingSucceeded);
        return verdict;
    }

    // The knee.
    for pair in measured.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let Some(share) = gain_share(a, b) else {
            continue;
        };
        // A gain no larger than the noise between passes is no gain.
        let share = if a.within_noise(b) { 0.0 } else { share };
        let latency_rising =
            rising(a.ttft_p95_ms, b.ttft_p95_ms) || rising(a.e2e_p95_ms, b.e2e_p95_ms);
        if share < params.knee_gain_share && latency_rising {
            verdict.knee = Some(a.concurrency);
            let first = measured[0];
            verdict.push(Sentence::Knee {
                first: first.concurrency,
                first_tps: first.output_tps,
                knee: a.concurrency,
                knee_tps: a.output_tps,
                next: b.concurrency,
                next_tps: b.output_tps,
                gain_pct: (b.output_tps / a.output_tps - 1.0) * 100.0,
                knee_ttft_p95_ms: a.ttft_p95_ms,
                next_ttft_p95_ms: b.ttft_p95_ms,
                knee_e2e_p95_ms: a.e2e_p95_ms,
                next_e2e_p95_ms: b.e2e_p95_ms,
            });
            if b.n_fail > 0 {
                verdict.push(Sentence::FailuresAfterKnee {
                    concurrency: b.concurrency,
                    n_fail: b.n_fail,
                });
            }
            break;
        }
    }
    let last = measured[measured.len() - 1];
    // Every request failed at each level above the last that had a success: the
    // service broke there, and a knee computed from successes alone would say it
    // "still grows".
    let above: Vec<&LevelPoint> = points
        .iter()
        .filter(|p| p.concurrency > last.concurrency)
        .collect();
    if verdict.knee.is_none() && !above.is_empty() && above.iter().all(|p| p.n_fail > 0) {
        verdict.knee = Some(last.concurrency);
        verdict.push(Sentence::CollapsedAbove {
            knee: last.concurrency,
            next: above[0].concurrency,
            n_fail: above[0].n_fail,
            n_cancelled: above[0].n_cancelled,
        });
    }
    if verdict.knee.is_none() {
        if measured.len() >= 2 {
            let prev = measured[measured.len() - 2];
            verdict.push(Sentence::NoKnee {
                prev: prev.concurrency,
                last: last.concurrency,
                prev_tps: prev.output_tps,
                last_tps: last.output_tps,
                gain_pct: (last.output_tps / prev.output_tps - 1.0) * 100.0,
            });
        } else {
            verdict.push(Sentence::OneLevel {
                concurrency: last.concurrency,
            });
        }
    }

    // The SLO, level by level.
    for (p, v) in points.iter().zip(&verdict.levels) {
        if !v.meets_slo {
            break;
        }
        verdict.slo_ok_up_to = Some(p.concurrency);
    }
    if slo.is_set() {
        let sentence = match verdict.levels.iter().find(|v| !v.meets_slo) {
            None => Sentence::SloAll,
            Some(first_bad) => match verdict.slo_ok_up_to {
                Some(up_to) => Sentence::SloUpTo {
                    up_to,
                    first_bad: first_bad.concurrency,
                    breaches: first_bad.slo_breaches.clone(),
                },
                None => Sentence::SloNone {
                    first_bad: first_bad.concurrency,
                    breaches: first_bad.slo_breaches.clone(),
                },
            },
        };
        verdict.push(sentence);
    }

    // The safe concurrency.
    if let Some(knee) = verdict.knee {
        let rule = ((knee as f64 * params.safe_fraction).floor() as u32).max(1);
        let pct = (params.safe_fraction * 100.0).round();
        let at_rule = interpolate(&points, rule);
        let breaches = at_rule.slo_breaches(slo);
        if breaches.is_empty() {
            verdict.safe_concurrency = Some(rule);
            verdict.push(Sentence::Safe {
                pct,
                rule,
                ttft_p95_ms: at_rule.ttft_p95_ms,
            });
        } else {
            verdict.safe_concurrency = points
                .iter()
                .zip(&verdict.levels)
                .filter(|(p, v)| p.concurrency <= rule && v.meets_slo)
                .map(|(p, _)| p.concurrency)
                .max();
            verdict.push(match verdict.safe_concurrency {
                Some(safe) => Sentence::SafeLowered {
                    pct,
                    rule,
                    safe,
                    breaches,
                },
                None => Sentence::NoSafe {
                    pct,
                    rule,
                    breaches,
                },
            });
        }
    } else if let Some(up_to) = verdict.slo_ok_up_to.filter(|_| slo.is_set()) {
        verdict.push(Sentence::SloOkWithoutKnee { up_to });
    }
    verdict
}

fn gain_share(a: &LevelPoint, b: &LevelPoint) -> Option<f64> {
    let concurrency_gain = b.concurrency as f64 / a.concurrency as f64 - 1.0;
    (a.output_tps > 0.0 && concurrency_gain > 0.0 && a.n_ok > 0 && b.n_ok > 0)
        .then(|| (b.output_tps / a.output_tps - 1.0) / concurrency_gain)
}

fn rising(a: Option<f64>, b: Option<f64>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if b > a)
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
        n_cancelled: 0,
        output_tps_noise_pct: None,
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
            n_cancelled: 0,
            output_tps_noise_pct: None,
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
            error_rate_pct: None,
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
    fn a_top_level_where_everything_failed_is_the_end_of_capacity() {
        let mut table = article_table()[..4].to_vec();
        table.push(LevelPoint {
            concurrency: 16,
            output_tps: 0.0,
            ttft_p95_ms: None,
            tpot_p95_ms: None,
            e2e_p95_ms: None,
            n_ok: 0,
            n_fail: 8,
            n_cancelled: 0,
            output_tps_noise_pct: None,
        });
        let v = analyse_points(&table, &Slo::default(), &AnalysisParams::default());
        assert_eq!(v.knee, Some(8), "{}", v.explanation_en);
        assert_eq!(v.safe_concurrency, Some(5));
        assert!(
            v.explanation_en
                .contains("at concurrency 16 all 8 requests failed"),
            "{}",
            v.explanation_en
        );
        assert!(!v.explanation_en.contains("No knee"));
        assert!(v.explanation_zh.contains("并发 16"));
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

    /// A level by its figures: `(concurrency, output tok/s, p95 TTFT, p95 E2E)`,
    /// ten requests, all successful.
    fn level(c: u32, tps: f64, ttft: f64, e2e: f64) -> LevelPoint {
        LevelPoint {
            concurrency: c,
            output_tps: tps,
            ttft_p95_ms: Some(ttft),
            tpot_p95_ms: Some(20.0),
            e2e_p95_ms: Some(e2e),
            n_ok: 10,
            n_fail: 0,
            n_cancelled: 0,
            output_tps_noise_pct: None,
        }
    }

    /// What no sentence may say, in either language: growth that is a fall, a
    /// figure that is not a number, "grows from X … to X".
    fn assert_consistent(text: &str) {
        for wrong in [
            "adds only -",
            "grew -",
            "多了 -",
            "增长了 -",
            "-0.0",
            "NaN",
            "inf ",
            "% (-",
        ] {
            assert!(!text.contains(wrong), "`{wrong}` in: {text}");
        }
        if let Some(rest) = text.split("grows from ").nth(1) {
            let words: Vec<&str> = rest.split_whitespace().collect();
            // "grows from A tok/s at concurrency X to B tok/s at Y"
            let (a, x) = (words[0], words[4]);
            let (b, y) = (words[6], words[9].trim_end_matches(','));
            assert!(
                b.parse::<f64>().unwrap() > a.parse::<f64>().unwrap() && x != y,
                "{text}"
            );
        }
    }

    fn said(points: &[LevelPoint]) -> (Verdict, String, String) {
        let slo = Slo {
            ttft_p95_ms: Some(1000.0),
            ..Slo::default()
        };
        let v = analyse_points(points, &slo, &AnalysisParams::default());
        let (en, zh) = (v.text(Lang::En), v.text(Lang::Zh));
        assert_consistent(&en);
        assert_consistent(&zh);
        (v, en, zh)
    }

    #[test]
    fn a_knee_at_the_first_level_is_said_plainly_and_a_fall_is_a_fall() {
        // llama-server, 4 slots on one thread: serving four at once is slower.
        let (v, en, zh) = said(&[level(1, 22.0, 65.0, 900.0), level(4, 17.25, 3878.0, 4000.0)]);
        assert_eq!(v.knee, Some(1));
        assert!(
            en.starts_with("Throughput is 22 tok/s at concurrency 1, and going to 4 lowers it by 21.6%, to 17 tok/s, while p95 TTFT rises from 65 ms to 3878 ms: this server does not gain from serving requests together, and the knee is the first level, concurrency 1."),
            "{en}"
        );
        assert!(
            zh.contains("吞吐反而下降了 21.6%") && zh.contains("拐点就在第一档"),
            "{zh}"
        );

        // A small gain at the first step: no claim that the server cannot batch.
        let (_, en, zh) = said(&[
            level(1, 100.0, 100.0, 900.0),
            level(8, 110.0, 900.0, 5000.0),
        ]);
        assert!(
            en.contains("going to 8 adds only 10.0% (110 tok/s)"),
            "{en}"
        );
        assert!(!en.contains("does not gain") && en.contains("the knee is the first level"));
        assert!(zh.contains("只多了 10.0%"), "{zh}");

        // Flat within a tenth of a percent.
        let (_, en, zh) = said(&[
            level(1, 136.0, 100.0, 900.0),
            level(2, 136.02, 300.0, 1800.0),
        ]);
        assert!(en.contains("going to 2 leaves it flat (136 tok/s)"), "{en}");
        assert!(zh.contains("吞吐持平"), "{zh}");
    }

    #[test]
    fn a_fall_after_growth_and_growth_too_small_to_show_are_said_as_they_are() {
        // The default demo's shape: 4 → 6 lost 0.2%.
        let (v, en, _) = said(&[
            level(1, 40.0, 60.0, 500.0),
            level(2, 80.0, 62.0, 510.0),
            level(4, 136.3, 70.0, 600.0),
            level(6, 136.0, 400.0, 900.0),
        ]);
        assert_eq!(v.knee, Some(4));
        assert!(
            en.starts_with("Throughput grows from 40 tok/s at concurrency 1 to 136 tok/s at 4, but going to 6 lowers it by 0.2%, to 136 tok/s, while p95 TTFT rises from 70 ms to 400 ms: the knee is at concurrency 4."),
            "{en}"
        );
        // Throughput at the knee no higher, as shown, than at the first level.
        let (v, en, zh) = said(&[
            level(1, 100.0, 100.0, 900.0),
            level(2, 100.3, 100.0, 900.0),
            level(4, 100.1, 500.0, 2000.0),
        ]);
        assert_eq!(v.knee, Some(2));
        assert!(en.starts_with("Throughput stays at about 100 tok/s from concurrency 1 to 2, and going to 4 lowers it by 0.2%"), "{en}");
        assert!(
            zh.starts_with("吞吐从并发 1 到 2 一直约为 100 tok/s"),
            "{zh}"
        );
        let (_, en, _) = said(&[
            level(1, 100.0, 100.0, 900.0),
            level(2, 90.0, 100.0, 900.0),
            level(4, 80.0, 500.0, 2000.0),
        ]);
        assert!(en.starts_with("Throughput falls from 100 tok/s at concurrency 1 to 90 tok/s at 2, and going to 4 lowers it by 11.1%"), "{en}");
    }

    #[test]
    fn the_latency_named_is_the_one_that_rose() {
        let (v, en, zh) = said(&[
            level(1, 100.0, 100.0, 1000.0),
            level(2, 105.0, 95.0, 1900.0),
        ]);
        assert_eq!(v.knee, Some(1));
        assert!(
            en.contains("while p95 E2E rises from 1000 ms to 1900 ms"),
            "{en}"
        );
        assert!(zh.contains("p95 E2E 从 1000 ms 升到 1900 ms"), "{zh}");
    }

    #[test]
    fn without_a_knee_a_fall_or_a_flat_line_is_not_called_growth() {
        let (v, en, zh) = said(&[level(1, 100.0, 100.0, 900.0), level(2, 90.0, 90.0, 900.0)]);
        assert_eq!(v.knee, None);
        assert!(en.starts_with("No knee up to concurrency 2: throughput fell 10.0% from 1 to 2 (100 → 90 tok/s) while p95 latency did not rise"), "{en}");
        assert!(zh.contains("吞吐下降了 10.0%"), "{zh}");
        let (_, en, zh) = said(&[level(1, 100.0, 100.0, 900.0), level(2, 100.0, 100.0, 900.0)]);
        assert!(en.contains("throughput stayed flat from 1 to 2"), "{en}");
        assert!(zh.contains("吞吐持平"), "{zh}");
        let (_, en, _) = said(&[level(1, 100.0, 100.0, 900.0), level(2, 190.0, 100.0, 900.0)]);
        assert!(
            en.starts_with("No knee up to concurrency 2: throughput still grew 90.0%"),
            "{en}"
        );
        let (_, en, zh) = said(&[level(4, 100.0, 100.0, 900.0)]);
        assert!(en.starts_with("Only one level (concurrency 4)"), "{en}");
        assert!(zh.starts_with("只测了一档"), "{zh}");
    }

    #[test]
    fn nothing_succeeded_and_a_top_level_of_failures_and_cancels() {
        let broken = |c: u32, n_fail: u64, n_cancelled: u64| LevelPoint {
            output_tps: 0.0,
            ttft_p95_ms: None,
            tpot_p95_ms: None,
            e2e_p95_ms: None,
            n_ok: 0,
            n_fail,
            n_cancelled,
            ..level(c, 0.0, 0.0, 0.0)
        };
        let (v, en, zh) = said(&[broken(1, 4, 0), broken(2, 4, 0)]);
        assert_eq!((v.knee, v.safe_concurrency), (None, None));
        assert!(en.starts_with("No level had a successful request"), "{en}");
        assert!(zh.starts_with("没有任何一档有成功的请求"), "{zh}");

        let (v, en, zh) = said(&[
            level(1, 50.0, 100.0, 900.0),
            level(2, 95.0, 120.0, 950.0),
            broken(4, 2, 6),
        ]);
        assert_eq!(v.knee, Some(2));
        assert!(
            en.contains("at concurrency 4 no request succeeded (2 failed, 6 cancelled)"),
            "{en}"
        );
        assert!(!en.contains("all 2 requests failed"));
        assert!(
            zh.contains("没有一个请求成功（2 个失败，6 个被取消）"),
            "{zh}"
        );
        let (_, en, _) = said(&[level(1, 50.0, 100.0, 900.0), broken(2, 3, 0)]);
        assert!(
            en.contains("at concurrency 2 all 3 requests failed"),
            "{en}"
        );
    }
}
