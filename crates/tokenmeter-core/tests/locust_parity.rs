//! The streams of `fixtures/stream-cases.json` through the core's `RecordBuilder`:
//! each gives every field the fixture expects. The exported locustfile's `Record`
//! is held to the same fixture (`e2e/locust/parity.py`, in the Locust layer of
//! `cargo xtask test`), so both clients record a stream alike.

use serde_json::Value;
use tokenmeter_core::record::{RecordBuilder, RecordOptions, RequestStart, StreamEnd};

#[test]
fn every_stream_is_recorded_as_the_fixture_says() {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/stream-cases.json")).expect("fixture");
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() >= 20);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let mut builder = RecordBuilder::new(
            RequestStart {
                id: 0,
                concurrency: 1,
                warmup: false,
                wanted_us: 0,
                sent_us: 0,
            },
            RecordOptions::default(),
        );
        if let Some(status) = case["status"].as_u64() {
            builder.on_headers(
                status as u16,
                case["content_type"].as_str(),
                case["retry_after"].as_str(),
                case["headers_us"].as_u64().unwrap(),
            );
        }
        for chunk in case["chunks"].as_array().unwrap() {
            let at = chunk[0].as_u64().unwrap();
            let bytes: Vec<u8> = match &chunk[1] {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Array(b) => b.iter().map(|x| x.as_u64().unwrap() as u8).collect(),
                other => panic!("{name}: chunk {other}"),
            };
            builder.on_bytes(&bytes, at);
        }
        let end = match case["end"].as_str().unwrap() {
            "complete" => StreamEnd::Complete,
            "timed_out" => StreamEnd::TimedOut,
            "network" => StreamEnd::NetworkError {
                message: "TypeError: network".into(),
            },
            other => panic!("{name}: end {other}"),
        };
        let record = builder.finish(end, case["end_us"].as_u64().unwrap());
        let got = serde_json::to_value(&record).unwrap();
        for (field, want) in case["expect"].as_object().unwrap() {
            let have = match field.as_str() {
                "error" => got["error"]["kind"].clone(),
                "retry_after_s" => got["error"]["retry_after_s"].clone(),
                "completion_tokens" => got["usage"]["completion_tokens"].clone(),
                _ => got.get(field).cloned().unwrap_or(Value::Null),
            };
            assert_eq!(&have, want, "{name}: {field}");
        }
    }
}
