//! The API key field and "Remember the key": the key lives in this page's memory;
//! it is stored (local storage, this origin) only while the box is ticked, and
//! forgotten when it is unticked.

use leptos::prelude::*;

use crate::widgets::Field;

/// Where a remembered key lives: this browser's local storage, for this origin.
const KEY_STORAGE: &str = "tokenmeter.api_key";

fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

fn stored_key() -> Option<String> {
    local_storage()?.get_item(KEY_STORAGE).ok().flatten()
}

/// Stores the key, or removes it with `None`.
fn store_key(key: Option<String>) {
    let Some(storage) = local_storage() else {
        return;
    };
    let _ = match key {
        Some(key) => storage.set_item(KEY_STORAGE, &key),
        None => storage.remove_item(KEY_STORAGE),
    };
}

/// Fills `key` with a remembered key, and keeps the store in step with it while
/// the returned flag ("remember") is set. A hook: call it once per page.
pub fn use_remembered_key(key: RwSignal<String>) -> RwSignal<bool> {
    let remember = RwSignal::new(false);
    if let Some(stored) = stored_key() {
        key.set(stored);
        remember.set(true);
    }
    Effect::new(move |_| store_key(remember.get().then(|| key.get())));
    remember
}

#[component]
pub fn KeyField(key: RwSignal<String>, running: Signal<bool>) -> impl IntoView {
    let remember = use_remembered_key(key);
    view! {
        <Field
            label="API key"
            testid="api-key"
            value=key
            kind="password"
            hint="Kept in this page's memory; never exported or put in a URL, and stored only if you tick the box. The simulator needs none."
            disabled=running
        />
        <label class="check">
            <input
                data-testid="remember-key"
                type="checkbox"
                prop:checked=remember
                on:change=move |ev| remember.set(event_target_checked(&ev))
            />
            "Remember the key on this device (in this browser's local storage)"
        </label>
    }
}
