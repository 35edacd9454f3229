//! One request: `fetch` with a `ReadableStream` body, every chunk stamped on arrival
//! and handed to the core's `RecordBuilder`; the timeout and Cancel abort it through
//! an `AbortController`.

use std::{
    cell::{Cell, RefCell},
    collections::HashSet,
    rc::Rc,
};

use futures_util::future::{select, Either};
use gloo_timers::callback::Timeout;
use js_sys::{Reflect, Uint8Array};
use tokenmeter_core::record::{
    BrowserTiming, RecordBuilder, RecordOptions, RequestRecord, RequestStart, StreamEnd,
};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, Headers, PerformanceResourceTiming, ReadableStreamDefaultReader, RequestInit,
    Response,
};

use super::{
    cancel::CancelToken,
    clock::{self, Clock},
};

/// What every request of a run sends.
#[derive(Clone, Debug)]
pub struct Target {
    pub url: String,
    /// The JSON body, encoded once.
    pub body: String,
    /// Request headers, the key's among them (held in memory only).
    pub headers: Vec<(String, String)>,
    /// What must never appear in a record (the key): redacted from error text.
    pub secrets: Vec<String>,
    pub timeout_ms: f64,
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
) -> RequestRecord {
    let mut builder = RecordBuilder::new(start, options);
    let Ok(controller) = AbortController::new() else {
        return builder.finish(
            StreamEnd::NetworkError {
                message: "this browser has no AbortController".into(),
            },
            clock.now_us(),
        );
    };
    let _registration = cancel.register(controller.clone());
    let timed_out = Rc::new(Cell::new(false));
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

    let init = RequestInit::new();
    init.set_method("POST");
    init.set_body(&JsValue::from_str(&target.body));
    init.set_signal(Some(&controller.signal()));
    let headers = Headers::new().expect("Headers can be made");
    for (name, value) in &target.headers {
        if let Err(err) = headers.append(name, value) {
            return builder.finish(
                StreamEnd::NetworkError {
                    message: format!(
                        "the header `{name}` is not valid: {}",
                        describe_js_error(&err)
                    ),
                },
                clock.now_us(),
            );
        }
    }
    init.set_headers(&headers);

    let end = match JsFuture::from(fetch(&target.url, &init)).await {
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
                    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
                    read_to_end(&reader, &mut builder, clock, &controller)
                        .await
                        .unwrap_or_else(ended)
                }
            }
        }
    };
    let mut record = builder.finish(end, clock.now_us());
    // A server or gateway may echo the key back in an error: it never leaves here.
    if let Some(error) = record.error.as_mut() {
        let secrets: Vec<&str> = target.secrets.iter().map(String::as_str).collect();
        error.redact(&secrets);
    }
    // The entry appears once the body has ended, sometimes a task later.
    record.browser = match resource_timing(&target.url, clock, start.sent_us) {
        Some(timing) => Some(timing),
        None => {
            gloo_timers::future::sleep(std::time::Duration::ZERO).await;
            resource_timing(&target.url, clock, start.sent_us)
        }
    };
    record
}

thread_local! {
    /// Resource Timing entries already matched to a request (by start time): every
    /// request of a run has the same URL, so entries are told apart by when they began.
    static CLAIMED: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
}

/// Readies Resource Timing for a run: room for every request, nothing left over.
pub fn reset_resource_timing() {
    let performance = clock::performance();
    performance.clear_resource_timings();
    performance.set_resource_timing_buffer_size(1_000_000);
    CLAIMED.with(|c| c.borrow_mut().clear());
}

/// The browser's view of the request to `url` that was sent at `sent_us`: the
/// unclaimed entry that started closest to it (within 50 ms).
fn resource_timing(url: &str, clock: &Clock, sent_us: u64) -> Option<BrowserTiming> {
    let performance = clock::performance();
    let entries = performance.get_entries_by_name_with_entry_type(url, "resource");
    let sent_ms = clock.origin_ms() + sent_us as f64 / 1e3;
    let entry = CLAIMED.with(|claimed| {
        let mut claimed = claimed.borrow_mut();
        let best = entries
            .iter()
            .filter_map(|e| e.dyn_into::<PerformanceResourceTiming>().ok())
            .filter(|e| !claimed.contains(&e.start_time().to_bits()))
            .map(|e| ((e.start_time() - sent_ms).abs(), e))
            .filter(|(distance, _)| *distance < 50.0)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, e)| e)?;
        claimed.insert(best.start_time().to_bits());
        Some(best)
    })?;
    // Zero means "not exposed" (no Timing-Allow-Origin) or "did not happen".
    let on_clock = |ms: f64| (ms > 0.0).then(|| ((ms - clock.origin_ms()) * 1e3).max(0.0) as u64);
    let protocol = entry.next_hop_protocol();
    Some(BrowserTiming {
        fetch_start_us: on_clock(entry.fetch_start()).unwrap_or(sent_us),
        request_start_us: on_clock(entry.request_start()),
        response_start_us: on_clock(entry.response_start()),
        protocol: (!protocol.is_empty()).then_some(protocol),
        // A reused connection has no DNS, connect or TLS: the two marks coincide.
        connection_setup_us: {
            let setup_ms = entry.connect_end() - entry.domain_lookup_start();
            (entry.domain_lookup_start() > 0.0 && setup_ms > 0.0).then_some((setup_ms * 1e3) as u64)
        },
    })
}

/// Reads the body chunk by chunk; `Err` carries the reader's rejection.
async fn read_to_end(
    reader: &ReadableStreamDefaultReader,
    builder: &mut RecordBuilder,
    clock: &Clock,
    controller: &AbortController,
) -> Result<StreamEnd, JsValue> {
    loop {
        let chunk = JsFuture::from(reader.read()).await?;
        // Stamp first: everything after this line is not the network's time.
        let at_us = clock.now_us();
        if Reflect::get(&chunk, &"done".into())?.as_bool() == Some(true) {
            return Ok(StreamEnd::Complete);
        }
        let value: Uint8Array = Reflect::get(&chunk, &"value".into())?.unchecked_into();
        builder.on_bytes(&value.to_vec(), at_us);
        if builder.has_stream_error() {
            // An error inside a 200 stream: the verdict is in; stop downloading.
            controller.abort();
            return Ok(StreamEnd::Complete);
        }
        if builder.is_complete() {
            // The stream said it is over; its end is already stamped. A server ends
            // the body right after, and reading that end keeps the connection
            // reusable; one that holds the body open is let go after a moment.
            let grace = gloo_timers::future::sleep(AFTER_DONE_GRACE);
            futures_util::pin_mut!(grace);
            loop {
                let next = JsFuture::from(reader.read());
                match select(next, grace.as_mut()).await {
                    Either::Left((Ok(chunk), _)) => {
                        if Reflect::get(&chunk, &"done".into())?.as_bool() == Some(true) {
                            break;
                        }
                        // Bytes after the end (a stray newline): not measured.
                    }
                    // The body failed after the end: the request is complete all the same.
                    Either::Left((Err(_), _)) => break,
                    Either::Right(_) => {
                        controller.abort();
                        break;
                    }
                }
            }
            return Ok(StreamEnd::Complete);
        }
    }
}

/// How long the body may stay open after the stream said it was over.
const AFTER_DONE_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// `fetch` on whichever global this runs in (worker or window).
fn fetch(url: &str, init: &RequestInit) -> js_sys::Promise {
    let global = js_sys::global();
    if let Some(worker) = global.dyn_ref::<web_sys::WorkerGlobalScope>() {
        worker.fetch_with_str_and_init(url, init)
    } else {
        global
            .unchecked_into::<web_sys::Window>()
            .fetch_with_str_and_init(url, init)
    }
}

/// `TypeError: Failed to fetch` and the like, from whatever was thrown.
pub fn describe_js_error(error: &JsValue) -> String {
    if let Some(error) = error.dyn_ref::<js_sys::Error>() {
        format!(
            "{}: {}",
            String::from(error.name()),
            String::from(error.message())
        )
    } else if let Some(text) = error.as_string() {
        text
    } else {
        format!("{error:?}")
    }
}
