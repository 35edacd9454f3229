//! The export buttons: the run document (JSON), the levels and the requests as CSV,
//! and a Markdown and a self-contained HTML report (charts inline) in the page's
//! language. Every export is made from the run
//! document, which never holds the key.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    error::{Lang, Said},
    render::{levels_csv, markdown, requests_csv},
    report::RunDocument,
};

use crate::{
    files::download,
    language::{w, Words},
};

/// What each export button writes.
#[derive(Clone, Copy, Debug)]
enum Export {
    Json,
    LevelsCsv,
    RequestsCsv,
    Markdown,
    Html,
}

split_off! { exports:
    /// The file that `export` makes of `document`. The reports and their templates
    /// are rarely needed: a split build fetches their code on the first export.
    fn render(export: Export, document: Arc<RunDocument>, lang: Lang) -> String {
        match export {
            Export::Json => document.to_json(),
            Export::LevelsCsv => levels_csv(&document),
            Export::RequestsCsv => requests_csv(&document),
            Export::Markdown => markdown(&document, lang),
            Export::Html => document.html(lang),
        }
    }
}

#[component]
pub fn Exports(document: Arc<RunDocument>, lang: RwSignal<Lang>) -> impl IntoView {
    // Each button renders its file when clicked, from the one shared document.
    let problem = RwSignal::new(None::<Said>);
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
                    match render(export, document, lang).await {
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
            {button("export-csv", w("Levels CSV", "各档 CSV"), "-levels.csv", "text/csv", Export::LevelsCsv)}
            {button("export-requests-csv", w("Requests CSV", "请求 CSV"), "-requests.csv", "text/csv", Export::RequestsCsv)}
            {button("export-md", w("Markdown", "Markdown"), ".md", "text/markdown", Export::Markdown)}
            {button("export-html", w("HTML report", "HTML 报告"), ".html", "text/html", Export::Html)}
            {move || problem.get().map(|p| view! { <p class="field-error" data-testid="export-error">{p.text(lang.get()).to_owned()}</p> })}
        </div>
    }
}
