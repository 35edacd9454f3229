//! Ground truth: for every request, when it was accepted, when it joined the batch,
//! when each token was due and when it was written, and how it ended. Served as
//! JSON at `GET /v1/sim/truth`; `DELETE /v1/sim/truth` clears it.
//!
//! Times are µs since the simulator started. "Written" is when the connection
//! started the socket write that carried the token, never before it was due (see
//! `connection::Gate`); a client that reads slowly makes later writes wait, which is
//! then visible as lateness. "Headers" is when the handler produced the response
//! head; it leaves with the connection's next write, which may wait behind a step
//! being held (up to `engine::HAND_OFF_LEAD`).

use std::{collections::VecDeque, sync::Mutex, time::Instant};

use serde::Serialize;

/// One token's schedule.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TokenTruth {
    pub due_us: u64,
    /// `None` when the token was never written (the stream was cut or the client left).
    pub written_us: Option<u64>,
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The whole response was written.
    Completed,
    /// Answered with an HTTP error (a fault, a bad request, an unknown model).
    HttpError,
    /// The stream was cut or ended with an error event on purpose (a fault).
    Faulted,
    /// The client went away before the end.
    Disconnected,
}

/// Everything about one request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestTruth {
    pub id: u64,
    /// The `id` field of every chunk (`chatcmpl-N` / `cmpl-N`).
    pub response_id: String,
    pub endpoint: &'static str,
    pub model: String,
    pub stream: bool,
    pub faults: Vec<&'static str>,
    pub status: u16,
    pub prompt_tokens: u64,
    /// The prompt's first characters as read (a chat's message contents run
    /// together), and a chat's messages: what specs check a request sent, without
    /// keeping whole prompts of thousands of requests.
    pub prompt_head: String,
    /// Its last characters (a chat's: its last message's end).
    pub prompt_tail: String,
    pub n_messages: usize,
    /// Of those, the ones found in the prompt cache (no prefill for them).
    pub cached_tokens: u64,
    pub max_tokens: u64,
    pub accepted_us: u64,
    pub admitted_us: Option<u64>,
    /// When the response headers were handed to the connection.
    pub headers_us: Option<u64>,
    /// Tokens generated, reasoning included, in order.
    pub tokens: Vec<TokenTruth>,
    pub n_reasoning_tokens: u64,
    /// Events carrying tokens (fewer than tokens with `multi-token`).
    pub n_token_events: u64,
    /// The answer text as sent (reasoning excluded; empty when it was a tool call).
    pub text: String,
    /// The answer was a tool call (the `tool-call` fault): its events are the
    /// function's name, then its arguments.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tool_call: bool,
    /// The request's `anthropic-*` headers, as `name: value`: what only the
    /// Anthropic kind of endpoint should send.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub anthropic_headers: Vec<String>,
    pub outcome: Outcome,
    pub ended_us: u64,
}

impl RequestTruth {
    /// A request as it was accepted, before its body is read: the handler fills in
    /// the rest (model, faults, tokens, status, outcome) as it goes.
    pub fn accepted(
        id: u64,
        response_id: String,
        endpoint: &'static str,
        accepted_us: u64,
    ) -> RequestTruth {
        RequestTruth {
            id,
            response_id,
            endpoint,
            model: String::new(),
            stream: false,
            faults: Vec::new(),
            status: 200,
            prompt_tokens: 0,
            prompt_head: String::new(),
            prompt_tail: String::new(),
            n_messages: 0,
            cached_tokens: 0,
            max_tokens: 0,
            accepted_us,
            admitted_us: None,
            headers_us: None,
            tokens: Vec::new(),
            n_reasoning_tokens: 0,
            n_token_events: 0,
            text: String::new(),
            tool_call: false,
            anthropic_headers: Vec::new(),
            outcome: Outcome::HttpError,
            ended_us: 0,
        }
    }

    /// Written minus due, µs, for each written token.
    pub fn lateness_us(&self) -> impl Iterator<Item = u64> + '_ {
        self.tokens
            .iter()
            .filter_map(|t| t.written_us.map(|w| w.saturating_sub(t.due_us)))
    }
}

/// The simulator's own punctuality over all kept requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Lateness {
    pub n_tokens: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// The truth store: a bounded FIFO of finished requests.
pub struct TruthStore {
    epoch: Instant,
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    requests: VecDeque<RequestTruth>,
    n_dropped: u64,
}

/// The document served at `GET /v1/sim/truth`.
#[derive(Serialize)]
pub struct TruthDocument<'a> {
    pub n_dropped: u64,
    pub lateness: Lateness,
    pub requests: Vec<&'a RequestTruth>,
}

impl TruthStore {
    pub fn new(epoch: Instant, capacity: usize) -> TruthStore {
        TruthStore {
            epoch,
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// µs since the simulator started.
    pub fn us(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_micros() as u64
    }

    pub fn now_us(&self) -> u64 {
        self.us(Instant::now())
    }

    pub fn push(&self, truth: RequestTruth) {
        let mut inner = self.inner.lock().expect("truth lock");
        if inner.requests.len() >= self.capacity {
            inner.requests.pop_front();
            inner.n_dropped += 1;
        }
        inner.requests.push_back(truth);
    }

    pub fn clear(&self) {
        let mut inner = self.inner.lock().expect("truth lock");
        inner.requests.clear();
        inner.n_dropped = 0;
    }

    /// Serialises the requests with `id > since`, and the lateness over all kept.
    pub fn to_json(&self, since: u64) -> String {
        let inner = self.inner.lock().expect("truth lock");
        let mut lateness: Vec<u64> = inner
            .requests
            .iter()
            .flat_map(RequestTruth::lateness_us)
            .collect();
        lateness.sort_unstable();
        let pick = |q: f64| {
            lateness
                .get(((lateness.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(0)
        };
        let doc = TruthDocument {
            n_dropped: inner.n_dropped,
            lateness: Lateness {
                n_tokens: lateness.len() as u64,
                p50_us: pick(0.5),
                p99_us: pick(0.99),
                max_us: lateness.last().copied().unwrap_or(0),
            },
            requests: inner.requests.iter().filter(|r| r.id > since).collect(),
        };
        serde_json::to_string(&doc).expect("truth serialises")
    }

    /// A copy of the kept requests (for in-process tests and benchmarks).
    pub fn snapshot(&self) -> Vec<RequestTruth> {
        self.inner
            .lock()
            .expect("truth lock")
            .requests
            .iter()
            .cloned()
            .collect()
    }
}
