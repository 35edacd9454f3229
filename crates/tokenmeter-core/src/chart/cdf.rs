//! How TTFT and ITL are spread at each level: the share of requests (of gaps
//! between tokens) at or below each latency, one curve per level. A curve that
//! leans right is a slower level; a long flat tail is its outliers. Hooks:
//! `chart-cdf`, `cdf-curve` (`data-metric`: `ttft` or `itl`, `data-concurrency`).

use super::{
    begin_shift, end_shift, escape, figure, nice_top, px, say, Look, Svg, BOTTOM, HEIGHT, LEFT,
    RIGHT, TOP,
};
use crate::{error::Lang, report::RunDocument};

/// The most points a curve is drawn with: quantiles, not every sample, so a level
/// of 100,000 requests draws as fast as one of ten.
const CURVE_POINTS: usize = 200;
/// Colour classes for the levels, in order (they repeat beyond eight).
pub(super) const CLASSES: [&str; 8] = ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"];

/// `samples` (sorted) as at most [`CURVE_POINTS`] (value, share ≤ value) points.
pub(super) fn curve(sorted: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let steps = n.min(CURVE_POINTS);
    (1..=steps)
        .map(|k| {
            let i = (k * n).div_ceil(steps) - 1;
            (sorted[i], (i + 1) as f64 / n as f64)
        })
        .collect()
}

/// One metric's samples per level: (concurrency, sorted samples in ms).
type PerLevel = Vec<(u32, Vec<f64>)>;

fn per_level(
    document: &RunDocument,
    metric: &dyn Fn(&crate::record::RequestRecord, &mut Vec<f64>),
) -> PerLevel {
    let mut levels: PerLevel = Vec::new();
    for summary in &document.levels {
        let Some(concurrency) = summary.concurrency else {
            continue;
        };
        let mut samples = Vec::new();
        for r in document
            .records
            .iter()
            .filter(|r| !r.warmup && r.is_ok() && r.concurrency == concurrency)
        {
            metric(r, &mut samples);
        }
        samples.retain(|v| v.is_finite());
        if !samples.is_empty() {
            crate::stats::sort_floats(&mut samples);
            levels.push((concurrency, samples));
        }
    }
    levels
}

/// The CDF of TTFT and of ITL, one curve per level. `None` when no request
/// succeeded (or the run was kept without its records); the ITL panel only when
/// per-token times were kept.
// Long: one SVG drawn top to bottom: axes, curves, legend.
pub fn cdf(document: &RunDocument, look: Look) -> Option<String> {
    let lang = look.lang;
    let ttft = per_level(document, &|r, out| {
        if let Some(us) = r.ttft_us() {
            out.push(us as f64 / 1e3);
        }
    });
    if ttft.is_empty() {
        return None;
    }
    let itl = per_level(document, &|r, out| {
        out.extend(r.itls_us().map(|us| us as f64 / 1e3));
    });
    let mut panels = vec![(
        "ttft",
        say(
            lang,
            "TTFT: share of requests at or below",
            "TTFT：不超过该值的请求占比",
        ),
        ttft,
    )];
    if !itl.is_empty() {
        panels.push((
            "itl",
            say(
                lang,
                "ITL: share of token gaps at or below",
                "ITL：不超过该值的 token 间隔占比",
            ),
            itl,
        ));
    }
    let title = say(lang, "How latency is spread, per level", "各档时延分布");
    let mut svg = Svg::default();
    svg.raw(&look.open_svg("chart-cdf", "", look.height(panels.len(), HEIGHT), title));
    for (i, (metric, heading, levels)) in panels.iter().enumerate() {
        let (left, panel_width, dy) = look.panel(i, panels.len(), HEIGHT);
        begin_shift(&mut svg, dy);
        let (plot_left, plot_right) = (left + LEFT, left + panel_width - RIGHT);
        let (plot_top, plot_bottom) = (TOP, HEIGHT - BOTTOM);
        // The x axis ends at the largest p99, so one outlier does not squash the rest.
        let p99 = |s: &Vec<f64>| s[((s.len() as f64 * 0.99).ceil() as usize).clamp(1, s.len()) - 1];
        let max = levels.iter().map(|(_, s)| p99(s)).fold(0.0, f64::max);
        let (top_ms, step_ms) = nice_top(max);
        let x = |ms: f64| plot_left + ms.min(top_ms) / top_ms * (plot_right - plot_left);
        let y = |share: f64| plot_bottom - share * (plot_bottom - plot_top);
        svg.text("chart-title", (left, 16.0), "start", heading);
        for k in 0..=4 {
            let share = f64::from(k) / 4.0;
            svg.line("grid", (plot_left, y(share)), (plot_right, y(share)));
            svg.text(
                "tick",
                (plot_left - 8.0, y(share) + 4.0),
                "end",
                &format!("{:.0}%", share * 100.0),
            );
        }
        let n_ticks = (top_ms / step_ms).round() as usize;
        for t in 0..=n_ticks {
            let ms = t as f64 * step_ms;
            svg.line(
                "tick-mark",
                (x(ms), plot_bottom),
                (x(ms), plot_bottom + 4.0),
            );
            svg.text("tick", (x(ms), plot_bottom + 17.0), "middle", &figure(ms));
        }
        svg.line("axis", (plot_left, plot_bottom), (plot_right, plot_bottom));
        svg.text(
            "axis-title",
            ((plot_left + plot_right) / 2.0, HEIGHT - 8.0),
            "middle",
            say(lang, "ms (to the largest p99)", "毫秒（到最大的 p99）"),
        );
        // Legend: one swatch per level.
        super::legend_row(
            &mut svg,
            plot_left,
            plot_right,
            levels
                .iter()
                .enumerate()
                .map(|(j, (concurrency, _))| (CLASSES[j % CLASSES.len()], concurrency.to_string())),
        );
        for (j, (concurrency, samples)) in levels.iter().enumerate() {
            let points: Vec<(f64, f64)> = curve(samples)
                .into_iter()
                .map(|(v, share)| (x(v), y(share)))
                .collect();
            let median = samples[samples.len().div_ceil(2) - 1];
            let tooltip = match lang {
                Lang::En => format!(
                    "concurrency {concurrency}: {} samples, median {} ms, p99 {} ms",
                    samples.len(),
                    figure(median),
                    figure(p99(samples))
                ),
                Lang::Zh => format!(
                    "并发 {concurrency}：{} 个样本，中位数 {} 毫秒，p99 {} 毫秒",
                    samples.len(),
                    figure(median),
                    figure(p99(samples))
                ),
            };
            svg.raw(&format!(
                r#"<g class="cdf-curve" data-testid="cdf-curve" data-metric="{metric}" data-concurrency="{concurrency}" tabindex="0"><title>{}</title>"#,
                escape(&tooltip)
            ));
            let class = format!("series {}", CLASSES[j % CLASSES.len()]);
            if points.len() == 1 {
                let (cx, cy) = points[0];
                svg.raw(&format!(
                    r#"<circle class="{class}" cx="{}" cy="{}" r="3"/>"#,
                    px(cx),
                    px(cy)
                ));
            }
            svg.polyline(&class, &points);
            svg.raw("</g>");
        }
        end_shift(&mut svg, dy);
    }
    svg.raw("</svg>");
    Some(svg.finish())
}
