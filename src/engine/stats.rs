//! The server's counters as named numbers (`Session::stats`): each under the engine's own
//! name, prefixed by the view it comes from (`pg_stat_database.xact_commit`,
//! `global_status.Innodb_buffer_pool_reads`, `MON$IO_STATS.MON$PAGE_READS`), cumulative or a
//! gauge, with the part it plays in the shared rules (metrics/counters.rs): a headline
//! counter, a background event, a page read or request. The engine says which of its
//! counters play which part, so that the rules name no engine.

use super::Value;

/// How a counter's readings combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Counts since the server (or its statistics) started: read as deltas.
    Cumulative,
    /// A value now (sessions waiting on a lock, threads running): read as it is.
    Gauge,
}

/// The part a counter plays in the shared rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// One of the few the result keeps second by second and the report shows first.
    Headline,
    /// A second in which it moved (a gauge: was above zero) was covered by this background
    /// event ("checkpoint", "autovacuum", "InnoDB flushing").
    Background(&'static str),
    /// Data pages read from storage (the cache's misses).
    PagesRead,
    /// Data pages asked of the cache (hits and misses).
    PageRequests,
    /// Seconds sessions waited reading data files.
    DataReadWait,
    /// One of the server's wait-time counters (MariaDB's performance_schema wait summaries):
    /// where any moved, the wait times were read, so a data-file wait among them that did not
    /// move is none waited, not none known.
    WaitTime,
}

/// One counter as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Stat {
    pub name: String,
    pub value: f64,
    pub kind: Kind,
    pub roles: Vec<Role>,
}

impl Stat {
    pub fn new(name: impl Into<String>, value: f64, kind: Kind) -> Stat {
        Stat {
            name: name.into(),
            value,
            kind,
            roles: Vec::new(),
        }
    }
}

/// One reading of the server's counters, and the views that could not be read in it (each
/// with the server's reason: a privilege missing), said once by the reader.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub stats: Vec<Stat>,
    pub unread: Vec<String>,
}

/// A value the server gave as a number, or in text (numeric columns, status variables);
/// None for NULL and for text that is not a number.
pub fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Text(s) => s.trim().parse().ok(),
        Value::Null => None,
    }
}

/// Rows of (name, value) as stats of `kind`, each given the roles `roles` lists for its name;
/// rows whose value is not a number are left out.
pub fn from_rows(
    rows: &[Vec<Value>],
    kind_of: impl Fn(&str, &[Value]) -> Kind,
    roles: &[(&str, Role)],
) -> Vec<Stat> {
    rows.iter()
        .filter_map(|r| {
            let name = r.first()?.to_string();
            let value = number(r.get(1)?)?;
            let mut stat = Stat::new(name, value, kind_of(&r[0].to_string(), r));
            stat.roles = roles
                .iter()
                .filter(|(n, _)| *n == stat.name)
                .map(|(_, role)| *role)
                .collect();
            Some(stat)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_stats_with_their_roles() {
        let rows = vec![
            vec![Value::Text("v.reads".into()), Value::Text("12".into())],
            vec![Value::Text("v.waiting".into()), Value::Int(3)],
            vec![Value::Text("v.time".into()), Value::Float(1.5)],
            vec![Value::Text("v.none".into()), Value::Null],
            vec![Value::Text("v.word".into()), Value::Text("ON".into())],
        ];
        let kind = |n: &str, _: &[Value]| {
            if n == "v.waiting" {
                Kind::Gauge
            } else {
                Kind::Cumulative
            }
        };
        let stats = from_rows(&rows, kind, &[("v.reads", Role::PagesRead)]);
        assert_eq!(stats.len(), 3);
        assert_eq!(stats[0].value, 12.0);
        assert_eq!(stats[0].roles, vec![Role::PagesRead]);
        assert_eq!(stats[1].kind, Kind::Gauge);
        assert!(stats[2].roles.is_empty());
    }
}
