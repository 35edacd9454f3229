//! "Load models": `GET {base}/models`, from the page (this is configuration, not
//! measurement), with the key sent the way the plan says, abortable.

use js_sys::{Array, Reflect};
use tokenmeter_core::{
    said,
    schema::{ErrorKind, Lang, Plan, Said},
};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Headers, RequestInit, Response};

use crate::describe_js_error;

/// The model IDs the server lists, or a sentence saying why there are none.
pub async fn list(
    plan: &Plan,
    api_key: Option<&str>,
    abort: &AbortSignal,
) -> Result<Vec<String>, Said> {
    let url = format!("{}/models", plan.base_url);
    // What the browser said, as it said it, in both.
    let js = |e: JsValue| {
        let what = describe_js_error(&e);
        said!("{what}", "{what}")
    };
    let headers = Headers::new().map_err(js)?;
    for (name, value) in plan.request_headers(api_key) {
        if name != "content-type" {
            headers.append(&name, &value).map_err(js)?;
        }
    }
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_headers(&headers);
    init.set_signal(Some(abort));
    let window = web_sys::window().ok_or_else(|| said!("no window", "没有 window"))?;
    let response: Response = JsFuture::from(window.fetch_with_str_and_init(&url, &init))
        .await
        .map_err(|e| {
            let what = describe_js_error(&e);
            let (en, zh) = (
                ErrorKind::Network.hint(Lang::En),
                ErrorKind::Network.hint(Lang::Zh),
            );
            said!("{what}: {en}", "{what}：{zh}")
        })?
        .unchecked_into();
    let status = response.status();
    if let Some(kind) = ErrorKind::from_status(status) {
        let (en, zh) = (kind.hint(Lang::En), kind.hint(Lang::Zh));
        return Err(said!(
            "HTTP {status} from {url}: {en}",
            "{url} 返回 HTTP {status}：{zh}"
        ));
    }
    let body = JsFuture::from(response.json().map_err(js)?)
        .await
        .map_err(|err| {
            let what = describe_js_error(&err);
            said!(
                "{url} did not answer with JSON: {what}",
                "{url} 的回答不是 JSON：{what}"
            )
        })?;
    model_ids(&body).map_err(|why| {
        said!(
            "{url} did not answer with a models list: {why}",
            "{url} 的回答不是模型列表：{why}"
        )
    })
}

/// The `id` of each entry of the OpenAI models list `{"data": [{"id": …}, …]}`, read
/// from the object the browser parsed (no `data`: no models).
pub fn model_ids(body: &JsValue) -> Result<Vec<String>, String> {
    if !body.is_object() {
        return Err("the answer is not a JSON object".into());
    }
    let data = Reflect::get(body, &JsValue::from_str("data")).map_err(|e| describe_js_error(&e))?;
    if data.is_undefined() {
        return Ok(Vec::new());
    }
    let entries = data
        .dyn_into::<Array>()
        .map_err(|_| "its `data` is not a list".to_owned())?;
    entries
        .iter()
        .map(|entry| {
            Reflect::get(&entry, &JsValue::from_str("id"))
                .ok()
                .and_then(|id| id.as_string())
                .ok_or_else(|| "an entry of its `data` has no `id` text".to_owned())
        })
        .collect()
}
