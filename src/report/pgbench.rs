//! pgbench's own summary lines for a run of pgbench's workloads (tpcb's built-in scripts and
//! pgbench-format scripts): "transaction type:" to "tps = ...", in pgbench 17's words and number
//! formats, so that what reads pgbench's output (a script's `tps = ([0-9.]+)`, a spreadsheet's
//! "number of transactions actually processed") reads dbduel's. The figures are dbduel's own
//! measurement; where pgbench derives one differently, this says how (below).

use std::fmt::Write;

use crate::result::RunResult;

/// pgbench's name of a built-in script, by dbduel's variant name.
fn builtin(variant: &str) -> Option<&'static str> {
    match variant {
        "tpcb-like" => Some("<builtin: TPC-B (sort of)>"),
        "simple-update" => Some("<builtin: simple update>"),
        "select-only" => Some("<builtin: select only>"),
        _ => None,
    }
}

/// A script's title as pgbench prints it: a built-in run as a script
/// (`workload::script::BUILTIN`) by pgbench's description, a file by its name.
pub fn script_title(name: &str) -> String {
    name.strip_prefix(crate::workload::script::BUILTIN)
        .and_then(builtin)
        .map_or_else(|| name.to_string(), str::to_string)
}

/// What pgbench prints as "transaction type:", or None for a run that is not pgbench's (any
/// workload but tpcb and scripts).
fn transaction_type(r: &RunResult) -> Option<String> {
    let scripts: Vec<&str> = r.workload.variant.split_whitespace().collect();
    match r.workload.name.as_str() {
        "tpcb" => builtin(&r.workload.variant).map(str::to_string),
        "script" if scripts.len() > 1 => Some("multiple scripts".into()),
        "script" => scripts
            .first()
            .map(|s| script_title(s.rsplit_once('@').map_or(*s, |(n, _)| n))),
        _ => None,
    }
}

/// pgbench's lines, after a blank line; nothing for a run that is not pgbench's.
///
/// As pgbench 17 counts: the share of failed, retried and skipped transactions is over all
/// of them (processed, failed and skipped); the late ones over those processed. "latency
/// average" without -R, -P or -L is pgbench's own figure from the run's time (the measured
/// seconds times the clients over the transactions, failed ones included), with -R, -P or -L
/// the mean of the measured latencies and their standard deviation. "initial connection time"
/// is the time from the first client starting to connect until all were connected; with -C,
/// "average connection time" is the mean connect of the connections -C opened.
pub fn summary(out: &mut String, r: &RunResult) {
    let Some(kind) = transaction_type(r) else {
        return;
    };
    let (o, m) = (&r.options, &r.measurement);
    let mut w = |line: String| {
        let _ = writeln!(out, "{line}");
    };
    w(String::new());
    w(format!("transaction type: {kind}"));
    w(format!("scaling factor: {}", r.workload.scale.unwrap_or(1)));
    w(format!("query mode: {}", o.protocol.name()));
    w(format!("number of clients: {}", o.clients));
    w(format!("number of threads: {}", m.client_threads.threads));
    // pgbench leaves the line out for unlimited tries (0).
    if o.max_tries != 0 {
        w(format!("maximum number of tries: {}", o.max_tries));
    }
    match (o.time_s, o.transactions_per_client) {
        (_, Some(t)) => {
            w(format!("number of transactions per client: {t}"));
            w(format!(
                "number of transactions actually processed: {}/{}",
                m.transactions,
                t * u64::from(o.clients)
            ));
        }
        (time, None) => {
            w(format!("duration: {} s", time.unwrap_or(0)));
            w(format!(
                "number of transactions actually processed: {}",
                m.transactions
            ));
        }
    }
    let limit = m.latency_limit.as_ref();
    let skipped = limit.and_then(|l| l.skipped).unwrap_or(0);
    let all = m.transactions + m.errors + skipped;
    let pct = |n: u64, of: u64| 100.0 * n as f64 / of.max(1) as f64;
    w(format!(
        "number of failed transactions: {} ({:.3}%)",
        m.errors,
        pct(m.errors, all)
    ));
    if o.max_tries != 1 {
        w(format!(
            "number of transactions retried: {} ({:.3}%)",
            m.retried,
            pct(m.retried, all)
        ));
        w(format!("total number of retries: {}", m.retries));
    }
    if let Some(l) = limit {
        if o.rate.is_some() {
            w(format!(
                "number of transactions skipped: {skipped} ({:.3}%)",
                pct(skipped, all)
            ));
        }
        w(format!(
            "number of transactions above the {:.1} ms latency limit: {}/{} ({:.3}%)",
            l.limit_ms,
            l.late,
            m.transactions,
            pct(l.late, m.transactions)
        ));
    }
    if o.rate.is_some() || o.progress_s.is_some() || limit.is_some() {
        w(format!("latency average = {:.3} ms", m.latency_ms.mean));
        w(format!("latency stddev = {:.3} ms", m.latency_ms.stddev));
    } else {
        let done = m.transactions + m.errors + skipped;
        w(format!(
            "latency average = {:.3} ms{}",
            1000.0 * m.duration_s * f64::from(o.clients) / done.max(1) as f64,
            if m.errors > 0 {
                " (including failures)"
            } else {
                ""
            }
        ));
    }
    if let (Some(_), Some(lag)) = (o.rate, &m.schedule_lag_ms) {
        w(format!(
            "rate limit schedule lag: avg {:.3} (max {:.3}) ms",
            lag.mean, lag.max
        ));
    }
    let c = &m.connections;
    if o.connections.per_transaction {
        let each = c.mean_connect_ms(crate::event::ConnectCause::Transaction, c.per_transaction);
        w(format!("average connection time = {each:.3} ms"));
        w(format!("tps = {:.6} (including reconnection times)", r.tps));
    } else {
        w(format!(
            "initial connection time = {:.3} ms",
            1000.0 * c.storm_s
        ));
        w(format!(
            "tps = {:.6} (without initial connection time)",
            r.tps
        ));
    }
}
