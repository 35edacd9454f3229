//! The engine's clock: `performance.now()` of the current global (window or worker),
//! as µs since the run started.
//!
//! Every worker's `performance.now()` counts from its own start
//! (`performance.timeOrigin`), so the same instant reads differently in two
//! workers. A helper that stamps part of a run's streams finds the run's zero on
//! its own timeline from the shared one ([`Clock::on_origin`]), so that all the
//! run's records are on one clock.

use wasm_bindgen::JsCast;
use web_sys::Performance;

/// The current global's `performance` (window or worker).
pub fn performance() -> Performance {
    js_sys::Reflect::get(&js_sys::global(), &"performance".into())
        .expect("a global performance object")
        .unchecked_into()
}

/// µs on one origin: the instant the run started.
#[derive(Clone)]
pub struct Clock {
    performance: Performance,
    origin_ms: f64,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Clock {
        let performance = performance();
        let origin_ms = performance.now();
        Clock {
            performance,
            origin_ms,
        }
    }

    /// A clock whose zero is the instant `origin_epoch_ms` on the shared timeline
    /// (another worker's [`Clock::origin_epoch_ms`]).
    pub fn on_origin(origin_epoch_ms: f64) -> Clock {
        let performance = performance();
        Clock {
            origin_ms: origin_here(origin_epoch_ms, performance.time_origin()),
            performance,
        }
    }

    /// This clock's zero on the shared timeline, ms since the Unix epoch.
    pub fn origin_epoch_ms(&self) -> f64 {
        self.performance.time_origin() + self.origin_ms
    }

    pub fn now_ms(&self) -> f64 {
        self.performance.now() - self.origin_ms
    }

    pub fn now_us(&self) -> u64 {
        (self.now_ms() * 1e3).max(0.0).round() as u64
    }

    /// The run's origin on the global's own timeline (`performance.now()` units),
    /// to place Resource Timing entries on the run's clock.
    pub fn origin_ms(&self) -> f64 {
        self.origin_ms
    }

    /// The smallest step `performance.now()` takes here, µs (browsers coarsen it:
    /// 5 µs with cross-origin isolation, 100 µs without, in Chromium).
    pub fn resolution_us(&self) -> f64 {
        let mut smallest = f64::INFINITY;
        let mut last = self.performance.now();
        for _ in 0..20_000 {
            let now = self.performance.now();
            if now > last {
                smallest = smallest.min(now - last);
                last = now;
            }
        }
        smallest * 1e3
    }
}

/// Where the instant `origin_epoch_ms` of the shared timeline falls on the
/// timeline of a global whose `performance.timeOrigin` is `time_origin_ms`.
pub fn origin_here(origin_epoch_ms: f64, time_origin_ms: f64) -> f64 {
    origin_epoch_ms - time_origin_ms
}
