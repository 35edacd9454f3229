//! tokenmeter's measuring core: everything tokenmeter reports is computed here.
//!
//! The crate depends on neither `web-sys` nor `tokio` and never reads a clock:
//! callers hand it bytes and timestamps (µs on one origin), so every figure can be
//! reproduced in a native test. The flow of one request through it:
//!
//! 1. [`SseParser`] turns byte chunks into events, each stamped with the arrival
//!    time of the chunk that completed it;
//! 2. [`interpret`] says what an event means (tokens, usage, finish, error);
//! 3. [`RecordBuilder`] folds them into one immutable [`schema::RequestRecord`];
//! 4. [`LevelStats`] accumulates records (mergeable) into a [`schema::Summary`];
//! 5. [`analyse`] finds the knee and the safe concurrency;
//! 6. [`schema::RunDocument`] holds it all, as versioned JSON; [`render`], [`html`]
//!    and [`chart`] make CSV, Markdown, HTML and SVG of it.
//!
//! Metric definitions (vLLM's) are on [`schema::RequestRecord`]; the percentile
//! method on [`schema::Distribution`]; the two throughputs on [`schema::Summary`];
//! the analysis rules on [`analyse`].
//!
//! # The surface
//! Every module is private, and this file says what the crate offers, in the
//! layers of its pipeline (ARCHITECTURE.md#layers; `cargo xtask tidy` holds the
//! modules to them):
//! - [`schema`]: every type a run document is made of. Its shapes are the
//!   versioned JSON format (docs/run-document.md): change one and you change what
//!   older and newer readers see. Nothing else in the crate is serialised into a
//!   document.
//! - the crate root: the measuring types and functions that are not stored (the
//!   parser, the builders, accumulators, the schedule, the live view, tables of
//!   columns and providers, the words);
//! - namespaces whose functions read only with their module's name: [`ab`],
//!   [`compare`] (analyses of a document), [`render`], [`chart`], [`html`],
//!   [`share`] (renderings), [`locust`], [`vllm`] (other tools' formats).

#![warn(unreachable_pub, missing_docs)]

pub mod ab;
mod browser;
pub mod chart;
mod columns;
pub mod compare;
mod condition;
mod diagnosis;
mod draft;
mod error;
mod headline;
pub mod html;
mod imports;
mod json;
mod lag;
mod live;
pub mod locust;
mod network;
mod plan;
mod prompts;
mod provider;
mod record;
pub mod render;
mod report;
mod schedule;
mod search;
mod server_metrics;
pub mod share;
mod sse;
mod stats;
mod stream;
mod summary;
mod tagged;
mod vecmap;
mod verdict;
pub mod vllm;

/// Every type a run document is made of (`"schema": 1`, docs/run-document.md).
///
/// These shapes are the versioned format that history, exports, links, imports
/// and outside scripts read: a field is added with a default so that older
/// documents still import, never renamed or removed without bumping the schema.
/// A type that is not listed here is never serialised into a document.
pub mod schema {
    pub use crate::{
        browser::Engine,
        condition::{Interruption, NoResponseCause, RunCondition},
        error::{ErrorKind, Lang, RequestError, Said},
        lag::StallCount,
        network::{Network, TimedBy},
        plan::{
            AbOrder, AnalysisParams, AuthStyle, Conversation, Lengths, LoadMode, Plan, PromptMode,
            PromptSpec, Slo, TargetSpec,
        },
        prompts::{Format, Order, PromptFile},
        record::{BrowserTiming, RequestRecord, TokenSource, Turn},
        report::{EngineLoad, Environment, RunDocument, RunStatus, ToolInfo},
        search::{Probe, SearchOutcome},
        server_metrics::{Server, ServerLevel, ServerMetrics, ServerSample, Unreadable},
        stats::Distribution,
        stream::{EndpointKind, ServerTimings, Usage},
        summary::{Bursts, Distortion, Early, PassFigures, SessionFigures, Summary, TurnFigures},
        vecmap::VecMap,
        verdict::{LevelVerdict, Sentence, Verdict},
    };
}

// The wire and the browser: bytes in, events out; the browsers' rules; the user's
// prompts; the network's round trip; what a server's /metrics says.
pub use crate::{
    browser::{is_plain_http, will_queue, HTTP1, HTTP1_CONNECTIONS_PER_HOST},
    network::{PROBES_AFTER, PROBES_BEFORE},
    prompts::{missing as missing_prompt_file, read as read_prompts, sha256_hex, Prompts},
    server_metrics::{parse as parse_metrics, MAX_EXPOSITION_BYTES, POLL_EVERY_MS},
    sse::{SseEvent, SseLimits, SseParser},
    stream::{interpret, request_body, BodySpec},
};

// The plan, as stored and as typed in the form; the providers it can point at.
pub use crate::{
    draft::{LengthDist, LengthsDraft, LoadKind, PlanDraft, TargetDraft},
    plan::{
        import_config, is_mixed_content, normalize_base_url, origin, parse_levels, unique_header,
        Bodies, Imported, MAX_ENGINE_WORKERS, MAX_TARGETS,
    },
    provider::{matching as matching_provider, provider, Provider, PROVIDERS},
};

// One request, a level, what is concluded, a run's course and the live view.
pub use crate::{
    condition::{engine_lag, no_response_before_probe, no_response_from_probes},
    lag::{LagHistogram, StallLog, LAG_DISTORTS_P95_MS, LAG_NOTE_MS},
    live::{LiveFigures, LiveLevel},
    record::{
        RecordBuilder, RecordOptions, RequestStart, ResponseLimits, StreamEnd, ERROR_BODY_MAX_BYTES,
    },
    schedule::{Schedule, Sending},
    summary::LevelStats,
    verdict::analyse,
};

// A run from a file a user brings (ours, Locust's records, a vLLM result).
pub use crate::{
    imports::read_run,
    report::{DocumentError, JsonParts},
};

// Analyses of a document and what renderings share: the columns, the headline, the
// diagnosis, the words in two languages, the page's sorting.
pub use crate::{
    columns::{article_table, column, page_columns, Page, TableKinds, COLUMNS, LEVEL},
    diagnosis::{diagnose, Cause},
    error::Words,
    headline::{Headline, HeadlineLevel},
    stats::{order_by, reorder},
};
