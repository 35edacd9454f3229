//! The export buttons: the run document (JSON), the levels and the requests as CSV,
//! and a Markdown and a self-contained HTML report (charts inline) in the page's
//! language. Every export is made from the run
//! document, which never holds the key.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{error::Lang, report::RunDocument};

use crate::files::download;

#[component]
pub fn Exports(document: Arc<RunDocument>, lang: RwSignal<Lang>) -> impl IntoView {
    // Each button renders its file when clicked, from the one shared document.
    let button = move |testid: &'static str,
                       text: &'static str,
                       suffix: &'static str,
                       mime: &'static str,
                       render: fn(&RunDocument, Lang) -> String| {
        let document = document.clone();
        view! {
            <button data-testid=testid on:click=move |_| {
                let name = format!("tokenmeter-{}{suffix}", document.run_id);
                download(&name, mime, &render(&document, lang.get_untracked()));
            }>
                {text}
            </button>
        }
    };
    view! {
        <div class="actions">
            {button("export-json", "Export JSON", ".json", "application/json", |d, _| d.to_json())}
            {button("export-csv", "Levels CSV", "-levels.csv", "text/csv", |d, _| d.levels_csv())}
            {button("export-requests-csv", "Requests CSV", "-requests.csv", "text/csv", |d, _| d.requests_csv())}
            {button("export-md", "Markdown", ".md", "text/markdown", RunDocument::markdown)}
            {button("export-html", "HTML report", ".html", "text/html", RunDocument::html)}
        </div>
    }
}
