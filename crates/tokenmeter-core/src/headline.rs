//! The run in a few figures, for the cards above the table: the level a user would
//! run at (the safe concurrency, or else the last level), what it measured, and
//! where the knee and the safe level are.

use crate::{report::RunDocument, summary::Summary};

/// Which level the headline describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadlineLevel {
    /// The safe concurrency the verdict found.
    Safe,
    /// No safe level: the last level with requests.
    Last,
}

/// The figures of the headline cards.
#[derive(Clone, Debug, PartialEq)]
pub struct Headline {
    /// Which level the cards show, and why.
    pub which: HeadlineLevel,
    /// The level's concurrency (0 for open loop).
    pub concurrency: u32,
    /// Median TTFT there, ms.
    pub ttft_p50_ms: Option<f64>,
    /// p95 TTFT there, ms.
    pub ttft_p95_ms: Option<f64>,
    /// Median TPOT there, ms.
    pub tpot_p50_ms: Option<f64>,
    /// Aggregate output tokens/s there.
    pub output_tps: f64,
    /// Failed requests over finished ones (cancelled ones left out), 0–1.
    pub error_rate: f64,
    /// Where throughput stopped growing.
    pub knee: Option<u32>,
    /// The concurrency the verdict calls safe.
    pub safe_concurrency: Option<u32>,
}

impl Headline {
    /// The headline of `document`, `None` when no level sent a request.
    pub fn of(document: &RunDocument) -> Option<Headline> {
        let verdict = &document.verdict;
        let with_requests = |s: &&Summary| s.n_ok + s.n_fail > 0;
        let safe = verdict.safe_concurrency.and_then(|c| {
            document
                .levels
                .iter()
                .filter(with_requests)
                .find(|s| s.concurrency == Some(c))
        });
        let (which, level) = match safe {
            Some(level) => (HeadlineLevel::Safe, level),
            None => (
                HeadlineLevel::Last,
                document.levels.iter().rev().find(with_requests)?,
            ),
        };
        let finished = level.n_ok + level.n_fail;
        Some(Headline {
            which,
            concurrency: level.concurrency.unwrap_or_default(),
            ttft_p50_ms: level.ttft_ms.map(|d| d.p50),
            ttft_p95_ms: level.ttft_ms.map(|d| d.p95),
            tpot_p50_ms: level.tpot_ms.map(|d| d.p50),
            output_tps: level.output_tps,
            error_rate: level.n_fail as f64 / finished as f64,
            knee: verdict.knee,
            safe_concurrency: verdict.safe_concurrency,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{plan::Plan, report::RunStatus, stats::Distribution};

    fn empty() -> RunDocument {
        RunDocument::build(
            "r".into(),
            "t".into(),
            RunStatus::Done,
            Plan::default_for_simulator("http://127.0.0.1:8000/v1"),
            Default::default(),
            Vec::new(),
        )
    }

    fn level(concurrency: u32, n_ok: u64, n_fail: u64, ttft_p50: f64) -> Summary {
        let d = |v: f64| Distribution {
            n: n_ok,
            mean: v,
            std: 0.0,
            min: v,
            max: v,
            p50: v,
            p90: v,
            p95: v * 2.0,
            p99: v * 3.0,
        };
        Summary {
            concurrency: Some(concurrency),
            n_requests: n_ok + n_fail,
            n_ok,
            n_fail,
            ttft_ms: (n_ok > 0).then(|| d(ttft_p50)),
            tpot_ms: (n_ok > 0).then(|| d(20.0)),
            output_tps: 100.0 * f64::from(concurrency),
            // A level of nothing, for every other figure.
            ..empty().total
        }
    }

    fn document(levels: Vec<Summary>, knee: Option<u32>, safe: Option<u32>) -> RunDocument {
        let mut document = empty();
        document.levels = levels;
        document.verdict.knee = knee;
        document.verdict.safe_concurrency = safe;
        document
    }

    #[test]
    fn the_safe_level_when_there_is_one() {
        let doc = document(
            vec![
                level(1, 8, 0, 100.0),
                level(2, 7, 1, 120.0),
                level(4, 4, 4, 300.0),
            ],
            Some(4),
            Some(2),
        );
        let headline = Headline::of(&doc).unwrap();
        assert_eq!(headline.which, HeadlineLevel::Safe);
        assert_eq!(headline.concurrency, 2);
        assert_eq!(headline.ttft_p50_ms, Some(120.0));
        assert_eq!(headline.ttft_p95_ms, Some(240.0));
        assert_eq!(headline.tpot_p50_ms, Some(20.0));
        assert_eq!(headline.output_tps, 200.0);
        assert_eq!(headline.error_rate, 1.0 / 8.0);
        assert_eq!(
            (headline.knee, headline.safe_concurrency),
            (Some(4), Some(2))
        );
    }

    #[test]
    fn else_the_last_level_with_requests() {
        let doc = document(
            vec![
                level(1, 8, 0, 100.0),
                level(2, 0, 8, 0.0),
                level(4, 0, 0, 0.0),
            ],
            None,
            None,
        );
        let headline = Headline::of(&doc).unwrap();
        assert_eq!(headline.which, HeadlineLevel::Last);
        assert_eq!(headline.concurrency, 2);
        assert_eq!(headline.ttft_p50_ms, None);
        assert_eq!(headline.error_rate, 1.0);
        assert!(Headline::of(&document(Vec::new(), None, None)).is_none());
    }
}
