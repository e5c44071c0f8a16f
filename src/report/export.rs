//! The stored runs as `dbduel results` gives them: a table for people (`results list`), and
//! every run exported as JSON or CSV (`results export`), one row per run.

use crate::store::RunRow;

/// The runs as a table: the key columns, tps and tail latencies, what flags a run, and the
/// workload's own figures.
pub fn table(rows: &[RunRow]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let flags = [
                (r.unsafe_profile, "unsafe"),
                (r.client_bound, "client-bound"),
                (r.cold, "cold"),
                (r.errors > 0, "errors"),
                (r.server_restarts > 0, "server restarted"),
            ];
            let flags: Vec<&str> = flags
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, f)| *f)
                .collect();
            let figures: Vec<String> = r
                .metrics
                .iter()
                .map(|(name, value)| format!("{name} {value:.0}"))
                .collect();
            vec![
                r.id.to_string(),
                r.plan.clone(),
                r.engine.clone(),
                r.profile.clone(),
                r.workload.clone(),
                r.variant.clone(),
                r.clients.to_string(),
                r.repeat.to_string(),
                format!("{:.1}", r.tps),
                format!("{:.3}", r.p95_ms),
                format!("{:.3}", r.p99_ms),
                r.limiter.replace('_', " "),
                flags.join(","),
                figures.join(", "),
            ]
        })
        .collect();
    super::text_table(
        &[
            "id",
            "plan",
            "engine",
            "profile",
            "workload",
            "variant",
            "clients",
            "rep",
            "tps",
            "p95 ms",
            "p99 ms",
            "limited by",
            "flags",
            "figures",
        ],
        &["id", "clients", "rep", "tps", "p95 ms", "p99 ms"],
        &rows,
    )
}

/// The runs as a JSON array, one object per run, ending with a newline.
pub fn json(rows: &[RunRow]) -> String {
    serde_json::to_string_pretty(rows).expect("json") + "\n"
}

/// Runs as CSV, one header line, the key columns first (id, plan, engine, profile, workload,
/// variant, clients, repeat), fields quoted where they need it; the workloads' own figures
/// (TPC-C: nopm, tpmC) get a column each, empty where a run has no such figure.
pub fn csv(rows: &[RunRow]) -> String {
    let mut figures: Vec<&str> = rows
        .iter()
        .flat_map(|r| r.metrics.keys().map(String::as_str))
        .collect();
    figures.sort_unstable();
    figures.dedup();
    let quote = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut header = vec![
        "id",
        "plan",
        "engine",
        "profile",
        "workload",
        "variant",
        "clients",
        "repeat",
        "scale",
        "cold",
        "unsafe_profile",
        "started_at",
        "duration_s",
        "tps",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "errors",
        "client_bound",
        "server_version",
        "reconnects",
        "server_restarts",
        "limiter",
    ];
    header.extend(&figures);
    let mut out = header.join(",") + "\n";
    for r in rows {
        let mut cells = vec![
            r.id.to_string(),
            quote(&r.plan),
            quote(&r.engine),
            quote(&r.profile),
            quote(&r.workload),
            quote(&r.variant),
            r.clients.to_string(),
            r.repeat.to_string(),
            r.scale.to_string(),
            r.cold.to_string(),
            r.unsafe_profile.to_string(),
            quote(&r.started_at),
            r.duration_s.to_string(),
            r.tps.to_string(),
            r.p50_ms.to_string(),
            r.p95_ms.to_string(),
            r.p99_ms.to_string(),
            r.errors.to_string(),
            r.client_bound.to_string(),
            quote(&r.server_version),
            r.reconnects.to_string(),
            r.server_restarts.to_string(),
            quote(&r.limiter),
        ];
        cells.extend(
            figures
                .iter()
                .map(|f| r.metrics.get(*f).map(f64::to_string).unwrap_or_default()),
        );
        out += &cells.join(",");
        out.push('\n');
    }
    out
}
