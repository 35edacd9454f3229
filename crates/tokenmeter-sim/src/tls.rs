//! TLS for `--tls`: a self-signed certificate made at start (nothing downloaded, no
//! file to manage) and ALPN offering HTTP/2 first, so browsers multiplex every
//! stream over one connection instead of stopping at six HTTP/1.1 connections.

use std::{io, sync::Arc};

use rustls::{
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer},
    ServerConfig,
};
use tokio_rustls::TlsAcceptor;

/// The acceptor, and the certificate (DER) for clients that want to trust it.
pub fn acceptor() -> io::Result<(TlsAcceptor, Vec<u8>)> {
    let certified = rcgen::generate_simple_self_signed(vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ])
    .map_err(io::Error::other)?;
    let cert_der = certified.cert.der().to_vec();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(cert_der.clone())], key)
        .map_err(io::Error::other)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), cert_der))
}
