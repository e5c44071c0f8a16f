//! The server's counters as people read them: the summary's lines (the counters that moved
//! most by `metrics::counters::moved_most`'s rule, the background events, what could not be
//! read); from a stored result, the counters that moved most and the seconds a background
//! event covered, for the reports (their tables in markdown.rs and html/).

use std::fmt::Write;

use super::data::{COUNTERS_RULE as RULE, CounterFigure};
use crate::metrics::counters::{self, ServerCounters};
use crate::metrics::embedded::EmbeddedWaits;

/// The summary's lines for a run's counters.
pub fn summary(out: &mut String, c: &ServerCounters) {
    let moved: Vec<String> = counters::moved_most(c)
        .iter()
        .map(|(n, t)| format!("{n} {}", counters::figure(t)))
        .collect();
    let _ = writeln!(
        out,
        "  server counters ({} readings, once a second; moved most: {RULE}): {}",
        c.readings,
        if moved.is_empty() {
            "none moved".to_string()
        } else {
            moved.join(", ")
        }
    );
    for b in &c.background {
        let lowest = b
            .tps_lowest
            .map(|l| format!(" (the lowest {l:.0})"))
            .unwrap_or_default();
        let tps = match (b.tps_in, b.tps_out) {
            (Some(i), Some(o)) => format!(
                ": {i:.0} tps in them{lowest} against {o:.0} in the others, {}",
                if b.differs {
                    "beyond the noise"
                } else {
                    "within the noise"
                }
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  background: {} in {} s ({}){tps}",
            b.event,
            b.seconds.len(),
            b.counters.join(", ")
        );
    }
    if c.missed > 0 {
        let _ = writeln!(
            out,
            "  warning: {} of the server counters' readings were missed (the server answered slower than once a second)",
            c.missed
        );
    }
    for u in &c.unread {
        let _ = writeln!(out, "  warning: server counters not read: {u}");
    }
    if let Some(why) = &c.stopped {
        let _ = writeln!(out, "  warning: {why}");
    }
}

/// The counters that moved most in a stored result (its `server_counters`); for an embedded
/// engine, its connections' own counts (`embedded`); empty where it has neither.
pub fn of_result(result: &serde_json::Value) -> Vec<CounterFigure> {
    let Ok(c) = serde_json::from_value::<ServerCounters>(result["server_counters"].clone()) else {
        return serde_json::from_value::<EmbeddedWaits>(result["embedded_waits"].clone())
            .map(|e| embedded(&e, result["transactions"].as_u64().unwrap_or(0)))
            .unwrap_or_default();
    };
    counters::moved_most(&c)
        .into_iter()
        .map(|(n, t)| CounterFigure {
            name: n.clone(),
            figure: counters::figure(t),
        })
        .collect()
}

/// An embedded engine's counts as a counters table shows them (it has no server: its
/// connections count what the clients' time went to), in a fixed order: the clients' time
/// waiting for the lock and in COMMIT, then the page cache, lock waits and checkpoints, per
/// measured transaction where they are counts.
pub fn embedded(e: &EmbeddedWaits, transactions: u64) -> Vec<CounterFigure> {
    let f = &e.figures;
    let per_tx = |n: u64| format!("{:.3} /tx", n as f64 / transactions.max(1) as f64);
    let mut out = vec![
        (
            "clients' time waiting for the lock",
            format!("{:.1}%", 100.0 * e.lock_share),
        ),
        (
            "clients' time in COMMIT",
            format!("{:.1}%", 100.0 * e.commit_share),
        ),
        ("page cache misses", per_tx(f.cache_misses)),
    ];
    if let Some(h) = e.cache_hit_ratio {
        out.push(("page cache hit ratio", format!("{:.2}%", 100.0 * h)));
    }
    out.extend([
        ("pages written", per_tx(f.cache_writes)),
        ("cache spills", per_tx(f.cache_spills)),
        ("lock waits", per_tx(f.busy_waits)),
        ("lock waits given up", f.busy_timeouts.to_string()),
        (
            "checkpoints",
            format!("{} in {:.3} s", f.checkpoints, f.checkpoint_s),
        ),
    ]);
    out.into_iter()
        .map(|(name, figure)| CounterFigure {
            name: format!("connections: {name}"),
            figure,
        })
        .collect()
}

/// The seconds a stored result's counters say `event` covered ("checkpoint", "autovacuum").
pub fn covered(result: &serde_json::Value, event: &str) -> std::collections::BTreeSet<u64> {
    result["server_counters"]["background"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["event"] == event)
        .flat_map(|b| b["seconds"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.as_u64())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_results_give_their_counters_and_events() {
        let result = serde_json::json!({"server_counters": {
        "readings": 5, "measured_s": 4.0, "seconds": [],
        "counters": {
            "v.commits": {"kind": "cumulative", "roles": ["headline"], "from": 10.0,
                          "total": 40.0, "per_s": 10.0, "per_transaction": 1.0},
            "v.<rare>": {"kind": "cumulative", "from": 0.0, "total": 2.0, "per_s": 0.5,
                         "per_transaction": 0.05}
        }}});
        let figures = of_result(&result);
        assert_eq!(figures.len(), 2);
        assert_eq!(figures[0].name, "v.commits");
        assert_eq!(figures[0].figure, "1.00 /tx");
        assert!(of_result(&serde_json::json!({})).is_empty());
        let events = serde_json::json!({"server_counters": {"background": [
            {"event": "checkpoint", "counters": [], "seconds": [3, 4], "differs": false},
            {"event": "autovacuum", "counters": [], "seconds": [7], "differs": false}]}});
        assert_eq!(
            covered(&events, "checkpoint")
                .into_iter()
                .collect::<Vec<_>>(),
            vec![3, 4]
        );
        assert!(covered(&result, "checkpoint").is_empty());
    }

    #[test]
    fn an_embedded_engine_gives_its_connections_counts() {
        let figures = crate::engine::figures::ConnectionFigures {
            cache_hits: 900,
            cache_misses: 100,
            busy_waits: 50,
            busy_wait_s: 3.0,
            commit_s: 1.0,
            wall_s: 4.0,
            checkpoints: 2,
            checkpoint_s: 0.25,
            ..Default::default()
        };
        let e = EmbeddedWaits::of(figures, 2, 200, None);
        let result = serde_json::json!({"transactions": 200, "embedded_waits": e});
        let listed: Vec<String> = of_result(&result)
            .iter()
            .map(|c| format!("{}={}", c.name, c.figure))
            .collect();
        assert_eq!(
            listed[0],
            "connections: clients' time waiting for the lock=75.0%"
        );
        assert_eq!(listed[1], "connections: clients' time in COMMIT=25.0%");
        assert_eq!(listed[2], "connections: page cache misses=0.500 /tx");
        assert_eq!(listed[3], "connections: page cache hit ratio=90.00%");
        assert!(listed.contains(&"connections: lock waits=0.250 /tx".to_string()));
        assert!(listed.contains(&"connections: checkpoints=2 in 0.250 s".to_string()));
    }
}
