//! PostgreSQL's counters for `Session::stats`, in one query built for the server's major
//! version: every numeric column of `pg_stat_database` (this database), of the checkpointer's
//! and background writer's views (`pg_stat_bgwriter`; `pg_stat_checkpointer` from 17, where
//! the checkpoint columns moved), of `pg_stat_wal` (14+), `pg_stat_io` (16+) summed over
//! contexts by backend type and object (the sums that are not zero), autovacuum and autoanalyze
//! runs on this database's user tables (`pg_stat_user_tables`: its few rows rather than the
//! catalog's hundred, which cost the reading a third of its time); and as gauges: backends of this database, lock requests
//! not granted now (`pg_locks`, the whole cluster), the checkpointer busy (its wait event
//! other than its idle loop's) and autovacuum workers on this database now.

use crate::engine::stats::{self, Kind, Reading, Role};
use crate::engine::{DbResult, Session};

/// The major version in a `server_version` ("15.8", "16beta1", "17.2 (Debian 17.2-1)").
pub fn major(server_version: &str) -> u32 {
    let digits: String = server_version
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap_or(0)
}

/// Every numeric column of one row of `view` (filtered by `filter`) as `view.column`.
fn columns(view: &str, filter: &str) -> String {
    format!(
        "SELECT '{view}.' || key, (value #>> '{{}}')::float8 FROM {view} v, jsonb_each(to_jsonb(v)) \
         WHERE jsonb_typeof(value) = 'number' AND key NOT IN ('datid', 'pid'){filter}"
    )
}

/// The one query for a server of `major` version.
pub fn sql(major: u32) -> String {
    let mut parts = vec![
        columns("pg_stat_database", " AND v.datname = current_database()"),
        columns("pg_stat_bgwriter", ""),
        "SELECT 'pg_stat_user_tables.' || k, sum(n)::float8 FROM pg_stat_user_tables, \
         LATERAL (VALUES ('autovacuum_count', autovacuum_count), \
         ('autoanalyze_count', autoanalyze_count)) AS c(k, n) GROUP BY k"
            .to_string(),
        "SELECT 'pg_locks.not_granted', count(*)::float8 FROM pg_locks WHERE NOT granted"
            .to_string(),
        "SELECT 'pg_stat_activity.' || k, n::float8 FROM (SELECT \
         count(*) FILTER (WHERE backend_type = 'checkpointer' \
         AND wait_event IS DISTINCT FROM 'CheckpointerMain') AS checkpointer_busy, \
         count(*) FILTER (WHERE backend_type = 'autovacuum worker' \
         AND datname = current_database()) AS autovacuum_workers FROM pg_stat_activity) a, \
         LATERAL (VALUES ('checkpointer_busy', checkpointer_busy), \
         ('autovacuum_workers', autovacuum_workers)) AS c(k, n)"
            .to_string(),
    ];
    if major >= 14 {
        parts.push(columns("pg_stat_wal", ""));
    }
    if major >= 16 {
        parts.push(
            "SELECT 'pg_stat_io.' || backend_type || '.' || object || '.' || key, \
             sum((value #>> '{}')::float8) FROM pg_stat_io v, jsonb_each(to_jsonb(v)) \
             WHERE jsonb_typeof(value) = 'number' AND key <> 'op_bytes' \
             GROUP BY backend_type, object, key HAVING sum((value #>> '{}')::float8) <> 0"
                .to_string(),
        );
    }
    if major >= 17 {
        parts.push(columns("pg_stat_checkpointer", ""));
    }
    parts.join(" UNION ALL ")
}

/// The gauges among the names the query gives; the rest count since the statistics' reset.
fn kind(name: &str) -> Kind {
    match name {
        "pg_stat_database.numbackends"
        | "pg_locks.not_granted"
        | "pg_stat_activity.checkpointer_busy"
        | "pg_stat_activity.autovacuum_workers" => Kind::Gauge,
        _ => Kind::Cumulative,
    }
}

/// The parts PostgreSQL's counters play: commits, block reads, WAL bytes, checkpoint buffers
/// and lock waits as headlines; checkpoints (their buffers, a requested one, the checkpointer
/// at work) and autovacuum (a worker on this database, a run ended) as background events.
const ROLES: &[(&str, Role)] = &[
    ("pg_stat_database.xact_commit", Role::Headline),
    ("pg_stat_database.blks_read", Role::Headline),
    ("pg_stat_database.blks_read", Role::PagesRead),
    ("pg_stat_wal.wal_bytes", Role::Headline),
    ("pg_locks.not_granted", Role::Headline),
    ("pg_stat_bgwriter.buffers_checkpoint", Role::Headline),
    (
        "pg_stat_bgwriter.buffers_checkpoint",
        Role::Background("checkpoint"),
    ),
    (
        "pg_stat_bgwriter.checkpoints_req",
        Role::Background("checkpoint"),
    ),
    ("pg_stat_checkpointer.buffers_written", Role::Headline),
    (
        "pg_stat_checkpointer.buffers_written",
        Role::Background("checkpoint"),
    ),
    (
        "pg_stat_checkpointer.num_requested",
        Role::Background("checkpoint"),
    ),
    (
        "pg_stat_activity.checkpointer_busy",
        Role::Background("checkpoint"),
    ),
    (
        "pg_stat_activity.autovacuum_workers",
        Role::Background("autovacuum"),
    ),
    (
        "pg_stat_user_tables.autovacuum_count",
        Role::Background("autovacuum"),
    ),
];

/// The counters now, in one round trip.
pub fn read(session: &mut dyn Session, server_version: &str) -> DbResult<Option<Reading>> {
    let rows = session.query_text(&sql(major(server_version)))?;
    Ok(Some(Reading {
        stats: stats::from_rows(&rows, |n, _| kind(n), ROLES),
        unread: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_follows_the_version() {
        assert_eq!(major("15.8"), 15);
        assert_eq!(major("16beta1"), 16);
        assert_eq!(major("17.2 (Debian 17.2-1.pgdg120+1)"), 17);
        let q15 = sql(15);
        assert!(q15.contains("pg_stat_wal") && q15.contains("pg_stat_bgwriter"));
        assert!(!q15.contains("pg_stat_io") && !q15.contains("pg_stat_checkpointer"));
        assert!(sql(16).contains("pg_stat_io"));
        assert!(sql(17).contains("pg_stat_checkpointer"));
        assert!(!sql(13).contains("pg_stat_wal"));
        assert_eq!(kind("pg_locks.not_granted"), Kind::Gauge);
        assert_eq!(kind("pg_stat_database.xact_commit"), Kind::Cumulative);
    }
}
