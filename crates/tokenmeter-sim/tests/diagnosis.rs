//! The diagnosis on runs against the simulator, whose bottleneck is known by
//! construction: every sequence in one batch with each extra one slowing every
//! step is decode-bound; a batch of two with fast steps is queue-bound. Each is
//! named for what it is, and not for the other.

mod common;

use std::time::Instant;

use common::{chat_body, measure, post_chat, start};
use futures_util::future::join_all;
use tokenmeter_core::{
    diagnose,
    schema::{Environment, Plan, RunDocument, RunStatus},
    Cause,
};
use tokenmeter_sim::{engine::EngineParams, SimConfig};

fn engine(max_batch: usize, decode_base_ms: f64, decode_per_seq_ms: f64) -> SimConfig {
    let defaults = SimConfig::default();
    SimConfig {
        engine: EngineParams {
            max_batch,
            decode_base_ms,
            decode_per_seq_ms,
            prefill_base_ms: 1.0,
            prefill_per_token_ms: 0.0,
            jitter: 0.0,
            ..defaults.engine
        },
        ..defaults
    }
}

/// A closed-loop ladder against `config`: at each level, `c` clients sending
/// requests of `max_tokens` one after another, at least eight per level.
async fn ladder(config: SimConfig, levels: &[u32], max_tokens: u64) -> RunDocument {
    let sim = start(config).await;
    let origin = Instant::now();
    let mut records = Vec::new();
    for &concurrency in levels {
        let per_client = 8u32.div_ceil(concurrency).max(2);
        let clients = (0..concurrency).map(|_| async {
            let mut mine = Vec::new();
            for _ in 0..per_client {
                let r = post_chat(sim.addr, &[], &chat_body(max_tokens, true)).await;
                let mut record = measure(&r, origin, false);
                record.concurrency = concurrency;
                mine.push(record);
            }
            mine
        });
        records.extend(join_all(clients).await.into_iter().flatten());
    }
    for (id, record) in records.iter_mut().enumerate() {
        record.id = id as u64;
    }
    RunDocument::build(
        "sim".into(),
        "2026-12-03T10:00:00Z".into(),
        RunStatus::Done,
        Plan::default_for_simulator(&format!("http://{}/v1", sim.addr)),
        Environment::default(),
        records,
    )
}

fn causes(document: &RunDocument) -> Vec<Cause> {
    diagnose(document).iter().map(|f| f.cause()).collect()
}

#[tokio::test]
async fn a_decode_bound_server_is_named_decode() {
    // Every stream decoded together; a step takes 4 ms + 3 ms per extra sequence.
    let document = ladder(engine(64, 4.0, 3.0), &[1, 4, 12], 16).await;
    let causes = causes(&document);
    assert!(
        causes.contains(&Cause::Decode),
        "{causes:?}: {}",
        document.verdict.explanation_en
    );
    assert!(!causes.contains(&Cause::Queueing), "no queue: {causes:?}");
}

#[tokio::test]
async fn a_queue_bound_server_is_named_queueing() {
    // Two sequences at a time, 3 ms a step whatever the batch: at 3 streams one
    // request in three waits a whole answer (about 100 ms) for a slot, so the tail
    // outgrows the median.
    let document = ladder(engine(2, 3.0, 0.0), &[1, 2, 3], 32).await;
    let causes = causes(&document);
    assert!(
        causes.contains(&Cause::Queueing),
        "{causes:?}: {}",
        document.verdict.explanation_en
    );
    assert!(
        !causes.contains(&Cause::Decode),
        "the steps never slowed: {causes:?}"
    );
}
