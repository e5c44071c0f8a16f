//! Results as people read them, from the store or a result, never from the runner: the terminal
//! summary of a run (`run_summary`, of a `RunResult` from result.rs); the stored runs listed and
//! exported (`export.rs`: table, JSON, CSV); the reports of stored runs (`stored.rs` makes
//! `data.rs`'s `ReportData`, drawn as HTML and markdown: the store knows rows, the report knows
//! views); `compare/`, whether two runs or two sets of repeats differ; `statements.rs`, where
//! the server's time went statement by statement; `statement_latencies.rs`, the statements
//! timed on the client (pgbench's -r layout for scripts); `pgbench.rs`, pgbench's own summary
//! lines for a run of its workloads; `counters.rs`, the server's counters in the summary and the reports.

pub mod compare;
pub mod counters;
pub mod data;
pub mod export;
pub mod html;
pub mod markdown;
pub mod pgbench;
pub mod sides;
pub mod statement_latencies;
pub mod statements;
pub mod stored;

pub use html::{
    AblationView, AgainstView, CapacityView, StepView, TrialView, TuneView, capacity_html,
    tune_html,
};

pub use crate::out::human_bytes;
use std::fmt::Write;

use crate::metrics::Latency;
use crate::result::RunResult;

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

/// A workload's figure: a count as an integer, anything else to one decimal.
fn figure_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The percentile cells of a latency row: blank for a single execution, which has none.
fn latency_cells_of(n: u64, l: &Latency) -> String {
    if n < 2 {
        return format!(
            "{:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "", "", "", "", "", ""
        );
    }
    latency_cells(l)
}

fn latency_cells(l: &Latency) -> String {
    format!(
        "{:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
        l.p50, l.p90, l.p95, l.p99, l.p99_9, l.max
    )
}

/// The summary printed at the end of a run (`run`, `merge`).
pub fn run_summary(r: &RunResult) -> String {
    let mut out = String::new();
    summary_head(&mut out, r);
    summary_counts(&mut out, r);
    summary_resources(&mut out, r);
    summary_shards(&mut out, r);
    summary_latencies(&mut out, r);
    crate::metrics::phases::summary(&mut out, &r.measurement.phases);
    pgbench::summary(&mut out, r);
    statement_latencies::summary(&mut out, r);
    summary_settings(&mut out, r);
    out
}

/// What ran where: workload and size, engine, clients and limit, connection, isolation.
fn summary_head(out: &mut String, r: &RunResult) {
    let m = &r.measurement;
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
    let pacing = match (r.options.rate, r.measurement.phases.len()) {
        (Some(x), _) => format!("open loop at {x} tps"),
        (None, 0) => "closed loop".into(),
        (None, n) => format!("in {n} phases (their loads in the phases table)"),
    };
    let _ = writeln!(
        out,
        "{} client{}, {limit} (measured {:.1} s, warm-up {} s), protocol {}{}, {pacing}",
        r.options.clients,
        if r.options.clients == 1 { "" } else { "s" },
        m.duration_s,
        r.options.warmup_s,
        r.options.protocol.name(),
        if r.options.lazy_begin {
            " (BEGIN with the first statement)"
        } else {
            ""
        }
    );
    if let Some(p) = &r.shard {
        let _ = writeln!(
            out,
            "shard {}/{} of the run: clients {}-{} ({} of {}); `dbduel merge` makes the whole from every shard's --json",
            p.index,
            p.count,
            p.first_client,
            p.first_client + p.clients - 1,
            p.clients,
            r.options.clients
        );
    }
    if !r.shards.is_empty() {
        let _ = writeln!(
            out,
            "merged from {} shards: counts summed, latency histograms merged, windows aligned on the wall clock",
            r.shards.len()
        );
    }
    let _ = writeln!(out, "connection: {}", r.engine.transport.describe());
    let _ = writeln!(
        out,
        "isolation: {} (the level the clients' transactions ran at)",
        r.engine.isolation
    );
    let _ = writeln!(
        out,
        "durability: {} (judged from the server settings read back)",
        r.engine.durability.text()
    );
    if let Some(v) = &r.verdict {
        let _ = writeln!(out, "limited by: {}", v.says);
    }
    out.push('\n');
}

/// `-L`'s lines, as pgbench counts them: late of the successful transactions; skipped of all
/// that were due (done, failed or skipped).
fn latency_limit_lines(out: &mut String, l: &crate::metrics::LatencyLimit, done: u64, failed: u64) {
    let pct = |n: u64, of: u64| {
        if of > 0 {
            100.0 * n as f64 / of as f64
        } else {
            0.0
        }
    };
    let _ = writeln!(
        out,
        "  {:<16}{:>12}  of {done} above the {:.1} ms latency limit ({:.3}%)",
        "late",
        l.late,
        l.limit_ms,
        pct(l.late, done)
    );
    if let Some(skipped) = l.skipped {
        let _ = writeln!(
            out,
            "  {:<16}{:>12}  ({:.3}% of those due: later than the limit when their turn came, not sent)",
            "skipped",
            skipped,
            pct(skipped, done + failed + skipped)
        );
    }
}

/// Transactions, queries, errors with their first messages, retries, rollbacks, the
/// workload's own figures, reconnections, lost clients, the connections opened and the storm,
/// unfinished transactions.
fn summary_counts(out: &mut String, r: &RunResult) {
    let m = &r.measurement;
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
    if let Some(l) = &m.latency_limit {
        latency_limit_lines(out, l, m.transactions, m.errors);
    }
    if m.rollbacks > 0 {
        let _ = writeln!(
            out,
            "  {:<16}{:>12}  (asked for by the workload; not errors)",
            "rollbacks", m.rollbacks
        );
    }
    // Row counts (TPC-H's "Qnn rows") go on one line; the other figures one each.
    let (rows, figures): (Vec<_>, Vec<_>) = r
        .workload
        .metrics
        .iter()
        .partition(|(k, _)| k.ends_with(" rows"));
    for (k, v) in figures {
        let _ = writeln!(
            out,
            "  {k:<16}{:>12}  {}",
            figure_text(*v),
            crate::workload::figure_meaning(k)
        );
    }
    if !rows.is_empty() {
        let counts: Vec<String> = rows
            .iter()
            .map(|(k, v)| format!("{} {}", k.trim_end_matches(" rows"), figure_text(**v)))
            .collect();
        let _ = writeln!(out, "  {:<16}{}", "rows returned", counts.join(", "));
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
    let _ = writeln!(out, "  {:<16}{}", "connections", m.connections.line());
    if let Some(why) = &m.connections.first_failure {
        let short: String = why.chars().take(240).collect();
        let _ = writeln!(out, "    first failed connection: {short}");
    }
    if m.unfinished > 0 {
        let _ = writeln!(
            out,
            "  {:<16}{:>12}  (in flight at the end, cancelled)",
            "unfinished", m.unfinished
        );
    }
}

/// A merged result's shards: each one's clients, rate and client CPU, client-bound ones named.
fn summary_shards(out: &mut String, r: &RunResult) {
    for s in &r.shards {
        let _ = writeln!(
            out,
            "  shard {:<10}clients {}-{}, {:.1} tps, started +{:.2} s, client CPU {:.1}% of {} cores, threads busy {:.1}%{}",
            s.index,
            s.first_client,
            s.first_client + s.clients.max(1) - 1,
            s.tps,
            s.offset_s,
            s.client_cpu_share * 100.0,
            s.host.cores,
            s.client_threads.busy * 100.0,
            if s.client_bound { "  CLIENT-BOUND" } else { "" }
        );
    }
}

/// Client CPU, the client threads' time, database size, first transaction, schedule lag.
fn summary_resources(out: &mut String, r: &RunResult) {
    let m = &r.measurement;
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
}

/// The latency table, one line per transaction type.
fn summary_latencies(out: &mut String, r: &RunResult) {
    let m = &r.measurement;
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
    // Types that never ran (TPC-H queries left out by --queries) are left out too, unless
    // nothing ran at all.
    let ran = |t: &&crate::metrics::TypeSummary| t.transactions + t.errors + t.rollbacks > 0;
    let any = m.transaction_types.iter().any(|t| ran(&t));
    for t in m.transaction_types.iter().filter(|t| !any || ran(t)) {
        let _ = writeln!(
            out,
            "  {:<16}{:>10} {:>10.1} {:>9.3} {} {:>9} {:>9} {:>9}",
            t.name,
            t.transactions,
            t.tps,
            t.latency_ms.mean,
            latency_cells_of(t.transactions, &t.latency_ms),
            t.errors,
            t.retries,
            t.rollbacks
        );
    }
    // Every connection the run opened: its connect time, beside the transactions' latency.
    let c = &m.connections;
    let _ = writeln!(
        out,
        "  {:<16}{:>10} {:>10} {:>9.3} {} {:>9}",
        "connect",
        c.opened,
        "",
        c.connect_ms.mean,
        latency_cells_of(c.opened, &c.connect_ms),
        c.failed
    );
}

/// Workload options, server settings, and what makes the figures doubtful: client-bound,
/// server restarts, warnings.
fn summary_settings(out: &mut String, r: &RunResult) {
    let m = &r.measurement;
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
    if let Some(w) = &r.waits {
        let says = r.verdict.as_ref().map_or("", |v| v.says.as_str());
        summary_waits(out, w, says);
    }
    if let Some(e) = &r.embedded_waits {
        let _ = writeln!(out, "  {}", e.summary());
    }
    if let Some(st) = &r.statements {
        statements::summary(out, st);
    }
    if let Some(c) = &r.server_counters {
        counters::summary(out, c);
    }
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
}

/// The sampled sessions' time: average active sessions by class, the events that took the
/// most, a rate the sampler could not keep, and what it could not see where the verdict
/// (`says`) does not say it.
fn summary_waits(out: &mut String, w: &crate::metrics::waits::Waits, says: &str) {
    let classes: Vec<String> = w
        .by_class
        .iter()
        .map(|(c, a)| format!("{c} {a:.2}"))
        .collect();
    // An event list's five largest, with their average sessions.
    let five = |list: &[crate::metrics::waits::EventShare]| {
        list.iter()
            .take(5)
            .map(|e| format!("{} {:.2}", e.event, e.sessions))
            .collect::<Vec<String>>()
            .join(", ")
    };
    let events = five(&w.top_events);
    let _ = writeln!(
        out,
        "  server sessions (average active, sampled {} times a second, {} samples): {}; most time in {}",
        w.hz,
        w.samples,
        if classes.is_empty() {
            "none busy".to_string()
        } else {
            classes.join(", ")
        },
        if events.is_empty() {
            "nothing".to_string()
        } else {
            events
        }
    );
    if !w.lock_holders.is_empty() {
        let _ = writeln!(
            out,
            "  lock waits by what the head of their queue was doing (average sessions waiting behind it): {}",
            five(&w.lock_holders)
        );
    }
    if w.missed > 0 {
        let _ = writeln!(
            out,
            "  warning: the wait sampler missed {} of its samples (the server answered slower than {} a second)",
            w.missed, w.hz
        );
    }
    if let Some(why) = &w.stopped {
        let _ = writeln!(out, "  warning: {why}");
    }
    if let Some(unseen) = w.unseen.as_ref().filter(|u| !says.contains(u.as_str())) {
        let _ = writeln!(out, "  warning: {unseen}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_integers_and_single_runs_have_no_percentiles() {
        assert_eq!(figure_text(4.0), "4");
        assert_eq!(figure_text(6534.46), "6534.5");
        let l = Latency {
            p50: 1.0,
            p99: 2.0,
            ..Default::default()
        };
        assert!(latency_cells_of(1, &l).trim().is_empty());
        assert!(latency_cells_of(2, &l).contains("2.000"));
    }
}
