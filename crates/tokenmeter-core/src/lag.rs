//! The engine's own lateness: how late its ticks woke ([`LagHistogram`]), the
//! stalls among them and the token events they held ([`StallLog`], [`StallCount`]),
//! and the thresholds at which the lateness is noted and at which a level is the
//! tool's as much as the server's.

use serde::{Deserialize, Serialize};

/// The engine's event loop running this much later than asked, at worst, while
/// requests were in flight, is worth a note: timestamps taken then moved as much.
pub const LAG_NOTE_MS: f64 = 20.0;

/// The engine's lateness at p95 of its ticks while requests were in flight above
/// which a level is the tool's as much as the server's: the verdict leaves it out.
pub const LAG_DISTORTS_P95_MS: f64 = 20.0;

/// Lateness of the engine's ticks, in whole ms up to a second (the last bucket
/// holds everything later): p95 to the ms in a fixed size, however long the level.
#[derive(Clone, Debug)]
pub struct LagHistogram {
    counts: Vec<u32>,
    /// The worst lateness, ms, and when into the level its tick woke.
    pub max_ms: f64,
    /// When into the level the worst tick woke, ms.
    pub max_at_ms: f64,
}

impl LagHistogram {
    /// Buckets of 1 ms: 0 to 999 ms, and one for 1 s or more.
    pub const BUCKETS: usize = 1_001;

    /// An empty histogram.
    pub fn new() -> Self {
        LagHistogram {
            counts: vec![0; Self::BUCKETS],
            max_ms: 0.0,
            max_at_ms: 0.0,
        }
    }

    /// A tick `at_ms` into the level woke `lag_ms` late.
    pub fn add(&mut self, lag_ms: f64, at_ms: f64) {
        let lag_ms = lag_ms.max(0.0);
        if lag_ms > self.max_ms {
            self.max_ms = lag_ms;
            self.max_at_ms = at_ms;
        }
        let bucket = (lag_ms.floor() as usize).min(Self::BUCKETS - 1);
        self.counts[bucket] = self.counts[bucket].saturating_add(1);
    }

    /// The lateness at `p` percent of ticks (the bucket's upper edge), ms.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        let n: u64 = self.counts.iter().map(|&c| u64::from(c)).sum();
        if n == 0 {
            return 0.0;
        }
        let rank = ((p / 100.0) * n as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += u64::from(count);
            if seen >= rank {
                // The last bucket holds everything later: its edge is the worst.
                return if bucket == Self::BUCKETS - 1 {
                    self.max_ms
                } else {
                    ((bucket + 1) as f64).min(self.max_ms)
                };
            }
        }
        self.max_ms
    }
}

impl Default for LagHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// What a level's stalls did to its token events (see [`StallLog`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StallCount {
    /// Token events of the level's finished requests, and of them those stamped
    /// during a stall.
    pub n_events: u64,
    /// Of the token events, those stamped during a stall.
    pub n_late: u64,
    /// The level's finished requests, and of them those whose first token was
    /// stamped during a stall.
    pub n_requests: u64,
    /// Of the requests, those whose first token was stamped during a stall.
    pub n_late_first: u64,
    /// The longest stall that held an event, ms.
    pub late_max_ms: f64,
}

impl StallCount {
    /// Whether the late events can move a p99 the page reports: 1% or more of the
    /// token events (ITL), or of the first tokens (TTFT).
    pub fn moves_p99(&self) -> bool {
        self.n_late > 0
            && (self.n_late * 100 >= self.n_events || self.n_late_first * 100 >= self.n_requests)
    }
}

/// The stretches in which the engine's loop ran behind while a level's requests
/// were in flight, and the token events stamped in them.
///
/// A tick due at `due_us` that woke at `woke_us` says the loop ran nothing on time
/// in between: every event stamped after `due_us` and up to `woke_us` waited behind
/// the stall, late by at most its length. An event stamped outside every stall was
/// not moved by one, so a stall in which nothing was stamped (the level-start burst
/// of `fetch` calls, before any token) moved no figure and needs no note. Stalls
/// are kept only beyond [`LAG_NOTE_MS`]; each record is counted
/// once, in time logarithmic in the stalls and its events.
#[derive(Clone, Debug, Default)]
pub struct StallLog {
    /// `(due_us, woke_us)`, in order.
    stalls: Vec<(u64, u64)>,
    /// What the stalls held, over the records counted so far.
    pub count: StallCount,
}

impl StallLog {
    /// A tick due at `due_us` woke at `woke_us`.
    pub fn add(&mut self, due_us: u64, woke_us: u64) {
        let late_us = woke_us.saturating_sub(due_us);
        if late_us as f64 > LAG_NOTE_MS * 1e3 {
            self.stalls.push((due_us, woke_us));
        }
    }

    /// Counts the token events of a finished request, `times_us` ascending.
    pub fn count(&mut self, times_us: &[u64]) {
        let one = self.count_one(times_us);
        self.count.add(&one);
    }

    /// What the stalls held of one finished request's token events, `times_us`
    /// ascending (a helper worker counts its own requests against its own loop's
    /// stalls, and the run adds them up).
    pub fn count_one(&self, times_us: &[u64]) -> StallCount {
        let mut count = StallCount {
            n_requests: 1,
            n_events: times_us.len() as u64,
            ..StallCount::default()
        };
        let (Some(&first), Some(&last)) = (times_us.first(), times_us.last()) else {
            return count;
        };
        let from = self.stalls.partition_point(|&(_, woke)| woke < first);
        for &(due, woke) in self.stalls[from..]
            .iter()
            .take_while(|&&(due, _)| due < last)
        {
            let start = times_us.partition_point(|&t| t <= due);
            let end = times_us.partition_point(|&t| t <= woke);
            if end > start {
                count.n_late += (end - start) as u64;
                count.n_late_first += u64::from(start == 0);
                count.late_max_ms = count.late_max_ms.max((woke - due) as f64 / 1e3);
            }
        }
        count
    }
}

impl StallCount {
    /// Adds `other`'s requests and events to these.
    pub fn add(&mut self, other: &StallCount) {
        self.n_events += other.n_events;
        self.n_late += other.n_late;
        self.n_requests += other.n_requests;
        self.n_late_first += other.n_late_first;
        self.late_max_ms = self.late_max_ms.max(other.late_max_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_events_stamped_inside_a_stall_count_as_late() {
        let mut log = StallLog::default();
        // A 10 ms hiccup is no stall; a 30 ms one (due 100 ms, woke 130 ms) and a
        // 60 ms one (due 500 ms, woke 560 ms) are.
        log.add(50_000, 60_000);
        log.add(100_000, 130_000);
        log.add(500_000, 560_000);
        // The level-start burst: a stall before any token of this request.
        log.count(&[200_000, 220_000, 240_000]);
        assert_eq!((log.count.n_late, log.count.late_max_ms), (0, 0.0));
        assert!(!log.count.moves_p99());
        // Two events waited behind the first stall; its due instant itself is not in it.
        log.count(&[90_000, 100_000, 110_000, 130_000, 131_000]);
        assert_eq!((log.count.n_late, log.count.late_max_ms), (2, 30.0));
        // One behind the second, the request's first: the longest stall that held one.
        log.count(&[559_000, 600_000]);
        assert_eq!((log.count.n_late, log.count.late_max_ms), (3, 60.0));
        // Requests that end before a stall, or start after it, and empty ones.
        log.count(&[10_000, 20_000]);
        log.count(&[900_000]);
        log.count(&[]);
        assert_eq!(
            log.count,
            StallCount {
                n_events: 13,
                n_late: 3,
                n_requests: 6,
                n_late_first: 1,
                late_max_ms: 60.0,
            }
        );
    }

    #[test]
    fn records_counted_apart_add_up_to_records_counted_together() {
        // Two workers, each with its own stalls, count their own records; the
        // run adds them: the same as one log that held both workers' stalls.
        let records: [&[u64]; 3] = [&[90_000, 100_000, 130_000], &[200_000, 240_000], &[]];
        let mut a = StallLog::default();
        a.add(95_000, 135_000);
        let mut b = StallLog::default();
        b.add(210_000, 250_000);
        let mut both = StallLog::default();
        both.add(95_000, 135_000);
        both.add(210_000, 250_000);
        let mut added = StallCount::default();
        added.add(&a.count_one(records[0]));
        added.add(&b.count_one(records[1]));
        added.add(&b.count_one(records[2]));
        for times in records {
            both.count(times);
        }
        assert_eq!(added, both.count);
        assert_eq!(
            (added.n_late, added.n_requests, added.late_max_ms),
            (3, 3, 40.0)
        );
    }

    #[test]
    fn late_events_matter_when_they_can_move_a_p99() {
        let count = |n_events, n_late, n_requests, n_late_first| StallCount {
            n_events,
            n_late,
            n_requests,
            n_late_first,
            late_max_ms: 40.0,
        };
        assert!(!count(25_600, 0, 256, 0).moves_p99());
        // 3 of 25,600 events, none a first token: no p99 moved.
        assert!(!count(25_600, 3, 256, 0).moves_p99());
        // 1% of the events: ITL p99 can move.
        assert!(count(25_600, 256, 256, 0).moves_p99());
        // Few events, but the first tokens of 1% of the requests: TTFT p99 can move.
        assert!(count(25_600, 3, 256, 3).moves_p99());
        assert!(!count(25_600, 2, 256, 2).moves_p99());
    }
    #[test]
    fn lag_percentiles_to_the_millisecond_in_fixed_room() {
        let mut lag = LagHistogram::new();
        assert_eq!(lag.percentile_ms(95.0), 0.0);
        for i in 0..100 {
            lag.add(if i < 96 { 0.4 } else { 37.2 }, f64::from(i) * 10.0);
        }
        assert_eq!(lag.percentile_ms(95.0), 1.0);
        assert_eq!(lag.percentile_ms(97.0), 37.2);
        assert_eq!(lag.max_at_ms, 960.0, "the first of the worst");
        lag.add(5_000.0, 2_000.0);
        assert_eq!((lag.max_ms, lag.max_at_ms), (5_000.0, 2_000.0));
        assert_eq!(lag.percentile_ms(100.0), 5_000.0);
        assert_eq!(lag.counts.len(), LagHistogram::BUCKETS);
    }
}
