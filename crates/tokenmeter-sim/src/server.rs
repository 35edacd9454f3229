//! The HTTP side: routes, CORS, the streaming bodies, and the accept loop (plain
//! HTTP/1.1 + h2c, or TLS with HTTP/2 and HTTP/1.1 by ALPN).

use std::{
    collections::VecDeque,
    io,
    net::SocketAddr,
    pin::Pin,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    task::{ready, Context, Poll},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use axum::{
    body::Body,
    extract::{Extension, Query, Request, State},
    http::{header, HeaderMap, HeaderValue, Method, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use bytes::Bytes;
use hyper_util::{rt::TokioIo, server::conn::auto, service::TowerToHyperService};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::{
    net::TcpListener,
    sync::{mpsc::UnboundedReceiver, oneshot},
    task::JoinHandle,
};
use tower::ServiceExt;

use crate::{
    config::SimConfig,
    connection::{self, Gate, GatedIo, WrittenSlots},
    engine::{Engine, Job, TokenDue},
    fault::{Fault, Faults},
    text::{estimate_tokens, TokenText},
    truth::{Outcome, RequestTruth, TokenTruth, TruthStore},
};

/// Size of the `huge-event` fault's single event: above tokenmeter's default 1 MiB limit.
const HUGE_EVENT_BYTES: usize = 3 << 19;
/// Tokens per event with the `multi-token` fault.
const TOKENS_PER_EVENT: u64 = 4;
/// `Retry-After` of the `429` fault, seconds.
const RETRY_AFTER_S: u32 = 2;
/// `max_tokens` when a request does not say.
const DEFAULT_MAX_TOKENS: u64 = 256;

struct AppState {
    config: SimConfig,
    engine: Engine,
    truth: Arc<TruthStore>,
    next_id: AtomicU64,
    created_unix_s: u64,
}

/// A running simulator.
pub struct SimServer {
    pub addr: SocketAddr,
    pub tls: bool,
    /// The self-signed certificate (DER) when serving TLS, for clients to trust.
    pub cert_der: Option<Vec<u8>>,
    pub truth: Arc<TruthStore>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl SimServer {
    /// Binds and starts serving in the background of the current tokio runtime.
    pub async fn start(config: SimConfig) -> io::Result<SimServer> {
        let listener = TcpListener::bind((config.host, config.port)).await?;
        let addr = listener.local_addr()?;
        let (tls, cert_der) = if config.tls {
            let (acceptor, der) = crate::tls::acceptor()?;
            (Some(acceptor), Some(der))
        } else {
            (None, None)
        };
        let epoch = Instant::now();
        let truth = Arc::new(TruthStore::new(epoch, config.truth_capacity));
        let state = Arc::new(AppState {
            engine: Engine::start(config.engine),
            truth: truth.clone(),
            next_id: AtomicU64::new(0),
            created_unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            config,
        });
        let router = router(state.clone());
        let (shutdown, mut stop) = oneshot::channel::<()>();
        let h2_max_streams = state.config.h2_max_streams;
        let task = tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok(pair) => pair,
                        // Out of file descriptors and the like: keep serving the others.
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    },
                    _ = &mut stop => break,
                };
                // Tokens must leave as soon as they are written.
                let _ = stream.set_nodelay(true);
                // Each connection's writers and socket share a gate (see `connection`).
                let gate = Gate::new(state.engine.released().clone(), state.truth.clone());
                let service = TowerToHyperService::new(router.clone().map_request({
                    let gate = gate.clone();
                    move |mut request: hyper::Request<hyper::body::Incoming>| {
                        request.extensions_mut().insert(gate.clone());
                        request
                    }
                }));
                let tls = tls.clone();
                tokio::spawn(connection::drive(move |executor| async move {
                    let mut builder = auto::Builder::new(executor);
                    builder
                        .http2()
                        .max_concurrent_streams(h2_max_streams)
                        .initial_stream_window_size(1 << 20)
                        .initial_connection_window_size(1 << 24);
                    let _ = match tls {
                        Some(acceptor) => match acceptor.accept(stream).await {
                            Ok(tls_stream) => {
                                builder
                                    .serve_connection(
                                        TokioIo::new(GatedIo::new(tls_stream, gate)),
                                        service,
                                    )
                                    .await
                            }
                            Err(_) => return,
                        },
                        None => {
                            builder
                                .serve_connection(TokioIo::new(GatedIo::new(stream, gate)), service)
                                .await
                        }
                    };
                }));
            }
        });
        Ok(SimServer {
            addr,
            tls: cert_der.is_some(),
            cert_der,
            truth,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// The OpenAI base URL, e.g. `http://127.0.0.1:8000/v1`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}/v1", self.addr)
    }

    /// Stops accepting connections and waits for the accept loop to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.shutdown.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/completions", post(completions))
        .route("/v1/sim/truth", get(truth).delete(clear_truth))
        .route("/v1/sim/config", get(sim_config))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), cors))
        .with_state(state)
}

/// CORS for browser callers, on every response including errors and the stream,
/// plus `Timing-Allow-Origin` so the browser exposes Resource Timing.
async fn cors(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let requested_headers = request
        .headers()
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .cloned();
    let mut response = if request.method() == Method::OPTIONS {
        if state.config.preflight_delay_ms > 0.0 {
            // A far-away server: each preflight costs a round trip the page can see.
            tokio::time::sleep(Duration::from_secs_f64(
                state.config.preflight_delay_ms / 1e3,
            ))
            .await;
        }
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.insert("timing-allow-origin", HeaderValue::from_static("*"));
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("retry-after, x-request-id"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    // Wildcards do not cover `Authorization`: name what was asked for, and ours.
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        requested_headers.unwrap_or_else(|| {
            HeaderValue::from_static("authorization, content-type, api-key, x-tokenmeter-fault")
        }),
    );
    if !state.config.no_cors_max_age {
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("86400"),
        );
    }
    response
}

async fn index(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    format!(
        "tokenmeter-sim: an OpenAI-compatible streaming simulator.\nBase URL: /v1  models: {}\nTruth: GET /v1/sim/truth\n",
        state.config.models.join(", ")
    )
}

async fn models(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let data: Vec<Value> = state
        .config
        .models
        .iter()
        .map(|id| {
            json!({"id": id, "object": "model", "created": state.created_unix_s, "owned_by": "tokenmeter-sim"})
        })
        .collect();
    Json(json!({"object": "list", "data": data}))
}

#[derive(Deserialize)]
struct SinceQuery {
    #[serde(default)]
    since: u64,
}

async fn truth(State(state): State<Arc<AppState>>, Query(q): Query<SinceQuery>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        state.truth.to_json(q.since),
    )
        .into_response()
}

async fn clear_truth(State(state): State<Arc<AppState>>) -> StatusCode {
    state.truth.clear();
    StatusCode::NO_CONTENT
}

async fn sim_config(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    Json(json!({
        "models": state.config.models,
        "engine": state.config.engine,
        "faults": state.config.faults.iter().map(|f| f.name()).collect::<Vec<_>>(),
        "tls": state.config.tls,
        "api_key_required": state.config.api_key.is_some(),
    }))
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    openai_error(
        StatusCode::NOT_FOUND,
        &format!("{method} {uri} is not an endpoint of this server; the API is under /v1"),
        "invalid_request_error",
        Some("unknown_url"),
    )
}

fn openai_error(status: StatusCode, message: &str, kind: &str, code: Option<&str>) -> Response {
    (
        status,
        Json(json!({"error": {"message": message, "type": kind, "param": null, "code": code}})),
    )
        .into_response()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    Chat,
    Completions,
}

async fn chat_completions(
    State(state): State<Arc<AppState>>,
    Extension(gate): Extension<Arc<Gate>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, gate, Endpoint::Chat, headers, body).await
}

async fn completions(
    State(state): State<Arc<AppState>>,
    Extension(gate): Extension<Arc<Gate>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(state, gate, Endpoint::Completions, headers, body).await
}

/// What a request asked for.
struct Ask {
    model: String,
    prompt: String,
    max_tokens: u64,
    stream: bool,
    include_usage: bool,
}

fn parse_ask(endpoint: Endpoint, body: &[u8]) -> Result<Ask, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|err| format!("the body is not valid JSON: {err}"))?;
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .ok_or("you must provide a model parameter")?
        .to_owned();
    let prompt = match endpoint {
        Endpoint::Chat => {
            let messages = value
                .get("messages")
                .and_then(Value::as_array)
                .ok_or("messages must be an array")?;
            let mut text = String::new();
            for message in messages {
                match message.get("content") {
                    Some(Value::String(s)) => text.push_str(s),
                    Some(Value::Array(parts)) => {
                        for part in parts {
                            if let Some(s) = part.get("text").and_then(Value::as_str) {
                                text.push_str(s);
                            }
                        }
                    }
                    _ => {}
                }
            }
            text
        }
        Endpoint::Completions => match value.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => return Err("prompt must be a string".into()),
        },
    };
    let max_tokens = value
        .get("max_tokens")
        .or_else(|| value.get("max_completion_tokens"))
        .map(|v| v.as_u64().ok_or("max_tokens must be a positive integer"))
        .transpose()?
        .unwrap_or(DEFAULT_MAX_TOKENS);
    Ok(Ask {
        model,
        prompt,
        max_tokens,
        stream: value
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        include_usage: value
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

async fn handle(
    state: Arc<AppState>,
    gate: Arc<Gate>,
    endpoint: Endpoint,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let accepted = Instant::now();
    let id = state.next_id.fetch_add(1, Ordering::Relaxed) + 1;
    let response_id = match endpoint {
        Endpoint::Chat => format!("chatcmpl-{id}"),
        Endpoint::Completions => format!("cmpl-{id}"),
    };
    let mut truth = RequestTruth {
        id,
        response_id: response_id.clone(),
        endpoint: match endpoint {
            Endpoint::Chat => "chat",
            Endpoint::Completions => "completions",
        },
        model: String::new(),
        stream: false,
        faults: Vec::new(),
        status: 200,
        prompt_tokens: 0,
        max_tokens: 0,
        accepted_us: state.truth.us(accepted),
        admitted_us: None,
        headers_us: None,
        tokens: Vec::new(),
        n_reasoning_tokens: 0,
        n_token_events: 0,
        text: String::new(),
        outcome: Outcome::HttpError,
        ended_us: 0,
    };
    let fail = |mut truth: RequestTruth, response: Response| {
        truth.status = response.status().as_u16();
        truth.headers_us = Some(state.truth.now_us());
        truth.ended_us = state.truth.now_us();
        state.truth.push(truth);
        response
    };

    let mut faults = Faults(state.config.faults.clone());
    if let Some(list) = headers.get("x-tokenmeter-fault") {
        match list
            .to_str()
            .map_err(|e| e.to_string())
            .and_then(Fault::parse_list)
        {
            Ok(more) => faults.0.extend(more),
            Err(msg) => {
                return fail(
                    truth,
                    openai_error(StatusCode::BAD_REQUEST, &msg, "invalid_request_error", None),
                )
            }
        }
    }
    truth.faults = faults.names();
    let ask = match parse_ask(endpoint, &body) {
        Ok(ask) => ask,
        Err(msg) => {
            return fail(
                truth,
                openai_error(StatusCode::BAD_REQUEST, &msg, "invalid_request_error", None),
            )
        }
    };
    truth.model = ask.model.clone();
    truth.stream = ask.stream;

    let key_ok = state.config.api_key.as_deref().is_none_or(|key| {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let api_key = headers.get("api-key").and_then(|v| v.to_str().ok());
        bearer == Some(key) || api_key == Some(key)
    });
    if !key_ok || faults.has(Fault::Unauthorized) {
        return fail(
            truth,
            openai_error(
                StatusCode::UNAUTHORIZED,
                "Incorrect API key provided. You can find your API key in your dashboard.",
                "invalid_request_error",
                Some("invalid_api_key"),
            ),
        );
    }
    let model_known = state.config.any_model || state.config.models.contains(&ask.model);
    if !model_known || faults.has(Fault::NotFound) {
        return fail(
            truth,
            openai_error(
                StatusCode::NOT_FOUND,
                &format!(
                    "The model `{}` does not exist or you do not have access to it.",
                    ask.model
                ),
                "invalid_request_error",
                Some("model_not_found"),
            ),
        );
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
        return fail(truth, response);
    }
    if faults.has(Fault::ServerError) {
        return fail(
            truth,
            openai_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server had an error while processing your request.",
                "server_error",
                None,
            ),
        );
    }
    if faults.has(Fault::HtmlBadGateway) {
        let page = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
        return fail(
            truth,
            (
                StatusCode::BAD_GATEWAY,
                [(header::CONTENT_TYPE, "text/html")],
                page,
            )
                .into_response(),
        );
    }
    if faults.has(Fault::Hang) {
        tokio::time::sleep(Duration::from_secs_f64(state.config.hang_s)).await;
        return fail(
            truth,
            openai_error(
                StatusCode::GATEWAY_TIMEOUT,
                "the simulated hang ended",
                "server_error",
                None,
            ),
        );
    }

    let n_tokens = if faults.has(Fault::Empty) {
        0
    } else {
        ask.max_tokens.min(state.config.max_output_tokens)
    };
    truth.prompt_tokens = estimate_tokens(&ask.prompt);
    truth.max_tokens = ask.max_tokens;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    if n_tokens > 0 {
        state.engine.submit(Job {
            prompt_tokens: truth.prompt_tokens,
            n_tokens,
            tokens: tx,
        });
    } else {
        drop(tx);
    }
    let object = match endpoint {
        Endpoint::Chat => "chat.completion.chunk",
        Endpoint::Completions => "text_completion",
    };
    let head = format!(
        "{{\"id\":{},\"object\":\"{object}\",\"created\":{},\"model\":{},",
        serde_json::to_string(&response_id).expect("a string serialises"),
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
        n_reasoning: if faults.has(Fault::Reasoning) && endpoint == Endpoint::Chat && n_tokens > 0 {
            (n_tokens / 4).max(1)
        } else {
            0
        },
        faults,
    };
    if ask.stream {
        stream_response(state, gate, plan, truth, rx)
    } else {
        whole_response(state, plan, truth, rx).await
    }
}

/// Everything the writer of one response needs to know.
struct StreamPlan {
    /// `{"id":…,"object":…,"created":…,"model":…,` of every chunk, encoded once.
    head: String,
    endpoint: Endpoint,
    response_id: String,
    model: String,
    created: u64,
    include_usage: bool,
    n_tokens: u64,
    n_reasoning: u64,
    faults: Faults,
}

impl StreamPlan {
    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        let mut chunk = match self.endpoint {
            Endpoint::Chat => json!({
                "id": self.response_id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
            }),
            Endpoint::Completions => json!({
                "id": self.response_id,
                "object": "text_completion",
                "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "text": delta.get("content").cloned().unwrap_or(Value::String(String::new())), "logprobs": null, "finish_reason": finish_reason}],
            }),
        };
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }

    /// One token-bearing chunk, formatted without building a JSON tree: this runs
    /// for every token of every stream. Equal to `chunk` with a content (or
    /// reasoning) delta, byte for byte.
    fn token_chunk(&self, text: &str, reasoning: bool) -> String {
        let text = serde_json::to_string(text).expect("a string serialises");
        let usage = if self.include_usage {
            ",\"usage\":null"
        } else {
            ""
        };
        match (self.endpoint, reasoning) {
            (Endpoint::Chat, false) => format!(
                "{}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{text}}},\"logprobs\":null,\"finish_reason\":null}}]{usage}}}",
                self.head
            ),
            (Endpoint::Chat, true) => format!(
                "{}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":null,\"reasoning_content\":{text}}},\"logprobs\":null,\"finish_reason\":null}}]{usage}}}",
                self.head
            ),
            (Endpoint::Completions, _) => format!(
                "{}\"choices\":[{{\"index\":0,\"text\":{text},\"logprobs\":null,\"finish_reason\":null}}]{usage}}}",
                self.head
            ),
        }
    }

    fn usage(&self, n_generated: u64, prompt_tokens: u64) -> Value {
        let mut usage = json!({
            "prompt_tokens": prompt_tokens,
            "completion_tokens": n_generated,
            "total_tokens": prompt_tokens + n_generated,
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

    fn event(&self, data: &str) -> String {
        let nl = self.line_end();
        format!("data: {data}{nl}{nl}")
    }

    fn comment(&self, text: &str) -> String {
        let nl = self.line_end();
        format!(": {text}{nl}{nl}")
    }
}

/// One piece of the body to hand to the connection.
enum Frame {
    /// Bytes, and the indices of the tokens that this piece completes.
    Data(Bytes, Vec<usize>),
    /// Cut the connection (the `cut` fault).
    Abort,
}

/// The writer of one streamed response: turns due tokens into events.
struct Writer {
    state: Arc<AppState>,
    plan: StreamPlan,
    truth: RequestTruth,
    rx: Option<UnboundedReceiver<TokenDue>>,
    answer: TokenText,
    reasoning: TokenText,
    /// Frames ready to hand over, each with the engine step it belongs to: handed
    /// over once the step is prepared, written once it is released.
    frames: VecDeque<(u64, Frame)>,
    /// The step of the token being handled (0 before the first token).
    step: u64,
    /// Tokens waiting to be grouped into one event (`multi-token`).
    group: Vec<usize>,
    group_text: String,
    group_is_reasoning: bool,
    ended: bool,
    committed: bool,
    /// The connection's write gate, and when it wrote each token.
    gate: Arc<Gate>,
    written: Arc<WrittenSlots>,
}

impl Writer {
    fn push_event(&mut self, data: String, tokens: Vec<usize>) {
        let bytes = self.plan.event(&data).into_bytes();
        if self.plan.faults.has(Fault::SplitUtf8) {
            for (piece, is_last) in split_inside_chars(&bytes) {
                let completes = if is_last { tokens.clone() } else { Vec::new() };
                self.frames.push_back((
                    self.step,
                    Frame::Data(Bytes::copy_from_slice(piece), completes),
                ));
            }
        } else {
            self.frames
                .push_back((self.step, Frame::Data(Bytes::from(bytes), tokens)));
        }
    }

    fn push_raw(&mut self, text: String) {
        self.frames
            .push_back((self.step, Frame::Data(Bytes::from(text), Vec::new())));
    }

    fn on_token(&mut self, due: TokenDue) {
        let index = self.truth.tokens.len();
        self.step = due.step;
        self.truth
            .admitted_us
            .get_or_insert(self.state.truth.us(due.admitted));
        let half = (self.plan.n_tokens / 2) as usize;
        if index == half && half > 0 {
            if self.plan.faults.has(Fault::Cut) {
                self.flush_group();
                self.frames.push_back((self.step, Frame::Abort));
                self.end(Outcome::Faulted);
                return;
            }
            if self.plan.faults.has(Fault::ErrorEvent) {
                self.flush_group();
                let error = json!({"error": {"message": "simulated engine failure: out of KV cache blocks", "type": "server_error", "param": null, "code": "engine_error"}});
                self.push_event(error.to_string(), Vec::new());
                self.end(Outcome::Faulted);
                return;
            }
            if self.plan.faults.has(Fault::BadJson) {
                self.flush_group();
                let broken = format!(
                    "{{\"id\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"坏",
                    self.plan.response_id
                );
                self.push_event(broken, Vec::new());
            }
        }
        self.truth.tokens.push(TokenTruth {
            due_us: self.state.truth.us(due.due),
            written_us: None,
        });
        let is_reasoning = (index as u64) < self.plan.n_reasoning;
        if self.plan.faults.has(Fault::Comments) && index == 0 {
            self.push_raw(self.plan.comment("OPENROUTER PROCESSING"));
        }
        if is_reasoning != self.group_is_reasoning {
            self.flush_group();
        }
        self.group_is_reasoning = is_reasoning;
        let text = if is_reasoning {
            self.truth.n_reasoning_tokens += 1;
            self.reasoning.token(index as u64)
        } else {
            self.answer.token(index as u64)
        };
        self.group.push(index);
        self.group_text.push_str(text);
        if index == 0 && self.plan.faults.has(Fault::HugeEvent) {
            let filler = "数据".repeat(HUGE_EVENT_BYTES / 6);
            self.group_text.push_str(&filler);
        }
        let group_size = if self.plan.faults.has(Fault::MultiToken) {
            TOKENS_PER_EVENT
        } else {
            1
        };
        if self.group.len() as u64 >= group_size || due.last {
            self.flush_group();
        }
        if self.plan.faults.has(Fault::Comments) && index % 5 == 4 {
            self.push_raw(self.plan.comment("keep-alive"));
        }
        if due.last {
            self.finish_normally();
        }
    }

    fn flush_group(&mut self) {
        if self.group.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.group_text);
        let tokens = std::mem::take(&mut self.group);
        let chunk = self.plan.token_chunk(&text, self.group_is_reasoning);
        if !self.group_is_reasoning {
            self.truth.text.push_str(&text);
        }
        self.truth.n_token_events += 1;
        self.push_event(chunk, tokens);
    }

    fn finish_normally(&mut self) {
        let n_generated = self.truth.tokens.len() as u64;
        let reason = if n_generated >= self.plan.n_tokens && n_generated > 0 {
            "length"
        } else {
            "stop"
        };
        let finish = self.plan.chunk(json!({}), Some(reason));
        self.push_event(finish.to_string(), Vec::new());
        if self.plan.include_usage {
            let usage_chunk = json!({
                "id": self.plan.response_id,
                "object": if self.plan.endpoint == Endpoint::Chat { "chat.completion.chunk" } else { "text_completion" },
                "created": self.plan.created,
                "model": self.plan.model,
                "choices": [],
                "usage": self.plan.usage(n_generated, self.truth.prompt_tokens),
            });
            self.push_event(usage_chunk.to_string(), Vec::new());
        }
        self.push_event("[DONE]".into(), Vec::new());
        self.end(Outcome::Completed);
    }

    fn end(&mut self, outcome: Outcome) {
        self.ended = true;
        self.truth.outcome = outcome;
        // Dropping the receiver tells the engine to free the slot.
        self.rx = None;
    }

    fn commit(&mut self) {
        if !self.committed {
            self.committed = true;
            for (index, token) in self.truth.tokens.iter_mut().enumerate() {
                token.written_us = self.written.get(index);
            }
            self.truth.ended_us = self.state.truth.now_us();
            self.state.truth.push(std::mem::replace(
                &mut self.truth,
                RequestTruth {
                    id: 0,
                    response_id: String::new(),
                    endpoint: "",
                    model: String::new(),
                    stream: true,
                    faults: Vec::new(),
                    status: 0,
                    prompt_tokens: 0,
                    max_tokens: 0,
                    accepted_us: 0,
                    admitted_us: None,
                    headers_us: None,
                    tokens: Vec::new(),
                    n_reasoning_tokens: 0,
                    n_token_events: 0,
                    text: String::new(),
                    outcome: Outcome::Completed,
                    ended_us: 0,
                },
            ));
        }
    }

    /// The next piece of the body: `None` at the end.
    ///
    /// Events are handed to the connection once their step is *prepared*, shortly
    /// before it is due, and the connection's [`Gate`] writes them once it is
    /// released: at the step's end only the connections have work left to do.
    fn poll_next_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        loop {
            if let Some((step, frame)) = self.frames.front() {
                let step = *step;
                let released = self.state.engine.released();
                if let Frame::Abort = frame {
                    // Cut only after the step's end and once what came before is out.
                    ready!(released.poll_released(step, cx));
                    ready!(self
                        .gate
                        .poll_written(&self.written, self.truth.tokens.len(), cx));
                    self.frames.pop_front();
                    return Poll::Ready(Some(Err(io::Error::other("simulated cut"))));
                }
                ready!(released.poll_prepared(step, cx));
                let Some((_, Frame::Data(bytes, tokens))) = self.frames.pop_front() else {
                    unreachable!("the front frame is data");
                };
                self.gate.hold(step, &self.written, tokens);
                return Poll::Ready(Some(Ok(bytes)));
            }
            if self.ended {
                // The stream ends once its last events are written, so that the truth
                // it commits is whole.
                ready!(self
                    .gate
                    .poll_written(&self.written, self.truth.tokens.len(), cx));
                self.commit();
                return Poll::Ready(None);
            }
            let next = match self.rx.as_mut() {
                Some(rx) => ready!(rx.poll_recv(cx)),
                None => None,
            };
            match next {
                Some(due) => self.on_token(due),
                // No tokens at all (the `empty` fault): a well-formed, empty answer.
                None => self.finish_normally(),
            }
        }
    }
}

/// The streamed body itself: polled by hyper in place, so the writer's state is
/// never moved (a stream built with `unfold` moved it twice per event).
impl http_body::Body for Writer {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<http_body::Frame<Bytes>>>> {
        self.get_mut()
            .poll_next_frame(cx)
            .map(|frame| frame.map(|data| data.map(http_body::Frame::data)))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.committed {
            if !self.ended {
                self.truth.outcome = Outcome::Disconnected;
            }
            self.commit();
        }
    }
}

/// Splits an event's bytes into up to three pieces, each cut inside a multi-byte
/// character where there is one. Returns `(piece, is_last)`.
fn split_inside_chars(bytes: &[u8]) -> Vec<(&[u8], bool)> {
    let continuation: Vec<usize> = (1..bytes.len())
        .filter(|&i| bytes[i] & 0b1100_0000 == 0b1000_0000)
        .collect();
    let mut cuts: Vec<usize> = match continuation.len() {
        0 => vec![bytes.len() / 2],
        1 => vec![continuation[0]],
        n => vec![continuation[0], continuation[n - 1]],
    };
    cuts.retain(|&c| c > 0 && c < bytes.len());
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts {
        pieces.push((&bytes[start..cut], false));
        start = cut;
    }
    pieces.push((&bytes[start..], true));
    pieces
}

fn stream_response(
    state: Arc<AppState>,
    gate: Arc<Gate>,
    plan: StreamPlan,
    mut truth: RequestTruth,
    rx: UnboundedReceiver<TokenDue>,
) -> Response {
    truth.headers_us = Some(state.truth.now_us());
    let seed = truth.id;
    let response_id = plan.response_id.clone();
    let mut writer = Writer {
        state,
        truth,
        step: 0,
        rx: Some(rx),
        answer: TokenText::answer(seed),
        reasoning: TokenText::reasoning(),
        frames: VecDeque::new(),
        group: Vec::new(),
        group_text: String::new(),
        group_is_reasoning: false,
        ended: false,
        committed: false,
        gate,
        written: Arc::new(WrittenSlots::new(plan.n_tokens as usize)),
        plan,
    };
    if writer.plan.endpoint == Endpoint::Chat {
        // Real servers open with a role-only chunk: no token, and no reason for TTFT.
        let role = writer
            .plan
            .chunk(json!({"role": "assistant", "content": ""}), None);
        writer.push_event(role.to_string(), Vec::new());
    }
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-request-id", response_id)
        .body(Body::new(writer))
        .expect("a valid response")
}

async fn whole_response(
    state: Arc<AppState>,
    plan: StreamPlan,
    mut truth: RequestTruth,
    mut rx: UnboundedReceiver<TokenDue>,
) -> Response {
    let answer = TokenText::answer(truth.id);
    let reasoning = TokenText::reasoning();
    let mut reasoning_text = String::new();
    let mut last_step = None;
    while let Some(due) = rx.recv().await {
        last_step = Some((due.step, due.due));
        let index = truth.tokens.len() as u64;
        truth
            .admitted_us
            .get_or_insert(state.truth.us(due.admitted));
        truth.tokens.push(TokenTruth {
            due_us: state.truth.us(due.due),
            written_us: None,
        });
        if index < plan.n_reasoning {
            reasoning_text.push_str(reasoning.token(index));
            truth.n_reasoning_tokens += 1;
        } else {
            truth.text.push_str(answer.token(index));
        }
        if due.last {
            break;
        }
    }
    if let Some((step, due)) = last_step {
        state.engine.released().wait_for(step).await;
        while Instant::now() < due {
            tokio::task::yield_now().await;
        }
    }
    let now = state.truth.now_us();
    for token in &mut truth.tokens {
        token.written_us = Some(now);
    }
    let n_generated = truth.tokens.len() as u64;
    let usage = plan.usage(n_generated, truth.prompt_tokens);
    let body = match plan.endpoint {
        Endpoint::Chat => {
            let mut message = json!({"role": "assistant", "content": truth.text});
            if !reasoning_text.is_empty() {
                message["reasoning_content"] = Value::String(reasoning_text);
            }
            json!({
                "id": plan.response_id, "object": "chat.completion", "created": plan.created, "model": plan.model,
                "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": if n_generated > 0 { "length" } else { "stop" }}],
                "usage": usage,
            })
        }
        Endpoint::Completions => json!({
            "id": plan.response_id, "object": "text_completion", "created": plan.created, "model": plan.model,
            "choices": [{"index": 0, "text": truth.text, "logprobs": null, "finish_reason": if n_generated > 0 { "length" } else { "stop" }}],
            "usage": usage,
        }),
    };
    truth.n_token_events = u64::from(n_generated > 0);
    truth.headers_us = Some(now);
    truth.outcome = Outcome::Completed;
    truth.ended_us = now;
    state.truth.push(truth);
    Json(body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(endpoint: Endpoint, include_usage: bool) -> StreamPlan {
        StreamPlan {
            head: format!(
                "{{\"id\":\"x-1\",\"object\":\"{}\",\"created\":7,\"model\":\"m\\\"q\",",
                if endpoint == Endpoint::Chat {
                    "chat.completion.chunk"
                } else {
                    "text_completion"
                }
            ),
            endpoint,
            response_id: "x-1".into(),
            model: "m\"q".into(),
            created: 7,
            include_usage,
            n_tokens: 1,
            n_reasoning: 0,
            faults: Faults::default(),
        }
    }

    #[test]
    fn the_fast_token_chunk_equals_the_general_one() {
        for endpoint in [Endpoint::Chat, Endpoint::Completions] {
            for include_usage in [false, true] {
                let plan = plan(endpoint, include_usage);
                let text = "引号\"和\n换行";
                assert_eq!(
                    plan.token_chunk(text, false),
                    plan.chunk(json!({"content": text}), None).to_string()
                );
                if endpoint == Endpoint::Chat {
                    assert_eq!(
                        plan.token_chunk(text, true),
                        plan.chunk(json!({"content": null, "reasoning_content": text}), None)
                            .to_string()
                    );
                }
            }
        }
    }

    #[test]
    fn splits_land_inside_characters() {
        let text = "data: {\"content\":\"你好\"}\n\n";
        let pieces = split_inside_chars(text.as_bytes());
        assert_eq!(pieces.len(), 3);
        let joined: Vec<u8> = pieces.iter().flat_map(|p| p.0.iter().copied()).collect();
        assert_eq!(joined, text.as_bytes());
        assert!(
            std::str::from_utf8(pieces[0].0).is_err(),
            "the first cut is inside 你"
        );
        assert!(pieces[2].1 && !pieces[0].1);
        let ascii = split_inside_chars(b"data: x\n\n");
        assert_eq!(ascii.len(), 2);
    }
}
