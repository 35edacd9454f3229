//! One request, from the moment the scheduler wanted to send it to the end of its
//! stream: a [`RecordBuilder`] is fed the response as it arrives, and
//! [`RecordBuilder::finish`] turns it into an immutable [`RequestRecord`].
//!
//! Every timestamp is in microseconds on one time origin chosen by the caller (the
//! engine's clock, zeroed when the run starts: see `src/engine/clock.rs`). The metric definitions follow
//! vLLM's `bench serve`:
//!
//! | metric | definition |
//! |---|---|
//! | client queue time | `sent − wanted`: waiting for a free slot, kept out of TTFT |
//! | TTFT | first token of any kind (reasoning or answer) − `sent` |
//! | time to first answer token | first `content`/`text` token − `sent` |
//! | E2E | the stream's last word (`[DONE]`, or the usage chunk after a `finish_reason`; the body's end when neither comes) − `sent` |
//! | TPOT | `(E2E − TTFT) / (N_out − 1)`, for `N_out ≥ 2`, N_out without hidden reasoning |
//! | ITL | gaps between consecutive token-bearing events, pooled over requests |
//! | decode TPS | `(N_out − 1) / (t_last − t_first)`, N_out without hidden reasoning |
//!
//! `N_out` is `usage.completion_tokens` when the server sent it, else the number of
//! token-bearing events; the record says which, and by how much the two differ
//! (servers that pack several tokens into one event make chunk counting wrong).
//!
//! (Over 400 lines: the record, the builder that makes it and the metric
//! definitions read off it are one contract, kept side by side.)

use serde::{Deserialize, Serialize};

use crate::{
    error::{body_sample, parse_retry_after, ErrorKind, RequestError, BODY_SAMPLE_BYTES},
    sse::{SseError, SseEvent, SseLimits, SseParser},
    stream::{interpret, EndpointKind, ServerTimings, StreamItem, Usage},
};

/// Where `N_out` came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// `usage.completion_tokens` from the server.
    Usage,
    /// The number of token-bearing events (one token each, assumed).
    Chunks,
}

/// What the browser's Resource Timing says about a request (when the server sends
/// `Timing-Allow-Origin`; otherwise the browser hides these). µs on the run's clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrowserTiming {
    /// When the browser started handling the fetch.
    pub fetch_start_us: u64,
    /// When the request left the browser: after any wait for a free connection,
    /// DNS, connect, TLS and the CORS preflight.
    pub request_start_us: Option<u64>,
    /// The first byte of the response.
    pub response_start_us: Option<u64>,
    /// `nextHopProtocol`: `http/1.1`, `h2`, `h3`.
    pub protocol: Option<String>,
    /// DNS, TCP and TLS set-up (`connectEnd − domainLookupStart`) when this request
    /// opened a new connection; `None` on a reused one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub connection_setup_us: Option<u64>,
}

/// What is known when a request is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestStart {
    /// Unique within a run.
    pub id: u64,
    /// The concurrency level (closed loop) this request belongs to.
    pub concurrency: u32,
    /// A warm-up request: measured, never summarised.
    pub warmup: bool,
    /// When the scheduler wanted to send it (a slot freed, or its arrival time came).
    pub wanted_us: u64,
    /// When `fetch` was called.
    pub sent_us: u64,
}

/// The detail of a request whose engine worker stopped.
const STOPPED: &str = "the engine worker that sent this request stopped before it ended";

/// How the response body ended, as the caller saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// The body ended normally.
    Complete,
    /// The caller's timeout fired and aborted the request.
    TimedOut,
    /// The user cancelled the run.
    Cancelled,
    /// The engine worker that sent the request stopped before it ended (said by
    /// the worker that asked it to send).
    EngineStopped,
    /// The request or the body read failed (in a browser, a `TypeError` from `fetch`).
    NetworkError {
        /// What the browser said.
        message: String,
    },
}

/// One finished request. Immutable: summaries are computed from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The request's number in the run, from 0 in send order.
    pub id: u64,
    /// The level that sent it (0 for open-loop arrivals).
    pub concurrency: u32,
    /// A warm-up request, left out of every figure.
    pub warmup: bool,
    /// Which pass of a repeated ladder sent it (0 for the first, and for a plan
    /// that does not repeat).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repetition: u32,
    /// Which target of an A/B plan it went to (0: A, the plan's own).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub target: u32,
    /// When it wanted to start: its lane was free, or its arrival was due.
    pub wanted_us: u64,
    /// When `fetch` was called.
    pub sent_us: u64,
    /// When the response headers arrived.
    pub headers_us: Option<u64>,
    /// The first token-bearing event (reasoning or answer).
    pub first_token_us: Option<u64>,
    /// The first event carrying answer text.
    pub first_answer_us: Option<u64>,
    /// The last token-bearing event.
    pub last_token_us: Option<u64>,
    /// When the body ended (or the request was given up).
    pub end_us: u64,
    /// The HTTP status, when a response came.
    pub status: Option<u16>,
    /// The response's `id` from its first chunk (names the request in server logs).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub response_id: Option<String>,
    /// Body bytes read: all of an error response's; of a stream, those up to the
    /// end of the event that closed it (its last word or its error).
    pub n_bytes: u64,
    /// Token-bearing events (reasoning and answer).
    pub n_token_events: u64,
    /// Of those, events carrying reasoning text only.
    pub n_reasoning_events: u64,
    /// Of those, events carrying a tool call's text (its name or arguments):
    /// output like the answer's, counted apart.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n_tool_call_events: u64,
    /// The `usage` object, when the server sent one.
    pub usage: Option<Usage>,
    /// `N_out`: see the module docs. `None` when no token arrived.
    pub n_out: Option<u64>,
    /// Where `n_out` came from.
    pub token_source: TokenSource,
    /// `usage.completion_tokens − n_token_events`, when both exist.
    pub token_mismatch: Option<i64>,
    /// The `finish_reason` the stream gave (OpenAI's words).
    pub finish_reason: Option<String>,
    /// `data: [DONE]` ended the stream (one after the usage chunk that ended it
    /// is not read, whether or not it came in the same network read).
    pub saw_done: bool,
    /// Arrival time of each token-bearing event.
    pub token_times_us: Vec<u64>,
    /// Comment lines (`: keep-alive`) in the stream.
    pub n_comment_lines: u64,
    /// The generated answer text, exactly as streamed (kept when asked for).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output_text: Option<String>,
    /// `None` for a successful request.
    pub error: Option<RequestError>,
    /// Resource Timing, when the browser exposed it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub browser: Option<BrowserTiming>,
    /// What the server says it spent (llama.cpp's `timings`), when it says.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub server_timings: Option<ServerTimings>,
    /// The output length it asked for (its `max_tokens`), when the client said.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub asked_tokens: Option<u32>,
    /// Which turn of which conversation it was, in a plan of conversations.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub turn: Option<Turn>,
}

impl RequestRecord {
    /// Whether it succeeded: a 2xx status, no error, a token.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// Whether the answer ended on its own (`finish_reason` `stop`) before the
    /// output length it asked for.
    pub fn stopped_early(&self) -> bool {
        self.finish_reason.as_deref() == Some("stop")
            && matches!((self.n_out, self.asked_tokens), (Some(n), Some(asked)) if n < u64::from(asked))
    }

    /// Client queue time: from wanting to start to being sent, µs.
    pub fn queue_us(&self) -> u64 {
        self.sent_us.saturating_sub(self.wanted_us)
    }

    /// Time in the browser between `fetch` and the request leaving it: the
    /// browser's own connection queue, connection set-up, the CORS preflight.
    pub fn browser_wait_us(&self) -> Option<u64> {
        let left = self.browser.as_ref()?.request_start_us?;
        Some(left.saturating_sub(self.sent_us))
    }

    /// Browser wait that connection set-up does not explain: on a reused connection
    /// with no queue in front of it, this is mostly a CORS preflight.
    pub fn unexplained_wait_us(&self) -> Option<u64> {
        let setup = self.browser.as_ref()?.connection_setup_us.unwrap_or(0);
        Some(self.browser_wait_us()?.saturating_sub(setup))
    }

    /// TTFT counted from when the request left the browser: the server's part
    /// (and the network's), without the browser's queue.
    pub fn ttft_after_send_us(&self) -> Option<u64> {
        let left = self.browser.as_ref()?.request_start_us?;
        Some(self.first_token_us?.saturating_sub(left))
    }

    /// Prompt tokens the server took from its prompt cache, as it reports them:
    /// `usage.prompt_tokens_details.cached_tokens`, else llama.cpp's `timings`
    /// (`cache_n`, or the prompt's tokens less those it computed, `prompt_n`).
    pub fn cached_prompt_tokens(&self) -> Option<u64> {
        let usage = self.usage.as_ref();
        let timings = self.server_timings.as_ref();
        usage
            .and_then(|u| u.cached_tokens)
            .or_else(|| timings?.cache_n)
            .or_else(|| {
                let computed = timings?.prompt_n?;
                Some(usage?.prompt_tokens?.saturating_sub(computed))
            })
    }

    /// Time to first token, from the send, µs.
    pub fn ttft_us(&self) -> Option<u64> {
        self.first_token_us.map(|t| t.saturating_sub(self.sent_us))
    }

    /// Time to the first answer token (differs from TTFT when reasoning comes first).
    pub fn ttfat_us(&self) -> Option<u64> {
        self.first_answer_us.map(|t| t.saturating_sub(self.sent_us))
    }

    /// End-to-end latency, from the send to the end, µs.
    pub fn e2e_us(&self) -> u64 {
        self.end_us.saturating_sub(self.sent_us)
    }

    /// `(E2E − TTFT) / (N_out − 1)` in µs, for `N_out ≥ 2`.
    /// Reasoning tokens the server counted (`usage`) but never streamed: they took
    /// their time before the first token, and are no part of the streamed pace.
    pub fn hidden_reasoning_tokens(&self) -> u64 {
        if self.n_reasoning_events > 0 {
            return 0;
        }
        self.usage.and_then(|u| u.reasoning_tokens).unwrap_or(0)
    }

    /// The tokens whose pace TPOT and decode speed measure: `N_out` without hidden
    /// reasoning.
    pub fn n_streamed_out(&self) -> Option<u64> {
        self.n_out
            .map(|n| n.saturating_sub(self.hidden_reasoning_tokens()))
            .filter(|&n| n > 0)
    }

    /// Time per output token after the first, µs: `(last − first) / (n_out − 1)`.
    pub fn tpot_us(&self) -> Option<f64> {
        let n_out = self.n_streamed_out()?;
        let ttft = self.ttft_us()?;
        (n_out >= 2).then(|| (self.e2e_us().saturating_sub(ttft)) as f64 / (n_out - 1) as f64)
    }

    /// How the token events came in reads (see [`Reads`]).
    pub fn reads(&self) -> Reads {
        let mut reads = Reads {
            n_events: self.token_times_us.len() as u64,
            ..Reads::default()
        };
        let mut gaps = Vec::new();
        let mut run = 0u64;
        let close = |run: u64, reads: &mut Reads| {
            if run > 0 {
                reads.n_reads += 1;
                reads.largest = reads.largest.max(run);
                if run >= BURST_EVENTS {
                    reads.n_in_bursts += run;
                }
            }
        };
        for (i, &t) in self.token_times_us.iter().enumerate() {
            match i.checked_sub(1).map(|j| self.token_times_us[j]) {
                Some(before) if before == t => run += 1,
                Some(before) => {
                    close(run, &mut reads);
                    gaps.push(t.saturating_sub(before));
                    run = 1;
                }
                None => run = 1,
            }
        }
        close(run, &mut reads);
        if !gaps.is_empty() {
            crate::stats::sort_numbers(&mut gaps);
            reads.median_gap_us = gaps[gaps.len() / 2];
        }
        reads
    }

    /// Gaps between consecutive token-bearing events, µs.
    pub fn itls_us(&self) -> impl Iterator<Item = u64> + '_ {
        self.token_times_us
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]))
    }

    /// `(N_out − 1) / (t_last − t_first)` in tokens per second.
    pub fn decode_tps(&self) -> Option<f64> {
        let n_out = self.n_streamed_out()?;
        let span_us = self.last_token_us?.checked_sub(self.first_token_us?)?;
        (n_out >= 2 && span_us > 0).then(|| (n_out - 1) as f64 * 1e6 / span_us as f64)
    }

    /// The article's per-request TPS: `(n_chunks − 1) / (t_last − t_first)`, counting
    /// content chunks only (its `tps`, summed into `tps_sum`).
    pub fn article_tps(&self) -> Option<f64> {
        let span_us = self.last_token_us?.checked_sub(self.first_token_us?)?;
        (self.n_token_events >= 2 && span_us > 0)
            .then(|| (self.n_token_events - 1) as f64 * 1e6 / span_us as f64)
    }
}

/// A read that carries at least this many token events is a burst: a server
/// writes one event per token (or per few tokens) as it makes them, and a client
/// reading as they come gets them one or two at a time.
pub(crate) const BURST_EVENTS: u64 = 4;
/// Fewer token events than this say nothing about how a stream was delivered.
pub(crate) const BURST_MIN_EVENTS: u64 = 8;
/// A stream shorter than this may arrive in one piece from a fast server.
pub(crate) const BURST_MIN_E2E_US: u64 = 100_000;
/// Reads this far apart (median), or two at most, are a gateway's releases (a
/// proxy's 4–8 KiB buffer holds 25–50 tokens: 125 ms and more at 200 tokens/s;
/// a timed flush, 100 ms or more), not a fast server's writes coalescing in a busy
/// client or a loaded server catching up (tens of ms).
pub(crate) const BURST_READ_GAP_US: u64 = 50_000;

/// How a request's token events came in network reads. Events the engine stamped
/// at the same instant came in one read (it stamps each chunk as it arrives).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reads {
    /// Token events.
    pub n_events: u64,
    /// Reads that carried them.
    pub n_reads: u64,
    /// Token events in bursts (reads of [`BURST_EVENTS`] or more).
    pub n_in_bursts: u64,
    /// The most token events one read carried.
    pub largest: u64,
    /// The median time between consecutive reads, µs (0 for one read).
    pub median_gap_us: u64,
}

impl Reads {
    /// Whether the stream arrived in bursts although the server took its time: at
    /// least [`BURST_MIN_EVENTS`] token events, half of them in bursts, a stream
    /// of [`BURST_MIN_E2E_US`] or more, and reads [`BURST_READ_GAP_US`] apart at
    /// the median (or at most two). Silent for a server that packs several tokens
    /// into each event at real intervals (one event a read) and for a fast server
    /// whose events coalesce in a busy client (reads close together, or a stream
    /// too short to tell).
    pub fn is_burst_delivery(&self, e2e_us: u64) -> bool {
        self.n_events >= BURST_MIN_EVENTS
            && 2 * self.n_in_bursts >= self.n_events
            && e2e_us >= BURST_MIN_E2E_US
            && (self.n_reads <= 2 || self.median_gap_us >= BURST_READ_GAP_US)
    }
}

/// The most one response is read for: a server that ignores `max_tokens`, or never
/// ends its stream, would otherwise grow a record (8 bytes a token) until the
/// timeout, at every concurrency at once. Beyond any limit reading stops and the
/// request fails as [`ErrorKind::ResponseTooLarge`], saying which limit it met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseLimits {
    /// Data events (each token's chunk is one): 524,288 is four times the longest
    /// answers served today.
    pub max_events: u64,
    /// Body bytes.
    pub max_bytes: u64,
    /// Events carrying tokens, from the request's `max_tokens` (see
    /// [`ResponseLimits::for_asked`]); `None` where the request set none.
    pub max_token_events: Option<u64>,
}

impl Default for ResponseLimits {
    fn default() -> Self {
        ResponseLimits {
            max_events: 1 << 19,
            max_bytes: 1 << 27,
            max_token_events: None,
        }
    }
}

/// Token events allowed per token asked for, and on top: a server honouring
/// `max_tokens` sends at most one event per token, but a gateway that re-chunks
/// the text may send one per character (English runs about four characters a
/// token), so only a server far past what was asked is stopped.
pub(crate) const TOKEN_EVENTS_PER_ASKED: u64 = 8;
pub(crate) const TOKEN_EVENTS_SLACK: u64 = 256;

impl ResponseLimits {
    /// The limits of a request that asked for `asked` output tokens: an answer
    /// that goes on far past them (a server that ignores `max_tokens`, or never
    /// ends its answer) is stopped there instead of at the timeout.
    pub fn for_asked(self, asked: Option<u32>) -> ResponseLimits {
        ResponseLimits {
            max_token_events: asked
                .map(|n| u64::from(n) * TOKEN_EVENTS_PER_ASKED + TOKEN_EVENTS_SLACK),
            ..self
        }
    }
}

/// Most of an error page read (a non-2xx answer, or a 2xx that is not an event
/// stream): its first bytes are the sample; one that goes on without end is not
/// read to the timeout.
pub const ERROR_BODY_MAX_BYTES: u64 = 64 << 10;

/// `N_out`, where it came from, and `usage.completion_tokens − n_token_events`
/// (see the module docs): the one rule, for records built here or read from
/// another client's records.
pub(crate) fn token_count(
    usage: Option<Usage>,
    n_token_events: u64,
) -> (Option<u64>, TokenSource, Option<i64>) {
    let completion_tokens = usage.and_then(|u| u.completion_tokens);
    let (n_out, source) = match completion_tokens {
        Some(n) => (Some(n), TokenSource::Usage),
        None => (
            (n_token_events > 0).then_some(n_token_events),
            TokenSource::Chunks,
        ),
    };
    // Saturating: a server may claim any count (u64::MAX included).
    let mismatch = completion_tokens.map(|n| {
        (i128::from(n) - i128::from(n_token_events)).clamp(i64::MIN.into(), i64::MAX.into()) as i64
    });
    (n_out, source, mismatch)
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// A request's place in a conversation (see [`crate::plan::Conversation`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The conversation, numbered in the run from 0.
    pub session: u64,
    /// The turn, 0 for the first.
    pub index: u32,
    /// How many turns the conversation has (a file's conversations have their
    /// own; 0 in documents written before: the plan's `conversation.turns`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n_turns: u32,
}

/// Options of a [`RecordBuilder`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordOptions {
    /// Bounds of the SSE parser.
    pub sse_limits: SseLimits,
    /// Bounds of the response: events, bytes, token events.
    pub response_limits: ResponseLimits,
    /// Keep the answer text in the record (for display and exactness checks).
    pub keep_text: bool,
    /// Whose stream it is: how its events are read.
    pub endpoint: EndpointKind,
}

/// Accumulates one request's response as it arrives.
#[derive(Debug)]
pub struct RecordBuilder {
    start: RequestStart,
    keep_text: bool,
    endpoint: EndpointKind,
    limits: ResponseLimits,
    parser: SseParser,
    scratch: Vec<SseEvent>,
    status: Option<u16>,
    headers_us: Option<u64>,
    is_event_stream: bool,
    retry_after_s: Option<f64>,
    head_bytes: Vec<u8>,
    n_bytes: u64,
    n_data_events: u64,
    first_token_us: Option<u64>,
    first_answer_us: Option<u64>,
    token_times_us: Vec<u64>,
    n_reasoning_events: u64,
    n_tool_call_events: u64,
    usage: Option<Usage>,
    server_timings: Option<ServerTimings>,
    finish_reason: Option<String>,
    saw_done: bool,
    /// When the stream said it was over: `[DONE]`, or the usage chunk after a
    /// `finish_reason`. The request's end, whatever the body does afterwards.
    complete_at_us: Option<u64>,
    response_id: Option<String>,
    text: String,
    error: Option<RequestError>,
}

impl RecordBuilder {
    /// A builder for the request that `start` describes.
    pub fn new(start: RequestStart, options: RecordOptions) -> Self {
        RecordBuilder {
            start,
            keep_text: options.keep_text,
            endpoint: options.endpoint,
            limits: options.response_limits,
            parser: SseParser::new(options.sse_limits),
            scratch: Vec::new(),
            status: None,
            headers_us: None,
            is_event_stream: true,
            retry_after_s: None,
            head_bytes: Vec::new(),
            n_bytes: 0,
            n_data_events: 0,
            first_token_us: None,
            first_answer_us: None,
            token_times_us: Vec::new(),
            n_reasoning_events: 0,
            n_tool_call_events: 0,
            usage: None,
            server_timings: None,
            finish_reason: None,
            saw_done: false,
            complete_at_us: None,
            response_id: None,
            text: String::new(),
            error: None,
        }
    }

    /// True once the stream itself has failed (an error event, a malformed or
    /// oversized event): reading further changes nothing.
    pub fn has_stream_error(&self) -> bool {
        self.error.is_some()
    }

    /// True once the stream said it was over (`[DONE]`, or the usage chunk after a
    /// `finish_reason`): nothing after it is measured, and a body held open after
    /// it, or cut, changes nothing.
    pub fn is_complete(&self) -> bool {
        self.complete_at_us.is_some()
    }

    /// True once nothing more is read: the stream said it was over, or failed.
    /// Bytes fed after that, even within the chunk that closed it, change nothing
    /// (no error, no token, no byte of the answer, no byte counted), so the record
    /// does not depend on how the network cut the stream's last bytes.
    fn is_closed(&self) -> bool {
        self.is_complete() || self.error.is_some()
    }

    /// The response headers arrived at `at_us`.
    ///
    /// `content_type` and `retry_after` are the raw header values, when present.
    pub fn on_headers(
        &mut self,
        status: u16,
        content_type: Option<&str>,
        retry_after: Option<&str>,
        at_us: u64,
    ) {
        self.status = Some(status);
        self.headers_us = Some(at_us);
        self.is_event_stream = content_type.is_none_or(|ct| {
            ct.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        });
        self.retry_after_s = retry_after.and_then(parse_retry_after);
    }

    /// A chunk of the body arrived at `at_us`.
    pub fn on_bytes(&mut self, chunk: &[u8], at_us: u64) {
        if self.is_closed() {
            return;
        }
        if !self.status_is_success() {
            // An error page: counted and sampled, never parsed; and never read
            // without end (a gateway's endless page, a decompression bomb).
            self.read(chunk);
            if self.n_bytes > ERROR_BODY_MAX_BYTES {
                if let Some(mut err) = self.classify_answer() {
                    err.detail = format!(
                        "{}; the body went past {} KiB and was not read further",
                        err.detail,
                        ERROR_BODY_MAX_BYTES >> 10
                    );
                    self.error = Some(err);
                }
            }
            return;
        }
        if self.n_bytes + chunk.len() as u64 > self.limits.max_bytes {
            self.read(chunk);
            self.fail_too_large(format!(
                "the response went past {} bytes; tokenmeter stopped reading it there",
                self.limits.max_bytes
            ));
            return;
        }
        // Event by event, so that reading stops at the one that closes the stream
        // (its last word, or an error), wherever in the chunk it ends.
        let mut events = std::mem::take(&mut self.scratch);
        let mut rest = chunk;
        while !rest.is_empty() && !self.is_closed() {
            match self.parser.feed_to_event(rest, at_us, &mut events) {
                Ok(taken) => {
                    self.read(&rest[..taken]);
                    rest = &rest[taken..];
                    self.take_events(&mut events);
                }
                Err(err) => {
                    self.read(rest);
                    self.fail_sse(err);
                }
            }
        }
        self.scratch = events;
    }

    /// Counts bytes read and keeps the first of them as the body's sample.
    fn read(&mut self, bytes: &[u8]) {
        self.n_bytes += bytes.len() as u64;
        if self.head_bytes.len() < BODY_SAMPLE_BYTES {
            let room = BODY_SAMPLE_BYTES - self.head_bytes.len();
            self.head_bytes
                .extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    /// The request is over: returns the immutable record. After the stream said
    /// it was over, the end is that instant (vLLM's: the last chunk), whatever
    /// happened to the body since.
    pub fn finish(mut self, end: StreamEnd, at_us: u64) -> RequestRecord {
        let (end, at_us) = match self.complete_at_us {
            Some(complete_at_us) => (StreamEnd::Complete, complete_at_us),
            None => (end, at_us),
        };
        if self.error.is_none() {
            self.error = self.classify_end(end, at_us);
        }
        let n_token_events = self.token_times_us.len() as u64;
        let (n_out, token_source, token_mismatch) = token_count(self.usage, n_token_events);
        RequestRecord {
            id: self.start.id,
            concurrency: self.start.concurrency,
            warmup: self.start.warmup,
            repetition: 0,
            target: 0,
            wanted_us: self.start.wanted_us,
            sent_us: self.start.sent_us,
            headers_us: self.headers_us,
            first_token_us: self.first_token_us,
            first_answer_us: self.first_answer_us,
            last_token_us: self.token_times_us.last().copied(),
            end_us: at_us,
            status: self.status,
            response_id: self.response_id,
            n_bytes: self.n_bytes,
            n_token_events,
            n_reasoning_events: self.n_reasoning_events,
            n_tool_call_events: self.n_tool_call_events,
            usage: self.usage,
            n_out,
            token_source,
            token_mismatch,
            finish_reason: self.finish_reason,
            saw_done: self.saw_done,
            token_times_us: self.token_times_us,
            n_comment_lines: self.parser.n_comment_lines(),
            output_text: self.keep_text.then_some(self.text),
            error: self.error,
            browser: None,
            server_timings: self.server_timings,
            asked_tokens: None,
            turn: None,
        }
    }

    fn status_is_success(&self) -> bool {
        self.status.is_none_or(|s| (200..300).contains(&s)) && self.is_event_stream
    }

    /// The error of an answer that is not an event stream to read: an HTTP error
    /// status, or a 2xx of another content type.
    fn classify_answer(&self) -> Option<RequestError> {
        let error = |kind: ErrorKind, detail: String| RequestError {
            kind,
            detail,
            body_sample: None,
            retry_after_s: None,
        };
        let status = self.status.unwrap_or(0);
        if let Some(kind) = ErrorKind::from_status(status) {
            let mut err = self.with_sample(error(kind, format!("HTTP {status}")));
            err.retry_after_s = self.retry_after_s;
            return Some(err);
        }
        (!self.is_event_stream).then(|| {
            self.with_sample(error(
                ErrorKind::NotEventStream,
                "the response is not text/event-stream".into(),
            ))
        })
    }

    fn classify_end(&mut self, end: StreamEnd, at_us: u64) -> Option<RequestError> {
        let error = |kind: ErrorKind, detail: String| RequestError {
            kind,
            detail,
            body_sample: None,
            retry_after_s: None,
        };
        match end {
            StreamEnd::Cancelled => {
                return Some(error(ErrorKind::Cancelled, "cancelled by the user".into()))
            }
            StreamEnd::EngineStopped => {
                return Some(error(ErrorKind::EngineStopped, STOPPED.into()))
            }
            StreamEnd::TimedOut if self.headers_us.is_none() => {
                return Some(error(
                    ErrorKind::TimeoutBeforeHeaders,
                    "no response headers before the timeout".into(),
                ))
            }
            StreamEnd::TimedOut => {
                let n_comments = self.parser.n_comment_lines();
                let detail = match self.token_times_us.len() {
                    // A server that keeps the connection alive and never answers.
                    0 if n_comments > 0 => format!(
                        "the stream had not ended at the timeout: no token, only {n_comments} keep-alive comment lines"
                    ),
                    n => format!("the stream had not ended at the timeout ({n} tokens so far)"),
                };
                return Some(error(ErrorKind::TimeoutMidStream, detail));
            }
            StreamEnd::NetworkError { message } if self.headers_us.is_none() => {
                return Some(error(ErrorKind::Network, message))
            }
            StreamEnd::NetworkError { message } => {
                return Some(self.with_sample(error(
                    ErrorKind::StreamCut,
                    format!("the connection failed mid-stream: {message}"),
                )))
            }
            StreamEnd::Complete => {}
        }
        if let Some(err) = self.classify_answer() {
            return Some(err);
        }
        if !self.is_complete() {
            // The body ended: an event with no blank line after it still counts. Once
            // the stream had said it was over, a line held at that moment is a piece
            // of whatever came after, and is dropped.
            let mut events = std::mem::take(&mut self.scratch);
            let result = self.parser.finish(at_us, &mut events);
            self.take_events(&mut events);
            if let Err(err) = result {
                self.fail_sse(err);
            }
        }
        if let Some(err) = self.error.take() {
            return Some(err);
        }
        if self.token_times_us.is_empty() {
            let detail = if self.n_data_events == 0 && self.n_bytes > 0 {
                "the body held no server-sent event"
            } else {
                "the stream ended without a token"
            };
            return Some(self.with_sample(error(ErrorKind::EmptyStream, detail.into())));
        }
        if !self.saw_done && self.finish_reason.is_none() {
            return Some(self.with_sample(error(
                ErrorKind::StreamCut,
                format!(
                    "the stream ended after {} tokens without [DONE] or a finish_reason",
                    self.token_times_us.len()
                ),
            )));
        }
        None
    }

    fn with_sample(&self, mut err: RequestError) -> RequestError {
        if !self.head_bytes.is_empty() {
            err.body_sample = Some(body_sample(&self.head_bytes));
        }
        err
    }

    fn fail_sse(&mut self, err: SseError) {
        if self.error.is_none() {
            self.error = Some(RequestError {
                kind: ErrorKind::EventTooLarge,
                detail: err.to_string(),
                body_sample: None,
                retry_after_s: None,
            });
        }
    }

    fn fail_too_large(&mut self, detail: String) {
        self.error.get_or_insert(RequestError {
            kind: ErrorKind::ResponseTooLarge,
            detail,
            body_sample: None,
            retry_after_s: None,
        });
    }

    // Long: the SSE events of one read matched by kind: the hot path, kept in one loop.
    fn take_events(&mut self, events: &mut Vec<SseEvent>) {
        for event in events.drain(..) {
            if self.is_closed() {
                continue;
            }
            if self.n_data_events == self.limits.max_events {
                self.fail_too_large(format!(
                    "the response went past {} events; tokenmeter stopped reading it there",
                    self.limits.max_events
                ));
                continue;
            }
            self.n_data_events += 1;
            match interpret(self.endpoint, &event.data) {
                Ok(StreamItem::Done) => {
                    self.saw_done = true;
                    self.complete_at_us.get_or_insert(event.at_us);
                }
                Ok(StreamItem::Error { message }) => {
                    self.error = Some(RequestError {
                        kind: ErrorKind::StreamErrorEvent,
                        detail: message,
                        body_sample: Some(body_sample(event.data.as_bytes())),
                        retry_after_s: None,
                    });
                }
                Ok(StreamItem::Chunk(chunk)) => {
                    if self.response_id.is_none() {
                        self.response_id = chunk.id.clone();
                    }
                    if chunk.has_tokens() {
                        let n_tokens = self.token_times_us.len() as u64;
                        if self
                            .limits
                            .max_token_events
                            .is_some_and(|max| n_tokens >= max)
                        {
                            self.fail_too_large(format!(
                                "the answer went past {n_tokens} token events, far more than max_tokens asked for; tokenmeter stopped reading it there"
                            ));
                            continue;
                        }
                        self.first_token_us.get_or_insert(event.at_us);
                        self.token_times_us.push(event.at_us);
                        if chunk.is_reasoning_only() {
                            self.n_reasoning_events += 1;
                        } else {
                            self.first_answer_us.get_or_insert(event.at_us);
                            if chunk.content.is_empty() {
                                self.n_tool_call_events += 1;
                            }
                        }
                        if self.keep_text {
                            self.text.push_str(&chunk.content);
                        }
                    }
                    if let Some(usage) = chunk.usage {
                        self.usage = Some(self.usage.unwrap_or_default().updated(usage));
                        if self.finish_reason.is_some() && self.endpoint.is_openai_chunks() {
                            // The usage chunk comes last (OpenAI's order).
                            self.complete_at_us.get_or_insert(event.at_us);
                        }
                    }
                    if chunk.finish_reason.is_some() {
                        self.finish_reason = chunk.finish_reason;
                    }
                    if chunk.timings.is_some() {
                        self.server_timings = chunk.timings;
                    }
                    if chunk.last {
                        // The kind's own last word (not OpenAI's `[DONE]`).
                        self.complete_at_us.get_or_insert(event.at_us);
                    }
                }
                Err(err) => {
                    self.error = Some(RequestError {
                        kind: ErrorKind::MalformedJson,
                        detail: err.to_string(),
                        body_sample: Some(body_sample(event.data.as_bytes())),
                        retry_after_s: None,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: RequestStart = RequestStart {
        id: 1,
        concurrency: 4,
        warmup: false,
        wanted_us: 1_000,
        sent_us: 1_500,
    };

    fn content(text: &str) -> String {
        format!(
            "data: {}\n\n",
            serde_json::json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]})
        )
    }

    fn reasoning(text: &str) -> String {
        format!(
            "data: {}\n\n",
            serde_json::json!({"choices":[{"index":0,"delta":{"reasoning_content":text}}]})
        )
    }

    const ROLE: &str =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    const FINISH: &str =
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    const DONE: &str = "data: [DONE]\n\n";

    fn usage(n: u64) -> String {
        format!(
            "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":10,\"completion_tokens\":{n},\"total_tokens\":{}}}}}\n\n",
            n + 10
        )
    }

    fn builder() -> RecordBuilder {
        let mut b = RecordBuilder::new(
            START,
            RecordOptions {
                keep_text: true,
                ..RecordOptions::default()
            },
        );
        b.on_headers(200, Some("text/event-stream; charset=utf-8"), None, 1_900);
        b
    }

    #[test]
    fn hidden_reasoning_is_counted_apart_and_left_out_of_the_pace() {
        // 1 visible token every 10 ms after 400 ms of thinking; usage says 400 hidden
        // reasoning tokens among 404.
        let mut b = builder();
        for (i, t) in [401_500u64, 411_500, 421_500, 431_500].iter().enumerate() {
            b.on_bytes(content(&i.to_string()).as_bytes(), *t);
        }
        b.on_bytes(FINISH.as_bytes(), 431_600);
        b.on_bytes(
            b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":404,\"completion_tokens_details\":{\"reasoning_tokens\":400}}}\n\n",
            431_700,
        );
        let r = b.finish(StreamEnd::Complete, 431_800);
        assert_eq!(r.n_out, Some(404), "usage's count stands");
        assert_eq!(r.hidden_reasoning_tokens(), 400);
        assert_eq!(r.n_streamed_out(), Some(4));
        // (E2E 430.2 ms − TTFT 400 ms) / 3, not / 403.
        assert!((r.tpot_us().unwrap() - 30_200.0 / 3.0).abs() < 1e-6);
        assert_eq!(r.decode_tps(), Some(100.0));
    }

    #[test]
    fn the_request_ends_when_the_stream_says_so_whatever_the_body_does() {
        let stream = |tail: &[u8]| {
            let mut b = RecordBuilder::new(START, RecordOptions::default());
            b.on_headers(200, Some("text/event-stream"), None, 1_000);
            b.on_bytes(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
                10_000,
            );
            b.on_bytes(
                b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
                20_000,
            );
            b.on_bytes(tail, 30_000);
            b
        };
        // [DONE], then the body held open until the timeout, or cut: complete, at [DONE].
        for end in [
            StreamEnd::TimedOut,
            StreamEnd::NetworkError {
                message: "reset".into(),
            },
            StreamEnd::Complete,
        ] {
            let b = stream(b"data: [DONE]\n\n");
            assert!(b.is_complete());
            let r = b.finish(end.clone(), 60_000_000);
            assert!(r.is_ok(), "{end:?}: {:?}", r.error);
            assert_eq!(r.end_us, 30_000, "{end:?}");
        }
        // The usage chunk after the finish is the last word too.
        let b = stream(
            b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n",
        );
        assert!(b.is_complete());
        let r = b.finish(StreamEnd::TimedOut, 60_000_000);
        assert_eq!((r.is_ok(), r.end_us, r.n_out), (true, 30_000, Some(1)));
        // Without either, a timeout is a timeout.
        let r = stream(b": keep-alive\n\n").finish(StreamEnd::TimedOut, 60_000_000);
        assert_eq!(r.error.unwrap().kind, ErrorKind::TimeoutMidStream);
    }

    #[test]
    fn plain_stream_metrics_are_exact() {
        let mut b = builder();
        b.on_bytes(ROLE.as_bytes(), 2_000);
        b.on_bytes(content("你").as_bytes(), 101_500); // TTFT 100 ms
        b.on_bytes(content("好").as_bytes(), 121_500);
        b.on_bytes(content("！").as_bytes(), 151_500);
        b.on_bytes(FINISH.as_bytes(), 161_400);
        b.on_bytes(DONE.as_bytes(), 161_500); // E2E 160 ms: it ends at [DONE]…
        let r = b.finish(StreamEnd::Complete, 171_500); // …not at the body's end
        assert!(r.is_ok(), "{:?}", r.error);
        assert_eq!(r.queue_us(), 500);
        assert_eq!(r.ttft_us(), Some(100_000));
        assert_eq!(r.ttfat_us(), Some(100_000));
        assert_eq!(r.e2e_us(), 160_000);
        assert_eq!(r.n_out, Some(3));
        assert_eq!(r.token_source, TokenSource::Chunks);
        assert_eq!(r.token_mismatch, None);
        // (160 ms − 100 ms) / (3 − 1) = 30 ms
        assert_eq!(r.tpot_us(), Some(30_000.0));
        assert_eq!(r.itls_us().collect::<Vec<_>>(), [20_000, 30_000]);
        // (3 − 1) tokens / 50 ms = 40 tokens/s
        assert_eq!(r.decode_tps(), Some(40.0));
        assert_eq!(r.output_text.as_deref(), Some("你好！"));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn browser_timing_splits_ttft() {
        let mut b = builder();
        b.on_bytes(format!("{}{DONE}", content("a")).as_bytes(), 301_500);
        let mut r = b.finish(StreamEnd::Complete, 302_000);
        assert_eq!((r.browser_wait_us(), r.ttft_after_send_us()), (None, None));
        r.browser = Some(BrowserTiming {
            fetch_start_us: 1_500,
            request_start_us: Some(201_500),
            response_start_us: Some(250_000),
            protocol: Some("http/1.1".into()),
            connection_setup_us: Some(150_000),
        });
        // 300 ms of TTFT: 200 ms waiting in the browser, 100 ms after it left.
        assert_eq!(r.ttft_us(), Some(300_000));
        assert_eq!(r.browser_wait_us(), Some(200_000));
        assert_eq!(r.ttft_after_send_us(), Some(100_000));
        // 150 ms of it opened the connection; 50 ms is unexplained (a preflight).
        assert_eq!(r.unexplained_wait_us(), Some(50_000));
    }

    #[test]
    fn usage_wins_over_chunk_count_and_mismatch_is_reported() {
        // A server that packs several tokens per event: 2 events, 7 tokens.
        let mut b = builder();
        b.on_bytes(content("one two three").as_bytes(), 11_500);
        b.on_bytes(content(" four five six seven").as_bytes(), 71_500);
        b.on_bytes(usage(7).as_bytes(), 81_400);
        b.on_bytes(DONE.as_bytes(), 81_500);
        let r = b.finish(StreamEnd::Complete, 91_500);
        assert_eq!(r.n_out, Some(7));
        assert_eq!(r.token_source, TokenSource::Usage);
        assert_eq!(r.token_mismatch, Some(5));
        // TTFT 10 ms, E2E 80 ms: (80 − 10) / 6 ms.
        assert_eq!(r.tpot_us(), Some(70_000.0 / 6.0));
        // (7 − 1) tokens over 60 ms = 100 tokens/s; the article's count says 1/0.06.
        assert_eq!(r.decode_tps(), Some(100.0));
        assert!((r.article_tps().unwrap() - 1.0 / 0.06).abs() < 1e-9);
    }

    #[test]
    fn reasoning_then_answer_has_two_first_token_times() {
        let mut b = builder();
        b.on_bytes(reasoning("想一想").as_bytes(), 51_500);
        b.on_bytes(reasoning("……").as_bytes(), 61_500);
        b.on_bytes(content("答").as_bytes(), 201_500);
        b.on_bytes(FINISH.as_bytes(), 201_600);
        b.on_bytes(DONE.as_bytes(), 201_700);
        let r = b.finish(StreamEnd::Complete, 201_800);
        assert_eq!(r.ttft_us(), Some(50_000));
        assert_eq!(r.ttfat_us(), Some(200_000));
        assert_eq!(r.n_reasoning_events, 2);
        assert_eq!(r.n_out, Some(3));
        assert_eq!(r.output_text.as_deref(), Some("答"));
    }

    #[test]
    fn single_token_response() {
        let mut b = builder();
        b.on_bytes(
            format!("{}{FINISH}{DONE}", content("Yes")).as_bytes(),
            41_500,
        );
        let r = b.finish(StreamEnd::Complete, 42_000);
        assert!(r.is_ok());
        assert_eq!(r.ttft_us(), Some(40_000));
        assert_eq!(r.n_out, Some(1));
        assert_eq!(r.tpot_us(), None, "TPOT needs two tokens");
        assert_eq!(r.decode_tps(), None);
        assert_eq!(r.itls_us().count(), 0);
    }

    #[test]
    fn whole_stream_in_one_chunk_split_utf8_across_chunks() {
        let body = format!("{}{}{FINISH}{DONE}", content("中文"), content("测试"));
        let bytes = body.as_bytes();
        let mut b = builder();
        for (i, piece) in bytes.chunks(5).enumerate() {
            b.on_bytes(piece, 10_000 + i as u64);
        }
        let r = b.finish(StreamEnd::Complete, 50_000);
        assert_eq!(r.output_text.as_deref(), Some("中文测试"));
        assert_eq!(r.n_out, Some(2));
    }

    #[test]
    fn http_errors_keep_status_sample_and_retry_after() {
        let mut b = RecordBuilder::new(START, RecordOptions::default());
        b.on_headers(429, Some("application/json"), Some("3"), 5_000);
        b.on_bytes(br#"{"error":{"message":"slow down"}}"#, 5_100);
        let r = b.finish(StreamEnd::Complete, 5_200);
        let err = r.error.unwrap();
        assert_eq!(err.kind, ErrorKind::RateLimited);
        assert_eq!(err.retry_after_s, Some(3.0));
        assert_eq!(
            err.body_sample.as_deref(),
            Some(r#"{"error":{"message":"slow down"}}"#)
        );
        assert_eq!(r.status, Some(429));
    }

    #[test]
    fn html_502_is_a_server_error() {
        let mut b = RecordBuilder::new(START, RecordOptions::default());
        b.on_headers(502, Some("text/html"), None, 5_000);
        b.on_bytes(b"<html><body>Bad Gateway</body></html>", 5_100);
        let r = b.finish(StreamEnd::Complete, 5_200);
        assert_eq!(r.error.unwrap().kind, ErrorKind::ServerError);
    }

    #[test]
    fn error_event_inside_a_200_stream() {
        let mut b = builder();
        b.on_bytes(content("a").as_bytes(), 10_000);
        b.on_bytes(
            b"data: {\"error\":{\"message\":\"out of memory\"}}\n\n",
            20_000,
        );
        let r = b.finish(StreamEnd::Complete, 30_000);
        let err = r.error.unwrap();
        assert_eq!(err.kind, ErrorKind::StreamErrorEvent);
        assert_eq!(err.detail, "out of memory");
    }

    #[test]
    fn stream_cut_before_done() {
        let mut b = builder();
        b.on_bytes(content("a").as_bytes(), 10_000);
        b.on_bytes(content("b").as_bytes(), 20_000);
        let r = b.finish(StreamEnd::Complete, 30_000);
        assert_eq!(r.error.unwrap().kind, ErrorKind::StreamCut);
        assert_eq!(r.n_out, Some(2), "what arrived is still counted");
    }

    #[test]
    fn network_failure_mid_stream_is_a_cut() {
        let mut b = builder();
        b.on_bytes(content("a").as_bytes(), 10_000);
        let r = b.finish(
            StreamEnd::NetworkError {
                message: "network error".into(),
            },
            30_000,
        );
        assert_eq!(r.error.unwrap().kind, ErrorKind::StreamCut);
    }

    #[test]
    fn network_failure_before_headers() {
        let b = RecordBuilder::new(START, RecordOptions::default());
        let r = b.finish(
            StreamEnd::NetworkError {
                message: "TypeError: Failed to fetch".into(),
            },
            30_000,
        );
        let err = r.error.unwrap();
        assert_eq!(err.kind, ErrorKind::Network);
        assert_eq!(err.detail, "TypeError: Failed to fetch");
    }

    #[test]
    fn timeouts_before_and_after_headers() {
        let b = RecordBuilder::new(START, RecordOptions::default());
        let r = b.finish(StreamEnd::TimedOut, 60_000_000);
        assert_eq!(r.error.unwrap().kind, ErrorKind::TimeoutBeforeHeaders);
        let mut b = builder();
        b.on_bytes(content("a").as_bytes(), 10_000);
        let r = b.finish(StreamEnd::TimedOut, 60_000_000);
        assert_eq!(r.error.unwrap().kind, ErrorKind::TimeoutMidStream);
    }

    #[test]
    fn empty_stream_and_not_an_event_stream() {
        let mut b = builder();
        b.on_bytes(format!("{ROLE}{FINISH}{DONE}").as_bytes(), 10_000);
        let r = b.finish(StreamEnd::Complete, 11_000);
        assert_eq!(r.error.unwrap().kind, ErrorKind::EmptyStream);

        let mut b = RecordBuilder::new(START, RecordOptions::default());
        b.on_headers(200, Some("application/json"), None, 5_000);
        b.on_bytes(br#"{"choices":[{"message":{"content":"hi"}}]}"#, 6_000);
        let r = b.finish(StreamEnd::Complete, 7_000);
        let err = r.error.unwrap();
        assert_eq!(err.kind, ErrorKind::NotEventStream);
        assert!(err.body_sample.unwrap().contains("message"));
    }

    #[test]
    fn malformed_json_event() {
        let mut b = builder();
        b.on_bytes(content("a").as_bytes(), 10_000);
        b.on_bytes(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}\n\n",
            20_000,
        );
        let r = b.finish(StreamEnd::Complete, 30_000);
        assert_eq!(r.error.unwrap().kind, ErrorKind::MalformedJson);
    }

    #[test]
    fn oversized_event_is_a_typed_error() {
        let mut b = RecordBuilder::new(
            START,
            RecordOptions {
                sse_limits: SseLimits {
                    max_line_bytes: 64,
                    max_event_bytes: 64,
                },
                ..RecordOptions::default()
            },
        );
        b.on_headers(200, Some("text/event-stream"), None, 1_000);
        b.on_bytes(content(&"x".repeat(100)).as_bytes(), 2_000);
        let r = b.finish(StreamEnd::Complete, 3_000);
        assert_eq!(r.error.unwrap().kind, ErrorKind::EventTooLarge);
    }

    fn limited(max_events: u64, max_bytes: u64) -> RecordBuilder {
        let mut b = RecordBuilder::new(
            START,
            RecordOptions {
                response_limits: ResponseLimits {
                    max_events,
                    max_bytes,
                    max_token_events: None,
                },
                ..RecordOptions::default()
            },
        );
        b.on_headers(200, Some("text/event-stream"), None, 1_000);
        b
    }

    #[test]
    fn a_response_past_the_event_limit_stops_being_read() {
        let mut b = limited(3, u64::MAX);
        for (i, text) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            b.on_bytes(content(text).as_bytes(), 2_000 + i as u64 * 1_000);
        }
        assert!(b.has_stream_error(), "the engine stops reading here");
        let r = b.finish(StreamEnd::Complete, 9_000);
        let err = r.error.unwrap();
        assert_eq!(err.kind, ErrorKind::ResponseTooLarge);
        assert!(err.detail.contains("3 events"), "{}", err.detail);
        assert_eq!(
            r.token_times_us,
            [2_000, 3_000, 4_000],
            "what came before the cut is kept"
        );

        // At the limit and not past it: an ordinary answer.
        let mut b = limited(4, u64::MAX);
        b.on_bytes(
            format!("{}{}{FINISH}{DONE}", content("a"), content("b")).as_bytes(),
            2_000,
        );
        assert!(b.finish(StreamEnd::Complete, 3_000).is_ok());
    }

    #[test]
    fn a_response_past_the_byte_limit_stops_being_read() {
        let one = content("a");
        let mut b = limited(u64::MAX, 2 * one.len() as u64);
        b.on_bytes(one.as_bytes(), 2_000);
        b.on_bytes(one.as_bytes(), 3_000);
        assert!(!b.has_stream_error(), "at the limit, not past it");
        b.on_bytes(one.as_bytes(), 4_000);
        let r = b.finish(StreamEnd::Complete, 5_000);
        let err = r.error.unwrap();
        assert_eq!(err.kind, ErrorKind::ResponseTooLarge);
        assert!(err.detail.contains("bytes"), "{}", err.detail);
        assert_eq!(r.n_token_events, 2);

        // Bytes after the stream said it was over change nothing.
        let mut b = limited(u64::MAX, (DONE.len() + one.len()) as u64);
        b.on_bytes(format!("{one}{DONE}").as_bytes(), 2_000);
        b.on_bytes(b"\n\n\n", 3_000);
        assert!(b.finish(StreamEnd::Complete, 4_000).is_ok());
    }

    #[test]
    fn an_answer_far_past_max_tokens_stops_being_read() {
        let limits = ResponseLimits::default().for_asked(Some(4));
        let allowed = 4 * TOKEN_EVENTS_PER_ASKED + TOKEN_EVENTS_SLACK;
        assert_eq!(limits.max_token_events, Some(allowed));
        let mut b = RecordBuilder::new(
            START,
            RecordOptions {
                response_limits: limits,
                ..RecordOptions::default()
            },
        );
        b.on_headers(200, Some("text/event-stream"), None, 1_000);
        // Role and empty chunks carry no token and count for nothing here.
        for i in 0..allowed {
            b.on_bytes(format!("{ROLE}{}", content("字")).as_bytes(), 2_000 + i);
            assert!(!b.has_stream_error(), "{i}");
        }
        b.on_bytes(content("字").as_bytes(), 9_000_000);
        assert!(
            b.has_stream_error(),
            "one token event too many: the engine stops"
        );
        let r = b.finish(StreamEnd::Complete, 9_000_001);
        let err = r.error.unwrap();
        assert_eq!(err.kind, ErrorKind::ResponseTooLarge);
        assert!(err.detail.contains("max_tokens"), "{}", err.detail);
        assert_eq!(r.n_token_events, allowed, "what came before is kept");

        // A gateway that sends one character an event, within the limit: measured.
        let mut b = RecordBuilder::new(
            START,
            RecordOptions {
                response_limits: ResponseLimits::default().for_asked(Some(100)),
                ..RecordOptions::default()
            },
        );
        b.on_headers(200, Some("text/event-stream"), None, 1_000);
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(10);
        for (i, c) in text.chars().enumerate() {
            b.on_bytes(content(&c.to_string()).as_bytes(), 2_000 + i as u64);
        }
        b.on_bytes(format!("{FINISH}{DONE}").as_bytes(), 9_000);
        assert!(b.finish(StreamEnd::Complete, 9_001).is_ok());
        // Without max_tokens: no such limit.
        assert_eq!(
            ResponseLimits::default().for_asked(None).max_token_events,
            None
        );
    }

    #[test]
    fn an_endless_error_page_is_read_no_further_than_its_limit() {
        for (status, content_type, kind) in [
            (502, "text/html", ErrorKind::ServerError),
            (200, "text/html", ErrorKind::NotEventStream),
        ] {
            let mut b = RecordBuilder::new(START, RecordOptions::default());
            b.on_headers(status, Some(content_type), None, 1_000);
            let page = "<p>busy</p>".repeat(1_000);
            let mut n = 0;
            while !b.has_stream_error() {
                b.on_bytes(page.as_bytes(), 2_000 + n);
                n += 1;
                assert!(n < 100, "{status}: still reading");
            }
            assert!(n as usize * page.len() > ERROR_BODY_MAX_BYTES as usize);
            // The engine aborts the body; the record keeps what it said.
            let r = b.finish(StreamEnd::Complete, 9_000);
            let err = r.error.unwrap();
            assert_eq!(err.kind, kind);
            assert!(err.detail.contains("64 KiB"), "{}", err.detail);
            assert!(err.body_sample.unwrap().starts_with("<p>busy</p>"));
        }
        // An ordinary error page is read to its end.
        let mut b = RecordBuilder::new(START, RecordOptions::default());
        b.on_headers(500, Some("application/json"), None, 1_000);
        b.on_bytes(br#"{"error":{"message":"boom"}}"#, 2_000);
        assert!(!b.has_stream_error());
        let err = b.finish(StreamEnd::Complete, 3_000).error.unwrap();
        assert_eq!(
            (err.kind, err.detail.as_str()),
            (ErrorKind::ServerError, "HTTP 500")
        );
    }

    #[test]
    fn a_timeout_after_only_keep_alive_comments_says_so() {
        let mut b = builder();
        b.on_bytes(b": keep-alive\n\n: keep-alive\n\n", 10_000);
        let err = b.finish(StreamEnd::TimedOut, 60_000_000).error.unwrap();
        assert_eq!(err.kind, ErrorKind::TimeoutMidStream);
        assert!(
            err.detail.contains("only 2 keep-alive comment lines"),
            "{}",
            err.detail
        );
    }

    #[test]
    fn the_start_of_done_in_the_read_that_ended_the_stream_is_dropped() {
        // Seen against real servers: the usage chunk (the stream's last word after a
        // finish_reason) and the first bytes of `data: [DONE]` in one network read.
        let mut b = builder();
        for (i, event) in [
            ROLE.to_owned(),
            content("你"),
            content("好"),
            FINISH.to_owned(),
        ]
        .iter()
        .enumerate()
        {
            b.on_bytes(event.as_bytes(), 2_000 + i as u64 * 1_000);
        }
        let mut last = usage(2).into_bytes();
        last.extend_from_slice(b"data: [");
        b.on_bytes(&last, 6_000);
        assert!(b.is_complete());
        b.on_bytes(b"DONE]\n\n", 6_500);
        let r = b.finish(StreamEnd::Complete, 7_000);
        assert!(r.is_ok(), "{:?}", r.error);
        assert_eq!((r.n_out, r.n_token_events), (Some(2), 2));
        assert_eq!(r.end_us, 6_000);
        assert!(!r.saw_done, "the [DONE] after the stream's end is not read");
        assert_eq!(r.output_text.as_deref(), Some("你好"));
        let read = ROLE.len() + content("你").len() + content("好").len() + FINISH.len();
        assert_eq!(r.n_bytes, (read + usage(2).len()) as u64);

        // A cancel, a timeout or a failing body after that end changes nothing either.
        for end in [
            StreamEnd::Cancelled,
            StreamEnd::TimedOut,
            StreamEnd::NetworkError {
                message: "TypeError: network error".into(),
            },
        ] {
            let mut b = builder();
            b.on_bytes(
                format!("{}{FINISH}{}data: [", content("a"), usage(1)).as_bytes(),
                2_000,
            );
            let r = b.finish(end.clone(), 9_000);
            assert!(r.is_ok(), "{end:?}: {:?}", r.error);
            assert_eq!(r.end_us, 2_000);
        }
    }

    #[test]
    fn a_final_line_held_when_the_body_ends_is_still_read_if_the_stream_had_not_ended() {
        // No usage, no [DONE] before the body's end: the held line is the last event.
        let mut b = builder();
        b.on_bytes(
            format!("{}{FINISH}data: [DO", content("a")).as_bytes(),
            2_000,
        );
        b.on_bytes(b"NE]", 3_000);
        let r = b.finish(StreamEnd::Complete, 4_000);
        assert!(r.is_ok() && r.saw_done);
        assert_eq!(r.end_us, 4_000);
    }

    /// A successful stream of `n` content events, delivered in reads of `per_read`
    /// events, `gap_ms` apart, the first read `first_ms` after sending.
    fn delivered(n: u64, per_read: u64, gap_ms: u64, first_ms: u64) -> RequestRecord {
        let mut b = builder();
        let mut at = START.sent_us + first_ms * 1_000;
        let mut sent = 0;
        while sent < n {
            let k = per_read.min(n - sent);
            let read: String = (0..k).map(|i| content(&format!("t{}", sent + i))).collect();
            b.on_bytes(read.as_bytes(), at);
            sent += k;
            at += gap_ms * 1_000;
        }
        b.on_bytes(format!("{FINISH}{DONE}").as_bytes(), at);
        b.finish(StreamEnd::Complete, at)
    }

    #[test]
    fn a_stream_held_back_and_released_in_bursts_is_told_from_a_fast_or_packed_one() {
        let burst = |r: &RequestRecord| r.reads().is_burst_delivery(r.e2e_us());
        // A gateway that holds the whole answer: one read, two seconds in.
        let all = delivered(100, 100, 0, 2_188);
        assert_eq!(
            all.reads(),
            Reads {
                n_events: 100,
                n_reads: 1,
                n_in_bursts: 100,
                largest: 100,
                median_gap_us: 0,
            }
        );
        assert!(burst(&all));
        // A proxy buffer released every 25 tokens (about 4 KiB).
        let buffer = delivered(100, 25, 500, 200);
        assert_eq!(
            (buffer.reads().n_reads, buffer.reads().median_gap_us),
            (4, 500_000)
        );
        assert!(burst(&buffer));
        // A server that packs four tokens into each event at real intervals: one
        // event a read.
        assert!(!burst(&delivered(25, 1, 80, 200)));
        // A fast server, one event a read 1 ms apart, or coalescing by fours in a
        // busy client 4 ms apart: not a gateway.
        assert!(!burst(&delivered(100, 1, 1, 30)));
        assert!(!burst(&delivered(100, 4, 4, 30)));
        // Nor a 1 ms/token server read in clumps of ten every 10 ms by a busy
        // client (or writing them so while catching up on a loaded machine).
        assert!(!burst(&delivered(120, 10, 10, 30)));
        // A whole answer in one read from a fast server, or too few events to tell.
        assert!(!burst(&delivered(100, 100, 0, 40)));
        assert!(!burst(&delivered(6, 6, 0, 2_000)));
    }

    #[test]
    fn cancelled_keeps_what_arrived() {
        let mut b = builder();
        b.on_bytes(content("a").as_bytes(), 10_000);
        let r = b.finish(StreamEnd::Cancelled, 12_000);
        assert_eq!(r.error.unwrap().kind, ErrorKind::Cancelled);
        assert_eq!(r.n_token_events, 1);
    }

    #[test]
    fn finish_reason_without_done_is_complete_and_done_without_newline() {
        let mut b = builder();
        b.on_bytes(format!("{}{FINISH}", content("a")).as_bytes(), 10_000);
        assert!(b.finish(StreamEnd::Complete, 11_000).is_ok());
        let mut b = builder();
        b.on_bytes(format!("{}data: [DONE]", content("a")).as_bytes(), 10_000);
        let r = b.finish(StreamEnd::Complete, 11_000);
        assert!(r.is_ok());
        assert!(r.saw_done);
    }
}
