//! "Import a config.json": the reference article's file, or a plan saved by
//! tokenmeter, by file or by paste. What to do with it is the panel's (see
//! [`super::ConfigPanel`]); this is the form and its messages.

use leptos::prelude::*;

use crate::files::read_file;

#[component]
pub fn ImportConfig(
    /// Reads a configuration's JSON and says what happened.
    apply: Callback<String>,
    notes: RwSignal<Vec<String>>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let text = RwSignal::new(String::new());
    view! {
        <details class="import" data-testid="import">
            <summary>"Import a config.json"</summary>
            <p class="field-note">
                "The reference article's config.json, or a plan saved by tokenmeter. A key in the file goes to the key field, in memory only."
            </p>
            <input
                type="file"
                accept="application/json,.json"
                data-testid="import-file"
                on:change=move |ev| read_file(ev, move |json| apply.run(json))
            />
            <textarea
                data-testid="import-text"
                rows="4"
                placeholder="…or paste it here"
                prop:value=text
                on:input=move |ev| text.set(event_target_value(&ev))
            ></textarea>
            <button data-testid="import-apply" on:click=move |_| apply.run(text.get_untracked())>
                "Import"
            </button>
            {move || error.get().map(|e| view! { <p class="field-error" data-testid="import-error">{e}</p> })}
            {move || (!notes.get().is_empty()).then(|| view! {
                <p class="field-note" data-testid="import-note">{notes.get().join("; ")}</p>
            })}
        </details>
    }
}
