//! The streams of `fixtures/stream-cases.json` through the core's `RecordBuilder`:
//! each gives every field the fixture expects, and nothing fed after a stream is
//! closed changes its record. The exported locustfile's `Record` is held to the
//! same fixture (`e2e/locust/parity.py`, in the Locust layer of `cargo xtask
//! test`), so both clients record a stream alike.

use serde_json::Value;
use tokenmeter_core::{
    schema::{EndpointKind, RequestRecord},
    unique_header, RecordBuilder, RecordOptions, RequestStart, StreamEnd,
};

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/stream-cases.json")).expect("fixture")
}

fn bytes_of(name: &str, chunk: &Value) -> Vec<u8> {
    match chunk {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Array(b) => b.iter().map(|x| x.as_u64().unwrap() as u8).collect(),
        other => panic!("{name}: chunk {other}"),
    }
}

fn chunks_of(case: &Value) -> Vec<(u64, Vec<u8>)> {
    let name = case["name"].as_str().unwrap();
    case["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|chunk| (chunk[0].as_u64().unwrap(), bytes_of(name, &chunk[1])))
        .collect()
}

/// Whose stream the case is (chat when it does not say).
fn endpoint_of(case: &Value) -> EndpointKind {
    serde_json::from_value(case.get("endpoint").cloned().unwrap_or("chat".into()))
        .expect("an endpoint kind")
}

/// The case's builder with its headers given and `chunks` fed.
fn fed(case: &Value, chunks: &[(u64, Vec<u8>)]) -> RecordBuilder {
    let mut builder = RecordBuilder::new(
        RequestStart {
            id: 0,
            concurrency: 1,
            warmup: false,
            wanted_us: 0,
            sent_us: 0,
        },
        RecordOptions {
            keep_text: true,
            endpoint: endpoint_of(case),
            ..RecordOptions::default()
        },
    );
    if let Some(status) = case["status"].as_u64() {
        builder.on_headers(
            status as u16,
            case["content_type"].as_str(),
            case["retry_after"].as_str(),
            case["headers_us"].as_u64().unwrap(),
        );
    }
    for (at, bytes) in chunks {
        builder.on_bytes(bytes, *at);
    }
    builder
}

fn finished(case: &Value, builder: RecordBuilder) -> RequestRecord {
    let end = match case["end"].as_str().unwrap() {
        "complete" => StreamEnd::Complete,
        "timed_out" => StreamEnd::TimedOut,
        "network" => StreamEnd::NetworkError {
            message: "TypeError: network".into(),
        },
        other => panic!("{}: end {other}", case["name"]),
    };
    builder.finish(end, case["end_us"].as_u64().unwrap())
}

#[test]
fn every_stream_is_recorded_as_the_fixture_says() {
    let fixture = fixture();
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() >= 20);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let record = finished(case, fed(case, &chunks_of(case)));
        let got = serde_json::to_value(&record).unwrap();
        for (field, want) in case["expect"].as_object().unwrap() {
            let have = match field.as_str() {
                "error" => got["error"]["kind"].clone(),
                "error_detail" => got["error"]["detail"].clone(),
                "retry_after_s" => got["error"]["retry_after_s"].clone(),
                "completion_tokens" => got["usage"]["completion_tokens"].clone(),
                _ => got.get(field).cloned().unwrap_or(Value::Null),
            };
            assert_eq!(&have, want, "{name}: {field}");
        }
    }
}

/// Whatever arrives after a stream is closed (it said it was over, or failed)
/// never changes its record, however the network cut those bytes: each suffix of
/// the fixture's `after_end` is appended to the last read of every stream the
/// builder closes, and the whole cut at every byte into two reads.
#[test]
fn nothing_after_a_closed_stream_changes_its_record() {
    let fixture = fixture();
    let suffixes: Vec<Vec<u8>> = fixture["after_end"]
        .as_array()
        .expect("after_end")
        .iter()
        .map(|s| bytes_of("after_end", s))
        .collect();
    let mut n_closed = 0;
    let mut n_records = 0;
    for case in fixture["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let chunks = chunks_of(case);
        let builder = fed(case, &chunks);
        if !(builder.is_complete() || builder.has_stream_error()) {
            continue;
        }
        n_closed += 1;
        let (head, last) = chunks.split_at(chunks.len() - 1);
        let (last_at, last) = &last[0];
        // The same reads, the last one (`tail`) cut in two at `cut`.
        let record_cut = |tail: &[u8], cut: usize| {
            let mut reads = head.to_vec();
            reads.push((*last_at, tail[..cut].to_vec()));
            reads.push((last_at + 7, tail[cut..].to_vec()));
            finished(case, fed(case, &reads))
        };
        let without: Vec<RequestRecord> =
            (0..=last.len()).map(|cut| record_cut(last, cut)).collect();
        for (i, suffix) in suffixes.iter().enumerate() {
            let tail = [last.as_slice(), suffix].concat();
            for cut in 0..=tail.len() {
                let with = record_cut(&tail, cut);
                assert_eq!(
                    with,
                    without[cut.min(last.len())],
                    "{name}: after_end[{i}] appended, the last read cut at byte {cut}"
                );
                n_records += 1;
            }
        }
    }
    assert!(n_closed >= 20, "{n_closed} closed streams in the fixture");
    assert!(n_records > 10_000);
}

/// Each request's own prompt header, as the page makes it: the Locust file makes
/// the same (`e2e/locust/parity.py` holds it to the same fixture), so a plan sends
/// the same prompts from the same seed on either.
#[test]
fn unique_headers_are_the_fixture_s() {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/unique-headers.json")).expect("fixture");
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() >= 6);
    for case in cases {
        let (seed, id) = (case["seed"].as_u64().unwrap(), case["id"].as_u64().unwrap());
        assert_eq!(
            unique_header(seed, id),
            case["header"].as_str().unwrap(),
            "seed {seed}, request {id}"
        );
    }
}
