//! OpenAI's Responses API (`POST /responses` with `"stream": true`; vLLM serves it
//! too). Every event's data is an object with a `type`:
//!
//! - `response.created`, `response.in_progress`: the response's `id`, no token;
//! - `response.output_text.delta` (and `response.refusal.delta`): answer text in
//!   `delta`;
//! - `response.reasoning_text.delta`, `response.reasoning_summary_text.delta`:
//!   reasoning text;
//! - `response.output_item.added` with a `function_call` item (its `name`), then
//!   `response.function_call_arguments.delta`: a tool call;
//! - `response.completed` / `response.incomplete` (`incomplete_details.reason`,
//!   `max_output_tokens` for an answer cut at the length asked): the stream's last
//!   word, with `usage` (`input_tokens`, `input_tokens_details.cached_tokens`,
//!   `output_tokens`, `output_tokens_details.reasoning_tokens`);
//! - `response.failed` (`response.error`) and `error` (`message`): the server
//!   failed mid-way.
//!
//! Every other type (content parts, items done, text done) carries nothing to
//! measure.

use serde::Deserialize;
use serde_json::Value;

use super::{openai::error_message, Chunk, MalformedEvent, StreamItem, Usage};

#[derive(Deserialize)]
struct WireEvent {
    #[serde(rename = "type", default)]
    kind: String,
    /// A string in every `….delta` event; read leniently elsewhere.
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    response: Option<WireResponse>,
    #[serde(default)]
    item: Option<WireItem>,
    /// The `error` event's.
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    incomplete_details: Option<WireIncomplete>,
}

#[derive(Deserialize)]
struct WireIncomplete {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireItem {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<WireInputDetails>,
    #[serde(default)]
    output_tokens_details: Option<WireOutputDetails>,
}

#[derive(Deserialize)]
struct WireInputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireOutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(self) -> Usage {
        Usage {
            prompt_tokens: self.input_tokens,
            completion_tokens: self.output_tokens,
            reasoning_tokens: self.output_tokens_details.and_then(|d| d.reasoning_tokens),
            cached_tokens: self.input_tokens_details.and_then(|d| d.cached_tokens),
        }
    }
}

/// Interprets one event's data (trimmed, not `[DONE]`).
pub(super) fn interpret(data: &str) -> Result<StreamItem, MalformedEvent> {
    let wire: WireEvent = serde_json::from_str(data).map_err(MalformedEvent::of)?;
    let delta = || match &wire.delta {
        Some(Value::String(text)) => text.clone(),
        _ => String::new(),
    };
    let mut chunk = Chunk::default();
    match wire.kind.as_str() {
        "response.output_text.delta" | "response.refusal.delta" => chunk.content = delta(),
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            chunk.reasoning = delta();
        }
        "response.function_call_arguments.delta" => chunk.tool_call = delta(),
        "response.output_item.added" => {
            if let Some(WireItem {
                kind,
                name: Some(name),
            }) = wire.item
            {
                if kind == "function_call" {
                    chunk.tool_call = name;
                }
            }
        }
        "response.completed" | "response.incomplete" => {
            let response = wire.response.unwrap_or(WireResponse {
                id: None,
                usage: None,
                error: None,
                incomplete_details: None,
            });
            chunk.id = response.id.filter(|id| !id.is_empty());
            chunk.usage = response.usage.map(WireUsage::usage);
            chunk.finish_reason = Some(match response.incomplete_details.and_then(|d| d.reason) {
                None => "stop".into(),
                Some(reason) if reason == "max_output_tokens" => "length".into(),
                Some(reason) => reason,
            });
            chunk.last = true;
        }
        "response.failed" => {
            let error = wire.response.and_then(|r| r.error);
            return Ok(StreamItem::Error {
                message: error.as_ref().map_or_else(
                    || "the response failed (response.failed)".into(),
                    error_message,
                ),
            });
        }
        "error" => {
            return Ok(StreamItem::Error {
                message: wire.message.unwrap_or_else(|| "an error event".into()),
            })
        }
        _ => chunk.id = wire.response.and_then(|r| r.id).filter(|id| !id.is_empty()),
    }
    Ok(StreamItem::Chunk(chunk))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(data: &str) -> Chunk {
        super::super::chunk_of(interpret(data))
    }

    #[test]
    fn a_stream_s_events_as_openai_sends_them() {
        let created = chunk(
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_67c","object":"response","status":"in_progress","output":[],"usage":null}}"#,
        );
        assert_eq!(created.id.as_deref(), Some("resp_67c"));
        assert!(!created.has_tokens() && !created.last);
        let text = chunk(
            r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"你好","sequence_number":4}"#,
        );
        assert_eq!(text.content, "你好");
        let thought = chunk(r#"{"type":"response.reasoning_text.delta","delta":"想一想"}"#);
        assert!(thought.is_reasoning_only());
        let summary = chunk(r#"{"type":"response.reasoning_summary_text.delta","delta":"s"}"#);
        assert_eq!(summary.reasoning, "s");
        assert!(!chunk(r#"{"type":"response.output_text.done","text":"你好"}"#).has_tokens());
        assert!(!chunk(
            r#"{"type":"response.content_part.added","part":{"type":"output_text","text":""}}"#
        )
        .has_tokens());
        let done = chunk(
            r#"{"type":"response.completed","response":{"id":"resp_67c","status":"completed","usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":32},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":123}}}"#,
        );
        assert!(done.last);
        assert_eq!(done.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            done.usage,
            Some(Usage {
                prompt_tokens: Some(36),
                completion_tokens: Some(87),
                reasoning_tokens: Some(20),
                cached_tokens: Some(32),
            })
        );
    }

    #[test]
    fn an_answer_cut_at_the_length_asked_is_incomplete_and_still_the_end() {
        let cut = chunk(
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":5,"output_tokens":16}}}"#,
        );
        assert!(cut.last);
        assert_eq!(cut.finish_reason.as_deref(), Some("length"));
        assert_eq!(cut.usage.unwrap().completion_tokens, Some(16));
        let filtered = chunk(
            r#"{"type":"response.incomplete","response":{"incomplete_details":{"reason":"content_filter"}}}"#,
        );
        assert_eq!(filtered.finish_reason.as_deref(), Some("content_filter"));
    }

    #[test]
    fn a_function_call_is_output() {
        let added = chunk(
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}}"#,
        );
        assert_eq!(added.tool_call, "get_weather");
        let message = chunk(
            r#"{"type":"response.output_item.added","item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}"#,
        );
        assert!(!message.has_tokens());
        let args = chunk(
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"city\":"}"#,
        );
        assert_eq!(args.tool_call, r#"{"city":"#);
        assert!(args.content.is_empty() && args.has_tokens());
    }

    #[test]
    fn failures_inside_the_stream() {
        assert_eq!(
            interpret(
                r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model is overloaded"}}}"#
            )
            .unwrap(),
            StreamItem::Error {
                message: "The model is overloaded".into()
            }
        );
        assert_eq!(
            interpret(r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#)
                .unwrap(),
            StreamItem::Error {
                message: "slow down".into()
            }
        );
        assert!(interpret(r#"{"type":"response.output_text.delta","delta":"x""#).is_err());
        // A delta that is not text is no text (and no failure).
        assert!(!chunk(r#"{"type":"response.output_text.delta","delta":{"odd":1}}"#).has_tokens());
    }
}
