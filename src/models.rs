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
        let Said {
            en: why_en,
            zh: why_zh,
        } = why.said();
        said!(
            "{url} did not answer with a models list: {why_en}",
            "{url} 的回答不是模型列表：{why_zh}"
        )
    })
}

/// Why an answer is not an OpenAI models list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotAModelsList {
    /// The answer is JSON, but not an object.
    NotAnObject,
    /// Its `data` is not a list.
    DataNotAList,
    /// An entry of its `data` has no `id` text.
    EntryWithoutId,
    /// Reading it raised an error (the browser's words).
    Browser(String),
}

impl NotAModelsList {
    /// What is wrong, in both languages.
    pub fn said(&self) -> Said {
        match self {
            NotAModelsList::NotAnObject => {
                said!("the answer is not a JSON object", "回答不是 JSON 对象")
            }
            NotAModelsList::DataNotAList => {
                said!("its `data` is not a list", "其中的 `data` 不是列表")
            }
            NotAModelsList::EntryWithoutId => said!(
                "an entry of its `data` has no `id` text",
                "`data` 中有一项没有文本形式的 `id`"
            ),
            NotAModelsList::Browser(what) => said!("{what}", "{what}"),
        }
    }
}

/// The `id` of each entry of the OpenAI models list `{"data": [{"id": …}, …]}`, read
/// from the object the browser parsed (no `data`: no models).
pub fn model_ids(body: &JsValue) -> Result<Vec<String>, NotAModelsList> {
    if !body.is_object() {
        return Err(NotAModelsList::NotAnObject);
    }
    let data = Reflect::get(body, &JsValue::from_str("data"))
        .map_err(|e| NotAModelsList::Browser(describe_js_error(&e)))?;
    if data.is_undefined() {
        return Ok(Vec::new());
    }
    let entries = data
        .dyn_into::<Array>()
        .map_err(|_| NotAModelsList::DataNotAList)?;
    entries
        .iter()
        .map(|entry| {
            Reflect::get(&entry, &JsValue::from_str("id"))
                .ok()
                .and_then(|id| id.as_string())
                .ok_or(NotAModelsList::EntryWithoutId)
        })
        .collect()
}
