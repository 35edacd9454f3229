//! One completion request (`/v1/chat/completions`, `/v1/completions`,
//! `/v1/responses`, `/v1/messages`): what it asks for, the faults and checks that
//! answer it early with an HTTP error, and the job handed to the engine, whose
//! tokens [`super::stream`] or [`super::whole`] turn into the answer in the API's
//! words ([`super::wire`]).

use std::{
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use axum::{
    extract::{Extension, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use serde_json::Value;

use super::{
    hostile,
    routes::openai_error,
    stream::stream_response,
    whole::whole_response,
    wire::{Endpoint, StreamPlan},
    AppState,
};
use crate::{
    connection::Gate,
    engine::Job,
    fault::{Fault, Faults},
    text::estimate_tokens,
    truth::{Outcome, RequestTruth},
};

/// `Retry-After` of the `429` fault, seconds.
const RETRY_AFTER_S: u32 = 2;
/// `max_tokens` when a request does not say.
const DEFAULT_MAX_TOKENS: u64 = 256;

pub(super) async fn chat_completions(
    State(state): State<Arc<AppState>>,
    Extension(gate): Extension<Arc<Gate>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, gate, Endpoint::Chat, headers, body).await
}

pub(super) async fn completions(
    State(state): State<Arc<AppState>>,
    Extension(gate): Extension<Arc<Gate>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, gate, Endpoint::Completions, headers, body).await
}

pub(super) async fn responses(
    State(state): State<Arc<AppState>>,
    Extension(gate): Extension<Arc<Gate>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, gate, Endpoint::Responses, headers, body).await
}

pub(super) async fn messages(
    State(state): State<Arc<AppState>>,
    Extension(gate): Extension<Arc<Gate>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, gate, Endpoint::Messages, headers, body).await
}

/// What a request asked for.
/// How much of each prompt the truth keeps.
const PROMPT_HEAD_CHARS: usize = 48;

struct Ask {
    model: String,
    prompt: String,
    /// A chat's messages (0 for a completion).
    n_messages: usize,
    max_tokens: u64,
    stream: bool,
    include_usage: bool,
    /// vLLM's and SGLang's `ignore_eos` and `min_tokens`: go on past the model's
    /// own end (`--eos-after`).
    ignore_eos: bool,
    min_tokens: u64,
}

/// A message's content as text: a string, or the `text` of its parts (OpenAI's
/// and Anthropic's content arrays alike).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn parse_ask(endpoint: Endpoint, body: &[u8]) -> Result<Ask, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|err| format!("the body is not valid JSON: {err}"))?;
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .ok_or("you must provide a model parameter")?
        .to_owned();
    let mut n_messages = 0;
    let prompt = match endpoint {
        Endpoint::Chat | Endpoint::Messages => {
            let messages = value
                .get("messages")
                .and_then(Value::as_array)
                .ok_or("messages must be an array")?;
            n_messages = messages.len();
            // Anthropic's system prompt is a field of its own, read first.
            let mut text = value.get("system").map(content_text).unwrap_or_default();
            for message in messages {
                if let Some(content) = message.get("content") {
                    text.push_str(&content_text(content));
                }
            }
            text
        }
        Endpoint::Completions => match value.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => return Err("prompt must be a string".into()),
        },
        Endpoint::Responses => match value.get("input") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(items)) => {
                n_messages = items.len();
                items
                    .iter()
                    .filter_map(|item| item.get("content"))
                    .map(content_text)
                    .collect()
            }
            _ => return Err("input must be a string or an array of messages".into()),
        },
    };
    let max_tokens = value
        .get("max_tokens")
        .or_else(|| value.get("max_completion_tokens"))
        .or_else(|| value.get("max_output_tokens"))
        .map(|v| v.as_u64().ok_or("max_tokens must be a positive integer"))
        .transpose()?
        .unwrap_or(DEFAULT_MAX_TOKENS);
    Ok(Ask {
        model,
        prompt,
        n_messages,
        max_tokens,
        stream: value
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        include_usage: value
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        ignore_eos: value
            .get("ignore_eos")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        min_tokens: value.get("min_tokens").and_then(Value::as_u64).unwrap_or(0),
    })
}

// Long: one request's handling in order: parse, faults, admission, the stream.
async fn handle(
    state: Arc<AppState>,
    gate: Arc<Gate>,
    endpoint: Endpoint,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let accepted = Instant::now();
    let id = state.next_id.fetch_add(1, Ordering::Relaxed) + 1;
    let response_id = endpoint.response_id(id);
    let mut truth = RequestTruth::accepted(
        id,
        response_id.clone(),
        endpoint.name(),
        state.truth.us(accepted),
    );
    truth.anthropic_headers = headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("anthropic-"))
        .map(|(name, value)| format!("{name}: {}", value.to_str().unwrap_or("?")))
        .collect();
    if state.config.gateway_delay_ms > 0.0 {
        tokio::time::sleep(std::time::Duration::from_secs_f64(
            state.config.gateway_delay_ms / 1e3,
        ))
        .await;
    }
    let answered = match admit(&state, endpoint, &headers, &body, &mut truth).await {
        Ok(admitted) => admitted,
        Err(response) => {
            // Answered early: the truth records the status and when.
            truth.status = response.status().as_u16();
            truth.headers_us = Some(state.truth.now_us());
            truth.ended_us = state.truth.now_us();
            state.truth.push(truth);
            return response;
        }
    };
    let (ask, faults) = answered;

    let asked = ask.max_tokens.min(state.config.max_output_tokens);
    // The model's own end (`--eos-after`), unless the request asks to go on.
    let natural_end = state
        .config
        .eos_after
        .filter(|_| !ask.ignore_eos)
        .map(|eos| eos.max(ask.min_tokens))
        .filter(|&end| end < asked);
    let n_tokens = if faults.has(Fault::Empty) {
        0
    } else {
        natural_end.unwrap_or(asked)
    };
    truth.prompt_tokens = estimate_tokens(&ask.prompt);
    truth.prompt_head = ask.prompt.chars().take(PROMPT_HEAD_CHARS).collect();
    let n_chars = ask.prompt.chars().count();
    truth.prompt_tail = ask
        .prompt
        .chars()
        .skip(n_chars.saturating_sub(PROMPT_HEAD_CHARS))
        .collect();
    truth.n_messages = ask.n_messages;
    truth.cached_tokens = state
        .cache
        .lookup_and_keep(&ask.prompt)
        .min(truth.prompt_tokens);
    let counters = &state.cache_counters;
    counters
        .queries
        .fetch_add(truth.prompt_tokens, Ordering::Relaxed);
    counters
        .hits
        .fetch_add(truth.cached_tokens, Ordering::Relaxed);
    truth.max_tokens = ask.max_tokens;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    if n_tokens > 0 {
        state.engine.submit(Job {
            // Only what the cache did not hold is prefilled.
            prompt_tokens: truth.prompt_tokens - truth.cached_tokens,
            n_tokens,
            tokens: tx,
        });
    } else {
        drop(tx);
    }
    let head = format!(
        "{{\"id\":{},\"object\":\"{}\",\"created\":{},\"model\":{},",
        serde_json::to_string(&response_id).expect("a string serialises"),
        endpoint.chunk_object(),
        state.created_unix_s,
        serde_json::to_string(&ask.model).expect("a string serialises"),
    );
    let plan = StreamPlan {
        head,
        endpoint,
        response_id,
        model: ask.model,
        created: state.created_unix_s,
        include_usage: ask.include_usage,
        n_tokens,
        ends_on_its_own: natural_end.is_some(),
        n_reasoning: if (faults.has(Fault::Reasoning) || faults.has(Fault::HiddenReasoning))
            && endpoint.streams_reasoning()
            && n_tokens > 0
        {
            (n_tokens / 4).max(1)
        } else {
            0
        },
        tool_call: faults.has(Fault::ToolCall) && endpoint != Endpoint::Completions,
        faults,
        timings: state.config.timings && endpoint.is_openai_chunks(),
    };
    if ask.stream {
        stream_response(state, gate, plan, truth, rx)
    } else {
        whole_response(state, plan, truth, rx).await
    }
}

/// Reads the request and applies every check and fault that answers before any
/// token: a bad fault header or body (400), `echo-headers` (400), the key (401), the
/// model (404), the `429`, `500`, `502` and `hang` faults, and the hostile servers'
/// answers. `Err` is that early answer.
// Long: admission with every fault that acts there, an arm each.
async fn admit(
    state: &AppState,
    endpoint: Endpoint,
    headers: &HeaderMap,
    body: &[u8],
    truth: &mut RequestTruth,
) -> Result<(Ask, Faults), Response> {
    let bad_request =
        |msg: &str| openai_error(StatusCode::BAD_REQUEST, msg, "invalid_request_error", None);
    let mut faults = if truth.id.is_multiple_of(state.config.fault_every) {
        Faults(state.config.faults.clone())
    } else {
        Faults::default()
    };
    if let Some(list) = headers.get("x-tokenmeter-fault") {
        let more = list
            .to_str()
            .map_err(|e| e.to_string())
            .and_then(Fault::parse_list)
            .map_err(|msg| bad_request(&msg))?;
        faults.0.extend(more);
    }
    truth.faults = faults.names();
    let ask = parse_ask(endpoint, body).map_err(|msg| bad_request(&msg))?;
    truth.model = ask.model.clone();
    truth.stream = ask.stream;
    if !ask.stream && !endpoint.is_openai_chunks() {
        return Err(bad_request(&format!(
            "the simulator answers /v1/{} only as a stream: send \"stream\": true",
            endpoint.name()
        )));
    }

    if faults.has(Fault::EchoHeaders) {
        // Before the key check: a debugging gateway in front of the server.
        let echoed: Vec<String> = headers
            .iter()
            .map(|(name, value)| format!("{name}: {}", value.to_str().unwrap_or("?")))
            .collect();
        return Err(openai_error(
            StatusCode::BAD_REQUEST,
            &format!("bad request; the request was:\n{}", echoed.join("\n")),
            "invalid_request_error",
            None,
        ));
    }
    let key_ok = state.config.api_key.as_deref().is_none_or(|key| {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
        bearer == Some(key) || header("api-key") == Some(key) || header("x-api-key") == Some(key)
    });
    if !key_ok || faults.has(Fault::Unauthorized) {
        return Err(openai_error(
            StatusCode::UNAUTHORIZED,
            "Incorrect API key provided. You can find your API key in your dashboard.",
            "invalid_request_error",
            Some("invalid_api_key"),
        ));
    }
    let model_known = state.config.any_model || state.config.models.contains(&ask.model);
    if !model_known || faults.has(Fault::NotFound) {
        return Err(openai_error(
            StatusCode::NOT_FOUND,
            &format!(
                "The model `{}` does not exist or you do not have access to it.",
                ask.model
            ),
            "invalid_request_error",
            Some("model_not_found"),
        ));
    }
    if faults.has(Fault::RateLimited) {
        let mut response = openai_error(
            StatusCode::TOO_MANY_REQUESTS,
            "Rate limit reached for requests. Please try again later.",
            "requests",
            Some("rate_limit_exceeded"),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_S));
        return Err(response);
    }
    if faults.has(Fault::ServerError) {
        return Err(openai_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The server had an error while processing your request.",
            "server_error",
            None,
        ));
    }
    if faults.has(Fault::HtmlBadGateway) {
        let page = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
        return Err((
            StatusCode::BAD_GATEWAY,
            [(header::CONTENT_TYPE, "text/html")],
            page,
        )
            .into_response());
    }
    if faults.has(Fault::Hang) {
        tokio::time::sleep(Duration::from_secs_f64(state.config.hang_s)).await;
        return Err(openai_error(
            StatusCode::GATEWAY_TIMEOUT,
            "the simulated hang ended",
            "server_error",
            None,
        ));
    }
    if let Some(fault) = hostile::fault_of(&faults) {
        truth.outcome = Outcome::Faulted;
        let hang = Duration::from_secs_f64(state.config.hang_s);
        return Err(hostile::response(fault, truth.id, hang));
    }
    Ok((ask, faults))
}
