//! The server's own metrics while a run goes: `GET {origin}/metrics` (or the
//! plan's metrics URL) every
//! [`POLL_EVERY_MS`], with CORS and without the key, never from the HTTP cache,
//! read by the core ([`parse_metrics`](tokenmeter_core::parse_metrics)) and stamped on the run's clock when
//! the answer is in. Reading stops at the first poll that fails, and says why.
//!
//! A poll never takes a connection a request needs: over HTTP/1.1 the browser
//! opens six to a host, and while six requests are in flight a poll would wait
//! for one and then hold the next request back, so it is skipped until one is free
//! or a request is seen to go over HTTP/2 or 3 (where one more stream costs
//! nothing). The engine stamps tokens on this thread: a poll's parse runs once
//! every half second, over tens of KiB.

use std::{cell::RefCell, rc::Rc, time::Duration};

use futures_util::future::{select, Either};
use js_sys::Uint8Array;
use tokenmeter_core::{
    parse_metrics,
    schema::{ServerMetrics, Unreadable},
    HTTP1_CONNECTIONS_PER_HOST, MAX_EXPOSITION_BYTES, POLL_EVERY_MS,
};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, ReadableStreamDefaultReader, RequestInit, RequestMode, Response};

use super::{cancel::CancelToken, clock::Clock, live::Shared};

/// The longest a poll may take: a server too busy to answer its metrics within
/// this is skipped for the tick, not waited for.
const POLL_WITHIN: Duration = Duration::from_secs(2);

/// Starts polling `url` (the plan's [`Plan::metrics_url`]) until the run ends;
/// the samples so far are in the returned cell. `shared_connections`: `url` is on
/// the endpoint's origin, so a poll would take a connection its requests need.
///
/// [`Plan::metrics_url`]: tokenmeter_core::schema::Plan::metrics_url
pub fn start(
    url: String,
    shared_connections: bool,
    clock: Clock,
    shared: Rc<Shared>,
    cancel: CancelToken,
) -> Rc<RefCell<ServerMetrics>> {
    let metrics = Rc::new(RefCell::new(ServerMetrics {
        url: url.clone(),
        server: None,
        every_ms: POLL_EVERY_MS,
        unreadable: None,
        skipped_at_us: Vec::new(),
        samples: Vec::new(),
    }));
    wasm_bindgen_futures::spawn_local({
        let metrics = metrics.clone();
        async move {
            let every = Duration::from_millis(u64::from(POLL_EVERY_MS));
            while !shared.is_finished() && !cancel.is_cancelled() {
                let busy = shared_connections
                    && cancel.n_in_flight() >= HTTP1_CONNECTIONS_PER_HOST as usize
                    && !shared.is_multiplexed();
                if busy {
                    metrics.borrow_mut().skipped_at_us.push(clock.now_us());
                } else {
                    match poll(&url).await {
                        Ok(Some(text)) => match parse_metrics(&text) {
                            Ok((server, mut sample)) => {
                                sample.at_us = clock.now_us();
                                let mut metrics = metrics.borrow_mut();
                                metrics.server = Some(server);
                                metrics.samples.push(sample);
                            }
                            Err(why) => {
                                metrics.borrow_mut().unreadable = Some(why);
                                break;
                            }
                        },
                        // Too slow this time: the next tick tries again.
                        Ok(None) => {}
                        Err(why) => {
                            metrics.borrow_mut().unreadable = Some(why);
                            break;
                        }
                    }
                }
                gloo_timers::future::sleep(every).await;
            }
        }
    });
    metrics
}

/// One poll: the exposition's text, `None` when no answer came within
/// [`POLL_WITHIN`].
async fn poll(url: &str) -> Result<Option<String>, Unreadable> {
    let controller = AbortController::new().map_err(|_| Unreadable::NoResponse)?;
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_mode(RequestMode::Cors);
    init.set_cache(web_sys::RequestCache::NoStore);
    init.set_credentials(web_sys::RequestCredentials::Omit);
    init.set_signal(Some(&controller.signal()));
    let read = async {
        let response: Response = JsFuture::from(super::request::fetch(url, &init))
            .await
            .map_err(|_| Unreadable::NoResponse)?
            .unchecked_into();
        if response.status() != 200 {
            return Err(Unreadable::Status {
                status: response.status(),
            });
        }
        let Some(body) = response.body() else {
            return Ok(String::new());
        };
        let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
        let mut bytes = Vec::new();
        loop {
            let chunk = JsFuture::from(reader.read())
                .await
                .map_err(|_| Unreadable::NoResponse)?;
            let done = js_sys::Reflect::get(&chunk, &"done".into())
                .ok()
                .and_then(|d| d.as_bool())
                .unwrap_or(true);
            if done {
                break;
            }
            if let Ok(value) = js_sys::Reflect::get(&chunk, &"value".into()) {
                let value: Uint8Array = value.unchecked_into();
                let at = bytes.len();
                bytes.resize(at + value.length() as usize, 0);
                value.copy_to(&mut bytes[at..]);
            }
            if bytes.len() > MAX_EXPOSITION_BYTES {
                return Err(Unreadable::TooLarge);
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    futures_util::pin_mut!(read);
    let late = gloo_timers::future::sleep(POLL_WITHIN);
    match select(read, late).await {
        Either::Left((result, _)) => {
            if result.is_err() {
                controller.abort();
            }
            result.map(Some)
        }
        Either::Right(_) => {
            controller.abort();
            Ok(None)
        }
    }
}
