//! tokenmeter's page: a Leptos (CSR) app compiled to WebAssembly.
//!
//! The page presents; it never measures. Sending and timing requests belongs to the
//! engine (a Web Worker, so rendering can never delay a timestamp) and every figure
//! is computed by `tokenmeter-core`. See ARCHITECTURE.md.

mod app;
mod config;
mod glossary;

pub use app::App;

/// The page's default target: the simulator that `cargo xtask serve` starts beside it.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8000/v1";
