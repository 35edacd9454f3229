//! The simulator's command line, which is also its configuration in tests.

use std::net::IpAddr;

use clap::Parser;

use crate::{engine::EngineParams, fault::Fault, server::metrics::MetricsNames};

/// An OpenAI-compatible streaming server that behaves like a continuous-batching
/// inference engine, with ground truth for every token it sends.
#[derive(Clone, Debug, Parser)]
#[command(name = "tokenmeter-sim", version)]
pub struct SimConfig {
    /// Address to bind (loopback by default: it is a test server).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to bind (0 picks a free one and prints it).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Serve HTTPS with a self-signed certificate made at start: HTTP/2 (and
    /// HTTP/1.1) by ALPN, so a browser can open more than six streams at once.
    #[arg(long)]
    pub tls: bool,
    /// HTTP/2 streams allowed per connection.
    #[arg(long, default_value_t = 4096)]
    pub h2_max_streams: u32,
    /// Require this API key (`Authorization: Bearer KEY` or `api-key: KEY`).
    #[arg(long)]
    pub api_key: Option<String>,
    /// Model IDs served (`GET /v1/models`); other names get a 404.
    #[arg(long = "model", default_values_t = [String::from("tokenmeter-sim")])]
    pub models: Vec<String>,
    /// Accept any model name.
    #[arg(long)]
    pub any_model: bool,
    /// Apply a fault to every request (repeatable; see the README for the kinds).
    #[arg(long = "fault", value_parser = Fault::parse)]
    pub faults: Vec<Fault>,
    /// Apply the `--fault` faults to every Nth completion request only (1: every
    /// one), so that a run mixes faulty answers with good ones.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub fault_every: u64,
    /// Leave out `Access-Control-Max-Age`, so browsers preflight (nearly) every request.
    #[arg(long)]
    pub no_cors_max_age: bool,
    /// Send no CORS headers at all, as a server not set up for browsers: every
    /// browser request from another origin fails without a response.
    #[arg(long)]
    pub no_cors: bool,
    /// Whose names `GET /metrics` uses for the engine's state (`none`: no
    /// `/metrics`, a 404).
    #[arg(long, value_enum, default_value_t = MetricsNames::Vllm)]
    pub metrics_names: MetricsNames,
    /// Send no CORS headers on `/metrics` alone, as a server whose metrics are not
    /// meant for browsers: the page cannot read them, and the run goes on.
    #[arg(long)]
    pub no_metrics_cors: bool,
    /// Leave out `Timing-Allow-Origin`, as most real servers do: browsers then hide
    /// the protocol and when each request left them (Resource Timing's details).
    #[arg(long)]
    pub no_timing_allow_origin: bool,
    /// Answer CORS preflights (OPTIONS) only after this many ms, as a distant server
    /// would: the cost of preflights becomes visible to the page.
    #[arg(long, default_value_t = 0.0)]
    pub preflight_delay_ms: f64,
    /// Report llama.cpp's `timings` (prompt_ms, predicted_ms and their token counts)
    /// in the last chunk of every stream, as llama.cpp's server does.
    #[arg(long)]
    pub timings: bool,
    /// Hold every completion request this many ms before the engine sees it, as a
    /// gateway or proxy in front of the server would: time the server's own
    /// `timings` do not count.
    #[arg(long, default_value_t = 0.0)]
    pub gateway_delay_ms: f64,
    /// A network between client and server: its round trip, ms, half each way (a
    /// request waits half before the server sees it; the response's headers and
    /// every piece of its body arrive half after they were written). 0: none.
    #[arg(long, default_value_t = 0.0)]
    pub rtt_ms: f64,
    /// How long a `hang` request holds back its headers, and a `done-hold` body stays
    /// open after `[DONE]`, seconds.
    #[arg(long, default_value_t = 120.0)]
    pub hang_s: f64,
    /// Requests kept in the truth record (oldest dropped first).
    #[arg(long, default_value_t = 20_000)]
    pub truth_capacity: usize,
    /// Longest generation, whatever max_tokens asks.
    #[arg(long, default_value_t = 4096)]
    pub max_output_tokens: u64,
    /// The model's own end: answers stop after this many tokens (finish_reason
    /// `stop`) whatever `max_tokens` asks, unless the request sends `ignore_eos`
    /// or a larger `min_tokens` (as vLLM and SGLang read them).
    #[arg(long)]
    pub eos_after: Option<u64>,
    /// Tokens the prompt (prefix) cache holds, in blocks of 16, least recently used
    /// evicted first: a prompt's leading blocks seen before cost no prefill, and
    /// `usage.prompt_tokens_details.cached_tokens` says how many (0: no cache).
    #[arg(long, default_value_t = 1 << 20)]
    pub prompt_cache_tokens: u64,
    #[command(flatten)]
    pub engine: EngineParams,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig::parse_from(["tokenmeter-sim"])
    }
}
