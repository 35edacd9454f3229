//! The engine: sends requests and times them. It runs in the worker (see
//! [`host`]), never on the page's thread, so rendering can never delay a
//! timestamp. It measures nothing itself: bytes and timestamps go to
//! `tokenmeter-core`.
//!
//! - [`host`]: the worker's entry, reading the page's messages;
//! - [`clock`]: `performance.now()` on the run's origin, in µs;
//! - [`request`]: one request, `fetch` to the last byte, into a `RequestRecord`;
//! - [`cancel`]: aborting every request in flight at once;
//! - [`runner`]: a run from warm-up to the document;
//! - [`schedule`]: how one level sends (closed-loop lanes, open-loop arrivals);
//! - [`pace`]: sends let through one per task of the event loop;
//! - [`shards`]: a level's streams spread over helper workers, and [`helper`]:
//!   what a helper does;
//! - [`live`]: the records and live figures while a run goes, progress ≤ 10/s;
//! - [`conditions`]: what the engine observes about itself (hidden page, lag,
//!   timer resolution);
//! - [`server_metrics`]: the server's own `/metrics`, polled while a run goes.

pub mod cancel;
pub mod clock;
pub mod conditions;
pub mod helper;
pub mod host;
pub mod live;
pub mod pace;
pub mod request;
pub mod runner;
pub mod schedule;
pub mod server_metrics;
pub mod shards;
