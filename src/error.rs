//! The error that ends a command, by cause: one variant per thing that went wrong (bad input,
//! connection, database, a file with its path and what was being done, the temporary directory, the
//! results store, a stored run that cannot be read, a result that could not be written and where it
//! went instead, a managed server, a client thread, Ctrl-C), carrying the path or the value it is
//! about, and the exit code derived from the variant. Every message says what to change; none
//! carries a password (a DSN displays without it).

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Input that cannot be run as given: a flag, a DSN, a plan, a script, a workload file, a
    /// workload's option, a database that is not prepared. The message names what to change.
    #[error("{0}")]
    Usage(String),
    /// A database could not be reached, or refused the login.
    #[error("{0}")]
    Connect(String),
    /// A statement outside the measured transactions failed (prepare, check, cleanup, a managed
    /// server's setup).
    #[error("{0}")]
    Database(String),
    /// A file or directory could not be read, written or created.
    #[error("cannot {doing} {}: {source}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// No temporary directory could be made (for a run's SQLite file, a sweep, a server).
    #[error("cannot create a temporary directory in {}: {source} (set TMPDIR to a writable directory)", std::env::temp_dir().display())]
    TempDir { source: io::Error },
    /// The results store refused: its path (or DSN), the database's reason and what to do about it.
    #[error("results store {}: {message}", path.display())]
    Store { path: PathBuf, message: String },
    /// A run stored by this or another version cannot be read back.
    #[error("run {id} in the results store cannot be read: {message}")]
    StoredRun { id: i64, message: String },
    /// A measured result could not be written where it was asked for; `kept` says where it
    /// went instead, if anywhere.
    #[error("{cause}{}", match kept {
        Ok(file) => format!(" (the result is kept in {})", file.display()),
        Err(why) => format!(" (the result could not be kept elsewhere: {why})"),
    })]
    Unsaved {
        cause: Box<Error>,
        kept: Result<PathBuf, String>,
    },
    /// A managed server, or a program it needs, could not be set up, started or stopped.
    #[error("{0}")]
    Server(String),
    /// The system refused a client thread.
    #[error("cannot start client thread {id}: {source}")]
    Thread { id: u32, source: io::Error },
    /// Ctrl-C.
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Interrupted => 130,
            Error::Unsaved { cause, .. } => cause.exit_code(),
            Error::Usage(_)
            | Error::Connect(_)
            | Error::Database(_)
            | Error::Io { .. }
            | Error::TempDir { .. }
            | Error::Store { .. }
            | Error::StoredRun { .. }
            | Error::Server(_)
            | Error::Thread { .. } => 2,
        }
    }

    /// A file or directory operation that failed on `path`.
    pub fn io(doing: &'static str, path: &Path) -> impl FnOnce(io::Error) -> Error {
        let path = path.to_path_buf();
        move |source| Error::Io {
            doing,
            path,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_names_what_and_where() {
        let e = Error::io("write", Path::new("/x/report.html"))(io::Error::from(
            io::ErrorKind::PermissionDenied,
        ));
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        assert!(text.starts_with("cannot write /x/report.html: "), "{text}");
        assert!(matches!(e, Error::Io { ref path, .. } if path == Path::new("/x/report.html")));
    }

    #[test]
    fn unsaved_says_where_the_result_went_and_keeps_the_cause_exit_code() {
        let store = || {
            Box::new(Error::Store {
                path: "r.db".into(),
                message: "database or disk is full".into(),
            })
        };
        let kept = Error::Unsaved {
            cause: store(),
            kept: Ok(Path::new(".").join("p.json")),
        };
        assert_eq!(
            kept.to_string(),
            "results store r.db: database or disk is full (the result is kept in ./p.json)"
        );
        assert_eq!(kept.exit_code(), 2);
        let lost = Error::Unsaved {
            cause: Box::new(Error::Interrupted),
            kept: Err("./p.json: no space".into()),
        };
        assert!(
            lost.to_string()
                .ends_with("could not be kept elsewhere: ./p.json: no space)")
        );
        assert_eq!(lost.exit_code(), 130);
    }
}
