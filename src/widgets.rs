//! The form's reusable inputs, each bound to one signal: a labelled text input, a
//! text area, a checkbox, and a select over typed values. The plan panel and its
//! advanced settings are made of these, so every field looks and behaves alike.

use leptos::prelude::*;

use crate::language::{words, Words};

/// Whether inputs are disabled (while a run goes); `None` never.
fn is_disabled(disabled: Option<Signal<bool>>) -> bool {
    disabled.is_some_and(|d| d.get())
}

/// A labelled text input.
#[component]
pub fn Field(
    label: Words,
    testid: &'static str,
    value: RwSignal<String>,
    #[prop(default = "text")] kind: &'static str,
    #[prop(optional)] placeholder: Option<&'static str>,
    #[prop(optional)] hint: Option<Words>,
    #[prop(optional)] disabled: Option<Signal<bool>>,
    /// Shown under the input (checks of what was typed).
    #[prop(optional)]
    children: Option<Children>,
) -> impl IntoView {
    view! {
        <label class="field">
            <span class="field-label">{words(label)}</span>
            <input
                data-testid=testid
                type=kind
                spellcheck="false"
                autocomplete="off"
                placeholder=placeholder
                prop:value=value
                prop:disabled=move || is_disabled(disabled)
                on:input=move |ev| value.set(event_target_value(&ev))
            />
            {hint.map(|hint| view! { <p class="field-note">{words(hint)}</p> })}
            {children.map(|children| children())}
        </label>
    }
}

/// A labelled text area.
#[component]
pub fn TextArea(
    label: Words,
    testid: &'static str,
    value: RwSignal<String>,
    #[prop(default = 2)] rows: u32,
    #[prop(optional)] placeholder: Option<&'static str>,
    #[prop(optional)] hint: Option<Words>,
    #[prop(optional)] disabled: Option<Signal<bool>>,
) -> impl IntoView {
    view! {
        <label class="field">
            <span class="field-label">{words(label)}</span>
            <textarea
                data-testid=testid
                rows=rows
                placeholder=placeholder
                prop:value=value
                prop:disabled=move || is_disabled(disabled)
                on:input=move |ev| value.set(event_target_value(&ev))
            ></textarea>
            {hint.map(|hint| view! { <p class="field-note">{words(hint)}</p> })}
        </label>
    }
}

/// A checkbox with its label.
#[component]
pub fn Check(
    label: Words,
    testid: &'static str,
    value: RwSignal<bool>,
    #[prop(optional)] disabled: Option<Signal<bool>>,
) -> impl IntoView {
    view! {
        <label class="check">
            <input
                data-testid=testid
                type="checkbox"
                prop:checked=value
                prop:disabled=move || is_disabled(disabled)
                on:change=move |ev| value.set(event_target_checked(&ev))
            />
            {words(label)}
        </label>
    }
}

/// A labelled select over typed values: `options` are `(value, code, text)`, the
/// code being the `<option>`'s value (stable for scripts), the text what is shown
/// (in the page's language).
#[component]
pub fn Select<T>(
    label: Words,
    testid: &'static str,
    value: RwSignal<T>,
    options: &'static [(T, &'static str, Words)],
    #[prop(optional)] disabled: Option<Signal<bool>>,
    /// Told when the user chooses (never when a plan fills the field).
    #[prop(optional)]
    on_choose: Option<Callback<T>>,
) -> impl IntoView
where
    T: Copy + PartialEq + Send + Sync + 'static,
{
    let code_of = move |v: T| {
        options
            .iter()
            .find(|(option, _, _)| *option == v)
            .map_or("", |(_, code, _)| *code)
    };
    view! {
        <label class="field">
            <span class="field-label">{words(label)}</span>
            <select
                data-testid=testid
                prop:value=move || code_of(value.get())
                prop:disabled=move || is_disabled(disabled)
                on:change=move |ev| {
                    let code = event_target_value(&ev);
                    if let Some((option, _, _)) = options.iter().find(|(_, c, _)| *c == code) {
                        value.set(*option);
                        if let Some(on_choose) = on_choose {
                            on_choose.run(*option);
                        }
                    }
                }
            >
                {options
                    .iter()
                    .map(|(option, code, text)| {
                        let option = *option;
                        view! { <option value=*code selected=move || value.get() == option>{words(*text)}</option> }
                    })
                    .collect_view()}
            </select>
        </label>
    }
}
