//! Run conditions the engine itself observes (see `tokenmeter_core::condition`):
//! when the page was hidden, how late the engine's own event loop ran, and what the
//! global scope says about the timer and the browser.

use std::cell::{Cell, RefCell};

use std::time::Duration;

use futures_util::future::{select, Either};
use tokenmeter_core::{
    engine_lag, no_response_before_probe, no_response_from_probes,
    schema::{EngineLoad, Environment, RunCondition, TimedBy},
};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, RequestInit, RequestMode};

/// When the page was hidden (browsers throttle hidden tabs, and their timers),
/// on the worker's `performance.now()` timeline.
#[derive(Default)]
pub struct Visibility {
    hidden_since: Cell<Option<f64>>,
    spans: RefCell<Vec<(f64, f64)>>,
}

impl Visibility {
    /// The page says it became hidden (or visible again).
    pub fn set_hidden(&self, hidden: bool) {
        let now = super::clock::performance().now();
        match (hidden, self.hidden_since.get()) {
            (true, None) => self.hidden_since.set(Some(now)),
            (false, Some(since)) => {
                self.spans.borrow_mut().push((since, now));
                self.hidden_since.set(None);
            }
            _ => {}
        }
    }

    /// How long the page was hidden between `from` and `to` (same timeline), ms.
    pub fn hidden_ms(&self, from: f64, to: f64) -> f64 {
        let ongoing = self.hidden_since.get().map(|since| (since, to));
        self.spans
            .borrow()
            .iter()
            .copied()
            .chain(ongoing)
            .map(|(a, b)| (b.min(to) - a.max(from)).max(0.0))
            .sum()
    }
}

/// The conditions of one finished level: hidden for part of it, or the engine
/// lagged while its requests were in flight (see [`condition::engine_lag`]).
pub fn level_conditions(concurrency: u32, hidden_ms: f64, load: &EngineLoad) -> Vec<RunCondition> {
    let mut conditions = Vec::new();
    if hidden_ms > 0.0 {
        conditions.push(RunCondition::HiddenPage {
            concurrency,
            hidden_ms,
        });
    }
    conditions.extend(engine_lag(
        concurrency,
        load.lag_max_ms,
        load.lag_p95_ms,
        load.stalls,
    ));
    conditions
}

/// A timer coarser than this is worth a note (µs).
const COARSE_TIMER_US: f64 = 100.0;

/// What can be known about where the run was measured from.
pub fn environment(timer_resolution_us: f64) -> Environment {
    let global = js_sys::global();
    let get = |object: &JsValue, key: &str| {
        js_sys::Reflect::get(object, &key.into()).unwrap_or(JsValue::UNDEFINED)
    };
    let navigator = get(&global, "navigator");
    let location = get(&global, "location");
    let mut conditions = Vec::new();
    let isolated = get(&global, "crossOriginIsolated").as_bool();
    // Chromium's 100 µs without isolation is finer than anything the figures are
    // read to (0.1 ms of a TTFT); Firefox's and Safari's 1 ms is not.
    if isolated == Some(false) && timer_resolution_us > COARSE_TIMER_US {
        conditions.push(RunCondition::CoarseTimer {
            resolution_us: timer_resolution_us,
        });
    }
    Environment {
        // This browser measured: no other source.
        source: None,
        user_agent: get(&navigator, "userAgent").as_string(),
        page_origin: get(&location, "origin").as_string(),
        timer_resolution_us: timer_resolution_us
            .is_finite()
            .then_some(timer_resolution_us),
        cross_origin_isolated: isolated,
        hardware_concurrency: get(&navigator, "hardwareConcurrency")
            .as_f64()
            .map(|n| n as u32),
        conditions,
        notes: Vec::new(),
        engine_load: Vec::new(),
        network: None,
        server_metrics: None,
    }
}

/// How long each probe of an endpoint that gave no response may take.
const PROBE_WITHIN: Duration = Duration::from_secs(5);

/// Why `n_requests` requests to `base_url` got no response: told from the page's
/// origin and, where that is not enough, by two requests to `{base}/models` (one
/// without CORS, one with; neither carries the key).
pub async fn no_response(
    base_url: &str,
    n_requests: u64,
    environment: &Environment,
) -> RunCondition {
    let page_origin = environment.page_origin.clone();
    let cause = match no_response_before_probe(
        page_origin.as_deref(),
        base_url,
        environment.cross_origin_isolated == Some(true),
    ) {
        Some(cause) => cause,
        None => {
            let url = format!("{}/models", base_url.trim_end_matches('/'));
            let reached = probe(&url, RequestMode::NoCors).await;
            let readable = reached && probe(&url, RequestMode::Cors).await;
            no_response_from_probes(reached, readable)
        }
    };
    RunCondition::NoResponse {
        n_requests,
        cause,
        page_origin,
    }
}

/// Whether a GET of `url` in `mode` got a response (an opaque one counts), within
/// [`PROBE_WITHIN`].
async fn probe(url: &str, mode: RequestMode) -> bool {
    timed_probe(url, mode).await.is_some()
}

/// How long a GET of `url` in `mode` took to its response headers (an opaque
/// response counts) on the global's `performance.now()`, and when it started;
/// `None` without one within [`PROBE_WITHIN`]. Never from the HTTP cache.
async fn timed_probe(url: &str, mode: RequestMode) -> Option<(f64, f64)> {
    let controller = AbortController::new().ok()?;
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_mode(mode);
    init.set_cache(web_sys::RequestCache::NoStore);
    init.set_signal(Some(&controller.signal()));
    let performance = super::clock::performance();
    let started = performance.now();
    let answered = JsFuture::from(super::request::fetch(url, &init));
    let late = gloo_timers::future::sleep(PROBE_WITHIN);
    match select(answered, late).await {
        Either::Left((Ok(_), _)) => Some((performance.now() - started, started)),
        Either::Left((Err(_), _)) => None,
        Either::Right(_) => {
            controller.abort();
            None
        }
    }
}

/// How long Resource Timing says the probe of `url` started at `started` took
/// from sending to its response headers, when the server lets the page see it
/// (`Timing-Allow-Origin`): the browser's own time before sending left out. Its
/// entry is queued once the answer's body is in: waited for a little.
async fn resource_round_trip(url: &str, started: f64) -> Option<f64> {
    let performance = super::clock::performance();
    for _ in 0..20 {
        let entry = performance
            .get_entries_by_name(url)
            .iter()
            .filter_map(|e| e.dyn_into::<web_sys::PerformanceResourceTiming>().ok())
            .rfind(|e| e.start_time() >= started - 1.0);
        if let Some(e) = entry {
            let (sent, answered) = (e.request_start(), e.response_start());
            return (sent > 0.0 && answered >= sent).then_some(answered - sent);
        }
        gloo_timers::future::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// The network's round trip to `base_url`, `n` times: `GET {base}/models`, one
/// after another, without the key (any server answers, even with a 401 or a 404,
/// and the answer is not read). With CORS when the server allows it for this
/// page, so that Resource Timing can time each probe from the request leaving
/// the browser to the response headers (where the server also sends
/// `Timing-Allow-Origin`); else without CORS, timed from the call to the
/// headers. A probe that got no response ends the probing: a host that does not
/// answer within [`PROBE_WITHIN`] holds the run back once, not `n` times. (See
/// [`tokenmeter_core::network`].)
pub async fn round_trips(base_url: &str, n: usize) -> (Vec<f64>, TimedBy) {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let mode = if timed_probe(&url, RequestMode::Cors).await.is_some() {
        RequestMode::Cors
    } else {
        RequestMode::NoCors
    };
    let (mut fetch, mut resource) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let Some((ms, started)) = timed_probe(&url, mode).await else {
            break;
        };
        fetch.push(ms);
        resource.push(match mode {
            RequestMode::Cors => resource_round_trip(&url, started).await,
            _ => None,
        });
    }
    match resource.into_iter().collect::<Option<Vec<f64>>>() {
        Some(times) if !times.is_empty() => (times, TimedBy::ResourceTiming),
        _ => (fetch, TimedBy::Fetch),
    }
}

/// What a round-trip probe is, as the run document says it.
pub const ROUND_TRIP_PROBE: &str =
    "GET {base}/models, without the key, never from the HTTP cache (with CORS where the server allows it)";
