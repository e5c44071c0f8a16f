//! MariaDB/MySQL's figures per statement (`Session::statements`) from performance_schema's
//! statement digests (events_statements_summary_by_digest) of the current database: timers in
//! picoseconds made milliseconds, dbduel's own observation statements left out; where
//! performance_schema or its digest consumer is off, or the user may not read it, what to do.

use super::MySession;
use crate::engine::statements::{self, Figures, Reading, Statement};
use crate::engine::{DbResult, ErrorClass, Session, Value};

/// Picoseconds in a millisecond.
const PS_PER_MS: f64 = 1e9;

/// The current database's digests; those reading the server's catalogs and settings (dbduel's
/// observers and administration: the processlist, sizes, these digests, variables, the
/// sampler's own thread id) left out.
const DIGESTS: &str = "SELECT DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT, \
     SUM_ROWS_SENT + SUM_ROWS_AFFECTED, SUM_LOCK_TIME, SUM_ROWS_EXAMINED, \
     SUM_CREATED_TMP_DISK_TABLES FROM performance_schema.events_statements_summary_by_digest \
     WHERE SCHEMA_NAME = DATABASE() AND DIGEST_TEXT NOT LIKE '%information\\_schema%' \
     AND DIGEST_TEXT NOT LIKE '%performance\\_schema%' AND DIGEST_TEXT NOT LIKE 'SHOW %' \
     AND DIGEST_TEXT NOT LIKE '%@@%' AND DIGEST_TEXT NOT LIKE '%CONNECTION\\_ID%' \
     OR DIGEST IS NULL";

/// The text of the row where the server counts the statements it has no room for: a full
/// digest table (`performance_schema_digests_size`) keeps no more texts, and every database's
/// new statements are summed there.
pub const OVERFLOW: &str = "(statements of every database with no row of their own: performance_schema's digest table is full; raise performance_schema_digests_size, or TRUNCATE performance_schema.events_statements_summary_by_digest before the run)";

/// Whether performance_schema is on, and which of the consumers digests need are off.
const SWITCHES: &str = "SELECT @@performance_schema, (SELECT GROUP_CONCAT(NAME) FROM \
     performance_schema.setup_consumers WHERE NAME IN ('global_instrumentation', \
     'statements_digest') AND ENABLED <> 'YES')";

fn statement(r: &[Value]) -> Statement {
    if r.first().is_none_or(|d| *d == Value::Null) {
        let mut s = statement_of(r);
        s.key = "(overflow)".into();
        s.text = OVERFLOW.into();
        return s;
    }
    statement_of(r)
}

fn statement_of(r: &[Value]) -> Statement {
    let more = Figures {
        lock_ms: statements::number(r.get(5), 1.0 / PS_PER_MS),
        rows_examined: statements::count(r.get(6)),
        tmp_disk_tables: statements::count(r.get(7)),
        ..Figures::default()
    };
    statements::statement(r, 1.0 / PS_PER_MS, more)
}

/// Why digests cannot be read, from the switches' row (None: they can).
fn switched_off(row: &[Value]) -> Option<String> {
    if row.first().and_then(Value::as_i64) != Some(1) {
        return Some(
            "performance_schema is off: start MariaDB with performance_schema=ON (mariadbd --performance-schema=ON, or performance_schema=ON in its configuration; a server dbduel manages: start it with --server-statements, or server_statements = true in a plan) to get statement digests".into(),
        );
    }
    match row.get(1) {
        Some(Value::Null) | None => None,
        Some(off) => Some(format!(
            "performance_schema's consumers {off} are off: UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN ('global_instrumentation', 'statements_digest'), or start the server with performance_schema_consumer_statements_digest=ON"
        )),
    }
}

/// Error 1142: SELECT refused on a performance_schema table.
fn refused(e: &crate::engine::DbError) -> bool {
    e.class == ErrorClass::Other("1142".into())
}

pub(super) fn read(s: &mut MySession) -> DbResult<Reading> {
    let grant = |e: crate::engine::DbError| {
        Reading::Unavailable(format!(
            "this user may not read performance_schema ({}): GRANT SELECT ON performance_schema.* to it",
            e.message
        ))
    };
    let switches = match s.query_text(SWITCHES) {
        Err(e) if refused(&e) => return Ok(grant(e)),
        rows => rows?,
    };
    if let Some(why) = switches.first().and_then(|r| switched_off(r)) {
        return Ok(Reading::Unavailable(why));
    }
    match s.query_text(DIGESTS) {
        Ok(rows) => Ok(Reading::Statements(
            rows.iter().map(|r| statement(r)).collect(),
        )),
        Err(e) if refused(&e) => Ok(grant(e)),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switched_off_says_what_to_turn_on() {
        let off = switched_off(&[Value::Int(0), Value::Null]).unwrap();
        assert!(off.contains("performance_schema=ON"), "{off}");
        let consumer = switched_off(&[Value::Int(1), Value::Text("statements_digest".into())]);
        assert!(consumer.unwrap().contains("statements_digest"));
        assert_eq!(switched_off(&[Value::Int(1), Value::Null]), None);
        let row = [
            Value::Text("abc".into()),
            Value::Text("UPDATE `t` SET `a` = ?".into()),
            Value::Int(4),
            Value::Int(2_000_000_000),
            Value::Int(4),
            Value::Int(1_000_000_000),
            Value::Int(8),
            Value::Int(0),
        ];
        let s = statement(&row);
        assert!((s.figures.total_ms - 2.0).abs() < 1e-9);
        assert_eq!(s.figures.lock_ms, Some(1.0));
        assert_eq!(s.figures.rows_examined, Some(8));
        // The row a full digest table sums the rest in says so, and how to make room.
        let mut overflow = row.clone();
        overflow[0] = Value::Null;
        overflow[1] = Value::Null;
        let s = statement(&overflow);
        assert_eq!(s.text, OVERFLOW);
        assert!(s.text.contains("performance_schema_digests_size") && s.figures.calls == 4);
    }
}
