//! Run history: every finished or cancelled run is kept in this browser, so the
//! next run can be compared with it; exported documents import back.
//!
//! - this module: [`History`], the kept runs and the baseline (a run id), and
//!   their storage;
//! - [`panel`]: the list, with view, compare, delete and import;
//! - [`compare`]: a run against the baseline, level by level.
//!
//! Runs are stored in local storage as run documents without the per-token arrival
//! times (the figures, the verdict and every request's timeline stay), so that many
//! runs fit in the browser's few megabytes; the full document is the JSON export.
//! When storage is full, the oldest runs go first.

mod compare;
mod panel;

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::report::RunDocument;

pub use compare::comparison;
pub use panel::HistoryPanel;

const HISTORY_STORAGE: &str = "tokenmeter.history.v1";
/// The most runs kept.
const MAX_RUNS: usize = 50;

/// The kept runs, newest first, and the one the shown run is compared with.
#[derive(Clone, Copy)]
pub struct History {
    pub runs: RwSignal<Vec<Arc<RunDocument>>>,
    /// The run id of the baseline, when one is chosen.
    pub baseline: RwSignal<Option<String>>,
}

impl History {
    /// The runs kept in this browser.
    pub fn load() -> History {
        History {
            runs: RwSignal::new(load()),
            baseline: RwSignal::new(None),
        }
    }

    /// Keeps a run (replacing one with the same id) and stores the list.
    pub fn keep(&self, document: &RunDocument) {
        let kept = Arc::new(compact(document));
        self.runs.update(|runs| {
            runs.retain(|r| r.run_id != document.run_id);
            runs.insert(0, kept);
            runs.truncate(MAX_RUNS);
            store(runs);
        });
    }

    /// Removes a run (and the baseline, if it was the one) and stores the list.
    pub fn remove(&self, run_id: &str) {
        self.runs.update(|runs| {
            runs.retain(|r| r.run_id != run_id);
            store(runs);
        });
        if self.is_baseline(run_id) {
            self.baseline.set(None);
        }
    }

    /// Makes a run the baseline, or stops comparing with it if it was.
    pub fn toggle_baseline(&self, run_id: &str) {
        self.baseline.update(|baseline| {
            *baseline = if baseline.as_deref() == Some(run_id) {
                None
            } else {
                Some(run_id.to_owned())
            };
        });
    }

    pub fn is_baseline(&self, run_id: &str) -> bool {
        self.baseline.with(|b| b.as_deref() == Some(run_id))
    }

    /// The baseline's document.
    pub fn baseline_document(&self) -> Option<Arc<RunDocument>> {
        let id = self.baseline.get()?;
        self.runs
            .with(|runs| runs.iter().find(|r| r.run_id == id).cloned())
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// The kept runs, newest first. A damaged store reads as empty rather than failing.
fn load() -> Vec<Arc<RunDocument>> {
    storage()
        .and_then(|s| s.get_item(HISTORY_STORAGE).ok().flatten())
        .and_then(|json| serde_json::from_str::<Vec<serde_json::Value>>(&json).ok())
        .map(|values| {
            values
                .into_iter()
                .filter_map(|v| RunDocument::from_json(&v.to_string()).ok())
                .map(Arc::new)
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

/// Writes the list, dropping the oldest runs until it fits.
fn store(runs: &mut Vec<Arc<RunDocument>>) {
    let Some(storage) = storage() else {
        return;
    };
    while !runs.is_empty() {
        let documents: Vec<&RunDocument> = runs.iter().map(Arc::as_ref).collect();
        let json = serde_json::to_string(&documents).expect("documents serialise");
        if storage.set_item(HISTORY_STORAGE, &json).is_ok() {
            return;
        }
        runs.pop();
    }
    let _ = storage.remove_item(HISTORY_STORAGE);
}
