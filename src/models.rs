//! "Load models": `GET {base}/models`, from the page (this is configuration, not
//! measurement), with the key sent the way the plan says.

use tokenmeter_core::{error::ErrorKind, error::Lang, plan::Plan};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Headers, RequestInit, Response};

use crate::engine::{request::describe_js_error, runner::target};

/// The model IDs the server lists, or a sentence saying why there are none.
pub async fn list(plan: &Plan, api_key: Option<&str>) -> Result<Vec<String>, String> {
    let url = format!("{}/models", plan.base_url);
    let headers = Headers::new().map_err(|e| describe_js_error(&e))?;
    for (name, value) in target(plan, api_key).headers {
        if name != "content-type" {
            headers
                .append(&name, &value)
                .map_err(|e| describe_js_error(&e))?;
        }
    }
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_headers(&headers);
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
    let text = JsFuture::from(response.text().map_err(|e| describe_js_error(&e))?)
        .await
        .map_err(|e| describe_js_error(&e))?
        .as_string()
        .unwrap_or_default();
    let body: serde_json::Value = serde_json::from_str(&text)
        .map_err(|err| format!("{url} did not answer with JSON: {err}"))?;
    Ok(body["data"]
        .as_array()
        .map(|models| {
            models
                .iter()
                .filter_map(|m| m["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}
