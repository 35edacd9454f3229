//! Runs for the charts' and the reports' tests: a ladder whose TTFT grows with
//! load, and whose top level only failed.

use crate::{
    error::{ErrorKind, RequestError},
    record::{RecordBuilder, RecordOptions, RequestRecord, RequestStart, StreamEnd},
};

/// A request at `concurrency` whose first token came `ttft_ms` after it was sent,
/// then nine more every `tpot_ms`.
pub(crate) fn record(id: u64, concurrency: u32, ttft_ms: u64, tpot_ms: u64) -> RequestRecord {
    let sent = id * 10_000_000;
    let mut b = RecordBuilder::new(
        RequestStart {
            id,
            concurrency,
            warmup: false,
            wanted_us: sent,
            sent_us: sent,
        },
        RecordOptions::default(),
    );
    b.on_headers(200, Some("text/event-stream"), None, sent + 1_000);
    let mut t = sent + ttft_ms * 1_000;
    for _ in 0..10 {
        b.on_bytes(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
            t,
        );
        t += tpot_ms * 1_000;
    }
    b.on_bytes(b"data: [DONE]\n\n", t);
    b.finish(StreamEnd::Complete, t)
}

/// Four levels, 1 to 8, four requests each: TTFT 100, 120 and 300 ms at 1, 2
/// and 4; every request at 8 failed with a 503.
pub(crate) fn ladder_records() -> Vec<RequestRecord> {
    let mut records = Vec::new();
    let mut id = 0;
    for (concurrency, ttft_ms, tpot_ms) in [(1, 100, 20), (2, 120, 22), (4, 300, 30)] {
        for _ in 0..4 {
            id += 1;
            records.push(record(id, concurrency, ttft_ms, tpot_ms));
        }
    }
    for _ in 0..4 {
        id += 1;
        let mut failed = record(id, 8, 100, 20);
        failed.error = Some(RequestError {
            kind: ErrorKind::ServerError,
            detail: "HTTP 503".into(),
            body_sample: None,
            retry_after_s: None,
        });
        records.push(failed);
    }
    records
}
