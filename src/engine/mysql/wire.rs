//! dbduel's own blocking MariaDB/MySQL protocol connection: TLS after an SSLRequest, as the mysql
//! client's ssl-mode says, handshake and authentication (mysql_native_password,
//! caching_sha2_password with `mysql_common`'s scrambles and RSA, MariaDB's client_ed25519,
//! mysql_clear_password over a secure channel only), CLIENT_FOUND_ROWS so that an UPDATE counts the
//! rows it matched, COM_QUERY and the binary COM_STMT_* commands on one buffered socket, with
//! result rows counted straight from the read buffer and decoded only when the caller keeps them.
//! On MariaDB 10.6+ it asks for MARIADB_CLIENT_CACHE_METADATA: a prepared statement's result
//! columns come once, with the prepare, and executions send only a flag saying they are unchanged.
//! A LOAD DATA LOCAL INFILE request is answered with the rows of the load dbduel started, never a
//! file.
//!
//! dbduel's own connection because the `mysql` crate decoded every row: 2.4x sysbench's user-space
//! instructions per oltp_read_only transaction, where counting rows from the packets takes 0.4x
//! (BENCHMARKS.md).

use std::io::{self, Read, Write};
use std::net::TcpStream;
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::coop::{self, Coop};
use crate::engine::tls::{Mode, Tls, TlsStream, Transport};
use crate::engine::{SocketHandle, Value, login};

// Capability flags (the protocol's CLIENT_* constants).
const LONG_PASSWORD: u32 = 0x1;
/// Affected rows of an UPDATE count the rows it matched (as PostgreSQL, SQLite and Firebird
/// count them), not only those whose values changed.
const FOUND_ROWS: u32 = 0x2;
const LONG_FLAG: u32 = 0x4;
const CONNECT_WITH_DB: u32 = 0x8;
/// LOAD DATA LOCAL INFILE: the server asks the client for the file's bytes. dbduel answers
/// only the loads it started (`load_local`), with rows it generates; it never reads a file.
const LOCAL_FILES: u32 = 0x80;
const PROTOCOL_41: u32 = 0x200;
const SSL: u32 = 0x800;
const TRANSACTIONS: u32 = 0x2000;
const SECURE_CONNECTION: u32 = 0x8000;
const MULTI_STATEMENTS: u32 = 0x1_0000;
const MULTI_RESULTS: u32 = 0x2_0000;
const PS_MULTI_RESULTS: u32 = 0x4_0000;
const PLUGIN_AUTH: u32 = 0x8_0000;
const PLUGIN_AUTH_LENENC_DATA: u32 = 0x20_0000;
const DEPRECATE_EOF: u32 = 0x100_0000;
/// MariaDB's extended capability (bit 36 of the 64-bit flags, sent in the handshake's last
/// four reserved bytes): a prepared statement's result columns are sent once, at prepare and
/// when they change, instead of with every execution (MariaDB 10.6+).
const MARIADB_CACHE_METADATA: u32 = 1 << 4;
const WANTED: u32 = LONG_PASSWORD
    | FOUND_ROWS
    | LONG_FLAG
    | LOCAL_FILES
    | PROTOCOL_41
    | TRANSACTIONS
    | SECURE_CONNECTION
    | MULTI_STATEMENTS
    | MULTI_RESULTS
    | PS_MULTI_RESULTS
    | PLUGIN_AUTH
    | PLUGIN_AUTH_LENENC_DATA
    | DEPRECATE_EOF;

const SERVER_MORE_RESULTS_EXISTS: u16 = 0x8;
const UNSIGNED_FLAG: u16 = 0x20;
/// utf8mb4_general_ci.
const CHARSET: u8 = 45;
const MAX_PACKET: usize = 0xFF_FFFF;

// Column types that the binary protocol sends with a fixed size.
const T_TINY: u8 = 1;
const T_SHORT: u8 = 2;
const T_LONG: u8 = 3;
const T_FLOAT: u8 = 4;
const T_DOUBLE: u8 = 5;
const T_NULL: u8 = 6;
const T_TIMESTAMP: u8 = 7;
const T_LONGLONG: u8 = 8;
const T_INT24: u8 = 9;
const T_DATE: u8 = 10;
const T_TIME: u8 = 11;
const T_DATETIME: u8 = 12;
const T_YEAR: u8 = 13;
const T_VAR_STRING: u8 = 253;

/// Where the server listens.
#[derive(Clone)]
pub enum Address {
    Tcp(String, u16),
    Socket(String),
}

/// Who connects, to which database.
pub struct Login<'a> {
    pub user: &'a str,
    pub password: Option<&'a str>,
    pub database: Option<&'a str>,
    /// TLS over TCP (a Unix socket is secure already and never uses it).
    pub tls: &'a Tls,
}

enum Stream {
    Tcp(Coop<TcpStream>),
    Tls(Box<TlsStream>),
    #[cfg(unix)]
    Unix(Coop<UnixStream>),
}

impl Stream {
    /// The read deadline `set_timeout` gave the socket (read when an error needs it).
    fn deadline(&self) -> Option<Duration> {
        match self {
            Stream::Tcp(s) => s.get_ref().read_timeout(),
            Stream::Tls(s) => s.sock.get_ref().read_timeout(),
            #[cfg(unix)]
            Stream::Unix(s) => s.get_ref().read_timeout(),
        }
        .ok()
        .flatten()
    }
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_timeout(t);
                let s = s.get_ref();
                s.set_read_timeout(t).and(s.set_write_timeout(t))
            }
            Stream::Tls(s) => {
                s.sock.set_timeout(t);
                let s = s.sock.get_ref();
                s.set_read_timeout(t).and(s.set_write_timeout(t))
            }
            #[cfg(unix)]
            Stream::Unix(s) => {
                s.set_timeout(t);
                let s = s.get_ref();
                s.set_read_timeout(t).and(s.set_write_timeout(t))
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            #[cfg(unix)]
            Stream::Unix(s) => s.read(buf),
        }
        .map_err(|e| login::explain_deadline(e, self.deadline()))
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            // Each write is a whole request: seal and send it now.
            Stream::Tls(s) => s.write_all(buf).and_then(|_| s.flush()).map(|_| buf.len()),
            #[cfg(unix)]
            Stream::Unix(s) => s.write(buf),
        }
        .map_err(|e| login::explain_deadline(e, self.deadline()))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A failure: the server's error (number, message) or a lost connection.
#[derive(Debug)]
pub enum WireError {
    Server {
        code: u16,
        message: String,
    },
    Io(io::Error),
    Protocol(String),
    /// TLS could not be set up as the DSN asks, or a login would need it.
    Tls(String),
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        WireError::Io(e)
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Server { code, message } => write!(f, "{message} (error {code})"),
            WireError::Io(e) => write!(f, "{e}"),
            WireError::Protocol(m) => write!(f, "protocol error: {m}"),
            WireError::Tls(m) => write!(f, "{m}"),
        }
    }
}

type WireResult<T> = Result<T, WireError>;

/// A prepared statement on the server.
#[derive(Debug, Clone, Copy)]
pub struct Prepared {
    id: u32,
    params: u16,
}

/// The column facts a row decoder needs.
#[derive(Clone, Copy)]
struct Col {
    kind: u8,
    unsigned: bool,
}

/// The socket's read buffer: small for a session that reads small packets (an idle
/// connection, a point select: ten thousand sessions hold 2 KiB each), doubled each time a read
/// fills it, up to 64 KiB for big results. (std's BufReader zeroes its whole buffer at the first
/// read: 64 KiB resident for every session.)
struct Buffered {
    inner: Stream,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

impl Buffered {
    const FIRST: usize = 2 * 1024;
    const MOST: usize = 64 * 1024;

    fn new(inner: Stream) -> Buffered {
        Buffered {
            inner,
            buf: vec![0; Self::FIRST],
            pos: 0,
            end: 0,
        }
    }

    fn get_ref(&self) -> &Stream {
        &self.inner
    }

    fn get_mut(&mut self) -> &mut Stream {
        &mut self.inner
    }

    /// What is read and not yet taken.
    fn buffer(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }
}

impl Read for Buffered {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.end {
            if out.len() >= self.buf.len() {
                // Nothing buffered and a big read: straight into the caller's memory.
                return self.inner.read(out);
            }
            let n = self.inner.read(&mut self.buf)?;
            (self.pos, self.end) = (0, n);
            if n == self.buf.len() && n < Self::MOST {
                // A full buffer: more is likely coming, in bigger reads next time.
                self.buf.resize(n * 2, 0);
            }
        }
        let n = out.len().min(self.end - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

pub struct Wire {
    reader: Buffered,
    out: Vec<u8>,
    packet: Vec<u8>,
    cols: Vec<Col>,
    seq: u8,
    caps: u32,
    /// MARIADB_CACHE_METADATA was agreed: result columns of prepared statements, by id.
    cache_metadata: bool,
    stmt_cols: std::collections::HashMap<u32, Vec<Col>>,
    pub server_version: String,
    pub transport: Transport,
    /// The server's id of this connection, for KILL QUERY.
    pub connection_id: u32,
    /// A COM_QUERY to send right after the next `query` or `execute`, in the same write
    /// (`then_query`).
    then: Option<&'static str>,
}

impl Drop for Wire {
    fn drop(&mut self) {
        // COM_QUIT, best effort.
        let _ = self.command(&[0x01]);
    }
}

/// What the server's initial handshake offers.
struct Greeting {
    server_caps: u32,
    nonce: Vec<u8>,
    plugin: String,
}

impl Wire {
    /// Connect and authenticate.
    pub fn connect(address: &Address, login: &Login<'_>, timeout: Duration) -> WireResult<Wire> {
        let stream = match address {
            Address::Tcp(host, port) => {
                let s = coop::connect_host(host, *port, timeout)?;
                s.set_nodelay(true)?;
                Stream::Tcp(Coop::new(s))
            }
            #[cfg(unix)]
            Address::Socket(path) => Stream::Unix(Coop::new(UnixStream::connect(path)?)),
            #[cfg(not(unix))]
            Address::Socket(_) => {
                return Err(WireError::Protocol(
                    "unix sockets need a unix system".into(),
                ));
            }
        };
        stream.set_timeout(Some(timeout))?;
        let mut wire = Wire {
            reader: Buffered::new(stream),
            out: Vec::with_capacity(1024),
            packet: Vec::with_capacity(1024),
            cols: Vec::new(),
            seq: 0,
            caps: 0,
            cache_metadata: false,
            stmt_cols: std::collections::HashMap::new(),
            server_version: String::new(),
            connection_id: 0,
            then: None,
            transport: Transport::plain(match address {
                Address::Tcp(..) => "tcp",
                Address::Socket(_) => "unix",
            }),
        };
        let host = match address {
            Address::Tcp(host, _) => Some(host.as_str()),
            Address::Socket(_) => None,
        };
        wire.handshake(login, host)?;
        wire.reader.get_ref().set_timeout(None)?;
        Ok(wire)
    }

    /// A second handle on the socket, to shut it down from another thread.
    pub fn socket_handle(&self) -> Option<SocketHandle> {
        match self.reader.get_ref() {
            Stream::Tcp(s) => s.get_ref().try_clone().ok().map(SocketHandle::Tcp),
            Stream::Tls(s) => s.sock.get_ref().try_clone().ok().map(SocketHandle::Tcp),
            #[cfg(unix)]
            Stream::Unix(s) => s.get_ref().try_clone().ok().map(SocketHandle::Unix),
        }
    }

    /// Bound later reads and writes (None: no bound).
    pub fn set_timeout(&self, timeout: Option<Duration>) {
        let _ = self.reader.get_ref().set_timeout(timeout);
    }

    /// Ask for TLS (an SSLRequest: the handshake response's first 32 bytes with CLIENT_SSL),
    /// then run the TLS handshake on the same socket.
    fn start_tls(&mut self, tls: &Tls, host: &str, prefix: &[u8]) -> WireResult<()> {
        self.send(prefix)?;
        let tcp = match self.reader.get_ref() {
            Stream::Tcp(s) => Coop::new(s.get_ref().try_clone()?),
            _ => return Err(WireError::Protocol("TLS over a non-TCP socket".into())),
        };
        let stream = tls
            .handshake(host, tcp)
            .map_err(|e| WireError::Tls(e.to_string()))?;
        self.transport = Transport::of(&stream);
        *self.reader.get_mut() = Stream::Tls(Box::new(stream));
        Ok(())
    }

    /// Read the server's initial handshake (v10): its version, connection id and
    /// capabilities, the scramble and the authentication plugin it starts with.
    fn greeting(&mut self) -> WireResult<Greeting> {
        self.read_packet()?;
        let p = std::mem::take(&mut self.packet);
        if p.first() == Some(&0xFF) {
            return Err(server_error(&p));
        }
        // Initial handshake v10: version, server version\0, thread id, scramble part 1 (8),
        // filler, capabilities low, charset, status, capabilities high, scramble length,
        // reserved (10), scramble part 2, plugin name\0.
        let mut r = Reader::new(&p);
        let proto = r.u8()?;
        if proto != 10 {
            return Err(WireError::Protocol(format!(
                "unsupported handshake version {proto}"
            )));
        }
        self.server_version = String::from_utf8_lossy(r.null_terminated()?).into_owned();
        self.connection_id = r.u32()?;
        let mut nonce = r.take(8)?.to_vec();
        r.skip(1)?;
        let mut server_caps = r.u16()? as u32;
        let mut plugin = "mysql_native_password".to_string();
        if r.remaining() > 0 {
            r.skip(3)?;
            server_caps |= (r.u16()? as u32) << 16;
            let scramble_len = r.u8()? as usize;
            r.skip(6)?;
            // MariaDB (which leaves out CLIENT_MYSQL, the LONG_PASSWORD bit) puts its extended
            // capabilities in the last four reserved bytes.
            let extended = r.u32()?;
            self.cache_metadata =
                server_caps & LONG_PASSWORD == 0 && extended & MARIADB_CACHE_METADATA != 0;
            if server_caps & SECURE_CONNECTION != 0 {
                let n = scramble_len.saturating_sub(8).max(13).min(r.remaining());
                let part = r.take(n)?;
                let part = part.strip_suffix(&[0]).unwrap_or(part);
                nonce.extend_from_slice(part);
            }
            if server_caps & PLUGIN_AUTH != 0 && r.remaining() > 0 {
                let name = r.rest();
                let name = name.strip_suffix(&[0]).unwrap_or(name);
                plugin = String::from_utf8_lossy(name).into_owned();
            }
        }
        Ok(Greeting {
            server_caps,
            nonce,
            plugin,
        })
    }

    fn handshake(&mut self, login: &Login<'_>, host: Option<&str>) -> WireResult<()> {
        let Greeting {
            server_caps,
            nonce,
            plugin,
        } = self.greeting()?;
        let mut caps = WANTED & server_caps;
        if login.database.is_some() {
            caps |= CONNECT_WITH_DB & server_caps;
        }
        if caps & PROTOCOL_41 == 0 {
            return Err(WireError::Protocol("the server lacks protocol 4.1".into()));
        }
        let use_tls = match host {
            Some(_) if login.tls.mode != Mode::Disable => {
                if server_caps & SSL == 0 && login.tls.mode.required() {
                    return Err(WireError::Tls(
                        "the server does not support TLS, but ssl-mode requires it (give the server a certificate, or lower ssl-mode)".into(),
                    ));
                }
                server_caps & SSL != 0
            }
            _ => false,
        };
        if use_tls {
            caps |= SSL;
        }
        self.caps = caps;
        let password = login.password.unwrap_or("");

        // HandshakeResponse41; its first 32 bytes are the SSLRequest too.
        let mut b = Vec::with_capacity(128);
        b.extend_from_slice(&caps.to_le_bytes());
        b.extend_from_slice(&(MAX_PACKET as u32).to_le_bytes());
        b.push(CHARSET);
        b.extend_from_slice(&[0; 19]);
        if caps & LONG_PASSWORD == 0 && self.cache_metadata {
            b.extend_from_slice(&MARIADB_CACHE_METADATA.to_le_bytes());
        } else {
            b.extend_from_slice(&[0; 4]);
            self.cache_metadata = false;
        }
        self.seq = 1;
        if let (true, Some(host)) = (use_tls, host) {
            self.start_tls(login.tls, host, &b)?;
        }
        // A Unix socket or TLS: a password may travel as it is.
        let secure = host.is_none() || use_tls;
        let auth = scramble(&plugin, &nonce, password, secure)?;
        b.extend_from_slice(login.user.as_bytes());
        b.push(0);
        if caps & PLUGIN_AUTH_LENENC_DATA != 0 {
            put_lenenc(&mut b, auth.len() as u64);
        } else {
            b.push(auth.len() as u8);
        }
        b.extend_from_slice(&auth);
        if let Some(db) = login.database.filter(|_| caps & CONNECT_WITH_DB != 0) {
            b.extend_from_slice(db.as_bytes());
            b.push(0);
        }
        if caps & PLUGIN_AUTH != 0 {
            b.extend_from_slice(plugin.as_bytes());
            b.push(0);
        }
        self.send(&b)?;
        self.auth_loop(plugin, nonce, password, secure)
    }

    /// Answer the server until it accepts (OK) or refuses (ERR) the login.
    fn auth_loop(
        &mut self,
        mut plugin: String,
        mut nonce: Vec<u8>,
        password: &str,
        secure: bool,
    ) -> WireResult<()> {
        loop {
            self.read_packet()?;
            let p = std::mem::take(&mut self.packet);
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => {
                    return Err(match server_error(&p) {
                        WireError::Server { code, message } if code == 1045 || code == 1698 => {
                            WireError::Server {
                                code,
                                message: format!(
                                    "{message} (the server asked for {plugin}; over {})",
                                    self.transport.describe()
                                ),
                            }
                        }
                        e => e,
                    });
                }
                // AuthSwitchRequest: another plugin, a new nonce.
                Some(0xFE) => {
                    let mut r = Reader::new(&p[1..]);
                    plugin = String::from_utf8_lossy(r.null_terminated()?).into_owned();
                    let data = r.rest();
                    nonce = data.strip_suffix(&[0]).unwrap_or(data).to_vec();
                    let auth = scramble(&plugin, &nonce, password, secure)?;
                    self.send(&auth)?;
                }
                // AuthMoreData (caching_sha2_password): fast path done, or full auth needed.
                Some(0x01) if plugin == "caching_sha2_password" => match p.get(1) {
                    Some(0x03) => {}
                    Some(0x04) if secure => {
                        let mut clear = password.as_bytes().to_vec();
                        clear.push(0);
                        self.send(&clear)?;
                    }
                    Some(0x04) => self.send(&[0x02])?,
                    // The server's public key, PEM: encrypt password XOR nonce with it.
                    _ => {
                        let mut clear = password.as_bytes().to_vec();
                        clear.push(0);
                        for (i, c) in clear.iter_mut().enumerate() {
                            *c ^= nonce[i % nonce.len()];
                        }
                        let sealed = mysql_common::crypto::encrypt(&clear, &p[1..]);
                        self.send(&sealed)?;
                    }
                },
                _ => {
                    return Err(WireError::Protocol(format!(
                        "unexpected packet during authentication with {plugin}"
                    )));
                }
            }
        }
    }

    /// Read one whole packet (joining 16 MiB continuations) into `self.packet`.
    fn read_packet(&mut self) -> WireResult<()> {
        self.packet.clear();
        loop {
            let mut head = [0u8; 4];
            self.reader.read_exact(&mut head)?;
            let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
            self.seq = head[3].wrapping_add(1);
            let start = self.packet.len();
            // Copy straight out of the read buffer when the payload is there already.
            let buffered = self.reader.buffer();
            if buffered.len() >= len {
                self.packet.extend_from_slice(&buffered[..len]);
                self.reader.consume(len);
            } else {
                self.packet.resize(start + len, 0);
                self.reader.read_exact(&mut self.packet[start..])?;
            }
            if len < MAX_PACKET {
                return Ok(());
            }
        }
    }

    /// Send one payload as packet(s), continuing the current sequence.
    fn send(&mut self, payload: &[u8]) -> WireResult<()> {
        self.frame(payload);
        let sent = self.reader.get_mut().write_all(&self.out);
        self.out.clear();
        Ok(sent?)
    }

    /// Append one payload's packet(s) to the write buffer, continuing the current sequence.
    fn frame(&mut self, payload: &[u8]) {
        let mut chunks = payload.chunks(MAX_PACKET).peekable();
        if payload.is_empty() {
            self.out.extend_from_slice(&[0, 0, 0, self.seq]);
            self.seq = self.seq.wrapping_add(1);
        }
        while let Some(chunk) = chunks.next() {
            let len = chunk.len() as u32;
            self.out.extend_from_slice(&len.to_le_bytes()[..3]);
            self.out.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            self.out.extend_from_slice(chunk);
            if chunks.peek().is_none() && chunk.len() == MAX_PACKET {
                self.out.extend_from_slice(&[0, 0, 0, self.seq]);
                self.seq = self.seq.wrapping_add(1);
            }
        }
    }

    /// A COM_QUERY (`sql`, short) to follow the next `query` or `execute` in the same write: the
    /// server runs it after that command and answers it after, and that reply is read too (a
    /// server error in it is returned when the command itself succeeded).
    pub fn then_query(&mut self, sql: &'static str) {
        self.then = Some(sql);
    }

    /// Start a command and send it, with the query `then_query` asked to follow it; whether
    /// one follows.
    fn command_then(&mut self, payload: &[u8]) -> WireResult<bool> {
        self.seq = 0;
        self.frame(payload);
        let then = self.then.take();
        if let Some(sql) = then {
            let len = (sql.len() + 1) as u32;
            self.out.extend_from_slice(&len.to_le_bytes()[..3]);
            self.out.extend_from_slice(&[0, 0x03]);
            self.out.extend_from_slice(sql.as_bytes());
        }
        let sent = self.reader.get_mut().write_all(&self.out);
        self.out.clear();
        sent?;
        Ok(then.is_some())
    }

    /// A command's result, after the reply of the query that followed it, when one did.
    fn and_then<T>(&mut self, followed: bool, own: WireResult<T>) -> WireResult<T> {
        if !followed || matches!(own, Err(WireError::Io(_))) {
            return own;
        }
        let then = self.results(None, None);
        match (own, then) {
            (Ok(n), Ok(_)) => Ok(n),
            (Ok(_), Err(e)) => Err(e),
            (Err(e), _) => Err(e),
        }
    }

    /// Start a command: sequence 0.
    fn command(&mut self, payload: &[u8]) -> WireResult<()> {
        self.seq = 0;
        self.send(payload)
    }

    /// COM_QUERY: run text SQL; returns rows returned (or affected) by the last result, and
    /// keeps the rows of every result when asked.
    pub fn query(&mut self, sql: &str, keep: Option<&mut Vec<Vec<Value>>>) -> WireResult<u64> {
        let mut payload = std::mem::take(&mut self.packet);
        payload.clear();
        payload.push(0x03);
        payload.extend_from_slice(sql.as_bytes());
        let sent = self.command_then(&payload);
        self.packet = payload;
        let followed = sent?;
        let own = self.results(None, keep);
        self.and_then(followed, own)
    }

    /// LOAD DATA LOCAL INFILE: `sql` is the statement; when the server asks for the file,
    /// `fill` appends the next part of its bytes to the buffer it is given, and says whether
    /// more follow. Returns the rows the server took and its warnings.
    pub fn load_local(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> bool,
    ) -> WireResult<(u64, u16)> {
        let mut payload = Vec::with_capacity(sql.len() + 1);
        payload.push(0x03);
        payload.extend_from_slice(sql.as_bytes());
        self.command(&payload)?;
        self.read_packet()?;
        match self.packet.first() {
            Some(0xFF) => return Err(server_error(&self.packet)),
            Some(0xFB) => {}
            _ => {
                return Err(WireError::Protocol(
                    "LOAD DATA LOCAL INFILE: the server did not ask for the rows".into(),
                ));
            }
        }
        // The file's bytes in packets of the sequence the request began, then an empty one.
        let mut part = std::mem::take(&mut payload);
        loop {
            part.clear();
            let more = fill(&mut part);
            // A packet of the greatest length would be followed by an empty one, which ends
            // the file: the parts stay below it.
            for piece in part.chunks(MAX_PACKET - 1) {
                self.send(piece)?;
            }
            if !more {
                break;
            }
        }
        self.send(&[])?;
        self.read_packet()?;
        match self.packet.first() {
            Some(0xFF) => Err(server_error(&self.packet)),
            Some(0x00) => {
                let mut r = Reader::new(&self.packet[1..]);
                let rows = r.lenenc()?;
                r.lenenc()?; // last insert id
                r.u16()?; // status
                Ok((rows, r.u16()?))
            }
            _ => Err(WireError::Protocol(
                "LOAD DATA LOCAL INFILE: no OK after the rows".into(),
            )),
        }
    }

    /// COM_STMT_PREPARE.
    pub fn prepare(&mut self, sql: &str) -> WireResult<Prepared> {
        let mut payload = Vec::with_capacity(sql.len() + 1);
        payload.push(0x16);
        payload.extend_from_slice(sql.as_bytes());
        self.command(&payload)?;
        self.read_packet()?;
        let p = &self.packet;
        if p.first() == Some(&0xFF) {
            return Err(server_error(p));
        }
        let mut r = Reader::new(&p[1..]);
        let id = r.u32()?;
        let columns = r.u16()?;
        let params = r.u16()?;
        // Parameter and column definitions follow, each list closed by EOF unless deprecated;
        // the columns are kept when executions will not repeat them.
        let mut cols = Vec::new();
        for (n, keep) in [(params, false), (columns, true)] {
            if n > 0 {
                for _ in 0..n {
                    self.read_packet()?;
                    if keep && self.cache_metadata {
                        cols.push(column(&self.packet)?);
                    }
                }
                if self.caps & DEPRECATE_EOF == 0 {
                    self.read_packet()?;
                }
            }
        }
        if self.cache_metadata {
            self.stmt_cols.insert(id, cols);
        }
        Ok(Prepared { id, params })
    }

    /// COM_STMT_EXECUTE with `params`; like `query` for what it returns.
    pub fn execute(
        &mut self,
        stmt: Prepared,
        params: &[Value],
        keep: Option<&mut Vec<Vec<Value>>>,
    ) -> WireResult<u64> {
        if params.len() != stmt.params as usize {
            // Nothing goes: neither this command nor the query asked to follow it.
            self.then = None;
            return Err(WireError::Protocol(format!(
                "the statement takes {} parameters, {} given",
                stmt.params,
                params.len()
            )));
        }
        let mut b = std::mem::take(&mut self.packet);
        b.clear();
        b.push(0x17);
        b.extend_from_slice(&stmt.id.to_le_bytes());
        b.push(0); // no cursor
        b.extend_from_slice(&1u32.to_le_bytes()); // iteration count
        if !params.is_empty() {
            let bitmap = b.len();
            b.resize(bitmap + params.len().div_ceil(8), 0);
            for (i, v) in params.iter().enumerate() {
                if matches!(v, Value::Null) {
                    b[bitmap + i / 8] |= 1 << (i % 8);
                }
            }
            b.push(1); // types follow
            for v in params {
                let kind = match v {
                    Value::Null => T_NULL,
                    Value::Int(_) => T_LONGLONG,
                    Value::Float(_) => T_DOUBLE,
                    Value::Text(_) => T_VAR_STRING,
                };
                b.extend_from_slice(&[kind, 0]);
            }
            for v in params {
                match v {
                    Value::Null => {}
                    Value::Int(x) => b.extend_from_slice(&x.to_le_bytes()),
                    Value::Float(x) => b.extend_from_slice(&x.to_le_bytes()),
                    Value::Text(s) => {
                        put_lenenc(&mut b, s.len() as u64);
                        b.extend_from_slice(s.as_bytes());
                    }
                }
            }
        }
        let sent = self.command_then(&b);
        self.packet = b;
        let followed = sent?;
        let own = self.results(Some(stmt.id), keep);
        self.and_then(followed, own)
    }

    /// Read every result of a command. Rows are counted from the packet's first byte alone
    /// unless they are kept.
    /// `stmt`: the prepared statement executed (binary rows), None for a text query.
    fn results(
        &mut self,
        stmt: Option<u32>,
        mut keep: Option<&mut Vec<Vec<Value>>>,
    ) -> WireResult<u64> {
        loop {
            self.read_packet()?;
            let (n, status) = match self.packet.first() {
                Some(0xFF) => return Err(server_error(&self.packet)),
                Some(0x00) => ok_packet(&self.packet[1..])?,
                Some(0xFB) => {
                    // Not a load dbduel started: no file is sent (an empty one ends the
                    // request), and the server's answer to that is read and dropped.
                    self.send(&[])?;
                    self.read_packet()?;
                    return Err(WireError::Protocol(
                        "the server asked for a local file outside a load; none was sent".into(),
                    ));
                }
                _ => self.result_set(stmt, keep.as_deref_mut())?,
            };
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(n);
            }
        }
    }

    /// One result set, from its column count in the current packet: its columns, its rows
    /// (counted, and kept if asked), and the (rows, status flags) of the packet that ends it.
    fn result_set(
        &mut self,
        stmt: Option<u32>,
        mut keep: Option<&mut Vec<Vec<Value>>>,
    ) -> WireResult<(u64, u16)> {
        let binary = stmt.is_some();
        let deprecate_eof = self.caps & DEPRECATE_EOF != 0;
        self.result_columns(stmt)?;
        if !deprecate_eof {
            self.read_packet()?;
        }
        let mut rows = 0u64;
        loop {
            self.read_packet()?;
            let p = &self.packet;
            match p.first() {
                Some(0xFE) if p.len() < MAX_PACKET && (deprecate_eof || p.len() < 9) => {
                    break;
                }
                Some(0xFF) => return Err(server_error(p)),
                _ => {}
            }
            rows += 1;
            if let Some(keep) = keep.as_deref_mut() {
                let row = if binary {
                    binary_row(&self.packet, &self.cols)?
                } else {
                    text_row(&self.packet, &self.cols)?
                };
                keep.push(row);
            }
        }
        let p = &self.packet[1..];
        let status = if deprecate_eof {
            ok_packet(p)?.1
        } else {
            let mut r = Reader::new(p);
            r.skip(2)?;
            r.u16()?
        };
        Ok((rows, status))
    }

    /// The result set's columns into `self.cols`: the packets that follow the column count,
    /// or a prepared statement's cached ones when the server says they have not changed.
    fn result_columns(&mut self, stmt: Option<u32>) -> WireResult<()> {
        let mut r = Reader::new(&self.packet);
        let columns = r.lenenc()? as usize;
        // With cached metadata a flag byte says whether the columns follow.
        let cached = match stmt.and_then(|id| self.stmt_cols.get(&id)) {
            Some(cols) if r.remaining() > 0 && r.u8()? == 0 => Some(cols),
            _ => None,
        };
        if let Some(cols) = cached {
            self.cols.clone_from(cols);
            return Ok(());
        }
        self.cols.clear();
        for _ in 0..columns {
            self.read_packet()?;
            let col = column(&self.packet)?;
            self.cols.push(col);
        }
        if let Some(id) = stmt.filter(|_| self.cache_metadata) {
            self.stmt_cols.insert(id, self.cols.clone());
        }
        Ok(())
    }
}

/// The auth response a plugin computes from the nonce.
fn scramble(plugin: &str, nonce: &[u8], password: &str, secure: bool) -> WireResult<Vec<u8>> {
    let pass = password.as_bytes();
    match plugin {
        _ if password.is_empty() && plugin != "mysql_clear_password" => Ok(Vec::new()),
        "mysql_native_password" => Ok(mysql_common::scramble::scramble_native(nonce, pass)
            .map(|s| s.to_vec())
            .unwrap_or_default()),
        "caching_sha2_password" => Ok(mysql_common::scramble::scramble_sha256(nonce, pass)
            .map(|s| s.to_vec())
            .unwrap_or_default()),
        "client_ed25519" => Ok(ed25519_sign(nonce, pass).to_vec()),
        "mysql_clear_password" if secure => Ok([pass, &[0]].concat()),
        "mysql_clear_password" => Err(WireError::Tls(
            "the server asks for mysql_clear_password, which would send the password in the clear: connect over TLS (ssl-mode=REQUIRED or stronger) or a Unix socket".into(),
        )),
        other => Err(WireError::Protocol(format!(
            "the server asks for the authentication plugin '{other}'; dbduel speaks \
             mysql_native_password, caching_sha2_password, client_ed25519 and \
             mysql_clear_password (over TLS): give the user one of them"
        ))),
    }
}

/// MariaDB's client_ed25519: the nonce signed with Ed25519, the expanded secret key being the
/// SHA-512 of the password (MariaDB's auth_ed25519 plugin).
fn ed25519_sign(nonce: &[u8], password: &[u8]) -> [u8; 64] {
    use ed25519_dalek::hazmat::{ExpandedSecretKey, raw_sign};
    use sha2::Digest;
    let hash: [u8; 64] = sha2::Sha512::digest(password).into();
    let key = ExpandedSecretKey::from_bytes(&hash);
    let public = ed25519_dalek::VerifyingKey::from(&key);
    raw_sign::<sha2::Sha512>(&key, nonce, &public).to_bytes()
}

/// An ERR packet: 0xFF, code, '#' and SQLSTATE (protocol 4.1), message.
fn server_error(p: &[u8]) -> WireError {
    let code = u16::from_le_bytes([
        p.get(1).copied().unwrap_or(0),
        p.get(2).copied().unwrap_or(0),
    ]);
    let mut msg = p.get(3..).unwrap_or(&[]);
    if msg.first() == Some(&b'#') && msg.len() >= 6 {
        msg = &msg[6..];
    }
    WireError::Server {
        code,
        message: String::from_utf8_lossy(msg).into_owned(),
    }
}

/// An OK packet's affected rows and status (after the header byte).
fn ok_packet(p: &[u8]) -> WireResult<(u64, u16)> {
    let mut r = Reader::new(p);
    let affected = r.lenenc()?;
    r.lenenc()?; // last insert id
    Ok((affected, r.u16()?))
}

/// A column definition: skip catalog, schema, table, org_table, name, org_name; then the
/// fixed fields (charset, length, type, flags, decimals).
fn column(p: &[u8]) -> WireResult<Col> {
    let mut r = Reader::new(p);
    for _ in 0..6 {
        let n = r.lenenc()? as usize;
        r.skip(n)?;
    }
    r.lenenc()?;
    r.skip(2 + 4)?;
    let kind = r.u8()?;
    let flags = r.u16()?;
    Ok(Col {
        kind,
        unsigned: flags & UNSIGNED_FLAG != 0,
    })
}

fn text_row(p: &[u8], cols: &[Col]) -> WireResult<Vec<Value>> {
    let mut r = Reader::new(p);
    let mut row = Vec::with_capacity(cols.len());
    for col in cols {
        if r.peek() == Some(0xFB) {
            r.skip(1)?;
            row.push(Value::Null);
            continue;
        }
        let n = r.lenenc()? as usize;
        let bytes = r.take(n)?;
        // Numbers are parsed where they lie; only text is copied out.
        let text = std::str::from_utf8(bytes).ok();
        row.push(match col.kind {
            T_TINY | T_SHORT | T_LONG | T_LONGLONG | T_INT24 | T_YEAR => text
                .and_then(|t| t.parse::<i64>().ok())
                .map_or_else(|| Value::Text(owned_text(bytes)), Value::Int),
            T_FLOAT | T_DOUBLE => text
                .and_then(|t| t.parse::<f64>().ok())
                .map_or_else(|| Value::Text(owned_text(bytes)), Value::Float),
            _ => Value::Text(owned_text(bytes)),
        });
    }
    Ok(row)
}

/// Text of a value: valid UTF-8 is copied as it is (the fast check), anything else lossily.
fn owned_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

fn binary_row(p: &[u8], cols: &[Col]) -> WireResult<Vec<Value>> {
    let mut r = Reader::new(p);
    r.skip(1)?;
    let bitmap = r.take((cols.len() + 7 + 2) / 8)?;
    let mut row = Vec::with_capacity(cols.len());
    for (i, col) in cols.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            row.push(Value::Null);
            continue;
        }
        let int = |v: i64, u: u64| {
            if col.unsigned {
                Value::Int(u as i64)
            } else {
                Value::Int(v)
            }
        };
        row.push(match col.kind {
            T_TINY => {
                let b = r.u8()?;
                int(b as i8 as i64, b as u64)
            }
            T_SHORT | T_YEAR => {
                let v = r.u16()?;
                int(v as i16 as i64, v as u64)
            }
            T_LONG | T_INT24 => {
                let v = r.u32()?;
                int(v as i32 as i64, v as u64)
            }
            T_LONGLONG => {
                let v = u64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"));
                int(v as i64, v)
            }
            T_FLOAT => {
                Value::Float(f32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes")) as f64)
            }
            T_DOUBLE => Value::Float(f64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"))),
            T_DATE | T_DATETIME | T_TIMESTAMP => {
                let n = r.u8()? as usize;
                Value::Text(datetime(r.take(n)?, col.kind == T_DATE))
            }
            T_TIME => {
                let n = r.u8()? as usize;
                Value::Text(time(r.take(n)?))
            }
            _ => {
                let n = r.lenenc()? as usize;
                Value::Text(owned_text(r.take(n)?))
            }
        });
    }
    Ok(row)
}

/// A binary DATE/DATETIME/TIMESTAMP (0, 4, 7 or 11 bytes) as `YYYY-MM-DD[ HH:MM:SS[.ffffff]]`.
fn datetime(b: &[u8], date_only: bool) -> String {
    let g = |i: usize| b.get(i).copied().unwrap_or(0) as u32;
    let year = g(0) | (g(1) << 8);
    let mut s = format!("{year:04}-{:02}-{:02}", g(2), g(3));
    if !date_only {
        s.push_str(&format!(" {:02}:{:02}:{:02}", g(4), g(5), g(6)));
        if b.len() >= 11 {
            let micros = g(7) | (g(8) << 8) | (g(9) << 16) | (g(10) << 24);
            s.push_str(&format!(".{micros:06}"));
        }
    }
    s
}

/// A binary TIME (0, 8 or 12 bytes) as `[-]HH:MM:SS[.ffffff]`, days folded into hours.
fn time(b: &[u8]) -> String {
    let g = |i: usize| b.get(i).copied().unwrap_or(0) as u32;
    let sign = if g(0) == 1 { "-" } else { "" };
    let days = g(1) | (g(2) << 8) | (g(3) << 16) | (g(4) << 24);
    let mut s = format!("{sign}{:02}:{:02}:{:02}", days * 24 + g(5), g(6), g(7));
    if b.len() >= 12 {
        let micros = g(8) | (g(9) << 8) | (g(10) << 16) | (g(11) << 24);
        s.push_str(&format!(".{micros:06}"));
    }
    s
}

fn put_lenenc(b: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => b.push(n as u8),
        251..=0xFFFF => {
            b.push(0xFC);
            b.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            b.push(0xFD);
            b.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            b.push(0xFE);
            b.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// A cursor over a packet's payload; running past its end is a protocol error.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b, pos: 0 }
    }
    fn remaining(&self) -> usize {
        self.b.len() - self.pos
    }
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }
    fn take(&mut self, n: usize) -> WireResult<&'a [u8]> {
        if self.remaining() < n {
            return Err(WireError::Protocol("packet shorter than announced".into()));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn skip(&mut self, n: usize) -> WireResult<()> {
        self.take(n).map(|_| ())
    }
    fn rest(&mut self) -> &'a [u8] {
        let s = &self.b[self.pos..];
        self.pos = self.b.len();
        s
    }
    fn u8(&mut self) -> WireResult<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> WireResult<u16> {
        let s = self.take(2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> WireResult<u32> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn null_terminated(&mut self) -> WireResult<&'a [u8]> {
        let rest = &self.b[self.pos..];
        let n = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| WireError::Protocol("unterminated string".into()))?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }
    fn lenenc(&mut self) -> WireResult<u64> {
        Ok(match self.u8()? {
            0xFC => self.u16()? as u64,
            0xFD => {
                let s = self.take(3)?;
                u32::from_le_bytes([s[0], s[1], s[2], 0]) as u64
            }
            0xFE => u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")),
            n => n as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_buffer_starts_small_grows_when_filled_and_loses_nothing() {
        let (mine, theirs) = UnixStream::pair().unwrap();
        let sent: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let writer = {
            let sent = sent.clone();
            std::thread::spawn(move || {
                let mut theirs = theirs;
                // A small message first: the buffer stays small for it.
                theirs.write_all(&sent[..100]).unwrap();
                std::thread::sleep(Duration::from_millis(100));
                theirs.write_all(&sent[100..]).unwrap();
            })
        };
        let mut r = Buffered::new(Stream::Unix(Coop::new(mine)));
        let mut got = vec![0u8; 100];
        r.read_exact(&mut got).unwrap();
        assert_eq!(r.buf.len(), Buffered::FIRST);
        // Then reads of every size, through the buffer and around it.
        let mut sizes = [1usize, 4, 3, 700, 5000, 65536, 13].into_iter().cycle();
        while got.len() < sent.len() {
            let want = sizes.next().unwrap().min(sent.len() - got.len());
            let mut part = vec![0u8; want];
            r.read_exact(&mut part).unwrap();
            got.extend_from_slice(&part);
            assert!(r.buf.len() <= Buffered::MOST);
        }
        writer.join().unwrap();
        assert!(got == sent, "the bytes read differ from those sent");
        assert_eq!(
            r.buf.len(),
            Buffered::MOST,
            "a big transfer grows the buffer"
        );
    }

    #[test]
    fn lenenc_round_trips() {
        for n in [
            0u64,
            250,
            251,
            0xFFFF,
            0x1_0000,
            0xFF_FFFF,
            0x100_0000,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_lenenc(&mut b, n);
            assert_eq!(Reader::new(&b).lenenc().unwrap(), n, "{n}");
        }
    }

    #[test]
    fn binary_row_decodes_types_and_nulls() {
        let cols = [
            Col {
                kind: T_LONGLONG,
                unsigned: false,
            },
            Col {
                kind: T_NULL,
                unsigned: false,
            },
            Col {
                kind: T_VAR_STRING,
                unsigned: false,
            },
            Col {
                kind: T_DOUBLE,
                unsigned: false,
            },
            Col {
                kind: T_DATETIME,
                unsigned: false,
            },
        ];
        let mut p = vec![0x00, 0b0000_1000]; // header, null bitmap: column 1 (bit 3) is NULL
        p.extend_from_slice(&(-5i64).to_le_bytes());
        p.extend_from_slice(&[3, b'a', b'b', b'c']);
        p.extend_from_slice(&2.5f64.to_le_bytes());
        p.extend_from_slice(&[7, 0xEA, 0x07, 11, 22, 8, 30, 5]);
        let row = binary_row(&p, &cols).unwrap();
        assert_eq!(
            row,
            vec![
                Value::Int(-5),
                Value::Null,
                Value::Text("abc".into()),
                Value::Float(2.5),
                Value::Text("2026-11-22 08:30:05".into()),
            ]
        );
    }

    #[test]
    fn error_packet_message_and_code() {
        let mut p = vec![0xFF, 0xBD, 0x04];
        p.extend_from_slice(b"#40001Deadlock found");
        match server_error(&p) {
            WireError::Server { code, message } => {
                assert_eq!((code, message.as_str()), (1213, "Deadlock found"));
            }
            other => panic!("{other:?}"),
        }
    }
}
