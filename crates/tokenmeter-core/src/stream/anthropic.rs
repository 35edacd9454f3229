//! Anthropic's Messages API (`POST /messages` with `"stream": true`, the key as
//! `x-api-key`, `anthropic-version: 2023-06-01`; from a browser also
//! `anthropic-dangerous-direct-browser-access: true`). Every event's data is an
//! object with a `type`:
//!
//! - `message_start`: the message's `id` and the input's `usage`
//!   (`input_tokens`, and `cache_read_input_tokens` / `cache_creation_input_tokens`
//!   beside it: the prompt is their sum, the cached part the reads);
//! - `content_block_start` (a `tool_use` block's `name`), `content_block_delta` with
//!   `text_delta` (answer), `thinking_delta` (reasoning) or `input_json_delta` (a
//!   tool call's arguments; `signature_delta` carries nothing to measure),
//!   `content_block_stop`;
//! - `message_delta`: the `stop_reason` and the output's `usage.output_tokens`;
//! - `message_stop`: the stream's last word;
//! - `ping`: nothing; `error` (`error.message`, `overloaded_error` when busy):
//!   the server failed mid-way.
//!
//! Stop reasons are said in OpenAI's words where they mean the same: `end_turn`
//! and `stop_sequence` are `stop`, `max_tokens` is `length`, `tool_use` is
//! `tool_calls`.

use serde::Deserialize;
use serde_json::Value;

use super::{openai::error_message, Chunk, MalformedEvent, StreamItem, Usage};

#[derive(Deserialize)]
struct WireEvent {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    content_block: Option<WireBlock>,
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireBlock {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// The input's counts: all of the prompt, and the part read from the cache.
    fn input(&self) -> Usage {
        let parts = [
            self.input_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        ];
        let prompt_tokens = parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum());
        Usage {
            prompt_tokens,
            cached_tokens: self.cache_read_input_tokens,
            ..Usage::default()
        }
    }
}

/// `reason` in OpenAI's words.
fn finish_reason(reason: String) -> String {
    match reason.as_str() {
        "end_turn" | "stop_sequence" => "stop".into(),
        "max_tokens" => "length".into(),
        "tool_use" => "tool_calls".into(),
        _ => reason,
    }
}

/// Interprets one event's data (trimmed, not `[DONE]`).
pub(super) fn interpret(data: &str) -> Result<StreamItem, MalformedEvent> {
    let wire: WireEvent = serde_json::from_str(data).map_err(MalformedEvent::of)?;
    let mut chunk = Chunk::default();
    match wire.kind.as_str() {
        "message_start" => {
            if let Some(message) = wire.message {
                chunk.id = message.id.filter(|id| !id.is_empty());
                // Its output_tokens is a placeholder (1): the count comes at the end.
                chunk.usage = message.usage.as_ref().map(WireUsage::input);
            }
        }
        "content_block_start" => {
            if let Some(WireBlock {
                kind,
                name: Some(name),
            }) = wire.content_block
            {
                if kind == "tool_use" {
                    chunk.tool_call = name;
                }
            }
        }
        "content_block_delta" => {
            if let Some(delta) = wire.delta {
                chunk.content = delta.text.unwrap_or_default();
                chunk.reasoning = delta.thinking.unwrap_or_default();
                chunk.tool_call = delta.partial_json.unwrap_or_default();
            }
        }
        "message_delta" => {
            chunk.finish_reason = wire.delta.and_then(|d| d.stop_reason).map(finish_reason);
            chunk.usage = wire.usage.map(|u| {
                let input = u.input();
                Usage {
                    completion_tokens: u.output_tokens,
                    ..input
                }
            });
        }
        "message_stop" => chunk.last = true,
        "error" => {
            return Ok(StreamItem::Error {
                message: wire
                    .error
                    .as_ref()
                    .map_or_else(|| "an error event".into(), error_message),
            })
        }
        _ => {}
    }
    Ok(StreamItem::Chunk(chunk))
}

/// A chat's messages as Anthropic takes them: the system messages' text as the
/// `system` field (joined by blank lines), the others as they are.
pub(super) fn split_system(messages: &[Value]) -> (Option<String>, Value) {
    let is_system = |m: &Value| m.get("role").and_then(Value::as_str) == Some("system");
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| is_system(m))
        .filter_map(|m| m.get("content").and_then(Value::as_str))
        .collect();
    let rest = messages.iter().filter(|m| !is_system(m)).cloned().collect();
    (
        (!system.is_empty()).then(|| system.join("\n\n")),
        Value::Array(rest),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(data: &str) -> Chunk {
        super::super::chunk_of(interpret(data))
    }

    #[test]
    fn a_stream_s_events_as_anthropic_sends_them() {
        let start = chunk(
            r#"{"type":"message_start","message":{"id":"msg_01X","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":25,"cache_read_input_tokens":100,"cache_creation_input_tokens":0,"output_tokens":1}}}"#,
        );
        assert_eq!(start.id.as_deref(), Some("msg_01X"));
        assert_eq!(
            start.usage,
            Some(Usage {
                prompt_tokens: Some(125),
                completion_tokens: None,
                reasoning_tokens: None,
                cached_tokens: Some(100),
            })
        );
        assert!(!chunk(
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#
        )
        .has_tokens());
        assert!(!chunk(r#"{"type":"ping"}"#).has_tokens());
        let text = chunk(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"你好"}}"#,
        );
        assert_eq!(text.content, "你好");
        let thought = chunk(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"嗯"}}"#,
        );
        assert!(thought.is_reasoning_only());
        assert!(!chunk(r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#).has_tokens());
        let end = chunk(
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
        );
        assert_eq!(end.finish_reason.as_deref(), Some("stop"));
        assert_eq!(end.usage.unwrap().completion_tokens, Some(15));
        assert_eq!(end.usage.unwrap().prompt_tokens, None, "said at the start");
        assert!(!end.last);
        assert!(chunk(r#"{"type":"message_stop"}"#).last);
    }

    #[test]
    fn stop_reasons_in_openai_s_words_and_tool_use_as_output() {
        let reason = |r: &str| {
            chunk(&format!(r#"{{"type":"message_delta","delta":{{"stop_reason":"{r}"}},"usage":{{"output_tokens":1}}}}"#))
                .finish_reason
                .unwrap()
        };
        assert_eq!(
            [
                "end_turn",
                "stop_sequence",
                "max_tokens",
                "tool_use",
                "refusal"
            ]
            .map(reason),
            ["stop", "stop", "length", "tool_calls", "refusal"]
        );
        let block = chunk(
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}"#,
        );
        assert_eq!(block.tool_call, "get_weather");
        let args = chunk(
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"北"}}"#,
        );
        assert_eq!(args.tool_call, "{\"city\": \"北");
        assert!(args.has_tokens() && !args.is_reasoning_only());
    }

    #[test]
    fn an_error_event_is_a_failure_inside_the_stream() {
        assert_eq!(
            interpret(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            )
            .unwrap(),
            StreamItem::Error {
                message: "Overloaded".into()
            }
        );
        assert!(interpret(r#"{"type":"message_stop""#).is_err());
    }

    #[test]
    fn system_messages_become_the_system_field() {
        let messages = serde_json::json!([
            {"role": "system", "content": "你是助手"},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "be brief"},
        ]);
        let (system, rest) = split_system(messages.as_array().unwrap());
        assert_eq!(system.as_deref(), Some("你是助手\n\nbe brief"));
        assert_eq!(rest, serde_json::json!([{"role": "user", "content": "hi"}]));
        let (none, same) = split_system(&[serde_json::json!({"role": "user", "content": "x"})]);
        assert_eq!(
            (none, same),
            (None, serde_json::json!([{"role": "user", "content": "x"}]))
        );
    }
}
