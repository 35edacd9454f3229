//! A plan as a link: `…/#plan=<URI-encoded plan JSON>`. A fragment never reaches a
//! server, and a plan never holds the key.

use leptos::prelude::*;
use tokenmeter_core::schema::{Plan, Said};

use super::draft::DraftSignals;
use crate::language::{w, words};

/// The fragment that carries a shared plan.
const PLAN_FRAGMENT: &str = "#plan=";

/// A link to this page that opens with `plan` in the form.
fn share_link(plan: &Plan) -> String {
    let json = serde_json::to_string(plan).expect("a plan serialises");
    let encoded = String::from(js_sys::encode_uri_component(&json));
    let page = web_sys::window()
        .and_then(|w| w.location().href().ok())
        .map(|href| href.split('#').next().unwrap_or_default().to_owned())
        .unwrap_or_default();
    format!("{page}{PLAN_FRAGMENT}{encoded}")
}

/// The plan JSON of a shared link this page was opened with.
pub fn plan_from_location() -> Option<String> {
    let hash = web_sys::window()?.location().hash().ok()?;
    let encoded = hash.strip_prefix(PLAN_FRAGMENT)?;
    js_sys::decode_uri_component(encoded).ok().map(String::from)
}

/// "Link to this plan": the link is shown, and copied where the browser allows.
/// `problems` receives what keeps the form from being a plan.
#[component]
pub fn ShareLink(
    draft: DraftSignals,
    base: StoredValue<Plan>,
    problems: RwSignal<Vec<Said>>,
) -> impl IntoView {
    let url = RwSignal::new(None::<String>);
    let on_share = move |_| match draft.plan(&base.get_value()) {
        Ok(plan) => {
            let link = share_link(&plan);
            url.set(Some(link.clone()));
            if let Some(window) = web_sys::window() {
                let copied = window.navigator().clipboard().write_text(&link);
                // A refusal (no permission, no focus) is fine: the link is shown too.
                leptos::task::spawn_local(async move {
                    let _ = wasm_bindgen_futures::JsFuture::from(copied).await;
                });
            }
        }
        Err(why) => problems.set(why),
    };
    view! {
        <div class="share">
            <button data-testid="share-link" on:click=on_share>{words(w("Link to this plan", "本计划的链接"))}</button>
            {move || url.get().map(|url| view! {
                <input class="share-url" data-testid="share-url" readonly prop:value=url/>
                <p class="field-note">{words(w("The link holds the plan, never the key.", "链接只包含计划，从不包含密钥。"))}</p>
            })}
        </div>
    }
}
