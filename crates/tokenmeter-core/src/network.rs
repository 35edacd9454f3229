//! The network's part of what a run measured: the round trip between the user's
//! browser and the server, estimated from small requests sent before the run and
//! after it (`GET {base}/models` without the key and without CORS, so any server
//! answers and no key goes anywhere; no cache). Such a request on an open
//! connection costs one round trip and the server's microseconds for a tiny
//! answer; the first of a batch may open the connection (TCP, TLS: more round
//! trips) and is left out when there are others. A TTFT holds one round trip: the
//! request going, the first token coming back.

use serde::{Deserialize, Serialize};

use crate::{error::Said, said};

/// Probes sent before the run, and after it.
pub const PROBES_BEFORE: usize = 5;
/// Probes sent after the run.
pub const PROBES_AFTER: usize = 3;
/// A round trip this long is worth a note: loopback, a LAN and a nearby region
/// stay silent (and so do the few ms a busy browser adds to a probe it cannot
/// time by Resource Timing).
pub(crate) const RTT_NOTE_MS: f64 = 20.0;
/// The round trip moved during the run when before and after differ by this much
/// and by this share of the smaller.
pub(crate) const RTT_MOVED_MS: f64 = 10.0;
pub(crate) const RTT_MOVED_SHARE: f64 = 0.5;

/// How a probe was timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimedBy {
    /// Resource Timing, from the request leaving the browser to the response
    /// headers: the network and the server only (the server sends
    /// `Timing-Allow-Origin`).
    ResourceTiming,
    /// From the call to `fetch` to the response headers: the browser's own time
    /// (a few ms on a busy machine) included.
    Fetch,
}

/// The round trip, as the probes measured it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Network {
    /// The estimate: the fastest probe before the run, ms.
    pub rtt_ms: f64,
    /// How far the probes before the run spread above the fastest (their median
    /// less it), ms: the network's jitter, and the server's.
    pub rtt_spread_ms: f64,
    /// Every probe that answered, ms, in order: before the run, and after it
    /// (none after a cancelled run).
    pub before_ms: Vec<f64>,
    /// Every probe after the run that answered, ms, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_ms: Vec<f64>,
    /// What each probe was.
    pub probe: String,
    /// Which clock timed the probes.
    pub timed_by: TimedBy,
}

/// The probes that count: all but the first, which may have opened the
/// connection, when there are others.
fn counted(probes: &[f64]) -> &[f64] {
    if probes.len() > 1 {
        &probes[1..]
    } else {
        probes
    }
}

fn fastest(probes: &[f64]) -> Option<f64> {
    counted(probes)
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .min_by(f64::total_cmp)
}

impl Network {
    /// The estimate from the probes' times, ms; `None` when none answered before
    /// the run.
    pub fn estimate(
        before_ms: Vec<f64>,
        after_ms: Vec<f64>,
        probe: &str,
        timed_by: TimedBy,
    ) -> Option<Network> {
        let rtt_ms = fastest(&before_ms)?;
        let mut sorted: Vec<f64> = counted(&before_ms).to_vec();
        crate::stats::sort_floats(&mut sorted);
        let median = crate::stats::percentile_sorted(&sorted, 50.0);
        Some(Network {
            rtt_ms,
            rtt_spread_ms: (median - rtt_ms).max(0.0),
            before_ms,
            after_ms,
            probe: probe.to_owned(),
            timed_by,
        })
    }

    /// The round trip after the run, when probes answered then.
    pub fn after_rtt_ms(&self) -> Option<f64> {
        fastest(&self.after_ms)
    }

    /// The round trip after the run when it differs from before enough to say the
    /// network moved during the run.
    pub fn moved_to_ms(&self) -> Option<f64> {
        let after = self.after_rtt_ms()?;
        let gap = (after - self.rtt_ms).abs();
        (gap >= RTT_MOVED_MS && gap >= RTT_MOVED_SHARE * after.min(self.rtt_ms)).then_some(after)
    }

    /// The estimate in a line: the round trip, how it was measured, its spread,
    /// and after the run.
    pub fn said(&self) -> Said {
        let Network {
            rtt_ms,
            rtt_spread_ms,
            ..
        } = self;
        let n = counted(&self.before_ms).len();
        let (after_en, after_zh) = match self.after_rtt_ms() {
            Some(after) => (
                format!("; {after:.1} ms after it"),
                format!("；测试后 {after:.1} 毫秒"),
            ),
            None => (String::new(), String::new()),
        };
        let (how_en, how_zh) = match self.timed_by {
            TimedBy::ResourceTiming => ("timed by Resource Timing", "由 Resource Timing 计时"),
            TimedBy::Fetch => (
                "timed from the fetch call, the browser's own time included",
                "从调用 fetch 起计时，含浏览器自身的时间",
            ),
        };
        said!(
            "network round trip to the server: {rtt_ms:.1} ms (the fastest of {n} requests to /models before the run, {how_en}; the median {rtt_spread_ms:.1} ms above it{after_en})",
            "到服务端的网络往返：{rtt_ms:.1} 毫秒（测试前向 /models 发出的 {n} 个请求中最快的一个，{how_zh}；中位数比它高 {rtt_spread_ms:.1} 毫秒{after_zh}）"
        )
    }

    /// Whether the round trip is worth saying: long enough, or it moved.
    pub fn is_worth_a_note(&self) -> bool {
        self.rtt_ms >= RTT_NOTE_MS || self.moved_to_ms().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fastest_probe_after_the_first_is_the_round_trip() {
        // The first opened the connection (three round trips); the rest one each.
        let n = Network::estimate(
            vec![182.0, 61.0, 60.4, 63.0, 75.0],
            vec![],
            "GET /models",
            TimedBy::Fetch,
        )
        .unwrap();
        assert_eq!(n.rtt_ms, 60.4);
        assert_eq!(n.rtt_spread_ms, 62.0 - 60.4);
        assert!(n.is_worth_a_note());
        assert_eq!(n.after_rtt_ms(), None);
        // One probe: it counts, whatever it paid.
        assert_eq!(
            Network::estimate(vec![3.0], vec![], "p", TimedBy::Fetch)
                .unwrap()
                .rtt_ms,
            3.0
        );
        assert_eq!(
            Network::estimate(vec![], vec![1.0], "p", TimedBy::Fetch),
            None
        );
    }

    #[test]
    fn loopback_is_not_worth_a_note_and_a_move_is_said_only_when_it_is_one() {
        let quiet = Network::estimate(
            vec![2.0, 0.4, 0.3, 0.5],
            vec![0.9, 0.5, 0.6],
            "p",
            TimedBy::Fetch,
        )
        .unwrap();
        assert!(!quiet.is_worth_a_note(), "0.3 ms, then 0.5 ms: loopback");
        assert_eq!(quiet.moved_to_ms(), None);
        let moved = Network::estimate(
            vec![30.0, 20.0, 21.0],
            vec![90.0, 80.0, 85.0],
            "p",
            TimedBy::Fetch,
        )
        .unwrap();
        assert_eq!(moved.moved_to_ms(), Some(80.0));
        // 60 → 68 ms: jitter, not a move.
        let steady = Network::estimate(
            vec![70.0, 60.0, 61.0],
            vec![70.0, 68.0],
            "p",
            TimedBy::Fetch,
        )
        .unwrap();
        assert_eq!(steady.moved_to_ms(), None);
        // 1 → 9 ms: a large share, a small gap.
        let small = Network::estimate(vec![1.0, 1.0], vec![9.0, 9.0], "p", TimedBy::Fetch).unwrap();
        assert_eq!(small.moved_to_ms(), None);
    }
}
