//! Two runs side by side, in words: what changed by enough to matter (p95 TTFT and
//! output tokens/s at the levels both ran, the knee and the safe concurrency), the
//! largest changes first, in English or Chinese.

use crate::{
    error::Lang,
    report::RunDocument,
    summary::{PassFigures, Summary},
};

/// A change smaller than this share is not worth a sentence (runs of the same
/// server differ by a few percent). Where either run repeated its ladder, a
/// change must also exceed the spread between that run's passes at the level.
pub const NOTABLE: f64 = 0.10;

/// How one figure moved at one level.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Change {
    concurrency: u32,
    then: f64,
    now: f64,
}

impl Change {
    fn share(&self) -> f64 {
        self.now / self.then - 1.0
    }
}

/// The notable changes of `figure` at the levels both runs have, largest first.
fn changes(
    now: &RunDocument,
    then: &RunDocument,
    figure: fn(&Summary) -> Option<f64>,
    pass_figure: fn(&PassFigures) -> Option<f64>,
) -> Vec<Change> {
    let changes: Vec<Change> = now
        .levels
        .iter()
        .filter_map(|level| {
            let concurrency = level.concurrency?;
            let before = then
                .levels
                .iter()
                .find(|l| l.concurrency == Some(concurrency))?;
            let (now, then) = (figure(level)?, figure(before)?);
            let noise = [level, before]
                .iter()
                .filter_map(|s| s.spread_pct(pass_figure))
                .fold(0.0, f64::max)
                / 100.0;
            let change = Change {
                concurrency,
                then,
                now,
            };
            (then > 0.0 && now.is_finite() && change.share().abs() >= NOTABLE.max(noise))
                .then_some(change)
        })
        .collect();
    let keys: Vec<f64> = changes.iter().map(|c| -c.share().abs()).collect();
    crate::stats::reorder(changes, &crate::stats::order_by(&keys))
}

fn moved(
    lang: Lang,
    what_en: &str,
    what_zh: &str,
    then: Option<u32>,
    now: Option<u32>,
) -> Option<String> {
    let level = |c: Option<u32>, lang: Lang| match (c, lang) {
        (Some(c), _) => c.to_string(),
        (None, Lang::En) => "none".into(),
        (None, Lang::Zh) => "无".into(),
    };
    Some(match (then == now, lang) {
        (true, _) if now.is_none() => return None,
        (true, Lang::En) => format!("the {what_en} stayed at {}", level(now, lang)),
        (true, Lang::Zh) => format!("{what_zh}仍是 {}", level(now, lang)),
        (false, Lang::En) => format!(
            "the {what_en} moved from {} to {}",
            level(then, lang),
            level(now, lang)
        ),
        (false, Lang::Zh) => format!(
            "{what_zh}从 {} 变为 {}",
            level(then, lang),
            level(now, lang)
        ),
    })
}

/// What changed from `then` (the baseline) to `now`, as sentences: the knee and
/// the safe concurrency, then the largest changes of p95 TTFT and of output
/// tokens/s (three each at most), or that nothing moved by 10% or more.
pub fn differences(now: &RunDocument, then: &RunDocument, lang: Lang) -> Vec<String> {
    let mut out: Vec<String> = [
        moved(lang, "knee", "拐点", then.verdict.knee, now.verdict.knee),
        moved(
            lang,
            "safe concurrency",
            "安全并发",
            then.verdict.safe_concurrency,
            now.verdict.safe_concurrency,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let ttft = changes(now, then, |s| s.ttft_ms.map(|d| d.p95), |p| p.ttft_p95_ms);
    let tps = changes(
        now,
        then,
        |s| (s.n_ok > 0).then_some(s.output_tps),
        |p| Some(p.output_tps),
    );
    for c in ttft.iter().take(3) {
        let pct = (c.share() * 100.0).abs().round();
        out.push(match (c.share() > 0.0, lang) {
            (true, Lang::En) => format!(
                "p95 TTFT at concurrency {} rose {pct:.0}% ({:.0} → {:.0} ms)",
                c.concurrency, c.then, c.now
            ),
            (false, Lang::En) => format!(
                "p95 TTFT at concurrency {} fell {pct:.0}% ({:.0} → {:.0} ms)",
                c.concurrency, c.then, c.now
            ),
            (true, Lang::Zh) => format!(
                "并发 {} 的 p95 TTFT 上升了 {pct:.0}%（{:.0} → {:.0} 毫秒）",
                c.concurrency, c.then, c.now
            ),
            (false, Lang::Zh) => format!(
                "并发 {} 的 p95 TTFT 下降了 {pct:.0}%（{:.0} → {:.0} 毫秒）",
                c.concurrency, c.then, c.now
            ),
        });
    }
    for c in tps.iter().take(3) {
        let pct = (c.share() * 100.0).abs().round();
        out.push(match (c.share() > 0.0, lang) {
            (true, Lang::En) => format!(
                "output tokens/s at concurrency {} rose {pct:.0}% ({:.0} → {:.0})",
                c.concurrency, c.then, c.now
            ),
            (false, Lang::En) => format!(
                "output tokens/s at concurrency {} fell {pct:.0}% ({:.0} → {:.0})",
                c.concurrency, c.then, c.now
            ),
            (true, Lang::Zh) => format!(
                "并发 {} 的输出 token/秒上升了 {pct:.0}%（{:.0} → {:.0}）",
                c.concurrency, c.then, c.now
            ),
            (false, Lang::Zh) => format!(
                "并发 {} 的输出 token/秒下降了 {pct:.0}%（{:.0} → {:.0}）",
                c.concurrency, c.then, c.now
            ),
        });
    }
    if ttft.is_empty() && tps.is_empty() {
        out.push(match lang {
            Lang::En => {
                "no level both runs measured changed p95 TTFT or output tokens/s by 10% or more"
                    .into()
            }
            Lang::Zh => "两次运行都测过的档位中，p95 TTFT 和输出 token/秒的变化都不到 10%".into(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        chart::tests_support::ladder_records,
        plan::Plan,
        report::{Environment, RunStatus},
    };

    fn run(ttft_scale: f64, knee: Option<u32>) -> RunDocument {
        let mut doc = RunDocument::build(
            "r".into(),
            "t".into(),
            RunStatus::Done,
            Plan::default_for_simulator("http://127.0.0.1:8000/v1"),
            Environment::default(),
            ladder_records(),
        );
        for level in &mut doc.levels {
            if let Some(d) = &mut level.ttft_ms {
                d.p95 *= ttft_scale;
            }
        }
        doc.verdict.knee = knee;
        doc.verdict.safe_concurrency = knee.map(|k| k / 2);
        doc
    }

    #[test]
    fn what_moved_is_said_largest_first() {
        let then = run(1.0, Some(4));
        let now = run(1.38, Some(2));
        let said = differences(&now, &then, Lang::En);
        assert_eq!(said[0], "the knee moved from 4 to 2");
        assert_eq!(said[1], "the safe concurrency moved from 2 to 1");
        assert!(said[2].starts_with("p95 TTFT at concurrency "), "{said:?}");
        assert!(said[2].contains("rose 38%"), "{said:?}");
        assert_eq!(said.len(), 5, "three levels answered in both: {said:?}");
        let zh = differences(&now, &then, Lang::Zh);
        assert_eq!(zh[0], "拐点从 4 变为 2");
        assert!(zh[2].contains("上升了 38%"));
    }

    #[test]
    fn small_changes_are_not_news() {
        let then = run(1.0, Some(4));
        let now = run(1.05, Some(4));
        assert_eq!(
            differences(&now, &then, Lang::En),
            [
                "the knee stayed at 4",
                "the safe concurrency stayed at 2",
                "no level both runs measured changed p95 TTFT or output tokens/s by 10% or more",
            ]
        );
        let none = run(1.0, None);
        assert_eq!(
            differences(&none, &none, Lang::En).len(),
            1,
            "no knee either time: nothing to say of it"
        );
    }
}
