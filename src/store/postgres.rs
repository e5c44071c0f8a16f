//! The results store in a PostgreSQL database (`--results postgres://...`), through dbduel's own
//! PostgreSQL session: the same tables and columns as the SQLite store (integers for flags,
//! JSON as text, histograms as bytea), made and migrated under an advisory lock so that
//! several machines may open a new store at once; a plan claimed under a table lock.

use crate::engine::{self, EngineOptions, Protocol, Session, Value};

use super::{Holder, PointRecord, RunRow};

/// The store's schema at its newest version (`schema::MIGRATIONS.len()`), in PostgreSQL's
/// words. A migration added to the SQLite store is added here too, as `MIGRATIONS` below.
const SCHEMA: &str = r#"
CREATE TABLE plans (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE runs (
    id BIGSERIAL PRIMARY KEY,
    plan_id BIGINT NOT NULL REFERENCES plans(id),
    point_key TEXT NOT NULL,
    engine TEXT NOT NULL,
    profile TEXT NOT NULL,
    unsafe_profile INTEGER NOT NULL,
    workload TEXT NOT NULL,
    variant TEXT NOT NULL,
    scale INTEGER NOT NULL,
    clients INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    cold INTEGER NOT NULL,
    cache_dropped INTEGER,
    started_at TEXT NOT NULL,
    duration_s DOUBLE PRECISION NOT NULL,
    tps DOUBLE PRECISION NOT NULL,
    transactions BIGINT NOT NULL,
    errors BIGINT NOT NULL,
    retries BIGINT NOT NULL,
    p50_ms DOUBLE PRECISION NOT NULL,
    p95_ms DOUBLE PRECISION NOT NULL,
    p99_ms DOUBLE PRECISION NOT NULL,
    max_ms DOUBLE PRECISION NOT NULL,
    client_cpu_s DOUBLE PRECISION NOT NULL,
    client_bound INTEGER NOT NULL,
    interrupted INTEGER NOT NULL,
    server_version TEXT NOT NULL,
    settings TEXT NOT NULL,
    host TEXT NOT NULL,
    database_size_bytes BIGINT NOT NULL,
    result TEXT NOT NULL,
    UNIQUE (plan_id, point_key)
);
CREATE TABLE windows (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    t INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    transactions BIGINT NOT NULL,
    errors BIGINT NOT NULL,
    retries BIGINT NOT NULL,
    p50_ms DOUBLE PRECISION,
    p99_ms DOUBLE PRECISION,
    p90_ms DOUBLE PRECISION,
    p95_ms DOUBLE PRECISION,
    PRIMARY KEY (run_id, t)
);
CREATE TABLE histograms (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    transaction_type TEXT NOT NULL,
    hdr_v2 BYTEA NOT NULL,
    PRIMARY KEY (run_id, transaction_type)
);
CREATE TABLE resources (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    t INTEGER NOT NULL,
    sample TEXT NOT NULL,
    PRIMARY KEY (run_id, t)
);
CREATE TABLE run_metrics (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE sweeps (
    plan_id BIGINT PRIMARY KEY REFERENCES plans(id),
    pid BIGINT NOT NULL,
    host TEXT NOT NULL,
    process_start TEXT NOT NULL,
    started_at TEXT NOT NULL
)
"#;

/// Migrations after the version `SCHEMA` creates, in step with the SQLite store's: append,
/// never edit.
const MIGRATIONS: &[&str] = &[];

/// The version `SCHEMA` is: the SQLite store's migrations it holds.
const SCHEMA_VERSION: i64 = 4;

/// How long the store's server has to answer one statement (a migration waiting for another
/// process's lock included) before the store is given up as stalled.
const STATEMENT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

pub struct PgStore {
    session: Box<dyn Session>,
}

type Rows = Vec<Vec<Value>>;

fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Text(s) => s.clone(),
    }
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn float(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        Value::Int(i) => *i as f64,
        Value::Text(s) => s.trim().parse().unwrap_or(0.0),
        Value::Null => 0.0,
    }
}

fn opt_text(v: &Option<String>) -> Value {
    v.as_ref().map_or(Value::Null, |s| Value::Text(s.clone()))
}

fn opt_float(v: Option<f64>) -> Value {
    v.map_or(Value::Null, Value::Float)
}

impl PgStore {
    /// Connect and bring the schema to the newest version.
    pub fn open(dsn: &str) -> Result<PgStore, String> {
        let dsn = engine::parse_dsn(dsn).map_err(|e| e.to_string())?;
        let engine = engine::open(&dsn, &EngineOptions::default(), Protocol::Prepared)
            .map_err(|e| e.to_string())?;
        let mut session = engine.connect().map_err(|e| e.message)?;
        // A stalled store must not hold a sweep: every statement has this long to answer.
        session.set_timeout(Some(STATEMENT_DEADLINE));
        let mut store = PgStore { session };
        store.migrate()?;
        Ok(store)
    }

    fn run(&mut self, sql: &str, params: &[Value]) -> Result<Rows, String> {
        let stmt = self.session.prepare(sql).map_err(|e| e.message)?;
        self.session.query(stmt, params).map_err(|e| e.message)
    }

    fn batch(&mut self, sql: &str) -> Result<(), String> {
        self.session.batch(sql).map_err(|e| e.message)
    }

    /// Run `f` in one transaction: committed when it succeeds, rolled back when it fails.
    fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<T, String> {
        self.session.begin(true).map_err(|e| e.message)?;
        match f(self) {
            Ok(v) => {
                self.session.commit().map_err(|e| e.message)?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.session.rollback();
                Err(e)
            }
        }
    }

    fn migrate(&mut self) -> Result<(), String> {
        self.transaction(|s| {
            // One opener at a time, on every machine: the others wait and find it current.
            s.run("SELECT pg_advisory_xact_lock(4242424242)", &[])?;
            s.batch("CREATE TABLE IF NOT EXISTS dbduel_store (version BIGINT NOT NULL)")?;
            let rows = s.run("SELECT version FROM dbduel_store", &[])?;
            let version = match rows.first() {
                Some(r) => int(&r[0]),
                None => {
                    s.batch(SCHEMA)?;
                    s.run("INSERT INTO dbduel_store (version) VALUES (?)", &[Value::Int(SCHEMA_VERSION)])?;
                    SCHEMA_VERSION
                }
            };
            let newest = SCHEMA_VERSION + MIGRATIONS.len() as i64;
            if version > newest {
                return Err(format!(
                    "the store is at version {version}, newer than this dbduel's {newest}: use a newer dbduel"
                ));
            }
            for sql in MIGRATIONS.iter().skip((version - SCHEMA_VERSION).max(0) as usize) {
                s.batch(sql)?;
            }
            s.run("UPDATE dbduel_store SET version = ?", &[Value::Int(newest)])?;
            Ok(())
        })
    }

    /// The plan, created when new, and this process's claim on it, in one transaction under
    /// a lock on `sweeps`; Err(Some(holder)) when a live process holds it.
    pub fn claim(
        &mut self,
        name: &str,
        plan_text: &str,
        me: &Holder,
    ) -> Result<Result<i64, Holder>, String> {
        self.transaction(|s| {
            s.batch("LOCK TABLE sweeps IN EXCLUSIVE MODE")?;
            let params = [Value::Text(name.into()), Value::Text(plan_text.into())];
            let found = s.run("SELECT id FROM plans WHERE name = ? AND text = ?", &params)?;
            let plan_id = match found.first() {
                Some(r) => int(&r[0]),
                None => {
                    let mut p = params.to_vec();
                    p.push(Value::Text(super::now()));
                    let r = s.run(
                        "INSERT INTO plans (name, text, created_at) VALUES (?, ?, ?) RETURNING id",
                        &p,
                    )?;
                    int(&r[0][0])
                }
            };
            let held = s.run(
                "SELECT pid, host, process_start, started_at FROM sweeps WHERE plan_id = ?",
                &[Value::Int(plan_id)],
            )?;
            if let Some(r) = held.first() {
                let other = Holder {
                    pid: int(&r[0]) as u32,
                    host: text(&r[1]),
                    process_start: text(&r[2]),
                    started_at: text(&r[3]),
                };
                if other.alive() && other != *me {
                    return Ok(Err(other));
                }
            }
            s.run(
                "INSERT INTO sweeps (plan_id, pid, host, process_start, started_at) VALUES (?, ?, ?, ?, ?)
                 ON CONFLICT (plan_id) DO UPDATE SET pid = excluded.pid, host = excluded.host,
                    process_start = excluded.process_start, started_at = excluded.started_at",
                &[
                    Value::Int(plan_id),
                    Value::Int(i64::from(me.pid)),
                    Value::Text(me.host.clone()),
                    Value::Text(me.process_start.clone()),
                    Value::Text(me.started_at.clone()),
                ],
            )?;
            Ok(Ok(plan_id))
        })
    }

    pub fn release(&mut self, plan_id: i64, pid: u32) -> Result<(), String> {
        self.run(
            "DELETE FROM sweeps WHERE plan_id = ? AND pid = ?",
            &[Value::Int(plan_id), Value::Int(i64::from(pid))],
        )
        .map(drop)
    }

    pub fn done(&mut self, plan_id: i64) -> Result<Vec<String>, String> {
        let rows = self.run(
            "SELECT point_key FROM runs WHERE plan_id = ?",
            &[Value::Int(plan_id)],
        )?;
        Ok(rows.iter().map(|r| text(&r[0])).collect())
    }

    /// One point and everything measured with it, in one transaction.
    pub fn save(&mut self, rec: &PointRecord) -> Result<i64, String> {
        use base64::Engine as _;
        let (r, p, m) = (rec.result, rec.point, &rec.result.measurement);
        let flag = |b: bool| Value::Int(i64::from(b));
        let run = vec![
            Value::Int(rec.plan_id),
            Value::Text(p.key()),
            Value::Text(p.engine.clone()),
            Value::Text(p.profile.clone()),
            flag(rec.unsafe_profile),
            Value::Text(p.workload.clone()),
            Value::Text(p.variant.clone()),
            Value::Int(i64::from(p.scale)),
            Value::Int(i64::from(p.clients)),
            Value::Int(i64::from(p.repeat)),
            flag(p.cold),
            rec.cache_dropped.map_or(Value::Null, flag),
            Value::Text(r.started_at.clone()),
            Value::Float(m.duration_s),
            Value::Float(r.tps),
            Value::Int(m.transactions as i64),
            Value::Int(m.errors as i64),
            Value::Int(m.retries as i64),
            Value::Float(m.latency_ms.p50),
            Value::Float(m.latency_ms.p95),
            Value::Float(m.latency_ms.p99),
            Value::Float(m.latency_ms.max),
            Value::Float(r.client_cpu_s),
            flag(r.client_bound),
            flag(r.interrupted),
            Value::Text(r.engine.server_version.clone()),
            Value::Text(super::schema::json(&r.engine.settings)),
            Value::Text(super::schema::json(&r.host)),
            Value::Int(r.engine.database_size_bytes as i64),
            Value::Text(super::schema::json(r)),
        ];
        self.transaction(|s| {
            let id = int(&s.run(
                "INSERT INTO runs (plan_id, point_key, engine, profile, unsafe_profile, workload, variant, scale,
                    clients, repeat, cold, cache_dropped, started_at, duration_s, tps, transactions, errors, retries,
                    p50_ms, p95_ms, p99_ms, max_ms, client_cpu_s, client_bound, interrupted, server_version,
                    settings, host, database_size_bytes, result)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                 RETURNING id",
                &run,
            )?[0][0]);
            for w in &m.windows {
                s.run(
                    "INSERT INTO windows (run_id, t, warmup, transactions, errors, retries, p50_ms, p90_ms, p95_ms, p99_ms)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    &[
                        Value::Int(id),
                        Value::Int(i64::from(w.t)),
                        flag(w.warmup),
                        Value::Int(w.transactions as i64),
                        Value::Int(w.errors as i64),
                        Value::Int(w.retries as i64),
                        opt_float(w.p50_ms),
                        opt_float(w.p90_ms),
                        opt_float(w.p95_ms),
                        opt_float(w.p99_ms),
                    ],
                )?;
            }
            for (name, bytes) in &m.histograms {
                s.run(
                    "INSERT INTO histograms (run_id, transaction_type, hdr_v2) VALUES (?, ?, decode(?, 'base64'))",
                    &[
                        Value::Int(id),
                        Value::Text(name.clone()),
                        Value::Text(base64::engine::general_purpose::STANDARD.encode(bytes)),
                    ],
                )?;
            }
            for (name, value) in r.workload.metrics.iter().filter(|(_, v)| v.is_finite()) {
                s.run(
                    "INSERT INTO run_metrics (run_id, name, value) VALUES (?, ?, ?)",
                    &[Value::Int(id), Value::Text(name.clone()), Value::Float(*value)],
                )?;
            }
            for (i, sample) in rec.resources.iter().enumerate() {
                let t = sample.get("t").and_then(|t| t.as_u64()).unwrap_or(i as u64 + 1);
                s.run(
                    "INSERT INTO resources (run_id, t, sample) VALUES (?, ?, ?)",
                    &[Value::Int(id), Value::Int(t as i64), Value::Text(sample.to_string())],
                )?;
            }
            Ok(id)
        })
    }

    pub fn list(&mut self, plan: Option<&str>) -> Result<Vec<RunRow>, String> {
        let rows = self.run(
            "SELECT runs.id, plans.name, engine, profile, unsafe_profile, workload, variant, scale, clients, repeat,
                cold, started_at, duration_s, tps, p50_ms, p95_ms, p99_ms, errors, client_bound, server_version,
                coalesce((result::jsonb ->> 'reconnects')::bigint, 0),
                coalesce(jsonb_array_length(result::jsonb -> 'server_restarts'), 0)
             FROM runs JOIN plans ON plans.id = runs.plan_id
             WHERE ?::text IS NULL OR plans.name = ? ORDER BY runs.id",
            &[opt_text(&plan.map(String::from)), opt_text(&plan.map(String::from))],
        )?;
        let mut out: Vec<RunRow> = rows
            .iter()
            .map(|r| RunRow {
                id: int(&r[0]),
                plan: text(&r[1]),
                engine: text(&r[2]),
                profile: text(&r[3]),
                unsafe_profile: int(&r[4]) != 0,
                workload: text(&r[5]),
                variant: text(&r[6]),
                scale: int(&r[7]) as u32,
                clients: int(&r[8]) as u32,
                repeat: int(&r[9]) as u32,
                cold: int(&r[10]) != 0,
                started_at: text(&r[11]),
                duration_s: float(&r[12]),
                tps: float(&r[13]),
                p50_ms: float(&r[14]),
                p95_ms: float(&r[15]),
                p99_ms: float(&r[16]),
                errors: int(&r[17]),
                client_bound: int(&r[18]) != 0,
                server_version: text(&r[19]),
                reconnects: int(&r[20]),
                server_restarts: int(&r[21]),
                metrics: Default::default(),
            })
            .collect();
        for r in self.run(
            "SELECT run_id, name, value FROM run_metrics ORDER BY run_id",
            &[],
        )? {
            if let Ok(i) = out.binary_search_by_key(&int(&r[0]), |row| row.id) {
                out[i].metrics.insert(text(&r[1]), float(&r[2]));
            }
        }
        Ok(out)
    }

    pub fn plan_names(&mut self) -> Result<Vec<String>, String> {
        let rows = self.run("SELECT name FROM plans GROUP BY name ORDER BY min(id)", &[])?;
        Ok(rows.iter().map(|r| text(&r[0])).collect())
    }

    pub fn result(&mut self, id: i64) -> Result<Option<String>, String> {
        let rows = self.run("SELECT result FROM runs WHERE id = ?", &[Value::Int(id)])?;
        Ok(rows.first().map(|r| text(&r[0])))
    }

    /// The runs that started at `started_at` with `workload`: id, plan name, result JSON.
    pub fn same_start(
        &mut self,
        started_at: &str,
        workload: &str,
    ) -> Result<Vec<(i64, String, String)>, String> {
        let rows = self.run(
            "SELECT runs.id, plans.name, runs.result FROM runs JOIN plans ON plans.id = runs.plan_id
             WHERE runs.started_at = ? AND runs.workload = ? ORDER BY runs.id",
            &[
                Value::Text(started_at.to_string()),
                Value::Text(workload.to_string()),
            ],
        )?;
        Ok(rows
            .iter()
            .map(|r| (int(&r[0]), text(&r[1]), text(&r[2])))
            .collect())
    }

    pub fn point_runs(&mut self, id: i64) -> Result<Vec<i64>, String> {
        let rows = self.run(
            "SELECT sibling.id FROM runs AS run JOIN runs AS sibling
                ON sibling.plan_id = run.plan_id AND sibling.engine = run.engine
                AND sibling.profile = run.profile AND sibling.workload = run.workload
                AND sibling.variant = run.variant AND sibling.scale = run.scale
                AND sibling.clients = run.clients AND sibling.cold = run.cold
             WHERE run.id = ? ORDER BY sibling.repeat, sibling.id",
            &[Value::Int(id)],
        )?;
        Ok(rows.iter().map(|r| int(&r[0])).collect())
    }

    pub fn resources(&mut self, id: i64) -> Result<Vec<serde_json::Value>, String> {
        let rows = self.run(
            "SELECT sample FROM resources WHERE run_id = ? ORDER BY t",
            &[Value::Int(id)],
        )?;
        Ok(rows
            .iter()
            .map(|r| serde_json::from_str(&text(&r[0])).unwrap_or(serde_json::Value::Null))
            .collect())
    }

    pub fn settings(
        &mut self,
        plan: Option<&str>,
    ) -> Result<Vec<(String, String, bool, String)>, String> {
        let p = opt_text(&plan.map(String::from));
        let rows = self.run(
            "SELECT engine, profile, unsafe_profile, settings FROM runs JOIN plans ON plans.id = runs.plan_id
             WHERE runs.id IN (SELECT max(runs.id) FROM runs JOIN plans ON plans.id = runs.plan_id
                               WHERE ?::text IS NULL OR plans.name = ? GROUP BY engine, profile)
             ORDER BY engine, profile",
            &[p.clone(), p],
        )?;
        Ok(rows
            .iter()
            .map(|r| (text(&r[0]), text(&r[1]), int(&r[2]) != 0, text(&r[3])))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two stores are written twice, once per dialect: every table and column the SQLite
    /// migrations make is in `SCHEMA` (and no other), and the versions are in step, so that a
    /// migration added to one is not forgotten in the other.
    #[test]
    fn same_tables_and_columns_as_the_sqlite_store() {
        assert_eq!(
            SCHEMA_VERSION + MIGRATIONS.len() as i64,
            super::super::schema::MIGRATIONS.len() as i64,
            "a SQLite migration without its PostgreSQL one"
        );
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for m in super::super::schema::MIGRATIONS {
            conn.execute_batch(m).unwrap();
        }
        let columns_of = |table: &str| -> Vec<String> {
            let mut st = conn
                .prepare(&format!("PRAGMA table_info({table})"))
                .unwrap();
            let mut cols: Vec<String> = st
                .query_map([], |r| r.get::<_, String>(1))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            cols.sort();
            cols
        };
        let mut st = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        let lite: Vec<String> = st
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut pg: Vec<String> = Vec::new();
        for block in SCHEMA.split("CREATE TABLE ").skip(1) {
            let (name, body) = block.split_once('(').unwrap();
            let name = name.trim().to_string();
            let mut cols: Vec<String> = body
                .lines()
                .map(str::trim)
                .filter_map(|l| l.split_whitespace().next())
                .filter(|w| {
                    w.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
                })
                .filter(|w| !w.is_empty())
                .map(String::from)
                .collect();
            cols.sort();
            assert_eq!(cols, columns_of(&name), "table {name}'s columns differ");
            pg.push(name);
        }
        pg.sort();
        assert_eq!(pg, lite, "the stores' tables differ");
    }
}
