//! A/B: more targets measured with the same load, side by side. The plan's own
//! endpoint is target A; each row here is B, C, … with its base URL, model and
//! key (memory only, like A's; a target left without a key on A's origin uses
//! A's key, and A's key never goes to another origin).

use leptos::prelude::*;
use tokenmeter_core::{
    draft::TargetDraft,
    plan::{AbOrder, Plan, MAX_TARGETS},
};

use super::draft::{DraftSignals, TargetRow};
use crate::widgets::{Field, Select};

const ORDERS: &[(AbOrder, &str, &str)] = &[
    (
        AbOrder::Levels,
        "levels",
        "each level for every target in turn (A1, B1, A2, B2, …)",
    ),
    (
        AbOrder::Requests,
        "requests",
        "each level for all targets at once, requests interleaved",
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
            <legend>"A/B: more targets, the same load"</legend>
            <For
                each=each
                key=|(index, row)| (*index, row.id)
                let:item
            >
                {
                    let (index, row) = item;
                    let label = format!("Target {}", Plan::target_label(index + 1));
                    view! {
                        <div class="target-row" data-testid="target-row">
                            <strong>{label}</strong>
                            <Field label="Base URL" testid="base-url" value=row.base_url kind="url" disabled=running/>
                            <Field label="Model" testid="model" value=row.model disabled=running/>
                            <Field label="API key" testid="api-key" value=row.key kind="password" disabled=running/>
                            <button
                                data-testid="target-remove"
                                prop:disabled=running
                                on:click=move |_| rows.update(|rows| rows.retain(|r| r.id != row.id))
                            >
                                "Remove"
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
                "Add a target (A/B)"
            </button>
            <Show when=move || rows.with(|r| !r.is_empty())>
                <Select label="Order" testid="ab-order" value=draft.ab_order options=ORDERS disabled=running/>
            </Show>
            <p class="field-note">
                "The plan's endpoint is target A. Each level runs for every target in turn (A1, B1, A2, B2, …), or for all at once with their requests interleaved, each keeping the level's concurrency: either way a change in the network hits them alike; results show them side by side."
            </p>
        </fieldset>
    }
}
