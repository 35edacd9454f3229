//! The SSE parser against every way of splitting recorded streams: the events (and
//! the measured text) must not depend on where the network cut the bytes. Then a
//! bounded fuzz: arbitrary bytes, arbitrary splits, tiny limits, never a panic.

#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use tokenmeter_core::{
    interpret, schema::EndpointKind, RecordBuilder, RecordOptions, RequestStart, SseEvent,
    SseLimits, SseParser, StreamEnd,
};

/// Streams as servers send them: CJK content, CRLF, comments, multi-line data,
/// event/id/retry fields, a BOM, a final event without a blank line.
fn recorded_streams() -> Vec<Vec<u8>> {
    let chunk = |text: &str| {
        format!(
            "data: {}\n\n",
            serde_json::json!({"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]})
        )
    };
    let vllm = format!(
        "data: {{\"id\":\"chatcmpl-1\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}}}}]}}\n\n{}{}{}data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":5,\"completion_tokens\":3}}}}\n\ndata: [DONE]\n\n",
        chunk("预填"),
        chunk("充，"),
        chunk("decode 阶段"),
    );
    let crlf = vllm.replace('\n', "\r\n");
    let comments = format!(
        ": OPENROUTER PROCESSING\n\n{}: keep-alive\n\n{}data: [DONE]\n\n",
        chunk("你好"),
        chunk("世界🌏")
    );
    let fields = "\u{feff}event: delta\nid: 1\nretry: 3000\ndata: {\"choices\":[{\"delta\":{\"content\":\"多行\"}}]}\n\nevent: note\ndata: line one\ndata: line two 第二行\n\nid: 2\ndata: [DONE]".to_owned();
    let cr_only = vllm.replace('\n', "\r");
    vec![
        vllm.into_bytes(),
        crlf.into_bytes(),
        comments.into_bytes(),
        fields.into_bytes(),
        cr_only.into_bytes(),
    ]
}

/// An event's `event`, `data`, `id` and `retry` fields (its timestamp left out).
type Fields = (Option<String>, String, Option<String>, Option<u64>);

/// Parses `stream` cut at `cuts` (sorted positions).
fn parse_split(stream: &[u8], cuts: &[usize]) -> Vec<Fields> {
    let mut parser = SseParser::new(SseLimits::default());
    let mut events: Vec<SseEvent> = Vec::new();
    let mut start = 0;
    for (i, &cut) in cuts
        .iter()
        .chain(std::iter::once(&stream.len()))
        .enumerate()
    {
        parser
            .feed(&stream[start..cut], i as u64, &mut events)
            .unwrap();
        start = cut;
    }
    parser.finish(u64::MAX, &mut events).unwrap();
    events
        .into_iter()
        .map(|e| (e.event, e.data, e.id.map(|id| id.to_string()), e.retry_ms))
        .collect()
}

/// The answer text that a record measures from `stream` cut at `cuts`.
fn text_split(stream: &[u8], cuts: &[usize]) -> (Option<String>, u64) {
    let start = RequestStart {
        id: 0,
        concurrency: 1,
        warmup: false,
        wanted_us: 0,
        sent_us: 0,
    };
    let mut b = RecordBuilder::new(
        start,
        RecordOptions {
            keep_text: true,
            ..RecordOptions::default()
        },
    );
    b.on_headers(200, Some("text/event-stream"), None, 1);
    let mut from = 0;
    for (i, &cut) in cuts
        .iter()
        .chain(std::iter::once(&stream.len()))
        .enumerate()
    {
        b.on_bytes(&stream[from..cut], 10 + i as u64);
        from = cut;
    }
    let r = b.finish(StreamEnd::Complete, 1_000);
    (r.output_text, r.n_token_events)
}

#[test]
fn every_single_and_double_split_gives_the_same_events() {
    for stream in recorded_streams() {
        let whole = parse_split(&stream, &[]);
        assert!(!whole.is_empty());
        let whole_text = text_split(&stream, &[]);
        for a in 0..=stream.len() {
            assert_eq!(parse_split(&stream, &[a]), whole, "split at {a}");
            assert_eq!(text_split(&stream, &[a]), whole_text, "split at {a}");
            // Every pair is quadratic: take every pair within a window around `a`,
            // which covers splits inside one line end or one character.
            for b in a..=(a + 8).min(stream.len()) {
                assert_eq!(parse_split(&stream, &[a, b]), whole, "split at {a} and {b}");
            }
        }
    }
}

#[test]
fn one_byte_at_a_time() {
    for stream in recorded_streams() {
        let cuts: Vec<usize> = (1..stream.len()).collect();
        assert_eq!(parse_split(&stream, &cuts), parse_split(&stream, &[]));
        assert_eq!(text_split(&stream, &cuts), text_split(&stream, &[]));
    }
}

#[test]
fn the_recorded_streams_mean_what_they_say() {
    let streams = recorded_streams();
    assert_eq!(
        text_split(&streams[0], &[]),
        (Some("预填充，decode 阶段".into()), 3)
    );
    assert_eq!(text_split(&streams[1], &[]), text_split(&streams[0], &[]));
    assert_eq!(text_split(&streams[4], &[]), text_split(&streams[0], &[]));
    assert_eq!(text_split(&streams[2], &[]), (Some("你好世界🌏".into()), 2));
    let fields = parse_split(&streams[3], &[]);
    assert_eq!(fields.len(), 3);
    assert_eq!(fields[0].0.as_deref(), Some("delta"));
    assert_eq!(fields[0].3, Some(3000));
    assert_eq!(fields[1].1, "line one\nline two 第二行");
    assert_eq!(fields[2], (None, "[DONE]".into(), Some("2".into()), None));
}

fn cuts_strategy(max_len: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0..=max_len, 0..24).prop_map(|mut cuts| {
        cuts.sort_unstable();
        cuts
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_split_of_a_recorded_stream_gives_the_same_events(which in 0usize..5, cuts in cuts_strategy(600)) {
        let stream = &recorded_streams()[which];
        let cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(stream.len())).collect();
        prop_assert_eq!(parse_split(stream, &cuts), parse_split(stream, &[]));
        prop_assert_eq!(text_split(stream, &cuts), text_split(stream, &[]));
    }

    /// Fuzz: arbitrary bytes, arbitrary splits and tiny limits never panic, and the
    /// result never depends on the split.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), cuts in cuts_strategy(2048), limit in 1usize..64) {
        let cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
        let run = |cuts: &[usize]| {
            let mut parser = SseParser::new(SseLimits { max_line_bytes: limit * 8, max_event_bytes: limit * 16 });
            let mut events = Vec::new();
            let mut start = 0;
            let mut result = Ok(());
            for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
                result = result.and_then(|_| parser.feed(&bytes[start..cut], 0, &mut events));
                start = cut;
            }
            result = result.and_then(|_| parser.finish(0, &mut events));
            for event in &events {
                for kind in EndpointKind::ALL {
                    let _ = interpret(kind, &event.data);
                }
            }
            (result.is_ok(), events.into_iter().map(|e| e.data).collect::<Vec<_>>())
        };
        let (ok_whole, events_whole) = run(&[]);
        let (ok_split, events_split) = run(&cuts);
        prop_assert_eq!(ok_whole, ok_split);
        if ok_whole {
            prop_assert_eq!(events_whole, events_split);
        }
        let _ = text_split(&bytes, &cuts);
    }

    #[test]
    fn interpret_never_panics(data in ".{0,256}") {
        for kind in EndpointKind::ALL {
            let _ = interpret(kind, &data);
        }
    }
}
