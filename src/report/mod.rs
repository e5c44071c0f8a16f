//! Results as people read them: the `RunResult` record (its JSON schema is
//! schema/result.schema.json), the terminal summary, and the JSON file.

pub mod data;
pub mod html;
pub mod markdown;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use crate::Error;
use crate::engine::Protocol;
use crate::metrics::{Host, Latency, Measurement};

#[derive(Debug, Clone, Serialize)]
pub struct EngineReport {
    pub name: String,
    /// The DSN without its password.
    pub dsn: String,
    pub server_version: String,
    /// True when the database ran inside dbduel's process (its CPU is the client's CPU).
    pub embedded: bool,
    pub settings: BTreeMap<String, String>,
    pub database_size_bytes: u64,
    pub database_size_after_bytes: u64,
    /// How the clients reached the server: socket kind, TLS version and cipher suite.
    pub transport: crate::engine::tls::Transport,
    /// The isolation level the measured transactions ran at (the workload's, when it sets one:
    /// TPC-C's --isolation serializable), in lower-case words.
    pub isolation: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkloadReport {
    pub name: String,
    pub variant: String,
    /// None for a workload whose size is told by its options (sysbench: tables, table_size).
    pub scale: Option<u32>,
    /// The workload's own options in effect (TPC-C: warehouses, isolation...).
    pub settings: BTreeMap<String, String>,
    /// The workload's own figures (TPC-C: nopm, tpmC).
    pub metrics: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Options {
    pub clients: u32,
    pub time_s: Option<u64>,
    pub transactions_per_client: Option<u64>,
    pub warmup_s: u64,
    pub rate: Option<f64>,
    pub protocol: Protocol,
    pub max_tries: u32,
    pub progress_s: Option<u64>,
    pub seed: u64,
    pub table_engine: Option<String>,
    pub statement_timeout_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub dbduel_version: &'static str,
    pub started_at: String,
    pub interrupted: bool,
    pub engine: EngineReport,
    pub workload: WorkloadReport,
    pub options: Options,
    pub host: Host,
    pub tps: f64,
    #[serde(flatten)]
    pub measurement: Measurement,
    pub client_cpu_s: f64,
    /// The process's CPU time over (wall time x cores), both read at the start and the end of
    /// the measured window.
    pub client_cpu_share: f64,
    /// Judged by `metrics::client_bound` (client threads busy, or the process's share of the
    /// machine); never for an embedded engine.
    pub client_bound: bool,
    pub client_peak_rss_bytes: u64,
    /// Sweeps only: the managed server exited during the point and was started again, one
    /// line each. A point with any is marked failed; `run` never fills it (it does not manage
    /// the server: its reconnections and lost transactions tell).
    pub server_restarts: Vec<String>,
    pub warnings: Vec<String>,
}

impl RunResult {
    /// Write the result atomically (a temporary file beside it, then a rename), so that a
    /// reader never sees half a result. When that fails, the result goes to a file in the
    /// current directory whose name the error gives, so nothing measured is lost.
    pub fn write_json(&self, path: &Path) -> Result<(), Error> {
        let text = serde_json::to_string_pretty(self).expect("results serialize") + "\n";
        let Err(e) = write_atomically(path, &text) else {
            return Ok(());
        };
        let rescue = std::path::PathBuf::from(format!(
            "dbduel-result-{}.json",
            self.started_at.replace(':', "")
        ));
        match write_atomically(&rescue, &text) {
            Ok(()) => Err(Error::Io(format!(
                "cannot write --json {} ({e}); the result is in {} instead",
                path.display(),
                rescue.display()
            ))),
            Err(e2) => Err(Error::Io(format!(
                "cannot write --json {} ({e}), nor {} ({e2}): the result is in the summary above only",
                path.display(),
                rescue.display()
            ))),
        }
    }
}

/// Check before a run that `--json FILE` can be written: a file is created beside it and
/// removed again.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    let probe = temp_beside(path);
    std::fs::write(&probe, b"")
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| {
            Error::Usage(format!(
                "--json {}: cannot write there ({e}): give a file in a writable directory",
                path.display()
            ))
        })
}

fn temp_beside(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let temp = temp_beside(path);
    std::fs::write(&temp, text)
        .and_then(|_| std::fs::rename(&temp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })
}

/// What a workload's own figure means, for the summary.
fn metric_meaning(name: &str) -> &'static str {
    match name {
        "nopm" => "New-Orders committed per minute (as HammerDB counts them)",
        "tpmC" => "New-Orders completed per minute, rolled back ones included (TPC-C 5.4)",
        _ => "",
    }
}

pub fn human_bytes(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < units.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[unit])
    }
}

/// A plain-text table whose columns are as wide as their widest cell (header included); a
/// column named in `right` is right-aligned (numbers), the others left-aligned. The last
/// column is not padded.
pub fn text_table(header: &[&str], right: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        let cells: Vec<&str> = cells.collect();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                out += "  ";
            }
            let pad = w.saturating_sub(cell.chars().count());
            if right.contains(&header[i]) {
                out += &" ".repeat(pad);
                out += cell;
            } else if i + 1 < cells.len() {
                out += cell;
                out += &" ".repeat(pad);
            } else {
                out += cell;
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(&mut header.iter().copied());
    for row in rows {
        out += &line(&mut row.iter().map(String::as_str));
    }
    out
}

fn latency_cells(l: &Latency) -> String {
    format!(
        "{:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
        l.p50, l.p90, l.p95, l.p99, l.p99_9, l.max
    )
}

/// The summary printed at the end of a run.
pub fn summary(r: &RunResult) -> String {
    let m = &r.measurement;
    let mut out = String::new();
    let variant = if r.workload.variant == r.workload.name {
        String::new()
    } else {
        format!(" ({})", r.workload.variant)
    };
    let _ = writeln!(
        out,
        "\n{}{variant}{}, on {} {} at {}{}",
        r.workload.name,
        match (r.workload.scale, r.workload.settings.get("table_size")) {
            (Some(s), _) => format!(", scale {s}"),
            (None, Some(rows)) => {
                let tables = r
                    .workload
                    .settings
                    .get("tables")
                    .map_or("1", String::as_str);
                format!(
                    ", {tables} table{} of {rows} rows",
                    if tables == "1" { "" } else { "s" }
                )
            }
            (None, None) => String::new(),
        },
        r.engine.name,
        r.engine.server_version,
        r.engine.dsn,
        if r.interrupted {
            "  [INTERRUPTED: partial result]"
        } else {
            ""
        }
    );
    let limit = match (r.options.time_s, r.options.transactions_per_client) {
        (_, Some(t)) => format!("{t} transactions per client"),
        (Some(t), None) => format!("{t} s"),
        _ => String::new(),
    };
    let pacing = r
        .options
        .rate
        .map(|x| format!("open loop at {x} tps"))
        .unwrap_or_else(|| "closed loop".into());
    let _ = writeln!(
        out,
        "{} client{}, {limit} (measured {:.1} s, warm-up {} s), protocol {}, {pacing}",
        r.options.clients,
        if r.options.clients == 1 { "" } else { "s" },
        m.duration_s,
        r.options.warmup_s,
        r.options.protocol.name()
    );
    let _ = writeln!(out, "connection: {}", r.engine.transport.describe());
    let _ = writeln!(
        out,
        "isolation: {} (the level the clients' transactions ran at)\n",
        r.engine.isolation
    );
    let errors: Vec<_> = m
        .errors_by_kind
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = writeln!(
        out,
        "  {:<16}{:>12}  ({:.1} tps)",
        "transactions", m.transactions, r.tps
    );
    let _ = writeln!(
        out,
        "  {:<16}{:>12}  ({:.1} qps)",
        "queries", m.queries, m.qps
    );
    let _ = writeln!(
        out,
        "  {:<16}{:>12}  {}",
        "errors",
        m.errors,
        errors.join(", ")
    );
    for (kind, message) in &m.error_messages {
        let short: String = message.chars().take(240).collect();
        let _ = writeln!(out, "    {kind}: {short}");
    }
    let _ = writeln!(out, "  {:<16}{:>12}", "retries", m.retries);
    if m.rollbacks > 0 {
        let _ = writeln!(
            out,
            "  {:<16}{:>12}  (asked for by the workload; not errors)",
            "rollbacks", m.rollbacks
        );
    }
    for (k, v) in &r.workload.metrics {
        let _ = writeln!(out, "  {k:<16}{v:>12.1}  {}", metric_meaning(k));
    }
    if m.reconnects > 0 || !m.lost_clients.is_empty() {
        let _ = writeln!(
            out,
            "  {:<16}{:>12}  ({} clients lost; {:.1} s without a connection, all clients together)",
            "reconnects",
            m.reconnects,
            m.lost_clients.len(),
            m.disconnected_s
        );
    }
    for lost in &m.lost_clients {
        let _ = writeln!(out, "  lost: {lost}");
    }
    if m.unfinished > 0 {
        let _ = writeln!(
            out,
            "  {:<16}{:>12}  (in flight at the end, cancelled)",
            "unfinished", m.unfinished
        );
    }
    let _ = writeln!(
        out,
        "  {:<16}{:>12.1} s  ({:.1}% of {} cores){}",
        "client CPU",
        r.client_cpu_s,
        r.client_cpu_share * 100.0,
        r.host.cores,
        if r.engine.embedded {
            ", embedded engine included"
        } else {
            ""
        }
    );
    let threads = &m.client_threads;
    let _ = writeln!(
        out,
        "  {:<16}{:>12.1} s  ({}busy {:.1}% of their time, the busiest {:.1}%)",
        "client threads",
        threads.cpu_s,
        threads
            .run_queue_s
            .map(|w| format!("+ {w:.1} s waiting for a core; "))
            .unwrap_or_default(),
        threads.busy * 100.0,
        threads.busiest * 100.0
    );
    let _ = writeln!(
        out,
        "  {:<16}{:>12}",
        "database size",
        human_bytes(r.engine.database_size_bytes)
    );
    if let Some(first) = m.first_transaction_ms {
        let _ = writeln!(out, "  {:<16}{:>12.3} ms", "first transaction", first);
    }
    if let Some(lag) = &m.schedule_lag_ms {
        let _ = writeln!(
            out,
            "  {:<16}{:>12.3} ms mean, {:.3} ms max",
            "schedule lag", lag.mean, lag.max
        );
    }
    let _ = writeln!(
        out,
        "\n  {:<16}{:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "latency (ms)",
        "txns",
        "tps",
        "mean",
        "p50",
        "p90",
        "p95",
        "p99",
        "p99.9",
        "max",
        "errors",
        "retries",
        "rollbacks"
    );
    for t in &m.transaction_types {
        let _ = writeln!(
            out,
            "  {:<16}{:>10} {:>10.1} {:>9.3} {} {:>9} {:>9} {:>9}",
            t.name,
            t.transactions,
            t.tps,
            t.latency_ms.mean,
            latency_cells(&t.latency_ms),
            t.errors,
            t.retries,
            t.rollbacks
        );
    }
    if !r.workload.settings.is_empty() {
        let settings: Vec<_> = r
            .workload
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            out,
            "\n  {} options: {}",
            r.workload.name,
            settings.join(" ")
        );
    }
    let settings: Vec<_> = r
        .engine
        .settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let _ = writeln!(out, "\n  server settings: {}", settings.join(" "));
    let why = crate::metrics::client_bound(&m.client_threads, r.client_cpu_share);
    if let (true, Some(why)) = (r.client_bound, why) {
        let _ = writeln!(
            out,
            "\n  CLIENT-BOUND: {why}: this number measures the client, not the database"
        );
    }
    for restart in &r.server_restarts {
        let _ = writeln!(out, "  server restarted: {restart}");
    }
    for w in &r.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    out
}
