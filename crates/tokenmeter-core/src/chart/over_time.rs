//! Output tokens per second over the run's time, in bins of a second (twice as
//! wide each time a run outgrows [`MAX_BINS`]), with each level's span shaded:
//! where the server sped up, stalled or fell over as the load stepped up. The
//! accumulator ([`OverTime`]) takes requests one by one, so the page grows the
//! chart live from the requests each progress brings, with work per request, not
//! per redraw. Hooks: `chart-over-time` (`data-bins`), `over-time-level`
//! (`data-concurrency`).

use super::{figure, nice_top, px, say, Look, Svg, BOTTOM, LEFT, RIGHT, TOP};
use crate::{error::Lang, record::RequestRecord, report::RunDocument};

const HEIGHT: f64 = 260.0;
/// The most bins kept: beyond, neighbours merge and the bins are twice as wide.
pub const MAX_BINS: usize = 1_800;

/// Output tokens per time bin, and each level's span, from the requests so far.
#[derive(Clone, Debug)]
pub struct OverTime {
    /// Time 0 of the chart (µs on the run's clock).
    origin_us: u64,
    /// Time 0 is the run's start (the live chart), not its first request.
    from_run_start: bool,
    bin_us: u64,
    bins: Vec<f64>,
    /// (concurrency, first wanted, last end), in the order levels appeared.
    spans: Vec<(u32, u64, u64)>,
    /// The latest end and the longest request seen: while a run goes, the bins
    /// after `last_end − longest` still wait for requests in flight.
    last_end_us: u64,
    longest_us: u64,
}

impl OverTime {
    /// An empty chart whose time 0 is the run's start, for a run that goes.
    pub fn live() -> OverTime {
        OverTime {
            from_run_start: true,
            ..OverTime::new(0)
        }
    }

    /// An empty chart whose time 0 is `origin_us`.
    fn new(origin_us: u64) -> OverTime {
        OverTime {
            origin_us,
            from_run_start: false,
            bin_us: 1_000_000,
            bins: Vec::new(),
            spans: Vec::new(),
            last_end_us: 0,
            longest_us: 0,
        }
    }

    /// The run so far of a finished `document`, time 0 at its first measured request.
    pub fn of(document: &RunDocument) -> Option<OverTime> {
        let origin_us = document
            .records
            .iter()
            .filter(|r| !r.warmup)
            .map(|r| r.wanted_us)
            .min()?;
        let mut over_time = OverTime::new(origin_us);
        for record in &document.records {
            over_time.add(record);
        }
        Some(over_time)
    }

    /// A finished request (warm-ups are left out): its tokens where they arrived,
    /// from its per-token times for a finished run that kept them, else spread
    /// evenly between its first and last token (work per bin it spans, not per
    /// token). The live chart always spreads: the page thread does no per-token
    /// work while a run goes.
    pub fn add(&mut self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        match self.spans.iter_mut().find(|s| s.0 == r.concurrency) {
            Some(span) => {
                span.1 = span.1.min(r.wanted_us);
                span.2 = span.2.max(r.end_us);
            }
            None => self.spans.push((r.concurrency, r.wanted_us, r.end_us)),
        }
        self.reach(r.end_us);
        self.last_end_us = self.last_end_us.max(r.end_us);
        self.longest_us = self.longest_us.max(r.end_us.saturating_sub(r.wanted_us));
        if !r.is_ok() {
            return;
        }
        let n_out = r.n_out.unwrap_or(0) as f64;
        if !self.from_run_start && !r.token_times_us.is_empty() {
            // Usage may count more tokens than events: each event carries its share.
            let each = n_out / r.token_times_us.len() as f64;
            for &t in &r.token_times_us {
                self.put(t, each);
            }
        } else if let (Some(first), Some(last)) = (r.first_token_us, r.last_token_us) {
            if first >= last {
                self.put(first, n_out);
                return;
            }
            let span = (last - first) as f64;
            let mut from = first;
            while from < last {
                let bin_end = self.origin_us + (self.index(from) as u64 + 1) * self.bin_us;
                let to = bin_end.min(last);
                self.put(from, n_out * (to - from) as f64 / span);
                from = to;
            }
        }
    }

    /// Whether any successful request has been added.
    pub fn has_tokens(&self) -> bool {
        self.bins.iter().any(|&n| n > 0.0)
    }

    fn index(&self, at_us: u64) -> usize {
        (at_us.saturating_sub(self.origin_us) / self.bin_us) as usize
    }

    /// Makes room for `at_us`, merging neighbouring bins while it does not fit.
    fn reach(&mut self, at_us: u64) {
        while self.index(at_us) >= MAX_BINS {
            self.bins = self.bins.chunks(2).map(|pair| pair.iter().sum()).collect();
            self.bin_us *= 2;
        }
        let needed = self.index(at_us) + 1;
        if self.bins.len() < needed {
            self.bins.resize(needed, 0.0);
        }
    }

    fn put(&mut self, at_us: u64, n: f64) {
        self.reach(at_us);
        let i = self.index(at_us);
        self.bins[i] += n;
    }

    /// The bins' widths, µs, and their token counts.
    pub fn bins(&self) -> (u64, &[f64]) {
        (self.bin_us, &self.bins)
    }

    /// The bins that will not change: all of a finished run's; while a run goes,
    /// those that ended before any request still in flight can have started
    /// (requests reach the chart when they end, with all their tokens).
    fn settled(&self) -> &[f64] {
        if !self.from_run_start {
            return &self.bins;
        }
        let settled_until = self.last_end_us.saturating_sub(self.longest_us);
        let n = (settled_until.saturating_sub(self.origin_us) / self.bin_us) as usize;
        &self.bins[..n.min(self.bins.len())]
    }

    /// The chart. `None` before any token (while a run goes: before any bin is
    /// settled).
    pub fn draw(&self, look: Look) -> Option<String> {
        let lang = look.lang;
        let settled = self.settled();
        if !settled.iter().any(|&n| n > 0.0) {
            return None;
        }
        let bin_s = self.bin_us as f64 / 1e6;
        // A finished run's last bin is cut by the run's end: its rate is over the
        // part the run covered, not the whole bin (which would read as a drop).
        let width_s = |i: usize| {
            let start_us = self.origin_us + i as u64 * self.bin_us;
            if !self.from_run_start && i + 1 == settled.len() {
                (self.last_end_us.saturating_sub(start_us)).clamp(1, self.bin_us) as f64 / 1e6
            } else {
                bin_s
            }
        };
        let rates: Vec<f64> = settled
            .iter()
            .enumerate()
            .map(|(i, n)| n / width_s(i))
            .collect();
        let (plot_left, plot_right) = (LEFT, look.width() - RIGHT);
        let (plot_top, plot_bottom) = (TOP, HEIGHT - BOTTOM);
        let (top_s, step_s) = nice_top(rates.len() as f64 * bin_s);
        let (top_rate, step_rate) = nice_top(rates.iter().copied().fold(0.0, f64::max));
        let x = |s: f64| plot_left + s.min(top_s) / top_s * (plot_right - plot_left);
        let y = |rate: f64| plot_bottom - rate / top_rate * (plot_bottom - plot_top);
        let at_s = |us: u64| us.saturating_sub(self.origin_us) as f64 / 1e6;

        let title = say(
            lang,
            "Output tokens per second over the run",
            "运行过程中每秒输出 token",
        );
        let mut svg = Svg::default();
        svg.raw(&look.open_svg(
            "chart-over-time",
            &format!(r#" data-bins="{}""#, rates.len()),
            HEIGHT,
            title,
        ));
        let bin_label = match lang {
            Lang::En => format!("{} s bins", figure(bin_s)),
            Lang::Zh => format!("每 {} 秒一格", figure(bin_s)),
        };
        svg.text(
            "chart-title",
            (0.0, 16.0),
            "start",
            &format!("{title} · {bin_label}"),
        );
        for (i, &(concurrency, from, to)) in self.spans.iter().enumerate() {
            let (x0, x1) = (x(at_s(from)), x(at_s(to)));
            let label = match concurrency {
                0 => say(lang, "open loop", "开环").to_owned(),
                c => c.to_string(),
            };
            svg.raw(&format!(
                r#"<g class="level-span{}" data-testid="over-time-level" data-concurrency="{concurrency}"><rect x="{}" y="{}" width="{}" height="{}"/>"#,
                if i % 2 == 0 { "" } else { " odd" },
                px(x0),
                px(plot_top),
                px((x1 - x0).max(1.0)),
                px(plot_bottom - plot_top)
            ));
            svg.text(
                "level-label",
                ((x0 + x1) / 2.0, plot_top - 6.0),
                "middle",
                &label,
            );
            svg.raw("</g>");
        }
        for k in 0..=(top_rate / step_rate).round() as usize {
            let rate = k as f64 * step_rate;
            svg.line("grid", (plot_left, y(rate)), (plot_right, y(rate)));
            svg.text(
                "tick",
                (plot_left - 8.0, y(rate) + 4.0),
                "end",
                &figure(rate),
            );
        }
        for k in 0..=(top_s / step_s).round() as usize {
            let s = k as f64 * step_s;
            svg.line("tick-mark", (x(s), plot_bottom), (x(s), plot_bottom + 4.0));
            svg.text("tick", (x(s), plot_bottom + 17.0), "middle", &figure(s));
        }
        svg.line("axis", (plot_left, plot_bottom), (plot_right, plot_bottom));
        svg.text(
            "axis-unit",
            (plot_left - 8.0, plot_top - 10.0),
            "end",
            say(lang, "tok/s", "token/秒"),
        );
        svg.text(
            "axis-title",
            ((plot_left + plot_right) / 2.0, HEIGHT - 8.0),
            "middle",
            if self.from_run_start {
                say(lang, "seconds since the run started", "自运行开始起的秒数")
            } else {
                say(
                    lang,
                    "seconds since the first request",
                    "自第一个请求起的秒数",
                )
            },
        );
        // A step line: each bin's rate held across its width.
        let mut points = Vec::with_capacity(rates.len() * 2);
        for (i, rate) in rates.iter().enumerate() {
            let from = i as f64 * bin_s;
            points.push((x(from), y(*rate)));
            points.push((x(from + width_s(i)), y(*rate)));
        }
        svg.polyline("series s1", &points);
        svg.raw("</svg>");
        Some(svg.finish())
    }
}

/// Output tokens/s over a finished run. `None` without successful requests (or
/// without records: a run kept without them).
pub fn over_time(document: &RunDocument, look: Look) -> Option<String> {
    OverTime::of(document)?.draw(look)
}
