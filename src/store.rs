//! Where kept runs live: one IndexedDB record per run, so that a run is written
//! (or deleted) alone, and a run of many thousand requests fits (local storage gives
//! a page about 5 MB in all; IndexedDB a share of the disk).
//!
//! Each record is `{run_id, kept_at, json}`: the document as JSON, a string or a
//! `Blob` of it (parsed by
//! `RunDocument::from_json`, which reads every earlier schema) and when it was kept
//! (ms since the epoch), which orders the list. Runs kept by tokenmeter before it
//! used IndexedDB, in local storage, move here on the first load.
//!
//! The run in progress is saved as it goes in a database of its own
//! ([`InProgressStore`]): its start, then its records a chunk per save, so that a
//! save writes what came since the last one, never the whole run again.

use std::{cell::RefCell, rc::Rc};

use futures_channel::oneshot;
use tokenmeter_core::{said, schema::Said};
use wasm_bindgen::{closure::Closure, JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Event, EventTarget, IdbDatabase, IdbObjectStoreParameters, IdbRequest, IdbTransaction,
    IdbTransactionMode,
};

/// Kept runs: one database, one store, keyed by `run_id`.
const RUNS_DB: Db = Db {
    name: "tokenmeter",
    version: 1,
    store: "runs",
    key: "run_id",
};
/// The run in progress, saved as it goes (see `run`): a database of its own, so
/// that adding it upgraded nothing another tab may hold open. Rows `{seq, run_id,
/// json}`: `seq` 0 is the run's start, 1 and up its records in the order they
/// came, a chunk per save. One run at a time.
const IN_PROGRESS_DB: Db = Db {
    name: "tokenmeter-in-progress",
    version: 1,
    store: "chunks",
    key: "seq",
};
/// Where runs were kept before (a JSON array of documents, newest first).
const LEGACY_STORAGE: &str = "tokenmeter.history.v1";

/// One kept run as stored.
pub struct StoredRun {
    pub kept_at: f64,
    pub json: String,
}

/// The open database of kept runs.
#[derive(Clone)]
pub struct RunStore(Open);

impl RunStore {
    /// Opens (creating on first use) the database.
    pub async fn open() -> Result<RunStore, StoreError> {
        RUNS_DB.open().await.map(RunStore)
    }

    /// Every kept run, in no particular order.
    pub async fn all(&self) -> Result<Vec<StoredRun>, StoreError> {
        let mut runs = Vec::new();
        for row in self.0.rows().await?.iter() {
            let Some(json) = field(&row, "json") else {
                continue;
            };
            let json = match json.dyn_into::<web_sys::Blob>() {
                // Read off the page's thread.
                Ok(blob) => JsFuture::from(blob.text())
                    .await
                    .ok()
                    .and_then(|t| t.as_string()),
                Err(json) => json.as_string(),
            };
            let Some(json) = json else {
                continue;
            };
            let kept_at = field(&row, "kept_at")
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0);
            runs.push(StoredRun { kept_at, json });
        }
        Ok(runs)
    }

    /// Writes one run (replacing one with the same id); done when it is durable.
    /// `json` is the document's JSON: a JavaScript string, or a `Blob` of it.
    pub async fn put(&self, run_id: &str, kept_at: f64, json: &JsValue) -> Result<(), StoreError> {
        let put = |json: JsValue| async move {
            let row = row(&[
                ("run_id", JsValue::from_str(run_id)),
                ("kept_at", JsValue::from_f64(kept_at)),
                ("json", json),
            ])?;
            self.0.write(|store| store.put(&row).map(drop)).await
        };
        match (put(json.clone()).await, json.dyn_ref::<web_sys::Blob>()) {
            // Some browsers store no Blob (WebKit in a private or automated
            // session): the text, then.
            (Err(refused), Some(blob)) => {
                let text = JsFuture::from(blob.text())
                    .await
                    .map_err(|_| refused.clone())?;
                put(text).await.map_err(|_| refused)
            }
            (outcome, _) => outcome,
        }
    }

    /// Deletes runs by id.
    pub async fn delete(&self, run_ids: &[String]) -> Result<(), StoreError> {
        self.0
            .write(|store| {
                run_ids
                    .iter()
                    .try_for_each(|id| store.delete(&JsValue::from_str(id)).map(drop))
            })
            .await
    }
}

/// One saved piece of the run in progress.
pub struct Chunk {
    /// 0: the run's start; 1 and up: its records, in order.
    pub seq: u32,
    pub run_id: String,
    pub json: String,
}

/// The open database of the run in progress.
#[derive(Clone)]
pub struct InProgressStore(Open);

impl InProgressStore {
    pub async fn open() -> Result<InProgressStore, StoreError> {
        IN_PROGRESS_DB.open().await.map(InProgressStore)
    }

    /// Every chunk saved, by `seq`.
    pub async fn chunks(&self) -> Result<Vec<Chunk>, StoreError> {
        let mut chunks: Vec<Chunk> = self
            .0
            .rows()
            .await?
            .iter()
            .filter_map(|row| {
                Some(Chunk {
                    seq: field(&row, "seq")?.as_f64()? as u32,
                    run_id: field(&row, "run_id")?.as_string()?,
                    json: field(&row, "json")?.as_string()?,
                })
            })
            .collect();
        chunks.sort_by_key(|c| c.seq);
        Ok(chunks)
    }

    /// Saves one chunk; done when it is durable.
    pub async fn put(&self, chunk: &Chunk) -> Result<(), StoreError> {
        let row = row(&[
            ("seq", JsValue::from_f64(f64::from(chunk.seq))),
            ("run_id", JsValue::from_str(&chunk.run_id)),
            ("json", JsValue::from_str(&chunk.json)),
        ])?;
        self.0.write(|store| store.put(&row).map(drop)).await
    }

    /// Forgets the run in progress (it ended, or was kept).
    pub async fn clear(&self) -> Result<(), StoreError> {
        self.0.write(|store| store.clear().map(drop)).await
    }
}

/// A database of one object store.
struct Db {
    name: &'static str,
    version: u32,
    store: &'static str,
    /// The rows' key path.
    key: &'static str,
}

/// An open [`Db`].
#[derive(Clone)]
struct Open {
    db: IdbDatabase,
    store: &'static str,
}

impl Db {
    /// Opens the database, creating its store on first use.
    async fn open(&self) -> Result<Open, StoreError> {
        let factory = web_sys::window()
            .and_then(|w| w.indexed_db().ok().flatten())
            .ok_or(StoreError::NoIndexedDb)?;
        let request = factory
            .open_with_u32(self.name, self.version)
            .map_err(js_text)?;
        let (store, key) = (self.store, self.key);
        let on_upgrade = Closure::<dyn FnMut(Event)>::new({
            let request = request.clone();
            move |_| {
                let Ok(db) = request.result() else { return };
                let db: IdbDatabase = db.unchecked_into();
                if !db.object_store_names().contains(store) {
                    let params = IdbObjectStoreParameters::new();
                    params.set_key_path(&JsValue::from_str(key));
                    let _ = db.create_object_store_with_optional_parameters(store, &params);
                }
            }
        });
        request.set_onupgradeneeded(Some(on_upgrade.as_ref().unchecked_ref()));
        let opened = settled(&request, "success", &["error", "blocked"]).await;
        request.set_onupgradeneeded(None);
        drop(on_upgrade);
        if !opened {
            return Err(request_error(&request));
        }
        let db: IdbDatabase = request.result().map_err(js_text)?.unchecked_into();
        Ok(Open { db, store })
    }
}

impl Open {
    /// Every row, in key order.
    async fn rows(&self) -> Result<js_sys::Array, StoreError> {
        let store = self
            .db
            .transaction_with_str(self.store)
            .and_then(|tx| tx.object_store(self.store))
            .map_err(js_text)?;
        let request = store.get_all().map_err(js_text)?;
        if !settled(&request, "success", &["error"]).await {
            return Err(request_error(&request));
        }
        Ok(request.result().map_err(js_text)?.unchecked_into())
    }

    /// One read-write transaction, awaited to its end: a full disk shows as the
    /// transaction's abort (`QuotaExceededError`), not as the request's.
    async fn write(
        &self,
        body: impl FnOnce(&web_sys::IdbObjectStore) -> Result<(), JsValue>,
    ) -> Result<(), StoreError> {
        let tx = self
            .db
            .transaction_with_str_and_mode(self.store, IdbTransactionMode::Readwrite)
            .map_err(js_text)?;
        let store = tx.object_store(self.store).map_err(js_text)?;
        if let Err(err) = body(&store) {
            let _ = tx.abort();
            return Err(js_text(err));
        }
        if settled(&tx, "complete", &["abort", "error"]).await {
            Ok(())
        } else {
            Err(transaction_error(&tx))
        }
    }
}

/// A row of `(field, value)`s.
fn row(fields: &[(&str, JsValue)]) -> Result<js_sys::Object, StoreError> {
    let row = js_sys::Object::new();
    for (key, value) in fields {
        js_sys::Reflect::set(&row, &(*key).into(), value).map_err(js_text)?;
    }
    Ok(row)
}

fn field(row: &JsValue, key: &str) -> Option<JsValue> {
    js_sys::Reflect::get(row, &key.into()).ok()
}

/// Runs kept in local storage by an earlier tokenmeter, as JSON documents, newest
/// first; `forget_legacy` removes them once they are stored anew.
pub fn legacy_runs() -> Vec<String> {
    crate::local_storage()
        .and_then(|s| s.get_item(LEGACY_STORAGE).ok().flatten())
        .and_then(|json| serde_json::from_str::<Vec<serde_json::Value>>(&json).ok())
        .map(|values| values.iter().map(ToString::to_string).collect())
        .unwrap_or_default()
}

pub fn forget_legacy() {
    if let Some(storage) = crate::local_storage() {
        let _ = storage.remove_item(LEGACY_STORAGE);
    }
}

/// Waits for `target` to fire `success` (true) or one of `failures` (false).
async fn settled(target: &EventTarget, success: &str, failures: &[&str]) -> bool {
    let (tell, told) = oneshot::channel::<bool>();
    let tell = Rc::new(RefCell::new(Some(tell)));
    let listener = |outcome: bool| {
        let tell = tell.clone();
        Closure::<dyn FnMut(Event)>::new(move |_: Event| {
            if let Some(tell) = tell.borrow_mut().take() {
                let _ = tell.send(outcome);
            }
        })
    };
    let on_success = listener(true);
    let on_failure = listener(false);
    let _ = target.add_event_listener_with_callback(success, on_success.as_ref().unchecked_ref());
    for name in failures {
        let _ = target.add_event_listener_with_callback(name, on_failure.as_ref().unchecked_ref());
    }
    let outcome = told.await.unwrap_or(false);
    let _ =
        target.remove_event_listener_with_callback(success, on_success.as_ref().unchecked_ref());
    for name in failures {
        let _ =
            target.remove_event_listener_with_callback(name, on_failure.as_ref().unchecked_ref());
    }
    outcome
}

/// Why storage failed: a full disk and a refusal are told apart, so the page can
/// say what to do about each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The browser gives the page no IndexedDB.
    NoIndexedDb,
    /// The browser refused IndexedDB and said nothing more (a private window may).
    Refused,
    /// A write was aborted and the browser said nothing more.
    Aborted,
    /// The disk, or the share of it the browser gives the page, is full
    /// (`QuotaExceededError`).
    Full,
    /// What the browser raised otherwise, in its own words (a `DOMException`'s
    /// name and message).
    Browser(String),
}

impl StoreError {
    /// What went wrong, in both languages (the browser's own words quoted as they
    /// are).
    pub fn said(&self) -> Said {
        match self {
            StoreError::NoIndexedDb => said!(
                "this browser gives the page no IndexedDB",
                "这个浏览器不向页面提供 IndexedDB"
            ),
            StoreError::Refused => said!(
                "the browser refused IndexedDB (a private window may)",
                "浏览器拒绝了 IndexedDB（隐私窗口可能如此）"
            ),
            StoreError::Aborted => said!("the write was aborted", "写入被中止"),
            StoreError::Full => said!(
                "the disk space the browser gives this page is full: delete older runs or free disk space",
                "浏览器给本页面的磁盘空间已满：请删除较早的记录或释放磁盘空间"
            ),
            StoreError::Browser(what) => said!("{what}", "{what}"),
        }
    }

    /// A `DOMException` by its name and message.
    fn of_dom(name: String, message: String) -> StoreError {
        if name == "QuotaExceededError" {
            StoreError::Full
        } else {
            StoreError::Browser(format!("{name}: {message}"))
        }
    }
}

fn request_error(request: &IdbRequest) -> StoreError {
    match request.error() {
        Ok(Some(err)) => StoreError::of_dom(err.name(), err.message()),
        _ => StoreError::Refused,
    }
}

fn transaction_error(tx: &IdbTransaction) -> StoreError {
    match tx.error() {
        Some(err) => StoreError::of_dom(err.name(), err.message()),
        None => StoreError::Aborted,
    }
}

/// A thrown JavaScript value (a `DOMException`'s name and message, else what
/// `describe_js_error` makes of it).
fn js_text(err: JsValue) -> StoreError {
    match err.dyn_ref::<web_sys::DomException>() {
        Some(dom) => StoreError::of_dom(dom.name(), dom.message()),
        None => StoreError::Browser(crate::describe_js_error(&err)),
    }
}
