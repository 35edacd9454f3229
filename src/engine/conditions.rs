//! Run conditions the engine itself observes (see `tokenmeter_core::condition`):
//! when the page was hidden, how late the engine's own event loop ran, and what the
//! global scope says about the timer and the browser.

use std::cell::{Cell, RefCell};

use tokenmeter_core::{
    condition::{self, RunCondition},
    report::{EngineLoad, Environment},
};
use wasm_bindgen::JsValue;

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
    conditions.extend(condition::engine_lag(
        concurrency,
        load.lag_max_ms,
        load.lag_p95_ms,
    ));
    conditions
}

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
    if isolated == Some(false) && timer_resolution_us > 20.0 {
        conditions.push(RunCondition::CoarseTimer {
            resolution_us: timer_resolution_us,
        });
    }
    Environment {
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
    }
}
