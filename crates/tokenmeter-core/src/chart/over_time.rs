//! Output tokens per second over the run's time, in bins of a second (twice as
//! wide each time a run outgrows [`MAX_BINS`]), with each level's span shaded:
//! where the server sped up, stalled or fell over as the load stepped up. The
//! accumulator ([`OverTime`]) takes requests one by one, so the page grows the
//! chart live from the requests each progress brings, with work per request, not
//! per redraw. Hooks: `chart-over-time` (`data-bins`), `over-time-level`
//! (`data-concurrency`).

use super::{figure, nice_top, px, say, Look, Svg, BOTTOM, LEFT, RIGHT, TOP};
use crate::{error::Lang, record::RequestRecord, report::RunDocument};

/// The height of every chart over the run's time.
pub(super) const HEIGHT: f64 = 260.0;
/// The most bins kept: beyond, neighbours merge and the bins are twice as wide.
pub(super) const MAX_BINS: usize = 1_800;

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
        let mut over_time = OverTime::new(first_wanted_us(document)?);
        for record in &document.records {
            over_time.add(record);
        }
        Some(over_time)
    }

    /// A finished `document`'s time axis and level spans without its tokens: what
    /// another chart of the run's time draws under its own lines, so that both
    /// line up (see [`super::server`]).
    pub(super) fn frame_of(document: &RunDocument) -> Option<OverTime> {
        let origin_us = first_wanted_us(document)?;
        let mut frame = OverTime::new(origin_us);
        for record in document.records.iter().filter(|r| !r.warmup) {
            frame.span(record);
        }
        Some(frame)
    }

    /// A request's level span and the time it reached.
    fn span(&mut self, r: &RequestRecord) {
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
        self.span(r);
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
        let frame = self.frame(look, HEIGHT);
        let (top_rate, step_rate) = nice_top(rates.iter().copied().fold(0.0, f64::max));
        let y = |rate: f64| frame.bottom - rate / top_rate * (frame.bottom - frame.top);

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
        frame.draw_spans(&mut svg, lang);
        for k in 0..=(top_rate / step_rate).round() as usize {
            let rate = k as f64 * step_rate;
            svg.line("grid", (frame.left, y(rate)), (frame.right, y(rate)));
            svg.text(
                "tick",
                (frame.left - 8.0, y(rate) + 4.0),
                "end",
                &figure(rate),
            );
        }
        frame.draw_axis(&mut svg, lang);
        svg.text(
            "axis-unit",
            (frame.left - 8.0, frame.top - 10.0),
            "end",
            say(lang, "tok/s", "token/秒"),
        );
        // A step line: each bin's rate held across its width.
        let mut points = Vec::with_capacity(rates.len() * 2);
        for (i, rate) in rates.iter().enumerate() {
            let from = i as f64 * bin_s;
            points.push((frame.x(from), y(*rate)));
            points.push((frame.x(from + width_s(i)), y(*rate)));
        }
        svg.polyline("series s1", &points);
        svg.raw("</svg>");
        Some(svg.finish())
    }

    /// The plot area of a chart of `height` over this run's time, and its time
    /// axis: every such chart of one run shares it.
    pub(super) fn frame(&self, look: Look, height: f64) -> TimeFrame<'_> {
        let (top_s, step_s) = nice_top(self.settled().len() as f64 * self.bin_us as f64 / 1e6);
        TimeFrame {
            over: self,
            left: LEFT,
            right: look.width() - RIGHT,
            top: TOP,
            bottom: height - BOTTOM,
            height,
            top_s,
            step_s,
        }
    }
}

/// A plot area over a run's time: seconds since its time 0 along x, each level's
/// span shaded.
pub(super) struct TimeFrame<'a> {
    over: &'a OverTime,
    pub(super) left: f64,
    pub(super) right: f64,
    pub(super) top: f64,
    pub(super) bottom: f64,
    height: f64,
    top_s: f64,
    step_s: f64,
}

impl TimeFrame<'_> {
    /// Where `s` seconds since time 0 are drawn (past the axis' end, at its end).
    pub(super) fn x(&self, s: f64) -> f64 {
        self.left + s.clamp(0.0, self.top_s) / self.top_s * (self.right - self.left)
    }

    /// Seconds since time 0 of `at_us` on the run's clock; `None` outside the
    /// axis (before time 0, or after its end).
    pub(super) fn at_s(&self, at_us: u64) -> Option<f64> {
        let s = at_us.checked_sub(self.over.origin_us)? as f64 / 1e6;
        (s <= self.top_s).then_some(s)
    }

    /// Each level's span, shaded over the plot's height, its concurrency above it.
    pub(super) fn draw_spans(&self, svg: &mut Svg, lang: Lang) {
        let at_s = |us: u64| us.saturating_sub(self.over.origin_us) as f64 / 1e6;
        for (i, &(concurrency, from, to)) in self.over.spans.iter().enumerate() {
            let (x0, x1) = (self.x(at_s(from)), self.x(at_s(to)));
            let label = match concurrency {
                0 => say(lang, "open loop", "开环").to_owned(),
                c => c.to_string(),
            };
            svg.raw(&format!(
                r#"<g class="level-span{}" data-testid="over-time-level" data-concurrency="{concurrency}"><rect x="{}" y="{}" width="{}" height="{}"/>"#,
                if i % 2 == 0 { "" } else { " odd" },
                px(x0),
                px(self.top),
                px((x1 - x0).max(1.0)),
                px(self.bottom - self.top)
            ));
            svg.text(
                "level-label",
                ((x0 + x1) / 2.0, self.top - 6.0),
                "middle",
                &label,
            );
            svg.raw("</g>");
        }
    }

    /// The time ticks under the plot, the axis and its title.
    pub(super) fn draw_axis(&self, svg: &mut Svg, lang: Lang) {
        for k in 0..=(self.top_s / self.step_s).round() as usize {
            let s = k as f64 * self.step_s;
            svg.line(
                "tick-mark",
                (self.x(s), self.bottom),
                (self.x(s), self.bottom + 4.0),
            );
            svg.text(
                "tick",
                (self.x(s), self.bottom + 17.0),
                "middle",
                &figure(s),
            );
        }
        svg.line("axis", (self.left, self.bottom), (self.right, self.bottom));
        svg.text(
            "axis-title",
            ((self.left + self.right) / 2.0, self.height - 8.0),
            "middle",
            if self.over.from_run_start {
                say(lang, "seconds since the run started", "自运行开始起的秒数")
            } else {
                say(
                    lang,
                    "seconds since the first request",
                    "自第一个请求起的秒数",
                )
            },
        );
    }
}

/// When a finished run's first measured request was wanted: time 0 of its
/// charts over time.
fn first_wanted_us(document: &RunDocument) -> Option<u64> {
    document
        .records
        .iter()
        .filter(|r| !r.warmup)
        .map(|r| r.wanted_us)
        .min()
}

/// Output tokens/s over a finished run. `None` without successful requests (or
/// without records: a run kept without them).
pub fn over_time(document: &RunDocument, look: Look) -> Option<String> {
    OverTime::of(document)?.draw(look)
}
