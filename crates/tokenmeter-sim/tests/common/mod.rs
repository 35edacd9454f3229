//! A minimal HTTP client for the simulator's tests and benchmark: hyper over a
//! loopback TCP connection (HTTP/1.1), or over TLS with ALPN h2, with every body
//! frame stamped on arrival.

#![allow(dead_code)] // Each test binary uses a different part of this module.

use std::{net::SocketAddr, sync::Arc, time::Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokenmeter_sim::{engine::EngineParams, SimConfig, SimServer};
use tokio::net::TcpStream;

/// Starts a simulator on 127.0.0.1 with a free port.
pub async fn start(mut config: SimConfig) -> SimServer {
    config.port = 0;
    SimServer::start(config)
        .await
        .expect("the simulator starts")
}

/// A config with a fast, jitter-free engine, so tests finish quickly and exactly.
pub fn fast_config() -> SimConfig {
    let defaults = SimConfig::default();
    SimConfig {
        engine: EngineParams {
            decode_base_ms: 2.0,
            decode_per_seq_ms: 0.2,
            prefill_base_ms: 1.0,
            prefill_per_token_ms: 0.0,
            jitter: 0.0,
            ..defaults.engine
        },
        ..defaults
    }
}

/// A response as it arrived.
pub struct Received {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub sent_at: Instant,
    pub headers_at: Instant,
    /// Body frames and when each arrived.
    pub frames: Vec<(Instant, Bytes)>,
    /// Set when reading the body failed (a cut connection).
    pub body_error: Option<String>,
}

impl Received {
    pub fn body(&self) -> Vec<u8> {
        self.frames
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect()
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body()).expect("a UTF-8 body")
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body()).expect("a JSON body")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `data:` payloads of the stream, in order.
    pub fn events(&self) -> Vec<String> {
        self.text()
            .replace("\r\n", "\n")
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: ").map(str::to_owned))
            .collect()
    }
}

pub fn chat_body(max_tokens: u64, stream: bool) -> Value {
    serde_json::json!({
        "model": "tokenmeter-sim",
        "messages": [{"role": "user", "content": "请用300字介绍大模型推理中的prefill和decode两个阶段"}],
        "max_tokens": max_tokens,
        "stream": stream,
        "stream_options": {"include_usage": true},
    })
}

/// Sends one request on a new HTTP/1.1 connection and reads the whole response.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Received {
    let stream = TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let request = build(method, &format!("http://{addr}{path}"), headers, body);
    let sent_at = Instant::now();
    let response = sender.send_request(request).await.expect("a response");
    read(response, sent_at).await
}

/// POSTs a chat completion on a new HTTP/1.1 connection.
pub async fn post_chat(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> Received {
    send(addr, "POST", "/v1/chat/completions", headers, Some(body)).await
}

pub fn build(
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder().method(method).uri(uri);
    let authority = uri.split('/').nth(2).unwrap_or("localhost").to_owned();
    builder = builder.header("host", authority);
    if body.is_some() {
        builder = builder.header("content-type", "application/json");
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    builder.body(Full::new(bytes)).expect("a request")
}

pub async fn read(response: Response<Incoming>, sent_at: Instant) -> Received {
    let headers_at = Instant::now();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut body = response.into_body();
    let mut frames = Vec::new();
    let mut body_error = None;
    loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    frames.push((Instant::now(), data));
                }
            }
            Some(Err(err)) => {
                body_error = Some(err.to_string());
                break;
            }
            None => break,
        }
    }
    Received {
        status,
        headers,
        sent_at,
        headers_at,
        frames,
        body_error,
    }
}

/// An HTTP/2 connection over TLS, trusting only the simulator's own certificate.
pub async fn h2_connect(
    server: &SimServer,
) -> hyper::client::conn::http2::SendRequest<Full<Bytes>> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(
            server.cert_der.clone().expect("a TLS server"),
        ))
        .unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = connector.connect(name, tcp).await.expect("TLS handshake");
    assert_eq!(
        tls.get_ref().1.alpn_protocol(),
        Some(&b"h2"[..]),
        "ALPN chose h2"
    );
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .expect("h2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
}

/// The simulator's truth document.
pub async fn truth(addr: SocketAddr) -> Value {
    send(addr, "GET", "/v1/sim/truth", &[], None).await.json()
}

/// Feeds a received response to tokenmeter-core, timestamps in µs since `origin`,
/// as the page's engine does: reading stops once the stream said it was over (or
/// failed), and the request ends then.
pub fn measure(
    received: &Received,
    origin: Instant,
    keep_text: bool,
) -> tokenmeter_core::schema::RequestRecord {
    measure_kind(
        received,
        origin,
        keep_text,
        tokenmeter_core::schema::EndpointKind::Chat,
    )
}

/// [`measure`] of a `kind` stream.
pub fn measure_kind(
    received: &Received,
    origin: Instant,
    keep_text: bool,
    kind: tokenmeter_core::schema::EndpointKind,
) -> tokenmeter_core::schema::RequestRecord {
    use tokenmeter_core::{RecordBuilder, RecordOptions, RequestStart, StreamEnd};
    let us = |t: Instant| t.saturating_duration_since(origin).as_micros() as u64;
    let mut builder = RecordBuilder::new(
        RequestStart {
            id: 0,
            concurrency: 1,
            warmup: false,
            wanted_us: us(received.sent_at),
            sent_us: us(received.sent_at),
        },
        RecordOptions {
            keep_text,
            endpoint: kind,
            ..RecordOptions::default()
        },
    );
    builder.on_headers(
        received.status,
        received.header("content-type"),
        received.header("retry-after"),
        us(received.headers_at),
    );
    let mut end_at = received.headers_at;
    for (at, bytes) in &received.frames {
        builder.on_bytes(bytes, us(*at));
        end_at = *at;
        if builder.is_complete() || builder.has_stream_error() {
            break;
        }
    }
    let end = match &received.body_error {
        Some(message) => StreamEnd::NetworkError {
            message: message.clone(),
        },
        None => StreamEnd::Complete,
    };
    builder.finish(end, us(end_at))
}

/// The truth document, fetched over an existing HTTP/2 connection.
pub async fn truth_over(
    server: &SimServer,
    sender: &hyper::client::conn::http2::SendRequest<Full<Bytes>>,
) -> Value {
    let uri = format!("https://127.0.0.1:{}/v1/sim/truth", server.addr.port());
    let response = sender
        .clone()
        .send_request(build("GET", &uri, &[], None))
        .await
        .expect("the truth");
    read(response, Instant::now()).await.json()
}

/// One request read as the page's engine reads it, for servers that may never end
/// their answer: each frame is fed to tokenmeter-core on arrival, reading stops once
/// the record says the stream is over or failed (past a limit included), or at
/// `timeout`, and the connection is then dropped. Returns the record and the body
/// bytes read.
pub async fn measure_live(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &Value,
    timeout: std::time::Duration,
) -> (tokenmeter_core::schema::RequestRecord, u64) {
    use tokenmeter_core::{RecordBuilder, RecordOptions, RequestStart, ResponseLimits, StreamEnd};
    let origin = Instant::now();
    let us = |t: Instant| t.saturating_duration_since(origin).as_micros() as u64;
    let asked = body["max_tokens"].as_u64().map(|n| n as u32);
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
            response_limits: ResponseLimits::default().for_asked(asked),
            ..RecordOptions::default()
        },
    );
    let deadline = tokio::time::Instant::now() + timeout;
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let request = build(
        "POST",
        &format!("http://{addr}/v1/chat/completions"),
        headers,
        Some(body),
    );
    let response = match tokio::time::timeout_at(deadline, sender.send_request(request)).await {
        Err(_) => return (builder.finish(StreamEnd::TimedOut, us(Instant::now())), 0),
        Ok(Err(err)) => {
            let end = StreamEnd::NetworkError {
                message: err.to_string(),
            };
            return (builder.finish(end, us(Instant::now())), 0);
        }
        Ok(Ok(response)) => response,
    };
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &hyper::header::HeaderValue| v.to_str().ok())
    };
    builder.on_headers(
        response.status().as_u16(),
        header("content-type"),
        header("retry-after"),
        us(Instant::now()),
    );
    let mut body = response.into_body();
    let mut n_bytes = 0;
    let end = loop {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => break StreamEnd::TimedOut,
            Ok(None) => break StreamEnd::Complete,
            Ok(Some(Err(err))) => {
                break StreamEnd::NetworkError {
                    message: err.to_string(),
                }
            }
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    n_bytes += data.len() as u64;
                    builder.on_bytes(&data, us(Instant::now()));
                }
                if builder.is_complete() || builder.has_stream_error() {
                    break StreamEnd::Complete;
                }
            }
        }
    };
    (builder.finish(end, us(Instant::now())), n_bytes)
}
