//! `cargo xtask bench core`: the cost of parsing and accounting one event, the work
//! the engine does per token on the hot path. Prints figures, asserts nothing.
//!
//! A stream of 1,000 content events (CJK text, like our users') is fed to a
//! `RecordBuilder` in chunks of several sizes: one event per chunk (a server that
//! flushes per token), 64-byte chunks (events split across reads, worst case for
//! the line buffer) and 16 KiB chunks (a fast local server, many events per read).

use std::{hint::black_box, time::Instant};

use tokenmeter_core::{RecordBuilder, RecordOptions, RequestStart, StreamEnd};

const N_EVENTS: usize = 1_000;

fn stream() -> Vec<u8> {
    let mut body = String::new();
    body.push_str("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n");
    for i in 0..N_EVENTS {
        let text = ["预填", "阶段", "解码", "吞吐", "token"][i % 5];
        body.push_str(&format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
    );
    body.push_str(&format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":20,\"completion_tokens\":{N_EVENTS}}}}}\n\n"));
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

fn run(body: &[u8], chunks: &[&[u8]]) -> u64 {
    let mut b = RecordBuilder::new(
        RequestStart {
            id: 0,
            concurrency: 1,
            warmup: false,
            wanted_us: 0,
            sent_us: 0,
        },
        RecordOptions::default(),
    );
    b.on_headers(200, Some("text/event-stream"), None, 1);
    for (i, chunk) in chunks.iter().enumerate() {
        b.on_bytes(chunk, 10 + i as u64);
    }
    let record = b.finish(StreamEnd::Complete, 10 + chunks.len() as u64);
    assert!(
        record.is_ok() && record.n_out == Some(N_EVENTS as u64),
        "{body:?}"
    );
    record.n_token_events
}

fn main() {
    let seconds = if std::env::var("TOKENMETER_BENCH_SMOKE").as_deref() == Ok("1") {
        0.005
    } else {
        0.5
    };
    let body = stream();
    let per_event: Vec<&[u8]> = body
        .split_inclusive(|&b| b == b'\n')
        .collect::<Vec<_>>()
        .chunks(2)
        .map(|pair| {
            let start = pair[0].as_ptr() as usize - body.as_ptr() as usize;
            let len: usize = pair.iter().map(|p| p.len()).sum();
            &body[start..start + len]
        })
        .collect();
    let cases: [(&str, Vec<&[u8]>); 3] = [
        ("one event per chunk", per_event),
        ("64-byte chunks", body.chunks(64).collect()),
        ("16 KiB chunks", body.chunks(16 * 1024).collect()),
    ];
    println!("stream: {N_EVENTS} content events, {} bytes", body.len());
    println!(
        "{:<22} {:>14} {:>14} {:>12}",
        "chunking", "ns per event", "MB/s", "repeats"
    );
    let mut slowest_ns = 0.0f64;
    for (name, chunks) in &cases {
        // Warm up, then repeat for about half a second (a few milliseconds in the
        // test command's smoke run, `TOKENMETER_BENCH_SMOKE=1`).
        black_box(run(&body, chunks));
        let started = Instant::now();
        let mut repeats = 0u64;
        while started.elapsed().as_secs_f64() < seconds || repeats == 0 {
            black_box(run(&body, chunks));
            repeats += 1;
        }
        let secs = started.elapsed().as_secs_f64();
        let ns_per_event = secs * 1e9 / (repeats as f64 * N_EVENTS as f64);
        let mb_per_s = body.len() as f64 * repeats as f64 / secs / 1e6;
        println!("{name:<22} {ns_per_event:>14.0} {mb_per_s:>14.1} {repeats:>12}");
        slowest_ns = slowest_ns.max(ns_per_event);
    }
    println!(
        "at 50,000 events/s, parsing and accounting take {:.1}% of one core (slowest chunking, native; wasm is slower)",
        50_000.0 * slowest_ns / 1e9 * 100.0
    );
}
