//! The list of kept runs, with view, compare, delete, and import.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::schema::{RunDocument, RunStatus, Said};

use super::History;
use crate::files::read_file;

split_off! { imports:
    /// `text` as a run document: tokenmeter's own, a vLLM `bench serve` result, or
    /// the records of an exported plan run on Locust (JSON lines). A split build
    /// fetches the other tools' readers on the first import.
    fn import(text: String) -> Result<RunDocument, Said> {
        tokenmeter_core::read_run(&text)
    }
}
use crate::{
    language::{w, words},
    run::RunController,
};

#[component]
pub fn HistoryPanel(history: History, run: RunController) -> impl IntoView {
    let import_error = RwSignal::new(None::<Said>);
    let lang = crate::language::current();
    let import_text = RwSignal::new(String::new());
    // A tokenmeter run document, or a vLLM bench serve result (--save-detailed).
    let import_one = move |text: String| {
        leptos::task::spawn_local(async move {
            match import(text)
                .await
                .unwrap_or_else(|missing| Err(missing.said()))
            {
                Ok(document) => {
                    history.keep(Arc::new(document));
                    import_error.set(None);
                    import_text.set(String::new());
                }
                Err(problem) => import_error.set(Some(problem)),
            }
        });
    };
    let on_import = move |_| import_one(import_text.get_untracked());
    view! {
        <section
            class="panel history"
            data-testid="history"
            data-state=move || if history.loaded.get() { "ready" } else { "loading" }
            aria-labelledby="history-title"
        >
            <h2 id="history-title">{words(w("History", "历史"))}</h2>
            <Show
                when=move || history.runs.with(|runs| !runs.is_empty())
                fallback=|| view! { <p class="muted">{words(w("Finished and cancelled runs are kept here, in this browser, to compare with the next one.", "已完成和已取消的测试保存在这里（本浏览器中），用于和下一次对比。"))}</p> }
            >
                <div class="table-scroll">
                <table class="grid history-table">
                    <thead>
                        <tr>
                            <th>{words(w("started", "开始时间"))}</th>
                            <th>{words(w("model", "模型"))}</th>
                            <th>{words(w("endpoint", "接口"))}</th>
                            <th>{words(w("levels", "档位"))}</th>
                            <th>{words(w("status", "状态"))}</th>
                            <th>{words(w("knee", "拐点"))}</th>
                            <th>{words(w("safe", "安全并发"))}</th>
                            <th></th>
                        </tr>
                    </thead>
                    <tbody>
                        <For each=move || history.runs.get() key=|doc| doc.run_id.clone() let:doc>
                            <HistoryRow doc=doc history=history run=run/>
                        </For>
                    </tbody>
                </table>
                </div>
            </Show>
            {move || history.storage_note.get().map(|note| view! {
                <p class="callout warn" data-testid="history-storage-note">{note.text(lang.get()).to_owned()}</p>
            })}
            <details class="import">
                <summary>{words(w("Import a run document, a vLLM bench serve result, or Locust records", "导入运行文档、vLLM bench serve 结果或 Locust 记录"))}</summary>
                <input
                    type="file"
                    accept="application/json,.json,.jsonl"
                    data-testid="history-import-file"
                    on:change=move |ev| read_file(ev, import_one)
                />
                <textarea
                    data-testid="history-import-text"
                    rows="3"
                    prop:value=import_text
                    on:input=move |ev| import_text.set(event_target_value(&ev))
                ></textarea>
                <button data-testid="history-import" on:click=on_import>{words(w("Import", "导入"))}</button>
                {move || import_error.get().map(|e| view! { <p class="field-error" data-testid="history-import-error">{move || e.text(lang.get()).to_owned()}</p> })}
            </details>
        </section>
    }
}

#[component]
fn HistoryRow(doc: Arc<RunDocument>, history: History, run: RunController) -> impl IntoView {
    let run_id = doc.run_id.clone();
    let levels = doc
        .levels
        .iter()
        .map(|l| l.concurrency.unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let status = words(match doc.status {
        RunStatus::Done => w("done", "已完成"),
        RunStatus::Cancelled => w("cancelled", "已取消"),
    });
    let lang = crate::language::current();
    let rank = Signal::derive({
        let run_id = run_id.clone();
        move || history.compared_rank(&run_id)
    });
    let compare_id = run_id.clone();
    let remove_id = run_id.clone();
    let view_doc = doc.clone();
    view! {
        <tr data-testid="history-row" data-run-id=run_id class:baseline=move || rank.get().is_some()>
            <td>{doc.started_at.replace('T', " ").chars().take(19).collect::<String>()}</td>
            <td>{doc.plan.model.clone()}</td>
            <td class="endpoint">{doc.plan.base_url.clone()}</td>
            <td>{levels}</td>
            <td>{status}</td>
            <td>{doc.verdict.knee.map_or("–".into(), |k| k.to_string())}</td>
            <td>{doc.verdict.safe_concurrency.map_or("–".into(), |k| k.to_string())}</td>
            <td class="row-actions">
                <button data-testid="history-view" on:click=move |_| run.show(view_doc.clone())>{words(w("View", "查看"))}</button>
                <button data-testid="history-compare" on:click=move |_| history.toggle_compared(&compare_id)>
                    {move || match rank.get() {
                        Some(0) => w("Baseline ✓", "基线 ✓"),
                        Some(_) => w("Compared ✓", "对比中 ✓"),
                        None => w("Compare", "对比"),
                    }
                    .text(lang.get())}
                </button>
                <button data-testid="history-delete" on:click=move |_| history.remove(&remove_id)>{words(w("Delete", "删除"))}</button>
            </td>
        </tr>
    }
}
