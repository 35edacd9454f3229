//! tokenmeter's page and engine: a Leptos (CSR) app compiled to WebAssembly, and
//! the engine that the same module runs in a Web Worker ([`engine::host`]).
//!
//! The page presents; it never measures. Sending and timing requests belongs to the
//! engine, in a Web Worker, so rendering can never delay a timestamp, and every
//! figure is computed by `tokenmeter-core`. See ARCHITECTURE.md.

mod app;
mod config;
pub mod engine;
mod files;
mod glossary;
mod history;
pub mod models;
pub mod protocol;
mod results;
mod run;
mod screen;
mod widgets;
mod worker;

pub use app::App;

/// The page's default target: the simulator that `cargo xtask serve` starts beside it.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8000/v1";
