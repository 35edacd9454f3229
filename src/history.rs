//! Run history: every finished or cancelled run is kept in this browser, so the
//! next run can be compared with it; exported documents import back.
//!
//! Runs are stored in local storage as run documents without the per-token arrival
//! times (the figures, the verdict and every request's timeline stay), so that many
//! runs fit in the browser's few megabytes; the full document is the JSON export.
//! When storage is full, the oldest runs go first.

use leptos::prelude::*;
use tokenmeter_core::{report::RunDocument, stats::Distribution, summary::Summary};

use crate::run::RunHandle;

const HISTORY_STORAGE: &str = "tokenmeter.history.v1";
/// The most runs kept.
const MAX_RUNS: usize = 50;

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// The kept runs, newest first. A damaged store reads as empty rather than failing.
pub fn load() -> Vec<RunDocument> {
    storage()
        .and_then(|s| s.get_item(HISTORY_STORAGE).ok().flatten())
        .and_then(|json| serde_json::from_str::<Vec<serde_json::Value>>(&json).ok())
        .map(|values| {
            values
                .into_iter()
                .filter_map(|v| RunDocument::from_json(&v.to_string()).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The document as kept in history: without per-token arrival times.
fn compact(document: &RunDocument) -> RunDocument {
    let mut document = document.clone();
    for record in &mut document.records {
        record.token_times_us = Vec::new();
        record.output_text = None;
    }
    document
}

/// Adds a run (replacing one with the same id) and stores the list; returns it.
pub fn save(runs: &[RunDocument], document: &RunDocument) -> Vec<RunDocument> {
    let mut runs: Vec<RunDocument> = std::iter::once(compact(document))
        .chain(runs.iter().filter(|r| r.run_id != document.run_id).cloned())
        .take(MAX_RUNS)
        .collect();
    store(&mut runs);
    runs
}

/// Removes a run and stores the list; returns it.
pub fn remove(runs: &[RunDocument], run_id: &str) -> Vec<RunDocument> {
    let mut runs: Vec<RunDocument> = runs
        .iter()
        .filter(|r| r.run_id != run_id)
        .cloned()
        .collect();
    store(&mut runs);
    runs
}

/// Writes the list, dropping the oldest runs until it fits.
fn store(runs: &mut Vec<RunDocument>) {
    let Some(storage) = storage() else {
        return;
    };
    while !runs.is_empty() {
        let json = serde_json::to_string(runs).expect("documents serialise");
        if storage.set_item(HISTORY_STORAGE, &json).is_ok() {
            return;
        }
        runs.pop();
    }
    let _ = storage.remove_item(HISTORY_STORAGE);
}

fn p(d: Option<Distribution>, pick: fn(&Distribution) -> f64) -> Option<f64> {
    d.map(|d| pick(&d))
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
#[component]
fn CompareRow(now: Summary, then: Option<Summary>) -> impl IntoView {
    let then_ttft50 = then.as_ref().and_then(|t| p(t.ttft_ms, |d| d.p50));
    let then_ttft95 = then.as_ref().and_then(|t| p(t.ttft_ms, |d| d.p95));
    let then_tpot50 = then.as_ref().and_then(|t| p(t.tpot_ms, |d| d.p50));
    let then_tps = then.as_ref().map(|t| t.output_tps);
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

/// This run against a baseline from history, level by level.
#[component]
pub fn Comparison(now: RunDocument, then: RunDocument) -> impl IntoView {
    let title = format!("Compared with {} ({})", then.started_at, then.plan.model);
    let rows = now
        .levels
        .iter()
        .map(|level| {
            let same = then
                .levels
                .iter()
                .find(|l| l.concurrency == level.concurrency)
                .cloned();
            view! { <CompareRow now=level.clone() then=same/> }
        })
        .collect_view();
    view! {
        <div class="comparison" data-testid="comparison" data-baseline=then.run_id.clone()>
            <h3>{title}</h3>
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
    }
}

/// The list of kept runs, with view, compare, delete, and import.
#[component]
pub fn HistoryPanel(run: RunHandle) -> impl IntoView {
    let import_error = RwSignal::new(None::<String>);
    let import_text = RwSignal::new(String::new());
    let on_import = move |_| match RunDocument::from_json(&import_text.get_untracked()) {
        Ok(document) => {
            run.history
                .set(save(&run.history.get_untracked(), &document));
            import_error.set(None);
            import_text.set(String::new());
        }
        Err(problem) => import_error.set(Some(problem)),
    };
    view! {
        <section class="panel history" data-testid="history" aria-labelledby="history-title">
            <h2 id="history-title">"History"</h2>
            <Show
                when=move || !run.history.get().is_empty()
                fallback=|| view! { <p class="muted">"Finished and cancelled runs are kept here, in this browser, to compare with the next one."</p> }
            >
                <table class="grid history-table">
                    <thead>
                        <tr>
                            <th>"started"</th>
                            <th>"model"</th>
                            <th>"endpoint"</th>
                            <th>"levels"</th>
                            <th>"status"</th>
                            <th>"knee"</th>
                            <th>"safe"</th>
                            <th></th>
                        </tr>
                    </thead>
                    <tbody>
                        <For each=move || run.history.get() key=|doc| doc.run_id.clone() let:doc>
                            <HistoryRow doc=doc run=run/>
                        </For>
                    </tbody>
                </table>
            </Show>
            <details class="import">
                <summary>"Import a run document (JSON)"</summary>
                <textarea
                    data-testid="history-import-text"
                    rows="3"
                    prop:value=import_text
                    on:input=move |ev| import_text.set(event_target_value(&ev))
                ></textarea>
                <button data-testid="history-import" on:click=on_import>"Import"</button>
                {move || import_error.get().map(|e| view! { <p class="field-error" data-testid="history-import-error">{e}</p> })}
            </details>
        </section>
    }
}

#[component]
fn HistoryRow(doc: RunDocument, run: RunHandle) -> impl IntoView {
    let run_id = doc.run_id.clone();
    let levels = doc
        .levels
        .iter()
        .map(|l| l.concurrency.unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let status = match doc.status {
        tokenmeter_core::report::RunStatus::Done => "done",
        tokenmeter_core::report::RunStatus::Cancelled => "cancelled",
    };
    let is_baseline = Signal::derive({
        let run_id = run_id.clone();
        move || run.baseline.get().is_some_and(|b| b.run_id == run_id)
    });
    let view_doc = doc.clone();
    let compare_doc = doc.clone();
    let remove_id = run_id.clone();
    view! {
        <tr data-testid="history-row" data-run-id=run_id.clone() class:baseline=is_baseline>
            <td>{doc.started_at.replace('T', " ").chars().take(19).collect::<String>()}</td>
            <td>{doc.plan.model.clone()}</td>
            <td class="endpoint">{doc.plan.base_url.clone()}</td>
            <td>{levels}</td>
            <td>{status}</td>
            <td>{doc.verdict.knee.map_or("–".into(), |k| k.to_string())}</td>
            <td>{doc.verdict.safe_concurrency.map_or("–".into(), |k| k.to_string())}</td>
            <td class="row-actions">
                <button data-testid="history-view" on:click=move |_| run.document.set(Some(view_doc.clone()))>"View"</button>
                <button data-testid="history-compare" on:click=move |_| {
                    let doc = compare_doc.clone();
                    run.baseline.update(|b| {
                        *b = if b.as_ref().is_some_and(|b| b.run_id == doc.run_id) { None } else { Some(doc) };
                    });
                }>
                    {move || if is_baseline.get() { "Baseline ✓" } else { "Compare" }}
                </button>
                <button data-testid="history-delete" on:click=move |_| {
                    run.history.set(remove(&run.history.get_untracked(), &remove_id));
                }>"Delete"</button>
            </td>
        </tr>
    }
}
