//! tokenmeter-sim: an OpenAI-compatible streaming server that behaves like a
//! continuous-batching inference engine, and knows the truth about every token.
//!
//! - [`engine`]: the latency model (batching, queueing, prefill, decode) on its own thread;
//! - [`cache`]: the prompt (prefix) cache, which spares a prompt's known blocks prefill;
//! - [`server`]: routes, CORS, streamed bodies, HTTP/1.1, HTTP/2 and TLS;
//! - [`connection`]: a connection and its streams in one task, one write per step;
//! - [`fault`]: the faults a request can be given;
//! - [`truth`]: when each token was due and when it was written;
//! - [`text`]: the generated text (mostly Chinese) and the prompt-length estimate.
//!
//! Tests start it in-process with `SimServer::start` on port 0.

pub mod cache;
pub mod config;
pub mod connection;
pub mod engine;
pub mod fault;
pub mod server;
pub mod text;
pub mod tls;
pub mod truth;

pub use config::SimConfig;
pub use server::SimServer;
