//! "Load models": `GET {base}/models`, from the page (this is configuration, not
//! measurement), with the key sent the way the plan says, abortable.

use serde::Deserialize;
use tokenmeter_core::{error::ErrorKind, error::Lang, plan::Plan};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Headers, RequestInit, Response};

use crate::engine::request::describe_js_error;

/// The OpenAI models list, as far as it is read.
#[derive(Deserialize)]
struct ModelList {
    #[serde(default)]
    data: Vec<Model>,
}

#[derive(Deserialize)]
struct Model {
    id: String,
}

/// The model IDs the server lists, or a sentence saying why there are none.
pub async fn list(
    plan: &Plan,
    api_key: Option<&str>,
    abort: &AbortSignal,
) -> Result<Vec<String>, String> {
    let url = format!("{}/models", plan.base_url);
    let headers = Headers::new().map_err(|e| describe_js_error(&e))?;
    for (name, value) in plan.request_headers(api_key) {
        if name != "content-type" {
            headers
                .append(&name, &value)
                .map_err(|e| describe_js_error(&e))?;
        }
    }
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_headers(&headers);
    init.set_signal(Some(abort));
    let window = web_sys::window().ok_or("no window")?;
    let response: Response = JsFuture::from(window.fetch_with_str_and_init(&url, &init))
        .await
        .map_err(|e| {
            format!(
                "{}: {}",
                describe_js_error(&e),
                ErrorKind::Network.hint(Lang::En)
            )
        })?
        .unchecked_into();
    let status = response.status();
    if let Some(kind) = ErrorKind::from_status(status) {
        return Err(format!("HTTP {status} from {url}: {}", kind.hint(Lang::En)));
    }
    let body = JsFuture::from(response.json().map_err(|e| describe_js_error(&e))?)
        .await
        .map_err(|err| {
            format!(
                "{url} did not answer with JSON: {}",
                describe_js_error(&err)
            )
        })?;
    // The browser parsed the JSON; serde-wasm-bindgen reads the parts we need.
    let list: ModelList = serde_wasm_bindgen::from_value(body)
        .map_err(|err| format!("{url} did not answer with a models list: {err}"))?;
    Ok(list.data.into_iter().map(|m| m.id).collect())
}
