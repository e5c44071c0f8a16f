//! Where a server engine's login comes from when the DSN leaves it out, as each client's users
//! already give it: a parameter's environment variable (each engine's own table: PG*,
//! MYSQL_UNIX_PORT, MYSQL_PWD), libpq's password file, and the connect timeout; a passed
//! connect timeout or read deadline said in words.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::dsn::Dsn;

/// Connect timeout when the DSN gives none (libpq waits forever; a benchmark should not).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An I/O error of a connection attempt, said plainly when it is the connect timeout running
/// out (a server that accepted the connection and never answered).
pub fn explain_timeout(e: std::io::Error, timeout: Duration) -> std::io::Error {
    if !is_deadline(&e) {
        return e;
    }
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "no answer within {} s (connect_timeout): the server is stalled or this is not its port",
            timeout.as_secs()
        ),
    )
}

/// An I/O error of a session bounded by a read deadline (`Session::set_timeout`; None: no
/// bound), said plainly when it is that deadline passing: a server that stopped answering,
/// not "Resource temporarily unavailable".
pub fn explain_deadline(e: std::io::Error, deadline: Option<Duration>) -> std::io::Error {
    match deadline {
        Some(t) if is_deadline(&e) => std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no answer within {} s (the session's read deadline): the server is stalled",
                t.as_secs_f64()
            ),
        ),
        _ => e,
    }
}

/// Whether an I/O error is a socket's timeout passing (a read or write timeout gives
/// `WouldBlock` on Unix).
pub fn is_deadline(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}

/// A DSN parameter, or else the environment variable paired with it in `params`.
pub fn param(dsn: &Dsn, key: &str, params: &[(&str, &str)]) -> Option<String> {
    dsn.param(key).map(str::to_string).or_else(|| {
        let var = params.iter().find(|(k, _)| *k == key)?.1;
        std::env::var(var).ok().filter(|v| !v.is_empty())
    })
}

/// A path under the home directory.
pub fn home(rel: &str) -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| Path::new(&h).join(rel))
}

/// `connect_timeout` in seconds, as libpq reads it (0: no limit; below 2: 2).
pub fn connect_timeout(value: Option<String>) -> Result<Duration, String> {
    let Some(text) = value else {
        return Ok(CONNECT_TIMEOUT);
    };
    let secs: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("connect_timeout '{text}' is not a whole number of seconds"))?;
    Ok(match secs {
        // No limit: a day stands for it, and keeps every timeout arithmetic finite.
        0 => Duration::from_secs(86_400),
        1 => Duration::from_secs(2),
        s => Duration::from_secs(s.min(86_400)),
    })
}

/// The password for (host, port, database, user) from a libpq password file: lines of
/// `hostname:port:database:username:password`, `*` matching anything, `\` escaping `:` and
/// `\`. Like libpq, a file that others may read is ignored, with a warning.
pub fn pgpass(file: &Path, host: &str, port: u16, database: &str, user: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        errln!(
            "warning: password file {} has group or world access and is ignored; make it u=rw (chmod 0600)",
            file.display()
        );
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let port = port.to_string();
    let wanted = [host, &port, database, user];
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(split_pgpass)
        .find(|fields| {
            fields.len() == 5
                && wanted
                    .iter()
                    .zip(fields)
                    .all(|(want, field)| field == "*" || field == want)
        })
        .map(|mut fields| fields.swap_remove(4))
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("one field").extend(chars.next()),
            // The password is the rest of the line, colons and all.
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_matches_wildcards_and_escapes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# comment\nother:5432:*:bob:no\n127.0.0.1:*:bench:bob:s3:cr\\\\et\n*:*:*:*:fallback\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let pw = |h, d, u| pgpass(&file, h, 5433, d, u);
        assert_eq!(
            pw("127.0.0.1", "bench", "bob").as_deref(),
            Some("s3:cr\\et")
        );
        assert_eq!(pw("other", "x", "bob").as_deref(), Some("fallback"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(pw("127.0.0.1", "bench", "bob"), None);
    }

    #[test]
    fn connect_timeout_as_libpq() {
        assert_eq!(connect_timeout(None).unwrap(), CONNECT_TIMEOUT);
        assert_eq!(
            connect_timeout(Some("1".into())).unwrap(),
            Duration::from_secs(2)
        );
        assert_eq!(
            connect_timeout(Some("30".into())).unwrap(),
            Duration::from_secs(30)
        );
        assert!(
            connect_timeout(Some("soon".into()))
                .unwrap_err()
                .contains("soon")
        );
    }
}
