//! The provider chooser: a preset from `tokenmeter_core::provider` fills the base
//! URL, the kind of API, how the key is sent and whether the server's metrics are
//! read (a server of one's own publishes them; a hosted API does not), and says what the provider
//! allows a page in a browser and what to set on a server of one's own. It never
//! touches the key: a remembered key stays bound to the origin it was entered for.
//! Hooks: `provider` (a `<select>`, `custom` or a preset's id) and
//! `provider-note` (`data-provider`).

use leptos::prelude::*;
use tokenmeter_core::{matching_provider, provider, Provider, PROVIDERS};

use super::draft::DraftSignals;
use crate::language::{self, w, words};

/// The option for a base URL typed by hand.
const CUSTOM: &str = "custom";

#[component]
pub fn ProviderField(draft: DraftSignals, running: Signal<bool>) -> impl IntoView {
    let lang = language::current();
    // The preset the fields are: chosen here, or a plan's that matches one
    // exactly (a link, an import); typing makes it custom again.
    let chosen = Memo::new(move |_| {
        matching_provider(
            draft.base_url.get().trim_end_matches('/'),
            draft.endpoint.get(),
        )
    });
    let choose = move |id: String| {
        let Some(p) = provider(&id) else {
            return;
        };
        let Provider {
            base_url,
            endpoint,
            auth,
            self_hosted,
            ..
        } = *p;
        draft.base_url.set(base_url.to_owned());
        draft.endpoint.set(endpoint);
        draft.auth.set(auth);
        // A hosted API publishes no Prometheus metrics: no poll, and no note saying so.
        draft.poll_metrics.set(self_hosted);
    };
    let note = move || {
        chosen.get().map(|p| {
            view! {
                <p class="field-note" data-testid="provider-note" data-provider=p.id>
                    {move || p.browser.text(lang.get())}
                </p>
            }
        })
    };
    view! {
        <label class="field">
            <span class="field-label">{words(w("Provider or server", "服务商或推理服务"))}</span>
            <select
                data-testid="provider"
                prop:value=move || chosen.get().map_or(CUSTOM, |p| p.id)
                prop:disabled=move || running.get()
                on:change=move |ev| choose(event_target_value(&ev))
            >
                <option value=CUSTOM selected=move || chosen.get().is_none()>
                    {words(w("another (type its base URL)", "其他（请填写接口地址）"))}
                </option>
                {PROVIDERS
                    .iter()
                    .map(|p| {
                        view! { <option value=p.id selected=move || chosen.get() == Some(p)>{p.name}</option> }
                    })
                    .collect_view()}
            </select>
            {note}
        </label>
    }
}
