//! The run in progress, saved as it goes, so that the next page load keeps it
//! should this one end first (the page closed or reloaded, the browser gone).
//!
//! A save writes only what came since the last one, so that it costs the page the
//! same at the run's ten-thousandth request as at its tenth: the run's start goes
//! to local storage when it starts ([`begin`]); every few seconds the records
//! finished since the last save go to IndexedDB as one chunk ([`save_chunk`],
//! written in the background); and as the page is left, the records no chunk holds
//! yet go to local storage ([`save_tail`], written at once, where an IndexedDB
//! write might not finish). The next load reads them back ([`take`]): the start,
//! the chunks in order and the tail, each record once.

use std::{cell::RefCell, rc::Rc};

use serde::Serialize;
use tokenmeter_core::schema::{Plan, RequestRecord};

use crate::{
    pieces::{self, read_in_progress, records_json, RunStart},
    store::{Chunk, InProgressStore},
};

/// The run's start: `{run_id, started_at, plan}` as JSON.
const START_STORAGE: &str = "tokenmeter.in-progress.start";
/// The records no chunk held when the page was left: a JSON array.
const TAIL_STORAGE: &str = "tokenmeter.in-progress.tail";
/// Where an earlier tokenmeter saved the whole run in progress as a document.
pub const LEGACY_STORAGE: &str = "tokenmeter.in-progress.v1";

/// The largest tail written as the page is left, as JSON (local storage gives a
/// page about 5 MB in all): a few seconds of records, far less at any rate a
/// browser sends. A larger one is not written; the chunks before it are kept.
const TAIL_CAP_BYTES: usize = 2 << 20;

/// How far the run in progress is saved.
#[derive(Default)]
pub struct Saved {
    /// Records written in chunks (in the order they came).
    n_saved: usize,
    /// The next chunk's number.
    next_seq: u32,
    /// A chunk is being written.
    writing: bool,
}

/// A new run starts: its start saved, whatever an earlier run left forgotten.
pub fn begin(run_id: &str, started_at: &str, plan: &Plan) -> Rc<RefCell<Saved>> {
    #[derive(Serialize)]
    struct Start<'a> {
        run_id: &'a str,
        started_at: &'a str,
        plan: &'a Plan,
    }
    if let Some(storage) = crate::local_storage() {
        let _ = storage.remove_item(TAIL_STORAGE);
        if let Ok(json) = serde_json::to_string(&Start {
            run_id,
            started_at,
            plan,
        }) {
            let _ = storage.set_item(START_STORAGE, &json);
        }
    }
    clear_chunks();
    Rc::new(RefCell::new(Saved {
        next_seq: 1,
        ..Saved::default()
    }))
}

/// Writes the records of run `run_id` that no chunk holds yet as the next chunk,
/// in the background; nothing while the last is still being written (the next
/// save takes both), or when the code that writes records is not here yet.
pub fn save_chunk(saved: &Rc<RefCell<Saved>>, run_id: &str, records: &[RequestRecord]) {
    let (from, seq) = {
        let saved = saved.borrow();
        if saved.writing || saved.n_saved >= records.len() {
            return;
        }
        (saved.n_saved, saved.next_seq)
    };
    let Some(json) = pieces::at_once(records_json(&records[from..])) else {
        return;
    };
    let upto = records.len();
    saved.borrow_mut().writing = true;
    let chunk = Chunk {
        seq,
        run_id: run_id.to_owned(),
        json,
    };
    let saved = Rc::clone(saved);
    wasm_bindgen_futures::spawn_local(async move {
        let written = match InProgressStore::open().await {
            Ok(store) => store.put(&chunk).await.is_ok(),
            Err(_) => false,
        };
        let mut saved = saved.borrow_mut();
        saved.writing = false;
        if written {
            saved.n_saved = upto;
            saved.next_seq += 1;
        }
    });
}

/// The page is being left: the records no chunk holds yet, written at once.
pub fn save_tail(saved: &RefCell<Saved>, records: &[RequestRecord]) {
    let from = saved.borrow().n_saved.min(records.len());
    let Some(json) = pieces::at_once(records_json(&records[from..])) else {
        return;
    };
    if let Some(storage) = crate::local_storage() {
        if json.len() <= TAIL_CAP_BYTES {
            let _ = storage.set_item(TAIL_STORAGE, &json);
        }
    }
}

/// The run ended here: nothing of it needs saving any more.
pub fn end() {
    if let Some(storage) = crate::local_storage() {
        let _ = storage.remove_item(START_STORAGE);
        let _ = storage.remove_item(TAIL_STORAGE);
        let _ = storage.remove_item(LEGACY_STORAGE);
    }
    clear_chunks();
}

fn clear_chunks() {
    wasm_bindgen_futures::spawn_local(async {
        if let Ok(store) = InProgressStore::open().await {
            let _ = store.clear().await;
        }
    });
}

/// The run a previous page load saved as it went, if any: its start and its
/// records, each once. It is taken out of storage (a run started meanwhile saves
/// itself there), or left there when the code that reads it could not be fetched.
pub async fn take() -> Option<(RunStart, Vec<RequestRecord>)> {
    let storage = crate::local_storage()?;
    let start = storage.get_item(START_STORAGE).ok().flatten()?;
    let tail = storage.get_item(TAIL_STORAGE).ok().flatten();
    let store = InProgressStore::open().await.ok();
    let chunks = match &store {
        Some(store) => store.chunks().await.unwrap_or_default(),
        None => Vec::new(),
    };
    let chunks: Vec<(String, String)> = chunks.into_iter().map(|c| (c.run_id, c.json)).collect();
    let read = read_in_progress(start.clone(), chunks, tail).await.ok()?;
    // Read: gone from storage, unless a run started meanwhile saved its own.
    if storage.get_item(START_STORAGE).ok().flatten().as_deref() == Some(&start) {
        let _ = storage.remove_item(START_STORAGE);
        let _ = storage.remove_item(TAIL_STORAGE);
        if let Some(store) = store {
            let _ = store.clear().await;
        }
    }
    read
}
