//! Charts of a run, as SVG markup: the page shows them inline and the exports embed
//! the same text, so what a user sees and what they keep are one drawing. Pure
//! geometry and markup: no DOM, no clock, tested natively like every figure.
//!
//! Appearance is in classes only (`chart.css` beside this file): the page's
//! Content-Security-Policy refuses inline styles, and a class can follow the page's
//! colours. Every point is a focusable group with a `<title>` (the browser's
//! tooltip, and what a screen reader says) and a value label that CSS shows on
//! hover and focus. Hooks: `chart-point` (`data-series`, `data-concurrency`),
//! `knee-marker` and `safe-marker` (`data-concurrency`).
//!
//! - [`latency`]: TTFT and TPOT against concurrency, with the SLO limits;
//! - [`throughput`]: output tokens/s and requests/s against concurrency, the knee
//!   and the safe level marked;
//! - [`timeline`]: one level's requests, each a bar split into its phases;
//! - [`cdf`]: how TTFT and ITL are spread, a curve per level;
//! - [`ttft_by_input`]: TTFT against the input tokens computed, where lengths vary;
//! - [`over_time`]: output tokens/s over the run, the levels shaded ([`OverTime`]
//!   grows it request by request while a run goes);
//! - [`server`]: what the server reported over the run (its `/metrics`), on the
//!   same time axis;
//! - [`live`]: TTFT and output tokens/s against concurrency while a run goes;
//! - [`compare`]: a run over a baseline.

mod cdf;
mod over_time;
mod prefill;
mod server;
mod svg;
mod timeline;

pub use cdf::cdf;
pub use over_time::{over_time, OverTime};
pub use prefill::ttft_by_input;
pub use server::server;
pub use timeline::{timeline, MAX_BARS};

pub use svg::escape;
use svg::{px, Svg};

use crate::{
    error::Lang, plan::LoadMode, report::RunDocument, stats::Distribution, summary::Summary,
};

/// The stylesheet the charts' classes need, for documents that stand alone (the
/// page links the same file).
pub const STYLE: &str = include_str!("chart.css");

/// The drawing's size (its `viewBox`; the page scales it to the width it has).
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 300.0;
/// Room around each panel's plot area for titles, ticks and labels.
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 58.0;
const BOTTOM: f64 = 44.0;
/// Between the two panels of a chart.
const GAP: f64 = 36.0;
/// Keeps the first and last level off the axes.
const INSET: f64 = 18.0;

/// The drawing's width on a narrow screen (a phone): the panels stand one under
/// the other, each a little narrower than one of the wide layout's two, so the
/// 12 px text still reads at about 10 px when the drawing is scaled to the
/// 330-odd px a 390 px phone gives it.
const NARROW_WIDTH: f64 = 400.0;

/// How a chart is drawn: in which language, and for a narrow screen or a wide
/// one. Exports draw wide; the page asks for narrow on a phone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Look {
    /// The language of the chart's words.
    pub lang: Lang,
    /// Panels one under the other, in [`NARROW_WIDTH`].
    pub narrow: bool,
}

impl From<Lang> for Look {
    fn from(lang: Lang) -> Self {
        Look {
            lang,
            narrow: false,
        }
    }
}

impl Look {
    /// The drawing's width.
    fn width(self) -> f64 {
        if self.narrow {
            NARROW_WIDTH
        } else {
            WIDTH
        }
    }

    /// The opening `<svg>` tag, with its hook, any further attributes (written
    /// with a leading space) and its accessible name.
    fn open_svg(self, testid: &str, attributes: &str, height: f64, title: &str) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart{}" data-testid="{testid}"{attributes} viewBox="0 0 {} {}" role="group" aria-label="{}">"#,
            if self.narrow { " narrow" } else { "" },
            px(self.width()),
            px(height),
            escape(title)
        )
    }

    /// Where panel `i` of `n` goes: its left edge and width, and how far down it
    /// is moved (side by side when wide, one under the other when narrow).
    fn panel(self, i: usize, n: usize, height: f64) -> (f64, f64, f64) {
        if self.narrow {
            (0.0, NARROW_WIDTH, i as f64 * height)
        } else {
            let n = n.max(1) as f64;
            let width = (WIDTH - GAP * (n - 1.0)) / n;
            (i as f64 * (width + GAP), width, 0.0)
        }
    }

    /// The drawing's height for `n` panels of `height`.
    fn height(self, n: usize, height: f64) -> f64 {
        if self.narrow {
            height * n.max(1) as f64
        } else {
            height
        }
    }
}

/// Moves what follows down by `dy` (until [`end_shift`]), or does nothing at 0.
fn begin_shift(svg: &mut Svg, dy: f64) {
    if dy != 0.0 {
        let _ = svg.raw(&format!(r#"<g transform="translate(0 {})">"#, px(dy)));
    }
}

fn end_shift(svg: &mut Svg, dy: f64) {
    if dy != 0.0 {
        svg.raw("</g>");
    }
}

/// `en` or `zh` (see [`Lang::pick`]).
fn say(lang: Lang, en: &'static str, zh: &'static str) -> &'static str {
    lang.pick(en, zh)
}

/// Where a level sits on the x axis, and whether the verdict left it out.
#[derive(Clone, Copy)]
struct At {
    x: f64,
    /// The `data-concurrency` hook (0 for open loop).
    concurrency: u32,
    distorted: bool,
}

/// One level as a chart sees it.
struct Level<'a> {
    at: At,
    summary: &'a Summary,
}

/// The levels in run order, each at its concurrency (an open-loop level at its
/// offered rate).
fn levels(document: &RunDocument) -> Vec<Level<'_>> {
    let offered_rps = match document.plan.load {
        LoadMode::Arrivals { rate_rps, .. } => Some(rate_rps),
        _ => None,
    };
    document
        .levels
        .iter()
        .filter_map(|summary| {
            let concurrency = summary.concurrency?;
            let x = match concurrency {
                0 => offered_rps?,
                c => f64::from(c),
            };
            Some(Level {
                at: At {
                    x,
                    concurrency,
                    distorted: summary.distorted.is_some(),
                },
                summary,
            })
        })
        .collect()
}

/// What the x axis is called.
fn x_title(document: &RunDocument, lang: Lang) -> &'static str {
    match document.plan.load {
        LoadMode::Arrivals { .. } => say(lang, "offered rate (requests/s)", "到达速率（请求/秒）"),
        _ => say(lang, "concurrency", "并发数"),
    }
}

/// Where a value of the x axis is drawn: on a log scale when the levels span four
/// times or more (ladders double), linear otherwise.
struct XScale {
    log: bool,
    lo: f64,
    hi: f64,
    left: f64,
    right: f64,
}

impl XScale {
    fn new(values: &[f64], left: f64, right: f64) -> XScale {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        XScale {
            log: lo > 0.0 && hi / lo >= 4.0,
            lo,
            hi,
            left: left + INSET,
            right: right - INSET,
        }
    }

    fn at(&self, v: f64) -> f64 {
        // One level (or none): in the middle.
        if self.hi.partial_cmp(&self.lo) != Some(std::cmp::Ordering::Greater) {
            return (self.left + self.right) / 2.0;
        }
        let t = if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.left + t * (self.right - self.left)
    }
}

/// A y axis from 0 to a round number at or above `max`, with its ticks.
struct YScale {
    top_value: f64,
    ticks: Vec<f64>,
    top: f64,
    bottom: f64,
}

impl YScale {
    fn new(max: f64, top: f64, bottom: f64) -> YScale {
        let (top_value, step) = nice_top(max);
        let n = (top_value / step).round() as usize;
        YScale {
            top_value,
            ticks: (0..=n).map(|i| i as f64 * step).collect(),
            top,
            bottom,
        }
    }

    fn at(&self, v: f64) -> f64 {
        self.bottom - v / self.top_value * (self.bottom - self.top)
    }
}

/// The smallest "round" top (a multiple of 1, 2, 2.5 or 5 × 10^k, four to six
/// steps) at or above `max`, and its step.
fn nice_top(max: f64) -> (f64, f64) {
    if max.is_nan() || max <= 0.0 || max.is_infinite() {
        return (1.0, 0.25);
    }
    let rough = max / 5.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&step| (max / step).ceil() <= 5.0)
        .unwrap_or(10.0 * magnitude);
    let top = (max / step).ceil().max(1.0) * step;
    (top, step)
}

/// A row of swatches and names under a chart's title, from `left`, as many as fit
/// before `right` (the rest are left to the lines' own tooltips).
fn legend_row(
    svg: &mut Svg,
    left: f64,
    right: f64,
    items: impl IntoIterator<Item = (&'static str, String)>,
) {
    let mut at = left;
    for (class, label) in items {
        let width = 22.0 + text_width(&label) + 10.0;
        if at + width > right {
            break;
        }
        svg.line(
            &format!("legend-swatch {class}"),
            (at, 36.0),
            (at + 16.0, 36.0),
        );
        svg.text("legend", (at + 20.0, 40.0), "start", &label);
        at += width;
    }
}

/// A figure as a tick or value label: no more digits than it needs.
fn figure(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == a.trunc() {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// One line of a panel.
struct Series {
    /// The `data-series` hook.
    key: &'static str,
    label: String,
    /// The colour class (`s1`…`s4`); `dashed` lines for the secondary figure.
    class: &'static str,
    points: Vec<(At, f64)>,
}

/// One plot area: a title, a y unit, its lines, and an optional limit line.
struct Panel {
    title: String,
    unit: &'static str,
    series: Vec<Series>,
    /// The SLO, as (value, label).
    limit: Option<(f64, String)>,
}

/// A vertical marker at one level (the knee, the safe concurrency).
struct Marker {
    testid: &'static str,
    class: &'static str,
    label: String,
    explanation: String,
    concurrency: u32,
    x: f64,
}

/// A chart: panels side by side over one x axis, markers across them.
struct Chart {
    testid: &'static str,
    title: String,
    x_title: &'static str,
    panels: Vec<Panel>,
    markers: Vec<Marker>,
    /// Every level's (x, label), for the x ticks.
    ticks: Vec<(f64, String)>,
    /// An open-loop run: x is the offered rate, not a concurrency.
    open_loop: bool,
    look: Look,
}

impl Chart {
    fn draw(&self) -> String {
        let mut svg = Svg::default();
        let look = self.look;
        let n = self.panels.len();
        svg.raw(&look.open_svg(self.testid, "", look.height(n, HEIGHT), &self.title));
        for (i, panel) in self.panels.iter().enumerate() {
            let (left, width, dy) = look.panel(i, n, HEIGHT);
            begin_shift(&mut svg, dy);
            self.draw_panel(&mut svg, panel, left, left + width);
            end_shift(&mut svg, dy);
        }
        svg.raw("</svg>");
        svg.finish()
    }

    // Long: one panel drawn top to bottom: frame, ticks, series, marks.
    fn draw_panel(&self, svg: &mut Svg, panel: &Panel, left: f64, right: f64) {
        let (plot_left, plot_right) = (left + LEFT, right - RIGHT);
        let (plot_top, plot_bottom) = (TOP, HEIGHT - BOTTOM);
        let xs: Vec<f64> = self.ticks.iter().map(|t| t.0).collect();
        let x = XScale::new(&xs, plot_left, plot_right);
        let data_max = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        // The limit is drawn when it is within reach of the data; far above, it
        // would flatten every line, and the title says it instead.
        let limit_in_reach = panel
            .limit
            .as_ref()
            .filter(|(v, _)| *v <= 2.0 * data_max.max(f64::MIN_POSITIVE));
        let y_max = limit_in_reach.map_or(data_max, |(v, _)| data_max.max(*v));
        let y = YScale::new(y_max, plot_top, plot_bottom);

        // Title, with the limit when it is off the chart; the unit above the axis.
        // Where that is wider than the panel (a phone), the title keeps only its
        // name ("TTFT", not "TTFT: time to first token"): the glossary explains.
        let off_chart = match (&panel.limit, limit_in_reach) {
            (Some((_, label)), None) => {
                format!(
                    " · {label} {}",
                    say(self.look.lang, "(above)", "（在图外）")
                )
            }
            _ => String::new(),
        };
        let mut title = format!("{}{off_chart}", panel.title);
        if text_width(&title) * TITLE_WIDER > right - left {
            let name = panel.title.split([':', '：']).next().unwrap_or_default();
            title = format!("{name}{off_chart}");
        }
        svg.text("chart-title", (left, 16.0), "start", &title);
        svg.text(
            "axis-unit",
            (plot_left - 8.0, plot_top - 10.0),
            "end",
            panel.unit,
        );
        self.draw_legend(svg, &panel.series, plot_left, plot_right);

        for &tick in &y.ticks {
            let at = y.at(tick);
            svg.line("grid", (plot_left, at), (plot_right, at));
            svg.text("tick", (plot_left - 8.0, at + 4.0), "end", &figure(tick));
        }
        svg.line("axis", (plot_left, plot_bottom), (plot_right, plot_bottom));
        // Every level is labelled, unless they would collide: then every k-th.
        let room = (plot_right - plot_left) / 28.0;
        let every = (self.ticks.len() as f64 / room.max(1.0)).ceil().max(1.0) as usize;
        for (i, (value, label)) in self.ticks.iter().enumerate() {
            if i % every == 0 || i + 1 == self.ticks.len() {
                let at = x.at(*value);
                svg.line("tick-mark", (at, plot_bottom), (at, plot_bottom + 4.0));
                svg.text("tick", (at, plot_bottom + 17.0), "middle", label);
            }
        }
        svg.text(
            "axis-title",
            ((plot_left + plot_right) / 2.0, HEIGHT - 8.0),
            "middle",
            self.x_title,
        );

        if let Some((value, label)) = limit_in_reach {
            let at = y.at(*value);
            svg.line("limit", (plot_left, at), (plot_right, at));
            svg.text("limit-label", (plot_right, at - 5.0), "end", label);
        }
        for (i, marker) in self.markers.iter().enumerate() {
            let at = x.at(marker.x);
            let label_y = plot_top + 12.0 + 14.0 * i as f64;
            let _ = svg.raw(&format!(
                r#"<g class="marker {}" data-testid="{}" data-concurrency="{}"><title>{}</title>"#,
                marker.class,
                marker.testid,
                marker.concurrency,
                escape(&marker.explanation)
            ));
            svg.line("marker-line", (at, plot_top), (at, plot_bottom));
            svg.text("marker-label", (at + 4.0, label_y), "start", &marker.label);
            svg.raw("</g>");
        }
        for series in &panel.series {
            let line: Vec<(f64, f64)> = series
                .points
                .iter()
                .map(|(at, v)| (x.at(at.x), y.at(*v)))
                .collect();
            svg.polyline(&format!("series {}", series.class), &line);
            for ((level, value), (cx, cy)) in series.points.iter().zip(&line) {
                self.draw_point(svg, series, level, *value, panel.unit, (*cx, *cy));
            }
        }
    }

    /// The series' names under the title, in up to three rows when one does not
    /// hold them (several compared runs with long names); what does not fit is left
    /// to the points' tooltips.
    fn draw_legend(&self, svg: &mut Svg, series: &[Series], left: f64, right: f64) {
        // Where each name goes: (row, x).
        let mut placed = Vec::with_capacity(series.len());
        let (mut row, mut at) = (0, left);
        for s in series {
            let width = 26.0 + text_width(&s.label) + 14.0;
            if at + width > right + RIGHT && at > left {
                (row, at) = (row + 1, left);
            }
            placed.push((row, at));
            at += width;
        }
        let rows: &[f64] = match placed.last().map_or(0, |p| p.0) {
            0 => &[40.0],
            1 => &[32.0, 48.0],
            _ => &[28.0, 41.0, 54.0],
        };
        for (s, (row, at)) in series.iter().zip(placed) {
            let Some(&y) = rows.get(row) else { break };
            svg.line(
                &format!("legend-swatch {}", s.class),
                (at, y - 4.0),
                (at + 18.0, y - 4.0),
            );
            svg.text("legend", (at + 24.0, y), "start", &s.label);
        }
    }

    fn draw_point(
        &self,
        svg: &mut Svg,
        series: &Series,
        level: &At,
        value: f64,
        unit: &str,
        (cx, cy): (f64, f64),
    ) {
        let value_text = format!("{} {unit}", figure(value));
        let at = if self.open_loop {
            format!(
                "{} {}",
                figure(level.x),
                say(self.look.lang, "req/s offered", "请求/秒到达")
            )
        } else {
            format!(
                "{} {}",
                say(self.look.lang, "concurrency", "并发"),
                level.concurrency
            )
        };
        let mut tooltip = format!("{} · {at}: {value_text}", series.label);
        if level.distorted {
            tooltip.push_str(say(
                self.look.lang,
                " (left out of the verdict: the browser or the engine shaped this level)",
                "（未计入结论：这一档受浏览器或测量引擎影响）",
            ));
        }
        let distorted = if level.distorted { " distorted" } else { "" };
        let _ = svg.raw(&format!(
            r#"<g class="pt {}{distorted}" data-testid="chart-point" data-series="{}" data-concurrency="{}" tabindex="0" aria-label="{}"><title>{}</title><circle cx="{}" cy="{}" r="4"/>"#,
            series.class,
            series.key,
            level.concurrency,
            escape(&tooltip),
            escape(&tooltip),
            px(cx),
            px(cy),
        ));
        svg.text("pt-value", (cx, cy - 9.0), "middle", &value_text);
        svg.raw("</g>");
    }
}

/// How much wider a title's bold 14 px is drawn than [`text_width`]'s 12 px.
const TITLE_WIDER: f64 = 1.25;

/// About how wide `text` is drawn at the charts' 12 px (CJK characters are square).
fn text_width(text: &str) -> f64 {
    text.chars()
        .map(|c| if c.is_ascii() { 6.6 } else { 12.0 })
        .sum()
}

/// A series over `levels` of one figure, where the level has it.
fn series(
    levels: &[Level<'_>],
    key: &'static str,
    label: String,
    class: &'static str,
    figure: impl Fn(&Summary) -> Option<f64>,
) -> Series {
    Series {
        key,
        label,
        class,
        points: levels
            .iter()
            .filter_map(|level| {
                let value = figure(level.summary).filter(|v| v.is_finite())?;
                Some((level.at, value))
            })
            .collect(),
    }
}

fn p50(d: Option<Distribution>) -> Option<f64> {
    d.map(|d| d.p50)
}

fn p95(d: Option<Distribution>) -> Option<f64> {
    d.map(|d| d.p95)
}

fn ticks(levels: &[Level<'_>]) -> Vec<(f64, String)> {
    levels.iter().map(|l| (l.at.x, figure(l.at.x))).collect()
}

/// The knee and the safe concurrency, where the verdict found them.
fn markers(document: &RunDocument, levels: &[Level<'_>], lang: Lang) -> Vec<Marker> {
    let verdict = &document.verdict;
    let at = |c: u32| {
        levels
            .iter()
            .find(|l| l.at.concurrency == c)
            .map(|l| l.at.x)
    };
    let mut markers = Vec::new();
    if let Some((c, x)) = verdict.knee.and_then(|c| Some((c, at(c)?))) {
        markers.push(Marker {
            testid: "knee-marker",
            class: "knee",
            label: format!("{} {c}", say(lang, "knee", "拐点")),
            explanation: say(
                lang,
                "the knee: where output tokens/s stopped growing with concurrency",
                "拐点：输出 token/s 不再随并发增长的位置",
            )
            .into(),
            concurrency: c,
            x,
        });
    }
    if let Some((c, x)) = verdict.safe_concurrency.and_then(|c| Some((c, at(c)?))) {
        markers.push(Marker {
            testid: "safe-marker",
            class: "safe",
            label: format!("{} {c}", say(lang, "safe", "安全")),
            explanation: say(
                lang,
                "the safe concurrency: 70% of the knee, within the SLO",
                "安全并发：拐点的 70%，且满足 SLO",
            )
            .into(),
            concurrency: c,
            x,
        });
    }
    markers
}

/// TTFT (p50, p95, and after send where the browser told it) and TPOT (p50, p95)
/// against concurrency, with the SLO limits. `None` when no level has a latency.
pub fn latency(document: &RunDocument, look: Look) -> Option<String> {
    let lang = look.lang;
    let levels = levels(document);
    let ms = say(lang, "ms", "毫秒");
    let mut ttft = vec![
        series(&levels, "ttft_p50", "TTFT p50".into(), "s1", |s| {
            p50(s.ttft_ms)
        }),
        series(&levels, "ttft_p95", "TTFT p95".into(), "s2", |s| {
            p95(s.ttft_ms)
        }),
    ];
    let after_send = series(
        &levels,
        "ttft_after_send_p50",
        say(lang, "TTFT after send p50", "发出后 TTFT p50").into(),
        "s3 dashed",
        |s| p50(s.ttft_after_send_ms),
    );
    if !after_send.points.is_empty() {
        ttft.push(after_send);
    }
    let tpot = vec![
        series(&levels, "tpot_p50", "TPOT p50".into(), "s1", |s| {
            p50(s.tpot_ms)
        }),
        series(&levels, "tpot_p95", "TPOT p95".into(), "s2", |s| {
            p95(s.tpot_ms)
        }),
    ];
    if ttft.iter().chain(&tpot).all(|s| s.points.is_empty()) {
        return None;
    }
    let slo = &document.plan.slo;
    let limit = |v: Option<f64>| v.map(|v| (v, format!("SLO p95 ≤ {} {ms}", figure(v))));
    Some(
        Chart {
            testid: "chart-latency",
            title: say(lang, "Latency against load", "时延随负载变化").into(),
            x_title: x_title(document, lang),
            panels: vec![
                Panel {
                    title: say(lang, "TTFT: time to first token", "TTFT：首 token 时延").into(),
                    unit: ms,
                    series: ttft,
                    limit: limit(slo.ttft_p95_ms),
                },
                Panel {
                    title: say(
                        lang,
                        "TPOT: time per output token",
                        "TPOT：每个输出 token 的时间",
                    )
                    .into(),
                    unit: ms,
                    series: tpot,
                    limit: limit(slo.tpot_p95_ms),
                },
            ],
            markers: markers(document, &levels, lang),
            ticks: ticks(&levels),
            open_loop: matches!(document.plan.load, LoadMode::Arrivals { .. }),
            look,
        }
        .draw(),
    )
}

/// Output tokens/s and requests/s against concurrency, the knee and the safe
/// level marked. `None` when the run has no level.
pub fn throughput(document: &RunDocument, look: Look) -> Option<String> {
    let lang = look.lang;
    let levels = levels(document);
    if levels.is_empty() {
        return None;
    }
    let tokens = series(
        &levels,
        "output_tps",
        say(lang, "output tokens/s", "输出 token/秒").into(),
        "s1",
        |s| Some(s.output_tps),
    );
    let requests = series(
        &levels,
        "request_rps",
        say(lang, "requests/s", "请求/秒").into(),
        "s2",
        |s| Some(s.request_throughput_rps),
    );
    let goodput = series(
        &levels,
        "goodput_rps",
        say(
            lang,
            "goodput/s (within the SLO)",
            "有效请求/秒（满足 SLO）",
        )
        .into(),
        "s3 dashed",
        |s| s.goodput_rps,
    );
    let mut rates = vec![requests];
    if !goodput.points.is_empty() {
        rates.push(goodput);
    }
    Some(
        Chart {
            testid: "chart-throughput",
            title: say(lang, "Throughput against load", "吞吐随负载变化").into(),
            x_title: x_title(document, lang),
            panels: vec![
                Panel {
                    title: say(lang, "Output tokens per second", "每秒输出 token").into(),
                    unit: say(lang, "tok/s", "token/秒"),
                    series: vec![tokens],
                    limit: None,
                },
                Panel {
                    title: say(lang, "Requests per second", "每秒完成请求").into(),
                    unit: say(lang, "req/s", "请求/秒"),
                    series: rates,
                    limit: None,
                },
            ],
            markers: markers(document, &levels, lang),
            ticks: ticks(&levels),
            open_loop: matches!(document.plan.load, LoadMode::Arrivals { .. }),
            look,
        }
        .draw(),
    )
}

/// How many kept runs one comparison overlays on the shown run (one colour each).
pub const MAX_COMPARED: usize = 3;

/// The `data-series` keys of a comparison's runs: the shown run, the baseline, then
/// the other compared runs.
const COMPARE_KEYS: [[&str; 2]; MAX_COMPARED + 1] = [
    ["ttft_p95_now", "output_tps_now"],
    ["ttft_p95_baseline", "output_tps_baseline"],
    ["ttft_p95_baseline2", "output_tps_baseline2"],
    ["ttft_p95_baseline3", "output_tps_baseline3"],
];

/// A compared run's name in a legend: the first is *the* baseline, the others are
/// named by when they started (`2026-12-03 14:05`) and their model.
pub fn compared_name(then: &RunDocument, rank: usize, lang: Lang) -> String {
    if rank == 0 {
        return say(lang, "baseline", "基线").into();
    }
    run_name(then)
}

/// A kept run as people tell them apart: when it started, to the minute, and its
/// model (`2026-12-03 14:05 · qwen2.5-7b`).
pub fn run_name(run: &RunDocument) -> String {
    let started: String = run.started_at.chars().take(16).collect();
    format!("{} · {}", started.replace('T', " "), run.plan.model)
}

/// This run over up to [`MAX_COMPARED`] kept runs: p95 TTFT and output tokens/s
/// against concurrency, one line each, the kept runs dashed. `None` when none has
/// a level. Hook: `compare-chart`; its points' `data-series` end in `_now`,
/// `_baseline` (the first kept run), `_baseline2` or `_baseline3`.
pub fn compare(now: &RunDocument, baselines: &[&RunDocument], look: Look) -> Option<String> {
    let lang = look.lang;
    let mut runs = vec![Overlaid {
        document: now,
        label: say(lang, "this run", "本次").into(),
        keys: COMPARE_KEYS[0],
        class: RUN_CLASSES[0],
    }];
    for (rank, then) in baselines.iter().take(MAX_COMPARED).enumerate() {
        runs.push(Overlaid {
            document: then,
            label: compared_name(then, rank, lang),
            keys: COMPARE_KEYS[rank + 1],
            class: RUN_CLASSES[rank + 1],
        });
    }
    let title = if baselines.len() > 1 {
        say(lang, "This run against the kept runs", "本次与所选运行对比")
    } else {
        say(lang, "This run against the baseline", "本次与基线对比")
    };
    overlay(&runs, "compare-chart", title, look)
}

/// The line classes of overlaid runs: the first solid, the others dashed.
const RUN_CLASSES: [&str; 4] = ["s1", "s2 dashed", "s3 dashed", "s4 dashed"];

/// One run of an overlay: its document, its name in the legend, its points'
/// `data-series` keys (p95 TTFT, output tokens/s), its line's classes.
struct Overlaid<'a> {
    document: &'a RunDocument,
    label: String,
    keys: [&'static str; 2],
    class: &'static str,
}

/// The targets of an A/B run over each other: p95 TTFT and output tokens/s
/// against concurrency, A solid, B dashed. Hook: `ab-chart`; its points'
/// `data-series` end in `_a` or `_b`.
pub fn ab(document: &RunDocument, look: Look) -> Option<String> {
    let lang = look.lang;
    let b = document.ab.first()?;
    let runs = [
        Overlaid {
            document,
            label: crate::ab::target_name(document, 0),
            keys: ["ttft_p95_a", "output_tps_a"],
            class: RUN_CLASSES[0],
        },
        Overlaid {
            document: b,
            label: crate::ab::target_name(document, 1),
            keys: ["ttft_p95_b", "output_tps_b"],
            class: RUN_CLASSES[1],
        },
    ];
    overlay(
        &runs,
        "ab-chart",
        say(lang, "A/B: the targets side by side", "A/B：目标并排对比"),
        look,
    )
}

/// Runs' curves over each other: the comparison's and the A/B run's chart.
fn overlay(runs: &[Overlaid<'_>], testid: &'static str, title: &str, look: Look) -> Option<String> {
    let lang = look.lang;
    let run_levels: Vec<Vec<Level<'_>>> = runs.iter().map(|run| levels(run.document)).collect();
    let mut ticks: Vec<(f64, String)> = Vec::new();
    for tick in run_levels.iter().flat_map(|levels| self::ticks(levels)) {
        if !ticks.iter().any(|t| t.0 == tick.0) {
            ticks.push(tick);
        }
    }
    if ticks.is_empty() {
        return None;
    }
    let keys: Vec<f64> = ticks.iter().map(|t| t.0).collect();
    let ticks = crate::stats::reorder(ticks, &crate::stats::order_by(&keys));
    let ttft = |levels: &[Level<'_>], key, label: &str, class| {
        series(levels, key, format!("TTFT p95 · {label}"), class, |s| {
            p95(s.ttft_ms)
        })
    };
    let tps = |levels: &[Level<'_>], key, label: &str, class| {
        series(
            levels,
            key,
            format!("{} · {label}", say(lang, "output tok/s", "输出 token/秒")),
            class,
            |s| (s.n_ok > 0).then_some(s.output_tps),
        )
    };
    Some(
        Chart {
            testid,
            title: title.into(),
            x_title: say(lang, "concurrency", "并发数"),
            panels: vec![
                Panel {
                    title: say(lang, "p95 TTFT", "p95 TTFT").into(),
                    unit: say(lang, "ms", "毫秒"),
                    series: runs
                        .iter()
                        .zip(&run_levels)
                        .map(|(run, levels)| ttft(levels, run.keys[0], &run.label, run.class))
                        .collect(),
                    limit: None,
                },
                Panel {
                    title: say(lang, "Output tokens per second", "每秒输出 token").into(),
                    unit: say(lang, "tok/s", "token/秒"),
                    series: runs
                        .iter()
                        .zip(&run_levels)
                        .map(|(run, levels)| tps(levels, run.keys[1], &run.label, run.class))
                        .collect(),
                    limit: None,
                },
            ],
            markers: Vec::new(),
            ticks,
            open_loop: false,
            look,
        }
        .draw(),
    )
}

/// One level of a run that goes, as [`live`] draws it (from the progress the
/// engine posts).
pub struct LivePoint {
    /// The level.
    pub concurrency: u32,
    /// Median TTFT so far, ms.
    pub ttft_p50_ms: Option<f64>,
    /// p95 TTFT so far, ms.
    pub ttft_p95_ms: Option<f64>,
    /// `None` until the level has a finished request.
    pub output_tps: Option<f64>,
}

/// TTFT and output tokens/s against concurrency while a run goes: every planned
/// level on the axis from the start, a point where a level has figures. `None` for
/// an open-loop run (one level, no concurrency axis). Hook: `chart-live`.
pub fn live(points: &[LivePoint], look: Look) -> Option<String> {
    let lang = look.lang;
    let levels: Vec<(At, &LivePoint)> = points
        .iter()
        .filter(|p| p.concurrency > 0)
        .map(|p| {
            let at = At {
                x: f64::from(p.concurrency),
                concurrency: p.concurrency,
                distorted: false,
            };
            (at, p)
        })
        .collect();
    if levels.is_empty() {
        return None;
    }
    let series = |key, label: String, class, figure: fn(&LivePoint) -> Option<f64>| Series {
        key,
        label,
        class,
        points: levels
            .iter()
            .filter_map(|(at, p)| Some((*at, figure(p).filter(|v| v.is_finite())?)))
            .collect(),
    };
    Some(
        Chart {
            testid: "chart-live",
            title: say(lang, "As the run goes", "运行中").into(),
            x_title: say(lang, "concurrency", "并发数"),
            panels: vec![
                Panel {
                    title: say(lang, "TTFT so far", "目前的 TTFT").into(),
                    unit: say(lang, "ms", "毫秒"),
                    series: vec![
                        series("ttft_p50", "TTFT p50".into(), "s1", |p| p.ttft_p50_ms),
                        series("ttft_p95", "TTFT p95".into(), "s2", |p| p.ttft_p95_ms),
                    ],
                    limit: None,
                },
                Panel {
                    title: say(
                        lang,
                        "Output tokens per second so far",
                        "目前每秒输出 token",
                    )
                    .into(),
                    unit: say(lang, "tok/s", "token/秒"),
                    series: vec![series(
                        "output_tps",
                        say(lang, "output tokens/s", "输出 token/秒").into(),
                        "s1",
                        |p| p.output_tps,
                    )],
                    limit: None,
                },
            ],
            markers: Vec::new(),
            ticks: levels.iter().map(|(at, _)| (at.x, figure(at.x))).collect(),
            open_loop: false,
            look,
        }
        .draw(),
    )
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod tests_support;
