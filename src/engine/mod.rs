//! The engine: sends requests and times them. It runs in the worker (see
//! `src/bin/worker.rs`), never on the page's thread, so rendering can never delay a
//! timestamp. It measures nothing itself: bytes and timestamps go to
//! `tokenmeter-core`.
//!
//! - [`clock`]: `performance.now()` on the run's origin, in µs;
//! - [`request`]: one request, `fetch` to the last byte, into a `RequestRecord`;
//! - [`cancel`]: aborting every request in flight at once;
//! - [`runner`]: the schedule (ladder, arrivals, duration), progress, the document.

pub mod cancel;
pub mod clock;
pub mod request;
pub mod runner;
