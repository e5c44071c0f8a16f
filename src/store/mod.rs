//! The results store: every measured point with its plan, options, engine version, settings in
//! effect, host facts, per-second windows, latency histograms and server resource samples, in a
//! SQLite file (default ./dbduel-results.db) or in a database that several machines share
//! (`--results postgres://...`, `mysql://...`; any engine whose dialect has
//! `sql/store/<dialect>.sql`): one store over the engine seam, its SQL in `sql/store/` (db.rs), a
//! point's rows in rows.rs. Here: opening (a busy new store tried again), claiming a plan for one
//! sweep (so two sweeps of one plan are refused wherever they run; a dead holder's claim is taken
//! over), saving (a point's key, `PointKey`: engine, profile, workload, variant, scale, clients,
//! repeat, cold, is unique per plan, so re-running a plan measures only what is missing; each point
//! committed with its windows, histograms and resource samples in one transaction the moment it
//! finishes, so an interrupted sweep loses at most the point in flight; `save_run` never stores one
//! run twice), reading.

mod db;
mod rows;

use std::path::{Path, PathBuf};

use crate::dsn::Dsn;
use crate::engine::{self, DbError, EngineOptions, Protocol, Value};
use crate::error::Error;
use crate::result::RunResult;
use db::{Db, int, text};

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
    /// What limited the run (its verdict's `limiter`; empty for results from before verdicts).
    pub limiter: String,
    /// The workload's own figures (TPC-C: nopm, tpmC), by name.
    pub metrics: std::collections::BTreeMap<String, f64>,
}

pub struct Store {
    db: Db,
    /// The file, or the DSN without its password: what messages name.
    path: PathBuf,
    /// The file a file store lives in, for the hints of its errors.
    file: Option<PathBuf>,
    /// The plan this process is sweeping (its row in `sweeps`), released on drop.
    claimed: Option<i64>,
}

const READ_ONLY: &str = ": the store is read-only; make it writable or give another --results";

/// What to do about a file store's error: the usual causes are the file system's.
fn file_hint(path: &Path) -> &'static str {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        ": give a --results path in a directory that exists and is writable"
    } else if !writable(dir) || (path.exists() && !writable(path)) {
        // WAL needs its -shm and -wal files next to the store: a read-only directory makes
        // even a current store unreadable.
        READ_ONLY
    } else if full(dir) {
        ": free some space or give another --results"
    } else {
        ""
    }
}

/// Whether this process may write a path (a read-only file system or an immutable file says
/// no even to root).
fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Whether the file system has no block left for this process.
fn full(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a valid NUL-terminated path and a buffer statvfs fills.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: statvfs succeeded, so it filled the buffer.
    unsafe { st.assume_init() }.f_bavail == 0
}

/// A store error in one line, with what to do about the usual ones.
fn store_error(path: &Path, file: Option<&Path>, e: DbError) -> Error {
    let message = e.message.replace('\n', " ");
    let hint = file.map_or("", file_hint);
    Error::Store {
        path: path.to_path_buf(),
        message: format!("{message}{hint}"),
    }
}

/// The DSN of `--results`: a DSN as given, or a file path as a SQLite file; with the file it
/// names when its engine keeps the database in a file.
fn store_dsn(path: &Path) -> Result<(Dsn, Option<PathBuf>), Error> {
    let text = path.to_string_lossy();
    if !text.contains("://") {
        let mut dsn = Dsn::sqlite(path);
        dsn.database = text.into_owned();
        dsn.params.clear();
        return Ok((dsn, Some(path.to_path_buf())));
    }
    let dsn = engine::parse_dsn(&text).map_err(|e| Error::Usage(format!("--results: {e}")))?;
    let file = engine::entry_for(&dsn.scheme)
        .filter(|entry| entry.file)
        .map(|_| PathBuf::from(&dsn.database));
    Ok((dsn, file))
}

impl Store {
    /// Open (creating and migrating as needed) the store at `path`: a SQLite file, or a
    /// database given by its DSN whose engine's dialect has the store's SQL (`sql/store/`).
    pub fn open(path: &Path) -> Result<Store, Error> {
        let (dsn, file) = store_dsn(path)?;
        let shown = match file {
            Some(_) if !path.to_string_lossy().contains("://") => path.to_path_buf(),
            _ => PathBuf::from(dsn.to_string()),
        };
        let engine = engine::open(&dsn, &EngineOptions::default(), Protocol::Prepared).map_err(
            |e| match e {
                Error::Usage(m) => Error::Usage(format!("--results: {m}")),
                e => e,
            },
        )?;
        let dialects = db::dialects();
        if !dialects.contains(&engine.dialect()) {
            return Err(Error::Usage(format!(
                "--results {}: {} cannot hold a results store (the store's SQL has the dialects {}); give a file or a DSN of one of those",
                shown.display(),
                engine.name(),
                dialects.join(", ")
            )));
        }
        let db = Db::open(&*engine).map_err(|e| store_error(&shown, file.as_deref(), e))?;
        Ok(Store {
            db,
            path: shown,
            file,
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

    /// An error of this store, with what to do about it.
    fn error(&self, e: DbError) -> Error {
        store_error(&self.path, self.file.as_deref(), e)
    }

    /// Claim a plan for this process's sweep: the plan (created when new) and its claim are
    /// written in one write transaction under the store's lock, so two sweeps of the same plan
    /// at once cannot both measure its points; the second is refused with the first one's
    /// process id. A claim left by a process that is gone (killed, or its machine restarted)
    /// is taken over.
    pub fn claim(&mut self, name: &str, text: &str) -> Result<i64, Error> {
        let me = Holder::this_process();
        // The plan's text is kept as written, but for the passwords of its DSNs.
        let text = crate::dsn::redact_text(text);
        let held = self.db.transaction(true, |db| {
            let plan_id = plan_id(db, name, &text)?;
            let holder = db.query("holder", &[Value::Int(plan_id)])?;
            let other = holder.first().map(|r| Holder::from_row(r));
            if let Some(other) = other.filter(|h| h.alive() && *h != me) {
                return Ok(Err(other));
            }
            db.query("forget holder", &[Value::Int(plan_id)])?;
            db.query("insert holder", &me.row(plan_id))?;
            Ok(Ok(plan_id))
        });
        match held.map_err(|e| self.error(e))? {
            Ok(plan_id) => {
                self.claimed = Some(plan_id);
                Ok(plan_id)
            }
            Err(other) => Err(Error::Usage(format!(
                "plan '{name}' is being swept by dbduel process {} on {} since {} (results store {}): wait for it to end, or stop it and run this sweep again to resume",
                other.pid,
                other.host,
                other.started_at,
                self.path.display()
            ))),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keys of the points of a plan that are already measured.
    pub fn done(&mut self, plan_id: i64) -> Result<std::collections::HashSet<String>, Error> {
        let rows = self.db.query("done", &[Value::Int(plan_id)]);
        let rows = rows.map_err(|e| self.error(e))?;
        Ok(rows.iter().map(|r| text(&r[0])).collect())
    }

    /// Store one point and everything measured with it, in one transaction.
    pub fn save(&mut self, rec: &PointRecord) -> Result<i64, Error> {
        let saved = self.db.transaction(false, |db| {
            let id = db.insert("insert run", &rows::run(rec))?;
            rows::insert_details(db, id, rec)?;
            Ok(id)
        });
        saved.map_err(|e| self.error(e))
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
        let at = Value::Text(result.started_at.clone());
        let workload = Value::Text(result.workload.name.clone());
        let candidates = self.db.query("same start", &[at, workload]);
        let candidates = candidates.map_err(|e| self.error(e))?;
        let want = run_identity(result);
        Ok(candidates.iter().find_map(|r| {
            let stored: RunResult = serde_json::from_str(&text(&r[2])).ok()?;
            (run_identity(&stored) == want).then(|| (int(&r[0]), text(&r[1])))
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
        rows::list(&self.db, plan).map_err(|e| self.error(e))
    }

    /// The names of the stored plans, oldest first.
    pub fn plan_names(&self) -> Result<Vec<String>, Error> {
        let rows = self.db.query("plan names", &[]);
        let rows = rows.map_err(|e| self.error(e))?;
        Ok(rows.iter().map(|r| text(&r[0])).collect())
    }

    /// The full result of one run, as `run --json` would have written it.
    pub fn result(&self, id: i64) -> Result<serde_json::Value, Error> {
        let rows = self.db.query("result", &[Value::Int(id)]);
        let rows = rows.map_err(|e| self.error(e))?;
        let text = rows.first().map(|r| text(&r[0]));
        let text = text.ok_or_else(|| self.no_run(id))?;
        serde_json::from_str(&text).map_err(|e| Error::StoredRun {
            id,
            message: e.to_string(),
        })
    }

    /// The runs of the sweep point that run `id` belongs to: its repeats, by repeat.
    pub fn point_runs(&self, id: i64) -> Result<Vec<i64>, Error> {
        let rows = self.db.query("point runs", &[Value::Int(id)]);
        let ids: Vec<i64> = rows
            .map_err(|e| self.error(e))?
            .iter()
            .map(|r| int(&r[0]))
            .collect();
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
        let rows = self.db.query("resources", &[Value::Int(id)]);
        let rows = rows.map_err(|e| self.error(e))?;
        Ok(rows
            .iter()
            .map(|r| serde_json::from_str(&text(&r[0])).unwrap_or(serde_json::Value::Null))
            .collect())
    }

    /// The settings each (engine, profile) ran under, from its newest run: (engine, profile,
    /// unsafe, settings JSON).
    pub fn settings(
        &self,
        plan: Option<&str>,
    ) -> Result<Vec<(String, String, bool, String)>, Error> {
        let (cond, params) = rows::of_plan(plan);
        let rows = self.db.query_where("settings", cond, &params);
        let rows = rows.map_err(|e| self.error(e))?;
        Ok(rows
            .iter()
            .map(|r| (text(&r[0]), text(&r[1]), int(&r[2]) != 0, text(&r[3])))
            .collect())
    }
}

impl Drop for Store {
    /// Release this process's claim on its plan (a killed process leaves it to be taken over).
    fn drop(&mut self) {
        if let Some(plan_id) = self.claimed.take() {
            let pid = Value::Int(i64::from(std::process::id()));
            let _ = self.db.query("release", &[Value::Int(plan_id), pid]);
        }
    }
}

/// The plan with this name and text, created when new: the same plan resumes.
fn plan_id(db: &Db, name: &str, text: &str) -> engine::DbResult<i64> {
    let params = [Value::Text(name.into()), Value::Text(text.into())];
    if let Some(row) = db.query("find plan", &params)?.first() {
        return Ok(int(&row[0]));
    }
    let mut params = params.to_vec();
    params.push(Value::Text(now()));
    db.insert("insert plan", &params)
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
    fn from_row(r: &[Value]) -> Holder {
        Holder {
            pid: int(&r[0]) as u32,
            host: text(&r[1]),
            process_start: text(&r[2]),
            started_at: text(&r[3]),
        }
    }

    /// Its row of `sweeps`, holding `plan_id`.
    fn row(&self, plan_id: i64) -> [Value; 5] {
        [
            Value::Int(plan_id),
            Value::Int(i64::from(self.pid)),
            Value::Text(self.host.clone()),
            Value::Text(self.process_start.clone()),
            Value::Text(self.started_at.clone()),
        ]
    }

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

    /// A SQLite store at an older version, as an older dbduel left it.
    fn older_store(path: &Path, version: i64) -> rusqlite::Connection {
        let engine = engine::open(
            &Dsn::sqlite(path),
            &EngineOptions::default(),
            Protocol::Prepared,
        )
        .unwrap();
        let db = Db::connect(&*engine).unwrap();
        db.migrate_to(version).unwrap();
        assert_eq!(db.version(), version);
        rusqlite::Connection::open(path).unwrap()
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
        assert!(store.db.newest() >= 4);
        assert_eq!(store.db.version(), store.db.newest());
    }

    /// A DSN whose engine has no store dialect, or no engine at all, is refused before any
    /// connection, naming --results and never the password; a file engine's DSN is a file.
    #[test]
    fn a_store_dsn_is_of_a_store_dialect() {
        for (dsn, says) in [
            (
                "firebird://u:Secret99@127.0.0.1:1/x.fdb",
                "cannot hold a results store",
            ),
            ("nosuch://u:Secret99@127.0.0.1:1/x", "--results"),
        ] {
            match Store::open(Path::new(dsn)) {
                Err(Error::Usage(m)) => {
                    assert!(m.contains(says) && !m.contains("Secret99"), "{m}")
                }
                other => panic!("{dsn}: {:?}", other.map(|s| s.path.clone())),
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.db");
        let store = Store::open(Path::new(&format!("sqlite://{}", file.display()))).unwrap();
        assert_eq!(store.file.as_deref(), Some(file.as_path()));
        assert!(file.exists());
    }

    /// A plan claimed by a running process (pid 1 here) is refused with that process's id; a
    /// claim whose process is gone is taken over; the claim is released on drop.
    #[test]
    fn a_claimed_plan_is_refused_and_a_stale_claim_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let mut store = Store::open(&path).unwrap();
        let id = store.claim("p", "text").unwrap();
        let hold = |store: &Store, start: String| {
            let other = Holder {
                pid: 1,
                host: hostname(),
                process_start: start,
                started_at: now(),
            };
            store.db.query("forget holder", &[Value::Int(id)]).unwrap();
            store.db.query("insert holder", &other.row(id)).unwrap();
        };
        hold(&store, process_start(1).unwrap());
        let mut second = Store::open(&path).unwrap();
        let refused = second.claim("p", "text").unwrap_err().to_string();
        assert!(refused.contains("dbduel process 1 "), "{refused}");
        // The same pid, started at another time: a reused id, the claim is stale.
        hold(&store, "1".into());
        assert_eq!(second.claim("p", "text").unwrap(), id);
        drop(second);
        let holder = store.db.query("holder", &[Value::Int(id)]).unwrap();
        assert!(holder.is_empty());
    }

    /// A run's point siblings are its repeats: same plan and point but for the repeat; a
    /// store written before the windows' p90 and p95 gets the columns, empty, on opening.
    #[test]
    fn point_runs_are_the_repeats_of_a_point() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let conn = older_store(&path, 3);
        conn.execute_batch("INSERT INTO plans VALUES (1, 'p', '', ''), (2, 'q', '', '');")
            .unwrap();
        let rows = [
            (1, 1, "default", 1),
            (2, 1, "default", 2),
            (3, 1, "unsafe", 1),
            (4, 2, "default", 1),
            (5, 1, "default", 3),
        ];
        for (id, plan, profile, repeat) in rows {
            conn.execute(
                "INSERT INTO runs (id, plan_id, point_key, engine, profile, unsafe_profile, workload, variant, scale,
                    clients, repeat, cold, started_at, duration_s, tps, transactions, errors, retries, p50_ms, p95_ms,
                    p99_ms, max_ms, client_cpu_s, client_bound, interrupted, server_version, settings, host,
                    database_size_bytes, result)
                 VALUES (?1, ?2, ?1, 'sqlite', ?3, 0, 'tpcb', 'tpcb-like', 1, 1, ?4, 0, '', 1, 1, 1, 0, 0, 1, 1, 1,
                    1, 0, 0, 0, '', '{}', '{}', 0, '{}')",
                rusqlite::params![id, plan, profile, repeat],
            )
            .unwrap();
        }
        conn.execute("INSERT INTO windows (run_id, t, warmup, transactions, errors, retries) VALUES (1, 1, 0, 5, 0, 0)", [])
            .unwrap();
        let store = Store::open(&path).unwrap();
        assert_eq!(store.db.version(), 4);
        assert_eq!(store.point_runs(2).unwrap(), vec![1, 2, 5]);
        assert_eq!(store.point_runs(3).unwrap(), vec![3]);
        assert_eq!(store.point_runs(4).unwrap(), vec![4]);
        assert!(store.point_runs(99).is_err());
        let p90: Option<f64> = conn
            .query_row("SELECT p90_ms FROM windows WHERE run_id = 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(p90, None);
    }

    /// A store written before run_metrics existed gets its runs' figures on opening.
    #[test]
    fn migration_fills_figures_of_older_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        older_store(&path, 1)
            .execute_batch(
                r#"INSERT INTO plans VALUES (1, 'p', '', '');
            INSERT INTO runs (id, plan_id, point_key, engine, profile, unsafe_profile, workload, variant, scale,
                clients, repeat, cold, started_at, duration_s, tps, transactions, errors, retries, p50_ms, p95_ms,
                p99_ms, max_ms, client_cpu_s, client_bound, interrupted, server_version, settings, host,
                database_size_bytes, result)
            VALUES (1, 1, 'k1', 'sqlite', 'default', 0, 'tpcc', 'standard', 1, 1, 1, 0, '', 1, 1, 1, 0, 0, 1, 1, 1,
                1, 0, 0, 0, '', '{}', '{}', 0, '{"workload": {"metrics": {"nopm": 120.5, "tpmC": 121}}}'),
                (2, 1, 'k2', 'sqlite', 'default', 0, 'tpcb', 'tpcb-like', 1, 1, 1, 0, '', 1, 1, 1, 0, 0, 1, 1, 1,
                1, 0, 0, 0, '', '{}', '{}', 0, '{"workload": {"metrics": {}}}');"#,
            )
            .unwrap();
        let rows = Store::open(&path).unwrap().list(None).unwrap();
        assert_eq!(rows[0].metrics.get("nopm"), Some(&120.5));
        assert_eq!(rows[0].metrics.get("tpmC"), Some(&121.0));
        assert!(rows[1].metrics.is_empty());
    }
}
