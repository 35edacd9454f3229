//! Run history: every finished or cancelled run is kept in this browser, so the
//! next run can be compared with it; exported documents import back.
//!
//! - this module: [`History`], the kept runs and those the shown run is compared
//!   with (run ids, the baseline first), and the order in which they are written;
//! - [`store`]: IndexedDB, one record per run;
//! - [`panel`]: the list, with view, compare, delete and import;
//! - [`compare`]: a run against the kept runs, in words, in one chart, and level
//!   by level against the baseline.
//!
//! Runs are stored as run documents without the per-token arrival times and answer
//! texts (the figures, the verdict and every request's timeline stay); a run still
//! over 16 MiB loses its per-request records, and says so. The full document is the
//! JSON export. Storage is written one run at a time, in the order the page asked,
//! by one task: a failed write (a full disk) loses only that run's copy in storage,
//! never a run stored before, and the list on the page loses nothing until it is
//! reloaded. The panel says what could not be stored.

mod compare;
mod panel;

use std::sync::Arc;

use futures_channel::mpsc;
use futures_util::StreamExt;
use leptos::prelude::*;
use tokenmeter_core::{
    chart::MAX_COMPARED,
    said,
    schema::{RunDocument, Said},
};
use wasm_bindgen::{closure::Closure, JsCast, JsValue};

use crate::{
    pieces::{read_documents, start_writing, without_records, write_slice},
    PieceMissing,
};

use crate::store::{self, RunStore};
pub use compare::comparison;
pub use panel::HistoryPanel;

/// The most runs kept.
const MAX_RUNS: usize = 50;

/// The largest a run may be in storage, as JSON: beyond it the run is kept without
/// its per-request records (see `RunDocument::for_history`). Every kept run is read
/// into the page when it opens, so this bounds the page's memory too.
const RUN_CAP_BYTES: usize = 16 << 20;

/// A change to storage, applied in order by the storage task.
enum Write {
    /// `json` is a JavaScript string: a large copy, made in slices, never was one
    /// Rust string.
    Put {
        run_id: String,
        json: JsValue,
    },
    Delete(Vec<String>),
}

/// The kept runs, newest first, and the one the shown run is compared with.
#[derive(Clone, Copy)]
pub struct History {
    pub runs: RwSignal<Vec<Arc<RunDocument>>>,
    /// The run ids of the kept runs the shown run is compared with, in the order
    /// chosen: the first is the baseline. At most `chart::MAX_COMPARED`.
    pub compared: RwSignal<Vec<String>>,
    /// What storage could not do, for the panel.
    pub storage_note: RwSignal<Option<Said>>,
    /// True once the stored runs were read (or could not be).
    pub loaded: RwSignal<bool>,
    writes: StoredValue<mpsc::UnboundedSender<Write>>,
    keeps: StoredValue<mpsc::UnboundedSender<Arc<RunDocument>>>,
    /// Runs kept whose stored copy is not yet written (or known unwritable):
    /// leaving the page meanwhile asks first, so a finished run is not lost.
    unstored: StoredValue<u32>,
}

impl History {
    /// The runs kept in this browser: read in the background (`loaded` says when),
    /// while the page already keeps new ones.
    pub fn load() -> History {
        let (writes, pending) = mpsc::unbounded();
        let (keeps, to_keep) = mpsc::unbounded();
        let history = History {
            runs: RwSignal::new(Vec::new()),
            compared: RwSignal::new(Vec::new()),
            storage_note: RwSignal::new(None),
            loaded: RwSignal::new(false),
            writes: StoredValue::new(writes),
            keeps: StoredValue::new(keeps),
            unstored: StoredValue::new(0),
        };
        wasm_bindgen_futures::spawn_local(history.keep_stored(pending));
        wasm_bindgen_futures::spawn_local(history.keep_in_order(to_keep));
        history.ask_before_leaving();
        history
    }

    /// Leaving the page while a kept run's copy is still being written asks first.
    fn ask_before_leaving(&self) {
        let history = *self;
        let on_leave = Closure::<dyn FnMut(web_sys::Event)>::new(move |event: web_sys::Event| {
            if history.unstored.get_value() > 0 {
                event.prevent_default();
                // Older browsers ask only when returnValue is set.
                let _ = js_sys::Reflect::set(&event, &"returnValue".into(), &"".into());
            }
        });
        let _ = leptos::prelude::window()
            .add_event_listener_with_callback("beforeunload", on_leave.as_ref().unchecked_ref());
        // Lives as long as the page.
        on_leave.forget();
    }

    /// One kept run's copy written, or known unwritable.
    fn one_stored(&self) {
        self.unstored.update_value(|n| *n = n.saturating_sub(1));
    }

    /// The storage task: opens the database, moves runs from local storage into it,
    /// reads the kept runs, then applies the page's writes one by one.
    async fn keep_stored(self, mut pending: mpsc::UnboundedReceiver<Write>) {
        let store = match RunStore::open().await {
            Ok(store) => store,
            Err(error) => {
                let Said { en, zh } = error.said();
                self.storage_note.set(Some(said!(
                    "runs cannot be stored in this browser ({en}): they are shown until the page is reloaded; export the ones to keep",
                    "这个浏览器无法存储测试记录（{zh}）：它们只显示到页面重新加载为止；请导出要保留的记录",
                )));
                self.loaded.set(true);
                while let Some(write) = pending.next().await {
                    if let Write::Put { .. } = write {
                        self.one_stored();
                    }
                }
                return;
            }
        };
        self.move_legacy_runs(&store).await;
        match store.all().await {
            Ok(rows) => self.add_stored(rows, &store).await,
            Err(error) => {
                let Said { en, zh } = error.said();
                self.storage_note.set(Some(said!(
                    "the kept runs could not be read ({en}); new runs are still stored",
                    "无法读取已保存的测试记录（{zh}）；新的测试仍会被保存",
                )));
            }
        }
        self.loaded.set(true);
        while let Some(write) = pending.next().await {
            let outcome = match &write {
                Write::Put { run_id, json } => {
                    let outcome = store.put(run_id, js_sys::Date::now(), json).await;
                    self.one_stored();
                    outcome
                }
                Write::Delete(run_ids) => store.delete(run_ids).await,
            };
            // A note stays until the page is reloaded: a later write that works
            // does not store what an earlier one could not.
            if let Err(error) = outcome {
                let Said { en, zh } = error.said();
                self.storage_note.set(Some(match write {
                    Write::Put { .. } => said!(
                        "a run could not be stored ({en}): it is shown until the page is reloaded, and the runs stored before are kept; export it to keep it",
                        "有一次测试无法保存（{zh}）：它只显示到页面重新加载为止，之前保存的记录不受影响；请导出以保留它",
                    ),
                    Write::Delete(_) => said!(
                        "a deleted run could not be removed from storage ({en}): it may come back when the page is reloaded",
                        "已删除的测试无法从存储中移除（{zh}）：页面重新加载后它可能会再出现",
                    ),
                }));
            }
        }
    }

    /// Runs an earlier tokenmeter kept in local storage move into the database (in
    /// their order), and leave local storage once all are there.
    async fn move_legacy_runs(&self, store: &RunStore) {
        let legacy = store::legacy_runs();
        if legacy.is_empty() {
            return;
        }
        let documents = match read_documents(legacy.clone()).await {
            Ok(documents) => documents,
            Err(missing) => {
                self.storage_note.set(Some(missing.said()));
                return;
            }
        };
        let now = js_sys::Date::now();
        let mut moved = true;
        for (age, (json, document)) in legacy.iter().zip(documents).enumerate() {
            let Some(document) = document else {
                continue;
            };
            let json = JsValue::from_str(json);
            if let Err(error) = store.put(&document.run_id, now - age as f64, &json).await {
                let Said { en, zh } = error.said();
                self.storage_note.set(Some(said!(
                    "the runs kept by an earlier version could not be moved ({en}); they stay where they were",
                    "旧版本保存的测试记录无法迁移（{zh}）；它们保留在原处",
                )));
                moved = false;
                break;
            }
        }
        if moved {
            store::forget_legacy();
        }
    }

    /// Stored runs join the list after the ones kept meanwhile, newest first; those
    /// beyond [`MAX_RUNS`] leave storage.
    async fn add_stored(&self, rows: Vec<store::StoredRun>, store: &RunStore) {
        let keys: Vec<f64> = rows.iter().map(|r| -r.kept_at).collect();
        let rows = tokenmeter_core::reorder(rows, &tokenmeter_core::order_by(&keys));
        // A first visit has nothing kept: the readers are not fetched for nothing.
        let jsons: Vec<String> = rows.into_iter().map(|row| row.json).collect();
        let read = if jsons.is_empty() {
            Ok(Vec::new())
        } else {
            read_documents(jsons).await
        };
        let stored: Vec<Arc<RunDocument>> = match read {
            Ok(documents) => documents.into_iter().flatten().map(Arc::new).collect(),
            Err(missing) => {
                self.storage_note.set(Some(missing.said()));
                return;
            }
        };
        let mut dropped = Vec::new();
        self.runs.update(|runs| {
            for document in stored {
                if !runs.iter().any(|r| r.run_id == document.run_id) {
                    runs.push(document);
                }
            }
            dropped = runs
                .iter()
                .skip(MAX_RUNS)
                .map(|r| r.run_id.clone())
                .collect();
            runs.truncate(MAX_RUNS);
        });
        if !dropped.is_empty() {
            let _ = store.delete(&dropped).await;
        }
    }

    /// Keeps a run (replacing one with the same id) and stores it: in the order
    /// asked, once the code that makes its stored copy is here (a split build
    /// fetches it when a run starts, see [`when_run_starts`](crate::pieces::when_run_starts)).
    pub fn keep(&self, document: Arc<RunDocument>) {
        self.unstored.update_value(|n| *n += 1);
        self.keeps.with_value(|keeps| {
            let _ = keeps.unbounded_send(document);
        });
    }

    /// The keeping task: each run's stored copy, in the order they were kept.
    async fn keep_in_order(self, mut keeps: mpsc::UnboundedReceiver<Arc<RunDocument>>) {
        while let Some(document) = keeps.next().await {
            // In the list at once, before the run is shown; its stored copy is
            // written in slices afterwards and takes its place there.
            self.add(Arc::clone(&document));
            match stored_in_slices(document).await {
                Ok((kept, json)) => self.stored(kept, json),
                Err(missing) => {
                    self.one_stored();
                    // Shown, and in the list until the page is reloaded.
                    self.storage_note.set(Some(said!(
                        "a run could not be stored ({missing}): it is shown until the page is reloaded; export it to keep it",
                        "有一次测试无法保存（{missing}）：它只显示到页面重新加载为止；请导出以保留它",
                    )));
                }
            }
        }
    }

    /// A run's stored copy, written: it takes the run's place in the list and goes
    /// to storage, unless the run was deleted meanwhile (then it stays deleted).
    fn stored(&self, kept: Arc<RunDocument>, json: JsValue) {
        let run_id = kept.run_id.clone();
        let mut listed = false;
        self.runs.update(|runs| {
            if let Some(run) = runs.iter_mut().find(|r| r.run_id == run_id) {
                *run = kept;
                listed = true;
            }
        });
        if listed {
            self.write(Write::Put { run_id, json });
        } else {
            self.one_stored();
        }
    }

    /// Adds a run to the list, first (its stored copy follows: [`History::stored`]);
    /// the runs past [`MAX_RUNS`] leave the list and storage.
    fn add(&self, run: Arc<RunDocument>) {
        let run_id = run.run_id.clone();
        let mut dropped = Vec::new();
        self.runs.update(|runs| {
            runs.retain(|r| r.run_id != run_id);
            runs.insert(0, run);
            dropped = runs
                .iter()
                .skip(MAX_RUNS)
                .map(|r| r.run_id.clone())
                .collect();
            runs.truncate(MAX_RUNS);
        });
        if !dropped.is_empty() {
            self.write(Write::Delete(dropped));
        }
    }

    /// Removes a run (and stops comparing with it) from the list and storage.
    pub fn remove(&self, run_id: &str) {
        self.runs.update(|runs| runs.retain(|r| r.run_id != run_id));
        self.write(Write::Delete(vec![run_id.to_owned()]));
        if self.compared_rank(run_id).is_some() {
            self.compared.update(|ids| ids.retain(|id| id != run_id));
        }
    }

    fn write(&self, write: Write) {
        self.writes.with_value(|writes| {
            let _ = writes.unbounded_send(write);
        });
    }

    /// Compares the shown run with a kept one, or stops comparing with it. The
    /// first chosen is the baseline; when `MAX_COMPARED` are chosen, a new one
    /// takes the place of the last.
    pub fn toggle_compared(&self, run_id: &str) {
        self.compared.update(|ids| {
            if let Some(at) = ids.iter().position(|id| id == run_id) {
                ids.remove(at);
            } else {
                if ids.len() >= MAX_COMPARED {
                    ids.pop();
                }
                ids.push(run_id.to_owned());
            }
        });
    }

    /// Where a run stands among the compared ones (0: the baseline), if it is one.
    pub fn compared_rank(&self, run_id: &str) -> Option<usize> {
        self.compared
            .with(|ids| ids.iter().position(|id| id == run_id))
    }

    /// The compared runs' documents, the baseline first.
    pub fn compared_documents(&self) -> Vec<Arc<RunDocument>> {
        let ids = self.compared.get();
        self.runs.with(|runs| {
            ids.iter()
                .filter_map(|id| runs.iter().find(|r| &r.run_id == id).cloned())
                .collect()
        })
    }
}

/// `document`'s stored copy (see `RunDocument::for_history`) and its JSON as a
/// JavaScript string, written a slice at a time with the browser let in between:
/// keeping a run of ten thousand requests never holds the page.
async fn stored_in_slices(
    document: Arc<RunDocument>,
) -> Result<(Arc<RunDocument>, JsValue), PieceMissing> {
    let mut writing = start_writing(document, RUN_CAP_BYTES).await?;
    let parts = js_sys::Array::new();
    let mut n_bytes = 0;
    loop {
        crate::yield_to_browser().await;
        let (next, part) = write_slice(writing).await?;
        writing = next;
        let Some(part) = part else { break };
        n_bytes += part.len();
        if n_bytes > RUN_CAP_BYTES {
            let kept = Arc::clone(&writing.kept);
            drop(writing);
            let (kept, json) = without_records(kept).await?;
            return Ok((Arc::new(kept), JsValue::from_str(&json)));
        }
        parts.push(&JsValue::from_str(&part));
    }
    // A Blob of the parts, not one string of them: storing a string of several
    // megabytes copies it on the page's thread (tens of ms at 10,000 records); a
    // Blob's bytes go to storage off it. (A browser that cannot make one stores
    // the string.)
    let json = web_sys::Blob::new_with_str_sequence(&parts)
        .map(JsValue::from)
        .unwrap_or_else(|_| parts.join("").into());
    Ok((writing.kept, json))
}
