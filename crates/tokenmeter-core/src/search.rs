//! SLO search: the highest concurrency that meets the SLO, without a hand-tuned
//! ladder. Probes step up by doubling from the start until one breaks the SLO (or
//! the ceiling is reached), then bisect between the highest level that held and
//! the lowest that broke until they are one apart. Each probe is a closed-loop
//! level of a bounded number of requests ([`requests_per_probe`](crate::plan::requests_per_probe)); a probe the
//! browser or the engine distorted counts as broken (its figures are not the
//! server's), and says so.
//!
//! A probe *meets* the SLO as the verdict judges a level (each set p95 within its
//! limit, the error rate within its limit). How sure that is, given how few
//! requests a probe has, is [`confidence`]: the chance that the level's requests
//! would meet every limit at least 95% of the time, from how many of them did.

use serde::{Deserialize, Serialize};

/// A probe's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// The concurrency probed.
    pub concurrency: u32,
    /// Whether it met the SLO.
    pub met: bool,
}

/// The search's state: what was probed, and what comes next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SloSearch {
    start: u32,
    max: u32,
    probes: Vec<Probe>,
}

impl SloSearch {
    /// A search from `start` up to `max` streams (`1 ≤ start ≤ max`).
    pub(crate) fn new(start: u32, max: u32) -> SloSearch {
        let start = start.max(1);
        SloSearch {
            start,
            max: max.max(start),
            probes: Vec::new(),
        }
    }

    /// The lowest concurrency that broke the SLO.
    fn lowest_broken(&self) -> Option<u32> {
        self.probes
            .iter()
            .filter(|p| !p.met)
            .map(|p| p.concurrency)
            .min()
    }

    /// The highest concurrency that met the SLO below every one that broke it (a
    /// noisy pass above a failure does not count).
    pub(crate) fn highest_met(&self) -> Option<u32> {
        let ceiling = self.lowest_broken().unwrap_or(u32::MAX);
        self.probes
            .iter()
            .filter(|p| p.met && p.concurrency < ceiling)
            .map(|p| p.concurrency)
            .max()
    }

    /// The next concurrency to probe, `None` when the search is over.
    pub(crate) fn next(&self) -> Option<u32> {
        match (self.highest_met(), self.lowest_broken()) {
            (None, None) => Some(self.start),
            (None, Some(_)) => None,
            (Some(met), None) if met >= self.max => None,
            (Some(met), None) => Some(met.saturating_mul(2).min(self.max)),
            (Some(met), Some(broken)) if broken - met <= 1 => None,
            (Some(met), Some(broken)) => Some(met + (broken - met) / 2),
        }
    }

    pub(crate) fn observe(&mut self, concurrency: u32, met: bool) {
        self.probes.push(Probe { concurrency, met });
    }

    /// What the search found.
    pub(crate) fn outcome(&self) -> SearchOutcome {
        SearchOutcome {
            highest_met: self.highest_met(),
            lowest_broken: self.lowest_broken(),
            max: self.max,
            probes: self.probes.clone(),
        }
    }
}

/// The result of a search, kept in the run document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchOutcome {
    /// The highest concurrency within the SLO (`None`: not even the first probe).
    pub highest_met: Option<u32>,
    /// The lowest concurrency that broke it (`None`: none up to `max`).
    pub lowest_broken: Option<u32>,
    /// The search's ceiling.
    pub max: u32,
    /// Every probe, in the order run.
    pub probes: Vec<Probe>,
}

/// The confidence that at least 95% of a level's requests meet every limit, given
/// that `n_good` of its `n` did: one minus the chance of seeing that many or more
/// if exactly 95% would (a one-sided binomial test). `None` for no requests.
pub(crate) fn confidence(n: u64, n_good: u64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let n_good = n_good.min(n);
    // P(X ≥ n_good) for X ~ Binomial(n, 0.95), summed in log space (n may be
    // thousands).
    let (ln_p, ln_q) = (0.95f64.ln(), 0.05f64.ln());
    let mut ln_choose = 0.0; // ln C(n, k), from k = n downwards
    let mut tail = 0.0;
    for k in (n_good..=n).rev() {
        if k < n {
            // C(n, k) = C(n, k + 1) · (k + 1) / (n − k)
            ln_choose += ((k + 1) as f64).ln() - ((n - k) as f64).ln();
        }
        tail += (ln_choose + k as f64 * ln_p + (n - k) as f64 * ln_q).exp();
    }
    Some((1.0 - tail).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a server that meets the SLO up to `capacity`.
    fn search(start: u32, max: u32, capacity: u32) -> SloSearch {
        let mut s = SloSearch::new(start, max);
        let mut n = 0;
        while let Some(c) = s.next() {
            s.observe(c, c <= capacity);
            n += 1;
            assert!(n <= crate::plan::max_probes(start, max), "bounded");
        }
        s
    }

    #[test]
    fn finds_the_capacity_exactly_by_doubling_then_bisecting() {
        for capacity in 1..=70 {
            let s = search(1, 64, capacity);
            let outcome = s.outcome();
            if capacity >= 64 {
                assert_eq!(outcome.highest_met, Some(64));
                assert_eq!(outcome.lowest_broken, None);
            } else {
                assert_eq!(outcome.highest_met, Some(capacity), "capacity {capacity}");
                assert_eq!(outcome.lowest_broken, Some(capacity + 1));
            }
        }
        let probes: Vec<u32> = search(1, 64, 11)
            .outcome()
            .probes
            .iter()
            .map(|p| p.concurrency)
            .collect();
        assert_eq!(probes, vec![1, 2, 4, 8, 16, 12, 10, 11]);
    }

    #[test]
    fn a_first_probe_that_breaks_ends_the_search() {
        let s = search(2, 64, 1);
        assert_eq!(s.outcome().highest_met, None);
        assert_eq!(s.outcome().lowest_broken, Some(2));
        assert_eq!(s.outcome().probes.len(), 1);
    }

    #[test]
    fn the_ceiling_is_probed_even_off_the_doublings() {
        let probes: Vec<u32> = search(1, 24, 100)
            .outcome()
            .probes
            .iter()
            .map(|p| p.concurrency)
            .collect();
        assert_eq!(probes, vec![1, 2, 4, 8, 16, 24]);
    }

    #[test]
    fn a_noisy_pass_above_a_failure_does_not_count() {
        let mut s = SloSearch::new(1, 64);
        for (c, met) in [
            (1, true),
            (2, true),
            (4, true),
            (8, false),
            (6, true),
            (7, false),
        ] {
            assert_eq!(s.next(), Some(c));
            s.observe(c, met);
        }
        assert_eq!(s.next(), None);
        s.observe(16, true);
        assert_eq!(s.highest_met(), Some(6));
    }

    #[test]
    fn confidence_is_a_binomial_tail() {
        assert_eq!(confidence(0, 0), None);
        // All 40 within: 1 − 0.95^40.
        assert!((confidence(40, 40).unwrap() - (1.0 - 0.95f64.powi(40))).abs() < 1e-12);
        // 19 of 20: 1 − (0.95^20 + 20 · 0.95^19 · 0.05).
        let tail = 0.95f64.powi(20) + 20.0 * 0.95f64.powi(19) * 0.05;
        assert!((confidence(20, 19).unwrap() - (1.0 - tail)).abs() < 1e-12);
        // Every request outside the limit: no confidence at all.
        assert!(confidence(20, 0).unwrap() < 1e-12);
        // Large n stays finite and sensible.
        let big = confidence(5_000, 4_900).unwrap();
        assert!(big > 0.999 && big <= 1.0);
        let worse = confidence(5_000, 4_700).unwrap();
        assert!(worse < 0.01);
    }

    use crate::{
        chart::tests_support,
        error::{ErrorKind, Lang, RequestError},
        plan::requests_per_probe,
        plan::{Plan, Slo},
        record::RequestRecord,
        report::{Environment, RunDocument, RunStatus},
    };

    /// A request at `concurrency` with its first token after `ttft_ms`, or one
    /// that failed with a 500 when `fail`.
    fn record(id: u64, concurrency: u32, ttft_ms: u64, fail: bool) -> RequestRecord {
        let mut r = tests_support::record(id, concurrency, ttft_ms, 20);
        if fail {
            r.error = Some(RequestError {
                kind: ErrorKind::ServerError,
                detail: "HTTP 500".into(),
                body_sample: None,
                retry_after_s: None,
            });
        }
        r
    }

    fn document(slo: Slo, records: Vec<RequestRecord>) -> RunDocument {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.slo = slo;
        RunDocument::build(
            "search".into(),
            "2026-12-03T10:00:00Z".into(),
            RunStatus::Done,
            plan,
            Environment::default(),
            records,
        )
    }

    #[test]
    fn probes_are_judged_as_the_verdict_judges_levels() {
        let slo = Slo {
            ttft_p95_ms: Some(200.0),
            error_rate_pct: Some(5.0),
            ..Slo::default()
        };
        // 2 holds (TTFT 100 ms), 3 is slow, 4 is fast but fails 1 request in 10.
        let mut records: Vec<RequestRecord> = (0..20).map(|i| record(i, 2, 100, false)).collect();
        records.extend((20..40).map(|i| record(i, 3, 400, false)));
        records.extend((40..50).map(|i| record(i, 4, 100, i == 45)));
        let doc = document(slo, records);
        assert!(doc.verdict.meets_slo_at(2));
        assert!(!doc.verdict.meets_slo_at(3));
        assert!(!doc.verdict.meets_slo_at(4), "10% errors > 5%");
        assert!(
            !doc.verdict.meets_slo_at(8),
            "a level never measured did not meet it"
        );
    }

    #[test]
    fn the_outcome_leads_the_verdict_with_its_confidence() {
        let slo = Slo {
            ttft_p95_ms: Some(200.0),
            ..Slo::default()
        };
        let mut records: Vec<RequestRecord> = (0..40).map(|i| record(i, 2, 100, false)).collect();
        records.extend((40..60).map(|i| record(i, 3, 400, false)));
        let mut doc = document(slo, records);
        let mut search = SloSearch::new(1, 8);
        search.observe(1, true);
        search.observe(2, true);
        search.observe(4, false);
        search.observe(3, false);
        doc.conclude_search(search.outcome());
        assert_eq!(doc.search.as_ref().unwrap().highest_met, Some(2));
        let en = doc.verdict.text(Lang::En);
        assert!(
            en.starts_with("SLO search: the highest concurrency within the SLO is 2 (3 broke it: p95 TTFT 400 ms > 200 ms). 40 of 40 requests at 2 met every limit: 87% confidence"),
            "{en}"
        );
        assert!(doc
            .verdict
            .text(Lang::Zh)
            .starts_with("SLO 搜索：满足 SLO 的最高并发是 2（并发 3 已不满足"));
        assert_eq!(doc.verdict.explanation_en, en);
        // The document keeps it through JSON.
        let back = RunDocument::from_json(&doc.to_json()).unwrap();
        assert_eq!(back.search, doc.search);
    }

    #[test]
    fn probes_hold_their_concurrency() {
        assert_eq!(requests_per_probe(4, 20), 20);
        assert_eq!(requests_per_probe(32, 20), 64);
        assert_eq!(crate::plan::max_probes(1, 64), 7 + 6);
    }
}
