//! Managed local servers: a fresh data directory, a free loopback port, the engine's server
//! started under its service account when dbduel runs as root, readiness awaited, the log
//! kept, and a clean stop. One file per server kind; the test suite starts its servers here.

mod mysql;
mod postgres;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use mysql::start_mariadb;
pub use postgres::start_postgres;

use crate::Error;
use crate::dsn::Dsn;

/// A running server that dbduel started. Stopping it (or dropping it) shuts it down.
pub struct Server {
    pub kind: &'static str,
    pub port: u16,
    pub version: String,
    /// Superuser DSN (with password) to reach the server.
    dsn: String,
    child: Option<Child>,
    log: PathBuf,
    /// Keeps the data directory alive until the server is dropped.
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    /// The DSN of a database on this server (the password included: keep it out of output).
    pub fn dsn(&self, database: &str) -> Dsn {
        Dsn::parse(&format!("{}{database}", self.dsn)).expect("managed server DSN parses")
    }

    /// The DSN text, password included, for handing to a child process.
    pub fn dsn_text(&self, database: &str) -> String {
        format!("{}{database}", self.dsn)
    }

    /// The server's main process, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// The last lines of the server's log, for error messages.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }

    /// Shut the server down and wait for it (fast shutdown: SIGINT for both engines' servers).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill only sends a signal to the process we started.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// A port on 127.0.0.1 that nothing listens on right now.
pub fn free_port() -> Result<u16, Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::Io(format!("no free loopback port: {e}")))?;
    Ok(listener
        .local_addr()
        .map_err(|e| Error::Io(e.to_string()))?
        .port())
}

/// The uid and gid of a service account, when dbduel runs as root and the account exists.
fn service_account(name: &str) -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions; getpwnam returns a pointer into static storage
    // that we read at once.
    unsafe {
        if libc::geteuid() != 0 {
            return None;
        }
        let cname = std::ffi::CString::new(name).ok()?;
        let pw = libc::getpwnam(cname.as_ptr());
        if pw.is_null() {
            return None;
        }
        Some(((*pw).pw_uid, (*pw).pw_gid))
    }
}

/// Give a path to the service account (recursively for a directory).
fn chown(path: &Path, account: Option<(u32, u32)>) -> Result<(), Error> {
    if let Some((uid, gid)) = account {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|e| {
            Error::Io(format!(
                "cannot give {} to the service account: {e}",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// A private temporary directory that a service account can enter.
fn server_dir(prefix: &str) -> Result<tempfile::TempDir, Error> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| Error::Io(format!("cannot create a data directory (set TMPDIR): {e}")))?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::Io(e.to_string()))?;
    Ok(dir)
}

/// A command that runs as the service account when there is one.
fn command(program: &Path, account: Option<(u32, u32)>) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    if let Some((uid, gid)) = account {
        cmd.uid(uid).gid(gid);
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// Send a command's output to the log file.
fn log_output(cmd: &mut Command, log: &Path) -> Result<(), Error> {
    let out = File::options()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::Io(e.to_string()))?;
    let err = out.try_clone().map_err(|e| Error::Io(e.to_string()))?;
    cmd.stdout(out).stderr(err);
    Ok(())
}

/// Run a setup command to completion; its output goes to the log, and its failure quotes it.
fn run_logged(mut cmd: Command, log: &Path, what: &str) -> Result<(), Error> {
    log_output(&mut cmd, log)?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    let status = cmd
        .status()
        .map_err(|e| Error::Io(format!("cannot run {what} ({program}): {e}")))?;
    if !status.success() {
        return Err(Error::Io(format!(
            "{what} failed ({status}); its log ends with:\n{}",
            log_tail(log)
        )));
    }
    Ok(())
}

/// Start a server process with its output going to the log.
fn spawn_logged(mut cmd: Command, log: &Path, what: &str) -> Result<Child, Error> {
    log_output(&mut cmd, log)?;
    cmd.spawn()
        .map_err(|e| Error::Io(format!("cannot start {what}: {e}")))
}

/// Wait until `ready` succeeds; fail with the log's tail when the process exits or time runs out.
fn wait_ready(
    child: &mut Child,
    log: &Path,
    what: &str,
    mut ready: impl FnMut() -> bool,
) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Io(format!(
                "{what} exited ({status}) while starting; its log ends with:\n{}",
                log_tail(log)
            )));
        }
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    Err(Error::Io(format!(
        "{what} did not accept connections within 60 s; its log ends with:\n{}",
        log_tail(log)
    )))
}

/// The first existing file among candidates: names searched on PATH, then fixed locations.
fn find_binary(names: &[&str], dirs: &[PathBuf]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut all: Vec<PathBuf> = dirs.to_vec();
    all.extend(std::env::split_paths(&path));
    all.extend(["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"].map(PathBuf::from));
    all.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}

/// A random password for a server's superuser (never printed).
fn random_password() -> String {
    use rand::RngExt;
    let mut rng = rand::rng();
    (0..20)
        .map(|_| char::from(b"abcdefghijkmnopqrstuvwxyz23456789"[rng.random_range(0..33)]))
        .collect()
}
