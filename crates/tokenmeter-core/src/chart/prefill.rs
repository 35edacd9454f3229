//! TTFT against the input tokens the server computed, a dot per request and a
//! fitted line per level: where input lengths vary, the slope is what 1,000 more
//! tokens of prompt cost before the first token (prefill), and a level whose dots
//! sit high at every length is waiting, not prefilling. Drawn only where some
//! level has a slope ([`Summary::ttft_ms_per_1k_input`]). Hooks:
//! `chart-ttft-input`, `ttft-input-level` (`data-concurrency`, `data-points`: the
//! requests behind it, `data-ms-per-1k`: its slope).

use super::{
    cdf::CLASSES, escape, figure, legend_row, nice_top, px, say, Look, Svg, BOTTOM, HEIGHT, LEFT,
    RIGHT, TOP,
};
use crate::{error::Lang, record::RequestRecord, report::RunDocument, summary::Summary};

/// The most dots a level is drawn with: evenly chosen, so a level of 100,000
/// requests draws as fast as one of a hundred (its line is fitted to all).
const MAX_DOTS: usize = 400;

/// A request's input tokens the server computed (cached ones left out), and its
/// TTFT in ms.
fn point(r: &RequestRecord) -> Option<(f64, f64)> {
    let input = r.usage.as_ref()?.prompt_tokens?;
    let computed = input.saturating_sub(r.cached_prompt_tokens().unwrap_or(0));
    Some((computed as f64, r.ttft_us()? as f64 / 1e3))
}

/// One level's dots and its slope.
struct Level<'a> {
    summary: &'a Summary,
    concurrency: u32,
    ms_per_1k: f64,
    points: Vec<(f64, f64)>,
}

/// The chart, or `None` when no level's input lengths varied enough for a slope
/// (or the run was kept without its records).
// Long: one SVG drawn top to bottom: axes, points per level, the fitted line, legend.
pub fn ttft_by_input(document: &RunDocument, look: Look) -> Option<String> {
    let lang = look.lang;
    let levels: Vec<Level> = document
        .levels
        .iter()
        .filter_map(|summary| {
            let concurrency = summary.concurrency?;
            let ms_per_1k = summary.ttft_ms_per_1k_input?;
            let points: Vec<(f64, f64)> = document
                .records
                .iter()
                .filter(|r| !r.warmup && r.is_ok() && r.concurrency == concurrency)
                .filter_map(point)
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            (!points.is_empty()).then_some(Level {
                summary,
                concurrency,
                ms_per_1k,
                points,
            })
        })
        .collect();
    if levels.is_empty() {
        return None;
    }
    let title = say(lang, "TTFT against input tokens", "TTFT 与输入 token 数");
    let mut svg = Svg::default();
    svg.raw(&look.open_svg("chart-ttft-input", "", look.height(1, HEIGHT), title));
    let (left, panel_width, _) = look.panel(0, 1, HEIGHT);
    let (plot_left, plot_right) = (left + LEFT, left + panel_width - RIGHT);
    let (plot_top, plot_bottom) = (TOP, HEIGHT - BOTTOM);
    let max_x = levels
        .iter()
        .flat_map(|l| &l.points)
        .map(|p| p.0)
        .fold(0.0, f64::max);
    // The y axis ends at the slowest level's p99, so one outlier does not squash the rest.
    let max_y = levels
        .iter()
        .filter_map(|l| l.summary.ttft_ms.map(|d| d.p99))
        .fold(0.0, f64::max);
    let (top_x, step_x) = nice_top(max_x);
    let (top_y, step_y) = nice_top(max_y);
    let x = |tokens: f64| plot_left + tokens.clamp(0.0, top_x) / top_x * (plot_right - plot_left);
    let y = |ms: f64| plot_bottom - ms.clamp(0.0, top_y) / top_y * (plot_bottom - plot_top);
    svg.text(
        "chart-title",
        (left, 16.0),
        "start",
        say(
            lang,
            "TTFT against input tokens (slope: prefill cost)",
            "TTFT 与输入 token 数（斜率即 prefill 成本）",
        ),
    );
    let ticks =
        |top: f64, step: f64| (0..=(top / step).round() as usize).map(move |t| t as f64 * step);
    for ms in ticks(top_y, step_y) {
        svg.line("grid", (plot_left, y(ms)), (plot_right, y(ms)));
        svg.text("tick", (plot_left - 8.0, y(ms) + 4.0), "end", &figure(ms));
    }
    for tokens in ticks(top_x, step_x) {
        svg.line(
            "tick-mark",
            (x(tokens), plot_bottom),
            (x(tokens), plot_bottom + 4.0),
        );
        svg.text(
            "tick",
            (x(tokens), plot_bottom + 17.0),
            "middle",
            &figure(tokens),
        );
    }
    svg.line("axis", (plot_left, plot_bottom), (plot_right, plot_bottom));
    svg.text(
        "axis-title",
        ((plot_left + plot_right) / 2.0, HEIGHT - 8.0),
        "middle",
        say(
            lang,
            "input tokens the server computed (cached ones left out)",
            "服务端计算的输入 token 数（不含缓存命中的）",
        ),
    );
    svg.text(
        "axis-title",
        (plot_left, TOP - 8.0),
        "end",
        say(lang, "TTFT ms", "TTFT 毫秒"),
    );
    // Legend: each level's swatch and slope.
    legend_row(
        &mut svg,
        plot_left,
        plot_right,
        levels
            .iter()
            .enumerate()
            .map(|(j, level)| (CLASSES[j % CLASSES.len()], legend(level, lang))),
    );
    for (j, level) in levels.iter().enumerate() {
        let class = CLASSES[j % CLASSES.len()];
        let n = level.points.len();
        let tooltip = match lang {
            Lang::En => format!(
                "concurrency {}: {n} requests, TTFT {:+.1} ms per 1,000 input tokens",
                level.concurrency, level.ms_per_1k
            ),
            Lang::Zh => format!(
                "并发 {}：{n} 个请求，每 1000 个输入 token TTFT 变化 {:+.1} 毫秒",
                level.concurrency, level.ms_per_1k
            ),
        };
        svg.raw(&format!(
            r#"<g class="fit-level" data-testid="ttft-input-level" data-concurrency="{}" data-points="{n}" data-ms-per-1k="{:.3}" tabindex="0"><title>{}</title>"#,
            level.concurrency,
            level.ms_per_1k,
            escape(&tooltip)
        ));
        let stride = n.div_ceil(MAX_DOTS).max(1);
        for &(tokens, ms) in level.points.iter().step_by(stride) {
            svg.raw(&format!(
                r#"<circle class="dot {class}" cx="{}" cy="{}" r="2.5"/>"#,
                px(x(tokens)),
                px(y(ms))
            ));
        }
        // The fitted line passes through the level's means, over its lengths.
        let (mean_x, mean_y) = level
            .points
            .iter()
            .fold((0.0, 0.0), |(sx, sy), &(px_, py)| {
                (sx + px_ / n as f64, sy + py / n as f64)
            });
        let (lo, hi) = level
            .points
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p.0), hi.max(p.0))
            });
        let at_x = |tokens: f64| mean_y + level.ms_per_1k / 1000.0 * (tokens - mean_x);
        svg.polyline(
            &format!("fit {class}"),
            &[(x(lo), y(at_x(lo))), (x(hi), y(at_x(hi)))],
        );
        svg.raw("</g>");
    }
    svg.raw("</svg>");
    Some(svg.finish())
}

/// A level's legend: its concurrency and slope.
fn legend(level: &Level, lang: Lang) -> String {
    match lang {
        Lang::En => format!("{}: {:+.0} ms/1k", level.concurrency, level.ms_per_1k),
        Lang::Zh => format!("{}：{:+.0} 毫秒/千", level.concurrency, level.ms_per_1k),
    }
}
