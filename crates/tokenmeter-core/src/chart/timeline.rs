//! One level's requests over time, vLLM's per-request timeline: a bar per request,
//! split where the record says its phases changed (client queue, browser wait,
//! waiting for the first token, decoding); a failed request is one bar named by its
//! error kind. Hooks: `chart-timeline`, `timeline-bar` (`data-kind`: `ok` or the
//! kind's name, `data-id`).

use std::fmt::Write;

use super::{escape, figure, nice_top, px, say, Look, Svg, BOTTOM, LEFT, RIGHT};
use crate::{error::Lang, record::RequestRecord, report::RunDocument};

/// The most requests drawn: beyond, the first ones (by when they were wanted), and
/// the chart says how many it left out.
pub const MAX_BARS: usize = 1_000;
/// Above the bars: title and legend.
const BARS_TOP: f64 = 58.0;

/// The phases, in the order they happen, with their class and labels.
const PHASES: [(&str, &str, &str); 4] = [
    ("queue", "client queue", "客户端排队"),
    ("wait", "browser wait", "浏览器等待"),
    ("prefill", "waiting for the first token", "等待首 token"),
    ("decode", "decoding", "解码"),
];

/// The phases of one successful request as (class, from µs, to µs), empty ones
/// left out.
fn phases(r: &RequestRecord) -> Vec<(&'static str, u64, u64)> {
    let left_browser = r
        .browser
        .as_ref()
        .and_then(|b| b.request_start_us)
        .map_or(r.sent_us, |at| at.clamp(r.sent_us, r.end_us));
    let first = r.first_token_us.unwrap_or(r.end_us).max(left_browser);
    [
        ("queue", r.wanted_us, r.sent_us),
        ("wait", r.sent_us, left_browser),
        ("prefill", left_browser, first),
        ("decode", first, r.end_us.max(first)),
    ]
    .into_iter()
    .filter(|(_, from, to)| to > from)
    .collect()
}

/// The requests of the level at `concurrency` (warm-ups left out), as a timeline.
/// `None` when the level has no request in `document.records` (a run kept without
/// its records).
// Long: one SVG drawn top to bottom: axes, levels, series, legend.
pub fn timeline(document: &RunDocument, concurrency: u32, look: Look) -> Option<String> {
    let lang = look.lang;
    let requests: Vec<&RequestRecord> = document
        .records
        .iter()
        .filter(|r| !r.warmup && r.concurrency == concurrency)
        .collect();
    if requests.is_empty() {
        return None;
    }
    let order = crate::stats::order_with(requests.len(), &|a, b| {
        let (a, b) = (requests[a], requests[b]);
        (a.wanted_us, a.id).cmp(&(b.wanted_us, b.id))
    });
    let mut requests = crate::stats::reorder(requests, &order);
    let n_all = requests.len();
    requests.truncate(MAX_BARS);
    let origin = requests[0].wanted_us;
    let end = requests.iter().map(|r| r.end_us).max().unwrap_or(origin);
    let span_ms = (end - origin) as f64 / 1e3;
    let (top_ms, step_ms) = nice_top(span_ms);
    let row = (360.0 / requests.len() as f64).clamp(2.0, 14.0);
    let bar = (row * 0.75).max(1.5);
    let (left, right) = (LEFT, look.width() - RIGHT);
    // The legend: the phases, then a failure; in as many rows as the width needs
    // (a phone's takes two), the bars below it.
    let mut legend = Vec::with_capacity(PHASES.len() + 1);
    let (mut at, mut legend_y) = (left, 30.0);
    let keys = PHASES
        .iter()
        .map(|&(class, en, zh)| (format!("bar {class} key"), say(lang, en, zh)))
        .chain([("bar failed key".to_owned(), say(lang, "failed", "失败"))]);
    for (class, label) in keys {
        let width = 18.0 + super::text_width(label) + 16.0;
        if at + width > right + RIGHT && at > left {
            (at, legend_y) = (left, legend_y + 16.0);
        }
        legend.push((class, label, at, legend_y));
        at += width;
    }
    let bars_top = BARS_TOP + (legend_y - 30.0);
    let height = bars_top + row * requests.len() as f64 + BOTTOM;
    let x = |us: u64| left + (us - origin) as f64 / 1e3 / top_ms * (right - left);
    let level_name = match concurrency {
        0 => say(lang, "open loop", "开环").to_owned(),
        c => format!("{} {c}", say(lang, "concurrency", "并发")),
    };

    let mut svg = Svg::default();
    let title = format!(
        "{} · {level_name}",
        say(lang, "Requests over time", "请求时间线")
    );
    svg.raw(&look.open_svg(
        "chart-timeline",
        &format!(r#" data-concurrency="{concurrency}""#),
        height,
        &title,
    ));
    let mut heading = title.clone();
    if n_all > requests.len() {
        let _ = write!(
            heading,
            " · {}",
            match lang {
                Lang::En => format!("the first {} of {n_all} requests", requests.len()),
                Lang::Zh => format!("{n_all} 个请求中的前 {} 个", requests.len()),
            }
        );
    }
    svg.text("chart-title", (0.0, 16.0), "start", &heading);
    for (class, label, at, y) in legend {
        svg.raw(&format!(
            r#"<rect class="{class}" x="{}" y="{}" width="14" height="10"/>"#,
            px(at),
            px(y)
        ));
        svg.text("legend", (at + 18.0, y + 9.0), "start", label);
    }
    // Time ticks.
    let bottom = height - BOTTOM;
    let n_ticks = (top_ms / step_ms).round() as usize;
    for i in 0..=n_ticks {
        let ms = i as f64 * step_ms;
        let at = left + ms / top_ms * (right - left);
        svg.line("grid", (at, bars_top - 4.0), (at, bottom));
        let label = if top_ms >= 10_000.0 {
            format!("{} s", figure(ms / 1e3))
        } else {
            format!("{} ms", figure(ms))
        };
        svg.text("tick", (at, bottom + 17.0), "middle", &label);
    }
    svg.text(
        "axis-title",
        ((left + right) / 2.0, height - 8.0),
        "middle",
        say(
            lang,
            "time since the level's first request",
            "自这一档第一个请求起的时间",
        ),
    );
    svg.text(
        "axis-unit",
        (left - 8.0, bars_top + 8.0),
        "end",
        say(lang, "requests", "请求"),
    );

    for (i, r) in requests.iter().enumerate() {
        let y = bars_top + i as f64 * row + (row - bar) / 2.0;
        let kind = r.error.as_ref().map_or("ok", |e| e.kind.name());
        let ms = |us: u64| format!("{:.1}", us as f64 / 1e3);
        let tooltip = match &r.error {
            None => match lang {
                Lang::En => format!(
                    "request {}: sent at {} ms, first token after {} ms, done after {} ms, {} tokens",
                    r.id,
                    ms(r.sent_us - origin),
                    r.ttft_us().map_or("–".into(), ms),
                    ms(r.e2e_us()),
                    r.n_out.unwrap_or(0)
                ),
                Lang::Zh => format!(
                    "请求 {}：{} ms 时发出，{} ms 后首 token，{} ms 后结束，{} 个 token",
                    r.id,
                    ms(r.sent_us - origin),
                    r.ttft_us().map_or("–".into(), ms),
                    ms(r.e2e_us()),
                    r.n_out.unwrap_or(0)
                ),
            },
            Some(error) => format!(
                "{} {}: {} · {}",
                say(lang, "request", "请求"),
                r.id,
                error.kind.title(lang),
                error.detail
            ),
        };
        svg.raw(&format!(
            r#"<g class="timeline-bar" data-testid="timeline-bar" data-kind="{kind}" data-id="{}" tabindex="0"><title>{}</title>"#,
            r.id,
            escape(&tooltip)
        ));
        let segments = if r.error.is_some() {
            vec![("failed", r.sent_us, r.end_us.max(r.sent_us + 1))]
        } else {
            phases(r)
        };
        for (class, from, to) in segments {
            svg.raw(&format!(
                r#"<rect class="bar {class}" x="{}" y="{}" width="{}" height="{}"/>"#,
                px(x(from)),
                px(y),
                px((x(to) - x(from)).max(0.5)),
                px(bar)
            ));
        }
        svg.raw("</g>");
    }
    svg.raw("</svg>");
    Some(svg.finish())
}
