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
//! runs fit in the browser's few megabytes; a run still over 1 MB loses its
//! per-request records, and says so. The full document is the JSON export. When
//! storage is full, the oldest runs leave storage first, never the newest; and the
//! list on the page loses nothing until it is reloaded. The panel says what did not
//! fit.

mod compare;
mod panel;

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::report::RunDocument;
use wasm_bindgen::JsCast;

pub use compare::comparison;
pub use panel::HistoryPanel;

const HISTORY_STORAGE: &str = "tokenmeter.history.v1";
/// The most runs kept.
const MAX_RUNS: usize = 50;

/// The largest a run may be in storage, as JSON: beyond it the run is kept without
/// its per-request records (see `RunDocument::for_history`). Browsers give a page
/// about 5 MB of local storage.
const RUN_CAP_BYTES: usize = 1 << 20;

/// The kept runs, newest first, and the one the shown run is compared with.
#[derive(Clone, Copy)]
pub struct History {
    pub runs: RwSignal<Vec<Arc<RunDocument>>>,
    /// The run id of the baseline, when one is chosen.
    pub baseline: RwSignal<Option<String>>,
    /// What the last store could not keep, for the panel.
    pub storage_note: RwSignal<Option<String>>,
}

impl History {
    /// The runs kept in this browser.
    pub fn load() -> History {
        History {
            runs: RwSignal::new(load()),
            baseline: RwSignal::new(None),
            storage_note: RwSignal::new(None),
        }
    }

    /// Keeps a run (replacing one with the same id) and stores the list.
    pub fn keep(&self, document: &RunDocument) {
        let kept = Arc::new(document.for_history(RUN_CAP_BYTES));
        self.runs.update(|runs| {
            runs.retain(|r| r.run_id != document.run_id);
            runs.insert(0, kept);
            runs.truncate(MAX_RUNS);
        });
        self.store();
    }

    /// Removes a run (and the baseline, if it was the one) and stores the list.
    pub fn remove(&self, run_id: &str) {
        self.runs.update(|runs| runs.retain(|r| r.run_id != run_id));
        self.store();
        if self.is_baseline(run_id) {
            self.baseline.set(None);
        }
    }

    fn store(&self) {
        let stored = self.runs.with_untracked(|runs| store(runs));
        self.storage_note.set(match stored {
            Stored::All => None,
            Stored::Without(n) => Some(format!(
                "this browser's storage is full: the {n} oldest runs are shown until the page is reloaded, but no longer stored; export the ones to keep"
            )),
            Stored::Unchanged(error) => Some(format!(
                "the newest run could not be stored ({error}): it is shown until the page is reloaded, and the runs stored before are kept; export it to keep it"
            )),
        });
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

/// How a store went, for the history panel.
enum Stored {
    All,
    /// The oldest runs no longer fit and were left out of storage (they stay on
    /// the page until it is reloaded).
    Without(usize),
    /// Not even the newest run fits: storage keeps what it had.
    Unchanged(String),
}

/// Writes the list. When it does not fit, the oldest runs are left out of storage
/// one by one, never the newest; if even that one does not fit, storage keeps what
/// it had. The list in memory is never touched: no kept run vanishes from the page.
fn store(runs: &[Arc<RunDocument>]) -> Stored {
    let Some(storage) = storage() else {
        return Stored::Unchanged("this browser gives the page no local storage".into());
    };
    let mut error = String::new();
    for n in (1..=runs.len()).rev() {
        let documents: Vec<&RunDocument> = runs[..n].iter().map(Arc::as_ref).collect();
        let json = serde_json::to_string(&documents).expect("documents serialise");
        match storage.set_item(HISTORY_STORAGE, &json) {
            Ok(()) if n == runs.len() => return Stored::All,
            Ok(()) => return Stored::Without(runs.len() - n),
            Err(err) => {
                error = err
                    .dyn_ref::<js_sys::Error>()
                    .map(|e| String::from(e.message()))
                    .unwrap_or_else(|| format!("{err:?}"));
            }
        }
    }
    if runs.is_empty() {
        let _ = storage.remove_item(HISTORY_STORAGE);
        return Stored::All;
    }
    Stored::Unchanged(error)
}
