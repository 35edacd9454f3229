//! "Import a config.json": the reference article's file, or a plan saved by
//! tokenmeter, by file or by paste. What to do with it is the panel's (see
//! [`super::ConfigPanel`]); this is the form and its messages.

use leptos::prelude::*;
use tokenmeter_core::schema::Said;

use crate::{
    files::read_file,
    language::{self, w, words},
};

#[component]
pub fn ImportConfig(
    /// Reads a configuration's JSON and says what happened.
    apply: Callback<String>,
    notes: RwSignal<Vec<Said>>,
    error: RwSignal<Option<Said>>,
) -> impl IntoView {
    let text = RwSignal::new(String::new());
    let lang = language::current();
    view! {
        <details class="import" data-testid="import">
            <summary>{words(w("Import a config.json", "导入 config.json"))}</summary>
            <p class="field-note">
                {words(w(
                    "The reference article's config.json, or a plan saved by tokenmeter. A key in the file goes to the key field, in memory only.",
                    "参考文章的 config.json，或 tokenmeter 保存的计划。文件中的密钥会填入密钥栏，只保存在内存中。",
                ))}
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
                placeholder=words(w("…or paste it here", "……或粘贴到这里"))
                prop:value=text
                on:input=move |ev| text.set(event_target_value(&ev))
            ></textarea>
            <button data-testid="import-apply" on:click=move |_| apply.run(text.get_untracked())>
                {words(w("Import", "导入"))}
            </button>
            {move || error.get().map(|e| view! { <p class="field-error" data-testid="import-error">{e.text(lang.get()).to_owned()}</p> })}
            {move || (!notes.get().is_empty()).then(|| view! {
                <p class="field-note" data-testid="import-note">
                    {notes.get().iter().map(|n| n.text(lang.get())).collect::<Vec<_>>().join("; ")}
                </p>
            })}
        </details>
    }
}
