//! How wide the screen is, as far as the charts care: on a narrow one (a phone) they
//! are drawn with their panels one under the other, so their text keeps a readable
//! size. Followed live (a phone turned sideways redraws them), and provided to the
//! page as a context by [`Screen::watch`].

use leptos::prelude::*;
use tokenmeter_core::{chart::Look, schema::Lang};
use wasm_bindgen::{closure::Closure, JsCast};

/// Screens at most this wide get the narrow charts: below it, two panels side by
/// side would scale the charts' 12 px text under 8 px (the page itself turns to
/// one column earlier, at 860 px, in `style/main.css`).
const NARROW: &str = "(max-width: 640px)";

/// Whether the screen is narrow.
#[derive(Clone, Copy)]
pub struct Screen {
    narrow: Signal<bool>,
}

impl Screen {
    /// Starts following the screen's width and provides it to the page.
    pub fn watch() -> Screen {
        let narrow = RwSignal::new(false);
        if let Some(query) = window().match_media(NARROW).ok().flatten() {
            narrow.set(query.matches());
            let changed = {
                let query = query.clone();
                Closure::<dyn Fn()>::new(move || narrow.set(query.matches()))
            };
            query.set_onchange(Some(changed.as_ref().unchecked_ref()));
            // The page's lifetime: one listener per page load.
            changed.forget();
        }
        let screen = Screen {
            narrow: narrow.into(),
        };
        provide_context(screen);
        screen
    }

    /// The screen the page provided (wide, where none was: a component shown alone).
    pub fn current() -> Screen {
        use_context().unwrap_or(Screen {
            narrow: Signal::derive(|| false),
        })
    }

    /// How charts are drawn here, in `lang` (reactive: call it inside a closure).
    pub fn look(self, lang: Lang) -> Look {
        Look {
            lang,
            narrow: self.narrow.get(),
        }
    }
}
