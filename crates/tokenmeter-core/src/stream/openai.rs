//! OpenAI's chunks: `/chat/completions` and the legacy `/completions`.
//!
//! What a chunk can carry, as real servers send it:
//! - a role-only first chunk (`{"delta": {"role": "assistant"}}`), which is no token;
//! - `delta.content` (chat) or `text` (completions): answer tokens;
//! - `delta.reasoning_content` (DeepSeek, vLLM) or `delta.reasoning` (OpenRouter,
//!   newer vLLM): reasoning tokens, which count for TTFT but not for the time to the
//!   first answer token;
//! - `delta.tool_calls[].function` (`name` in the first piece, then `arguments`):
//!   a tool call, which is output the model generates;
//! - empty `choices` (Azure's prompt filter results, the final usage chunk);
//! - `usage` (with `stream_options.include_usage`), `finish_reason`;
//! - `{"error": ...}` inside a 200 stream, when the server fails mid-way;
//! - `[DONE]`, the end sentinel (read by [`super::interpret`]).

use serde::Deserialize;
use serde_json::Value;

use super::{Chunk, MalformedEvent, ServerTimings, StreamItem, Usage};

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
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

/// One tool call's piece of a chunk: the function's name (in the first) and a
/// piece of its arguments.
#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
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

/// Interprets one event's data (trimmed, not `[DONE]`).
pub(super) fn interpret(data: &str) -> Result<StreamItem, MalformedEvent> {
    let wire: WireChunk = serde_json::from_str(data).map_err(MalformedEvent::of)?;
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
            for call in delta.tool_calls.unwrap_or_default() {
                let Some(function) = call.function else {
                    continue;
                };
                for text in [function.name, function.arguments].into_iter().flatten() {
                    chunk.tool_call.push_str(&text);
                }
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
pub(crate) fn error_message(error: &Value) -> String {
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
        super::super::chunk_of(interpret(data))
    }

    #[test]
    fn a_tool_call_s_name_and_arguments_are_its_text() {
        let first = chunk(
            r#"{"choices":[{"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#,
        );
        assert_eq!(first.tool_call, "get_weather");
        assert!(first.has_tokens() && !first.is_reasoning_only());
        let next = chunk(
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"北京\"}"}}]}}]}"#,
        );
        assert_eq!(next.tool_call, r#"{"city": "北京"}"#);
        assert!(next.content.is_empty());
        let end = chunk(r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#);
        assert_eq!(end.finish_reason.as_deref(), Some("tool_calls"));
        assert!(!chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#).has_tokens());
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
