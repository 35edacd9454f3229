//! Which of the results table's columns are shown: the reference article's by
//! default (n_ok, n_fail, TTFT p50/p95, TPOT p50/p95, TPS mean, output tokens/s),
//! the rest by choice, remembered in this browser. The columns themselves (id,
//! header, definition, value) are the core's [`tokenmeter_core::columns`]. Every
//! cell stays in the page (hidden ones are not displayed), so the `data-col` hooks
//! read the same whatever is chosen.

use leptos::prelude::*;
use tokenmeter_core::{page_columns, schema::Lang, Page, TableKinds, COLUMNS};

use crate::language::say;

const COLUMNS_STORAGE: &str = "tokenmeter.columns.v1";

/// Which columns are shown, as chosen in this browser.
#[derive(Clone, Copy)]
/// The names, sorted (a sorted vector rather than a set: the page has no other
/// `BTreeSet`, and each kind of B-tree is compiled into the page's WebAssembly).
pub struct ShownColumns(RwSignal<Vec<&'static str>>);

impl ShownColumns {
    /// The choice kept in this browser, or the article's columns.
    pub fn load() -> ShownColumns {
        let stored: Option<Vec<String>> = crate::local_storage()
            .and_then(|s| s.get_item(COLUMNS_STORAGE).ok().flatten())
            .and_then(|json| serde_json::from_str(&json).ok());
        let mut shown: Vec<&'static str> = Vec::new();
        for column in COLUMNS.iter().filter(|c| match &stored {
            Some(cols) => cols.iter().any(|s| s == c.id),
            None => c.page == Page::Shown,
        }) {
            if let Err(at) = shown.binary_search(&column.id) {
                shown.insert(at, column.id);
            }
        }
        ShownColumns(RwSignal::new(shown))
    }

    pub fn is_shown(&self, col: &str) -> bool {
        self.0.with(|shown| shown.contains(&col))
    }

    fn toggle(&self, col: &'static str) {
        self.0.update(|shown| match shown.binary_search(&col) {
            Ok(at) => {
                shown.remove(at);
            }
            Err(at) => shown.insert(at, col),
        });
        let json = self
            .0
            .with_untracked(|shown| serde_json::to_string(shown).unwrap_or_default());
        if let Some(storage) = crate::local_storage() {
            let _ = storage.set_item(COLUMNS_STORAGE, &json);
        }
    }
}

/// The column chooser: a checkbox per column.
#[component]
pub fn ColumnChooser(
    shown: ShownColumns,
    kinds: TableKinds,
    lang: RwSignal<Lang>,
) -> impl IntoView {
    view! {
        <details class="column-chooser" data-testid="column-chooser">
            <summary>{say(lang, "Columns", "列")}</summary>
            <div class="column-list">
                {page_columns(kinds)
                    .map(|c| {
                        let col = c.id;
                        view! {
                            <label title=move || c.definition.text(lang.get())>
                                <input
                                    type="checkbox"
                                    data-col=col
                                    prop:checked=move || shown.is_shown(col)
                                    on:change=move |_| shown.toggle(col)
                                />
                                {move || c.header.text(lang.get())}
                            </label>
                        }
                    })
                    .collect_view()}
            </div>
        </details>
    }
}
