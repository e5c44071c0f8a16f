//! PostgreSQL's figures per statement (`Session::statements`) from pg_stat_statements: this
//! database's and this user's statements, the columns of the extension's installed version
//! (1.8, PostgreSQL 13: execution time split from planning, WAL bytes; 1.11, PostgreSQL 17:
//! blk_read_time renamed shared_blk_read_time), dbduel's own observation statements left
//! out; where the extension is missing, what to do about it.

use super::PgSession;
use crate::engine::statements::{self, Figures, Reading, Statement};
use crate::engine::{DbResult, ErrorClass, Session, Value};

/// Statements that read the server's statistics and settings: dbduel's observers and
/// administration (pg_stat_activity, pg_stat_statements, the checkpointer's counters,
/// pg_settings, sizes), not the workload's.
/// (An escape string's text, whatever standard_conforming_strings says.)
const OWN: &str = r"\\m(pg_stat_\\w+|pg_statio_\\w+|pg_settings|pg_extension|pg_database_size|current_setting|pg_backend_pid)\\M";

/// What to do where the extension was not created in this database.
fn not_created(database: &str, preloaded: bool) -> String {
    if preloaded {
        format!(
            "pg_stat_statements is loaded but not created in database {database}: CREATE EXTENSION pg_stat_statements in this database"
        )
    } else {
        format!(
            "pg_stat_statements is not installed: add pg_stat_statements to shared_preload_libraries, restart, and CREATE EXTENSION pg_stat_statements in this database ({database}) (a server dbduel manages: start it with --server-statements, or server_statements = true in a plan)"
        )
    }
}

/// The query for the extension's version `(major, minor)`.
fn figures_sql(version: (u32, u32)) -> String {
    let (total, wal) = if version >= (1, 8) {
        ("total_exec_time", "wal_bytes")
    } else {
        ("total_time", "NULL")
    };
    let read = if version >= (1, 11) {
        "shared_blk_read_time"
    } else {
        "blk_read_time"
    };
    format!(
        "SELECT queryid::text, query, calls, {total}, rows, shared_blks_hit, shared_blks_read, \
         shared_blks_dirtied, shared_blks_written, temp_blks_read + temp_blks_written, \
         {read}, {wal} FROM pg_stat_statements \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND userid = (SELECT oid FROM pg_roles WHERE rolname = current_user) \
         AND query !~* E'{OWN}'"
    )
}

/// An extension version as "1.10" names it.
fn version_of(text: &str) -> (u32, u32) {
    let mut parts = text.split('.').map(|p| p.trim().parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn statement(r: &[Value]) -> Statement {
    let count = |i: usize| statements::count(r.get(i));
    let more = Figures {
        blocks_hit: count(5),
        blocks_read: count(6),
        blocks_dirtied: count(7),
        blocks_written: count(8),
        temp_blocks: count(9),
        read_ms: statements::number(r.get(10), 1.0),
        wal_bytes: count(11),
        ..Figures::default()
    };
    statements::statement(r, 1.0, more)
}

pub(super) fn read(s: &mut PgSession) -> DbResult<Reading> {
    let rows = s.query_text(
        "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'pg_stat_statements'), \
         current_setting('shared_preload_libraries'), current_database()",
    )?;
    let row = rows.first().cloned().unwrap_or_default();
    let text = |i: usize| row.get(i).map(Value::to_string).unwrap_or_default();
    let preloaded = text(1)
        .split(',')
        .any(|l| l.trim().trim_matches('"') == "pg_stat_statements");
    let version = match row.first() {
        Some(Value::Null) | None => {
            return Ok(Reading::Unavailable(not_created(&text(2), preloaded)));
        }
        Some(v) => version_of(&v.to_string()),
    };
    match s.query_text(&figures_sql(version)) {
        Ok(rows) => Ok(Reading::Statements(rows.iter().map(|r| statement(r)).collect())),
        // 55000: created in the database, but the library was not loaded at the server's start.
        Err(e) if e.class == ErrorClass::Other("55000".into()) => Ok(Reading::Unavailable(
            "pg_stat_statements is created in this database but not loaded: add pg_stat_statements to shared_preload_libraries and restart the server (a server dbduel manages: start it with --server-statements, or server_statements = true in a plan)".into(),
        )),
        Err(e) if e.class == ErrorClass::Other("42501".into()) => Ok(Reading::Unavailable(format!(
            "pg_stat_statements cannot be read by this user ({}): GRANT pg_read_all_stats to it",
            e.message
        ))),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_follow_the_extensions_version() {
        let old = figures_sql(version_of("1.7"));
        assert!(old.contains("total_time,") && old.contains("blk_read_time, NULL"));
        let v15 = figures_sql(version_of("1.10"));
        assert!(v15.contains("total_exec_time") && v15.contains(" blk_read_time, wal_bytes"));
        let v17 = figures_sql(version_of("1.11"));
        assert!(v17.contains("shared_blk_read_time"));
        assert!(
            not_created("bench", false)
                .contains("add pg_stat_statements to shared_preload_libraries")
        );
        assert!(
            not_created("bench", true).starts_with("pg_stat_statements is loaded but not created")
        );
    }
}
