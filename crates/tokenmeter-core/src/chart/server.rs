//! What the server itself reported over the run (its `/metrics`, see
//! [`crate::server_metrics`]): the requests it was computing and those waiting in
//! its queue on the left axis, its KV cache's use on the right (0–100%), each
//! preemption marked where the counter grew. The levels are shaded and time runs
//! as in the tokens/s chart ([`super::over_time`]), on the same axis, so a queue
//! or a full cache lines up with the throughput it came with. Hooks:
//! `chart-server` (`data-samples`: the samples drawn), its lines' `data-series`
//! (`running`, `waiting`, `kv`), `server-preemption` (`data-n`).

use super::{
    figure, legend_row, nice_top,
    over_time::{OverTime, TimeFrame, HEIGHT},
    say, Look, Svg,
};
use crate::{
    error::Lang,
    report::RunDocument,
    server_metrics::{ServerMetrics, ServerSample},
};

/// One line: its hook, colour class, name, and how it is read from a sample.
struct Line {
    key: &'static str,
    class: &'static str,
    label: (&'static str, &'static str),
    read: fn(&ServerSample) -> Option<f64>,
}

/// The requests the server had: on the left axis.
const REQUESTS: [Line; 2] = [
    Line {
        key: "running",
        class: "series s1",
        label: ("running", "运行中"),
        read: |s| s.running,
    },
    Line {
        key: "waiting",
        class: "series s2",
        label: ("waiting", "排队"),
        read: |s| s.waiting,
    },
];

/// The KV cache's use: on the right axis.
const KV: Line = Line {
    key: "kv",
    class: "series s3 dashed",
    label: ("KV cache %", "KV 缓存 %"),
    read: |s| s.kv_pct,
};

/// The chart of a finished run whose server's metrics were read. `None` without
/// samples within the run's measured time, or without records to place them by.
// Long: one SVG drawn top to bottom: the shared time frame, four series, legend.
pub fn server(document: &RunDocument, look: Look) -> Option<String> {
    let metrics: &ServerMetrics = document.environment.server_metrics.as_ref()?;
    let over = OverTime::frame_of(document)?;
    let frame = over.frame(look, HEIGHT);
    let samples: Vec<(f64, &ServerSample)> = metrics
        .samples
        .iter()
        .filter_map(|s| Some((frame.at_s(s.at_us)?, s)))
        .collect();
    let drawn = |line: &Line| samples.iter().any(|(_, s)| (line.read)(s).is_some());
    let requests: Vec<&Line> = REQUESTS.iter().filter(|l| drawn(l)).collect();
    let kv = drawn(&KV).then_some(&KV);
    if requests.is_empty() && kv.is_none() {
        return None;
    }
    let lang = look.lang;
    let pick = |(en, zh): (&'static str, &'static str)| say(lang, en, zh);
    let most = samples
        .iter()
        .flat_map(|(_, s)| requests.iter().filter_map(|l| (l.read)(s)))
        .fold(0.0, f64::max);
    let (top_requests, step_requests) = nice_top(most.max(1.0));
    let y_requests = |v: f64| frame.bottom - v / top_requests * (frame.bottom - frame.top);
    let y_pct = |v: f64| frame.bottom - v.clamp(0.0, 100.0) / 100.0 * (frame.bottom - frame.top);

    let title = say(
        lang,
        "What the server reported over the run (its /metrics)",
        "运行过程中服务端报告的状态（其 /metrics）",
    );
    let mut svg = Svg::default();
    svg.raw(&look.open_svg(
        "chart-server",
        &format!(r#" data-samples="{}""#, samples.len()),
        HEIGHT,
        title,
    ));
    svg.text("chart-title", (0.0, 16.0), "start", title);
    frame.draw_spans(&mut svg, lang);
    for k in 0..=(top_requests / step_requests).round() as usize {
        let v = k as f64 * step_requests;
        svg.line(
            "grid",
            (frame.left, y_requests(v)),
            (frame.right, y_requests(v)),
        );
        svg.text(
            "tick",
            (frame.left - 8.0, y_requests(v) + 4.0),
            "end",
            &figure(v),
        );
    }
    if kv.is_some() {
        for pct in [0.0, 50.0, 100.0] {
            svg.text(
                "tick",
                (frame.right + 4.0, y_pct(pct) + 4.0),
                "start",
                &format!("{pct:.0}%"),
            );
        }
    }
    frame.draw_axis(&mut svg, lang);
    svg.text(
        "axis-unit",
        (frame.left - 8.0, frame.top - 10.0),
        "end",
        say(lang, "requests", "请求数"),
    );
    let shown: Vec<&Line> = requests.iter().copied().chain(kv).collect();
    legend_row(
        &mut svg,
        frame.left,
        frame.right,
        shown.iter().map(|l| (l.class, pick(l.label).to_owned())),
    );
    draw_preemptions(&mut svg, &frame, &samples, lang);
    for line in shown {
        let y = |v: f64| {
            if line.key == KV.key {
                y_pct(v)
            } else {
                y_requests(v)
            }
        };
        let points: Vec<(f64, f64)> = samples
            .iter()
            .filter_map(|(at_s, s)| Some((frame.x(*at_s), y((line.read)(s)?))))
            .collect();
        svg.raw(&format!(r#"<g data-series="{}">"#, line.key));
        svg.polyline(line.class, &points);
        svg.raw("</g>");
    }
    svg.raw("</svg>");
    Some(svg.finish())
}

/// A mark where the preemption counter grew from one sample to the next, with how
/// many were preempted in its tooltip.
fn draw_preemptions(
    svg: &mut Svg,
    frame: &TimeFrame,
    samples: &[(f64, &ServerSample)],
    lang: Lang,
) {
    for pair in samples.windows(2) {
        let [(_, before), (at_s, after)] = pair else {
            continue;
        };
        let (Some(before), Some(after)) = (before.preemptions, after.preemptions) else {
            continue;
        };
        let n = after - before;
        if n <= 0.0 {
            continue;
        }
        let x = frame.x(*at_s);
        let tooltip = match lang {
            Lang::En => format!("{n:.0} preempted by {at_s:.1} s"),
            Lang::Zh => format!("{at_s:.1} 秒前抢占了 {n:.0} 个请求"),
        };
        svg.raw(&format!(
            r#"<g class="preemption" data-testid="server-preemption" data-n="{n:.0}"><title>{}</title>"#,
            super::escape(&tooltip)
        ));
        svg.line("limit", (x, frame.top), (x, frame.bottom));
        svg.raw("</g>");
    }
}
