//! Data source names: parsing `scheme://user:password@host:port/database?key=value` (`Dsn::parse`),
//! libpq's keyword/value form, `host=... port=... dbname=...` (`Dsn::conninfo`, a PostgreSQL
//! DSN as psql takes it), or a file path (`Dsn::parse_file`; `engine::parse_dsn` picks by the
//! scheme's registry entry),
//! and showing them without the password: `Display` hides the user information's and every secret
//! parameter's (`is_secret`: `password`, `sslpassword`, `pwd`...). `redact_text` and `redact_raw`
//! are the one redaction of DSN text, for plans stored and for messages.

use std::fmt;

use crate::error::Error;

/// A parsed DSN. The password is kept private so that it cannot be printed by accident.
#[derive(Clone)]
pub struct Dsn {
    pub scheme: String,
    pub user: Option<String>,
    password: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    /// Database name, or the file path for SQLite.
    pub database: String,
    pub params: Vec<(String, String)>,
}

impl Dsn {
    /// Parse a DSN of the URL form. `engine::parse_dsn` parses any DSN: it knows, from the
    /// engine registry, the schemes whose DSN names a file (`parse_file`).
    pub fn parse(text: &str) -> Result<Dsn, Error> {
        let scheme = Self::scheme_of(text)?;
        if !text[scheme.len() + 1..].starts_with("//") {
            return Err(Error::Usage(format!(
                "malformed --dsn '{}': expected {scheme}://user:password@host:port/database (two slashes after '{scheme}:')",
                redact_raw(text)
            )));
        }
        let url = url::Url::parse(text)
            .map_err(|e| Error::Usage(format!("malformed --dsn '{}': {e}", redact_raw(text))))?;
        let decode = |s: &str| percent_decode(s);
        Ok(Dsn {
            scheme,
            user: Some(url.username()).filter(|u| !u.is_empty()).map(decode),
            password: url.password().map(decode),
            host: url
                .host_str()
                .map(|h| h.trim_matches(|c| c == '[' || c == ']').to_string()),
            port: url.port(),
            database: decode(url.path().trim_start_matches('/')),
            params: url
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        })
    }

    /// The scheme of a DSN, in lower case; an error when there is none.
    pub fn scheme_of(text: &str) -> Result<String, Error> {
        let scheme = text
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if scheme.is_empty() || !text.contains(':') {
            return Err(Error::Usage(format!(
                "malformed --dsn '{}': expected scheme://user:password@host:port/database \
                 (postgres, mysql) or sqlite:///path/file.db",
                redact_raw(text)
            )));
        }
        Ok(scheme)
    }

    /// Whether `text` is libpq's keyword/value form (`host=localhost dbname=bench`): a keyword
    /// and `=` come before any `:` (a scheme's).
    pub fn is_conninfo(text: &str) -> bool {
        text.split_once('=').is_some_and(|(key, _)| {
            let key = key.trim();
            !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    }

    /// A PostgreSQL DSN from libpq's keyword/value form, as psql and libpq read it: `key=value`
    /// pairs apart by spaces, spaces allowed around `=`, a value with spaces or nothing in
    /// single quotes (`\'` and `\\` inside), each keyword the DSN parameter of its name (so
    /// `host`, `port`, `user`, `password`, `dbname`, `sslmode`... as in a URL's query). The
    /// error never shows a value.
    pub fn conninfo(text: &str) -> Result<Dsn, Error> {
        let bad = |what: &str| {
            Err(Error::Usage(format!(
                "malformed --dsn in libpq's keyword/value form ({what}): write key=value pairs apart by spaces, e.g. \"host=localhost port=5432 dbname=bench user=me\", a value with spaces in single quotes"
            )))
        };
        let mut params = Vec::new();
        let mut chars = text.chars().peekable();
        loop {
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
            if chars.peek().is_none() {
                break;
            }
            let mut key = String::new();
            while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '=') {
                key.push(c);
            }
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
            if chars.next() != Some('=') {
                return bad(&format!("'{key}' has no '='"));
            }
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
            let mut value = String::new();
            if chars.next_if_eq(&'\'').is_some() {
                loop {
                    match chars.next() {
                        Some('\\') => match chars.next() {
                            Some(c) => value.push(c),
                            None => return bad(&format!("the value of '{key}' ends in '\\'")),
                        },
                        Some('\'') => break,
                        Some(c) => value.push(c),
                        None => return bad(&format!("the quote of '{key}' is not closed")),
                    }
                }
            } else {
                while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                    match c {
                        '\\' => match chars.next() {
                            Some(c) => value.push(c),
                            None => return bad(&format!("the value of '{key}' ends in '\\'")),
                        },
                        c => value.push(c),
                    }
                }
            }
            params.push((key, value));
        }
        if params.is_empty() {
            return bad("no key=value pair");
        }
        Ok(Self::postgres_params(params))
    }

    /// A PostgreSQL DSN that is all parameters (each part of the server by its keyword).
    fn postgres_params(params: Vec<(String, String)>) -> Dsn {
        Dsn {
            scheme: "postgres".into(),
            user: None,
            password: None,
            host: None,
            port: None,
            database: String::new(),
            params,
        }
    }

    /// Parse a DSN that names a file: `scheme:///absolute/path` or `scheme:relative/path`,
    /// then `?key=value&...`. A file has no login: user information is refused, unshown.
    pub fn parse_file(text: &str) -> Result<Dsn, Error> {
        let scheme = Self::scheme_of(text)?;
        let rest = text[scheme.len() + 1..].trim_start_matches("//");
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        if text[scheme.len() + 1..].starts_with("//") && authority.contains('@') {
            return Err(Error::Usage(format!(
                "--dsn '{}': {scheme} opens a file, with no user or password: write {scheme}:///absolute/path or {scheme}:relative/path",
                redact_raw(text)
            )));
        }
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let params = query
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (k.to_string(), v.to_string())
            })
            .collect();
        Ok(Dsn {
            scheme,
            user: None,
            password: None,
            host: None,
            port: None,
            database: path.to_string(),
            params,
        })
    }

    /// A PostgreSQL DSN from pgbench's connection flags (`-h`, `-p`, `-U`, DBNAME), each as
    /// the DSN parameter of its name (so that a socket directory is a host too): what is left
    /// out comes from libpq's variables (PGHOST, ...) and defaults, as for any DSN.
    pub fn postgres(
        host: Option<&str>,
        port: Option<&str>,
        user: Option<&str>,
        database: Option<&str>,
    ) -> Dsn {
        let params = [
            ("host", host),
            ("port", port),
            ("user", user),
            ("dbname", database),
        ];
        Self::postgres_params(
            params
                .into_iter()
                .filter_map(|(k, v)| Some((k.to_string(), v?.to_string())))
                .collect(),
        )
    }

    /// A DSN for an SQLite file.
    pub fn sqlite(path: &std::path::Path) -> Dsn {
        Self::parse_file(&format!("sqlite://{}", path.display())).expect("a scheme is given")
    }

    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The same DSN with a password from elsewhere (`--password-file`).
    pub fn with_password(mut self, password: String) -> Dsn {
        self.password = Some(password);
        self
    }

    /// Refuse a parameter the engine does not take, naming those it does:
    /// "unknown parameter 'x' in --dsn ...: postgres accepts host, port, ...".
    pub fn only_params<'a>(
        &self,
        engine: &str,
        known: impl Iterator<Item = &'a str> + Clone,
    ) -> Result<(), Error> {
        match self
            .params
            .iter()
            .find(|(k, _)| !known.clone().any(|n| n == k))
        {
            Some((k, _)) => Err(Error::Usage(format!(
                "unknown parameter '{k}' in --dsn {self}: {engine} accepts {}",
                known.collect::<Vec<_>>().join(", ")
            ))),
            None => Ok(()),
        }
    }

    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the server runs on this machine: a file, a socket, or a loopback host (the DSN's,
    /// else its `host` parameter, else PGHOST for PostgreSQL, else libpq's and the mariadb
    /// client's default, the local socket).
    pub fn is_local(&self) -> bool {
        if self.host.is_none() && self.param("socket").is_some() {
            return true;
        }
        let host = self
            .host
            .clone()
            .or_else(|| self.param("host").map(str::to_string))
            .or_else(|| {
                matches!(self.scheme.as_str(), "postgres" | "postgresql")
                    .then(|| std::env::var("PGHOST").ok())
                    .flatten()
            })
            .unwrap_or_default();
        let first = host.split(',').next().unwrap_or_default().trim();
        first.is_empty()
            || first.starts_with('/')
            || first.eq_ignore_ascii_case("localhost")
            || first
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// `host:port` for messages.
    pub fn address(&self, default_port: u16) -> String {
        host_port(
            self.host.as_deref().unwrap_or("localhost"),
            self.port.unwrap_or(default_port),
        )
    }
}

/// A host and port as messages show them: `[::1]:5432` for an IPv6 address, `host:port`
/// otherwise.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Shown without the password, so a DSN may appear in messages and results.
impl fmt::Display for Dsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme)?;
        if let Some(host) = &self.host {
            if let Some(user) = &self.user {
                write!(f, "{user}@")?;
            }
            if host.contains(':') {
                write!(f, "[{host}]")?;
            } else {
                write!(f, "{host}")?;
            }
            if let Some(port) = self.port {
                write!(f, ":{port}")?;
            }
            f.write_str("/")?;
        }
        f.write_str(&self.database)?;
        let params: Vec<_> = self
            .params
            .iter()
            .map(|(k, v)| match is_secret(k) {
                true => format!("{k}=***"),
                false => format!("{k}={v}"),
            })
            .collect();
        if !params.is_empty() {
            write!(f, "?{}", params.join("&"))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Dsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dsn({self})")
    }
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The DSN parameters that carry a secret, on any engine: libpq's `password` and
/// `sslpassword` (the client key's passphrase), and the spellings JDBC drivers and ODBC
/// connection strings use (`pwd`, `passwd`, `pass`); compared without case, `-` as `_`.
const SECRET_PARAMS: &[&str] = &["password", "sslpassword", "pwd", "passwd", "pass"];

/// Whether a DSN parameter's value is a secret that must never be shown or stored.
pub fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    SECRET_PARAMS.contains(&key.as_str())
}

/// Every DSN password in a text (a plan file, a message, a command line) replaced by `***`:
/// the part between the first `:` and the `@` of each `scheme://user:password@`, and the value
/// of every secret parameter (`password=...`, see `is_secret`) wherever it appears.
pub fn redact_text(text: &str) -> String {
    redact_params(&redact_user_info(text))
}

/// The values of secret parameters (`?password=...`, `&sslpassword=...`, and the same in a
/// libpq key-value string, `password=...` after a space) replaced by `***`.
fn redact_params(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(eq) = rest.find('=') {
        let (head, tail) = rest.split_at(eq);
        // libpq's keyword/value form allows spaces around '='.
        let key = head.trim_end();
        let key_start = key
            .char_indices()
            .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        out.push_str(head);
        out.push('=');
        let tail = &tail[1..];
        if is_secret(&key[key_start..]) {
            let spaces = tail.len() - tail.trim_start().len();
            out.push_str(&tail[..spaces]);
            let tail = &tail[spaces..];
            let end = match tail.chars().next() {
                // A quoted value (libpq's keyword/value form): up to its closing quote.
                Some(q @ ('\'' | '"')) => quoted_end(tail, q),
                _ => plain_end(tail),
            };
            if end > 0 {
                out.push_str("***");
            }
            rest = &tail[end..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// Where an unquoted value ends in `text`: at a separator of a URL's query, a connection
/// string's or libpq's keyword/value form, a backslash escaping the next character (libpq's).
fn plain_end(text: &str) -> usize {
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '&' | '#' | '"' | '\'' | ';' => return i,
            c if c.is_whitespace() => return i,
            _ => {}
        }
    }
    text.len()
}

/// Where a value quoted by `q` ends in `text` (which starts with the quote): after its closing
/// quote, a backslash escaping the next character; the whole text when it is not closed.
fn quoted_end(text: &str, q: char) -> usize {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            c if c == q => return i + c.len_utf8(),
            _ => {}
        }
    }
    text.len()
}

/// The password of each `scheme://user:password@` replaced by `***`.
fn redact_user_info(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The authority ends at the path (or a quote, or a space); the user information
        // ends at its last '@', as URL parsers read it.
        let authority = tail
            .find(|c: char| matches!(c, '/' | '?' | '#' | '"' | '\'') || c.is_whitespace())
            .unwrap_or(tail.len());
        let at = tail[..authority].rfind('@');
        match at.and_then(|e| tail[..e].find(':').map(|c| (c, e))) {
            Some((colon, at)) => {
                out.push_str(&tail[..=colon]);
                out.push_str("***");
                rest = &tail[at..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// Remove a password from DSN text that could not be parsed: the user information's and
/// every secret parameter's.
pub fn redact_raw(text: &str) -> String {
    // The user information: from the scheme's ':' and its slashes (any number, when the DSN is
    // malformed) to the last '@'.
    let start = text.find(':').map(|s| {
        let slashes = text[s + 1..].len() - text[s + 1..].trim_start_matches('/').len();
        s + 1 + slashes
    });
    let text = match (start, text.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &text[s..at];
            let user = creds.split(':').next().unwrap_or_default();
            format!("{}{}@{}", &text[..s], user, &text[at + 1..])
        }
        _ => text.to_string(),
    };
    redact_params(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_hosts_keep_their_brackets() {
        let d = Dsn::parse("postgres://bob@[::1]:5433/bench").unwrap();
        assert_eq!(d.address(5432), "[::1]:5433");
        assert_eq!(d.to_string(), "postgres://bob@[::1]:5433/bench");
        assert_eq!(host_port("db.example.com", 3306), "db.example.com:3306");
    }

    #[test]
    fn password_never_displayed() {
        let d = Dsn::parse("postgres://bob:s3cret@127.0.0.1:5433/bench").unwrap();
        assert_eq!(d.password(), Some("s3cret"));
        assert_eq!(d.to_string(), "postgres://bob@127.0.0.1:5433/bench");
        assert!(!format!("{d:?}").contains("s3cret"));
    }

    #[test]
    fn passwords_redacted_in_plan_text() {
        let plan = "[dsn]\npostgres = \"postgres://bob:s3:cr@t@db:5432/b\"\nmysql = 'mysql://root@h/x'\n# see https://example.com/a\n";
        let red = redact_text(plan);
        assert!(!red.contains("s3:cr"), "{red}");
        assert!(red.contains("postgres://bob:***@db:5432/b"), "{red}");
        assert!(
            red.contains("mysql://root@h/x") && red.contains("https://example.com/a"),
            "{red}"
        );
    }

    #[test]
    fn secret_parameters_never_displayed() {
        for text in [
            "postgres://bob@db/b?sslmode=require&password=s3cret",
            "postgres://bob@db/b?PassWord=s3cret&sslmode=require",
            "mysql://bob@db/b?ssl-mode=REQUIRED&pwd=s3cret",
            "postgres://bob@db/b?sslpassword=s3cret",
        ] {
            let d = Dsn::parse(text).unwrap();
            let shown = format!("{d} {d:?}");
            assert!(!shown.contains("s3cret"), "{shown}");
            assert!(shown.contains("=***"), "{shown}");
            let red = redact_text(&format!("[dsn]\npostgres = \"{text}\"\n"));
            assert!(!red.contains("s3cret") && red.contains("=***"), "{red}");
            assert!(!redact_raw(text).contains("s3cret"));
        }
        let d = Dsn::parse("postgres://bob@db/b?sslmode=require&password=s3cret").unwrap();
        assert_eq!(
            d.param("sslmode"),
            Some("require"),
            "other parameters are kept"
        );
        assert_eq!(
            d.to_string(),
            "postgres://bob@db/b?sslmode=require&password=***"
        );
        let kv = redact_text("host=db password=s3cret user=bob");
        assert_eq!(kv, "host=db password=*** user=bob");
        assert_eq!(redact_text("𝒮=1 é password=x"), "𝒮=1 é password=***");
        let plain = "a = 1\nclients = [1, 2]\npasswords_seen = 3\n";
        assert_eq!(redact_text(plain), plain, "other keys are left alone");
    }

    #[test]
    fn sqlite_paths() {
        assert_eq!(
            Dsn::parse_file("sqlite:///tmp/a.db").unwrap().database,
            "/tmp/a.db"
        );
        assert_eq!(
            Dsn::parse_file("sqlite:rel.db?synchronous=NORMAL")
                .unwrap()
                .param("synchronous"),
            Some("NORMAL")
        );
    }

    #[test]
    fn malformed_is_usage_error_without_password() {
        let e = Dsn::parse("nonsense").unwrap_err().to_string();
        assert!(e.contains("malformed --dsn"), "{e}");
        let e = Dsn::parse("postgres://u:pw@host:notaport/db")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("pw@"), "{e}");
        let e = Dsn::parse("postgres:/db").unwrap_err().to_string();
        assert!(e.contains("two slashes"), "{e}");
    }

    #[test]
    fn libpq_keyword_value_form() {
        let text = r"host = 127.0.0.1 port=5433 dbname='my db' password='it\'s s3cret' user=me";
        assert!(Dsn::is_conninfo(text));
        let d = Dsn::conninfo(text).expect("parses");
        assert_eq!(d.scheme, "postgres");
        assert_eq!(d.param("host"), Some("127.0.0.1"));
        assert_eq!(d.param("port"), Some("5433"));
        assert_eq!(d.param("dbname"), Some("my db"));
        assert_eq!(d.param("password"), Some("it's s3cret"));
        assert_eq!(d.param("user"), Some("me"));
        assert!(!d.to_string().contains("s3cret"), "{d}");
        for url in [
            "postgres://u@h/db?sslmode=require",
            "sqlite:bench.db?mode=ro",
            "bench.db",
        ] {
            assert!(!Dsn::is_conninfo(url), "{url}");
        }
        for bad in [
            "host=h password='s3cret",
            "host=h password",
            "host=h password=s3cret\\",
        ] {
            let e = Dsn::conninfo(bad).unwrap_err().to_string();
            assert!(e.contains("keyword/value") && !e.contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn quoted_and_spaced_secrets_redacted() {
        for text in [
            "host=h password='s3cret plumb' dbname=x",
            "host=h password = \"s3cret\" dbname=x",
            r"host=h password=s3cret\ plumb dbname=x",
            "sqlite://u:s3cret@/tmp/x.db",
        ] {
            let r = redact_raw(text);
            assert!(
                !r.contains("s3cret") && !r.contains("plumb"),
                "{text} -> {r}"
            );
            assert!(
                r.contains("dbname=x") || r.contains("x.db"),
                "{text} -> {r}"
            );
        }
        let e = Dsn::parse_file("sqlite://u:s3cret@/tmp/x.db")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no user or password") && !e.contains("s3cret"),
            "{e}"
        );
    }
}
