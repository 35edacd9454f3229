//! A run against kept runs from history (the first chosen is the baseline): what
//! changed, in words, against each; p95 TTFT and output tokens/s of all drawn over
//! each other; and level by level against the baseline, TTFT p50/p95, TPOT p50 and
//! output tokens/s, each with its change in percent.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    chart::{self, Look},
    column,
    compare::differences,
    schema::{Lang, RunDocument, Summary},
    LEVEL,
};

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

/// The columns compared, by their ids in the core's table.
const COMPARED: [&str; 4] = ["ttft_p50", "ttft_p95", "tpot_p50", "output_tps"];

/// One row of the comparison: this run's level against the baseline's same level.
fn compare_row(now: &Summary, then: Option<&Summary>) -> impl IntoView {
    let cells = COMPARED
        .iter()
        .map(|&id| {
            let c = column(id);
            view! { <td data-col=id>{delta(c.number(now), then.and_then(|t| c.number(t)))}</td> }
        })
        .collect_view();
    view! {
        <tr data-testid="compare-row" data-concurrency=now.concurrency.unwrap_or_default()>
            <td>{now.concurrency.unwrap_or_default()}</td>
            {cells}
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
                        <th>{LEVEL.text(lang)}</th>
                        {COMPARED
                            .iter()
                            .map(|&id| {
                                let c = column(id);
                                view! { <th title=c.definition.text(lang)>{format!("{} (Δ)", c.header_with_unit(lang))}</th> }
                            })
                            .collect_view()}
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            </div>
        </div>
    }
}
