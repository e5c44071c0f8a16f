//! TLS for the server engines' own connections (rustls with the ring provider over the blocking
//! sockets, no OpenSSL): the modes users know from libpq's `sslmode` (onto which the mysql client's
//! `ssl-mode` maps), the configuration built once per engine (a CA file or the system's roots, a
//! client certificate), the verifiers of `prefer`/`require` (unverified) and `verify-ca` (the chain
//! only), the handshake run to its end so that a certificate problem is named, what a connection
//! negotiated (the `Transport` a result records), and the certificate hash of SCRAM's channel
//! binding.

use std::io;
use std::net::TcpStream;

use crate::coop::Coop;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore,
    SignatureScheme, StreamOwned,
};
use serde::Serialize;

/// How much TLS a connection asks for, in libpq's terms (the mysql client's map onto them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    Disable,
    /// Plain first; TLS only if the server refuses a plain connection.
    Allow,
    /// TLS when the server offers it, unverified; plain otherwise.
    Prefer,
    /// TLS or nothing; the certificate is not checked.
    Require,
    /// TLS with a certificate signed by a trusted CA, whatever its host name.
    VerifyCa,
    /// TLS with a trusted certificate issued for the host connected to.
    VerifyFull,
}

impl Mode {
    pub fn required(self) -> bool {
        self >= Mode::Require
    }
}

/// The CA certificates a verifying mode trusts.
#[derive(Clone, Debug)]
pub enum Roots {
    File(PathBuf),
    /// The operating system's trusted roots (`sslrootcert=system`).
    System,
}

/// What TLS a DSN asks for: the mode and the files behind it.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    pub mode: Mode,
    pub roots: Option<Roots>,
    /// Client certificate (chain) and its private key, PEM.
    pub client: Option<(PathBuf, PathBuf)>,
}

/// TLS ready to use: the mode and, unless TLS is disabled, the rustls configuration (built
/// once per engine, so that a missing or unreadable file is reported before anything runs).
#[derive(Clone)]
pub struct Tls {
    pub mode: Mode,
    config: Option<Arc<ClientConfig>>,
}

impl Tls {
    pub fn disabled() -> Tls {
        Tls {
            mode: Mode::Disable,
            config: None,
        }
    }

    pub fn new(opts: &TlsOptions) -> Result<Tls, String> {
        if opts.mode == Mode::Disable {
            return Ok(Tls::disabled());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match (opts.mode, &opts.roots) {
            (Mode::VerifyCa | Mode::VerifyFull, None) => {
                return Err("a verifying TLS mode needs the CA's certificate: give its file, or 'system' for the system's trusted roots".into());
            }
            (Mode::VerifyCa | Mode::VerifyFull, Some(roots)) => {
                let webpki = WebPkiServerVerifier::builder_with_provider(
                    Arc::new(root_store(roots)?),
                    provider.clone(),
                )
                .build()
                .map_err(|e| format!("CA certificates: {e}"))?;
                if opts.mode == Mode::VerifyCa {
                    Arc::new(ChainOnly(webpki))
                } else {
                    webpki
                }
            }
            _ => Arc::new(Unverified(provider.clone())),
        };
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &opts.client {
            Some((cert, key)) => {
                let chain = read_certs(cert)?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| format!("client key {}: {e}", key.display()))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("client certificate {}: {e}", cert.display()))?
            }
            None => builder.with_no_client_auth(),
        };
        Ok(Tls {
            mode: opts.mode,
            config: Some(Arc::new(config)),
        })
    }

    /// Run the TLS handshake on a connected socket, to the end, so that a certificate problem
    /// shows here with its cause.
    pub fn handshake(&self, host: &str, mut tcp: Coop<TcpStream>) -> io::Result<TlsStream> {
        // Bounded as the socket is, in a coroutine too.
        tcp.set_timeout(tcp.get_ref().read_timeout()?);
        let config = self
            .config
            .clone()
            .ok_or_else(|| io::Error::other("TLS is disabled"))?;
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::other(format!("host name '{host}' for TLS: {e}")))?;
        let mut conn = ClientConnection::new(config, name).map_err(io::Error::other)?;
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp).map_err(explain)?;
        }
        Ok(StreamOwned::new(conn, tcp))
    }
}

/// Over `Coop`, so that a client among many on a thread parks on its TLS socket too.
pub type TlsStream = StreamOwned<ClientConnection, Coop<TcpStream>>;

/// How a connection reached its server, for the result.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Transport {
    /// "tcp", "unix", "embedded".
    pub kind: String,
    pub tls: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cipher: Option<String>,
    /// Anything else the engine says about the link (Firebird's wire encryption).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Transport {
    pub fn plain(kind: &str) -> Transport {
        Transport {
            kind: kind.into(),
            ..Transport::default()
        }
    }

    pub fn of(stream: &TlsStream) -> Transport {
        let conn = &stream.conn;
        let version = conn.protocol_version().map(|v| match v {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
            other => format!("{other:?}"),
        });
        Transport {
            kind: "tcp".into(),
            tls: true,
            tls_version: version,
            cipher: conn
                .negotiated_cipher_suite()
                .map(|s| format!("{:?}", s.suite())),
            note: None,
        }
    }

    /// One line for the summary.
    pub fn describe(&self) -> String {
        match (&self.tls_version, &self.cipher) {
            _ if !self.tls => match self.kind.as_str() {
                "tcp" => "TCP without TLS".into(),
                "unix" => "Unix socket".into(),
                other => other.into(),
            },
            (Some(v), Some(c)) => format!("TLS ({v}, {c})"),
            _ => "TLS".into(),
        }
        .to_string()
            + &self
                .note
                .as_ref()
                .map(|n| format!(", {n}"))
                .unwrap_or_default()
    }
}

/// The certificate's hash for SCRAM's `tls-server-end-point` channel binding (RFC 5929: the
/// hash of the certificate's signature algorithm, SHA-256 in place of MD5 and SHA-1).
pub fn server_end_point(stream: &TlsStream) -> Option<Vec<u8>> {
    use sha2::Digest;
    let cert = stream.conn.peer_certificates()?.first()?;
    Some(match signature_hash(cert) {
        384 => sha2::Sha384::digest(cert).to_vec(),
        512 => sha2::Sha512::digest(cert).to_vec(),
        _ => sha2::Sha256::digest(cert).to_vec(),
    })
}

/// The hash size of a certificate's outer signature algorithm (256 when it is not one of
/// the SHA-384 or SHA-512 RSA and ECDSA algorithms).
fn signature_hash(der: &[u8]) -> u32 {
    const SHA384: &[&[u8]] = &[
        &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0C],
        &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x03],
    ];
    const SHA512: &[&[u8]] = &[
        &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0D],
        &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x04],
    ];
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm SEQUENCE { OID, ... }, ... }
    let oid = der_inner(der)
        .and_then(|body| der_skip(body))
        .and_then(der_inner)
        .and_then(der_inner);
    match oid {
        Some(o) if SHA384.contains(&o) => 384,
        Some(o) if SHA512.contains(&o) => 512,
        _ => 256,
    }
}

/// The header's length and the content's length of the DER element at the start of `d`.
fn der_header(d: &[u8]) -> Option<(usize, usize)> {
    let first = *d.get(1)?;
    if first < 0x80 {
        return Some((2, first as usize));
    }
    let n = (first & 0x7F) as usize;
    let len = d
        .get(2..2 + n)?
        .iter()
        .fold(0usize, |acc, b| (acc << 8) | *b as usize);
    Some((2 + n, len))
}

/// The content of the first DER element of `d`.
fn der_inner(d: &[u8]) -> Option<&[u8]> {
    let (h, len) = der_header(d)?;
    d.get(h..h + len)
}

/// What follows the first DER element of `d`.
fn der_skip(d: &[u8]) -> Option<&[u8]> {
    let (h, len) = der_header(d)?;
    d.get(h + len..)
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("certificate file {}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("certificate file {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "certificate file {} holds no PEM certificate",
            path.display()
        ));
    }
    Ok(certs)
}

fn root_store(roots: &Roots) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::File(path) => {
            for cert in read_certs(path)? {
                store
                    .add(cert)
                    .map_err(|e| format!("CA certificate in {}: {e}", path.display()))?;
            }
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err("the system has no trusted root certificates (install Debian's ca-certificates, or give the CA's file)".into());
            }
        }
    }
    Ok(store)
}

/// A rustls error from the handshake, said in words that name what to change.
fn explain(e: io::Error) -> io::Error {
    let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return e;
    };
    let text = match tls {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => "the server's certificate is not signed by a trusted CA (check the CA file given as sslrootcert / ssl-ca)".to_string(),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "the server's certificate was not issued for the host name connected to (connect by the name in the certificate, or use verify-ca / VERIFY_CA)".to_string()
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired".to_string()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet (check the clocks)".to_string()
            }
            other => format!("the server's certificate was refused: {other:?}"),
        },
        other => format!("TLS handshake failed: {other}"),
    };
    io::Error::new(io::ErrorKind::InvalidData, text)
}

/// verify-ca: the chain must lead to a trusted root; the host name is not checked (the
/// webpki verifier checks the chain before the name, so a name mismatch means the chain held).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// prefer and require: encrypted, but any certificate is taken (as libpq and the mysql
/// client do in those modes); the handshake's signatures are still checked.
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_hash_reads_the_outer_algorithm() {
        // SEQUENCE { SEQUENCE {} (tbs), SEQUENCE { OID ecdsa-with-SHA384 }, BIT STRING }
        let cert = [
            0x30, 0x0F, 0x30, 0x00, 0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04,
            0x03, 0x03, 0x03, 0x01, 0x00,
        ];
        assert_eq!(signature_hash(&cert), 384);
        let mut sha256 = cert;
        sha256[15] = 0x02;
        assert_eq!(signature_hash(&sha256), 256);
        assert_eq!(signature_hash(&[0x30]), 256);
    }

    #[test]
    fn verifying_modes_need_a_ca() {
        let opts = TlsOptions {
            mode: Mode::VerifyFull,
            roots: None,
            client: None,
        };
        assert!(Tls::new(&opts).err().unwrap().contains("CA"));
        let opts = TlsOptions {
            mode: Mode::VerifyCa,
            roots: Some(Roots::File("/nonexistent/ca.pem".into())),
            client: None,
        };
        assert!(
            Tls::new(&opts)
                .err()
                .unwrap()
                .contains("/nonexistent/ca.pem")
        );
    }
}
