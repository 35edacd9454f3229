//! What each API's stream says, as the simulator writes it: OpenAI's chunks
//! (`/v1/chat/completions`, `/v1/completions`), OpenAI's Responses API
//! (`/v1/responses`) and Anthropic's Messages API (`/v1/messages`). The writer
//! ([`super::stream`]) decides *when* each token goes out; [`StreamPlan`] says what
//! its event looks like, and what opens and closes the stream, in each API's words.
//! Token events are formatted without building a JSON tree: they are written for
//! every token of every stream.

use serde_json::{json, Value};

use crate::fault::{Fault, Faults};

/// The function a `tool-call` answer calls.
pub(super) const TOOL_NAME: &str = "get_weather";

/// Which API a request came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Endpoint {
    Chat,
    Completions,
    Responses,
    Messages,
}

impl Endpoint {
    /// The name in the truth record.
    pub(super) fn name(self) -> &'static str {
        match self {
            Endpoint::Chat => "chat",
            Endpoint::Completions => "completions",
            Endpoint::Responses => "responses",
            Endpoint::Messages => "messages",
        }
    }

    /// The id of response `id`, as each API names its answers.
    pub(super) fn response_id(self, id: u64) -> String {
        match self {
            Endpoint::Chat => format!("chatcmpl-{id}"),
            Endpoint::Completions => format!("cmpl-{id}"),
            Endpoint::Responses => format!("resp_{id}"),
            Endpoint::Messages => format!("msg_{id}"),
        }
    }

    /// The `object` of an OpenAI chunk.
    pub(super) fn chunk_object(self) -> &'static str {
        match self {
            Endpoint::Completions => "text_completion",
            _ => "chat.completion.chunk",
        }
    }

    /// Whether its stream is OpenAI's chunks, ended by `[DONE]`.
    pub(super) fn is_openai_chunks(self) -> bool {
        matches!(self, Endpoint::Chat | Endpoint::Completions)
    }

    /// Whether its answers can carry reasoning as a stream of its own.
    pub(super) fn streams_reasoning(self) -> bool {
        self != Endpoint::Completions
    }
}

/// What one token event carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Piece {
    Answer,
    Reasoning,
    /// A tool call's first event (its name) or a later one (its arguments).
    ToolName,
    ToolArguments,
}

/// Everything the writer needs to say a response's events.
pub(super) struct StreamPlan {
    /// `{"id":…,"object":…,"created":…,"model":…,` of every OpenAI chunk, encoded once.
    pub(super) head: String,
    pub(super) endpoint: Endpoint,
    pub(super) response_id: String,
    pub(super) model: String,
    pub(super) created: u64,
    pub(super) include_usage: bool,
    pub(super) n_tokens: u64,
    /// The answer ends before `max_tokens` (finish_reason `stop`).
    pub(super) ends_on_its_own: bool,
    pub(super) n_reasoning: u64,
    /// The answer is a tool call (the `tool-call` fault).
    pub(super) tool_call: bool,
    pub(super) faults: Faults,
    /// Report llama.cpp's `timings` in the last chunk.
    pub(super) timings: bool,
}

/// A JSON string literal of `text`.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

impl StreamPlan {
    pub(super) fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        let mut chunk = match self.endpoint {
            Endpoint::Completions => json!({
                "id": self.response_id,
                "object": self.endpoint.chunk_object(),
                "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "text": delta.get("content").cloned().unwrap_or(Value::String(String::new())), "logprobs": null, "finish_reason": finish_reason}],
            }),
            _ => json!({
                "id": self.response_id,
                "object": self.endpoint.chunk_object(),
                "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
            }),
        };
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }

    /// One OpenAI token chunk's data: equal to [`StreamPlan::chunk`] with a
    /// content (or reasoning, or tool-call) delta, byte for byte.
    fn openai_token(&self, text: &str, piece: Piece) -> String {
        let text = quoted(text);
        let usage = if self.include_usage {
            ",\"usage\":null"
        } else {
            ""
        };
        let delta = match piece {
            Piece::Answer => format!("{{\"content\":{text}}}"),
            Piece::Reasoning => format!("{{\"content\":null,\"reasoning_content\":{text}}}"),
            Piece::ToolName => format!(
                "{{\"content\":null,\"tool_calls\":[{{\"index\":0,\"id\":\"call_{}\",\"type\":\"function\",\"function\":{{\"name\":\"{TOOL_NAME}\",\"arguments\":{text}}}}}]}}",
                self.response_id
            ),
            Piece::ToolArguments => {
                format!("{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":{text}}}}}]}}")
            }
        };
        if self.endpoint == Endpoint::Completions {
            return format!(
                "{}\"choices\":[{{\"index\":0,\"text\":{text},\"logprobs\":null,\"finish_reason\":null}}]{usage}}}",
                self.head
            );
        }
        format!(
            "{}\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":null}}]{usage}}}",
            self.head
        )
    }

    /// One token event, whole (its `event:` line where the API names events):
    /// `text` as a `piece`; `opens_block` for the first event of an Anthropic
    /// content block (the block's start goes with it).
    pub(super) fn token_event(&self, text: &str, piece: Piece, opens_block: Option<u32>) -> String {
        match self.endpoint {
            Endpoint::Chat | Endpoint::Completions => self.event(&self.openai_token(text, piece)),
            Endpoint::Responses => {
                let text = quoted(text);
                match piece {
                    Piece::Answer => self.named(
                        "response.output_text.delta",
                        &format!("{{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_{0}\",\"output_index\":0,\"content_index\":0,\"delta\":{text}}}", self.response_id),
                    ),
                    Piece::Reasoning => self.named(
                        "response.reasoning_text.delta",
                        &format!("{{\"type\":\"response.reasoning_text.delta\",\"item_id\":\"rs_{0}\",\"output_index\":0,\"content_index\":0,\"delta\":{text}}}", self.response_id),
                    ),
                    Piece::ToolName => self.named(
                        "response.output_item.added",
                        &format!("{{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{{\"type\":\"function_call\",\"id\":\"fc_{0}\",\"call_id\":\"call_{0}\",\"name\":\"{TOOL_NAME}\",\"arguments\":\"\"}}}}", self.response_id),
                    ),
                    Piece::ToolArguments => self.named(
                        "response.function_call_arguments.delta",
                        &format!("{{\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_{0}\",\"output_index\":0,\"delta\":{text}}}", self.response_id),
                    ),
                }
            }
            Endpoint::Messages => {
                let index = opens_block.unwrap_or(0);
                let start = |block: &str| {
                    match opens_block {
                    Some(index) => self.named(
                        "content_block_start",
                        &format!("{{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{block}}}"),
                    ),
                    None => String::new(),
                }
                };
                let delta = |delta: String| {
                    self.named(
                        "content_block_delta",
                        &format!("{{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{delta}}}"),
                    )
                };
                let text = quoted(text);
                match piece {
                    Piece::Answer => start("{\"type\":\"text\",\"text\":\"\"}") + &delta(format!("{{\"type\":\"text_delta\",\"text\":{text}}}")),
                    Piece::Reasoning => start("{\"type\":\"thinking\",\"thinking\":\"\"}") + &delta(format!("{{\"type\":\"thinking_delta\",\"thinking\":{text}}}")),
                    // The block's start, with the name, is the first event.
                    Piece::ToolName => self.named(
                        "content_block_start",
                        &format!("{{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_{0}\",\"name\":\"{TOOL_NAME}\",\"input\":{{}}}}}}", self.response_id),
                    ),
                    Piece::ToolArguments => delta(format!("{{\"type\":\"input_json_delta\",\"partial_json\":{text}}}")),
                }
            }
        }
    }

    /// What opens the stream: OpenAI's role-only chunk (chat), Responses'
    /// `response.created`, Anthropic's `message_start` with the input's usage.
    pub(super) fn opening(&self, prompt_tokens: u64, cached_tokens: u64) -> Vec<String> {
        match self.endpoint {
            Endpoint::Chat => vec![self.event(
                &self
                    .chunk(json!({"role": "assistant", "content": ""}), None)
                    .to_string(),
            )],
            Endpoint::Completions => Vec::new(),
            Endpoint::Responses => {
                let response = json!({"id": self.response_id, "object": "response", "created_at": self.created, "status": "in_progress", "model": self.model, "output": [], "usage": null});
                vec![
                    self.named("response.created", &json!({"type": "response.created", "sequence_number": 0, "response": response}).to_string()),
                    self.named("response.in_progress", &json!({"type": "response.in_progress", "sequence_number": 1, "response": response}).to_string()),
                ]
            }
            Endpoint::Messages => vec![self.named(
                "message_start",
                &json!({"type": "message_start", "message": {
                    "id": self.response_id, "type": "message", "role": "assistant", "content": [],
                    "model": self.model, "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": prompt_tokens - cached_tokens, "cache_read_input_tokens": cached_tokens, "cache_creation_input_tokens": 0, "output_tokens": 1},
                }})
                .to_string(),
            )],
        }
    }

    /// What closes a stream of `n_generated` tokens: OpenAI's finish chunk (with
    /// llama.cpp's `timings` where asked), usage chunk and `[DONE]`; Responses'
    /// `response.completed` (or `.incomplete` at the length asked) with usage;
    /// Anthropic's block stop, `message_delta` with the output's usage, and
    /// `message_stop`. Each event a write of its own.
    pub(super) fn closing(
        &self,
        n_generated: u64,
        prompt_tokens: u64,
        cached_tokens: u64,
        timings: Option<Value>,
    ) -> Vec<String> {
        let cut_at_length =
            n_generated >= self.n_tokens && n_generated > 0 && !self.ends_on_its_own;
        match self.endpoint {
            Endpoint::Chat | Endpoint::Completions => {
                let reason = match (self.tool_call, cut_at_length) {
                    (true, _) => "tool_calls",
                    (false, true) => "length",
                    (false, false) => "stop",
                };
                let mut finish = self.chunk(json!({}), Some(reason));
                if let Some(timings) = timings {
                    finish["timings"] = timings;
                }
                let mut events = vec![self.event(&finish.to_string())];
                if self.include_usage {
                    let usage_chunk = json!({
                        "id": self.response_id,
                        "object": self.endpoint.chunk_object(),
                        "created": self.created,
                        "model": self.model,
                        "choices": [],
                        "usage": self.usage(n_generated, prompt_tokens, cached_tokens),
                    });
                    events.push(self.event(&usage_chunk.to_string()));
                }
                events.push(self.event("[DONE]"));
                events
            }
            Endpoint::Responses => {
                let usage = json!({
                    "input_tokens": prompt_tokens,
                    "input_tokens_details": {"cached_tokens": cached_tokens},
                    "output_tokens": n_generated,
                    "output_tokens_details": {"reasoning_tokens": self.n_reasoning.min(n_generated)},
                    "total_tokens": prompt_tokens + n_generated,
                });
                let (kind, status, details) = if cut_at_length && !self.tool_call {
                    (
                        "response.incomplete",
                        "incomplete",
                        json!({"reason": "max_output_tokens"}),
                    )
                } else {
                    ("response.completed", "completed", Value::Null)
                };
                let data = json!({"type": kind, "sequence_number": n_generated + 2, "response": {
                    "id": self.response_id, "object": "response", "created_at": self.created,
                    "status": status, "incomplete_details": details, "model": self.model, "usage": usage,
                }});
                vec![self.named(kind, &data.to_string())]
            }
            Endpoint::Messages => {
                let reason = match (self.tool_call, cut_at_length) {
                    (true, _) => "tool_use",
                    (false, true) => "max_tokens",
                    (false, false) => "end_turn",
                };
                vec![
                    self.named("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}"),
                    self.named(
                        "message_delta",
                        &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": n_generated}}).to_string(),
                    ),
                    self.named("message_stop", "{\"type\":\"message_stop\"}"),
                ]
            }
        }
    }

    /// The `error-event` fault's event: the server failed mid-way, in the API's words.
    pub(super) fn error_event(&self) -> String {
        const WHY: &str = "simulated engine failure: out of KV cache blocks";
        match self.endpoint {
            Endpoint::Chat | Endpoint::Completions => self.event(
                &json!({"error": {"message": WHY, "type": "server_error", "param": null, "code": "engine_error"}}).to_string(),
            ),
            Endpoint::Responses => self.named(
                "error",
                &json!({"type": "error", "code": "engine_error", "message": WHY, "param": null}).to_string(),
            ),
            Endpoint::Messages => self.named(
                "error",
                &json!({"type": "error", "error": {"type": "api_error", "message": WHY}}).to_string(),
            ),
        }
    }

    /// The `bad-json` fault's event: cut inside a string.
    pub(super) fn broken_event(&self) -> String {
        match self.endpoint {
            Endpoint::Chat | Endpoint::Completions => self.event(&format!(
                "{{\"id\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"坏",
                self.response_id
            )),
            Endpoint::Responses => {
                self.named("response.output_text.delta", "{\"type\":\"response.output_text.delta\",\"delta\":\"坏")
            }
            Endpoint::Messages => self.named(
                "content_block_delta",
                "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"坏",
            ),
        }
    }

    pub(super) fn usage(&self, n_generated: u64, prompt_tokens: u64, cached_tokens: u64) -> Value {
        let mut usage = json!({
            "prompt_tokens": prompt_tokens,
            "completion_tokens": n_generated,
            "total_tokens": prompt_tokens + n_generated,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        });
        if self.n_reasoning > 0 {
            usage["completion_tokens_details"] =
                json!({"reasoning_tokens": self.n_reasoning.min(n_generated)});
        }
        usage
    }

    fn line_end(&self) -> &'static str {
        if self.faults.has(Fault::Crlf) {
            "\r\n"
        } else {
            "\n"
        }
    }

    /// An event of data alone (OpenAI's form).
    pub(super) fn event(&self, data: &str) -> String {
        let nl = self.line_end();
        format!("data: {data}{nl}{nl}")
    }

    /// An event with its name (`event:`), as the Responses and Messages APIs send
    /// every event.
    fn named(&self, name: &str, data: &str) -> String {
        let nl = self.line_end();
        format!("event: {name}{nl}data: {data}{nl}{nl}")
    }

    pub(super) fn comment(&self, text: &str) -> String {
        let nl = self.line_end();
        format!(": {text}{nl}{nl}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(endpoint: Endpoint, include_usage: bool) -> StreamPlan {
        StreamPlan {
            head: format!(
                "{{\"id\":\"x-1\",\"object\":\"{}\",\"created\":7,\"model\":\"m\\\"q\",",
                endpoint.chunk_object()
            ),
            endpoint,
            response_id: "x-1".into(),
            model: "m\"q".into(),
            created: 7,
            include_usage,
            n_tokens: 1,
            ends_on_its_own: false,
            n_reasoning: 0,
            tool_call: false,
            faults: Faults::default(),
            timings: false,
        }
    }

    #[test]
    fn the_fast_token_chunk_equals_the_general_one() {
        for endpoint in [Endpoint::Chat, Endpoint::Completions] {
            for include_usage in [false, true] {
                let plan = plan(endpoint, include_usage);
                let text = "引号\"和\n换行";
                assert_eq!(
                    plan.openai_token(text, Piece::Answer),
                    plan.chunk(json!({"content": text}), None).to_string()
                );
                if endpoint == Endpoint::Chat {
                    assert_eq!(
                        plan.openai_token(text, Piece::Reasoning),
                        plan.chunk(json!({"content": null, "reasoning_content": text}), None)
                            .to_string()
                    );
                    assert_eq!(
                        plan.openai_token(text, Piece::ToolArguments),
                        plan.chunk(
                            json!({"tool_calls": [{"index": 0, "function": {"arguments": text}}]}),
                            None
                        )
                        .to_string()
                    );
                }
            }
        }
    }

    #[test]
    fn every_event_of_every_api_is_json_after_its_data_field() {
        for endpoint in [
            Endpoint::Chat,
            Endpoint::Completions,
            Endpoint::Responses,
            Endpoint::Messages,
        ] {
            let mut plan = plan(endpoint, true);
            plan.n_reasoning = 1;
            let mut events = plan.opening(10, 4);
            for (piece, opens) in [
                (Piece::Reasoning, Some(0)),
                (Piece::Answer, Some(1)),
                (Piece::Answer, None),
                (Piece::ToolName, Some(2)),
                (Piece::ToolArguments, None),
            ] {
                events.push(plan.token_event("你好\"", piece, opens));
            }
            events.extend(plan.closing(3, 10, 4, None));
            events.push(plan.error_event());
            for event in events {
                for line in event.lines().filter_map(|l| l.strip_prefix("data: ")) {
                    if line != "[DONE]" {
                        let value: Value = serde_json::from_str(line)
                            .unwrap_or_else(|e| panic!("{endpoint:?}: {e}: {line}"));
                        assert!(value.is_object());
                    }
                }
            }
        }
    }
}
