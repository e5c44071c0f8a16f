//! Managed local servers: a data directory wherever the user says (or a temporary one), a free or
//! chosen loopback port, the engine's server started under its service account when dbduel runs as
//! root and in its own process group (a Ctrl-C meant for dbduel does not reach it), with a
//! parent-death signal unless `server start` detaches it, readiness awaited, the log kept (its tail
//! in errors), settings applied at start and read back, restarts with other settings, a clean stop.
//! A state file serves `server stop/status`, with the main process's start time, so that a pid
//! taken by another process is not taken for the server. The directory is closed (0700) at every
//! start; another user's, or one holding something else, is refused before anything is written, as
//! are ports below 1024 and socket paths too long, before init. `answers` (a connection within a
//! bound) and `kill` (the whole process tree) serve a server that stalled.
//!
//! One file per server kind: `postgres.rs`, `mysql.rs` and `firebird.rs` give a `ServerKind` each
//! (binaries, init, command line, stop signal, user setup, how a sweep gets a fresh database, and
//! its profile rules, a `Tuning`: the `tuned` knobs from the machine's facts, what `unsafe` turns
//! off, the connection limit), listed in `KINDS`; `sqlite.rs` the embedded SQLite's `Tuning` (DSN
//! parameters), listed in `EMBEDDED`; `profile.rs` computes the settings of each profile from every
//! engine's `Tuning` without naming one.

mod firebird;
mod mysql;
mod postgres;
pub mod profile;
mod sqlite;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::dsn::Dsn;
use crate::engine::{self, EngineOptions, ErrorClass, Protocol, Session};
use crate::error::Error;
use profile::Tuning;

pub use firebird::FIREBIRD;
pub use mysql::MARIADB;
pub use postgres::POSTGRES;

/// Every server kind dbduel can manage. Adding one adds a file and a line here.
pub static KINDS: &[&ServerKind] = &[&POSTGRES, &MARIADB, &FIREBIRD];

/// The profile rules of the embedded engines, whose knobs are DSN parameters. Adding one adds
/// a file and a line here.
pub static EMBEDDED: &[&Tuning] = &[&sqlite::TUNING];

/// The profile rules of every engine dbduel tunes: each managed server kind's, then the
/// embedded engines'.
pub fn tunings() -> impl Iterator<Item = &'static Tuning> {
    KINDS
        .iter()
        .map(|k| &k.tuning)
        .chain(EMBEDDED.iter().copied())
}

/// The managed server kind of an engine (None: an embedded engine, or one dbduel cannot start).
pub fn kind_for(engine: &str) -> Option<&'static ServerKind> {
    KINDS.iter().copied().find(|k| k.engine == engine)
}

/// Whether this machine has the binaries of a server kind.
pub fn installed(kind: &ServerKind) -> bool {
    (kind.binaries)(None).is_some()
}

/// A server kind's binaries (initialiser, server), `bin_dir` first; an error naming the
/// package to install when they are not there.
pub fn binaries(kind: &ServerKind, bin_dir: Option<&Path>) -> Result<(PathBuf, PathBuf), Error> {
    (kind.binaries)(bin_dir).ok_or_else(|| {
        Error::Usage(format!(
            "{} server binaries not found (looked in --bin-dir, PATH, /usr/sbin, /usr/lib): install the {} package or give --bin-dir",
            kind.product, kind.package
        ))
    })
}

/// A service account: uid and gid.
pub type Account = Option<(u32, u32)>;

/// Settings given to a server at start: (name, value).
pub type Settings = [(String, String)];
/// One setting: its knob and value, in the engine's own words.
pub type Setting = (String, String);

/// A kind of server dbduel can manage. Each kind lives in its own file.
pub struct ServerKind {
    /// The engine (registry name) whose DSN reaches it.
    pub engine: &'static str,
    pub product: &'static str,
    /// The Debian package that provides it, for error messages.
    pub package: &'static str,
    /// The service account it runs as when dbduel runs as root.
    pub account: &'static str,
    /// Find the binaries: (initialiser, server), searching `bin_dir` first.
    pub binaries: fn(Option<&Path>) -> Option<(PathBuf, PathBuf)>,
    /// Initialise `layout.data` (empty); `password` for the dbduel superuser, if any.
    pub init: fn(&Layout, &Path, Account, Option<&str>) -> Result<(), Error>,
    /// The server command line for a port and settings.
    pub command: fn(&Layout, &Path, u16, &Settings, Account) -> Command,
    /// DSN text (without database) of the dbduel superuser.
    pub dsn: fn(u16, Option<&str>) -> String,
    /// The database that always exists.
    pub default_db: &'static str,
    /// The signal that shuts it down quickly and cleanly.
    pub stop_signal: i32,
    /// After the first start: create the dbduel user where the kind needs it.
    pub setup: fn(&Layout, Option<&str>) -> Result<(), Error>,
    /// Give a sweep a fresh, empty database of this name (through a superuser session).
    pub fresh_db: fn(&mut dyn Session, &str) -> Result<(), Error>,
    /// Its profile rules (`profile::builtin`).
    pub tuning: Tuning,
    /// The settings that make it keep its own figures per statement (`--server-statements`),
    /// from its server binary and the profile's and `--set`'s settings, which they follow and
    /// so override (a list they share is merged: PostgreSQL's shared_preload_libraries); or why
    /// it cannot keep them.
    pub statements: fn(&Path, &Settings) -> Result<Vec<Setting>, String>,
}

/// A fresh database by SQL: DROP DATABASE IF EXISTS, then CREATE DATABASE.
pub fn fresh_db_by_sql(admin: &mut dyn Session, name: &str) -> Result<(), Error> {
    let _ = admin.batch(&format!("DROP DATABASE IF EXISTS {name}"));
    admin
        .batch(&format!("CREATE DATABASE {name}"))
        .map_err(|e| Error::Database(e.message))
}

/// Where a managed server keeps its files.
pub struct Layout {
    pub dir: PathBuf,
    pub data: PathBuf,
    pub run: PathBuf,
    pub log: PathBuf,
}

impl Layout {
    fn new(dir: &Path) -> Layout {
        Layout {
            dir: dir.to_path_buf(),
            data: dir.join("data"),
            run: dir.join("run"),
            log: dir.join("server.log"),
        }
    }
    fn state(&self) -> PathBuf {
        self.dir.join("dbduel-server.json")
    }
    /// The dbduel superuser's password, readable by the invoking user only (0600).
    fn password(&self) -> PathBuf {
        self.dir.join("password")
    }
}

/// How to start a managed server.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Its directory; None: a temporary one, removed when the server is dropped.
    pub dir: Option<PathBuf>,
    /// Where that temporary directory goes; None: the system's temporary directory.
    pub temp_in: Option<PathBuf>,
    pub port: Option<u16>,
    /// Where its binaries are, before PATH and the usual Debian locations.
    pub bin_dir: Option<PathBuf>,
    pub settings: Vec<(String, String)>,
    /// Keep the server's own figures per statement (PostgreSQL's pg_stat_statements, MariaDB's
    /// performance_schema digests): off by default, as the engines ship, since keeping them
    /// costs the server (BENCHMARKS.md: 5-8% of point-select throughput).
    pub statements: bool,
    /// Keep the server running when dbduel exits (`server start`); otherwise the kernel stops
    /// it if dbduel dies without stopping it.
    pub keep_running: bool,
}

/// What `dbduel server status` reads back.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct State {
    pub engine: String,
    pub pid: u32,
    pub port: u16,
    pub dsn: String,
    pub version: String,
    /// The profile it was started with.
    #[serde(default)]
    pub profile: String,
    /// `server stop` stopped it (its pid may belong to another process by now).
    #[serde(default)]
    pub stopped: bool,
    /// When its main process started (clock ticks since boot, /proc's `starttime`): a process
    /// that has the pid now but another start time is not the server (None in state files
    /// written before it was kept).
    #[serde(default)]
    pub started: Option<u64>,
}

impl State {
    /// Whether the server runs: not stopped by `server stop`, and its process alive, the same
    /// process (its start time) and not one that took its pid after it crashed.
    pub fn running(&self) -> bool {
        !self.stopped
            && alive(self.pid)
            && self
                .started
                .is_none_or(|t| process_start(self.pid) == Some(t))
    }
}

/// When a process started, in clock ticks since boot (field 22 of /proc/PID/stat).
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// A running server that dbduel started. Dropping it stops it.
pub struct Server {
    pub kind: &'static ServerKind,
    pub port: u16,
    pub version: String,
    layout: Layout,
    server_bin: PathBuf,
    password: Option<String>,
    settings: Vec<(String, String)>,
    /// Keep the server's figures per statement (`ServerKind::statements` at every launch).
    statements: bool,
    /// Whether the last launch applied settings that keep them.
    keeps_statements: bool,
    keep_running: bool,
    child: Option<Child>,
    _temp: Option<tempfile::TempDir>,
}

impl Server {
    /// Initialise (when new) and start a server of `kind`.
    pub fn start(kind: &'static ServerKind, opts: &ServerOptions) -> Result<Server, Error> {
        let (init_bin, server_bin) = binaries(kind, opts.bin_dir.as_deref())?;
        let port = match opts.port {
            Some(p) => check_port(p)?,
            None => free_port()?,
        };
        let (layout, temp) = prepare_dir(kind, opts.dir.as_deref(), opts.temp_in.as_deref())?;
        let account = service_account(kind.account);
        let fresh = !layout.data.exists();
        let password = if fresh {
            let password = random_password();
            for p in [&layout.data, &layout.run] {
                std::fs::create_dir_all(p).map_err(Error::io("create", p))?;
                private_dir(p)?;
                chown(p, account)?;
            }
            private_dir(&layout.dir)?;
            chown(&layout.dir, account)?;
            (kind.init)(&layout, &init_bin, account, Some(&password))?;
            // After init, which may hand the whole directory to the service account.
            write_private(&layout.password(), &password)?;
            Some(password)
        } else {
            // A directory made before servers had passwords keeps its loopback trust.
            std::fs::read_to_string(layout.password())
                .ok()
                .map(|p| p.trim().to_string())
        };

        let mut server = Server {
            kind,
            port,
            version: String::new(),
            layout,
            server_bin,
            password,
            settings: opts.settings.clone(),
            statements: opts.statements,
            keeps_statements: false,
            keep_running: opts.keep_running,
            child: None,
            _temp: temp,
        };
        server.launch()?;
        if fresh {
            (kind.setup)(&server.layout, server.password.as_deref())?;
        }
        server.version = server
            .session()?
            .server_info()
            .map(|i| i.version)
            .unwrap_or_default();
        Ok(server)
    }

    fn launch(&mut self) -> Result<(), Error> {
        let account = service_account(self.kind.account);
        // The figures' settings last: asked for, they hold over a profile's or `--set`'s.
        let mut settings = self.settings.clone();
        if self.statements {
            match (self.kind.statements)(&self.server_bin, &self.settings) {
                Ok(more) => {
                    self.keeps_statements = !more.is_empty();
                    settings.extend(more);
                }
                Err(why) => {
                    crate::errln!(
                        "note: {why}: {} starts without its figures per statement, and results will have none",
                        self.kind.product
                    );
                    // Said once: a restart does not say it again.
                    self.statements = false;
                }
            }
        }
        let mut cmd = (self.kind.command)(
            &self.layout,
            &self.server_bin,
            self.port,
            &settings,
            account,
        );
        if !self.keep_running {
            stop_with_parent(&mut cmd);
        }
        let mut child = spawn_logged(cmd, &self.layout.log, self.kind.product)?;
        let engine = engine::open(&self.dsn(""), &EngineOptions::default(), Protocol::Simple)?;
        // Up means speaking the protocol: the dbduel user may not exist yet on a fresh server.
        let up = || match engine.connect() {
            Ok(_) => true,
            Err(e) => matches!(e.class, ErrorClass::AuthFailed | ErrorClass::Other(_)),
        };
        let ready = wait_ready(&mut child, &self.layout.log, self.kind.product, up);
        self.child = Some(child);
        ready
    }

    /// Whether it runs with settings that keep its own figures per statement (asked for, and
    /// the engine has such figures and, for PostgreSQL, the library).
    pub fn keeps_statements(&self) -> bool {
        self.statements && self.keeps_statements
    }

    /// Stop and start again with other settings (the data stays); after the server exited
    /// on its own (killed, crashed), start it again on the same port and data.
    pub fn restart(&mut self, settings: &[(String, String)]) -> Result<(), Error> {
        self.stop();
        self.settings = settings.to_vec();
        self.launch()
    }

    /// The DSN of a database on this server (the password included: keep it out of output).
    pub fn dsn(&self, database: &str) -> Dsn {
        Dsn::parse(&self.dsn_text(database)).expect("managed server DSN parses")
    }

    /// The DSN text, password included, for handing to a child process.
    pub fn dsn_text(&self, database: &str) -> String {
        let database = if database.is_empty() {
            self.kind.default_db
        } else {
            database
        };
        format!(
            "{}{database}",
            (self.kind.dsn)(self.port, self.password.as_deref())
        )
    }

    /// A superuser session on the server's default database.
    pub fn session(&self) -> Result<Box<dyn Session>, Error> {
        let engine = engine::open(&self.dsn(""), &EngineOptions::default(), Protocol::Simple)?;
        engine.connect().map_err(|e| Error::Connect(e.message))
    }

    /// The server's main process, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    pub fn dir(&self) -> &Path {
        &self.layout.dir
    }

    /// The last lines of the server's log, for error messages.
    pub fn log_tail(&self) -> String {
        log_tail(&self.layout.log)
    }

    /// Leave the server running after dbduel exits; its state file lets `server stop` find it.
    pub fn detach(mut self, profile: &str) -> Result<State, Error> {
        let child = self
            .child
            .take()
            .ok_or_else(|| Error::Server("the server is not running".into()))?;
        let state = State {
            engine: self.kind.engine.into(),
            pid: child.id(),
            port: self.port,
            dsn: self.dsn("").to_string(),
            version: self.version.clone(),
            profile: profile.to_string(),
            stopped: false,
            started: process_start(child.id()),
        };
        let text = serde_json::to_string_pretty(&state).expect("state serializes");
        let path = self.layout.state();
        std::fs::write(&path, text).map_err(Error::io("write", &path))?;
        self._temp = None;
        Ok(state)
    }

    /// How the server's main process ended, if it has (killed, crashed, shut down from
    /// outside); None while it runs. It is reaped then: `restart` starts it again.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// Whether the server still answers: a connection made within `within` (a server whose
    /// processes are stopped, or stuck, accepts the TCP connection and never speaks).
    pub fn answers(&self, within: Duration) -> bool {
        let dsn = self.dsn("");
        let (tx, rx) = std::sync::mpsc::channel();
        // The attempt ends by itself at its connect timeout; a stalled one is not waited for.
        let spawned = std::thread::Builder::new()
            .name("answers".into())
            .spawn(move || {
                let ok = engine::open(&dsn, &EngineOptions::default(), Protocol::Simple)
                    .is_ok_and(|e| e.connect().is_ok());
                let _ = tx.send(ok);
            });
        spawned.is_ok() && rx.recv_timeout(within).unwrap_or(false)
    }

    /// Kill the server and every process under it at once (SIGKILL: a stopped or stuck server
    /// takes no other signal), and wait for its main process; `restart` then starts it again.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        // PostgreSQL's backends lead sessions of their own: found by parentage, not by group.
        for pid in descendants(child.id()) {
            signal(pid, libc::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Shut the server down and wait for it (its kind's fast, clean shutdown signal).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A process already reaped may have given its pid to another: no signal then.
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            signal(child.id(), self.kind.stop_signal);
            let deadline = Instant::now() + Duration::from_secs(60);
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

/// Read the state of a detached server from its directory.
pub fn read_state(dir: &Path) -> Result<State, Error> {
    let path = Layout::new(dir).state();
    let text = std::fs::read_to_string(&path).map_err(|_| {
        Error::Usage(format!(
            "no dbduel server in {}: start one with `dbduel server start`",
            dir.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        Error::Server(format!(
            "{} is not a dbduel server's state ({e}): give the directory `dbduel server start` made",
            path.display()
        ))
    })
}

/// Whether a process is alive (an exited process that nobody reaped yet is not).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

/// Stop a detached server and wait until it is gone.
pub fn stop_detached(dir: &Path) -> Result<State, Error> {
    let mut state = read_state(dir)?;
    if state.running() {
        let sig = kind_for(&state.engine).map_or(libc::SIGTERM, |k| k.stop_signal);
        signal(state.pid, sig);
        let deadline = Instant::now() + Duration::from_secs(60);
        while state.running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        if state.running() {
            // A throwaway server that ignores its stop signal (a Firebird server busy shutting
            // attachments down on a loaded machine was seen to) is killed, and the user told.
            errln!(
                "dbduel: the server (pid {}) did not stop within 60 s of its stop signal: killing it",
                state.pid
            );
            signal(state.pid, libc::SIGKILL);
            let deadline = Instant::now() + Duration::from_secs(10);
            while state.running() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            if state.running() {
                return Err(Error::Server(format!(
                    "the server (pid {}) survived SIGKILL: stop it by hand",
                    state.pid
                )));
            }
        }
    }
    // Kept, marked stopped: `server status` still knows what the directory holds.
    state.stopped = true;
    let text = serde_json::to_string_pretty(&state).expect("state serializes");
    let path = Layout::new(dir).state();
    std::fs::write(&path, text).map_err(Error::io("write", &path))?;
    Ok(state)
}

/// The size of a server's data directory, in bytes.
pub fn data_size(dir: &Path) -> u64 {
    fn walk(p: &Path) -> u64 {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => std::fs::read_dir(p)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| walk(&e.path()))
                .sum(),
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    walk(&Layout::new(dir).data)
}

/// Every process under `root` (children, their children...), read from /proc.
pub fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    found.remove(0);
    found
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: sends a signal to a process dbduel started.
    unsafe { libc::kill(pid as i32, sig) };
}

/// A directory that is new, empty, or holds a stopped server of the same kind that dbduel
/// made (its state file, or its data and log). A directory of another user's, or one that
/// holds anything else, is refused before anything is written into it; the directory is
/// closed to others (0700) at every start, as it was when it was made.
fn prepare_dir(
    kind: &ServerKind,
    dir: Option<&Path>,
    temp_in: Option<&Path>,
) -> Result<(Layout, Option<tempfile::TempDir>), Error> {
    let (path, temp) = match dir {
        // Absolute: the server runs in its data directory, where a relative socket path
        // would point elsewhere.
        Some(d) => (
            std::path::absolute(d).map_err(Error::io("resolve", d))?,
            None,
        ),
        None => {
            let prefix = format!("dbduel-{}-", kind.engine);
            let mut b = tempfile::Builder::new();
            b.prefix(&prefix);
            let t = match temp_in {
                Some(parent) => b.tempdir_in(parent),
                None => b.tempdir(),
            }
            .map_err(|source| Error::TempDir { source })?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    check_dir(kind, &path)?;
    std::fs::create_dir_all(&path).map_err(Error::io("create", &path))?;
    private_dir(&path)?;
    Ok((Layout::new(&path), temp))
}

/// Whether a server of `kind` may use the directory `path` (nothing is written): its socket's
/// path fits, it is the user's own, and it is new, empty, or a stopped server of this kind
/// that dbduel made.
pub fn check_dir(kind: &ServerKind, path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let layout = Layout::new(path);
    // The server's Unix socket (PostgreSQL's `run/.s.PGSQL.65535.lock` the longest name) must
    // fit in a socket address: 107 bytes.
    let run = std::path::absolute(&layout.run).unwrap_or_else(|_| layout.run.clone());
    let longest = run.as_os_str().len() + "/.s.PGSQL.65535.lock".len();
    if longest > 107 {
        return Err(Error::Usage(format!(
            "--data-dir {} is too deep for the server's Unix socket ({longest} bytes under {}, at most 107): give a shorter path",
            path.display(),
            run.display()
        )));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if let Some((uid, gid)) = service_account(kind.account).filter(|(uid, _)| *uid != me) {
        // The server runs as its service account: every directory above its own must let
        // that account through, or initdb and the server fail on "Permission denied".
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        for dir in abs.ancestors().skip(1) {
            let Ok(m) = std::fs::metadata(dir) else {
                continue;
            };
            let bit = if m.uid() == uid {
                0o100
            } else if m.gid() == gid {
                0o010
            } else {
                0o001
            };
            if m.mode() & bit == 0 {
                return Err(Error::Usage(format!(
                    "--data-dir {}: the server runs as the {} account, which cannot pass through {} (mode {:o}): give a directory it can reach, or `chmod o+x {}`",
                    path.display(),
                    kind.account,
                    dir.display(),
                    m.mode() & 0o7777,
                    dir.display()
                )));
            }
        }
    }
    if let Ok(meta) = std::fs::metadata(path) {
        let account = service_account(kind.account).map(|(uid, _)| uid);
        if meta.uid() != me && Some(meta.uid()) != account {
            return Err(Error::Usage(format!(
                "--data-dir {} belongs to another user (uid {}): give a directory of your own",
                path.display(),
                meta.uid()
            )));
        }
    }
    if let Ok(mut entries) = std::fs::read_dir(path) {
        if let Ok(state) = read_state(path) {
            if state.engine != kind.engine {
                return Err(Error::Usage(format!(
                    "--data-dir {} holds a {} server, not {}",
                    path.display(),
                    state.engine,
                    kind.engine
                )));
            }
            if state.running() {
                return Err(Error::Usage(format!(
                    "a server already runs from {} (pid {}): stop it first",
                    path.display(),
                    state.pid
                )));
            }
        } else if entries.next().is_some() && !(layout.data.exists() && layout.log.exists()) {
            return Err(Error::Usage(format!(
                "--data-dir {} is not empty and holds no server dbduel made: give a new or empty directory",
                path.display()
            )));
        }
    }
    Ok(())
}

pub fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    tail_with_errors(&text)
}

/// A log's last 15 lines, after its last 10 error lines from before them (a failed setup
/// often ends with its usage text, the reason far above: MariaDB's install prints its help
/// after an `[ERROR]`).
fn tail_with_errors(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(15);
    let is_error = |l: &&&str| {
        ["[ERROR]", "ERROR:", "FATAL:", "PANIC:", "[FATAL]", "error:"]
            .iter()
            .any(|m| l.contains(m))
    };
    let errors: Vec<&str> = lines[..start].iter().filter(is_error).copied().collect();
    let tail = lines[start..].join("\n");
    if errors.is_empty() {
        return tail;
    }
    let shown = &errors[errors.len().saturating_sub(10)..];
    format!("{}\n(...)\n{tail}", shown.join("\n"))
}

/// A port on 127.0.0.1 that nothing listens on right now.
pub fn free_port() -> Result<u16, Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::Server(format!("no free loopback port: {e}")))?;
    Ok(listener
        .local_addr()
        .map_err(|e| Error::Server(format!("no free loopback port: {e}")))?
        .port())
}

fn check_port(port: u16) -> Result<u16, Error> {
    if port < 1024 {
        return Err(Error::Usage(format!(
            "--port {port}: give a port from 1024 to 65535 (below 1024 only root may listen, and the server runs as its own account), or none for a free one"
        )));
    }
    std::net::TcpListener::bind(("127.0.0.1", port))
        .map(|_| port)
        .map_err(|e| {
            Error::Usage(format!(
                "port {port} on 127.0.0.1 is in use ({e}): give another --port or none"
            ))
        })
}

/// The uid and gid of a service account, when dbduel runs as root and the account exists.
fn service_account(name: &str) -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions; getpwnam returns a pointer into static storage
    // that is read at once.
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

/// Give a path to the service account a server of this kind runs as (when dbduel runs as
/// root): for files the server must own, such as its TLS key.
pub fn give_to_account(kind: &ServerKind, path: &Path) -> Result<(), Error> {
    chown(path, service_account(kind.account))
}

/// Give a path to the service account.
fn chown(path: &Path, account: Option<(u32, u32)>) -> Result<(), Error> {
    if let Some((uid, gid)) = account {
        std::os::unix::fs::chown(path, Some(uid), Some(gid))
            .map_err(Error::io("give to the service account", path))?;
    }
    Ok(())
}

/// A command run as the service account when there is one, in its own process group.
fn command(program: &Path, account: Option<(u32, u32)>) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    if let Some((uid, gid)) = account {
        cmd.uid(uid).gid(gid);
    }
    cmd.stdin(Stdio::null()).process_group(0);
    cmd
}

/// Have the kernel send SIGTERM to the server if dbduel dies without stopping it.
fn stop_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; it runs in the child after fork, after the
    // change of user (which would otherwise clear the setting), before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}

/// Send a command's output to the log file.
fn log_output(cmd: &mut Command, log: &Path) -> Result<(), Error> {
    let out = File::options()
        .create(true)
        .append(true)
        .open(log)
        .map_err(Error::io("open", log))?;
    let err = out.try_clone().map_err(Error::io("open", log))?;
    cmd.stdout(out).stderr(err);
    Ok(())
}

/// Run a setup command to completion; its output goes to the log, and its failure quotes it.
fn run_logged(mut cmd: Command, log: &Path, what: &str) -> Result<(), Error> {
    log_output(&mut cmd, log)?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    let status = cmd
        .status()
        .map_err(|e| Error::Server(format!("cannot run {what} ({program}): {e}")))?;
    if !status.success() {
        return Err(Error::Server(format!(
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
        .map_err(|e| Error::Server(format!("cannot start {what}: {e}")))
}

/// Wait until `ready` succeeds; fail with the log's tail when the process exits or time runs out.
fn wait_ready(
    child: &mut Child,
    log: &Path,
    what: &str,
    mut ready: impl FnMut() -> bool,
) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Server(format!(
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
    Err(Error::Server(format!(
        "{what} did not accept connections within 120 s; its log ends with:\n{}",
        log_tail(log)
    )))
}

/// The first existing file among candidates: `first` directory, PATH, then fixed locations.
fn find_binary(names: &[&str], first: Option<&Path>, dirs: &[PathBuf]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut all: Vec<PathBuf> = first.map(Path::to_path_buf).into_iter().collect();
    all.extend(dirs.iter().cloned());
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

/// Write a file only its owner may read.
fn write_private(path: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(Error::io("write", path))
}

/// Close a directory to everyone but its owner (0700).
fn private_dir(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
        .map_err(Error::io("close to others", path))
}

/// The DSN of a detached server with its password, for `server dsn` (which only the user who
/// started it can read).
pub fn full_dsn(dir: &Path) -> Result<String, Error> {
    let state = read_state(dir)?;
    let kind = kind_for(&state.engine).ok_or_else(|| {
        Error::Server(format!(
            "unknown engine '{}' in the state file",
            state.engine
        ))
    })?;
    let password = std::fs::read_to_string(Layout::new(dir).password())
        .ok()
        .map(|p| p.trim().to_string());
    Ok(format!(
        "{}{}",
        (kind.dsn)(state.port, password.as_deref()),
        kind.default_db
    ))
}

/// A server for the test suite: temporary directory (in `temp_in`, else the system's),
/// password authentication, the server's own figures per statement kept (`--server-statements`,
/// which the suite's tests of those figures read; a setting in `settings` may undo it). With
/// `DBDUEL_TEST_BIN_DIR_POSTGRES` (or `_MYSQL`, `_FIREBIRD`: the engine's name) set to a directory
/// of binaries, the suite's servers of that engine are those (another major version than the
/// installed one) rather than the ones found on the machine.
pub fn start_for_tests_in(
    kind: &'static ServerKind,
    settings: &[(&str, &str)],
    temp_in: Option<&Path>,
) -> Result<Server, Error> {
    let settings = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let var = format!("DBDUEL_TEST_BIN_DIR_{}", kind.engine.to_ascii_uppercase());
    let bin_dir = std::env::var_os(&var).map(PathBuf::from);
    // The binaries would otherwise be found elsewhere, and the suite test the installed version.
    if let Some(dir) = &bin_dir {
        let (_, server) = binaries(kind, Some(dir))?;
        if server.parent() != Some(dir.as_path()) {
            return Err(Error::Usage(format!(
                "{var}={}: no {} server binary there (found {} instead)",
                dir.display(),
                kind.product,
                server.display()
            )));
        }
    }
    Server::start(
        kind,
        &ServerOptions {
            settings,
            bin_dir,
            temp_in: temp_in.map(Path::to_path_buf),
            statements: true,
            ..ServerOptions::default()
        },
    )
}

/// `start_for_tests_in` the system's temporary directory (on storage, for the trials that
/// measure what storage does).
pub fn start_for_tests(
    kind: &'static ServerKind,
    settings: &[(&str, &str)],
) -> Result<Server, Error> {
    start_for_tests_in(kind, settings, None)
}

#[cfg(test)]
mod tests {
    use super::tail_with_errors;

    #[test]
    fn a_failed_setups_errors_come_before_its_tail() {
        let mut log = vec![
            "Installing MariaDB system tables".to_string(),
            "2026-12-05 [ERROR] InnoDB: io_setup() failed with EAGAIN".to_string(),
        ];
        log.extend((0..20).map(|i| format!("usage line {i}")));
        let said = tail_with_errors(&log.join("\n"));
        assert!(
            said.starts_with(
                "2026-12-05 [ERROR] InnoDB: io_setup() failed with EAGAIN\n(...)\nusage line 5\n"
            ),
            "{said}"
        );
        assert!(said.ends_with("usage line 19"));
        // A short log, or one without errors above its tail: the tail alone.
        assert_eq!(tail_with_errors("a\nb [ERROR] c"), "a\nb [ERROR] c");
        let plain: Vec<String> = (0..20).map(|i| format!("line {i}")).collect();
        assert!(tail_with_errors(&plain.join("\n")).starts_with("line 5\n"));
    }
}
