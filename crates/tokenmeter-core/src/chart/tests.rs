use super::*;
use crate::{
    plan::Plan,
    report::{Environment, RunStatus},
    summary::Distortion,
};

/// The ladder of [`tests_support::ladder_records`], with a TTFT SLO of 250 ms,
/// its knee at 4 and safe level at 2.
fn document() -> RunDocument {
    let records = tests_support::ladder_records();
    let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
    plan.slo.ttft_p95_ms = Some(250.0);
    let mut document = RunDocument::build(
        "run".into(),
        "2026-12-03T10:00:00Z".into(),
        RunStatus::Done,
        plan,
        Environment::default(),
        records,
    );
    document.verdict.knee = Some(4);
    document.verdict.safe_concurrency = Some(2);
    document
}

fn count(svg: &str, needle: &str) -> usize {
    svg.matches(needle).count()
}

/// The `data-concurrency` of every element with `testid`, in order.
/// The `y` attribute of each element whose text follows `marker`.
fn ys_after<'a>(svg: &'a str, marker: &str) -> Vec<&'a str> {
    svg.split(marker)
        .skip(1)
        .map(|rest| {
            rest.split(" y=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect()
}

fn concurrencies(svg: &str, testid: &str) -> Vec<u32> {
    svg.split(&format!(r#"data-testid="{testid}""#))
        .skip(1)
        .map(|rest| {
            let start = rest.find(r#"data-concurrency=""#).unwrap() + r#"data-concurrency=""#.len();
            rest[start..start + rest[start..].find('"').unwrap()]
                .parse()
                .unwrap()
        })
        .collect()
}

/// The `cy` of each point of `series`, in level order.
fn heights(svg: &str, series: &str) -> Vec<f64> {
    svg.split(&format!(r#"data-series="{series}""#))
        .skip(1)
        .map(|rest| {
            let start = rest.find(r#" cy=""#).unwrap() + 5;
            rest[start..start + rest[start..].find('"').unwrap()]
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn latency_has_a_point_per_level_and_series_where_there_is_one() {
    let svg = latency(&document(), Lang::En.into()).unwrap();
    assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
    assert!(svg.contains(r#"data-testid="chart-latency""#));
    // Four series (TTFT and TPOT, p50 and p95) over the three levels that had an
    // answer; the failed level has none. No Resource Timing: no "after send".
    assert_eq!(count(&svg, r#"data-testid="chart-point""#), 12);
    assert_eq!(concurrencies(&svg, "chart-point")[..3], [1, 2, 4]);
    assert!(!svg.contains("ttft_after_send"));
    // Higher TTFT is drawn higher (smaller y), and p95 never below p50.
    let p50 = heights(&svg, "ttft_p50");
    assert!(p50[0] > p50[2], "{p50:?}");
    let p95 = heights(&svg, "ttft_p95");
    assert!(p50.iter().zip(&p95).all(|(a, b)| b <= a));
    // The SLO line, and the tooltip with the value and the level.
    assert!(svg.contains("SLO p95 ≤ 250 ms"));
    assert!(
        svg.contains("<title>TTFT p95 · concurrency 4: 300 ms</title>"),
        "{svg}"
    );
    // Markers in both panels, at the verdict's levels.
    assert_eq!(concurrencies(&svg, "knee-marker"), [4, 4]);
    assert_eq!(concurrencies(&svg, "safe-marker"), [2, 2]);
}

#[test]
fn throughput_marks_the_knee_and_counts_every_level() {
    let svg = throughput(&document(), Lang::En.into()).unwrap();
    assert!(svg.contains(r#"data-testid="chart-throughput""#));
    // Output tokens/s and requests/s at every level, the failed one at zero; the
    // plan has no SLO on TPOT, but one on TTFT, so goodput is drawn too.
    assert_eq!(
        concurrencies(&svg, "chart-point"),
        [1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8]
    );
    assert_eq!(concurrencies(&svg, "knee-marker"), [4, 4]);
    let tokens = heights(&svg, "output_tps");
    let bottom = HEIGHT - BOTTOM;
    assert_eq!(tokens[3], bottom, "nothing came out of the failed level");
    assert!(tokens[..3].iter().all(|&y| y < bottom));
}

#[test]
fn charts_speak_chinese() {
    let document = document();
    let svg = latency(&document, Lang::Zh.into()).unwrap();
    assert!(svg.contains("TTFT：首 token 时延"));
    assert!(svg.contains("并发数"));
    assert!(svg.contains("拐点 4"));
    let svg = throughput(&document, Lang::Zh.into()).unwrap();
    assert!(svg.contains("每秒输出 token"));
    assert!(svg.contains("安全 2"));
}

#[test]
fn a_level_left_out_of_the_verdict_is_drawn_hollow_and_says_why() {
    let mut document = document();
    document.levels[2].distorted = Some(Distortion::BrowserQueue {
        protocol: "http/1.1".into(),
        connections: 6,
    });
    let svg = latency(&document, Lang::En.into()).unwrap();
    assert_eq!(
        count(&svg, r#"pt s1 distorted""#),
        2,
        "TTFT and TPOT p50 at 4"
    );
    assert!(svg.contains("(left out of the verdict"));
}

#[test]
fn a_limit_far_above_the_data_is_said_not_drawn() {
    let mut document = document();
    document.plan.slo.ttft_p95_ms = Some(60_000.0);
    let svg = latency(&document, Lang::En.into()).unwrap();
    assert!(!svg.contains(r#"class="limit""#));
    assert!(svg.contains("SLO p95 ≤ 60000 ms (above)"));
}

#[test]
fn a_run_without_answers_has_no_latency_chart() {
    let mut document = document();
    document.levels.retain(|l| l.concurrency == Some(8));
    assert!(latency(&document, Lang::En.into()).is_none());
    assert!(throughput(&document, Lang::En.into()).is_some());
    document.levels.clear();
    assert!(throughput(&document, Lang::En.into()).is_none());
}

#[test]
fn round_tops_and_scales() {
    assert_eq!(nice_top(0.9), (1.0, 0.2));
    assert_eq!(nice_top(512.0), (600.0, 200.0));
    assert_eq!(nice_top(1000.0), (1000.0, 200.0));
    assert_eq!(nice_top(0.0), (1.0, 0.25));
    assert_eq!(nice_top(f64::NAN), (1.0, 0.25));
    // Doubling levels sit evenly on a log scale; close ones on a linear one.
    let x = XScale::new(&[1.0, 2.0, 4.0, 8.0], 0.0, 300.0 + 2.0 * INSET);
    assert!(x.log);
    let at = [x.at(1.0), x.at(2.0), x.at(8.0)].map(|v| (v * 1e6).round() / 1e6);
    assert_eq!(at, [INSET, INSET + 100.0, INSET + 300.0]);
    let x = XScale::new(&[2.0, 3.0], 0.0, 100.0 + 2.0 * INSET);
    assert!(!x.log);
    assert_eq!(x.at(2.5), INSET + 50.0);
    // One level: in the middle.
    assert_eq!(XScale::new(&[4.0], 0.0, 100.0).at(4.0), 50.0);
    assert_eq!(figure(2.5), "2.50");
    assert_eq!(figure(12.34), "12.3");
    assert_eq!(figure(1234.4), "1234");
}

#[test]
fn the_timeline_has_a_bar_per_request_split_into_phases() {
    let document = document();
    let svg = timeline(&document, 4, Lang::En.into()).unwrap();
    assert!(svg.contains(r#"data-testid="chart-timeline" data-concurrency="4""#));
    assert_eq!(count(&svg, r#"data-testid="timeline-bar""#), 4);
    assert_eq!(count(&svg, r#"data-kind="ok""#), 4);
    // No browser timing in these records: waiting for the first token, then decoding.
    assert_eq!(count(&svg, r#"class="bar prefill""#), 4);
    assert_eq!(count(&svg, r#"class="bar decode""#), 4);
    assert_eq!(count(&svg, r#"class="bar wait""#), 0);
    assert!(svg.contains("first token after 300.0 ms"), "{svg}");
    // Failures are one bar, named by their kind.
    let svg = timeline(&document, 8, Lang::En.into()).unwrap();
    assert_eq!(count(&svg, r#"data-kind="server_error""#), 4);
    assert!(svg.contains("Server error (5xx) · HTTP 503"));
    assert!(timeline(&document, 16, Lang::En.into()).is_none());
}

#[test]
fn a_long_level_draws_its_first_thousand_requests_and_says_so() {
    let mut document = document();
    let template = document.records[0].clone();
    document.records = (0..1_500)
        .map(|i| {
            let mut r = template.clone();
            r.id = i;
            r
        })
        .collect();
    let svg = timeline(&document, 1, Lang::En.into()).unwrap();
    assert_eq!(
        count(&svg, r#"data-testid="timeline-bar""#),
        timeline::MAX_BARS
    );
    assert!(svg.contains("the first 1000 of 1500 requests"));
}

#[test]
fn the_cdf_has_a_curve_per_level_and_metric() {
    let document = document();
    let svg = cdf(&document, Lang::En.into()).unwrap();
    // TTFT and ITL at the three levels that answered.
    assert_eq!(concurrencies(&svg, "cdf-curve"), [1, 2, 4, 1, 2, 4]);
    assert!(svg.contains("concurrency 4: 4 samples, median 300 ms, p99 300 ms"));
    assert!(svg.contains(r#"data-metric="itl""#));
    // Kept without per-token times (as history keeps runs): TTFT only.
    let mut kept = document.clone();
    kept.records
        .iter_mut()
        .for_each(|r| r.token_times_us.clear());
    let svg = cdf(&kept, Lang::En.into()).unwrap();
    assert!(!svg.contains(r#"data-metric="itl""#));
    kept.records.clear();
    assert!(cdf(&kept, Lang::Zh.into()).is_none());
}

#[test]
fn a_curve_is_at_most_two_hundred_quantiles() {
    let samples: Vec<f64> = (1..=10_000).map(f64::from).collect();
    let points = cdf::curve(&samples);
    assert_eq!(points.len(), 200);
    assert_eq!(points[0], (50.0, 0.005));
    assert_eq!(points[199], (10_000.0, 1.0));
    assert_eq!(cdf::curve(&[7.0]), [(7.0, 1.0)]);
}

#[test]
fn tokens_over_time_add_up_with_or_without_per_token_times() {
    let document = document();
    let svg = over_time(&document, Lang::En.into()).unwrap();
    assert!(svg.contains(r#"data-testid="chart-over-time""#));
    assert_eq!(concurrencies(&svg, "over-time-level"), [1, 2, 4, 8]);
    let total: u64 = document
        .records
        .iter()
        .filter(|r| r.is_ok())
        .filter_map(|r| r.n_out)
        .sum();
    let sum = |o: &OverTime| o.bins().1.iter().sum::<f64>();
    let timed = OverTime::of(&document).unwrap();
    assert_eq!(timed.bins().0, 1_000_000);
    assert!((sum(&timed) - total as f64).abs() < 1e-9);
    // Kept without per-token times (history): spread, the same total.
    let mut kept = document.clone();
    kept.records
        .iter_mut()
        .for_each(|r| r.token_times_us.clear());
    let spread = OverTime::of(&kept).unwrap();
    assert!((sum(&spread) - total as f64).abs() < 1e-6);
    assert_eq!(spread.bins().1.len(), timed.bins().1.len());
}

#[test]
fn a_long_run_merges_bins_and_loses_no_token() {
    let document = document();
    let mut live = OverTime::live();
    assert!(
        live.draw(Lang::En.into()).is_none(),
        "nothing before the first token"
    );
    let mut late = document.records[0].clone();
    // An hour into the run: 3,600 one-second bins would be too many.
    let shift = 3_600_000_000;
    late.wanted_us += shift;
    late.sent_us += shift;
    late.end_us += shift;
    late.first_token_us = late.first_token_us.map(|t| t + shift);
    late.last_token_us = late.last_token_us.map(|t| t + shift);
    late.token_times_us.iter_mut().for_each(|t| *t += shift);
    for r in document.records.iter().chain([&late]) {
        live.add(r);
    }
    let (bin_us, bins) = live.bins();
    assert_eq!(bin_us, 4_000_000);
    assert!(bins.len() <= over_time::MAX_BINS);
    let total: u64 = document
        .records
        .iter()
        .chain([&late])
        .filter(|r| r.is_ok())
        .filter_map(|r| r.n_out)
        .sum();
    assert!((bins.iter().sum::<f64>() - total as f64).abs() < 1e-9);
    // Live, the last bins wait for the requests that may still add to them.
    let svg = live.draw(Lang::En.into()).unwrap();
    assert!(svg.contains("seconds since the run started"));
    let drawn: usize = svg
        .split(r#"data-bins=""#)
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(drawn < bins.len(), "{drawn} of {}", bins.len());
    let finished = OverTime::of(&document).unwrap();
    let svg = finished.draw(Lang::En.into()).unwrap();
    assert!(svg.contains(&format!(r#"data-bins="{}""#, finished.bins().1.len())));
}

#[test]
fn the_live_chart_has_every_level_on_its_axis_and_points_where_there_are_figures() {
    let point = |concurrency, done: bool| LivePoint {
        concurrency,
        ttft_p50_ms: done.then_some(100.0),
        ttft_p95_ms: done.then_some(150.0),
        output_tps: done.then_some(80.0 * f64::from(concurrency)),
    };
    let svg = live(
        &[point(1, true), point(2, true), point(4, false)],
        Lang::En.into(),
    )
    .unwrap();
    assert!(svg.contains(r#"data-testid="chart-live""#));
    assert_eq!(concurrencies(&svg, "chart-point"), [1, 2, 1, 2, 1, 2]);
    assert!(
        svg.contains(r#"text-anchor="middle">4</text>"#),
        "level 4 is on the axis already"
    );
    assert!(
        live(&[point(0, true)], Lang::En.into()).is_none(),
        "open loop: no concurrency axis"
    );
}

#[test]
fn the_run_end_cuts_the_last_bin_without_a_false_drop() {
    // One request streaming a token every 100 ms for 2.5 s: 10 tokens/s throughout.
    let mut document = document();
    let mut r = tests_support::record(1, 1, 100, 100);
    let start = r.first_token_us.unwrap();
    r.token_times_us = (0..25).map(|i| start + i * 100_000).collect();
    r.n_out = Some(25);
    r.last_token_us = r.token_times_us.last().copied();
    r.wanted_us = start;
    r.end_us = start + 2_500_000;
    document.records = vec![r];
    let svg = over_time(&document, Lang::En.into()).unwrap();
    let line = svg
        .split(r#"<polyline class="series s1" points=""#)
        .nth(1)
        .unwrap();
    let heights: std::collections::BTreeSet<&str> = line
        .split('"')
        .next()
        .unwrap()
        .split(' ')
        .map(|p| p.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(heights.len(), 1, "one rate all along: {heights:?}");
}

#[test]
fn the_comparison_overlays_both_runs() {
    let now = document();
    let mut then = document();
    then.levels.retain(|l| l.concurrency != Some(4));
    let svg = compare(&now, &[&then], Lang::En.into()).unwrap();
    assert!(svg.contains(r#"data-testid="compare-chart""#));
    let count_of = |series: &str| count(&svg, &format!(r#"data-series="{series}""#));
    assert_eq!(count_of("ttft_p95_now"), 3);
    assert_eq!(
        count_of("ttft_p95_baseline"),
        2,
        "the baseline had no level 4"
    );
    assert_eq!(count_of("output_tps_now"), 3, "no output at 8: no point");
    assert!(svg.contains("TTFT p95 · baseline"));
    assert_eq!(
        count_of("ttft_p95_baseline2"),
        0,
        "one kept run: one baseline"
    );
    // Two runs' names fit one row: the legend stays where it always was.
    let legends = ys_after(&svg, r#"<text class="legend" x=""#);
    assert_eq!(legends, ["40"; 4], "one row in each panel");
}

#[test]
fn the_comparison_overlays_several_runs_each_in_its_colour() {
    let now = document();
    let mut second = document();
    second.levels.retain(|l| l.concurrency == Some(1));
    second.started_at = "2026-12-01T09:30:12.000Z".into();
    let third = document();
    let fourth = document();
    let svg = compare(
        &now,
        &[&document(), &second, &third, &fourth],
        Lang::En.into(),
    )
    .unwrap();
    let count_of = |series: &str| count(&svg, &format!(r#"data-series="{series}""#));
    assert_eq!(count_of("ttft_p95_now"), 3);
    assert_eq!(count_of("ttft_p95_baseline"), 3);
    assert_eq!(
        count_of("ttft_p95_baseline2"),
        1,
        "the second kept run had level 1 only"
    );
    assert_eq!(count_of("ttft_p95_baseline3"), 3);
    assert!(
        !svg.contains("baseline4"),
        "at most {MAX_COMPARED} kept runs are drawn"
    );
    assert!(
        svg.contains("2026-12-01 09:30"),
        "a kept run is named by when it ran"
    );
    for class in ["s1", "s2 dashed", "s3 dashed", "s4 dashed"] {
        assert!(svg.contains(&format!(r#"class="pt {class}""#)), "{class}");
    }
    assert!(svg.contains("This run against the kept runs"));
    assert_eq!(
        count(&svg, r#"class="legend""#),
        8,
        "every run named in both panels' legends, over two rows"
    );
}

#[test]
fn on_a_narrow_screen_the_panels_stand_one_under_the_other() {
    let document = document();
    let narrow = Look {
        lang: Lang::Zh,
        narrow: true,
    };
    for (wide, tall) in [
        (
            latency(&document, Lang::Zh.into()),
            latency(&document, narrow),
        ),
        (
            throughput(&document, Lang::Zh.into()),
            throughput(&document, narrow),
        ),
        (cdf(&document, Lang::Zh.into()), cdf(&document, narrow)),
    ] {
        let (wide, tall) = (wide.unwrap(), tall.unwrap());
        assert!(wide.contains(r#"class="chart" "#) && wide.contains(r#"viewBox="0 0 960 300""#));
        assert!(!wide.contains("translate("), "wide: side by side");
        assert!(tall.contains(r#"class="chart narrow""#));
        assert!(
            tall.contains(r#"viewBox="0 0 400 600""#),
            "two panels of 300"
        );
        assert_eq!(count(&tall, r#"<g transform="translate(0 300)">"#), 1);
        // The same points and markers, only placed differently.
        for hook in ["chart-point", "knee-marker", "safe-marker", "cdf-curve"] {
            let hook = format!(r#"data-testid="{hook}""#);
            assert_eq!(count(&wide, &hook), count(&tall, &hook), "{hook}");
        }
    }
    // A title wider than a narrow panel keeps its name and the limit.
    let mut slow = document.clone();
    slow.plan.slo.ttft_p95_ms = Some(1000.0);
    let english = Look {
        lang: Lang::En,
        narrow: true,
    };
    let tall = latency(&slow, english).unwrap();
    assert!(tall.contains(">TTFT · SLO p95"), "{tall}");
    assert!(latency(&slow, Lang::En.into())
        .unwrap()
        .contains(">TTFT: time to first token"));
    let (wide, tall) = (
        over_time(&document, Lang::En.into()).unwrap(),
        over_time(
            &document,
            Look {
                lang: Lang::En,
                narrow: true,
            },
        )
        .unwrap(),
    );
    assert!(tall.contains(r#"viewBox="0 0 400 260""#));
    assert_eq!(count(&wide, "<rect"), count(&tall, "<rect"));
}

#[test]
fn on_a_narrow_screen_the_timeline_legend_wraps_above_the_bars() {
    let document = document();
    let wide = timeline(&document, 4, Lang::En.into()).unwrap();
    let tall = timeline(
        &document,
        4,
        Look {
            lang: Lang::En,
            narrow: true,
        },
    )
    .unwrap();
    assert!(wide.contains(r#"class="bar failed key" x="#));
    fn key_rows(svg: &str) -> Vec<&str> {
        let mut ys = ys_after(svg, " key\" x=\"");
        ys.dedup();
        ys
    }
    assert_eq!(key_rows(&wide), ["30"]);
    let rows = key_rows(&tall);
    assert!(rows.len() >= 2, "{rows:?}");
    assert_eq!(rows[1], "46", "16 px a row");
    let first_bar_y = |svg: &str| -> f64 {
        ys_after(svg, r#"data-testid="timeline-bar""#)[0]
            .parse()
            .unwrap()
    };
    assert_eq!(
        first_bar_y(&tall) - first_bar_y(&wide),
        16.0 * (rows.len() - 1) as f64,
        "the bars start below the legend's rows"
    );
    assert_eq!(
        count(&wide, r#"data-testid="timeline-bar""#),
        count(&tall, r#"data-testid="timeline-bar""#)
    );
}

#[test]
fn ttft_against_input_is_drawn_where_lengths_vary_and_only_there() {
    // Level 1: TTFT = 30 ms + 0.1 ms per computed token; level 4 waits 200 ms more.
    let mut records = Vec::new();
    for (concurrency, wait_ms) in [(1u32, 0u64), (4, 200)] {
        for i in 0..12u64 {
            let id = records.len() as u64 + 1;
            let input = 200 + i * 150;
            let mut r = tests_support::record(id, concurrency, 30 + wait_ms + input / 10, 20);
            r.usage.get_or_insert_with(Default::default).prompt_tokens = Some(input);
            records.push(r);
        }
    }
    let plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
    let document = RunDocument::build(
        "run".into(),
        "2026-12-06T10:00:00Z".into(),
        RunStatus::Done,
        plan,
        Environment::default(),
        records,
    );
    let svg = ttft_by_input(&document, Lang::En.into()).unwrap();
    assert!(svg.contains(r#"data-testid="chart-ttft-input""#));
    assert_eq!(concurrencies(&svg, "ttft-input-level"), [1, 4]);
    assert_eq!(count(&svg, r#"data-points="12""#), 2);
    assert_eq!(count(&svg, "<circle class=\"dot"), 24);
    // Both slopes are 100 ms per 1,000 tokens: the waiting level is the same line, higher.
    assert_eq!(count(&svg, r#"data-ms-per-1k="100.000""#), 2, "{svg}");
    assert!(svg.contains("concurrency 4: 12 requests, TTFT +100.0 ms per 1,000 input tokens"));
    let zh = ttft_by_input(&document, Lang::Zh.into()).unwrap();
    assert!(zh.contains("每 1000 个输入 token TTFT 变化 +100.0 毫秒"));

    // One length for all (or a server that never says): no chart.
    assert!(ttft_by_input(&self::document(), Lang::En.into()).is_none());
}

#[test]
fn the_server_s_metrics_are_drawn_on_the_tokens_time_axis() {
    use crate::server_metrics::{Server, ServerMetrics, ServerSample};
    let mut document = document();
    assert_eq!(server(&document, Lang::En.into()), None, "no metrics read");
    let first_us = 10_000_000;
    let sample = |s: u64, running: f64, waiting: f64, kv_pct: f64, preemptions: f64| ServerSample {
        at_us: first_us + s * 1_000_000,
        running: Some(running),
        waiting: Some(waiting),
        kv_pct: Some(kv_pct),
        preemptions: Some(preemptions),
        ..ServerSample::default()
    };
    let mut before = sample(0, 0.0, 0.0, 0.0, 0.0);
    before.at_us = 1_000; // During the warm-up: before the chart's time 0.
    let mut samples = vec![before];
    samples.extend([
        sample(5, 1.0, 0.0, 10.0, 0.0),
        sample(25, 2.0, 0.0, 20.0, 0.0),
        sample(45, 4.0, 2.0, 95.0, 0.0),
        sample(55, 4.0, 3.0, 99.0, 3.0),
        sample(10_000, 0.0, 0.0, 0.0, 3.0), // Long after the run.
    ]);
    document.environment.server_metrics = Some(ServerMetrics {
        url: "http://127.0.0.1:8000/metrics".into(),
        server: Some(Server::Vllm),
        every_ms: 500,
        unreadable: None,
        skipped_at_us: Vec::new(),
        samples,
    });
    let svg = server(&document, Lang::En.into()).unwrap();
    assert!(
        svg.contains(r#"data-testid="chart-server" data-samples="4""#),
        "{svg}"
    );
    for series in ["running", "waiting", "kv"] {
        assert!(
            svg.contains(&format!(r#"data-series="{series}""#)),
            "{series}"
        );
    }
    assert_eq!(
        count(&svg, r#"data-testid="server-preemption" data-n="3""#),
        1
    );
    assert!(svg.contains("KV cache %"));
    // The levels' spans where the tokens/s chart has them: one time axis.
    let spans = |svg: &str| -> Vec<String> {
        svg.split(r#"data-testid="over-time-level""#)
            .skip(1)
            .map(|rest| rest[..rest.find("/>").unwrap()].to_owned())
            .collect()
    };
    let tokens = over_time(&document, Lang::En.into()).unwrap();
    assert_eq!(spans(&svg), spans(&tokens));
    assert_eq!(spans(&svg).len(), 4);
    let zh = server(&document, Lang::Zh.into()).unwrap();
    assert!(zh.contains("服务端报告") && zh.contains("排队"), "{zh}");
    // Samples with nothing drawable (only counters), or none in the run: no chart.
    let metrics = document.environment.server_metrics.as_mut().unwrap();
    for s in &mut metrics.samples {
        (s.running, s.waiting, s.kv_pct) = (None, None, None);
    }
    assert_eq!(server(&document, Lang::En.into()), None);
    document
        .environment
        .server_metrics
        .as_mut()
        .unwrap()
        .samples
        .clear();
    assert_eq!(server(&document, Lang::En.into()), None);
}
