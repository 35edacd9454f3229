//! Streaming APIs: the request bodies of each kind of endpoint, and the meaning of
//! each event of their response streams, in the kind's own module:
//!
//! - [`openai`]: OpenAI's `/chat/completions` and the legacy `/completions`, which
//!   vLLM, SGLang, llama.cpp, TGI and most gateways also serve;
//! - [`responses`]: OpenAI's Responses API (`/responses`, also served by vLLM);
//! - [`anthropic`]: Anthropic's Messages API (`/messages`).
//!
//! Each turns an event's data into the same [`StreamItem`]: a [`Chunk`] of answer,
//! reasoning and tool-call text, usage, a finish reason and whether the event is the
//! stream's last word; an error sent inside the stream; or `[DONE]`.

pub(crate) mod anthropic;
pub(crate) mod openai;
pub(crate) mod responses;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which streaming API a plan calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointKind {
    /// `POST {base}/chat/completions` with `messages`.
    #[default]
    Chat,
    /// `POST {base}/completions` with `prompt` (legacy, still served by vLLM and others).
    Completions,
    /// `POST {base}/responses` with `input` (OpenAI's Responses API; vLLM serves it
    /// too).
    Responses,
    /// `POST {base}/messages` (Anthropic's Messages API), with the key as
    /// `x-api-key` and `anthropic-version`.
    Anthropic,
}

impl EndpointKind {
    /// Every kind, in the order the page offers them.
    pub const ALL: [EndpointKind; 4] = [
        EndpointKind::Chat,
        EndpointKind::Completions,
        EndpointKind::Responses,
        EndpointKind::Anthropic,
    ];

    /// The path appended to the base URL.
    pub fn path(self) -> &'static str {
        match self {
            EndpointKind::Chat => "/chat/completions",
            EndpointKind::Completions => "/completions",
            EndpointKind::Responses => "/responses",
            EndpointKind::Anthropic => "/messages",
        }
    }

    /// The name in plans and in the page's hooks.
    pub fn name(self) -> &'static str {
        match self {
            EndpointKind::Chat => "chat",
            EndpointKind::Completions => "completions",
            EndpointKind::Responses => "responses",
            EndpointKind::Anthropic => "anthropic",
        }
    }

    /// Whether its stream is OpenAI's chunks (`choices`, `[DONE]`): the shape whose
    /// end is `[DONE]` or the usage chunk after a `finish_reason`, and whose
    /// servers read vLLM's `min_tokens` and `ignore_eos`.
    pub fn is_openai_chunks(self) -> bool {
        matches!(self, EndpointKind::Chat | EndpointKind::Completions)
    }
}

/// Everything that goes into one request body.
#[derive(Clone, Debug, PartialEq)]
pub struct BodySpec {
    /// Which API the body is for.
    pub kind: EndpointKind,
    /// The model.
    pub model: String,
    /// The prompt, as the user's message (or the completion's prompt).
    pub prompt: String,
    /// Output tokens asked for.
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
    pub messages: Option<Vec<Value>>,
}

/// The JSON body of a streaming request.
pub fn request_body(spec: &BodySpec) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(spec.model.clone()));
    let user_message = || serde_json::json!([{"role": "user", "content": spec.prompt}]);
    match spec.kind {
        EndpointKind::Chat => {
            let messages = match &spec.messages {
                Some(messages) => Value::Array(messages.clone()),
                None => user_message(),
            };
            body.insert("messages".into(), messages);
            body.insert("max_tokens".into(), spec.max_tokens.into());
        }
        EndpointKind::Completions => {
            body.insert("prompt".into(), Value::String(spec.prompt.clone()));
            body.insert("max_tokens".into(), spec.max_tokens.into());
        }
        EndpointKind::Responses => {
            let input = match &spec.messages {
                Some(messages) => Value::Array(messages.clone()),
                None => Value::String(spec.prompt.clone()),
            };
            body.insert("input".into(), input);
            body.insert("max_output_tokens".into(), spec.max_tokens.into());
        }
        EndpointKind::Anthropic => {
            // System messages are a field of their own there, not a role.
            let (system, messages) = match &spec.messages {
                Some(messages) => anthropic::split_system(messages),
                None => (None, user_message()),
            };
            if let Some(system) = system {
                body.insert("system".into(), Value::String(system));
            }
            body.insert("messages".into(), messages);
            body.insert("max_tokens".into(), spec.max_tokens.into());
        }
    }
    if let Some(t) = spec.temperature {
        body.insert("temperature".into(), t.into());
    }
    body.insert("stream".into(), Value::Bool(true));
    // Only OpenAI's chunks need asking for usage: the other kinds always end
    // with it.
    if spec.include_usage && spec.kind.is_openai_chunks() {
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
    /// Prompt tokens (`prompt_tokens`, or the kind's own name).
    pub prompt_tokens: Option<u64>,
    /// Output tokens (`completion_tokens`, or the kind's own name).
    pub completion_tokens: Option<u64>,
    /// `completion_tokens_details.reasoning_tokens`, when the server splits them out.
    pub reasoning_tokens: Option<u64>,
    /// `prompt_tokens_details.cached_tokens`: prompt tokens the server took from its
    /// prompt (prefix) cache instead of computing them (OpenAI, vLLM, llama.cpp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

impl Usage {
    /// This usage with what `newer` reports over it, field by field: Anthropic's
    /// stream says the input at its start and the output at its end, OpenAI's
    /// says it all at once (or again, cumulatively, in every chunk).
    pub fn updated(self, newer: Usage) -> Usage {
        Usage {
            prompt_tokens: newer.prompt_tokens.or(self.prompt_tokens),
            completion_tokens: newer.completion_tokens.or(self.completion_tokens),
            reasoning_tokens: newer.reasoning_tokens.or(self.reasoning_tokens),
            cached_tokens: newer.cached_tokens.or(self.cached_tokens),
        }
    }
}

/// What one event of the stream means.
// A chunk is made per event and taken apart at once, never stored: boxing it
// would add an allocation per token event to keep a value small that lives for
// one call.
#[allow(clippy::large_enum_variant)]
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
    /// Answer text (`delta.content` or `text`; Responses' `output_text.delta`,
    /// Anthropic's `text_delta`).
    pub content: String,
    /// Reasoning text (`delta.reasoning_content` or `delta.reasoning`).
    pub reasoning: String,
    /// A tool call's text as the model writes it: the function's name and its
    /// arguments (`delta.tool_calls[].function`, Responses'
    /// `function_call_arguments.delta`, Anthropic's `input_json_delta`).
    pub tool_call: String,
    /// Why the answer ended, in OpenAI's words (`stop`, `length`, `tool_calls`, …;
    /// the other kinds' reasons are said so).
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// The server's own timings of the request, when it reports them.
    pub timings: Option<ServerTimings>,
    /// The event is the stream's last word (Responses' `response.completed`,
    /// Anthropic's `message_stop`): the request ends here.
    pub last: bool,
}

/// What a server says it spent on a request, from llama.cpp's `timings` object
/// (`prompt_ms`: processing the prompt, up to the first token; `predicted_ms`:
/// generating the rest). Its queue before prompt processing is in neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTimings {
    /// Processing the prompt, up to the first token, ms.
    pub prompt_ms: Option<f64>,
    /// Generating the rest, ms.
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
        !self.content.is_empty() || !self.reasoning.is_empty() || !self.tool_call.is_empty()
    }

    /// True when its only generated text is reasoning: a token for TTFT, not yet
    /// the answer.
    pub fn is_reasoning_only(&self) -> bool {
        self.content.is_empty() && self.tool_call.is_empty() && !self.reasoning.is_empty()
    }
}

/// An event whose data is neither `[DONE]` nor a JSON object we can read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed JSON in the stream: {reason}")]
pub struct MalformedEvent {
    pub reason: String,
}

impl MalformedEvent {
    fn of(err: serde_json::Error) -> MalformedEvent {
        MalformedEvent {
            reason: err.to_string(),
        }
    }
}

/// Interprets the data of one event of a `kind` stream.
pub fn interpret(kind: EndpointKind, data: &str) -> Result<StreamItem, MalformedEvent> {
    let trimmed = data.trim();
    // Some servers end every kind of stream with it.
    if trimmed == "[DONE]" {
        return Ok(StreamItem::Done);
    }
    match kind {
        EndpointKind::Chat | EndpointKind::Completions => openai::interpret(trimmed),
        EndpointKind::Responses => responses::interpret(trimmed),
        EndpointKind::Anthropic => anthropic::interpret(trimmed),
    }
}

/// The chunk an event means, in the kinds' tests.
#[cfg(test)]
fn chunk_of(item: Result<StreamItem, MalformedEvent>) -> Chunk {
    match item.unwrap() {
        StreamItem::Chunk(c) => c,
        other => panic!("expected a chunk, got {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn responses_and_anthropic_bodies_in_their_own_words() {
        let spec = |kind, messages| BodySpec {
            kind,
            model: "m".into(),
            prompt: "你好".into(),
            max_tokens: 64,
            temperature: Some(0.5),
            include_usage: true,
            extra: Map::new(),
            messages,
        };
        assert_eq!(
            request_body(&spec(EndpointKind::Responses, None)),
            serde_json::json!({"model": "m", "input": "你好", "max_output_tokens": 64, "temperature": 0.5, "stream": true}),
            "usage always comes: no stream_options"
        );
        assert_eq!(
            request_body(&spec(EndpointKind::Anthropic, None)),
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "你好"}], "max_tokens": 64, "temperature": 0.5, "stream": true})
        );
        let chat = vec![
            serde_json::json!({"role": "system", "content": "简短回答"}),
            serde_json::json!({"role": "user", "content": "hi"}),
        ];
        let body = request_body(&spec(EndpointKind::Anthropic, Some(chat.clone())));
        assert_eq!(body["system"], "简短回答");
        assert_eq!(
            body["messages"],
            serde_json::json!([{"role": "user", "content": "hi"}])
        );
        let body = request_body(&spec(EndpointKind::Responses, Some(chat.clone())));
        assert_eq!(body["input"], Value::Array(chat));
    }

    #[test]
    fn done_ends_every_kind_and_each_kind_reads_its_own_events() {
        for kind in EndpointKind::ALL {
            assert_eq!(interpret(kind, " [DONE] ").unwrap(), StreamItem::Done);
        }
        let text = |kind, data| match interpret(kind, data).unwrap() {
            StreamItem::Chunk(c) => c.content,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            text(
                EndpointKind::Chat,
                r#"{"choices":[{"delta":{"content":"你"}}]}"#
            ),
            "你"
        );
        assert_eq!(
            text(
                EndpointKind::Responses,
                r#"{"type":"response.output_text.delta","delta":"好"}"#
            ),
            "好"
        );
        assert_eq!(
            text(
                EndpointKind::Anthropic,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"世"}}"#
            ),
            "世"
        );
        // Another kind's event is no token of this one.
        assert_eq!(
            text(
                EndpointKind::Chat,
                r#"{"type":"response.output_text.delta","delta":"x"}"#
            ),
            ""
        );
    }

    #[test]
    fn each_kind_s_paths() {
        let paths: Vec<&str> = EndpointKind::ALL.iter().map(|k| k.path()).collect();
        assert_eq!(
            paths,
            [
                "/chat/completions",
                "/completions",
                "/responses",
                "/messages"
            ]
        );
        for kind in EndpointKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
        }
    }
}
