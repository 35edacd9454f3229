//! Output tokens per second over the run's time, in bins of a second (wider for
//! long runs), with each level's span shaded: where the server sped up, stalled or
//! fell over as the load stepped up. Hooks: `chart-over-time`, `over-time-level`
//! (`data-concurrency`), `over-time-bin` count in `data-bins`.

use super::{escape, figure, nice_top, px, say, Svg, BOTTOM, LEFT, RIGHT, TOP, WIDTH};
use crate::{error::Lang, report::RunDocument};

const HEIGHT: f64 = 260.0;
/// The most bins drawn: a longer run gets wider bins (2 s, 5 s, 10 s, ...).
const MAX_BINS: u64 = 1_800;

/// The bin width for a run of `span_us`: one second, or the next of 2, 5, 10, 30,
/// 60 s that keeps the bins under [`MAX_BINS`].
pub(super) fn bin_us(span_us: u64) -> u64 {
    [1, 2, 5, 10, 30, 60, 300, 600]
        .into_iter()
        .map(|s| s * 1_000_000)
        .find(|&bin| span_us / bin < MAX_BINS)
        .unwrap_or(3_600_000_000)
}

/// Output tokens in each bin from `origin_us`, from the per-token arrival times
/// where the run kept them, else each request's tokens spread evenly between its
/// first and last token.
pub(super) fn bins(document: &RunDocument, origin_us: u64, bin_us: u64, n_bins: usize) -> Vec<f64> {
    let mut bins = vec![0.0; n_bins];
    let mut add = |at_us: u64, n: f64| {
        let i = ((at_us.saturating_sub(origin_us)) / bin_us) as usize;
        if let Some(bin) = bins.get_mut(i) {
            *bin += n;
        }
    };
    for r in document.records.iter().filter(|r| !r.warmup && r.is_ok()) {
        let n_out = r.n_out.unwrap_or(0) as f64;
        if !r.token_times_us.is_empty() {
            // Usage may count more tokens than events (several per chunk): each
            // event carries its share.
            let each = n_out / r.token_times_us.len() as f64;
            for &t in &r.token_times_us {
                add(t, each);
            }
        } else if let (Some(first), Some(last)) = (r.first_token_us, r.last_token_us) {
            // Spread at most one share per bin the request spans: work per request,
            // not per token.
            let first_bin = (first.saturating_sub(origin_us)) / bin_us;
            let last_bin = (last.saturating_sub(origin_us)) / bin_us;
            let span = (last - first).max(1) as f64;
            for b in first_bin..=last_bin {
                let from = (origin_us + b * bin_us).max(first);
                let to = (origin_us + (b + 1) * bin_us).min(last);
                let share = if first == last {
                    1.0
                } else {
                    (to.saturating_sub(from)) as f64 / span
                };
                add(origin_us + b * bin_us, n_out * share);
            }
        }
    }
    bins
}

/// Output tokens/s over the run. `None` without successful requests (or records).
pub fn over_time(document: &RunDocument, lang: Lang) -> Option<String> {
    let measured = document.records.iter().filter(|r| !r.warmup);
    let origin_us = measured.clone().map(|r| r.wanted_us).min()?;
    let end_us = measured.clone().map(|r| r.end_us).max()?;
    if !document.records.iter().any(|r| !r.warmup && r.is_ok()) {
        return None;
    }
    let bin_us = bin_us(end_us - origin_us);
    let n_bins = ((end_us - origin_us) / bin_us + 1) as usize;
    let rates: Vec<f64> = bins(document, origin_us, bin_us, n_bins)
        .into_iter()
        .map(|n| n / (bin_us as f64 / 1e6))
        .collect();
    let (plot_left, plot_right) = (LEFT, WIDTH - RIGHT);
    let (plot_top, plot_bottom) = (TOP, HEIGHT - BOTTOM);
    let span_s = (n_bins as u64 * bin_us) as f64 / 1e6;
    let (top_s, step_s) = nice_top(span_s);
    let (top_rate, step_rate) = nice_top(rates.iter().copied().fold(0.0, f64::max));
    let x = |s: f64| plot_left + s / top_s * (plot_right - plot_left);
    let y = |rate: f64| plot_bottom - rate / top_rate * (plot_bottom - plot_top);
    let at_s = |us: u64| (us.saturating_sub(origin_us)) as f64 / 1e6;

    let title = say(
        lang,
        "Output tokens per second over the run",
        "运行过程中每秒输出 token",
    );
    let mut svg = Svg::default();
    svg.raw(&format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-testid="chart-over-time" data-bins="{n_bins}" viewBox="0 0 {WIDTH} {HEIGHT}" role="group" aria-label="{}">"#,
        escape(title)
    ));
    let bin_label = match (bin_us / 1_000_000, lang) {
        (1, Lang::En) => "1 s bins".to_owned(),
        (1, Lang::Zh) => "每 1 秒一格".to_owned(),
        (s, Lang::En) => format!("{s} s bins"),
        (s, Lang::Zh) => format!("每 {s} 秒一格"),
    };
    svg.text(
        "chart-title",
        (0.0, 16.0),
        "start",
        &format!("{title} · {bin_label}"),
    );
    // Each level's span, shaded in turn, labelled with its concurrency.
    for (i, level) in document.levels.iter().enumerate() {
        let Some(concurrency) = level.concurrency else {
            continue;
        };
        let of_level = document
            .records
            .iter()
            .filter(|r| !r.warmup && r.concurrency == concurrency);
        let (Some(from), Some(to)) = (
            of_level.clone().map(|r| r.wanted_us).min(),
            of_level.map(|r| r.end_us).max(),
        ) else {
            continue;
        };
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
    let n_ticks = (top_rate / step_rate).round() as usize;
    for k in 0..=n_ticks {
        let rate = k as f64 * step_rate;
        svg.line("grid", (plot_left, y(rate)), (plot_right, y(rate)));
        svg.text(
            "tick",
            (plot_left - 8.0, y(rate) + 4.0),
            "end",
            &figure(rate),
        );
    }
    let n_ticks = (top_s / step_s).round() as usize;
    for k in 0..=n_ticks {
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
        say(
            lang,
            "seconds since the first request",
            "自第一个请求起的秒数",
        ),
    );
    // A step line: each bin's rate held across its width.
    let mut points = Vec::with_capacity(rates.len() * 2);
    for (i, rate) in rates.iter().enumerate() {
        let from = i as f64 * bin_us as f64 / 1e6;
        let to = from + bin_us as f64 / 1e6;
        points.push((x(from), y(*rate)));
        points.push((x(to), y(*rate)));
    }
    svg.polyline("series s1", &points);
    svg.raw("</svg>");
    Some(svg.finish())
}
