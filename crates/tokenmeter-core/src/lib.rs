//! tokenmeter's measuring core: everything tokenmeter reports is computed here.
//!
//! The crate depends on neither `web-sys` nor `tokio` and never reads a clock:
//! callers hand it bytes and timestamps (µs on one origin), so every figure can be
//! reproduced in a native test. The flow of one request through it:
//!
//! 1. [`sse::SseParser`] turns byte chunks into events, each stamped with the
//!    arrival time of the chunk that completed it;
//! 2. [`stream::interpret`] says what an event means (tokens, usage, finish, error);
//! 3. [`record::RecordBuilder`] folds them into one immutable [`record::RequestRecord`];
//! 4. [`summary::LevelStats`] accumulates records (mergeable) into a [`summary::Summary`];
//! 5. [`verdict::analyse`] finds the knee and the safe concurrency;
//! 6. [`report::RunDocument`] holds it all, as versioned JSON, CSV or Markdown.
//!
//! Metric definitions (vLLM's) are in [`record`]; the percentile method in [`stats`];
//! the two throughputs in [`summary`]; the analysis rules in [`verdict`].

pub mod ab;
pub mod browser;
pub mod chart;
pub mod columns;
pub mod compare;
pub mod condition;
pub mod diagnosis;
pub mod draft;
pub mod error;
pub mod headline;
pub mod html;
pub mod json;
pub mod lag;
pub mod live;
pub mod locust;
pub mod network;
pub mod plan;
pub mod prompts;
pub mod provider;
pub mod record;
pub mod render;
pub mod report;
pub mod schedule;
pub mod search;
pub mod server_metrics;
pub mod share;
pub mod sse;
pub mod stats;
pub mod stream;
pub mod summary;
pub mod tagged;
pub mod vecmap;
pub mod verdict;
pub mod vllm;
