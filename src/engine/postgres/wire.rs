//! A blocking PostgreSQL protocol connection: messages encoded and decoded by the
//! `postgres-protocol` crate, sent over a TCP socket (plain or TLS, negotiated as libpq's sslmode
//! says) or a Unix socket with one write per request and no runtime in between, so the client
//! spends as little CPU per statement as libpq. SCRAM authentication, with channel binding over TLS
//! as libpq's `channel_binding` says.
//!
//! On the per-statement path Bind, Execute and Sync are written here in one write, and DataRow,
//! CommandComplete and ReadyForQuery are read where they lie in the read buffer (the crate's parser
//! splits a shared buffer per message: an allocation each); rarer messages go through the crate.
//! Numbers are parsed from the row bytes; only text values are copied out. A parameter goes in
//! binary only when it is an integer that fits its integer type; any other value goes as text
//! (format code 0), so the server, not the client, judges a value its type cannot take.
//!
//! dbduel's own connection because the tokio-based `postgres` crate cost 5-18% more client CPU per
//! transaction than pgbench (BENCHMARKS.md); one blocking socket and one write per statement do not.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::Oid;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use crate::coop::{self, Coop};
use crate::engine::tls::{self, Mode, Tls, TlsStream, Transport};
use crate::engine::{SocketHandle, Value, login};

pub const INT2: Oid = 21;
pub const INT4: Oid = 23;
pub const INT8: Oid = 20;
const BOOL: Oid = 16;
const FLOAT4: Oid = 700;
const FLOAT8: Oid = 701;

/// What can go wrong on the wire.
#[derive(Debug)]
pub enum PgError {
    Io(io::Error),
    /// An ErrorResponse: SQLSTATE and message.
    Db {
        code: String,
        message: String,
    },
    Protocol(String),
    /// TLS could not be set up as the DSN asks: the cause, in words.
    Tls(String),
}

impl From<io::Error> for PgError {
    fn from(e: io::Error) -> Self {
        PgError::Io(e)
    }
}

pub type PgResult<T> = Result<T, PgError>;

enum Stream {
    Tcp(Coop<TcpStream>),
    Tls(Box<TlsStream>),
    Unix(Coop<UnixStream>),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
        .map_err(|e| login::explain_deadline(e, self.deadline()))
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Tls(s) => s.write_all(buf).and_then(|_| s.flush()),
            Stream::Unix(s) => s.write_all(buf),
        }
        .map_err(|e| login::explain_deadline(e, self.deadline()))
    }
    /// The read deadline `set_timeout` gave the socket (read when an error needs it).
    fn deadline(&self) -> Option<Duration> {
        match self {
            Stream::Tcp(s) => s.get_ref().read_timeout(),
            Stream::Tls(s) => s.sock.get_ref().read_timeout(),
            Stream::Unix(s) => s.get_ref().read_timeout(),
        }
        .ok()
        .flatten()
    }
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => timeouts(s, |s| s.set_read_timeout(t).and(s.set_write_timeout(t)), t),
            Stream::Tls(s) => timeouts(
                &s.sock,
                |s| s.set_read_timeout(t).and(s.set_write_timeout(t)),
                t,
            ),
            Stream::Unix(s) => {
                timeouts(s, |s| s.set_read_timeout(t).and(s.set_write_timeout(t)), t)
            }
        }
    }
    fn handle(&self) -> io::Result<SocketHandle> {
        Ok(match self {
            Stream::Tcp(s) => SocketHandle::Tcp(s.get_ref().try_clone()?),
            Stream::Tls(s) => SocketHandle::Tcp(s.sock.get_ref().try_clone()?),
            Stream::Unix(s) => SocketHandle::Unix(s.get_ref().try_clone()?),
        })
    }
    fn transport(&self) -> Transport {
        match self {
            Stream::Tcp(_) => Transport::plain("tcp"),
            Stream::Tls(s) => Transport::of(s),
            Stream::Unix(_) => Transport::plain("unix"),
        }
    }
}

/// A socket's own timeouts (for reads outside a coroutine) and its `Coop`'s (inside one).
fn timeouts<S: std::os::fd::AsRawFd>(
    s: &Coop<S>,
    own: impl FnOnce(&S) -> io::Result<()>,
    t: Option<Duration>,
) -> io::Result<()> {
    s.set_timeout(t);
    own(s.get_ref())
}

/// libpq's `channel_binding`: whether SCRAM binds itself to the TLS channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelBinding {
    Disable,
    Prefer,
    Require,
}

/// Where and as whom to connect.
pub struct ConnectParams<'a> {
    pub host: &'a str,
    pub port: u16,
    pub user: &'a str,
    pub password: Option<&'a str>,
    pub database: &'a str,
    pub application_name: &'a str,
    /// libpq's `options` (PGOPTIONS): command-line options for the session's server process,
    /// such as `-c work_mem=64MB`.
    pub options: Option<&'a str>,
    /// For connecting and logging in; a statement has no time limit of its own.
    pub timeout: Duration,
    pub tls: &'a Tls,
    pub channel_binding: ChannelBinding,
}

/// A statement prepared on the server: its name and the types of its parameters and columns.
pub struct Prepared {
    pub name: String,
    pub params: Vec<Oid>,
    columns: Vec<Oid>,
}

/// Rows returned by a statement, decoded from the text format; or just their count.
pub struct Output<'a> {
    pub rows: Option<&'a mut Vec<Vec<Value>>>,
    pub count: u64,
    columns: Vec<Oid>,
}

impl<'a> Output<'a> {
    pub fn new(rows: Option<&'a mut Vec<Vec<Value>>>) -> Self {
        Output {
            rows,
            count: 0,
            columns: Vec::new(),
        }
    }
}

/// What a pipeline holds before it is sent without waiting for its end (libpq's threshold).
const PIPELINE_FLUSH: usize = 64 * 1024;

const CHUNK_FIRST: usize = 2 * 1024;
const CHUNK_MOST: usize = 16 * 1024;

pub struct Conn {
    stream: Stream,
    rbuf: BytesMut,
    wbuf: BytesMut,
    /// What one read takes from the socket: 2 KiB at first (ten thousand idle sessions hold
    /// little), doubled each time a read fills it, up to `CHUNK_MOST` for big results.
    chunk: Vec<u8>,
    pub server_version: String,
    /// The backend's process id and secret, for a CancelRequest.
    pub backend_key: Option<(i32, i32)>,
    pub transport: Transport,
    /// The server's notices (NOTICE, WARNING...) to statements, as libpq prints them
    /// (`WARNING:  there is no transaction in progress`), until taken; at most `NOTICES_KEPT`.
    pub notices: Vec<String>,
}

/// Notices a connection keeps until they are taken (a session whose notices nobody reads,
/// such as a load's, keeps no more).
const NOTICES_KEPT: usize = 32;

/// Where a login stands: the method the server asked for, the SCRAM exchange under way,
/// whether it is bound to the TLS channel.
struct Login {
    method: &'static str,
    scram: Option<sasl::ScramSha256>,
    bound: bool,
}

impl Conn {
    /// Connect and log in. TLS as libpq's sslmode says: `allow` tries plain first and TLS
    /// when the server refuses it; `prefer` asks for TLS and goes on in the clear when the
    /// server has none (or its handshake fails); `require` and the verifying modes insist.
    /// TLS is not used over a Unix socket (libpq neither).
    pub fn connect(p: &ConnectParams) -> PgResult<Conn> {
        match p.tls.mode {
            Mode::Allow => Self::connect_as(p, false).or_else(|e| match e {
                PgError::Db { ref code, .. } if code == "28000" => Self::connect_as(p, true),
                e => Err(e),
            }),
            Mode::Prefer => Self::connect_as(p, true).or_else(|e| match e {
                PgError::Tls(_) => Self::connect_as(p, false),
                e => Err(e),
            }),
            mode => Self::connect_as(p, mode != Mode::Disable),
        }
    }

    fn connect_as(p: &ConnectParams, tls: bool) -> PgResult<Conn> {
        let stream = if p.host.starts_with('/') {
            let path = format!("{}/.s.PGSQL.{}", p.host, p.port);
            Stream::Unix(Coop::new(UnixStream::connect(path)?))
        } else {
            let tcp = coop::connect_host(p.host, p.port, p.timeout)?;
            tcp.set_nodelay(true)?;
            tcp.set_read_timeout(Some(p.timeout))?;
            tcp.set_write_timeout(Some(p.timeout))?;
            if tls {
                Self::start_tls(p, tcp)?
            } else {
                Stream::Tcp(Coop::new(tcp))
            }
        };
        stream.set_timeout(Some(p.timeout))?;
        let mut conn = Conn {
            transport: stream.transport(),
            stream,
            rbuf: BytesMut::with_capacity(CHUNK_FIRST),
            wbuf: BytesMut::with_capacity(4096),
            chunk: vec![0; CHUNK_FIRST],
            server_version: String::new(),
            backend_key: None,
            notices: Vec::new(),
        };
        let mut params = vec![
            ("user", p.user),
            ("database", p.database),
            ("application_name", p.application_name),
            ("client_encoding", "UTF8"),
        ];
        if let Some(options) = p.options {
            params.push(("options", options));
        }
        frontend::startup_message(params.iter().copied(), &mut conn.wbuf)?;
        conn.flush()?;
        conn.authenticate(p)?;
        conn.stream.set_timeout(None)?;
        Ok(conn)
    }

    /// A second handle on the socket, to shut it down from another thread.
    pub fn socket_handle(&self) -> Option<SocketHandle> {
        self.stream.handle().ok()
    }

    /// Bound later reads and writes (None: no bound).
    pub fn set_timeout(&self, timeout: Option<Duration>) {
        let _ = self.stream.set_timeout(timeout);
    }

    /// Send a CancelRequest for the backend `key` on a connection of its own (as libpq's
    /// PQcancel: plain, whatever the session used; the server checks the secret key).
    pub fn cancel(host: &str, port: u16, key: (i32, i32), timeout: Duration) -> io::Result<()> {
        let mut buf = BytesMut::new();
        frontend::cancel_request(key.0, key.1, &mut buf);
        if host.starts_with('/') {
            let mut s = UnixStream::connect(format!("{host}/.s.PGSQL.{port}"))?;
            s.set_write_timeout(Some(timeout))?;
            return s.write_all(&buf);
        }
        let addr = (host, port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))?;
        let mut s = TcpStream::connect_timeout(&addr, timeout)?;
        s.set_write_timeout(Some(timeout))?;
        s.write_all(&buf)
    }

    /// SSLRequest, then the TLS handshake if the server says 'S'.
    fn start_tls(p: &ConnectParams, tcp: TcpStream) -> PgResult<Stream> {
        let mut buf = BytesMut::new();
        frontend::ssl_request(&mut buf);
        let mut tcp = Coop::new(tcp);
        tcp.set_timeout(tcp.get_ref().read_timeout()?);
        tcp.write_all(&buf)?;
        let mut answer = [0u8; 1];
        tcp.read_exact(&mut answer)?;
        match answer[0] {
            b'S' => match p.tls.handshake(p.host, tcp) {
                Ok(s) => Ok(Stream::Tls(Box::new(s))),
                Err(e) => Err(PgError::Tls(e.to_string())),
            },
            _ if p.tls.mode.required() => Err(PgError::Tls(
                "the server does not support SSL, but sslmode requires it (turn ssl on in postgresql.conf, or lower sslmode)".into(),
            )),
            b'N' => Ok(Stream::Tcp(tcp)),
            other => Err(PgError::Protocol(format!(
                "unexpected answer {other:#x} to the SSL request"
            ))),
        }
    }

    /// Log in with the method the server asks for; a failure names that method.
    fn authenticate(&mut self, p: &ConnectParams) -> PgResult<()> {
        let mut login = Login {
            method: "trust",
            scram: None,
            bound: false,
        };
        loop {
            match self.recv()? {
                Message::AuthenticationOk => {
                    if p.channel_binding == ChannelBinding::Require && !login.bound {
                        return Err(PgError::Tls(format!(
                            "channel_binding=require, but the server logged in without channel binding ({})",
                            login.method
                        )));
                    }
                }
                Message::BackendKeyData(body) => {
                    self.backend_key = Some((body.process_id(), body.secret_key()));
                }
                Message::NoticeResponse(_) => {}
                Message::ParameterStatus(body) => {
                    if body.name()? == "server_version" {
                        self.server_version = body.value()?.to_string();
                    }
                }
                Message::ErrorResponse(body) => {
                    return Err(match db_error(&body) {
                        PgError::Db { code, message } if code.starts_with("28") => PgError::Db {
                            message: format!(
                                "{message} (the server asked for {}; over {})",
                                login.method,
                                self.transport.describe()
                            ),
                            code,
                        },
                        e => e,
                    });
                }
                Message::ReadyForQuery(_) => return Ok(()),
                msg => self.answer(p, &mut login, msg)?,
            }
        }
    }

    /// Answer the server's request for a password: in clear, as an MD5 hash, or through a
    /// SCRAM exchange (bound to the TLS channel where it can be).
    fn answer(&mut self, p: &ConnectParams, login: &mut Login, msg: Message) -> PgResult<()> {
        let password = |method: &str| {
            p.password.ok_or_else(|| PgError::Db {
                code: "28P01".into(),
                message: format!(
                    "the server asks for a password ({method}): give it in the DSN, PGPASSWORD, ~/.pgpass or --password-file"
                ),
            })
        };
        match msg {
            Message::AuthenticationCleartextPassword => {
                login.method = "password";
                self.refuse_unbound(p, login.method)?;
                frontend::password_message(password(login.method)?.as_bytes(), &mut self.wbuf)?;
            }
            Message::AuthenticationMd5Password(body) => {
                login.method = "md5";
                self.refuse_unbound(p, login.method)?;
                let pw = password(login.method)?;
                let hash = md5_hash(p.user.as_bytes(), pw.as_bytes(), body.salt());
                frontend::password_message(hash.as_bytes(), &mut self.wbuf)?;
            }
            Message::AuthenticationSasl(body) => {
                login.method = "scram-sha-256";
                let pw = password(login.method)?;
                let mechs: Vec<String> = body.mechanisms().map(|m| Ok(m.to_string())).collect()?;
                let (mech, binding) = self.channel_binding(p, &mechs)?;
                login.bound = mech == sasl::SCRAM_SHA_256_PLUS;
                let s = sasl::ScramSha256::new(pw.as_bytes(), binding);
                frontend::sasl_initial_response(mech, s.message(), &mut self.wbuf)?;
                login.scram = Some(s);
            }
            Message::AuthenticationSaslContinue(body) => {
                let s = login
                    .scram
                    .as_mut()
                    .ok_or_else(|| PgError::Protocol("unexpected SASL message".into()))?;
                s.update(body.data())?;
                frontend::sasl_response(s.message(), &mut self.wbuf)?;
            }
            Message::AuthenticationSaslFinal(body) => {
                let s = login
                    .scram
                    .as_mut()
                    .ok_or_else(|| PgError::Protocol("unexpected SASL message".into()))?;
                return Ok(s.finish(body.data())?);
            }
            _ => {
                return Err(PgError::Protocol(
                    "unexpected message during authentication".into(),
                ));
            }
        }
        Ok(self.flush()?)
    }

    fn refuse_unbound(&self, p: &ConnectParams, method: &str) -> PgResult<()> {
        if p.channel_binding == ChannelBinding::Require {
            return Err(PgError::Tls(format!(
                "channel_binding=require, but the server asks for {method}, which has no channel binding (use scram-sha-256 on the server, or lower channel_binding)"
            )));
        }
        Ok(())
    }

    /// SCRAM's mechanism and channel binding: SCRAM-SHA-256-PLUS with the certificate's hash
    /// over TLS when the server offers it (libpq's channel_binding=prefer).
    fn channel_binding(
        &self,
        p: &ConnectParams,
        mechs: &[String],
    ) -> PgResult<(&'static str, sasl::ChannelBinding)> {
        let end_point = match &self.stream {
            Stream::Tls(s) if p.channel_binding != ChannelBinding::Disable => {
                tls::server_end_point(s)
            }
            _ => None,
        };
        let plus = mechs.iter().any(|m| m == sasl::SCRAM_SHA_256_PLUS);
        let plain = mechs.iter().any(|m| m == sasl::SCRAM_SHA_256);
        match end_point {
            Some(hash) if plus => Ok((
                sasl::SCRAM_SHA_256_PLUS,
                sasl::ChannelBinding::tls_server_end_point(hash),
            )),
            _ if p.channel_binding == ChannelBinding::Require => Err(PgError::Tls(
                "channel_binding=require, but the connection cannot bind SCRAM to TLS (it needs TLS and a server offering SCRAM-SHA-256-PLUS)".into(),
            )),
            Some(_) if plain => Ok((sasl::SCRAM_SHA_256, sasl::ChannelBinding::unrequested())),
            _ if plain => Ok((sasl::SCRAM_SHA_256, sasl::ChannelBinding::unsupported())),
            _ => Err(PgError::Protocol(format!(
                "unsupported authentication mechanisms {mechs:?}"
            ))),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.stream.write_all(&self.wbuf);
        self.wbuf.clear();
        result
    }

    /// Append what the socket has to the read buffer.
    fn fill(&mut self) -> io::Result<()> {
        let n = self.stream.read(&mut self.chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        self.rbuf.extend_from_slice(&self.chunk[..n]);
        if n == self.chunk.len() && n < CHUNK_MOST {
            self.chunk.resize(n * 2, 0);
        }
        Ok(())
    }

    fn recv(&mut self) -> io::Result<Message> {
        loop {
            if let Some(msg) = Message::parse(&mut self.rbuf)? {
                return Ok(msg);
            }
            self.fill()?;
        }
    }

    /// Read the replies up to ReadyForQuery, collecting rows (the first error wins); rows are
    /// decoded by the statement's `prepared` column types, or by the RowDescription a simple
    /// query receives.
    fn finish(&mut self, out: &mut Output, prepared: &[Oid]) -> PgResult<()> {
        let mut error = None;
        loop {
            // The frequent replies (DataRow, CommandComplete, ReadyForQuery, BindComplete...)
            // are read where they lie in the buffer; the others go through the parser.
            let (kind, len) = self.next_message()?;
            let body = &self.rbuf[5..5 + len];
            match kind {
                b'D' => {
                    out.count += 1;
                    if let Some(rows) = out.rows.as_deref_mut() {
                        let columns = if out.columns.is_empty() {
                            prepared
                        } else {
                            &out.columns
                        };
                        rows.push(decode_row(body, columns)?);
                    }
                }
                b'C' => {
                    let tag = body.split(|b| *b == 0).next().unwrap_or_default();
                    let count = tag.rsplit(|b| *b == b' ').next().unwrap_or_default();
                    if let Some(n) = std::str::from_utf8(count).ok().and_then(|n| n.parse().ok()) {
                        out.count = n;
                    }
                }
                b'Z' => {
                    self.rbuf.advance(5 + len);
                    return error.map_or(Ok(()), Err);
                }
                // COPY ... FROM STDIN sent as a statement (a script's): nothing here has rows
                // to send, so it is failed at once, as pgbench refuses COPY, instead of both
                // sides waiting for the other; the server's error follows.
                b'G' => {
                    self.rbuf.advance(5 + len);
                    frontend::copy_fail(
                        "COPY FROM STDIN is not supported here: dbduel sends no rows to it",
                        &mut self.wbuf,
                    )?;
                    self.flush()?;
                    continue;
                }
                b'T' | b'E' | b'N' => {
                    match self.recv()? {
                        Message::RowDescription(body) => {
                            out.columns = body.fields().map(|f| Ok(f.type_oid())).collect()?;
                        }
                        Message::ErrorResponse(body) => {
                            error.get_or_insert_with(|| db_error(&body));
                        }
                        Message::NoticeResponse(body) if self.notices.len() < NOTICES_KEPT => {
                            self.notices.push(notice(&body));
                        }
                        _ => {}
                    }
                    continue;
                }
                _ => {}
            }
            self.rbuf.advance(5 + len);
        }
    }

    /// Wait until a whole message is in the read buffer; its type byte and body length.
    fn next_message(&mut self) -> io::Result<(u8, usize)> {
        loop {
            if self.rbuf.len() >= 5 {
                let len =
                    u32::from_be_bytes([self.rbuf[1], self.rbuf[2], self.rbuf[3], self.rbuf[4]]);
                let len = (len as usize).checked_sub(4).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidData, "invalid message length")
                })?;
                if self.rbuf.len() >= 5 + len {
                    return Ok((self.rbuf[0], len));
                }
            }
            self.fill()?;
        }
    }

    /// Simple query protocol: one or more statements as text.
    pub fn query(&mut self, sql: &str, out: &mut Output) -> PgResult<()> {
        frontend::query(sql, &mut self.wbuf)?;
        self.flush()?;
        self.finish(out, &[])
    }

    /// Prepare a named statement and learn its parameter and column types.
    pub fn prepare(&mut self, name: &str, sql: &str) -> PgResult<Prepared> {
        frontend::parse(name, sql, std::iter::empty(), &mut self.wbuf)?;
        frontend::describe(b'S', name, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.flush()?;
        let (mut params, mut columns, mut error) = (Vec::new(), Vec::new(), None);
        loop {
            match self.recv()? {
                Message::ParameterDescription(body) => params = body.parameters().collect()?,
                Message::RowDescription(body) => {
                    columns = body.fields().map(|f| Ok(f.type_oid())).collect()?
                }
                Message::ErrorResponse(body) => {
                    error.get_or_insert_with(|| db_error(&body));
                }
                Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(Prepared {
                name: name.to_string(),
                params,
                columns,
            }),
        }
    }

    /// Bind, execute and sync a prepared statement in one write; integers travel in binary.
    pub fn execute(&mut self, stmt: &Prepared, values: &[Value], out: &mut Output) -> PgResult<()> {
        self.bind_execute(stmt, values);
        self.wbuf.extend_from_slice(&[b'S', 0, 0, 0, 4]);
        self.flush()?;
        self.finish(out, &stmt.columns)
    }

    /// Pipeline mode: a prepared statement's Bind and Execute wait in the write buffer for
    /// the pipeline's end (`drain`), as libpq's pipeline holds them until its buffer fills:
    /// past `PIPELINE_FLUSH` bytes they are sent at once.
    pub fn queue(&mut self, stmt: &Prepared, values: &[Value]) -> PgResult<()> {
        self.bind_execute(stmt, values);
        if self.wbuf.len() > PIPELINE_FLUSH {
            self.flush()?;
        }
        Ok(())
    }

    /// Pipeline mode: a Sync after the statements queued so far; the server answers it with
    /// ReadyForQuery, and skips to it after a failed statement.
    pub fn queue_sync(&mut self) {
        self.wbuf.extend_from_slice(&[b'S', 0, 0, 0, 4]);
    }

    /// Pipeline mode's end: send what is queued and read the replies up to the `syncs`-th
    /// ReadyForQuery; the first error the server reports wins (after an error the server
    /// skips to the next Sync, and the segments after it run).
    pub fn drain(&mut self, syncs: usize) -> PgResult<()> {
        self.flush()?;
        let mut first = None;
        for _ in 0..syncs {
            match self.finish(&mut Output::new(None), &[]) {
                Ok(()) => {}
                Err(e @ PgError::Db { .. }) => {
                    first.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// The extended protocol without a named statement (pgbench's -M extended, libpq's
    /// PQsendQueryParams): parsed each time, the parameters sent apart as text for the server
    /// to type; then Sync, and the replies read (RowDescription gives the columns).
    pub fn execute_unnamed(
        &mut self,
        sql: &str,
        values: &[Value],
        out: &mut Output,
    ) -> PgResult<()> {
        self.parse_bind_execute(sql, values)?;
        self.wbuf.extend_from_slice(&[b'S', 0, 0, 0, 4]);
        self.flush()?;
        self.finish(out, &[])
    }

    /// Pipeline mode: `execute_unnamed`'s messages wait in the write buffer, as `queue`'s.
    pub fn queue_unnamed(&mut self, sql: &str, values: &[Value]) -> PgResult<()> {
        self.parse_bind_execute(sql, values)?;
        if self.wbuf.len() > PIPELINE_FLUSH {
            self.flush()?;
        }
        Ok(())
    }

    /// Parse, Bind, Describe and Execute of the unnamed statement and portal, unsent.
    fn parse_bind_execute(&mut self, sql: &str, values: &[Value]) -> PgResult<()> {
        frontend::parse("", sql, std::iter::empty(), &mut self.wbuf)?;
        let w = &mut self.wbuf;
        let start = w.len();
        w.extend_from_slice(&[b'B', 0, 0, 0, 0, 0, 0]); // length, unnamed portal and statement
        w.extend_from_slice(&0i16.to_be_bytes()); // no format codes: every parameter in text
        w.extend_from_slice(&(values.len() as i16).to_be_bytes());
        let mut text = String::new();
        for value in values {
            text.clear();
            match value {
                Value::Null => {
                    w.extend_from_slice(&(-1i32).to_be_bytes());
                    continue;
                }
                Value::Int(i) => {
                    use std::fmt::Write;
                    let _ = write!(text, "{i}");
                }
                Value::Float(f) => {
                    use std::fmt::Write;
                    let _ = write!(text, "{f}");
                }
                Value::Text(t) => text.push_str(t),
            }
            w.extend_from_slice(&(text.len() as i32).to_be_bytes());
            w.extend_from_slice(text.as_bytes());
        }
        w.extend_from_slice(&[0, 0]); // every result column in text
        let len = (w.len() - start - 1) as i32;
        w[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
        frontend::describe(b'P', "", w)?;
        w.extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
        Ok(())
    }

    /// Bind and Execute a prepared statement into the write buffer, unsent. The messages are
    /// written here directly (protocol 3.0, "Message Formats"): one reserve and a few copies
    /// instead of a buffer call per field.
    fn bind_execute(&mut self, stmt: &Prepared, values: &[Value]) {
        let w = &mut self.wbuf;
        let start = w.len();
        w.reserve(64 + stmt.name.len() + 4 * stmt.params.len());
        w.extend_from_slice(&[b'B', 0, 0, 0, 0]); // length, filled in below
        w.extend_from_slice(&[0]); // unnamed portal
        w.extend_from_slice(stmt.name.as_bytes());
        w.extend_from_slice(&[0]);
        w.extend_from_slice(&(stmt.params.len() as i16).to_be_bytes());
        // Each parameter's format code (0 text, 1 binary), set as its value is encoded.
        let formats = w.len();
        w.resize(formats + 2 * stmt.params.len(), 0);
        w.extend_from_slice(&(stmt.params.len() as i16).to_be_bytes());
        for (i, (oid, value)) in stmt.params.iter().zip(values).enumerate() {
            let at = w.len();
            w.extend_from_slice(&[0, 0, 0, 0]);
            match encode((oid, value), w) {
                Encoded::Null => w[at..at + 4].copy_from_slice(&(-1i32).to_be_bytes()),
                encoded => {
                    w[formats + 2 * i + 1] = u8::from(encoded == Encoded::Binary);
                    let n = (w.len() - at - 4) as i32;
                    w[at..at + 4].copy_from_slice(&n.to_be_bytes());
                }
            }
        }
        w.extend_from_slice(&[0, 1, 0, 0]); // one result format for every column: text
        let len = (w.len() - start - 1) as i32;
        w[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
        // Execute the unnamed portal, no row limit.
        w.extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
    }

    /// COPY ... FROM STDIN: `fill` appends rows in COPY's text format to the buffer it is
    /// given and returns false when there are no more; each buffer is sent as it fills.
    pub fn copy_in(
        &mut self,
        sql: &str,
        mut fill: impl FnMut(&mut Vec<u8>) -> PgResult<bool>,
    ) -> PgResult<u64> {
        frontend::query(sql, &mut self.wbuf)?;
        self.flush()?;
        loop {
            match self.recv()? {
                Message::CopyInResponse(_) => break,
                Message::ErrorResponse(body) => {
                    let e = db_error(&body);
                    self.finish(&mut Output::new(None), &[])?;
                    return Err(e);
                }
                _ => {}
            }
        }
        let mut chunk = Vec::with_capacity(1 << 17);
        let mut result = Ok(());
        loop {
            chunk.clear();
            let more = match fill(&mut chunk) {
                Ok(more) => more,
                Err(e) => {
                    result = Err(e);
                    false
                }
            };
            if !chunk.is_empty() && result.is_ok() {
                frontend::CopyData::new(&chunk[..])?.write(&mut self.wbuf);
                self.flush()?;
            }
            if !more {
                break;
            }
        }
        match &result {
            Ok(()) => frontend::copy_done(&mut self.wbuf),
            Err(_) => frontend::copy_fail("interrupted", &mut self.wbuf)?,
        }
        self.flush()?;
        let mut out = Output::new(None);
        let finished = self.finish(&mut out, &[]);
        result.and(finished).map(|_| out.count)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        frontend::terminate(&mut self.wbuf);
        let _ = self.flush();
    }
}

/// How a parameter went into the Bind message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoded {
    Null,
    Binary,
    Text,
}

/// One parameter's value: an integer that fits the parameter's integer type travels in
/// binary; everything else goes as text, as pgbench sends every parameter, so that a value
/// the type cannot take ("1a", 100000 for a smallint) meets the server's own input function
/// and its error (22P02, 22003) is the one reported.
fn encode((oid, value): (&Oid, &Value), buf: &mut BytesMut) -> Encoded {
    let int = match (value, *oid) {
        (Value::Null, _) => return Encoded::Null,
        (Value::Int(v), INT2 | INT4 | INT8) => Some(*v),
        (Value::Text(s), INT2 | INT4 | INT8) => s.trim().parse().ok(),
        _ => None,
    };
    match (int, *oid) {
        (Some(v), INT2) if i16::try_from(v).is_ok() => {
            buf.extend_from_slice(&(v as i16).to_be_bytes())
        }
        (Some(v), INT4) if i32::try_from(v).is_ok() => {
            buf.extend_from_slice(&(v as i32).to_be_bytes())
        }
        (Some(v), INT8) => buf.extend_from_slice(&v.to_be_bytes()),
        _ => {
            match value {
                Value::Text(s) => buf.extend_from_slice(s.as_bytes()),
                v => buf.extend_from_slice(v.to_string().as_bytes()),
            }
            return Encoded::Text;
        }
    }
    Encoded::Binary
}

/// A DataRow's values (protocol 3.0: Int16 count, then per column Int32 length, -1 for NULL,
/// and the bytes), typed by the statement's column types.
fn decode_row(body: &[u8], columns: &[Oid]) -> PgResult<Vec<Value>> {
    let bad = || PgError::Protocol("malformed DataRow".into());
    let count = u16::from_be_bytes(body.get(..2).ok_or_else(bad)?.try_into().expect("2 bytes"));
    let mut row = Vec::with_capacity(usize::from(count));
    let mut at = 2;
    for i in 0..usize::from(count) {
        let len = i32::from_be_bytes(
            body.get(at..at + 4)
                .ok_or_else(bad)?
                .try_into()
                .expect("4 bytes"),
        );
        at += 4;
        let value = if len < 0 {
            Value::Null
        } else {
            let bytes = body.get(at..at + len as usize).ok_or_else(bad)?;
            at += len as usize;
            // Numbers are parsed where they lie; only text is copied out.
            let text = std::str::from_utf8(bytes).ok();
            let owned = || {
                text.map_or_else(
                    || String::from_utf8_lossy(bytes).into_owned(),
                    str::to_owned,
                )
            };
            match columns.get(i).copied() {
                Some(INT2 | INT4 | INT8) => text
                    .and_then(|t| t.parse().ok())
                    .map_or_else(|| Value::Text(owned()), Value::Int),
                Some(FLOAT4 | FLOAT8) => text
                    .and_then(|t| t.parse().ok())
                    .map_or_else(|| Value::Text(owned()), Value::Float),
                Some(BOOL) => Value::Int(i64::from(bytes == b"t")),
                _ => Value::Text(owned()),
            }
        };
        row.push(value);
    }
    Ok(row)
}

/// A notice as libpq prints it: `SEVERITY:  message`.
fn notice(body: &postgres_protocol::message::backend::NoticeResponseBody) -> String {
    let [severity, _, message] = fields(body.fields());
    let severity = if severity.is_empty() {
        "NOTICE".into()
    } else {
        severity
    };
    format!("{severity}:  {message}")
}

fn db_error(body: &postgres_protocol::message::backend::ErrorResponseBody) -> PgError {
    let [_, code, message] = fields(body.fields());
    PgError::Db { code, message }
}

/// An error's or a notice's severity, SQLSTATE and message.
fn fields(mut fields: postgres_protocol::message::backend::ErrorFields<'_>) -> [String; 3] {
    let mut out = [String::new(), String::new(), String::new()];
    while let Ok(Some(f)) = fields.next() {
        let at = match f.type_() {
            b'S' => 0,
            b'C' => 1,
            b'M' => 2,
            _ => continue,
        };
        out[at] = String::from_utf8_lossy(f.value_bytes()).into_owned();
    }
    out
}
