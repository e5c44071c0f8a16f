//! The results store: one SQLite database (default ./dbduel-results.db) holding every measured
//! point with its plan, options, engine version, settings in effect, host facts, per-second
//! windows, latency histograms and server resource samples. Each point is committed the
//! moment it finishes, so an interrupted sweep loses at most the point in flight.

mod schema;
pub mod summary;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use crate::Error;
use crate::report::RunResult;

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
    /// The workload's own figures (TPC-C: nopm, tpmC), by name.
    pub metrics: std::collections::BTreeMap<String, f64>,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

fn db(e: rusqlite::Error, path: &Path) -> Error {
    Error::Io(format!("results store {}: {e}", path.display()))
}

impl Store {
    /// Open (creating and migrating as needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Store, Error> {
        let conn = Connection::open(path).map_err(|e| db(e, path))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| db(e, path))?;
        schema::migrate(&conn).map_err(|e| db(e, path))?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The plan with this name and text, created when new: the same plan resumes.
    pub fn plan(&self, name: &str, text: &str) -> Result<i64, Error> {
        // The plan's text is kept as written, but for the passwords of its DSNs.
        let text = crate::dsn::redact_text(text);
        let found: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM plans WHERE name = ?1 AND text = ?2",
                params![name, &text],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| db(e, &self.path))?;
        if let Some(id) = found {
            return Ok(id);
        }
        self.conn
            .execute(
                "INSERT INTO plans (name, text, created_at) VALUES (?1, ?2, ?3)",
                params![name, &text, now()],
            )
            .map_err(|e| db(e, &self.path))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Keys of the points of a plan that are already measured.
    pub fn done(&self, plan_id: i64) -> Result<std::collections::HashSet<String>, Error> {
        let mut stmt = self
            .conn
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
        let tx = self.conn.transaction().map_err(|e| db(e, &path))?;
        let id = schema::insert_run(&tx, rec).map_err(|e| db(e, &path))?;
        schema::insert_details(&tx, id, rec).map_err(|e| db(e, &path))?;
        tx.commit().map_err(|e| db(e, &path))?;
        Ok(id)
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
        schema::list(&self.conn, plan).map_err(|e| db(e, &self.path))
    }

    /// The names of the stored plans, oldest first.
    pub fn plan_names(&self) -> Result<Vec<String>, Error> {
        let mut stmt = self
            .conn
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
        let text: Option<String> = self
            .conn
            .query_row("SELECT result FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| db(e, &self.path))?;
        let text = text.ok_or_else(|| {
            Error::Usage(format!(
                "no run {id} in {}: see `dbduel results list`",
                self.path.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| Error::Io(format!("run {id}: {e}")))
    }

    /// The per-second server resources of one run.
    pub fn resources(&self, id: i64) -> Result<Vec<serde_json::Value>, Error> {
        schema::resources(&self.conn, id).map_err(|e| db(e, &self.path))
    }

    /// The settings each (engine, profile) ran under, from its newest run.
    pub fn settings(
        &self,
        plan: Option<&str>,
    ) -> Result<Vec<(String, String, bool, String)>, Error> {
        schema::settings(&self.conn, plan).map_err(|e| db(e, &self.path))
    }
}

pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
