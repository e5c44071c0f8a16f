//! A blocking PostgreSQL protocol connection: messages encoded and decoded by the
//! `postgres-protocol` crate, sent over a plain TCP or Unix socket with one write per request
//! and no runtime in between, so the client spends as little CPU per statement as libpq.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use postgres_protocol::{IsNull, Oid};

use super::Value;

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
}

impl From<io::Error> for PgError {
    fn from(e: io::Error) -> Self {
        PgError::Io(e)
    }
}

pub type PgResult<T> = Result<T, PgError>;

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
        }
    }
}

/// Where and as whom to connect.
pub struct ConnectParams<'a> {
    pub host: &'a str,
    pub port: u16,
    pub user: &'a str,
    pub password: Option<&'a str>,
    pub database: &'a str,
    pub application_name: &'a str,
    pub timeout: Duration,
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

pub struct Conn {
    stream: Stream,
    rbuf: BytesMut,
    wbuf: BytesMut,
    chunk: Box<[u8]>,
    pub server_version: String,
}

impl Conn {
    pub fn connect(p: &ConnectParams) -> PgResult<Conn> {
        let stream = if p.host.starts_with('/') {
            let path = format!("{}/.s.PGSQL.{}", p.host, p.port);
            Stream::Unix(UnixStream::connect(path)?)
        } else {
            let addr = (p.host, p.port).to_socket_addrs()?.next().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("host {} has no address", p.host),
                )
            })?;
            let tcp = TcpStream::connect_timeout(&addr, p.timeout)?;
            tcp.set_nodelay(true)?;
            Stream::Tcp(tcp)
        };
        let mut conn = Conn {
            stream,
            rbuf: BytesMut::with_capacity(16 * 1024),
            wbuf: BytesMut::with_capacity(4096),
            chunk: vec![0; 16 * 1024].into_boxed_slice(),
            server_version: String::new(),
        };
        let params = [
            ("user", p.user),
            ("database", p.database),
            ("application_name", p.application_name),
            ("client_encoding", "UTF8"),
        ];
        frontend::startup_message(params.iter().copied(), &mut conn.wbuf)?;
        conn.flush()?;
        conn.authenticate(p)?;
        Ok(conn)
    }

    fn authenticate(&mut self, p: &ConnectParams) -> PgResult<()> {
        let need_password = || PgError::Db {
            code: "28P01".into(),
            message: "the server asks for a password: put it in the DSN".into(),
        };
        let mut scram: Option<sasl::ScramSha256> = None;
        loop {
            match self.recv()? {
                Message::AuthenticationOk
                | Message::BackendKeyData(_)
                | Message::NoticeResponse(_) => {}
                Message::AuthenticationCleartextPassword => {
                    let pw = p.password.ok_or_else(need_password)?;
                    frontend::password_message(pw.as_bytes(), &mut self.wbuf)?;
                    self.flush()?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let pw = p.password.ok_or_else(need_password)?;
                    let hash = md5_hash(p.user.as_bytes(), pw.as_bytes(), body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.wbuf)?;
                    self.flush()?;
                }
                Message::AuthenticationSasl(body) => {
                    let pw = p.password.ok_or_else(need_password)?;
                    let mechs: Vec<String> =
                        body.mechanisms().map(|m| Ok(m.to_string())).collect()?;
                    if !mechs.iter().any(|m| m == sasl::SCRAM_SHA_256) {
                        return Err(PgError::Protocol(format!(
                            "unsupported authentication mechanisms {mechs:?}"
                        )));
                    }
                    let s =
                        sasl::ScramSha256::new(pw.as_bytes(), sasl::ChannelBinding::unsupported());
                    frontend::sasl_initial_response(
                        sasl::SCRAM_SHA_256,
                        s.message(),
                        &mut self.wbuf,
                    )?;
                    self.flush()?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| PgError::Protocol("unexpected SASL message".into()))?;
                    s.update(body.data())?;
                    frontend::sasl_response(s.message(), &mut self.wbuf)?;
                    self.flush()?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| PgError::Protocol("unexpected SASL message".into()))?;
                    s.finish(body.data())?;
                }
                Message::ParameterStatus(body) => {
                    if body.name()? == "server_version" {
                        self.server_version = body.value()?.to_string();
                    }
                }
                Message::ErrorResponse(body) => return Err(db_error(&body)),
                Message::ReadyForQuery(_) => return Ok(()),
                _ => {
                    return Err(PgError::Protocol(
                        "unexpected message during authentication".into(),
                    ));
                }
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.stream.write_all(&self.wbuf);
        self.wbuf.clear();
        result
    }

    fn recv(&mut self) -> io::Result<Message> {
        loop {
            if let Some(msg) = Message::parse(&mut self.rbuf)? {
                return Ok(msg);
            }
            let n = self.stream.read(&mut self.chunk)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
            self.rbuf.extend_from_slice(&self.chunk[..n]);
        }
    }

    /// Read the replies up to ReadyForQuery, collecting rows; the first error wins.
    fn finish(&mut self, out: &mut Output) -> PgResult<()> {
        let mut error = None;
        loop {
            match self.recv()? {
                Message::RowDescription(body) => {
                    out.columns = body.fields().map(|f| Ok(f.type_oid())).collect()?;
                }
                Message::DataRow(body) => {
                    out.count += 1;
                    if let Some(rows) = out.rows.as_deref_mut() {
                        rows.push(decode_row(&body, &out.columns)?);
                    }
                }
                Message::CommandComplete(body) => {
                    let tag = body.tag()?;
                    if let Some(n) = tag.rsplit(' ').next().and_then(|n| n.parse().ok()) {
                        out.count = n;
                    }
                }
                Message::ErrorResponse(body) => {
                    error.get_or_insert_with(|| db_error(&body));
                }
                Message::ReadyForQuery(_) => return error.map_or(Ok(()), Err),
                _ => {}
            }
        }
    }

    /// Simple query protocol: one or more statements as text.
    pub fn query(&mut self, sql: &str, out: &mut Output) -> PgResult<()> {
        frontend::query(sql, &mut self.wbuf)?;
        self.flush()?;
        self.finish(out)
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
        let formats = stmt
            .params
            .iter()
            .map(|oid| i16::from(matches!(*oid, INT2 | INT4 | INT8)));
        let bound = frontend::bind(
            "",
            &stmt.name,
            formats,
            stmt.params.iter().zip(values),
            encode,
            [0i16],
            &mut self.wbuf,
        );
        if let Err(e) = bound {
            self.wbuf.clear();
            let message = match e {
                frontend::BindError::Conversion(e) => e.to_string(),
                frontend::BindError::Serialization(e) => e.to_string(),
            };
            return Err(PgError::Db {
                code: "22003".into(),
                message: format!("parameter does not fit its column: {message}"),
            });
        }
        frontend::execute("", 0, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.flush()?;
        if out.rows.is_some() {
            out.columns.clone_from(&stmt.columns);
        }
        self.finish(out)
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
                    self.finish(&mut Output::new(None))?;
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
        let finished = self.finish(&mut out);
        result.and(finished).map(|_| out.count)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        frontend::terminate(&mut self.wbuf);
        let _ = self.flush();
    }
}

fn encode(
    (oid, value): (&Oid, &Value),
    buf: &mut BytesMut,
) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
    match (value, *oid) {
        (Value::Null, _) => return Ok(IsNull::Yes),
        (Value::Int(v), INT2) => postgres_protocol::types::int2_to_sql(i16::try_from(*v)?, buf),
        (Value::Int(v), INT4) => postgres_protocol::types::int4_to_sql(i32::try_from(*v)?, buf),
        (Value::Int(v), INT8) => postgres_protocol::types::int8_to_sql(*v, buf),
        (Value::Text(s), INT2 | INT4 | INT8) => {
            let v: i64 = s.trim().parse()?;
            encode((oid, &Value::Int(v)), buf)?;
        }
        (Value::Text(s), _) => buf.extend_from_slice(s.as_bytes()),
        (v, INT2 | INT4 | INT8) => return Err(format!("{v} is not an integer").into()),
        (v, _) => buf.extend_from_slice(v.to_string().as_bytes()),
    }
    Ok(IsNull::No)
}

fn decode_row(
    body: &postgres_protocol::message::backend::DataRowBody,
    columns: &[Oid],
) -> PgResult<Vec<Value>> {
    let buf = body.buffer();
    let mut ranges = body.ranges();
    let mut row = Vec::new();
    let mut i = 0;
    while let Some(range) = ranges.next()? {
        let value = match range {
            None => Value::Null,
            Some(r) => {
                let text = String::from_utf8_lossy(&buf[r]).into_owned();
                match columns.get(i).copied() {
                    Some(INT2 | INT4 | INT8) => {
                        text.parse().map(Value::Int).unwrap_or(Value::Text(text))
                    }
                    Some(FLOAT4 | FLOAT8) => {
                        text.parse().map(Value::Float).unwrap_or(Value::Text(text))
                    }
                    Some(BOOL) => Value::Int(i64::from(text == "t")),
                    _ => Value::Text(text),
                }
            }
        };
        row.push(value);
        i += 1;
    }
    Ok(row)
}

fn db_error(body: &postgres_protocol::message::backend::ErrorResponseBody) -> PgError {
    let (mut code, mut message) = (String::new(), String::new());
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    PgError::Db { code, message }
}
