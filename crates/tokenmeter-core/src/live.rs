//! The figures a level shows while it runs, kept incrementally, and the lateness
//! of the engine's own ticks ([`LagHistogram`]).
//!
//! The live view asks for them ten times a second, for the whole run: adding a
//! record costs O(1) (amortised), and asking costs O(requests of the level) through
//! selection, not a sort, with nothing per token. A finished level is asked once
//! more and its figures frozen by the caller. The run document's figures come from
//! [`LevelStats`](crate::summary::LevelStats) at the end, from every sample; these
//! are the same percentiles of the same TTFTs, only fewer of them.

use crate::{
    browser::Engine,
    condition::{self, RunCondition},
    record::RequestRecord,
    stats::percentile_select,
    summary::browser_split_us,
    vecmap::VecMap,
};

const US_PER_MS: f64 = 1e3;

/// What the live view shows of one level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveFigures {
    /// Median TTFT of the finished requests so far, ms.
    pub ttft_p50_ms: Option<f64>,
    /// p95 TTFT of the finished requests so far, ms.
    pub ttft_p95_ms: Option<f64>,
    /// Aggregate output tokens/s of the successful requests so far.
    pub output_tps: f64,
    /// The browser held requests back (see [`condition::browser_queue_at`]).
    pub browser_queue: Option<RunCondition>,
}

/// The running accumulator of one level.
#[derive(Clone, Debug)]
pub struct LiveLevel {
    concurrency: u32,
    engine: Engine,
    ttft_us: Vec<f64>,
    browser_wait_us: Vec<f64>,
    ttft_after_send_us: Vec<f64>,
    protocols: VecMap<String, u64>,
    n_out_total: u64,
    first_wanted_us: Option<u64>,
    last_end_us: Option<u64>,
    /// Reused by [`LiveLevel::figures`]: selection reorders what it reads.
    scratch: Vec<f64>,
}

impl LiveLevel {
    /// An empty level of `concurrency`, measured by `engine`.
    pub fn new(concurrency: u32, engine: Engine) -> LiveLevel {
        LiveLevel {
            concurrency,
            engine,
            ttft_us: Vec::new(),
            browser_wait_us: Vec::new(),
            ttft_after_send_us: Vec::new(),
            protocols: VecMap::new(),
            n_out_total: 0,
            first_wanted_us: None,
            last_end_us: None,
            scratch: Vec::new(),
        }
    }

    /// A request of this level ended (warm-ups are ignored).
    pub fn add(&mut self, record: &RequestRecord) {
        if record.warmup {
            return;
        }
        self.first_wanted_us = Some(
            self.first_wanted_us
                .map_or(record.wanted_us, |t| t.min(record.wanted_us)),
        );
        self.last_end_us = Some(
            self.last_end_us
                .map_or(record.end_us, |t| t.max(record.end_us)),
        );
        if let Some(protocol) = record.browser.as_ref().and_then(|b| b.protocol.as_deref()) {
            match self.protocols.get_mut(protocol) {
                Some(n) => *n += 1,
                None => {
                    self.protocols.insert(protocol.to_owned(), 1);
                }
            }
        }
        if !record.is_ok() {
            return;
        }
        let (Some(ttft_us), Some(n_out)) = (record.ttft_us(), record.n_out) else {
            return;
        };
        self.ttft_us.push(ttft_us as f64);
        self.n_out_total = self.n_out_total.saturating_add(n_out);
        if let Some((wait, after)) = browser_split_us(self.engine, record) {
            self.browser_wait_us.push(wait as f64);
            self.ttft_after_send_us.push(after as f64);
        }
    }

    /// The figures as of now.
    pub fn figures(&mut self) -> LiveFigures {
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut at = |samples: &[f64], p: f64| {
            scratch.clear();
            scratch.extend_from_slice(samples);
            percentile_select(&mut scratch, p).map(|us| us * (1.0 / US_PER_MS))
        };
        let ttft_p50_ms = at(&self.ttft_us, 50.0);
        let ttft_p95_ms = at(&self.ttft_us, 95.0);
        let browser_queue =
            match crate::browser::queued_protocol(self.engine, self.concurrency, &self.protocols) {
                None => None,
                Some(_) => condition::browser_queue_at(
                    self.engine,
                    self.concurrency,
                    &self.protocols,
                    at(&self.browser_wait_us, 95.0),
                    at(&self.ttft_after_send_us, 50.0),
                ),
            };
        self.scratch = scratch;
        let wall_s = match (self.first_wanted_us, self.last_end_us) {
            (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e6,
            _ => 0.0,
        };
        LiveFigures {
            ttft_p50_ms,
            ttft_p95_ms,
            output_tps: if wall_s > 0.0 {
                self.n_out_total as f64 / wall_s
            } else {
                0.0
            },
            browser_queue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::{
        plan::Slo,
        record::{BrowserTiming, RecordBuilder, RecordOptions, RequestStart, StreamEnd},
        summary::LevelStats,
    };

    fn record(
        id: u64,
        concurrency: u32,
        sent: u64,
        ttft: u64,
        protocol: &str,
        wait: u64,
    ) -> RequestRecord {
        let mut b = RecordBuilder::new(
            RequestStart {
                id,
                concurrency,
                warmup: false,
                wanted_us: sent,
                sent_us: sent,
            },
            RecordOptions::default(),
        );
        b.on_headers(200, Some("text/event-stream"), None, sent + ttft / 2);
        for k in 0..3 {
            b.on_bytes(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
                sent + ttft + k * 20_000,
            );
        }
        b.on_bytes(b"data: [DONE]\n\n", sent + ttft + 60_000);
        let mut r = b.finish(StreamEnd::Complete, sent + ttft + 60_000);
        r.browser = Some(BrowserTiming {
            fetch_start_us: sent,
            request_start_us: Some(sent + wait),
            response_start_us: Some(sent + ttft / 2),
            protocol: Some(protocol.into()),
            connection_setup_us: None,
        });
        r
    }

    /// The live figures are the document's, for the same records.
    #[test]
    fn live_figures_are_the_summarys() {
        for (concurrency, protocol) in [(16, "h2"), (16, "http/1.1"), (4, "http/1.1")] {
            let mut live = LiveLevel::new(concurrency, Engine::Chromium);
            let mut stats = LevelStats::for_engine(concurrency, Engine::Chromium);
            for i in 0..97u64 {
                let r = record(
                    i,
                    concurrency,
                    i * 10_000,
                    150_000 + (i * 7_919) % 90_000,
                    protocol,
                    (i * 31) % 40_000,
                );
                live.add(&r);
                stats.add(&r);
                let figures = live.figures();
                let summary = stats.summary(&Slo::default());
                assert_eq!(figures.ttft_p50_ms, summary.ttft_ms.map(|d| d.p50));
                assert_eq!(figures.ttft_p95_ms, summary.ttft_ms.map(|d| d.p95));
                assert!((figures.output_tps - summary.output_tps).abs() < 1e-9);
                assert_eq!(
                    figures.browser_queue,
                    condition::browser_queue(&[summary], Engine::Chromium).pop(),
                    "{concurrency} {protocol}"
                );
            }
            assert_eq!(
                live.figures().browser_queue.is_some(),
                protocol == "http/1.1" && concurrency > 6
            );
        }
    }

    #[test]
    fn a_level_with_nothing_finished_shows_nothing() {
        let mut live = LiveLevel::new(8, Engine::Firefox);
        assert_eq!(live.figures(), LiveFigures::default());
    }
}
