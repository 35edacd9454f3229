//! The page's language (English or Chinese): the one the person chose last on
//! this device, else the browser's first preferred language when it is Chinese,
//! else English. The choice is not a secret, so it is kept in local storage. The
//! app provides it as a context ([`provide`]); every text the page shows is a
//! [`Words`] (English and Chinese side by side, so neither can be missing) read
//! through it.

use leptos::prelude::*;
use tokenmeter_core::schema::Lang;
pub use tokenmeter_core::Words;

/// A text in English and Chinese.
pub const fn w(en: &'static str, zh: &'static str) -> Words {
    Words { en, zh }
}

/// Makes `lang` the page's language for every component below.
pub fn provide(lang: RwSignal<Lang>) {
    provide_context(lang);
}

/// The page's language; English for a component mounted without the app (tests).
pub fn current() -> RwSignal<Lang> {
    use_context::<RwSignal<Lang>>().unwrap_or_else(|| RwSignal::new(Lang::En))
}

/// The page's language at this moment, for a text made once (a message as
/// something happens).
pub fn now() -> Lang {
    current().get_untracked()
}

/// `words` in the page's language, as it changes.
pub fn words(words: Words) -> impl Fn() -> &'static str + Copy {
    let lang = current();
    move || words.text(lang.get())
}

const LANG_STORAGE: &str = "tokenmeter.lang";

/// The language the results open in.
pub fn initial() -> Lang {
    let Some(window) = web_sys::window() else {
        return Lang::En;
    };
    let chosen =
        crate::local_storage().and_then(|storage| storage.get_item(LANG_STORAGE).ok().flatten());
    match chosen.as_deref() {
        Some("zh") => return Lang::Zh,
        Some("en") => return Lang::En,
        _ => {}
    }
    // Only the first preference counts: a Chinese reader who put English first
    // asked for English.
    let preferred = window.navigator().language().unwrap_or_default();
    if preferred.to_ascii_lowercase().starts_with("zh") {
        Lang::Zh
    } else {
        Lang::En
    }
}

/// Keeps `lang` as this device's choice (best effort: a browser without storage
/// just asks again next time).
pub fn remember(lang: Lang) {
    let value = match lang {
        Lang::En => "en",
        Lang::Zh => "zh",
    };
    if let Some(storage) = crate::local_storage() {
        let _ = storage.set_item(LANG_STORAGE, value);
    }
}

/// The BCP 47 tag for `lang`, for the `lang` attribute of what is written in it
/// (screen readers pick their voice from it, and browsers their CJK glyphs).
pub fn tag(lang: Lang) -> &'static str {
    match lang {
        Lang::En => "en",
        Lang::Zh => "zh-CN",
    }
}

/// Text that follows the results' language: `zh` in Chinese, `en` otherwise (one
/// closure type for every such text on the page).
pub fn say(lang: RwSignal<Lang>, en: &'static str, zh: &'static str) -> impl Fn() -> &'static str {
    move || lang.get().pick(en, zh)
}
