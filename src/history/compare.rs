//! A run against kept runs from history (the first chosen is the baseline): what
//! changed, in words, against each; p95 TTFT and output tokens/s of all drawn over
//! each other; and level by level against the baseline, TTFT p50/p95, TPOT p50 and
//! output tokens/s, each with its change in percent.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    chart::{self, Look},
    compare::differences,
    error::Lang,
    report::RunDocument,
    stats::Distribution,
    summary::Summary,
};

/// A figure, `None` where there is none or another tool did not report it (NaN).
fn p(d: Option<Distribution>, pick: fn(&Distribution) -> f64) -> Option<f64> {
    d.map(|d| pick(&d)).filter(|v| v.is_finite())
}

/// `now (Δ%)` against a baseline value.
fn delta(now: Option<f64>, then: Option<f64>) -> String {
    match (now, then) {
        (Some(now), Some(then)) if then.abs() > f64::EPSILON => {
            format!("{now:.1} ({:+.0}%)", (now / then - 1.0) * 100.0)
        }
        (Some(now), _) => format!("{now:.1}"),
        _ => "–".into(),
    }
}

/// One row of the comparison: this run's level against the baseline's same level.
fn compare_row(now: &Summary, then: Option<&Summary>) -> impl IntoView {
    let then_ttft50 = then.and_then(|t| p(t.ttft_ms, |d| d.p50));
    let then_ttft95 = then.and_then(|t| p(t.ttft_ms, |d| d.p95));
    let then_tpot50 = then.and_then(|t| p(t.tpot_ms, |d| d.p50));
    let then_tps = then.map(|t| t.output_tps);
    view! {
        <tr data-testid="compare-row" data-concurrency=now.concurrency.unwrap_or_default()>
            <td>{now.concurrency.unwrap_or_default()}</td>
            <td data-col="ttft_p50">{delta(p(now.ttft_ms, |d| d.p50), then_ttft50)}</td>
            <td data-col="ttft_p95">{delta(p(now.ttft_ms, |d| d.p95), then_ttft95)}</td>
            <td data-col="tpot_p50">{delta(p(now.tpot_ms, |d| d.p50), then_tpot50)}</td>
            <td data-col="output_tps">{delta(Some(now.output_tps), then_tps)}</td>
        </tr>
    }
}

/// This run against kept runs from history, the baseline first (at least one).
pub fn comparison(now: &RunDocument, kept: &[Arc<RunDocument>], look: Look) -> impl IntoView {
    let lang = look.lang;
    let then = &kept[0];
    let said = differences(now, then, lang);
    let drawn: Vec<&RunDocument> = kept.iter().map(|k| k.as_ref()).collect();
    let overlay = chart::compare(now, &drawn, look);
    let title = match lang {
        Lang::En => format!("Against the baseline, {}", chart::run_name(then)),
        Lang::Zh => format!("与基线（{}）相比", chart::run_name(then)),
    };
    // The other kept runs: what changed against each, in words.
    let others = kept
        .iter()
        .enumerate()
        .skip(1)
        .take(chart::MAX_COMPARED - 1)
        .map(|(rank, other)| {
            let name = chart::compared_name(other, rank, lang);
            let heading = if lang == Lang::Zh { format!("与 {name} 相比") } else { format!("Against {name}") };
            view! {
                <div class="compare-other" data-testid="compare-said-other" data-baseline=other.run_id.clone()>
                    <h4>{heading}</h4>
                    <ul class="compare-said">
                        {differences(now, other, lang).into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
                    </ul>
                </div>
            }
        })
        .collect_view();
    let rows = now
        .levels
        .iter()
        .map(|level| {
            let same = then
                .levels
                .iter()
                .find(|l| l.concurrency == level.concurrency);
            compare_row(level, same)
        })
        .collect_view();
    view! {
        <div class="comparison" data-testid="comparison" data-baseline=then.run_id.clone()>
            <h3>{title}</h3>
            <ul class="compare-said" data-testid="compare-said">
                {said.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
            </ul>
            {others}
            {overlay.map(|svg| view! { <figure class="chart-figure" inner_html=svg></figure> })}
            <div class="table-scroll">
            <table class="grid">
                <thead>
                    <tr>
                        <th>"concurrency"</th>
                        <th>"TTFT p50 ms (Δ)"</th>
                        <th>"TTFT p95 ms (Δ)"</th>
                        <th>"TPOT p50 ms (Δ)"</th>
                        <th>"output tok/s (Δ)"</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            </div>
        </div>
    }
}
