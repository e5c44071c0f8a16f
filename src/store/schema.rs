//! The store's tables, their migrations (by PRAGMA user_version), and the SQL that reads and
//! writes them.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::{Holder, PointRecord, RunRow};

/// Each entry migrates from the version before it; append, never edit.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE plans (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    plan_id INTEGER NOT NULL REFERENCES plans(id),
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
    duration_s REAL NOT NULL,
    tps REAL NOT NULL,
    transactions INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    retries INTEGER NOT NULL,
    p50_ms REAL NOT NULL,
    p95_ms REAL NOT NULL,
    p99_ms REAL NOT NULL,
    max_ms REAL NOT NULL,
    client_cpu_s REAL NOT NULL,
    client_bound INTEGER NOT NULL,
    interrupted INTEGER NOT NULL,
    server_version TEXT NOT NULL,
    settings TEXT NOT NULL,
    host TEXT NOT NULL,
    database_size_bytes INTEGER NOT NULL,
    result TEXT NOT NULL,
    UNIQUE (plan_id, point_key)
);
CREATE TABLE windows (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    t INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    transactions INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    retries INTEGER NOT NULL,
    p50_ms REAL,
    p99_ms REAL,
    PRIMARY KEY (run_id, t)
);
CREATE TABLE histograms (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    transaction_type TEXT NOT NULL,
    hdr_v2 BLOB NOT NULL,
    PRIMARY KEY (run_id, transaction_type)
);
CREATE TABLE resources (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    t INTEGER NOT NULL,
    sample TEXT NOT NULL,
    PRIMARY KEY (run_id, t)
);
"#,
    r#"
CREATE TABLE run_metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
INSERT INTO run_metrics (run_id, name, value)
    SELECT runs.id, m.key, m.value FROM runs, json_each(runs.result, '$.workload.metrics') AS m
    WHERE m.type IN ('real', 'integer');
"#,
    r#"
CREATE TABLE sweeps (
    plan_id INTEGER PRIMARY KEY REFERENCES plans(id),
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    process_start TEXT NOT NULL,
    started_at TEXT NOT NULL
);
"#,
    // The per-second p90 and p95, which `compare` resamples; empty for older runs.
    r#"
ALTER TABLE windows ADD COLUMN p90_ms REAL;
ALTER TABLE windows ADD COLUMN p95_ms REAL;
"#,
];

/// Bring the store to the newest schema. A store that is current is only read (so a
/// read-only store still gives reports); otherwise the migrations run in one write transaction
/// taken at its start (BEGIN IMMEDIATE), so that several processes opening a new store at once
/// apply them once: the others wait, then find the store current.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let version =
        |c: &Connection| c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0));
    if version(conn)? >= MIGRATIONS.len() as i64 {
        return Ok(());
    }
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        conn.pragma_update(None, "journal_mode", "WAL")?;
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let from = version(&tx)?;
    for sql in MIGRATIONS.iter().skip(from as usize) {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    tx.commit()
}

/// Who sweeps a plan now, if anyone has claimed it.
pub fn sweep_holder(conn: &Connection, plan_id: i64) -> rusqlite::Result<Option<Holder>> {
    conn.query_row(
        "SELECT pid, host, process_start, started_at FROM sweeps WHERE plan_id = ?1",
        [plan_id],
        |r| {
            Ok(Holder {
                pid: r.get(0)?,
                host: r.get(1)?,
                process_start: r.get(2)?,
                started_at: r.get(3)?,
            })
        },
    )
    .optional()
}

pub fn claim_sweep(conn: &Connection, plan_id: i64, me: &Holder) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO sweeps (plan_id, pid, host, process_start, started_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![plan_id, me.pid, me.host, me.process_start, me.started_at],
    )
    .map(drop)
}

pub fn release_sweep(conn: &Connection, plan_id: i64, pid: u32) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM sweeps WHERE plan_id = ?1 AND pid = ?2",
        params![plan_id, pid],
    )
    .map(drop)
}

pub fn insert_run(tx: &Transaction, rec: &PointRecord) -> rusqlite::Result<i64> {
    let (r, p, m) = (rec.result, rec.point, &rec.result.measurement);
    tx.execute(
        "INSERT INTO runs (plan_id, point_key, engine, profile, unsafe_profile, workload, variant, scale, clients,
            repeat, cold, cache_dropped, started_at, duration_s, tps, transactions, errors, retries, p50_ms, p95_ms,
            p99_ms, max_ms, client_cpu_s, client_bound, interrupted, server_version, settings, host,
            database_size_bytes, result)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,
            ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)",
        params![
            rec.plan_id, p.key(), p.engine, p.profile, rec.unsafe_profile, p.workload, p.variant, p.scale, p.clients,
            p.repeat, p.cold, rec.cache_dropped, r.started_at, m.duration_s, r.tps, m.transactions as i64, m.errors as i64,
            m.retries as i64, m.latency_ms.p50, m.latency_ms.p95, m.latency_ms.p99, m.latency_ms.max, r.client_cpu_s,
            r.client_bound, r.interrupted, r.engine.server_version, json(&r.engine.settings), json(&r.host),
            r.engine.database_size_bytes as i64, json(r)
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

pub fn insert_details(tx: &Transaction, id: i64, rec: &PointRecord) -> rusqlite::Result<()> {
    let m = &rec.result.measurement;
    let mut w = tx.prepare(
        "INSERT INTO windows (run_id, t, warmup, transactions, errors, retries, p50_ms, p90_ms, p95_ms, p99_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for win in &m.windows {
        w.execute(params![
            id,
            win.t,
            win.warmup,
            win.transactions as i64,
            win.errors as i64,
            win.retries as i64,
            win.p50_ms,
            win.p90_ms,
            win.p95_ms,
            win.p99_ms
        ])?;
    }
    let mut h = tx
        .prepare("INSERT INTO histograms (run_id, transaction_type, hdr_v2) VALUES (?1, ?2, ?3)")?;
    for (name, bytes) in &m.histograms {
        h.execute(params![id, name, bytes])?;
    }
    let mut f = tx.prepare("INSERT INTO run_metrics (run_id, name, value) VALUES (?1, ?2, ?3)")?;
    for (name, value) in &rec.result.workload.metrics {
        if value.is_finite() {
            f.execute(params![id, name, value])?;
        }
    }
    let mut s = tx.prepare("INSERT INTO resources (run_id, t, sample) VALUES (?1, ?2, ?3)")?;
    for (i, sample) in rec.resources.iter().enumerate() {
        let t = sample
            .get("t")
            .and_then(|t| t.as_u64())
            .unwrap_or(i as u64 + 1);
        s.execute(params![id, t as i64, sample.to_string()])?;
    }
    Ok(())
}

/// The runs of the point run `id` belongs to (same plan, engine, profile, workload, variant,
/// scale, clients, cold or warm: its repeats), by repeat; empty when there is no run `id`.
pub fn point_runs(conn: &Connection, id: i64) -> rusqlite::Result<Vec<i64>> {
    let mut stmt = conn.prepare(
        "SELECT sibling.id FROM runs AS run JOIN runs AS sibling
            ON sibling.plan_id = run.plan_id AND sibling.engine = run.engine
            AND sibling.profile = run.profile AND sibling.workload = run.workload
            AND sibling.variant = run.variant AND sibling.scale = run.scale
            AND sibling.clients = run.clients AND sibling.cold = run.cold
         WHERE run.id = ?1 ORDER BY sibling.repeat, sibling.id",
    )?;
    let ids = stmt.query_map([id], |r| r.get(0))?;
    ids.collect()
}

pub fn list(conn: &Connection, plan: Option<&str>) -> rusqlite::Result<Vec<RunRow>> {
    let mut stmt = conn.prepare(
        "SELECT runs.id, plans.name, engine, profile, unsafe_profile, workload, variant, scale, clients, repeat, cold,
                started_at, duration_s, tps, p50_ms, p95_ms, p99_ms, errors, client_bound, server_version,
                coalesce(json_extract(result, '$.reconnects'), 0),
                coalesce(json_array_length(result, '$.server_restarts'), 0)
         FROM runs JOIN plans ON plans.id = runs.plan_id
         WHERE ?1 IS NULL OR plans.name = ?1 ORDER BY runs.id",
    )?;
    let rows = stmt.query_map([plan], |r| {
        Ok(RunRow {
            id: r.get(0)?,
            plan: r.get(1)?,
            engine: r.get(2)?,
            profile: r.get(3)?,
            unsafe_profile: r.get(4)?,
            workload: r.get(5)?,
            variant: r.get(6)?,
            scale: r.get(7)?,
            clients: r.get(8)?,
            repeat: r.get(9)?,
            cold: r.get(10)?,
            started_at: r.get(11)?,
            duration_s: r.get(12)?,
            tps: r.get(13)?,
            p50_ms: r.get(14)?,
            p95_ms: r.get(15)?,
            p99_ms: r.get(16)?,
            errors: r.get(17)?,
            client_bound: r.get(18)?,
            server_version: r.get(19)?,
            reconnects: r.get(20)?,
            server_restarts: r.get(21)?,
            metrics: Default::default(),
        })
    })?;
    let mut rows: Vec<RunRow> = rows.collect::<rusqlite::Result<_>>()?;
    let mut figures =
        conn.prepare("SELECT run_id, name, value FROM run_metrics ORDER BY run_id")?;
    let figures = figures.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, f64>(2)?,
        ))
    })?;
    for figure in figures {
        let (id, name, value) = figure?;
        if let Ok(i) = rows.binary_search_by_key(&id, |row| row.id) {
            rows[i].metrics.insert(name, value);
        }
    }
    Ok(rows)
}

pub fn resources(conn: &Connection, id: i64) -> rusqlite::Result<Vec<serde_json::Value>> {
    let mut stmt = conn.prepare("SELECT sample FROM resources WHERE run_id = ?1 ORDER BY t")?;
    let rows = stmt.query_map([id], |r| r.get::<_, String>(0))?;
    rows.map(|r| r.map(|s| serde_json::from_str(&s).unwrap_or(serde_json::Value::Null)))
        .collect()
}

/// (engine, profile, unsafe, settings JSON) from the newest run of each pair.
pub fn settings(
    conn: &Connection,
    plan: Option<&str>,
) -> rusqlite::Result<Vec<(String, String, bool, String)>> {
    let mut stmt = conn.prepare(
        "SELECT engine, profile, unsafe_profile, settings FROM runs JOIN plans ON plans.id = runs.plan_id
         WHERE runs.id IN (SELECT max(runs.id) FROM runs JOIN plans ON plans.id = runs.plan_id
                           WHERE ?1 IS NULL OR plans.name = ?1 GROUP BY engine, profile)
         ORDER BY engine, profile",
    )?;
    let rows = stmt.query_map([plan], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    rows.collect()
}

/// JSON text of anything serializable, for the JSON columns.
pub(super) fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("results serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's point siblings are its repeats: same plan and point but for the repeat; a
    /// store written before the windows' p90 and p95 gets the columns, empty, on opening.
    #[test]
    fn point_runs_are_the_repeats_of_a_point() {
        let mut conn = Connection::open_in_memory().unwrap();
        for m in &MIGRATIONS[..3] {
            conn.execute_batch(m).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
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
                params![id, plan, profile, repeat],
            )
            .unwrap();
        }
        conn.execute("INSERT INTO windows (run_id, t, warmup, transactions, errors, retries) VALUES (1, 1, 0, 5, 0, 0)", [])
            .unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(point_runs(&conn, 2).unwrap(), vec![1, 2, 5]);
        assert_eq!(point_runs(&conn, 3).unwrap(), vec![3]);
        assert_eq!(point_runs(&conn, 4).unwrap(), vec![4]);
        assert!(point_runs(&conn, 99).unwrap().is_empty());
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
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute_batch(
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
        migrate(&mut conn).unwrap();
        let rows = list(&conn, None).unwrap();
        assert_eq!(rows[0].metrics.get("nopm"), Some(&120.5));
        assert_eq!(rows[0].metrics.get("tpmC"), Some(&121.0));
        assert!(rows[1].metrics.is_empty());
    }
}
