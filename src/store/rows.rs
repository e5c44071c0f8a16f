//! A stored point's rows: the values of its inserts (the run, its windows, histograms, figures
//! and resource samples), and the listed runs read back from theirs.

use crate::engine::{DbResult, Value};

use super::db::{Db, flag, float, int, opt_float, text};
use super::{PointRecord, RunRow};

/// JSON text of anything serializable, for the JSON columns.
fn json<T: serde::Serialize>(value: &T) -> Value {
    Value::Text(serde_json::to_string(value).expect("results serialize"))
}

/// The `{where}` of a query of one plan's runs (or of all), with its parameters.
pub(super) fn of_plan(plan: Option<&str>) -> (&'static str, Vec<Value>) {
    match plan {
        Some(name) => ("WHERE plans.name = ?", vec![Value::Text(name.into())]),
        None => ("", Vec::new()),
    }
}

/// The values of the point's row of `runs`, in the order of the `insert run` statement.
pub(super) fn run(rec: &PointRecord) -> Vec<Value> {
    let (r, p, m) = (rec.result, rec.point, &rec.result.measurement);
    let int = |n: u64| Value::Int(n as i64);
    vec![
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
        int(m.transactions),
        int(m.errors),
        int(m.retries),
        Value::Float(m.latency_ms.p50),
        Value::Float(m.latency_ms.p95),
        Value::Float(m.latency_ms.p99),
        Value::Float(m.latency_ms.max),
        Value::Float(r.client_cpu_s),
        flag(r.client_bound),
        flag(r.interrupted),
        Value::Text(r.engine.server_version.clone()),
        json(&r.engine.settings),
        json(&r.host),
        int(r.engine.database_size_bytes),
        json(r),
    ]
}

/// Everything measured with run `id`: its windows, histograms (sent as hex, which every
/// dialect turns into bytes), finite figures and resource samples.
pub(super) fn insert_details(db: &Db, id: i64, rec: &PointRecord) -> DbResult<()> {
    let m = &rec.result.measurement;
    let count = |n: u64| Value::Int(n as i64);
    for w in &m.windows {
        let row = [
            Value::Int(id),
            Value::Int(i64::from(w.t)),
            flag(w.warmup),
            count(w.transactions),
            count(w.errors),
            count(w.retries),
            opt_float(w.p50_ms),
            opt_float(w.p90_ms),
            opt_float(w.p95_ms),
            opt_float(w.p99_ms),
        ];
        db.query("insert window", &row)?;
    }
    for (name, bytes) in &m.histograms {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let row = [Value::Int(id), Value::Text(name.clone()), Value::Text(hex)];
        db.query("insert histogram", &row)?;
    }
    for (name, value) in rec.result.workload.metrics.iter() {
        if value.is_finite() {
            let row = [
                Value::Int(id),
                Value::Text(name.clone()),
                Value::Float(*value),
            ];
            db.query("insert figure", &row)?;
        }
    }
    for (i, sample) in rec.resources.iter().enumerate() {
        let t = sample.get("t").and_then(|t| t.as_u64());
        let t = t.unwrap_or(i as u64 + 1);
        let row = [Value::Int(id), count(t), Value::Text(sample.to_string())];
        db.query("insert resource", &row)?;
    }
    Ok(())
}

/// Every stored run (of one plan, or all), oldest first, with its workload's figures.
pub(super) fn list(db: &Db, plan: Option<&str>) -> DbResult<Vec<RunRow>> {
    let (cond, params) = of_plan(plan);
    let rows = db.query_where("list", cond, &params)?;
    let mut out: Vec<RunRow> = rows.iter().map(|r| listed(r)).collect();
    for r in db.query("figures", &[])? {
        if let Ok(i) = out.binary_search_by_key(&int(&r[0]), |row| row.id) {
            out[i].metrics.insert(text(&r[1]), float(&r[2]));
        }
    }
    Ok(out)
}

/// A run from its row of the `list` statement.
fn listed(r: &[Value]) -> RunRow {
    RunRow {
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
        limiter: text(&r[22]),
        metrics: Default::default(),
    }
}
