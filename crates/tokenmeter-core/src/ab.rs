//! An A/B run read side by side: at each level, every target's p95 TTFT, TPOT and
//! output tokens/s, which target is better and by how much, and whether that is
//! more than the noise (the spread between repeated passes, when the ladder was
//! repeated, and never less than [`TIE_PCT`]).

use crate::{error::Lang, plan::Plan, report::RunDocument, summary::Summary};

/// Differences in output tokens/s smaller than this (percent) are a tie.
pub const TIE_PCT: f64 = 5.0;

/// One target's figures at one level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TargetFigures {
    /// Successful requests.
    pub n_ok: u64,
    /// p95 time to first token, ms.
    pub ttft_p95_ms: Option<f64>,
    /// Median time per output token, ms.
    pub tpot_p50_ms: Option<f64>,
    /// Aggregate output tokens/s.
    pub output_tps: f64,
}

/// One level of an A/B run.
#[derive(Clone, Debug, PartialEq)]
pub struct AbRow {
    /// The level.
    pub concurrency: u32,
    /// Per target (A first); `None` where a target has no such level.
    pub targets: Vec<Option<TargetFigures>>,
    /// The target with the most output tokens/s, when it leads by more than
    /// `threshold_pct`; `None` for a tie.
    pub better: Option<usize>,
    /// How far the best leads the next, percent of the next's output tokens/s.
    pub lead_pct: f64,
    /// The larger of [`TIE_PCT`] and the noise between passes at this level.
    pub threshold_pct: f64,
}

fn figures(s: &Summary) -> TargetFigures {
    TargetFigures {
        n_ok: s.n_ok,
        ttft_p95_ms: s.ttft_ms.map(|d| d.p95),
        tpot_p50_ms: s.tpot_ms.map(|d| d.p50),
        output_tps: s.output_tps,
    }
}

/// The documents of an A/B run, A first.
fn documents(document: &RunDocument) -> Vec<&RunDocument> {
    std::iter::once(document).chain(&document.ab).collect()
}

/// The run side by side, one row per level any target measured (empty for a run
/// with one target).
pub fn rows(document: &RunDocument) -> Vec<AbRow> {
    if document.ab.is_empty() {
        return Vec::new();
    }
    let documents = documents(document);
    let levels = crate::stats::sorted_unique(
        documents
            .iter()
            .flat_map(|d| d.levels.iter().filter_map(|l| l.concurrency)),
    );
    levels
        .into_iter()
        .map(|concurrency| {
            let summaries: Vec<Option<&Summary>> = documents
                .iter()
                .map(|d| {
                    d.levels
                        .iter()
                        .find(|l| l.concurrency == Some(concurrency) && l.distorted.is_none())
                })
                .collect();
            let noise = summaries
                .iter()
                .flatten()
                .filter_map(|s| s.spread_pct(|p| Some(p.output_tps)))
                .fold(0.0, f64::max);
            let threshold_pct = TIE_PCT.max(noise);
            let ranked: Vec<(usize, f64)> = summaries
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.filter(|s| s.n_ok > 0).map(|s| (i, s.output_tps)))
                .collect();
            let keys: Vec<f64> = ranked.iter().map(|r| -r.1).collect();
            let ranked = crate::stats::reorder(ranked, &crate::stats::order_by(&keys));
            let lead_pct = match ranked.as_slice() {
                [(_, best), (_, next), ..] if *next > 0.0 => (best / next - 1.0) * 100.0,
                _ => 0.0,
            };
            let better = (ranked.len() >= 2 && lead_pct > threshold_pct).then(|| ranked[0].0);
            AbRow {
                concurrency,
                targets: summaries.iter().map(|s| s.map(figures)).collect(),
                better,
                lead_pct,
                threshold_pct,
            }
        })
        .collect()
}

/// A target's name with its model: `A · qwen3-8b`.
pub fn target_name(document: &RunDocument, index: usize) -> String {
    let model = documents(document)
        .get(index)
        .map_or(String::new(), |d| d.plan.model.clone());
    format!("{} · {model}", Plan::target_label(index))
}

/// The run side by side in words: which target was better where, by how much.
pub fn said(document: &RunDocument, lang: Lang) -> Vec<String> {
    let rows = rows(document);
    let zh = lang == Lang::Zh;
    let mut out = Vec::new();
    let winners: Vec<Option<usize>> = rows.iter().map(|r| r.better).collect();
    if let Some(Some(first)) = winners.first() {
        if winners.iter().all(|w| *w == Some(*first)) {
            let (lo, hi) = rows
                .iter()
                .map(|r| r.lead_pct)
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                    (lo.min(x), hi.max(x))
                });
            let name = target_name(document, *first);
            out.push(if zh {
                format!("{name} 在每一档都更快：输出 token/秒多 {lo:.0}%–{hi:.0}%（超出噪声）。")
            } else {
                format!("{name} is faster at every level: {lo:.0}–{hi:.0}% more output tokens/s (beyond the noise).")
            });
            return out;
        }
    }
    for row in &rows {
        let c = row.concurrency;
        let answered: Vec<usize> = (0..row.targets.len())
            .filter(|&i| row.targets[i].is_some_and(|t| t.n_ok > 0))
            .collect();
        // Fewer than two targets answered: no comparison, and never "a tie".
        match (answered.as_slice(), zh) {
            ([], false) => {
                out.push(format!(
                    "at concurrency {c}, no target had a successful request"
                ));
                continue;
            }
            ([], true) => {
                out.push(format!("并发 {c}：没有一个目标有成功的请求"));
                continue;
            }
            ([only], false) => {
                out.push(format!(
                    "at concurrency {c}, only {} had successful requests",
                    target_name(document, *only)
                ));
                continue;
            }
            ([only], true) => {
                out.push(format!(
                    "并发 {c}：只有 {} 有成功的请求",
                    target_name(document, *only)
                ));
                continue;
            }
            _ => {}
        }
        out.push(match (row.better, zh) {
            (Some(i), false) => format!(
                "at concurrency {c}, {} leads by {:.0}% output tokens/s",
                target_name(document, i),
                row.lead_pct
            ),
            (Some(i), true) => format!(
                "并发 {c}：{} 的输出 token/秒高 {:.0}%",
                target_name(document, i),
                row.lead_pct
            ),
            (None, false) => format!(
                "at concurrency {c}, a tie: {:.0}% apart, within {:.0}%",
                row.lead_pct, row.threshold_pct
            ),
            (None, true) => format!(
                "并发 {c}：不分胜负（相差 {:.0}%，在 {:.0}% 以内）",
                row.lead_pct, row.threshold_pct
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        chart::tests_support,
        plan::TargetSpec,
        record::RequestRecord,
        report::{Environment, RunStatus},
    };

    /// `record` moved to start at `sent_us` (every time shifted alike).
    fn starting_at(mut r: RequestRecord, sent_us: u64) -> RequestRecord {
        let sent = r.sent_us;
        let moved = |t: u64| t - sent + sent_us;
        r.wanted_us = moved(r.wanted_us);
        r.headers_us = r.headers_us.map(moved);
        r.first_token_us = r.first_token_us.map(moved);
        r.first_answer_us = r.first_answer_us.map(moved);
        r.last_token_us = r.last_token_us.map(moved);
        r.end_us = moved(r.end_us);
        r.token_times_us.iter_mut().for_each(|t| *t = moved(*t));
        r.sent_us = sent_us;
        r
    }

    /// Levels 1 and 2 on two targets, each level of each target six requests one
    /// after another per lane: B decodes every token in `b_tpot_ms`, A in 20 ms.
    fn ab_run(b_tpot_ms: u64) -> RunDocument {
        ab_run_with(
            b_tpot_ms,
            "http://127.0.0.1:8001/v1",
            Environment::default(),
        )
    }

    /// [`ab_run`] with B at `b_base_url`, measured in `environment`.
    fn ab_run_with(b_tpot_ms: u64, b_base_url: &str, environment: Environment) -> RunDocument {
        let mut records: Vec<RequestRecord> = Vec::new();
        let mut id = 0;
        let mut at = 0;
        for concurrency in [1u32, 2] {
            for (target, tpot) in [(0u32, 20u64), (1, b_tpot_ms)] {
                for wave in 0..6 / concurrency as u64 {
                    for _ in 0..concurrency {
                        id += 1;
                        let r = tests_support::record(id, concurrency, 100, tpot);
                        let mut r = starting_at(r, at + wave * (100 + 10 * tpot) * 1_000);
                        r.target = target;
                        records.push(r);
                    }
                }
                at += 10_000_000;
            }
        }
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.targets = vec![TargetSpec {
            base_url: b_base_url.into(),
            model: "slow-model".into(),
            extra_body: Default::default(),
        }];
        RunDocument::build_ab(
            "ab".into(),
            "2026-12-03T10:00:00Z".into(),
            RunStatus::Done,
            plan,
            environment,
            records,
        )
    }

    #[test]
    fn the_server_s_metrics_go_to_the_targets_on_its_origin_only() {
        use crate::server_metrics::{ServerMetrics, ServerSample};
        let environment = Environment {
            server_metrics: Some(ServerMetrics {
                url: "http://127.0.0.1:8000/metrics".into(),
                server: None,
                every_ms: 500,
                unreadable: None,
                skipped_at_us: Vec::new(),
                samples: (0..80)
                    .map(|i| ServerSample {
                        at_us: i * 500_000,
                        running: Some(1.0),
                        ..ServerSample::default()
                    })
                    .collect(),
            }),
            ..Environment::default()
        };
        let elsewhere = ab_run_with(40, "http://127.0.0.1:8001/v1", environment.clone());
        assert!(elsewhere.levels.iter().all(|l| l.server.is_some()));
        assert_eq!(elsewhere.ab[0].environment.server_metrics, None);
        assert!(elsewhere.ab[0].levels.iter().all(|l| l.server.is_none()));
        // Another model behind the same gateway: the same server's metrics.
        let same = ab_run_with(40, "http://127.0.0.1:8000/other/v1", environment);
        assert!(same.ab[0].environment.server_metrics.is_some());
        assert!(same.ab[0].levels.iter().all(|l| l.server.is_some()));
    }

    #[test]
    fn records_taken_out_go_back_to_their_targets_in_their_order() {
        let whole = ab_run(40);
        let mut sent = whole.clone();
        let mut records = sent.take_records();
        assert_eq!(records.len(), 24);
        assert!(sent.records.is_empty() && sent.ab[0].records.is_empty());
        // The page holds them in the order they finished, targets interleaved.
        records.sort_by_key(|r| (r.sent_us, r.id));
        sent.put_records(records);
        assert_eq!(sent, whole);
    }

    #[test]
    fn each_target_is_a_document_of_its_own() {
        let doc = ab_run(40);
        assert_eq!(doc.records.len(), 12);
        assert!(doc.records.iter().all(|r| r.target == 0));
        assert_eq!(doc.ab.len(), 1);
        let b = &doc.ab[0];
        assert_eq!(b.run_id, "ab-B");
        assert_eq!(b.plan.model, "slow-model");
        assert_eq!(b.plan.base_url, "http://127.0.0.1:8001/v1");
        assert!(b.plan.targets.is_empty());
        assert!(b.records.iter().all(|r| r.target == 1));
        assert_eq!(doc.plan.targets.len(), 1, "A keeps the whole plan");
        let back = RunDocument::from_json(&doc.to_json()).unwrap();
        assert_eq!(back.ab.len(), 1);
        assert_eq!(back.ab[0].records.len(), 12);
    }

    #[test]
    fn the_faster_target_is_named_at_every_level_and_a_near_tie_is_a_tie() {
        let doc = ab_run(40);
        let side_by_side = rows(&doc);
        assert_eq!(side_by_side.len(), 2);
        for row in &side_by_side {
            assert_eq!(row.better, Some(0), "{row:?}");
            assert!(row.lead_pct > 50.0);
            assert_eq!(row.threshold_pct, TIE_PCT);
        }
        assert_eq!(
            said(&doc, Lang::En)[0].split(':').next().unwrap(),
            "A · tokenmeter-sim is faster at every level"
        );
        assert!(said(&doc, Lang::Zh)[0].starts_with("A · tokenmeter-sim 在每一档都更快"));
        let close = ab_run(21);
        assert!(rows(&close).iter().all(|r| r.better.is_none()));
        assert!(said(&close, Lang::En)[0].starts_with("at concurrency 1, a tie"));
        // The reports carry it too.
        let html = doc.html(Lang::En);
        assert!(
            html.contains("data-testid=\"ab-table\"")
                && html.contains("A · tokenmeter-sim is faster")
        );
        assert!(html.contains("data-testid=\"ab-chart\""));
        let markdown = crate::render::markdown(&doc, Lang::En);
        assert!(markdown.contains("## A/B") && markdown.contains("Target B · slow-model"));
        // One target: nothing side by side.
        let mut single = close.clone();
        single.ab.clear();
        assert!(rows(&single).is_empty());
    }

    #[test]
    fn a_level_where_a_target_had_no_success_is_no_tie() {
        let mut doc = ab_run(21);
        let drop_successes = |d: &mut RunDocument, c: u32| {
            for l in d.levels.iter_mut().filter(|l| l.concurrency == Some(c)) {
                l.n_fail += l.n_ok;
                l.n_ok = 0;
            }
        };
        drop_successes(&mut doc.ab[0], 2);
        let en = said(&doc, Lang::En);
        assert_eq!(
            en[1],
            "at concurrency 2, only A · tokenmeter-sim had successful requests"
        );
        assert_eq!(
            said(&doc, Lang::Zh)[1],
            "并发 2：只有 A · tokenmeter-sim 有成功的请求"
        );
        drop_successes(&mut doc, 2);
        assert_eq!(
            said(&doc, Lang::En)[1],
            "at concurrency 2, no target had a successful request"
        );
        assert_eq!(said(&doc, Lang::Zh)[1], "并发 2：没有一个目标有成功的请求");
        assert!(said(&doc, Lang::En)[0].starts_with("at concurrency 1, a tie"));
    }
}
