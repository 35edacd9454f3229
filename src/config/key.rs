//! The API key field and "Remember the key": the key lives in this page's memory;
//! it is stored (local storage, this origin) only while the box is ticked, and
//! forgotten when it is unticked.
//!
//! A remembered key is bound to the endpoint origin it was entered for. A shared
//! link can point the form at any server; before the remembered key goes to an
//! origin other than its own, the user is asked.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use tokenmeter_core::{
    origin, said,
    schema::{Lang, Said},
};

use crate::{
    language::{self, w, words},
    widgets::Field,
};

/// Where a remembered key lives: this browser's local storage, for this origin.
const KEY_STORAGE: &str = "tokenmeter.api_key";

/// A remembered key and the endpoint origin it was entered for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Remembered {
    key: String,
    /// `None` for a key stored before keys were bound (a bare string): it is bound
    /// to nothing, so every origin asks.
    origin: Option<String>,
}

fn stored() -> Option<Remembered> {
    let text = crate::local_storage()?
        .get_item(KEY_STORAGE)
        .ok()
        .flatten()?;
    Some(serde_json::from_str(&text).unwrap_or(Remembered {
        key: text,
        origin: None,
    }))
}

/// Stores the key, or removes it with `None`.
fn store(remembered: Option<&Remembered>) {
    let Some(storage) = crate::local_storage() else {
        return;
    };
    let _ = match remembered {
        Some(r) => storage.set_item(
            KEY_STORAGE,
            &serde_json::to_string(r).expect("a key serialises"),
        ),
        None => storage.remove_item(KEY_STORAGE),
    };
}

/// The key field's state: the key, whether it is remembered, and for which origin.
#[derive(Clone, Copy)]
pub struct KeyState {
    pub key: RwSignal<String>,
    pub remember: RwSignal<bool>,
    /// The remembered key as stored (key and origin).
    remembered: StoredValue<Option<Remembered>>,
}

impl KeyState {
    /// The key to send to `base_url`, after asking the user if it is the remembered
    /// key and `base_url` is another origin than the one it was entered for. `Err`
    /// says why nothing may be sent.
    pub fn key_for(&self, base_url: &str) -> Result<Option<String>, Said> {
        let key = self.key.get_untracked();
        if key.trim().is_empty() {
            return Ok(None);
        }
        let target = origin(base_url);
        let bound = self
            .remembered
            .get_value()
            .filter(|r| r.key == key)
            .map(|r| r.origin);
        match bound {
            Some(bound) if bound != target => {
                let target = target.unwrap_or_else(|| base_url.to_owned());
                let lang = language::now();
                let bound =
                    bound.unwrap_or_else(|| lang.pick("another endpoint", "另一个接口").to_owned());
                let question = match lang {
                    Lang::En => format!(
                        "The remembered API key was entered for {bound}. Send it to {target}?"
                    ),
                    Lang::Zh => {
                        format!("记住的 API 密钥是为 {bound} 输入的。要把它发送到 {target} 吗？")
                    }
                };
                let yes = web_sys::window()
                    .and_then(|w| w.confirm_with_message(&question).ok())
                    .unwrap_or(false);
                if yes {
                    Ok(Some(key))
                } else {
                    Err(said!(
                        "the remembered key was not sent to {target}: it was entered for {bound}; type the key for this endpoint, or confirm",
                        "记住的密钥没有发送到 {target}：它是为 {bound} 输入的；请输入这个接口的密钥，或确认发送",
                    ))
                }
            }
            _ => Ok(Some(key)),
        }
    }
}

/// Fills the key with a remembered one, and keeps the store in step with the key
/// while "remember" is ticked, binding a newly typed key to the origin `base_url`
/// has at that moment. A hook: call it once per page.
pub fn use_remembered_key(key: RwSignal<String>, base_url: RwSignal<String>) -> KeyState {
    let remember = RwSignal::new(false);
    let previous = stored();
    if let Some(r) = &previous {
        key.set(r.key.clone());
        remember.set(true);
    }
    let remembered = StoredValue::new(previous);
    Effect::new(move |_| {
        if !remember.get() {
            remembered.set_value(None);
            store(None);
            return;
        }
        let key = key.get();
        // The same key keeps its origin: a link that changed the base URL does not
        // rebind it. A new key is bound to the endpoint it is typed for.
        let origin = match remembered.get_value() {
            Some(r) if r.key == key => r.origin,
            _ => origin(&base_url.get_untracked()),
        };
        let r = Remembered { key, origin };
        store(Some(&r));
        remembered.set_value(Some(r));
    });
    KeyState {
        key,
        remember,
        remembered,
    }
}

#[component]
pub fn KeyField(state: KeyState, running: Signal<bool>) -> impl IntoView {
    let remember = state.remember;
    view! {
        <Field
            label=w("API key", "API 密钥")
            testid="api-key"
            value=state.key
            kind="password"
            hint=w(
                "Kept in this page's memory; never exported or put in a URL, and stored only if you tick the box (bound to the endpoint it was entered for). The simulator needs none.",
                "只保存在本页内存中；不会被导出或放进 URL，只有勾选下面的选项才会存储（并绑定到输入它时的接口）。模拟器不需要密钥。",
            )
            disabled=running
        />
        <label class="check">
            <input
                data-testid="remember-key"
                type="checkbox"
                prop:checked=remember
                on:change=move |ev| remember.set(event_target_checked(&ev))
            />
            {words(w(
                "Remember the key on this device (in this browser's local storage)",
                "在这台设备上记住密钥（保存在本浏览器的 local storage 中）",
            ))}
        </label>
    }
}
