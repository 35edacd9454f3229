//! A/B: more targets measured with the same load, side by side. The plan's own
//! endpoint is target A; each row here is B, C, … with its base URL, model and
//! key (memory only, like A's; a target left without a key on A's origin uses
//! A's key, and A's key never goes to another origin).

use leptos::prelude::*;
use tokenmeter_core::{
    schema::{AbOrder, Lang, Plan},
    TargetDraft, MAX_TARGETS,
};

use super::draft::{DraftSignals, TargetRow};
use crate::{
    language::{self, w, words, Words},
    widgets::{Field, Select},
};

const ORDERS: &[(AbOrder, &str, Words)] = &[
    (
        AbOrder::Levels,
        "levels",
        w(
            "each level for every target in turn (A1, B1, A2, B2, …)",
            "每档依次测每个目标（A1、B1、A2、B2……）",
        ),
    ),
    (
        AbOrder::Requests,
        "requests",
        w(
            "each level for all targets at once, requests interleaved",
            "每档同时测所有目标，请求交错发出",
        ),
    ),
];

#[component]
pub fn Targets(draft: DraftSignals, running: Signal<bool>) -> impl IntoView {
    let rows = draft.targets;
    let add = move |_| {
        rows.update(|rows| {
            if rows.len() + 1 < MAX_TARGETS {
                rows.push(TargetRow::new(TargetDraft {
                    base_url: draft.base_url.get_untracked(),
                    model: String::new(),
                }));
            }
        })
    };
    let each = move || rows.get().into_iter().enumerate().collect::<Vec<_>>();
    let full = move || running.get() || rows.with(|r| r.len() + 1 >= MAX_TARGETS);
    view! {
        <fieldset class="targets" data-testid="targets">
            <legend>{words(w("A/B: more targets, the same load", "A/B：更多目标，同样的负载"))}</legend>
            <For
                each=each
                key=|(index, row)| (*index, row.id)
                let:item
            >
                {
                    let (index, row) = item;
                    let target = Plan::target_label(index + 1);
                    let lang = language::current();
                    let label = move || match lang.get() {
                        Lang::En => format!("Target {target}"),
                        Lang::Zh => format!("目标 {target}"),
                    };
                    view! {
                        <div class="target-row" data-testid="target-row">
                            <strong>{label}</strong>
                            <Field label=w("Base URL", "接口地址（Base URL）") testid="base-url" value=row.base_url kind="url" disabled=running/>
                            <Field label=w("Model", "模型") testid="model" value=row.model disabled=running/>
                            <Field label=w("API key", "API 密钥") testid="api-key" value=row.key kind="password" disabled=running/>
                            <button
                                data-testid="target-remove"
                                prop:disabled=running
                                on:click=move |_| rows.update(|rows| rows.retain(|r| r.id != row.id))
                            >
                                {words(w("Remove", "移除"))}
                            </button>
                        </div>
                    }
                }
            </For>
            <button
                data-testid="target-add"
                prop:disabled=full
                on:click=add
            >
                {words(w("Add a target (A/B)", "添加目标（A/B）"))}
            </button>
            <Show when=move || rows.with(|r| !r.is_empty())>
                <Select label=w("Order", "顺序") testid="ab-order" value=draft.ab_order options=ORDERS disabled=running/>
            </Show>
            <p class="field-note">
                {words(w(
                    "The plan's endpoint is target A. Each level runs for every target in turn (A1, B1, A2, B2, …), or for all at once with their requests interleaved, each keeping the level's concurrency: either way a change in the network hits them alike; results show them side by side.",
                    "计划自己的接口是目标 A。每一档会依次对每个目标运行（A1、B1、A2、B2……），或同时对所有目标运行、请求交错发出，各自保持该档的并发：无论哪种方式，网络的变化对它们的影响相同；结果并排显示。",
                ))}
            </p>
        </fieldset>
    }
}
