//! The results store: one SQLite database (default ./dbduel-results.db) holding every measured
//! point with its plan, options, engine version, settings in effect, host facts, per-second
//! windows, latency histograms and server resource samples. Each point is committed the
//! moment it finishes, so an interrupted sweep loses at most the point in flight.

mod postgres;
mod schema;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};

use crate::error::Error;
use crate::result::RunResult;

pub const DEFAULT_PATH: &str = "dbduel-results.db";

/// Where a point sits in its plan; its `key` makes resuming possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointKey {
    pub engine: String,
    pub profile: String,
    pub workload: String,
    pub variant: String,
    pub scale: u32,
    pub clients: u32,
    pub repeat: u32,
    pub cold: bool,
}

impl PointKey {
    pub fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}|s{}|c{}|r{}|{}",
            self.engine,
            self.profile,
            self.workload,
            self.variant,
            self.scale,
            self.clients,
            self.repeat,
            if self.cold { "cold" } else { "warm" }
        )
    }
}

/// What `Store::save_run` did with a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// Stored as this run id.
    New(i64),
    /// Already in the store as run `id` of plan `plan`: not stored again.
    Already { id: i64, plan: String },
}

/// What tells one run from every other: when it started, where and what ran, what it
/// counted, and for a merged result each shard's start and count. Results alike in all of it
/// are one run stored twice, never two repeats.
fn run_identity(r: &RunResult) -> String {
    let m = &r.measurement;
    let shards: Vec<String> = r
        .shards
        .iter()
        .map(|s| format!("{}@{}:{}", s.index, s.started_at, s.transactions))
        .collect();
    format!(
        "{}|{}|{}|{} {}|{}|{}|{}|{}",
        r.started_at,
        r.engine.name,
        r.engine.dsn,
        r.workload.name,
        r.workload.variant,
        m.transactions,
        m.errors,
        m.duration_s,
        shards.join(",")
    )
}

/// One point measured under a plan, ready to be stored.
pub struct PointRecord<'a> {
    pub plan_id: i64,
    pub point: &'a PointKey,
    pub unsafe_profile: bool,
    /// Cold points: whether the OS page cache could be dropped (None for warm points).
    pub cache_dropped: Option<bool>,
    pub result: &'a RunResult,
    /// Server resource samples, one per second, as JSON objects (see metrics::observe).
    pub resources: &'a [serde_json::Value],
}

/// A stored run, as `results list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunRow {
    pub id: i64,
    pub plan: String,
    pub engine: String,
    pub profile: String,
    pub unsafe_profile: bool,
    pub workload: String,
    pub variant: String,
    pub scale: u32,
    pub clients: u32,
    pub repeat: u32,
    pub cold: bool,
    pub started_at: String,
    pub duration_s: f64,
    pub tps: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub errors: i64,
    pub client_bound: bool,
    pub server_version: String,
    /// Lost connections that clients opened again (from the stored result).
    pub reconnects: i64,
    /// Times a sweep's managed server exited during the point and was started again (from
    /// the stored result): such a point is marked failed.
    pub server_restarts: i64,
    /// The workload's own figures (TPC-C: nopm, tpmC), by name.
    pub metrics: std::collections::BTreeMap<String, f64>,
}

pub struct Store {
    backend: Backend,
    /// The file, or the PostgreSQL DSN without its password: what messages name.
    path: PathBuf,
    /// The plan this process is sweeping (its row in `sweeps`), released on drop.
    claimed: Option<i64>,
}

/// Where the rows live: a SQLite file (the default), or a PostgreSQL database that several
/// machines and people share.
enum Backend {
    Lite(Connection),
    /// Behind a RefCell: its session needs `&mut` even to read, and readers hold `&Store`.
    Pg(Box<std::cell::RefCell<postgres::PgStore>>),
}

/// Whether `--results` names a PostgreSQL database rather than a file.
pub fn is_postgres(path: &Path) -> bool {
    let p = path.to_string_lossy();
    p.starts_with("postgres://") || p.starts_with("postgresql://")
}

/// A store error in one line, with what to do about the usual ones.
fn db(e: rusqlite::Error, path: &Path) -> Error {
    const READ_ONLY: &str = ": the store is read-only; make it writable or give another --results";
    let hint = match e.sqlite_error_code() {
        Some(ErrorCode::ReadOnly) => READ_ONLY,
        Some(ErrorCode::DiskFull) => ": free some space or give another --results",
        // WAL needs its -shm and -wal files next to the store: a read-only store or directory
        // shows as a file that cannot be opened.
        Some(ErrorCode::CannotOpen) if path.exists() && !writable(path) => READ_ONLY,
        Some(ErrorCode::CannotOpen) => {
            ": give a --results path in a directory that exists and is writable"
        }
        _ => "",
    };
    let message = e.to_string().replace('\n', " ");
    Error::Store {
        path: path.to_path_buf(),
        message: format!("{message}{hint}"),
    }
}

/// Whether this process may write the store and create files next to it (a read-only file
/// system or an immutable file says no even to root).
fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    [path, dir].iter().all(|p| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: a valid NUL-terminated path; access only reads it.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    })
}

impl Store {
    /// Open (creating and migrating as needed) the store at `path`: a SQLite file, or a
    /// PostgreSQL database given by its DSN (`postgres://...`).
    pub fn open(path: &Path) -> Result<Store, Error> {
        if is_postgres(path) {
            let dsn = path.to_string_lossy();
            let shown = crate::engine::parse_dsn(&dsn)
                .map(|d| PathBuf::from(d.to_string()))
                .map_err(|e| Error::Usage(format!("--results: {e}")))?;
            let pg = postgres::PgStore::open(&dsn).map_err(|message| Error::Store {
                path: shown.clone(),
                message,
            })?;
            return Ok(Store {
                backend: Backend::Pg(Box::new(std::cell::RefCell::new(pg))),
                path: shown,
                claimed: None,
            });
        }
        let text = path.to_string_lossy();
        if text.contains("://") {
            return Err(Error::Usage(format!(
                "--results '{}': a results store is a SQLite file or a PostgreSQL database (postgres://...); give one of those",
                crate::dsn::redact_raw(&text)
            )));
        }
        let mut conn = Connection::open(path).map_err(|e| db(e, path))?;
        // Another sweep's commit, or its migrations, hold the write lock for a moment.
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(|e| db(e, path))?;
        // Switching a new file to WAL takes the lock without the busy handler, so a second
        // opener may be told "locked" at once: it tries again for as long as the timeout.
        let since = std::time::Instant::now();
        loop {
            match schema::migrate(&mut conn) {
                Err(e)
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && since.elapsed() < std::time::Duration::from_secs(30) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                done => break done.map_err(|e| db(e, path))?,
            }
        }
        Ok(Store {
            backend: Backend::Lite(conn),
            path: path.to_path_buf(),
            claimed: None,
        })
    }

    /// Open a store that must already exist (for reading): a file not there is refused with
    /// `hint`, what to do instead; a DSN is opened as `open` does.
    pub fn open_existing(path: &Path, hint: &str) -> Result<Store, Error> {
        if !path.exists() && !path.to_string_lossy().contains("://") {
            return Err(Error::Usage(format!(
                "no results store at {}: {hint}",
                path.display()
            )));
        }
        Store::open(path)
    }

    /// A PostgreSQL store's error, with where the store is.
    fn pg(&self, message: String) -> Error {
        Error::Store {
            path: self.path.clone(),
            message,
        }
    }

    /// Claim a plan for this process's sweep: the plan (created when new) and its claim are
    /// written in one write transaction, so two sweeps of the same plan at once cannot both
    /// measure its points; the second is refused with the first one's process id. A claim left
    /// by a process that is gone (killed, or its machine restarted) is taken over.
    pub fn claim(&mut self, name: &str, text: &str) -> Result<i64, Error> {
        let path = self.path.clone();
        let me = Holder::this_process();
        let held = match &mut self.backend {
            Backend::Pg(pg) => {
                let text = crate::dsn::redact_text(text);
                let claimed =
                    pg.get_mut()
                        .claim(name, &text, &me)
                        .map_err(|message| Error::Store {
                            path: path.clone(),
                            message,
                        })?;
                claimed.map_err(Some)
            }
            Backend::Lite(conn) => {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| db(e, &path))?;
                let plan_id = plan_id(&tx, name, text).map_err(|e| db(e, &path))?;
                let held = schema::sweep_holder(&tx, plan_id).map_err(|e| db(e, &path))?;
                match held.filter(|h| h.alive() && *h != me) {
                    Some(other) => Err(Some(other)),
                    None => {
                        schema::claim_sweep(&tx, plan_id, &me).map_err(|e| db(e, &path))?;
                        tx.commit().map_err(|e| db(e, &path))?;
                        Ok(plan_id)
                    }
                }
            }
        };
        match held {
            Ok(plan_id) => {
                self.claimed = Some(plan_id);
                Ok(plan_id)
            }
            Err(other) => {
                let other = other.expect("a holder");
                Err(Error::Usage(format!(
                    "plan '{name}' is being swept by dbduel process {} on {} since {} (results store {}): wait for it to end, or stop it and run this sweep again to resume",
                    other.pid,
                    other.host,
                    other.started_at,
                    path.display()
                )))
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keys of the points of a plan that are already measured.
    pub fn done(&mut self, plan_id: i64) -> Result<std::collections::HashSet<String>, Error> {
        let conn = match &mut self.backend {
            Backend::Pg(pg) => {
                let keys = pg.get_mut().done(plan_id);
                return keys
                    .map(|k| k.into_iter().collect())
                    .map_err(|m| self.pg(m));
            }
            Backend::Lite(conn) => conn,
        };
        let mut stmt = conn
            .prepare("SELECT point_key FROM runs WHERE plan_id = ?1")
            .map_err(|e| db(e, &self.path))?;
        let keys = stmt
            .query_map([plan_id], |r| r.get(0))
            .map_err(|e| db(e, &self.path))?;
        keys.collect::<Result<_, _>>()
            .map_err(|e| db(e, &self.path))
    }

    /// Store one point and everything measured with it, in one transaction.
    pub fn save(&mut self, rec: &PointRecord) -> Result<i64, Error> {
        let path = self.path.clone();
        let conn = match &mut self.backend {
            Backend::Pg(pg) => {
                let saved = pg.get_mut().save(rec);
                return saved.map_err(|m| self.pg(m));
            }
            Backend::Lite(conn) => conn,
        };
        let tx = conn.transaction().map_err(|e| db(e, &path))?;
        let id = schema::insert_run(&tx, rec).map_err(|e| db(e, &path))?;
        schema::insert_details(&tx, id, rec).map_err(|e| db(e, &path))?;
        tx.commit().map_err(|e| db(e, &path))?;
        Ok(id)
    }

    /// Keep one run made outside a sweep (a merged result) as a point of plan `plan`: its
    /// engine, workload, variant, scale and clients, the next free repeat of that point.
    /// A run already in the store (the same merge run again, as a retried job does) is not
    /// stored a second time, which would count it as two repeats: its stored id is given.
    pub fn save_run(&mut self, plan: &str, result: &RunResult) -> Result<Saved, Error> {
        if let Some((id, plan)) = self.stored_as(result)? {
            return Ok(Saved::Already { id, plan });
        }
        let plan_id = self.claim(plan, "")?;
        let done = self.done(plan_id)?;
        let mut point = PointKey {
            engine: result.engine.name.clone(),
            profile: "default".into(),
            workload: result.workload.name.clone(),
            variant: result.workload.variant.clone(),
            scale: result.workload.scale.unwrap_or(0),
            clients: result.options.clients,
            repeat: 1,
            cold: false,
        };
        while done.contains(&point.key()) {
            point.repeat += 1;
        }
        self.save(&PointRecord {
            plan_id,
            point: &point,
            unsafe_profile: false,
            cache_dropped: None,
            result,
            resources: &[],
        })
        .map(Saved::New)
    }

    /// The stored run that is `result` (the same `run_identity`), with its plan's name.
    fn stored_as(&mut self, result: &RunResult) -> Result<Option<(i64, String)>, Error> {
        let (at, workload) = (&result.started_at, &result.workload.name);
        let candidates = match &mut self.backend {
            Backend::Pg(pg) => {
                let rows = pg.get_mut().same_start(at, workload);
                rows.map_err(|m| self.pg(m))?
            }
            Backend::Lite(conn) => {
                let path = &self.path;
                let mut stmt = conn
                    .prepare(
                        "SELECT runs.id, plans.name, runs.result FROM runs JOIN plans ON plans.id = runs.plan_id
                         WHERE runs.started_at = ?1 AND runs.workload = ?2 ORDER BY runs.id",
                    )
                    .map_err(|e| db(e, path))?;
                let rows = stmt
                    .query_map(params![at, workload], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })
                    .map_err(|e| db(e, path))?;
                rows.collect::<Result<Vec<(i64, String, String)>, _>>()
                    .map_err(|e| db(e, path))?
            }
        };
        let want = run_identity(result);
        Ok(candidates.into_iter().find_map(|(id, plan, text)| {
            let stored: RunResult = serde_json::from_str(&text).ok()?;
            (run_identity(&stored) == want).then_some((id, plan))
        }))
    }

    /// Every stored run, oldest first (optionally of one plan, which must exist).
    pub fn list(&self, plan: Option<&str>) -> Result<Vec<RunRow>, Error> {
        if let Some(name) = plan {
            let names = self.plan_names()?;
            if !names.iter().any(|n| n == name) {
                return Err(Error::Usage(format!(
                    "no plan named '{name}' in {}; {}",
                    self.path.display(),
                    if names.is_empty() {
                        "it holds no plan yet".to_string()
                    } else {
                        format!("its plans: {}", names.join(", "))
                    }
                )));
            }
        }
        match &self.backend {
            Backend::Lite(conn) => schema::list(conn, plan).map_err(|e| db(e, &self.path)),
            Backend::Pg(pg) => pg.borrow_mut().list(plan).map_err(|m| self.pg(m)),
        }
    }

    /// The names of the stored plans, oldest first.
    pub fn plan_names(&self) -> Result<Vec<String>, Error> {
        let conn = match &self.backend {
            Backend::Pg(pg) => return pg.borrow_mut().plan_names().map_err(|m| self.pg(m)),
            Backend::Lite(conn) => conn,
        };
        let mut stmt = conn
            .prepare("SELECT name FROM plans GROUP BY name ORDER BY min(id)")
            .map_err(|e| db(e, &self.path))?;
        let names = stmt
            .query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
            .map_err(|e| db(e, &self.path))?;
        Ok(names)
    }

    /// The full result of one run, as `run --json` would have written it.
    pub fn result(&self, id: i64) -> Result<serde_json::Value, Error> {
        let text: Option<String> = match &self.backend {
            Backend::Lite(conn) => conn
                .query_row("SELECT result FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .optional()
                .map_err(|e| db(e, &self.path))?,
            Backend::Pg(pg) => pg.borrow_mut().result(id).map_err(|m| self.pg(m))?,
        };
        let text = text.ok_or_else(|| self.no_run(id))?;
        serde_json::from_str(&text).map_err(|e| Error::StoredRun {
            id,
            message: e.to_string(),
        })
    }

    /// The runs of the sweep point that run `id` belongs to: its repeats, by repeat.
    pub fn point_runs(&self, id: i64) -> Result<Vec<i64>, Error> {
        let ids = match &self.backend {
            Backend::Lite(conn) => schema::point_runs(conn, id).map_err(|e| db(e, &self.path))?,
            Backend::Pg(pg) => pg.borrow_mut().point_runs(id).map_err(|m| self.pg(m))?,
        };
        if ids.is_empty() {
            return Err(self.no_run(id));
        }
        Ok(ids)
    }

    fn no_run(&self, id: i64) -> Error {
        Error::Usage(format!(
            "no run {id} in {}: see `dbduel results list`",
            self.path.display()
        ))
    }

    /// The per-second server resources of one run.
    pub fn resources(&self, id: i64) -> Result<Vec<serde_json::Value>, Error> {
        match &self.backend {
            Backend::Lite(conn) => schema::resources(conn, id).map_err(|e| db(e, &self.path)),
            Backend::Pg(pg) => pg.borrow_mut().resources(id).map_err(|m| self.pg(m)),
        }
    }

    /// The settings each (engine, profile) ran under, from its newest run.
    pub fn settings(
        &self,
        plan: Option<&str>,
    ) -> Result<Vec<(String, String, bool, String)>, Error> {
        match &self.backend {
            Backend::Lite(conn) => schema::settings(conn, plan).map_err(|e| db(e, &self.path)),
            Backend::Pg(pg) => pg.borrow_mut().settings(plan).map_err(|m| self.pg(m)),
        }
    }
}

impl Drop for Store {
    /// Release this process's claim on its plan (a killed process leaves it to be taken over).
    fn drop(&mut self) {
        if let Some(plan_id) = self.claimed.take() {
            let pid = std::process::id();
            let _ = match &mut self.backend {
                Backend::Lite(conn) => schema::release_sweep(conn, plan_id, pid).map_err(drop),
                Backend::Pg(pg) => pg.get_mut().release(plan_id, pid).map_err(drop),
            };
        }
    }
}

/// The plan with this name and text, created when new: the same plan resumes.
fn plan_id(conn: &Connection, name: &str, text: &str) -> rusqlite::Result<i64> {
    // The plan's text is kept as written, but for the passwords of its DSNs.
    let text = crate::dsn::redact_text(text);
    let found: Option<i64> = conn
        .query_row(
            "SELECT id FROM plans WHERE name = ?1 AND text = ?2",
            params![name, &text],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    conn.execute(
        "INSERT INTO plans (name, text, created_at) VALUES (?1, ?2, ?3)",
        params![name, &text, now()],
    )?;
    Ok(conn.last_insert_rowid())
}

/// The process sweeping a plan: its id, its machine, and its start time (which tells a
/// reused process id apart).
#[derive(Debug, Clone)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    pub process_start: String,
    pub started_at: String,
}

impl Holder {
    fn this_process() -> Holder {
        let pid = std::process::id();
        Holder {
            pid,
            host: hostname(),
            process_start: process_start(pid).unwrap_or_default(),
            started_at: now(),
        }
    }

    /// Whether the holder still runs. On another machine that cannot be known: it counts as
    /// running.
    fn alive(&self) -> bool {
        if self.host != hostname() {
            return true;
        }
        process_start(self.pid).is_some_and(|start| start == self.process_start)
    }
}

impl PartialEq for Holder {
    fn eq(&self, other: &Holder) -> bool {
        self.pid == other.pid
            && self.host == other.host
            && self.process_start == other.process_start
    }
}

/// The start time of a process (field 22 of /proc/PID/stat, in clock ticks since boot); None
/// when no such process runs.
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Store {
        fn lite(&self) -> &Connection {
            match &self.backend {
                Backend::Lite(conn) => conn,
                Backend::Pg(_) => panic!("a SQLite store"),
            }
        }
    }

    /// Processes opening a new store at once: the migrations run once, every opener gets a
    /// current store (SQLite's locks work the same between connections of one process).
    #[test]
    fn a_new_store_opened_by_many_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let openers: Vec<_> = (0..8)
            .map(|_| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    Store::open(&path).map(drop).map_err(|e| e.to_string())
                })
            })
            .collect();
        for opener in openers {
            opener.join().unwrap().unwrap();
        }
        let store = Store::open(&path).unwrap();
        let version: i64 = store
            .lite()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, schema::MIGRATIONS.len() as i64);
    }

    /// A plan claimed by a running process (pid 1 here) is refused with that process's id; a
    /// claim whose process is gone is taken over; the claim is released on drop.
    #[test]
    fn a_claimed_plan_is_refused_and_a_stale_claim_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let mut store = Store::open(&path).unwrap();
        let id = store.claim("p", "text").unwrap();
        let other = |start: String| Holder {
            pid: 1,
            host: hostname(),
            process_start: start,
            started_at: now(),
        };
        let running = other(process_start(1).unwrap());
        schema::claim_sweep(store.lite(), id, &running).unwrap();
        let mut second = Store::open(&path).unwrap();
        let refused = second.claim("p", "text").unwrap_err().to_string();
        assert!(refused.contains("dbduel process 1 "), "{refused}");
        // The same pid, started at another time: a reused id, the claim is stale.
        schema::claim_sweep(store.lite(), id, &other("1".into())).unwrap();
        assert_eq!(second.claim("p", "text").unwrap(), id);
        drop(second);
        assert!(schema::sweep_holder(store.lite(), id).unwrap().is_none());
    }
}
