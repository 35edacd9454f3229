//! Messages between the page and the engine worker, and between that worker and
//! the helpers it spreads a level's streams over (see `engine::shards`), sent as
//! JSON strings.
//!
//! The page sends the plan and the key (the key only ever lives in the threads'
//! memory); the worker answers with progress at most ten times a second and, at
//! the end, the run document. It gives each helper the same plan and keys once
//! ([`ToWorker::Shard`]), then one [`ToWorker::Send`] per request, and hears back
//! one [`FromWorker::Sent`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokenmeter_core::{
    schema::{Plan, RequestRecord, RunCondition, RunDocument, Said, StallCount},
    Prompts,
};

/// Page → worker, and the measuring worker → its helpers (`Shard`, `Send`,
/// `Cancel`).
///
/// Externally tagged (serde's default) on purpose: an internally tagged enum is
/// read through serde's buffering deserializer, which instantiates every type the
/// messages carry a second time and cost the page's WebAssembly tens of kilobytes.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    Start {
        run_id: String,
        /// ISO 8601, from the page's clock.
        started_at: String,
        plan: Box<Plan>,
        /// Never logged, never stored by the worker beyond the run.
        api_key: Option<String>,
        /// The keys of an A/B plan's other targets (B, C, …), as `api_key`.
        #[serde(default)]
        target_keys: Vec<Option<String>>,
        /// A plan of prompts from a file: the file's prompts (the plan names the
        /// file; the engine checks that these are its).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompts: Option<Arc<Prompts>>,
    },
    /// Abort every request in flight and finish with what was measured.
    Cancel,
    /// The page became hidden or visible (`visibilitychange`).
    Visibility { hidden: bool },
    /// To a helper: the run it sends requests for.
    Shard(Box<ShardStart>),
    /// To a helper: send one request now.
    Send(SendOrder),
}

/// What a helper needs to send the run's requests as the measuring worker would.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardStart {
    /// The run's zero on the shared timeline (`performance.timeOrigin` plus the
    /// measuring worker's `performance.now()` when the run started), ms: each
    /// worker's own `performance.now()` counts from its own start, so the helper
    /// finds its zero from this and its `timeOrigin`.
    pub origin_epoch_ms: f64,
    /// The plan as it runs (its seed set: the helper makes the same bodies).
    pub plan: Box<Plan>,
    /// As in [`ToWorker::Start`]; held in memory only.
    pub api_key: Option<String>,
    #[serde(default)]
    pub target_keys: Vec<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Arc<Prompts>>,
}

/// One request for a helper to send.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SendOrder {
    pub id: u64,
    /// The level's index in the run (warm-ups are never sent by a helper).
    pub level: u32,
    pub concurrency: u32,
    /// Which target of the plan.
    pub target: u32,
    /// When the measuring worker wanted it sent, on the run's clock, µs: the
    /// helper stamps its own send, and the message's way is client queue time.
    pub wanted_us: u64,
    /// The body, when the measuring worker made it (a conversation's turn);
    /// else the helper makes request `id`'s body as the measuring worker would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// A helper's answer to a [`SendOrder`]: the record, and what it cost the helper.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sent {
    pub record: RequestRecord,
    pub busy_us: u64,
    pub n_chunks: u64,
    /// What the helper's own loop stalls did to this record's token events.
    pub stalls: StallCount,
    /// How late the helper's loop ran during the record's level so far.
    pub lag: LagSoFar,
}

/// How late a helper's loop ran during one level so far, while it had requests
/// in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LagSoFar {
    pub max_ms: f64,
    /// When the worst tick woke, on the run's clock, ms.
    pub max_at_ms: f64,
    pub p95_ms: f64,
}

/// Worker → page. Externally tagged, as [`ToWorker`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromWorker {
    /// The worker has started and listens.
    Ready,
    Progress(Progress),
    /// The run ended (done or cancelled). The document holds everything but its
    /// per-request records: progress brought each of them as it finished, and the
    /// page puts them back ([`RunDocument::put_records`]), so that a large run is
    /// not sent and read a second time at its end.
    Finished {
        document: Box<RunDocument>,
        /// How many records the run has: those the page was brought.
        n_records: u64,
    },
    /// The run could not start (an invalid plan); nothing was sent.
    Failed {
        problems: Vec<Said>,
    },
    /// From a helper: a request it sent ended.
    Sent(Box<Sent>),
}

/// Where a run stands, for the live view.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Since the run started.
    pub elapsed_ms: f64,
    /// Warm-up requests finished, of those planned.
    pub n_warmup_done: u32,
    pub n_warmup: u32,
    pub levels: Vec<LevelProgress>,
    /// Conditions found in what has been measured so far: a level above six that
    /// the browser sends over HTTP/1.1 (its requests wait in the browser's queue).
    #[serde(default)]
    pub conditions: Vec<RunCondition>,
    /// The requests finished since the last progress: the page keeps them, so that
    /// a run that never ends (the page closed, the engine stopped) is not lost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<RequestRecord>,
}

/// One level of the live view.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelProgress {
    /// The concurrency; 0 for open-loop arrivals.
    pub concurrency: u32,
    /// The pass of a repeated ladder this level belongs to (0: the first).
    #[serde(default)]
    pub repetition: u32,
    /// The target of an A/B plan this level measures (0: A).
    #[serde(default)]
    pub target: u32,
    pub state: LevelState,
    /// Requests planned (0 when the level is bounded by time).
    pub n_planned: u32,
    pub n_done: u32,
    pub n_in_flight: u32,
    pub n_failed: u32,
    pub elapsed_ms: f64,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    /// Aggregate output tokens/s of the finished requests so far.
    pub output_tps: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelState {
    #[default]
    Waiting,
    Running,
    Done,
}
