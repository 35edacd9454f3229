//! The run at a glance: headline cards (the level a user would run at), and the
//! latency and throughput charts against load. The charts are the core's SVG
//! (`tokenmeter_core::chart`), shown as it is drawn: the HTML export embeds the
//! same markup. Every figure and drawing comes from the core.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    chart::{self, Look},
    schema::{Lang, RunDocument},
    Headline, HeadlineLevel,
};

use crate::screen::Screen;

fn ms(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| "–".into(), |v| format!("{v:.0}"))
}

fn level(c: Option<u32>) -> String {
    c.map_or_else(|| "–".into(), |c| c.to_string())
}

/// The cards above the table: TTFT, TPOT, output tokens/s and errors at the safe
/// level (or the last one), then the knee and the safe concurrency.
#[component]
pub fn HeadlineCards(document: Arc<RunDocument>, lang: RwSignal<Lang>) -> impl IntoView {
    let headline = Headline::of(&document)?;
    let zh = move || lang.get() == Lang::Zh;
    let at = move || {
        let c = headline.concurrency;
        match (headline.which, zh()) {
            (HeadlineLevel::Safe, false) => format!("At concurrency {c}, the safe level:"),
            (HeadlineLevel::Safe, true) => format!("在安全并发 {c} 下："),
            (HeadlineLevel::Last, false) => {
                format!("At concurrency {c}, the last level (no level was safe):")
            }
            (HeadlineLevel::Last, true) => format!("在最后一档并发 {c} 下（没有安全的并发）："),
        }
    };
    let card = move |testid: &'static str,
                     en: &'static str,
                     zh_label: &'static str,
                     value: String,
                     unit: &'static str| {
        view! {
            <div class="card" data-testid=testid>
                <span class="card-label">{move || if zh() { zh_label } else { en }}</span>
                <span class="card-value">{value}<span class="card-unit">{unit}</span></span>
            </div>
        }
    };
    let error_class = if headline.error_rate > 0.0 {
        "card-row bad"
    } else {
        "card-row"
    };
    Some(view! {
        <section class="headline" data-testid="headline" data-concurrency=headline.concurrency>
            <p class="headline-at muted small">{at}</p>
            <div class=error_class>
                {card("headline-ttft", "TTFT p50 / p95", "TTFT p50 / p95", format!("{} / {}", ms(headline.ttft_p50_ms), ms(headline.ttft_p95_ms)), " ms")}
                {card("headline-tpot", "TPOT p50", "TPOT p50", headline.tpot_p50_ms.filter(|v| v.is_finite()).map_or_else(|| "–".into(), |v| format!("{v:.1}")), " ms")}
                {card("headline-output-tps", "output tokens/s", "输出 token/秒", format!("{:.0}", headline.output_tps), "")}
                {card("headline-errors", "errors", "错误率", format!("{:.1}", headline.error_rate * 100.0), " %")}
                {card("headline-knee", "knee", "拐点", level(headline.knee), "")}
                {card("headline-safe", "safe concurrency", "安全并发", level(headline.safe_concurrency), "")}
            </div>
        </section>
    })
}

/// Latency and throughput against load, redrawn when the language changes.
#[component]
pub fn LoadCharts(document: Arc<RunDocument>, lang: RwSignal<Lang>) -> impl IntoView {
    let screen = Screen::current();
    let drawn = move |draw: fn(&RunDocument, Look) -> Option<String>| {
        let document = document.clone();
        move || {
            draw(&document, screen.look(lang.get())).map(|svg| {
                view! {
                    <figure class="chart-figure" inner_html=svg></figure>
                }
            })
        }
    };
    view! {
        <div class="charts" data-testid="charts">
            {drawn(chart::latency)}
            {drawn(chart::throughput)}
            <p class="muted small">
                {move || if lang.get() == Lang::Zh {
                    "悬停或用 Tab 键聚焦某个点可看到数值；同样的数字在下面的表格里。空心点所在的档位受浏览器或测量引擎影响，未计入结论。"
                } else {
                    "Hover a point, or reach it with Tab, for its value; the same figures are in the table below. Hollow points are levels the browser or the engine shaped, left out of the verdict."
                }}
            </p>
        </div>
    }
}

/// The run in detail: output tokens/s over time, how TTFT and ITL are spread per
/// level, and one level's requests on a timeline (the level chosen here).
#[component]
pub fn DetailCharts(document: Arc<RunDocument>, lang: RwSignal<Lang>) -> impl IntoView {
    let levels: Vec<u32> = document
        .levels
        .iter()
        .filter_map(|l| l.concurrency)
        .collect();
    let first = Headline::of(&document)
        .map(|h| h.concurrency)
        .or_else(|| levels.first().copied())
        .unwrap_or_default();
    let chosen = RwSignal::new(first);
    let screen = Screen::current();
    let over_time = {
        let document = document.clone();
        move || chart::over_time(&document, screen.look(lang.get()))
    };
    let server = {
        let document = document.clone();
        move || chart::server(&document, screen.look(lang.get()))
    };
    let cdf = {
        let document = document.clone();
        move || chart::cdf(&document, screen.look(lang.get()))
    };
    let by_input = {
        let document = document.clone();
        move || chart::ttft_by_input(&document, screen.look(lang.get()))
    };
    let timeline = {
        let document = document.clone();
        move || chart::timeline(&document, chosen.get(), screen.look(lang.get()))
    };
    let figure = |svg: Option<String>| {
        svg.map(|svg| view! { <figure class="chart-figure" inner_html=svg></figure> })
    };
    let has_records = !document.records.is_empty();
    view! {
        <div class="charts detail-charts" data-testid="detail-charts">
            {move || figure(over_time())}
            {move || figure(server())}
            {move || figure(cdf())}
            {move || figure(by_input())}
            {(has_records && !levels.is_empty()).then(|| view! {
                <label class="timeline-choice">
                    {move || if lang.get() == Lang::Zh { "时间线显示的档位：" } else { "Timeline of the level at concurrency " }}
                    <select
                        data-testid="timeline-level"
                        on:change=move |ev| {
                            if let Ok(c) = event_target_value(&ev).parse() {
                                chosen.set(c);
                            }
                        }
                    >
                        {levels.iter().map(|&c| view! {
                            <option value=c.to_string() selected=move || chosen.get() == c>{c.to_string()}</option>
                        }).collect_view()}
                    </select>
                </label>
            })}
            {move || figure(timeline())}
        </div>
    }
}
