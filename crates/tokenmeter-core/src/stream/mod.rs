//! OpenAI-compatible streaming: request bodies for `/chat/completions` and the legacy
//! `/completions`, and the meaning of each event of the response stream.
//!
//! What a chunk can carry, as real servers send it:
//! - a role-only first chunk (`{"delta": {"role": "assistant"}}`), which is no token;
//! - `delta.content` (chat) or `text` (completions): answer tokens;
//! - `delta.reasoning_content` (DeepSeek, vLLM) or `delta.reasoning` (OpenRouter,
//!   newer vLLM): reasoning tokens, which count for TTFT but not for the time to the
//!   first answer token;
//! - empty `choices` (Azure's prompt filter results, the final usage chunk);
//! - `usage` (with `stream_options.include_usage`), `finish_reason`;
//! - `{"error": ...}` inside a 200 stream, when the server fails mid-way;
//! - `[DONE]`, the end sentinel.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which OpenAI endpoint a plan calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointKind {
    /// `POST {base}/chat/completions` with `messages`.
    #[default]
    Chat,
    /// `POST {base}/completions` with `prompt` (legacy, still served by vLLM and others).
    Completions,
}

impl EndpointKind {
    /// The path appended to the base URL.
    pub fn path(self) -> &'static str {
        match self {
            EndpointKind::Chat => "/chat/completions",
            EndpointKind::Completions => "/completions",
        }
    }
}

/// Everything that goes into one request body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BodySpec {
    pub kind: EndpointKind,
    pub model: String,
    pub prompt: String,
    pub max_tokens: u32,
    /// `None` leaves the server's default.
    pub temperature: Option<f64>,
    /// Ask for the final usage chunk (`stream_options.include_usage`). Some servers
    /// reject the field: the switch turns it off.
    pub include_usage: bool,
    /// Extra top-level fields merged into the body last (they win over ours).
    pub extra: Map<String, Value>,
    /// A chat's messages as written (a prompt file's), sent instead of `prompt`
    /// as the user's one message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Value>>,
}

/// The JSON body of a streaming request.
pub fn request_body(spec: &BodySpec) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(spec.model.clone()));
    match spec.kind {
        EndpointKind::Chat => {
            let messages = match &spec.messages {
                Some(messages) => Value::Array(messages.clone()),
                None => serde_json::json!([{"role": "user", "content": spec.prompt}]),
            };
            body.insert("messages".into(), messages);
        }
        EndpointKind::Completions => {
            body.insert("prompt".into(), Value::String(spec.prompt.clone()));
        }
    }
    body.insert("max_tokens".into(), spec.max_tokens.into());
    if let Some(t) = spec.temperature {
        body.insert("temperature".into(), t.into());
    }
    body.insert("stream".into(), Value::Bool(true));
    if spec.include_usage {
        body.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
    for (key, value) in &spec.extra {
        body.insert(key.clone(), value.clone());
    }
    Value::Object(body)
}

/// Token counts the server reported in a `usage` object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// `completion_tokens_details.reasoning_tokens`, when the server splits them out.
    pub reasoning_tokens: Option<u64>,
    /// `prompt_tokens_details.cached_tokens`: prompt tokens the server took from its
    /// prompt (prefix) cache instead of computing them (OpenAI, vLLM, llama.cpp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

/// What one event of the stream means.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamItem {
    /// `data: [DONE]`.
    Done,
    /// An ordinary chunk.
    Chunk(Chunk),
    /// `{"error": ...}` sent inside the stream.
    Error { message: String },
}

/// The parts of a chunk that measuring needs (all choices together).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chunk {
    /// The chunk's `id` (`chatcmpl-…`), which names the request in server logs.
    pub id: Option<String>,
    /// Answer text (`delta.content` or `text`).
    pub content: String,
    /// Reasoning text (`delta.reasoning_content` or `delta.reasoning`).
    pub reasoning: String,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// The server's own timings of the request, when it reports them.
    pub timings: Option<ServerTimings>,
}

/// What a server says it spent on a request, from llama.cpp's `timings` object
/// (`prompt_ms`: processing the prompt, up to the first token; `predicted_ms`:
/// generating the rest). Its queue before prompt processing is in neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTimings {
    pub prompt_ms: Option<f64>,
    pub predicted_ms: Option<f64>,
    /// Prompt tokens the server computed (`prompt_n`): those it did not find in its
    /// cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_n: Option<u64>,
    /// Prompt tokens it took from its cache (`cache_n`, newer llama.cpp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_n: Option<u64>,
}

impl Chunk {
    /// True when the chunk carries generated text of either kind: such a chunk is
    /// a token arrival for TTFT, ITL and chunk counting.
    pub fn has_tokens(&self) -> bool {
        !self.content.is_empty() || !self.reasoning.is_empty()
    }
}

/// An event whose data is neither `[DONE]` nor a JSON object we can read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed JSON in the stream: {reason}")]
pub struct MalformedEvent {
    pub reason: String,
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    /// Read leniently: a server's odd timings never make a chunk unreadable.
    #[serde(default)]
    timings: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens_details: Option<WireUsageDetails>,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
}

#[derive(Deserialize)]
struct WireUsageDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Interprets the data of one event.
pub fn interpret(data: &str) -> Result<StreamItem, MalformedEvent> {
    let trimmed = data.trim();
    if trimmed == "[DONE]" {
        return Ok(StreamItem::Done);
    }
    let wire: WireChunk = serde_json::from_str(trimmed).map_err(|err| MalformedEvent {
        reason: err.to_string(),
    })?;
    if let Some(error) = wire.error.filter(|e| !e.is_null()) {
        return Ok(StreamItem::Error {
            message: error_message(&error),
        });
    }
    let mut chunk = Chunk {
        id: wire.id.filter(|id| !id.is_empty()),
        usage: wire.usage.map(|u| Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens),
            cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
        }),
        timings: wire.timings.as_ref().and_then(|t| {
            let ms = |key: &str| {
                t.get(key)
                    .and_then(Value::as_f64)
                    .filter(|v| v.is_finite() && *v >= 0.0)
            };
            let count = |key: &str| t.get(key).and_then(Value::as_u64);
            let timings = ServerTimings {
                prompt_ms: ms("prompt_ms"),
                predicted_ms: ms("predicted_ms"),
                prompt_n: count("prompt_n"),
                cache_n: count("cache_n"),
            };
            (timings.prompt_ms.is_some() || timings.predicted_ms.is_some()).then_some(timings)
        }),
        ..Chunk::default()
    };
    for choice in wire.choices.unwrap_or_default() {
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content {
                chunk.content.push_str(&text);
            }
            if let Some(text) = delta.reasoning_content.or(delta.reasoning) {
                chunk.reasoning.push_str(&text);
            }
        }
        if let Some(text) = choice.text {
            chunk.content.push_str(&text);
        }
        if choice.finish_reason.is_some() {
            chunk.finish_reason = choice.finish_reason;
        }
    }
    Ok(StreamItem::Chunk(chunk))
}

/// The human part of an OpenAI-style error value (`{"message": ...}` or a string).
pub fn error_message(error: &Value) -> String {
    match error {
        Value::String(s) => s.clone(),
        Value::Object(obj) => obj
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| error.to_string()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(data: &str) -> Chunk {
        match interpret(data).unwrap() {
            StreamItem::Chunk(c) => c,
            other => panic!("expected a chunk, got {other:?}"),
        }
    }

    #[test]
    fn chat_body_has_stream_options_and_merged_extras() {
        let mut extra = Map::new();
        extra.insert("top_p".into(), 0.9.into());
        extra.insert("max_tokens".into(), 5.into());
        let body = request_body(&BodySpec {
            kind: EndpointKind::Chat,
            model: "m".into(),
            prompt: "你好".into(),
            max_tokens: 300,
            temperature: Some(0.7),
            include_usage: true,
            extra,
            messages: None,
        });
        assert_eq!(
            body,
            serde_json::json!({
                "model": "m",
                "messages": [{"role": "user", "content": "你好"}],
                "max_tokens": 5,
                "temperature": 0.7,
                "stream": true,
                "stream_options": {"include_usage": true},
                "top_p": 0.9
            })
        );
    }

    #[test]
    fn completions_body_without_usage_or_temperature() {
        let body = request_body(&BodySpec {
            kind: EndpointKind::Completions,
            model: "m".into(),
            prompt: "hi".into(),
            max_tokens: 10,
            temperature: None,
            include_usage: false,
            extra: Map::new(),
            messages: None,
        });
        assert_eq!(
            body,
            serde_json::json!({"model": "m", "prompt": "hi", "max_tokens": 10, "stream": true})
        );
    }

    #[test]
    fn role_only_first_chunk_has_no_tokens() {
        let c = chunk(
            r#"{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        );
        assert!(!c.has_tokens());
    }

    #[test]
    fn content_reasoning_and_text() {
        assert_eq!(
            chunk(r#"{"choices":[{"delta":{"content":"世界"}}]}"#).content,
            "世界"
        );
        assert_eq!(
            chunk(r#"{"choices":[{"delta":{"reasoning_content":"想"}}]}"#).reasoning,
            "想"
        );
        assert_eq!(
            chunk(r#"{"choices":[{"delta":{"reasoning":"think"}}]}"#).reasoning,
            "think"
        );
        assert_eq!(
            chunk(r#"{"choices":[{"text":" the","index":0}]}"#).content,
            " the"
        );
    }

    #[test]
    fn usage_chunk_with_empty_choices() {
        let c = chunk(
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":300,"total_tokens":312,"completion_tokens_details":{"reasoning_tokens":40}}}"#,
        );
        assert!(!c.has_tokens());
        assert_eq!(
            c.usage,
            Some(Usage {
                prompt_tokens: Some(12),
                completion_tokens: Some(300),
                reasoning_tokens: Some(40),
                cached_tokens: None,
            })
        );
    }

    #[test]
    fn azure_prompt_filter_chunk_is_harmless() {
        let c = chunk(
            r#"{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}"#,
        );
        assert_eq!(c, Chunk::default(), "an empty id is no id");
        let c = chunk(r#"{"id":"chatcmpl-9","choices":[{"delta":{"content":"x"}}]}"#);
        assert_eq!(c.id.as_deref(), Some("chatcmpl-9"));
    }

    #[test]
    fn finish_reason_and_null_usage() {
        let c = chunk(r#"{"choices":[{"delta":{},"finish_reason":"length"}],"usage":null}"#);
        assert_eq!(c.finish_reason.as_deref(), Some("length"));
        assert_eq!(c.usage, None);
    }

    #[test]
    fn done_error_and_malformed() {
        assert_eq!(interpret("[DONE]").unwrap(), StreamItem::Done);
        assert_eq!(
            interpret(r#"{"error":{"message":"overloaded","type":"server_error"}}"#).unwrap(),
            StreamItem::Error {
                message: "overloaded".into()
            }
        );
        assert_eq!(
            interpret(r#"{"error":"boom"}"#).unwrap(),
            StreamItem::Error {
                message: "boom".into()
            }
        );
        assert!(interpret(r#"{"choices":[{"delta":{"content":"x"}}"#).is_err());
        assert!(interpret("[1,2]").is_err());
    }
}
