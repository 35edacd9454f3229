//! The export buttons: the run document (JSON), the levels and the requests as CSV,
//! and a Markdown and a self-contained HTML report (charts inline) in the page's
//! language. Every export is made from the run
//! document, which never holds the key.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    render::{levels_csv, markdown, requests_csv},
    schema::{Lang, RunDocument, Said},
};

use crate::{
    files::{download, download_parts},
    language::{w, Words},
    pieces::run_link,
};

/// What each export button writes: the run document, or a file made from it.
#[derive(Clone, Copy, Debug)]
enum Export {
    /// Written in slices on the page (see [`json_in_slices`]).
    Json,
    Made(Made),
}

/// The files made from the document by the `exports` piece.
#[derive(Clone, Copy, Debug)]
enum Made {
    LevelsCsv,
    RequestsCsv,
    Markdown,
    Html,
}

split_off! { exports:
    /// The file that `export` makes of `document`. The reports and their templates
    /// are rarely needed: a split build fetches their code on the first export.
    fn render(made: Made, document: Arc<RunDocument>, lang: Lang) -> String {
        match made {
            Made::LevelsCsv => levels_csv(&document),
            Made::RequestsCsv => requests_csv(&document),
            Made::Markdown => markdown(&document, lang),
            Made::Html => document.html(lang),
        }
    }
}

/// Records a slice of the JSON export writes: tens of milliseconds of work for
/// records of a hundred tokens each, on this project's 2-core machines.
const RECORDS_PER_SLICE: usize = 250;

/// The run document's JSON (`RunDocument::to_json`'s text), written
/// [`RECORDS_PER_SLICE`] records at a time with the browser let in between, as
/// JavaScript strings: a run of ten thousand requests never holds the page.
async fn json_in_slices(document: &RunDocument) -> js_sys::Array {
    let parts = js_sys::Array::new();
    for part in document.json_parts(RECORDS_PER_SLICE, true) {
        parts.push(&wasm_bindgen::JsValue::from_str(&part));
        crate::yield_to_browser().await;
    }
    parts
}

#[component]
pub fn Exports(document: Arc<RunDocument>, lang: RwSignal<Lang>) -> impl IntoView {
    // Each button renders its file when clicked, from the one shared document.
    let problem = RwSignal::new(None::<Said>);
    let shared = document.clone();
    let button = move |testid: &'static str,
                       text: Words,
                       suffix: &'static str,
                       mime: &'static str,
                       export: Export| {
        let document = document.clone();
        view! {
            <button data-testid=testid on:click=move |_| {
                let name = format!("tokenmeter-{}{suffix}", document.run_id);
                let (document, lang) = (document.clone(), lang.get_untracked());
                leptos::task::spawn_local(async move {
                    let made = match export {
                        Export::Json => {
                            download_parts(&name, mime, &json_in_slices(&document).await);
                            problem.try_set(None);
                            return;
                        }
                        Export::Made(made) => made,
                    };
                    match render(made, document, lang).await {
                        Ok(file) => {
                            problem.try_set(None);
                            download(&name, mime, &file);
                        }
                        Err(missing) => {
                            problem.try_set(Some(missing.said()));
                        }
                    }
                });
            }>
                {move || text.text(lang.get())}
            </button>
        }
    };
    view! {
        <div class="actions">
            {button("export-json", w("Export JSON", "导出 JSON"), ".json", "application/json", Export::Json)}
            {button("export-csv", w("Levels CSV", "各档 CSV"), "-levels.csv", "text/csv", Export::Made(Made::LevelsCsv))}
            {button("export-requests-csv", w("Requests CSV", "请求 CSV"), "-requests.csv", "text/csv", Export::Made(Made::RequestsCsv))}
            {button("export-md", w("Markdown", "Markdown"), ".md", "text/markdown", Export::Made(Made::Markdown))}
            {button("export-html", w("HTML report", "HTML 报告"), ".html", "text/html", Export::Made(Made::Html))}
            <ShareRun document=shared lang=lang/>
            {move || problem.get().map(|p| view! { <p class="field-error" data-testid="export-error">{p.text(lang.get()).to_owned()}</p> })}
        </div>
    }
}

/// "Share as a link": the run's figures, verdict and notes in the link's
/// fragment (never the records, the key or the prompts), shown with its length,
/// and copied where the browser allows; a run too large for a link says so.
/// Hooks: `export-share-link`, `shared-run-url` (`data-chars`), `shared-run-error`.
#[component]
fn ShareRun(document: Arc<RunDocument>, lang: RwSignal<Lang>) -> impl IntoView {
    let made = RwSignal::new(None::<Result<String, Said>>);
    let on_share = move |_| {
        let document = document.clone();
        let page = web_sys::window()
            .and_then(|w| w.location().href().ok())
            .map(|href| href.split('#').next().unwrap_or_default().to_owned())
            .unwrap_or_default();
        leptos::task::spawn_local(async move {
            let link = match run_link(document, page).await {
                Ok(link) => link,
                Err(missing) => Err(missing.said()),
            };
            if let (Ok(link), Some(window)) = (&link, web_sys::window()) {
                let copied = window.navigator().clipboard().write_text(link);
                // A refusal (no permission, no focus) is fine: the link is shown too.
                let _ = wasm_bindgen_futures::JsFuture::from(copied).await;
            }
            made.try_set(Some(link));
        });
    };
    view! {
        <button data-testid="export-share-link" on:click=on_share>
            {move || w("Share as a link", "分享为链接").text(lang.get())}
        </button>
        {move || made.get().map(|made| match made {
            Ok(link) => {
                let chars = link.len();
                view! {
                    <div class="share">
                        <input class="share-url" data-testid="shared-run-url" data-chars=chars readonly prop:value=link/>
                        <p class="field-note">{move || {
                            let kib = chars.div_ceil(1024);
                            if lang.get() == Lang::Zh {
                                format!("链接长 {kib} KiB，包含各档数据、结论和说明，不含逐请求记录、提示词和密钥；这些内容都在链接的 # 之后，浏览器从不把它发送给服务器。")
                            } else {
                                format!("The link is {kib} KiB: the levels' figures, the verdict and the notes, without the per-request records, the prompts or the key, all after the link's #, which browsers never send to a server.")
                            }
                        }}</p>
                    </div>
                }.into_any()
            }
            Err(why) => view! {
                <p class="field-error" data-testid="shared-run-error">{move || why.text(lang.get()).to_owned()}</p>
            }.into_any(),
        })}
    }
}
