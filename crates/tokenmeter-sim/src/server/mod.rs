//! The HTTP side of the simulator, one job per module:
//!
//! - this module: [`SimServer`], the accept loop (plain HTTP/1.1 + h2c, or TLS with
//!   HTTP/2 and HTTP/1.1 by ALPN), one task per connection;
//! - [`routes`]: the routes, CORS on every answer, the simulator's own endpoints;
//! - [`completion`]: a completion request: what it asks for, the faults that answer
//!   early, the job handed to the engine;
//! - [`stream`]: the streamed body, token by token, written at each step's end;
//! - [`hostile`]: the answers of hostile servers, made as they are read;
//! - [`metrics`]: `GET /metrics`, the engine's state under a real server's names;
//! - [`wire`]: what each API's stream says (OpenAI's chunks, Responses, Messages);
//! - [`whole`]: the non-streamed answer.

mod completion;
mod gateway;
mod hostile;
pub mod metrics;
mod network;
mod routes;
mod stream;
mod whole;
mod wire;

use std::{
    io,
    net::SocketAddr,
    sync::{atomic::AtomicU64, Arc},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use hyper_util::{rt::TokioIo, server::conn::auto, service::TowerToHyperService};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};
use tower::ServiceExt;

use crate::{
    config::SimConfig,
    connection::{self, Gate, GatedIo},
    engine::Engine,
    truth::TruthStore,
};

/// What every handler shares.
struct AppState {
    config: SimConfig,
    engine: Engine,
    cache: crate::cache::PromptCache,
    cache_counters: metrics::CacheCounters,
    truth: Arc<TruthStore>,
    next_id: AtomicU64,
    created_unix_s: u64,
}

/// A running simulator.
pub struct SimServer {
    pub addr: SocketAddr,
    pub tls: bool,
    /// The self-signed certificate (DER) when serving TLS, for clients to trust.
    pub cert_der: Option<Vec<u8>>,
    pub truth: Arc<TruthStore>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl SimServer {
    /// Binds and starts serving in the background of the current tokio runtime.
    // Long: the simulator's routes and listener set up in one place.
    pub async fn start(config: SimConfig) -> io::Result<SimServer> {
        let listener = TcpListener::bind((config.host, config.port)).await?;
        let addr = listener.local_addr()?;
        let (tls, cert_der) = if config.tls {
            let (acceptor, der) = crate::tls::acceptor()?;
            (Some(acceptor), Some(der))
        } else {
            (None, None)
        };
        let epoch = Instant::now();
        let truth = Arc::new(TruthStore::new(epoch, config.truth_capacity));
        let state = Arc::new(AppState {
            engine: Engine::start(config.engine),
            cache: crate::cache::PromptCache::new(config.prompt_cache_tokens),
            cache_counters: metrics::CacheCounters::default(),
            truth: truth.clone(),
            next_id: AtomicU64::new(0),
            created_unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            config,
        });
        let router = routes::router(state.clone());
        let (shutdown, mut stop) = oneshot::channel::<()>();
        let h2_max_streams = state.config.h2_max_streams;
        let task = tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok(pair) => pair,
                        // Out of file descriptors and the like: keep serving the others.
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    },
                    _ = &mut stop => break,
                };
                // Tokens must leave as soon as they are written.
                let _ = stream.set_nodelay(true);
                // Each connection's writers and socket share a gate (see `connection`).
                let gate = Gate::new(state.engine.released().clone(), state.truth.clone());
                let service = TowerToHyperService::new(router.clone().map_request({
                    let gate = gate.clone();
                    move |mut request: hyper::Request<hyper::body::Incoming>| {
                        request.extensions_mut().insert(gate.clone());
                        request
                    }
                }));
                let tls = tls.clone();
                tokio::spawn(connection::drive(move |executor| async move {
                    let mut builder = auto::Builder::new(executor);
                    builder
                        .http2()
                        .max_concurrent_streams(h2_max_streams)
                        .initial_stream_window_size(1 << 20)
                        .initial_connection_window_size(1 << 24);
                    let _ = match tls {
                        Some(acceptor) => match acceptor.accept(stream).await {
                            Ok(tls_stream) => {
                                builder
                                    .serve_connection(
                                        TokioIo::new(GatedIo::new(tls_stream, gate)),
                                        service,
                                    )
                                    .await
                            }
                            Err(_) => return,
                        },
                        None => {
                            builder
                                .serve_connection(TokioIo::new(GatedIo::new(stream, gate)), service)
                                .await
                        }
                    };
                }));
            }
        });
        Ok(SimServer {
            addr,
            tls: cert_der.is_some(),
            cert_der,
            truth,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// The OpenAI base URL, e.g. `http://127.0.0.1:8000/v1`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}/v1", self.addr)
    }

    /// Stops accepting connections and waits for the accept loop to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.shutdown.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}
