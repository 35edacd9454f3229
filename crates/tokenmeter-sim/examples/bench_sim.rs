//! `cargo xtask bench sim`: how many concurrent streams and events per second the
//! simulator sustains on this machine, and how late it writes tokens against its own
//! schedule (written − due, from its truth record). Prints figures, asserts nothing.
//!
//! The simulator runs on its own runtime (two workers, as `tokenmeter-sim` does);
//! the client runs on another runtime in the same process, as a browser would in
//! another process: over h2c (HTTP/2 without TLS, 100 streams per connection),
//! reading every frame, on the same two cores. The figures include the cost of that
//! client competing for the CPU.
//!
//! Usage: `cargo xtask bench sim [STREAMS ...]` (default 100 500 1000).

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::join_all;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokenmeter_sim::{engine::EngineParams, SimConfig, SimServer};

const STREAMS_PER_CONNECTION: usize = 100;
/// One token per stream every 20 ms: 50 events/s per stream.
const STEP_MS: f64 = 20.0;
/// Tokens per stream: a 5-second run at 20 ms per step.
const TOKENS: u64 = 250;

fn main() {
    let levels: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let levels = if levels.is_empty() {
        vec![100, 500, 1000]
    } else {
        levels
    };
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "{:>8} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "streams", "events/s", "target/s", "late p50", "late p99", "late max", "completed", "wall"
    );
    for n_streams in levels {
        let sim = server_runtime.block_on(start_sim(n_streams));
        client_runtime.block_on(run_level(&sim, n_streams));
        server_runtime.block_on(async move {
            sim.shutdown().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        });
    }
    println!("lateness = written − due per token, µs, from the simulator's truth record");
}

async fn start_sim(n_streams: usize) -> SimServer {
    let defaults = SimConfig::default();
    let config = SimConfig {
        port: 0,
        truth_capacity: n_streams,
        engine: EngineParams {
            max_batch: n_streams,
            decode_base_ms: STEP_MS,
            decode_per_seq_ms: 0.0,
            prefill_base_ms: 0.0,
            prefill_per_token_ms: 0.0,
            jitter: 0.0,
            ..defaults.engine
        },
        ..defaults
    };
    SimServer::start(config)
        .await
        .expect("the simulator starts")
}

async fn run_level(sim: &SimServer, n_streams: usize) {
    let body = serde_json::json!({
        "model": "tokenmeter-sim",
        "messages": [{"role": "user", "content": "bench"}],
        "max_tokens": TOKENS,
        "stream": true,
    })
    .to_string();

    let n_connections = n_streams.div_ceil(STREAMS_PER_CONNECTION);
    let mut senders = Vec::new();
    for _ in 0..n_connections {
        let tcp = tokio::net::TcpStream::connect(sim.addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(1 << 20)
            .initial_connection_window_size(1 << 24)
            .handshake(TokioIo::new(tcp))
            .await
            .expect("h2c handshake");
        tokio::spawn(conn);
        senders.push(sender);
    }
    let started = Instant::now();
    let streams = (0..n_streams).map(|i| {
        let mut sender = senders[i % n_connections].clone();
        let request = Request::post(format!("http://{}/v1/chat/completions", sim.addr))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.clone())))
            .unwrap();
        tokio::spawn(async move {
            let response = sender.send_request(request).await.ok()?;
            let mut body = response.into_body();
            let mut n_frames = 0u64;
            while let Some(frame) = body.frame().await {
                frame.ok()?;
                n_frames += 1;
            }
            Some(n_frames)
        })
    });
    let results = join_all(streams).await;
    let wall = started.elapsed();
    let completed = results.iter().filter(|r| matches!(r, Ok(Some(_)))).count();

    let truth = sim.truth.snapshot();
    let mut lateness: Vec<u64> = truth.iter().flat_map(|r| r.lateness_us()).collect();
    lateness.sort_unstable();
    let pick = |q: f64| {
        lateness
            .get(((lateness.len().max(1) - 1) as f64 * q) as usize)
            .copied()
            .unwrap_or(0)
    };
    // Events per second over the span in which tokens were due.
    let dues: Vec<u64> = truth
        .iter()
        .flat_map(|r| r.tokens.iter().map(|t| t.due_us))
        .collect();
    let span_s = match (dues.iter().min(), dues.iter().max()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e6,
        _ => f64::NAN,
    };
    let events_per_s = lateness.len() as f64 / span_s;
    let target = n_streams as f64 * 1000.0 / STEP_MS;
    println!(
        "{n_streams:>8} {events_per_s:>12.0} {target:>12.0} {:>8} µs {:>7} µs {:>7} µs {:>6}/{n_streams} {:>8.1}s",
        pick(0.5),
        pick(0.99),
        lateness.last().copied().unwrap_or(0),
        completed,
        wall.as_secs_f64()
    );
    drop(senders);
}
