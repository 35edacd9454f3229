//! One request: `fetch` with a `ReadableStream` body, every chunk stamped on arrival
//! and handed to the core's `RecordBuilder`; the timeout and Cancel abort it through
//! an `AbortController`.
//!
//! This is the engine's hot path: at 256 streams it runs some 13,000 times a second
//! on one thread, and every microsecond spent here delays the next chunk's stamp.
//! So the body is piped into a sink that stamps each chunk as the browser hands it
//! over (no promise or closure of ours per chunk), nothing is allocated or encoded
//! per chunk (the bytes are copied into one buffer per request), and per request
//! the body and headers are the run's, made into JavaScript values once.

use std::{cell::RefCell, rc::Rc};

use futures_channel::oneshot;
use futures_util::future::{select, Either};
use gloo_timers::callback::Timeout;
use js_sys::Uint8Array;
use tokenmeter_core::{
    schema::{BrowserTiming, RequestRecord, StallCount},
    Bodies, RecordBuilder, RecordOptions, RequestStart, StreamEnd,
};
use wasm_bindgen::{closure::Closure, JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, Headers, PerformanceResourceTiming, ReadableStream, RequestInit, Response,
    WritableStream,
};

use crate::describe_js_error;

use super::{
    cancel::CancelToken,
    clock::{self, Clock},
};

/// What every request of a run sends.
#[derive(Clone, Debug)]
pub struct Target {
    pub url: String,
    /// Request headers, the key's among them (held in memory only).
    pub headers: Vec<(String, String)>,
    /// What must never appear in a record (the key): redacted from error text.
    pub secrets: Vec<String>,
    pub timeout_ms: f64,
    /// The JSON bodies: each request's own (its prompt's header), or one for all.
    bodies: Bodies,
    /// The one body, as a JavaScript string made once, when every request sends it.
    shared_body: Option<JsValue>,
    /// `headers` as one `Headers` (fetch copies it), or why one cannot be made.
    js_headers: Result<Headers, HeadersRefused>,
}

/// Why the browser would not make the request's headers: every request of the
/// target fails with it, as a network error that names the header.
#[derive(Clone, Debug)]
struct HeadersRefused {
    /// The header it refused; `None` when it gave no `Headers` at all.
    name: Option<String>,
    /// What the browser said.
    why: String,
}

/// A record's error detail is English, like every detail a browser gives.
impl std::fmt::Display for HeadersRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(name) => write!(f, "the header `{name}` is not valid: {}", self.why),
            None => f.write_str(&self.why),
        }
    }
}

impl Target {
    pub fn new(
        url: String,
        bodies: Bodies,
        headers: Vec<(String, String)>,
        secrets: Vec<String>,
        timeout_ms: f64,
    ) -> Target {
        let js_headers = Headers::new()
            .map_err(|err| HeadersRefused {
                name: None,
                why: describe_js_error(&err),
            })
            .and_then(|js| {
                for (name, value) in &headers {
                    js.append(name, value).map_err(|err| HeadersRefused {
                        name: Some(name.clone()),
                        why: describe_js_error(&err),
                    })?;
                }
                Ok(js)
            });
        Target {
            url,
            headers,
            secrets,
            timeout_ms,
            shared_body: bodies.shared().map(JsValue::from_str),
            bodies,
            js_headers,
        }
    }

    /// The body of request `request_id`: made (and encoded for JavaScript) once
    /// per request when it has its own prompt, never per chunk.
    fn body(&self, request_id: u64) -> JsValue {
        match &self.shared_body {
            Some(body) => body.clone(),
            None => JsValue::from_str(&self.bodies.body(request_id)),
        }
    }
}

/// What one request cost the engine itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct SendCost {
    /// Time in the engine's own code: starting the request, handling each chunk.
    pub busy_us: u64,
    pub n_chunks: u64,
    /// What a helper's loop stalls did to the record's token events, when a
    /// helper sent it (see `shards`); the measuring worker counts its own.
    pub stalls: Option<StallCount>,
}

/// Sends one request and reads it to the end (or the timeout, or Cancel).
///
/// `start.sent_us` must be taken just before calling: nothing here waits before
/// `fetch`.
pub async fn send(
    target: &Target,
    start: RequestStart,
    clock: &Clock,
    cancel: &CancelToken,
    options: RecordOptions,
) -> (RequestRecord, SendCost) {
    let body = target.body(start.id);
    send_body(target, start, &body, clock, cancel, options).await
}

/// [`send`] with a body made by the caller (a conversation's turn, which holds
/// the answers before it).
pub async fn send_turn(
    target: &Target,
    start: RequestStart,
    body: &str,
    clock: &Clock,
    cancel: &CancelToken,
    options: RecordOptions,
) -> (RequestRecord, SendCost) {
    send_body(
        target,
        start,
        &JsValue::from_str(body),
        clock,
        cancel,
        options,
    )
    .await
}

// Long: one request from fetch to its record, in order: the hot path, each step handing its state to the next.
async fn send_body(
    target: &Target,
    start: RequestStart,
    body: &JsValue,
    clock: &Clock,
    cancel: &CancelToken,
    options: RecordOptions,
) -> (RequestRecord, SendCost) {
    let mut cost = SendCost::default();
    let asked_tokens = target.bodies.asked_tokens(start.id);
    let options = RecordOptions {
        // An answer far past what was asked is stopped there, not at the timeout.
        response_limits: options.response_limits.for_asked(asked_tokens),
        ..options
    };
    let mut builder = RecordBuilder::new(start, options);
    let Ok(controller) = AbortController::new() else {
        let end = StreamEnd::NetworkError {
            message: "this browser has no AbortController".into(),
        };
        return (builder.finish(end, clock.now_us()), cost);
    };
    let _registration = cancel.register(controller.clone());
    let timed_out = Rc::new(std::cell::Cell::new(false));
    // Browsers keep timer delays in 32 signed bits: a longer one fires at once.
    let _timer = Timeout::new(target.timeout_ms.clamp(1.0, i32::MAX as f64) as u32, {
        let controller = controller.clone();
        let timed_out = timed_out.clone();
        move || {
            timed_out.set(true);
            controller.abort();
        }
    });
    let ended = |error: JsValue| {
        if timed_out.get() {
            StreamEnd::TimedOut
        } else if cancel.is_cancelled() {
            StreamEnd::Cancelled
        } else {
            StreamEnd::NetworkError {
                message: describe_js_error(&error),
            }
        }
    };

    let headers = match &target.js_headers {
        Ok(headers) => headers,
        Err(refused) => {
            let end = StreamEnd::NetworkError {
                message: refused.to_string(),
            };
            return (builder.finish(end, clock.now_us()), cost);
        }
    };
    let init = RequestInit::new();
    init.set_method("POST");
    init.set_body(body);
    init.set_signal(Some(&controller.signal()));
    init.set_headers(headers);
    let request = fetch(&target.url, &init);
    cost.busy_us += clock.now_us().saturating_sub(start.sent_us);

    let end = match JsFuture::from(request).await {
        Err(error) => ended(error),
        Ok(response) => {
            let response: Response = response.unchecked_into();
            let response_headers = response.headers();
            let content_type = response_headers.get("content-type").ok().flatten();
            let retry_after = response_headers.get("retry-after").ok().flatten();
            builder.on_headers(
                response.status(),
                content_type.as_deref(),
                retry_after.as_deref(),
                clock.now_us(),
            );
            match response.body() {
                None => StreamEnd::Complete,
                Some(body) => {
                    let (returned, result) =
                        pipe_to_end(&body, builder, clock, &controller, &mut cost).await;
                    builder = returned;
                    result.unwrap_or_else(ended)
                }
            }
        }
    };
    let body_end_us = clock.now_us();
    let mut record = builder.finish(end, body_end_us);
    record.asked_tokens = asked_tokens;
    // A server or gateway may echo the key back in an error: it never leaves here.
    if let Some(error) = record.error.as_mut() {
        let secrets: Vec<&str> = target.secrets.iter().map(String::as_str).collect();
        error.redact(&secrets);
    }
    let before_timing_us = clock.now_us();
    // The entry appears once the body has ended, sometimes a task later.
    record.browser = match resource_timing(&target.url, clock, start.sent_us, body_end_us) {
        Some(timing) => Some(timing),
        None => {
            gloo_timers::future::sleep(std::time::Duration::ZERO).await;
            resource_timing(&target.url, clock, start.sent_us, body_end_us)
        }
    };
    cost.busy_us += before_timing_us.saturating_sub(body_end_us);
    (record, cost)
}

/// A Resource Timing entry of the run's URL, copied out of the browser's buffer,
/// on the global's own timeline (ms).
struct TimingEntry {
    start_ms: f64,
    fetch_start_ms: f64,
    request_start_ms: f64,
    response_start_ms: f64,
    response_end_ms: f64,
    domain_lookup_start_ms: f64,
    connect_end_ms: f64,
    protocol: String,
}

thread_local! {
    /// Entries taken from the browser's buffer and not yet matched to a request.
    /// The buffer is emptied at each harvest, so a harvest costs what arrived since
    /// the last one, and matching costs the handful of entries of requests that
    /// ended at about the same time: per request, not per run.
    static UNMATCHED: RefCell<Vec<TimingEntry>> = const { RefCell::new(Vec::new()) };
}

/// An unmatched entry older than this (its response ended this long ago) belongs to
/// no request that is still to ask for it.
const UNMATCHED_KEPT_MS: f64 = 120_000.0;

/// Readies Resource Timing for a run: nothing left over, room for the entries of
/// every request in flight between two harvests.
pub fn reset_resource_timing() {
    let performance = clock::performance();
    performance.clear_resource_timings();
    performance.set_resource_timing_buffer_size(10_000);
    UNMATCHED.with(|u| u.borrow_mut().clear());
}

/// Moves the entries for `url` from the browser's buffer into [`UNMATCHED`].
fn harvest(url: &str) {
    let performance = clock::performance();
    let entries = performance.get_entries_by_type("resource");
    if entries.length() == 0 {
        return;
    }
    performance.clear_resource_timings();
    let now_ms = performance.now();
    UNMATCHED.with(|unmatched| {
        let mut unmatched = unmatched.borrow_mut();
        unmatched.retain(|e| now_ms - e.response_end_ms < UNMATCHED_KEPT_MS);
        for entry in entries.iter() {
            let Ok(e) = entry.dyn_into::<PerformanceResourceTiming>() else {
                continue;
            };
            if e.name() != url {
                continue;
            }
            unmatched.push(TimingEntry {
                start_ms: e.start_time(),
                fetch_start_ms: e.fetch_start(),
                request_start_ms: e.request_start(),
                response_start_ms: e.response_start(),
                response_end_ms: e.response_end(),
                domain_lookup_start_ms: e.domain_lookup_start(),
                connect_end_ms: e.connect_end(),
                protocol: e.next_hop_protocol(),
            });
        }
    });
}

/// The browser's view of the request to `url` sent at `sent_us` whose body ended
/// at `body_end_us`: of the entries that began within 50 ms of the send, the one
/// closest in both start and end. Every request of a run has the same URL, and
/// requests started in the same tick of a coarse timer have the same start, so
/// the end tells them apart.
fn resource_timing(
    url: &str,
    clock: &Clock,
    sent_us: u64,
    body_end_us: u64,
) -> Option<BrowserTiming> {
    harvest(url);
    let on_timeline = |us: u64| clock.origin_ms() + us as f64 / 1e3;
    let (sent_ms, end_ms) = (on_timeline(sent_us), on_timeline(body_end_us));
    let entry = UNMATCHED.with(|unmatched| {
        let mut unmatched = unmatched.borrow_mut();
        let (index, _) = unmatched
            .iter()
            .enumerate()
            .filter(|(_, e)| (e.start_ms - sent_ms).abs() < 50.0)
            .map(|(i, e)| {
                let distance = (e.start_ms - sent_ms).abs() + (e.response_end_ms - end_ms).abs();
                (i, distance)
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        Some(unmatched.swap_remove(index))
    })?;
    // Zero means "not exposed" (no Timing-Allow-Origin) or "did not happen".
    let on_clock = |ms: f64| (ms > 0.0).then(|| ((ms - clock.origin_ms()) * 1e3).max(0.0) as u64);
    let protocol = if !entry.protocol.is_empty() {
        Some(entry.protocol)
    } else if tokenmeter_core::is_plain_http(url) {
        // Hidden without Timing-Allow-Origin, but no browser speaks anything but
        // HTTP/1.1 over plain http://.
        Some(tokenmeter_core::HTTP1.to_owned())
    } else {
        None
    };
    Some(BrowserTiming {
        fetch_start_us: on_clock(entry.fetch_start_ms).unwrap_or(sent_us),
        request_start_us: on_clock(entry.request_start_ms),
        response_start_us: on_clock(entry.response_start_ms),
        protocol,
        // A reused connection has no DNS, connect or TLS: the two marks coincide.
        connection_setup_us: {
            let setup_ms = entry.connect_end_ms - entry.domain_lookup_start_ms;
            (entry.domain_lookup_start_ms > 0.0 && setup_ms > 0.0)
                .then_some((setup_ms * 1e3) as u64)
        },
    })
}

/// The state the body's sink shares with the request.
struct Sink {
    builder: RecordBuilder,
    /// One buffer per request: chunks are copied out of JavaScript into it.
    bytes: Vec<u8>,
    busy_us: u64,
    n_chunks: u64,
    /// The stream said it is over, or sent an error event: later bytes are not measured.
    over: bool,
    stream_error: bool,
    /// Told once when the stream says it is over.
    said_over: Option<oneshot::Sender<()>>,
}

/// Reads the body to its end by piping it into a sink whose `write` stamps each
/// chunk first, then hands it to the core: the browser's pipe reads the body, so
/// no promise, closure or task of ours stands between a chunk's arrival and its
/// stamp. `Err` carries the pipe's rejection (abort, network failure).
// Long: the body's pipe with its timeout and Cancel: one select over them.
async fn pipe_to_end(
    body: &ReadableStream,
    builder: RecordBuilder,
    clock: &Clock,
    controller: &AbortController,
    cost: &mut SendCost,
) -> (RecordBuilder, Result<StreamEnd, JsValue>) {
    let (said_over, over) = oneshot::channel::<()>();
    let sink = Rc::new(RefCell::new(Sink {
        builder,
        bytes: Vec::new(),
        busy_us: 0,
        n_chunks: 0,
        over: false,
        stream_error: false,
        said_over: Some(said_over),
    }));
    let write = Closure::<dyn FnMut(Uint8Array)>::new({
        let sink = sink.clone();
        let clock = clock.clone();
        let controller = controller.clone();
        move |chunk: Uint8Array| {
            // Stamp first: everything after this line is not the network's time.
            let at_us = clock.now_us();
            let mut sink = sink.borrow_mut();
            if sink.over {
                // Bytes after the end (a stray newline): not measured.
                return;
            }
            let Sink { builder, bytes, .. } = &mut *sink;
            bytes.resize(chunk.length() as usize, 0);
            chunk.copy_to(bytes);
            builder.on_bytes(bytes, at_us);
            if builder.has_stream_error() {
                // An error inside a 200 stream, or past a limit: the verdict is in;
                // stop downloading.
                sink.over = true;
                sink.stream_error = true;
                controller.abort();
            } else if builder.is_complete() {
                // The stream said it is over; its end is already stamped.
                sink.over = true;
                if let Some(tell) = sink.said_over.take() {
                    let _ = tell.send(());
                }
            }
            sink.n_chunks += 1;
            sink.busy_us += clock.now_us().saturating_sub(at_us);
        }
    });
    let result = match pipe(body, &write) {
        Err(error) => Err(error),
        Ok(piped) => {
            futures_util::pin_mut!(piped);
            match select(piped.as_mut(), over).await {
                // The body ended, or failed, before the stream said it was over.
                Either::Left((result, _)) => result,
                Either::Right((_, piped)) => {
                    // A server ends the body right after, and reading that end keeps
                    // the connection reusable; one that holds the body open is let
                    // go after a moment.
                    let grace = gloo_timers::future::sleep(AFTER_DONE_GRACE);
                    if let Either::Right((_, piped)) = select(piped, grace).await {
                        controller.abort();
                        // The pipe settles at once after the abort; only then may
                        // the sink's closure go.
                        let _ = piped.await;
                    }
                    Ok(JsValue::UNDEFINED)
                }
            }
        }
    };
    drop(write);
    let sink = Rc::try_unwrap(sink)
        .ok()
        .expect("the sink's closure is gone")
        .into_inner();
    cost.busy_us += sink.busy_us;
    cost.n_chunks += sink.n_chunks;
    let end = match result {
        Ok(_) => Ok(StreamEnd::Complete),
        // After the stream's end (or its error event, which aborted it), a failing
        // body changes nothing: the request is complete.
        Err(_) if sink.over => Ok(StreamEnd::Complete),
        Err(error) => Err(error),
    };
    (sink.builder, end)
}

/// `body.pipeTo(new WritableStream({ write }))`.
fn pipe(
    body: &ReadableStream,
    write: &Closure<dyn FnMut(Uint8Array)>,
) -> Result<JsFuture, JsValue> {
    let underlying_sink = js_sys::Object::new();
    js_sys::Reflect::set(&underlying_sink, &"write".into(), write.as_ref())?;
    let writable = WritableStream::new_with_underlying_sink(&underlying_sink)?;
    Ok(JsFuture::from(body.pipe_to(&writable)))
}

/// How long the body may stay open after the stream said it was over.
const AFTER_DONE_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// `fetch` on whichever global this runs in (worker or window).
pub(super) fn fetch(url: &str, init: &RequestInit) -> js_sys::Promise {
    let global = js_sys::global();
    if let Some(worker) = global.dyn_ref::<web_sys::WorkerGlobalScope>() {
        worker.fetch_with_str_and_init(url, init)
    } else {
        global
            .unchecked_into::<web_sys::Window>()
            .fetch_with_str_and_init(url, init)
    }
}
