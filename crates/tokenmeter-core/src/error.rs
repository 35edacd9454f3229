//! Why a request failed: a stable kind, a detail, and a hint a user can act on, in
//! English and Chinese.
//!
//! The kinds' names (`ErrorKind::name`) are part of the run document and of the
//! page's automation hooks: never rename one, only add.

use serde::{Deserialize, Serialize};

/// The language of user-facing text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    /// English.
    #[default]
    En,
    /// Simplified Chinese.
    Zh,
}

impl Lang {
    /// `en` or `zh`, whichever is this language.
    pub fn pick<'a>(self, en: &'a str, zh: &'a str) -> &'a str {
        match self {
            Lang::En => en,
            Lang::Zh => zh,
        }
    }
}

/// A text in English and in Chinese.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Words {
    /// The English text.
    pub en: &'static str,
    /// The Chinese text.
    pub zh: &'static str,
}

impl Words {
    /// The text in `lang`.
    pub fn text(self, lang: Lang) -> &'static str {
        lang.pick(self.en, self.zh)
    }
}

/// A text made at run time (with figures, names, a browser's message) in English
/// and in Chinese: a message is said in both when it is made, and shown in
/// whichever the reader chose, then or later. Made with [`said!`](crate::said).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Said {
    /// The English text.
    pub en: String,
    /// The Chinese text.
    pub zh: String,
}

impl Said {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en,
            Lang::Zh => &self.zh,
        }
    }
}

/// Written, a message is its English: the command line's, the logs'.
impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.en)
    }
}

/// Read as a `str` (matched, searched, compared), a message is its English.
impl std::ops::Deref for Said {
    type Target = str;
    fn deref(&self) -> &str {
        &self.en
    }
}

impl From<Said> for String {
    fn from(said: Said) -> String {
        said.en
    }
}

impl From<Words> for Said {
    fn from(words: Words) -> Said {
        Said {
            en: words.en.to_owned(),
            zh: words.zh.to_owned(),
        }
    }
}

/// A [`Said`] from two format strings, English first:
/// `said!("{n} levels", "{n} 档")`.
#[macro_export]
macro_rules! said {
    ($en:literal, $zh:literal $(,)?) => {
        $crate::schema::Said {
            en: format!($en),
            zh: format!($zh),
        }
    };
}

/// Every way a request can fail, in the order a person should check them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// HTTP 401 or 403.
    Auth,
    /// HTTP 404.
    NotFound,
    /// HTTP 429.
    RateLimited,
    /// Another 4xx (400, 422, ...): the server rejected the request body.
    BadRequest,
    /// HTTP 5xx.
    ServerError,
    /// No response headers before the timeout.
    TimeoutBeforeHeaders,
    /// Headers came, the stream did not finish before the timeout.
    TimeoutMidStream,
    /// The request never got a response: in a browser, most often CORS, mixed
    /// content (an HTTPS page calling `http://`) or a refused connection.
    Network,
    /// A 2xx answer whose body is not an event stream.
    NotEventStream,
    /// The stream ended properly but carried no token.
    EmptyStream,
    /// The stream ended before `[DONE]` or a `finish_reason`.
    StreamCut,
    /// An `{"error": ...}` event inside a 200 stream.
    StreamErrorEvent,
    /// An event whose data is not valid JSON.
    MalformedJson,
    /// One line or event larger than the parser's limit.
    EventTooLarge,
    /// The answer went past the most tokenmeter reads of one response (events or
    /// bytes): a server that ignores `max_tokens`, or never ends its stream.
    ResponseTooLarge,
    /// The user cancelled the run while the request was in flight (not the server's fault).
    Cancelled,
    /// The engine worker that sent the request stopped before it ended: the tool
    /// lost the measurement (not the server's fault).
    EngineStopped,
}

impl ErrorKind {
    /// Every kind, in the order the page lists them.
    pub const ALL: [ErrorKind; 17] = [
        ErrorKind::Auth,
        ErrorKind::NotFound,
        ErrorKind::RateLimited,
        ErrorKind::BadRequest,
        ErrorKind::ServerError,
        ErrorKind::TimeoutBeforeHeaders,
        ErrorKind::TimeoutMidStream,
        ErrorKind::Network,
        ErrorKind::NotEventStream,
        ErrorKind::EmptyStream,
        ErrorKind::StreamCut,
        ErrorKind::StreamErrorEvent,
        ErrorKind::MalformedJson,
        ErrorKind::EventTooLarge,
        ErrorKind::ResponseTooLarge,
        ErrorKind::Cancelled,
        ErrorKind::EngineStopped,
    ];

    /// The stable name, as in the run document and `data-kind` attributes.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Auth => "auth",
            ErrorKind::NotFound => "not_found",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::ServerError => "server_error",
            ErrorKind::TimeoutBeforeHeaders => "timeout_before_headers",
            ErrorKind::TimeoutMidStream => "timeout_mid_stream",
            ErrorKind::Network => "network",
            ErrorKind::NotEventStream => "not_event_stream",
            ErrorKind::EmptyStream => "empty_stream",
            ErrorKind::StreamCut => "stream_cut",
            ErrorKind::StreamErrorEvent => "stream_error_event",
            ErrorKind::MalformedJson => "malformed_json",
            ErrorKind::EventTooLarge => "event_too_large",
            ErrorKind::ResponseTooLarge => "response_too_large",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::EngineStopped => "engine_stopped",
        }
    }

    /// The kind for an HTTP status that is not a success, `None` for 2xx.
    pub fn from_status(status: u16) -> Option<ErrorKind> {
        match status {
            200..=299 => None,
            401 | 403 => Some(ErrorKind::Auth),
            404 => Some(ErrorKind::NotFound),
            429 => Some(ErrorKind::RateLimited),
            500..=599 => Some(ErrorKind::ServerError),
            _ => Some(ErrorKind::BadRequest),
        }
    }

    /// A short title.
    pub fn title(self, lang: Lang) -> &'static str {
        let (en, zh) = match self {
            ErrorKind::Auth => ("Key rejected (401/403)", "密钥被拒绝（401/403）"),
            ErrorKind::NotFound => ("Not found (404)", "未找到（404）"),
            ErrorKind::RateLimited => ("Rate limited (429)", "被限流（429）"),
            ErrorKind::BadRequest => ("Request rejected (4xx)", "请求被拒绝（4xx）"),
            ErrorKind::ServerError => ("Server error (5xx)", "服务端错误（5xx）"),
            ErrorKind::TimeoutBeforeHeaders => ("Timeout before the response", "响应前超时"),
            ErrorKind::TimeoutMidStream => ("Timeout mid-stream", "流式输出中途超时"),
            ErrorKind::Network => ("Network failure (CORS?)", "网络失败（CORS？）"),
            ErrorKind::NotEventStream => ("Not an event stream", "返回的不是事件流"),
            ErrorKind::EmptyStream => ("Empty stream (no token)", "空流（没有 token）"),
            ErrorKind::StreamCut => ("Stream cut", "流被截断"),
            ErrorKind::StreamErrorEvent => ("Error inside the stream", "流中返回错误"),
            ErrorKind::MalformedJson => ("Malformed JSON event", "事件 JSON 格式错误"),
            ErrorKind::EventTooLarge => ("Event too large", "事件过大"),
            ErrorKind::ResponseTooLarge => ("Response too long", "响应过长"),
            ErrorKind::Cancelled => ("Cancelled by you", "已被你取消"),
            ErrorKind::EngineStopped => (
                "Measurement lost (engine stopped)",
                "测量丢失（引擎已停止）",
            ),
        };
        match lang {
            Lang::En => en,
            Lang::Zh => zh,
        }
    }

    /// One line a user can act on.
    pub fn hint(self, lang: Lang) -> &'static str {
        let (en, zh) = match self {
            ErrorKind::Auth => (
                "Check the API key: no spaces or missing characters, not disabled, quota left; some gateways want an `api-key` header instead of `Authorization: Bearer`.",
                "检查 API Key：有没有多余空格或漏字符、是否被禁用、额度是否耗尽；有些网关要求用 `api-key` 头而不是 `Authorization: Bearer`。",
            ),
            ErrorKind::NotFound => (
                "Check the model name (copy it from the models list) and the base URL: it should end before /chat/completions, usually in /v1.",
                "检查模型名（从模型列表复制，不要手打）和 Base URL：它应停在 /chat/completions 之前，通常以 /v1 结尾。",
            ),
            ErrorKind::RateLimited => (
                "The server is limiting your rate: lower the concurrency, wait for Retry-After, or use a key with a higher limit.",
                "服务端在限流：降低并发、按 Retry-After 等待后再试，或换一个额度更高的 Key。",
            ),
            ErrorKind::BadRequest => (
                "The server rejected the body: if it complains about stream_options, turn off \"include usage\"; check max_tokens and the extra JSON fields.",
                "服务端拒绝了请求体：如果提示 stream_options，关闭“包含 usage”；再检查 max_tokens 和额外的 JSON 字段。",
            ),
            ErrorKind::ServerError => (
                "The server or a gateway in front of it failed: retry at a lower concurrency and check the server's logs.",
                "服务端或其前面的网关出错：降低并发重试，并查看服务端日志。",
            ),
            ErrorKind::TimeoutBeforeHeaders => (
                "No response before the timeout: requests are queueing or the server is down. Raise the timeout, or step back to the previous concurrency.",
                "超时前没有任何响应：请求在排队或服务不可用。调大超时，或退回上一档并发。",
            ),
            ErrorKind::TimeoutMidStream => (
                "The stream did not finish in time: raise the timeout or lower max_tokens; at this concurrency decoding is too slow. If no token came at all (only keep-alive comments), the server or a gateway is holding the request.",
                "流在超时前没有结束：调大超时或调小 max_tokens；在这个并发下解码太慢。如果一个 token 都没来（只有 keep-alive 注释），是服务端或网关把请求挂住了。",
            ),
            ErrorKind::Network => (
                "The browser got no response: the server must allow CORS from this page (Access-Control-Allow-Origin), an HTTPS page cannot call http://, the server is not reachable, or the browser refused its answer (headers too large, a broken response); the browser's console says which.",
                "浏览器没有收到响应：服务端需要允许本页面的跨域请求（Access-Control-Allow-Origin）；HTTPS 页面不能调用 http:// 地址；服务不可达；或者浏览器拒收了它的响应（响应头过大、响应损坏）。浏览器控制台会写明是哪一种。",
            ),
            ErrorKind::NotEventStream => (
                "The server answered, but not with text/event-stream: it may ignore stream: true, or the URL points at a web page instead of the API.",
                "服务端有响应但不是 text/event-stream：它可能忽略了 stream: true，或者 URL 指向的是网页而不是 API。",
            ),
            ErrorKind::EmptyStream => (
                "The stream ended without a token: raise max_tokens above 100 and try a neutral prompt (a content policy may have stopped it).",
                "流结束了却没有任何 token：把 max_tokens 调到 100 以上，换一条中性的 prompt（可能触发了内容策略）。",
            ),
            ErrorKind::StreamCut => (
                "The connection closed before [DONE] or a finish_reason: a proxy or load balancer may cut long streams, or the server crashed.",
                "连接在 [DONE] 或 finish_reason 之前断开：代理或负载均衡可能切断长连接，或者服务端崩溃。",
            ),
            ErrorKind::StreamErrorEvent => (
                "The server reported an error inside the stream after answering 200: read the message; it is often overload or a context-length limit.",
                "服务端先返回 200，又在流中报错：看错误信息，常见原因是过载或超出上下文长度。",
            ),
            ErrorKind::MalformedJson => (
                "An event was not valid JSON: the server or a proxy in between mangled the stream.",
                "某个事件不是合法 JSON：服务端或中间代理破坏了流。",
            ),
            ErrorKind::EventTooLarge => (
                "One line or event went past 1 MiB, the most tokenmeter reads of one, and it stopped reading there: what came is not a token stream (a line without end, binary data, a body that decompresses without end), or the server packs far more text into one event than a model writes at once.",
                "单行或单个事件超过 1 MiB（tokenmeter 读取单个事件的上限），已在此处停止读取：收到的不是 token 流（没有换行的长行、二进制数据、解压后无穷大的响应体），或者服务端把远超模型一次所写的文本塞进了一个事件。",
            ),
            ErrorKind::ResponseTooLarge => (
                "The answer went past the most tokenmeter reads of one response, and it stopped reading there: the server may ignore max_tokens or never end its stream. Check that max_tokens is honoured (vLLM: --max-model-len; a gateway may drop the field).",
                "回答超过了 tokenmeter 单个响应读取的上限，已在此处停止读取：服务端可能忽略了 max_tokens，或者流永不结束。检查 max_tokens 是否生效（vLLM 看 --max-model-len；网关可能丢掉了这个字段）。",
            ),
            ErrorKind::Cancelled => (
                "You cancelled the run; everything measured before that is kept.",
                "你取消了这次运行；取消前测得的数据都保留了。",
            ),
            ErrorKind::EngineStopped => (
                "One of the page's engine workers stopped (the browser ended it, or it ran out of memory) while this request was in flight, so its answer was not measured; the server is not to blame. Run again, with fewer engine workers if it recurs.",
                "页面的某个测量引擎 worker 在这个请求进行中停止了（被浏览器结束，或内存不足），它的响应没有被测到；这不是服务端的问题。请重新运行；如果反复出现，减少测量引擎 worker 的数量。",
            ),
        };
        match lang {
            Lang::En => en,
            Lang::Zh => zh,
        }
    }
}

/// A failed request's error, as stored in its record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestError {
    /// What went wrong, by its stable name.
    pub kind: ErrorKind,
    /// What happened, in the words of the server or the browser where there are any.
    pub detail: String,
    /// The first bytes of the response body, as text, for the errors panel.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub body_sample: Option<String>,
    /// `Retry-After` of a 429, in seconds.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub retry_after_s: Option<f64>,
}

/// Longest body sample kept with an error, in bytes.
pub(crate) const BODY_SAMPLE_BYTES: usize = 2048;

/// Longest error detail kept, in bytes: a server's message can be anything.
pub(crate) const DETAIL_BYTES: usize = 1024;

/// What a secret is replaced with in error text.
pub(crate) const REDACTED: &str = "[redacted]";

impl RequestError {
    /// Removes every one of `secrets` (the run's key) from the detail and the body
    /// sample, and bounds the detail's length. Servers and gateways echo request
    /// headers in error bodies, and error text is shown, kept and exported: the
    /// engine calls this before a record leaves it. Secrets shorter than four
    /// characters are left alone (they would redact ordinary text).
    pub fn redact(&mut self, secrets: &[&str]) {
        self.detail = redacted(&cut(&self.detail, DETAIL_BYTES), secrets);
        if let Some(sample) = &self.body_sample {
            self.body_sample = Some(redacted(sample, secrets));
        }
    }
}

/// `text` without any of `secrets`, nor a secret's beginning where `text` was cut
/// (a sample ending in `…` may have cut a key in two).
fn redacted(text: &str, secrets: &[&str]) -> String {
    let mut text = text.to_owned();
    for secret in secrets.iter().map(|s| s.trim()).filter(|s| s.len() >= 4) {
        text = text.replace(secret, REDACTED);
        let body = text.strip_suffix('…').unwrap_or(&text);
        let cut_secret = (4..secret.len())
            .rev()
            .filter(|&n| secret.is_char_boundary(n))
            .find(|&n| body.ends_with(&secret[..n]));
        if let Some(n) = cut_secret {
            let keep = body.len() - n;
            let ellipsis = if text.ends_with('…') { "…" } else { "" };
            text = format!("{}{REDACTED}{ellipsis}", &body[..keep]);
        }
    }
    text
}

/// `text` cut to at most `max` bytes at a character boundary, with `…` when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The start of a body, decoded lossily and cut at a character boundary.
pub(crate) fn body_sample(body: &[u8]) -> String {
    let cut = body.len().min(BODY_SAMPLE_BYTES);
    let mut text = String::from_utf8_lossy(&body[..cut]).into_owned();
    // A cut inside a multi-byte character decodes to U+FFFD at the end: drop it.
    if cut < body.len() {
        while text.ends_with('\u{FFFD}') {
            text.pop();
        }
        text.push('…');
    }
    text
}

/// `Retry-After` as seconds: either delay-seconds or, when an HTTP date, unknown here
/// (the core has no clock), so `None`.
pub(crate) fn parse_retry_after(value: &str) -> Option<f64> {
    value.trim().parse::<f64>().ok().filter(|s| *s >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_classes() {
        assert_eq!(ErrorKind::from_status(200), None);
        assert_eq!(ErrorKind::from_status(401), Some(ErrorKind::Auth));
        assert_eq!(ErrorKind::from_status(403), Some(ErrorKind::Auth));
        assert_eq!(ErrorKind::from_status(404), Some(ErrorKind::NotFound));
        assert_eq!(ErrorKind::from_status(429), Some(ErrorKind::RateLimited));
        assert_eq!(ErrorKind::from_status(422), Some(ErrorKind::BadRequest));
        assert_eq!(ErrorKind::from_status(502), Some(ErrorKind::ServerError));
    }

    #[test]
    fn names_are_stable_and_match_serde() {
        for kind in ErrorKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert!(!kind.hint(Lang::En).is_empty() && !kind.hint(Lang::Zh).is_empty());
            assert!(!kind.title(Lang::En).is_empty() && !kind.title(Lang::Zh).is_empty());
        }
    }

    #[test]
    fn the_key_is_redacted_from_error_text_even_when_cut() {
        let key = "sk-proj-0123456789abcdef";
        let body = format!(
            r#"{{"error":{{"message":"bad request; the request was:\nauthorization: Bearer {key}\napi-key: {key}"}}}}"#
        );
        let mut err = RequestError {
            kind: ErrorKind::BadRequest,
            detail: format!("HTTP 400: {body}"),
            body_sample: Some(body_sample(body.as_bytes())),
            retry_after_s: None,
        };
        err.redact(&[key]);
        assert!(!err.detail.contains("sk-proj"), "{}", err.detail);
        let sample = err.body_sample.unwrap();
        assert!(!sample.contains("0123456789"), "{sample}");
        assert_eq!(sample.matches(REDACTED).count(), 2);
        assert!(sample.contains("authorization: Bearer [redacted]"));
        // A sample cut inside the key keeps none of it.
        let mut cut_err = RequestError {
            kind: ErrorKind::BadRequest,
            detail: "HTTP 400".into(),
            body_sample: Some(format!("Bearer {}…", &key[..10])),
            retry_after_s: None,
        };
        cut_err.redact(&[key]);
        assert_eq!(cut_err.body_sample.unwrap(), "Bearer [redacted]…");
        // Short "secrets" are not redacted; long details are bounded.
        let mut long = RequestError {
            kind: ErrorKind::StreamErrorEvent,
            detail: "错".repeat(2_000),
            body_sample: None,
            retry_after_s: None,
        };
        long.redact(&["x", ""]);
        assert!(long.detail.len() <= DETAIL_BYTES + '…'.len_utf8());
        assert!(long.detail.ends_with('…'));
    }

    #[test]
    fn body_sample_cuts_on_a_character_boundary() {
        let body = "错".repeat(1000); // 3000 bytes
        let sample = body_sample(body.as_bytes());
        assert!(sample.ends_with('…'));
        assert_eq!(
            sample.chars().filter(|&c| c == '错').count(),
            BODY_SAMPLE_BYTES / 3
        );
        assert_eq!(body_sample(b"<html>502</html>"), "<html>502</html>");
    }

    #[test]
    fn retry_after_seconds() {
        assert_eq!(parse_retry_after(" 7 "), Some(7.0));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
