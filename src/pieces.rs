//! The lazily loaded pieces of a split build (see `split_off!` in `lib.rs`): which
//! there are, when each is fetched ahead of its use, and how a fetched one is used
//! at once ([`at_once`], [`split_view`]). The page's modules depend on this one,
//! never on each other for a piece.
//!
//! | piece | its code | fetched |
//! |---|---|---|
//! | `engine` | `engine/host.rs`: the engine, in the worker | when the worker starts |
//! | `live` | `results/mod.rs`: the live view | when the first run starts ([`when_run_starts`]) |
//! | `finished` | `results/mod.rs`: a finished run's view | when a run starts, after the others ([`when_run_starts`]), and before one is shown ([`ShowWhenReady`]) |
//! | `keep` | here: a run as history stores it (in slices: [`start_writing`], [`write_slice`]), an unfinished run's document, and its records saved as it goes ([`records_json`]) | when a run starts ([`when_run_starts`]), or on the first store |
//! | `read` | here: the engine's messages, the kept runs and an interrupted run read ([`read_records`]) | when a worker starts ([`read_message`]), or when the page finds kept runs |
//! | `plans` | `config/mod.rs`: the article's `config.json`, a plan file or a shared link read | on the first import, or when the page opens with a link |
//! | `prompt_files` | `config/prompt_file.rs`: a prompt file read and hashed | when the first prompt file is chosen |
//! | `exports` | `results/export.rs`: the files a run exports to | on the first export |
//! | `imports` | `history/panel.rs`: other tools' results read | on the first import |
//! | `locust` | `config/locust.rs`: the plan as a locustfile | on the first Locust export |
//! | `share` | here: a finished run as a link, and a link's run; `app.rs`: the callout of a page opened with one | on the first share, or when the page opens with a run's link |
//!
//! A view's piece is declared where its code is (the split moves the function's
//! body and all it alone reaches); the `keep` and `read` pieces serve `run`,
//! `worker` and `history`, so they are declared here, once.
//!
//! Reading a run document (its every field's deserializer, the largest code of the
//! core's schema) is never needed by a first visit: nothing is kept yet and no run
//! has started. The `read` piece holds every path to it on the page, so the main
//! module carries none.

use std::{future::Future, sync::Arc};

use futures_util::{future::LocalBoxFuture, FutureExt};
use leptos::{prelude::*, wasm_split::SplitLoaderError};
use tokenmeter_core::{
    said,
    schema::{
        Environment, Interruption, Plan, RequestRecord, RunCondition, RunDocument, RunStatus, Said,
    },
    share, JsonParts,
};

use crate::{protocol::FromWorker, PieceMissing};

/// A run that did not finish, as far as it went: what its document is built from.
pub struct Interrupted {
    pub run_id: String,
    pub started_at: String,
    pub plan: Plan,
    pub records: Vec<RequestRecord>,
    /// Why it did not finish.
    pub cause: Interruption,
}

split_off! { keep, preload fetch_interrupted_document:
    /// The document of a run that did not finish (its statistics, verdict and
    /// conditions, as the engine builds a finished one's), measured in this
    /// browser. Fetched when a run starts, so that saving the run as it goes
    /// builds its document at once.
    pub fn interrupted_document(run: Interrupted) -> RunDocument {
        let environment = measured_here(run.cause, &run.records);
        RunDocument::build(
            run.run_id,
            run.started_at,
            RunStatus::Cancelled,
            run.plan,
            environment,
            run.records,
        )
    }
}

/// Where an interrupted run was measured (this browser, this page's origin), and
/// why it ended: what its document says of its environment.
fn measured_here(cause: Interruption, records: &[RequestRecord]) -> Environment {
    let get =
        |object: &wasm_bindgen::JsValue, key: &str| js_sys::Reflect::get(object, &key.into()).ok();
    let global = js_sys::global();
    Environment {
        user_agent: get(&global, "navigator")
            .and_then(|n| get(&n, "userAgent"))
            .and_then(|v| v.as_string()),
        page_origin: get(&global, "location")
            .and_then(|l| get(&l, "origin"))
            .and_then(|v| v.as_string()),
        conditions: vec![RunCondition::Interrupted {
            cause,
            n_records: records.iter().filter(|r| !r.warmup).count() as u64,
        }],
        ..Environment::default()
    }
}

/// A run's stored copy being written a slice at a time ([`start_writing`],
/// [`write_slice`]): history keeps a finished run so, and never holds the page
/// for the whole run's JSON.
pub struct Writing {
    /// The copy (`RunDocument::history_copy`).
    pub kept: Arc<RunDocument>,
    parts: JsonParts<Arc<RunDocument>>,
}

/// Records a slice of a stored copy writes (without their token times, about
/// half a kilobyte each).
const RECORDS_PER_SLICE: usize = 1_000;

split_off! { keep:
    /// The stored copy of `document` within `max_bytes`, to be written slice by
    /// slice.
    pub fn start_writing(document: Arc<RunDocument>, max_bytes: usize) -> Writing {
        let kept = Arc::new(document.history_copy(max_bytes));
        let parts = JsonParts::new(Arc::clone(&kept), RECORDS_PER_SLICE, false);
        Writing { kept, parts }
    }
}

split_off! { keep:
    /// The next slice of the copy's JSON, `None` once it is all written.
    pub fn write_slice(writing: Writing) -> (Writing, Option<String>) {
        let mut writing = writing;
        let part = writing.parts.next();
        (writing, part)
    }
}

split_off! { keep:
    /// The copy without its records, and its JSON: what is stored of a run whose
    /// copy is larger than history keeps.
    pub fn without_records(kept: Arc<RunDocument>) -> (RunDocument, String) {
        kept.history_copy_without_records()
    }
}

split_off! { keep, preload fetch_records_json:
    /// Records as JSON: a chunk of the run in progress, saved as it goes.
    pub fn records_json(records: &[RequestRecord]) -> String {
        serde_json::to_string(&records).expect("records serialise")
    }
}

/// How a run in progress began, as saved (see `in_progress`).
#[derive(serde::Deserialize)]
pub struct RunStart {
    pub run_id: String,
    pub started_at: String,
    pub plan: Plan,
}

split_off! { read:
    /// A run in progress as saved: its `start`, and its records from the `chunks`
    /// (`(run_id, json)` in order; another run's are left over and left out) and
    /// the `tail`, each once (the tail may repeat a chunk written as the page
    /// closed). A chunk that is unreadable (cut short) is left out; `None` when
    /// the start is unreadable.
    pub fn read_in_progress(
        start: String,
        chunks: Vec<(String, String)>,
        tail: Option<String>,
    ) -> Option<(RunStart, Vec<RequestRecord>)> {
        let start: RunStart = serde_json::from_str(&start).ok()?;
        let mut seen = std::collections::HashSet::new();
        let records = chunks
            .iter()
            .filter(|(run_id, _)| *run_id == start.run_id)
            .map(|(_, json)| json)
            .chain(&tail)
            .filter_map(|json| serde_json::from_str::<Vec<RequestRecord>>(json).ok())
            .flatten()
            .filter(|record| seen.insert(record.id))
            .collect();
        Some((start, records))
    }
}

split_off! { read, preload fetch_read_message:
    /// A message of the engine worker read (its JSON; see `worker`), or why it is
    /// unreadable. The first message waits for the piece; the rest find it here.
    pub fn read_message(text: String) -> Result<FromWorker, serde_json::Error> {
        serde_json::from_str(&text)
    }
}

split_off! { read:
    /// Run documents as kept (history's stored runs, an interrupted run), each
    /// `None` where it is unreadable.
    pub fn read_documents(jsons: Vec<String>) -> Vec<Option<RunDocument>> {
        jsons
            .iter()
            .map(|json| RunDocument::from_json(json).ok())
            .collect()
    }
}

split_off! { share:
    /// A link to this page (`page`, without its fragment) that opens `document`
    /// read-only (see `tokenmeter_core::share`), or why it would be too long for
    /// one. Compressing is for the rare share: fetched on the first.
    pub fn run_link(document: Arc<RunDocument>, page: String) -> Result<String, Said> {
        let fragment = share::fragment(&document);
        if fragment.len() > share::MAX_LINK_CHARS {
            let kib = fragment.len().div_ceil(1024);
            let max_kib = share::MAX_LINK_CHARS / 1024;
            return Err(said!(
                "this run's link would be {kib} KiB, more than the {max_kib} KiB a link carries safely: export the run document (JSON) and send the file instead",
                "这个运行结果的链接将有 {kib} KiB，超过了链接能可靠承载的 {max_kib} KiB：请导出运行文档（JSON）并发送文件",
            ));
        }
        Ok(format!("{page}#{fragment}"))
    }
}

split_off! { share:
    /// The run document's JSON a shared run's fragment holds, or why it holds
    /// none; the document is read by the `read` piece, as every kept run is.
    pub fn run_json_of_link(fragment: String) -> Result<String, Said> {
        share::document_json(&fragment)
    }
}

/// What a run needs ready as it starts, fetched one piece after another: the
/// `read` piece, to read the engine's messages; the `keep` piece, so that the run
/// can be saved as it goes ([`at_once`]); then the finished view's code
/// (`finished`), which its end will want. The live view's own piece, which the
/// results area asks for as the run starts, goes first.
///
/// One after another, not together: a piece's fetch is a `fetch` call and an
/// instantiation per module it needs, and together the four need some seventy,
/// which held the page thread for 70–90 ms in one task as the run started (the
/// memory bench's long tasks). A piece at a time makes each a task of its own
/// (and a module two pieces share is fetched once). Nothing waits on the order:
/// the worker's first message waits for `read` however long it takes, the first
/// save comes seconds later, and the run's end waits for `finished`.
pub async fn when_run_starts(finished_view: ShowWhenReady) {
    // The live view's piece, asked for in this same task, goes out alone.
    crate::yield_to_browser().await;
    let _ = fetch_read_message().await;
    let _ = fetch_interrupted_document().await;
    let _ = fetch_records_json().await;
    finished_view().await;
}

/// Fetches what showing a finished run needs: its view's code (a piece of the
/// results area, which `run` does not know; the app hands it in).
pub type ShowWhenReady = fn() -> LocalBoxFuture<'static, ()>;

/// A piece's function called where nothing can wait (the page may be closing, a
/// view must be on the page the moment its status is said): its result when its
/// piece is here, `None` when it is not (yet) or could not be fetched.
///
/// The rule this rests on: once its module is fetched, a piece's function
/// completes on its first poll (it only looks the module up; in an unsplit build
/// it is a plain `async fn` with no await). A function that awaited anything
/// else would break it, so nothing but `split_off!` functions come here.
pub fn at_once<T>(call: impl Future<Output = Result<T, PieceMissing>>) -> Option<T> {
    call.now_or_never().and_then(Result::ok)
}

/// A view whose code is split off (see `split_off!`), built by `build`: at once
/// when its code is here, else `waiting` until `preload` has fetched it, or
/// `missing` when it could not be. Never a pending `Suspend`: what the run's status
/// says is on the page the moment it is said (scripts read the view as soon as the
/// status changes), and a view whose code is here is never a frame late.
pub fn split_view<F>(
    build: impl Fn() -> F + Send + Sync + 'static,
    preload: impl Future<Output = Result<(), SplitLoaderError>> + 'static,
    waiting: impl Fn() -> AnyView + Send + Sync + 'static,
    missing: fn(PieceMissing) -> AnyView,
) -> AnyView
where
    F: Future<Output = Result<AnyView, PieceMissing>>,
{
    if let Some(shown) = at_once(build()) {
        return shown;
    }
    let now = move || at_once(build()).ok_or(PieceMissing);
    let fetched = RwSignal::new(None::<bool>);
    leptos::task::spawn_local_scoped(async move {
        fetched.set(Some(preload.await.is_ok()));
    });
    (move || match fetched.get() {
        None => waiting(),
        Some(true) => now().unwrap_or_else(missing),
        Some(false) => missing(PieceMissing),
    })
    .into_any()
}
