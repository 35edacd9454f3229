//! An A/B run's targets side by side: what differed, in words; their curves over
//! each other; and level by level, each target's p95 TTFT, TPOT and output
//! tokens/s with the better one named (or a tie within the noise). Target A's own
//! results are the rest of the page.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    ab::{self, AbRow},
    chart,
    schema::{Lang, RunDocument},
    LEVEL,
};

fn ms(value: Option<f64>) -> String {
    value.map_or("–".into(), |v| format!("{v:.1}"))
}

#[component]
// Long: the A/B panel's markup.
pub fn AbPanel(document: Arc<RunDocument>, lang: RwSignal<Lang>) -> impl IntoView {
    let n_targets = document.ab.len() + 1;
    let names: Vec<String> = (0..n_targets)
        .map(|i| ab::target_name(&document, i))
        .collect();
    let rows = ab::rows(&document);
    let said = {
        let document = document.clone();
        move || ab::said(&document, lang.get())
    };
    let overlay = {
        let document = document.clone();
        let screen = crate::screen::Screen::current();
        move || chart::ab(&document, screen.look(lang.get()))
    };
    let header = {
        let names = names.clone();
        move || -> Vec<String> {
            let lang = lang.get();
            let ms = lang.pick("ms", "毫秒");
            names
                .iter()
                .flat_map(|name| {
                    [
                        format!("{name}: TTFT p95 {ms}"),
                        format!("{name}: TPOT p50 {ms}"),
                        format!("{name}: tok/s"),
                    ]
                })
                .collect()
        }
    };
    let row_view = {
        let names = names.clone();
        move |row: AbRow| {
            let better = row
                .better
                .map_or_else(|| "tie".to_owned(), |i| i.to_string());
            let (lead, threshold) = (row.lead_pct, row.threshold_pct);
            let winner = row.better.map(|i| names[i].clone());
            let verdict = move || match (&winner, lang.get()) {
                (Some(name), _) => format!("{name} +{lead:.0}%"),
                (None, Lang::En) => format!("tie (within {threshold:.0}%)"),
                (None, Lang::Zh) => format!("持平（差距在 {threshold:.0}% 以内）"),
            };
            let cells = row
                .targets
                .iter()
                .flat_map(|t| match t {
                    Some(t) => [
                        ms(t.ttft_p95_ms),
                        ms(t.tpot_p50_ms),
                        format!("{:.1}", t.output_tps),
                    ],
                    None => ["–".into(), "–".into(), "–".into()],
                })
                .map(|text| view! { <td>{text}</td> })
                .collect_view();
            view! {
                <tr data-testid="ab-row" data-concurrency=row.concurrency data-better=better>
                    <td>{row.concurrency}</td>
                    {cells}
                    <td>{verdict}</td>
                </tr>
            }
        }
    };
    view! {
        <div class="ab" data-testid="ab">
            <h3>{move || if lang.get() == Lang::Zh { "A/B：目标并排对比" } else { "A/B: the targets side by side" }}</h3>
            <ul class="compare-said" data-testid="ab-said">
                {move || said().into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
            </ul>
            {move || overlay().map(|svg| view! { <figure class="chart-figure" inner_html=svg></figure> })}
            <div class="table-scroll">
                <table class="grid" data-testid="ab-table">
                    <thead>
                        <tr>
                            <th>{move || LEVEL.text(lang.get())}</th>
                            {move || header().into_iter().map(|h| view! { <th>{h}</th> }).collect_view()}
                            <th>{move || lang.get().pick("better (output tok/s)", "更好的一方（输出 tok/s）")}</th>
                        </tr>
                    </thead>
                    <tbody>{rows.into_iter().map(row_view).collect_view()}</tbody>
                </table>
            </div>
        </div>
    }
}
