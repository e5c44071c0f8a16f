//! MariaDB's and MySQL's counters for `Session::stats`, in one query: a chosen list of
//! `SHOW GLOBAL STATUS` (buffer pool reads against read requests, row lock waits and time, log
//! waits and fsyncs, threads running, every `Handler_*`, commits and rollbacks, temporary disk
//! tables...), the enabled rows of `information_schema.INNODB_METRICS`, and, with
//! `performance_schema` ON, the seconds waited by event class in
//! `events_waits_summary_global_by_event_name`, summed to InnoDB's data and log file I/O
//! (`wait/io/file/innodb/innodb_data_file`), the synchronisation objects by kind and
//! component (`wait/synch/mutex/innodb`), table I/O and table locks. The status and the
//! metrics are the server's, all databases together. A part the server refuses (a privilege
//! missing) is left out of later readings and said once in the reading that dropped it.

use crate::engine::stats::{self, Kind, Reading, Role};
use crate::engine::{DbResult, ErrorClass, Session, Value};

/// The status variables read, as SHOW GLOBAL STATUS spells them (information_schema gives
/// MariaDB's in capitals), and whether each is a gauge.
const STATUS: &[(&str, Kind)] = &[
    ("Innodb_buffer_pool_reads", Kind::Cumulative),
    ("Innodb_buffer_pool_read_requests", Kind::Cumulative),
    ("Innodb_buffer_pool_write_requests", Kind::Cumulative),
    ("Innodb_buffer_pool_pages_flushed", Kind::Cumulative),
    ("Innodb_buffer_pool_wait_free", Kind::Cumulative),
    ("Innodb_buffer_pool_pages_dirty", Kind::Gauge),
    ("Innodb_row_lock_waits", Kind::Cumulative),
    ("Innodb_row_lock_time", Kind::Cumulative),
    ("Innodb_row_lock_current_waits", Kind::Gauge),
    ("Innodb_log_waits", Kind::Cumulative),
    ("Innodb_log_write_requests", Kind::Cumulative),
    ("Innodb_log_writes", Kind::Cumulative),
    ("Innodb_os_log_written", Kind::Cumulative),
    ("Innodb_os_log_fsyncs", Kind::Cumulative),
    ("Innodb_data_fsyncs", Kind::Cumulative),
    ("Innodb_data_reads", Kind::Cumulative),
    ("Innodb_data_writes", Kind::Cumulative),
    ("Innodb_data_read", Kind::Cumulative),
    ("Innodb_data_written", Kind::Cumulative),
    ("Innodb_pages_read", Kind::Cumulative),
    ("Innodb_pages_written", Kind::Cumulative),
    ("Innodb_pages_created", Kind::Cumulative),
    ("Innodb_rows_read", Kind::Cumulative),
    ("Innodb_rows_inserted", Kind::Cumulative),
    ("Innodb_rows_updated", Kind::Cumulative),
    ("Innodb_rows_deleted", Kind::Cumulative),
    ("Innodb_checkpoint_age", Kind::Gauge),
    ("Innodb_history_list_length", Kind::Gauge),
    ("Threads_running", Kind::Gauge),
    ("Threads_connected", Kind::Gauge),
    ("Com_commit", Kind::Cumulative),
    ("Com_rollback", Kind::Cumulative),
    ("Com_select", Kind::Cumulative),
    ("Com_insert", Kind::Cumulative),
    ("Com_update", Kind::Cumulative),
    ("Com_delete", Kind::Cumulative),
    ("Questions", Kind::Cumulative),
    ("Created_tmp_tables", Kind::Cumulative),
    ("Created_tmp_disk_tables", Kind::Cumulative),
    ("Sort_merge_passes", Kind::Cumulative),
    ("Select_scan", Kind::Cumulative),
    ("Select_full_join", Kind::Cumulative),
    ("Table_locks_waited", Kind::Cumulative),
    ("Bytes_received", Kind::Cumulative),
    ("Bytes_sent", Kind::Cumulative),
];

/// The parts MariaDB's counters play: commits, buffer-pool misses, redo fsyncs (from
/// MariaDB 10.8, all fsyncs), flushed pages and row lock waits as headlines; the page
/// cleaner's flushing and InnoDB's checkpoints (counted only where that monitor is enabled) as background events; misses,
/// requests and data-file wait time for telling data reads from CPU.
const ROLES: &[(&str, Role)] = &[
    ("global_status.Com_commit", Role::Headline),
    ("global_status.Innodb_buffer_pool_reads", Role::Headline),
    ("global_status.Innodb_buffer_pool_reads", Role::PagesRead),
    (
        "global_status.Innodb_buffer_pool_read_requests",
        Role::PageRequests,
    ),
    // The redo log's syncs: MariaDB 10.8 and later count them with the data files' only.
    ("global_status.Innodb_os_log_fsyncs", Role::Headline),
    ("global_status.Innodb_data_fsyncs", Role::Headline),
    (
        "global_status.Innodb_buffer_pool_pages_flushed",
        Role::Headline,
    ),
    (
        "global_status.Innodb_buffer_pool_pages_flushed",
        Role::Background("InnoDB flushing"),
    ),
    ("global_status.Innodb_row_lock_waits", Role::Headline),
    (
        "innodb_metrics.log_checkpoints",
        Role::Background("checkpoint"),
    ),
    (
        "events_waits.wait/io/file/innodb/innodb_data_file.seconds",
        Role::DataReadWait,
    ),
];

/// The prefix of the counters from performance_schema's wait summaries (the query's last part).
const WAIT_SUMMARIES: &str = "events_waits.";

/// The parts of the query, the first always read.
const STATUS_PART: usize = 0;
const PARTS: usize = 3;

fn part_sql(part: usize, mariadb: bool) -> String {
    match part {
        STATUS_PART => {
            let names: Vec<String> = STATUS.iter().map(|(n, _)| format!("'{n}'")).collect();
            let table = if mariadb {
                "information_schema.GLOBAL_STATUS"
            } else {
                "performance_schema.global_status"
            };
            format!(
                "SELECT CONCAT('global_status.', VARIABLE_NAME), VARIABLE_VALUE, '' FROM {table} \
                 WHERE VARIABLE_NAME IN ({}) OR VARIABLE_NAME LIKE 'Handler\\_%'",
                names.join(", ")
            )
        }
        1 => "SELECT CONCAT('innodb_metrics.', NAME), `COUNT`, `TYPE` \
              FROM information_schema.INNODB_METRICS \
              WHERE TIME_ENABLED IS NOT NULL AND TIME_DISABLED IS NULL"
            .into(),
        _ => "SELECT CONCAT('events_waits.', SUBSTRING_INDEX(EVENT_NAME, '/', \
              IF(EVENT_NAME LIKE 'wait/io/file/%', 5, 4)), '.seconds'), \
              SUM(SUM_TIMER_WAIT) / 1e12, '' \
              FROM performance_schema.events_waits_summary_global_by_event_name \
              WHERE SUM_TIMER_WAIT > 0 AND (EVENT_NAME LIKE 'wait/io/file/innodb/%' \
              OR EVENT_NAME LIKE 'wait/synch/%' OR EVENT_NAME LIKE 'wait/lock/%' \
              OR EVENT_NAME LIKE 'wait/io/table/%') GROUP BY 1"
            .into(),
    }
}

/// What each part is called when the server refuses it.
const PART_NAMES: [&str; PARTS] = [
    "SHOW GLOBAL STATUS",
    "information_schema.INNODB_METRICS (it takes the PROCESS privilege)",
    "performance_schema's wait summaries (they take SELECT on performance_schema)",
];

/// Which parts of the query a session still reads.
#[derive(Debug, Clone, Copy)]
pub struct Parts([bool; PARTS]);

impl Default for Parts {
    fn default() -> Self {
        Parts([true; PARTS])
    }
}

/// A status variable's name as SHOW GLOBAL STATUS spells it: the list's spelling, else the
/// first letter a capital and the rest small (`HANDLER_READ_KEY` -> `Handler_read_key`).
fn spelled(name: &str) -> String {
    let Some(bare) = name.strip_prefix("global_status.") else {
        return name.to_string();
    };
    if let Some((n, _)) = STATUS.iter().find(|(n, _)| n.eq_ignore_ascii_case(bare)) {
        return format!("global_status.{n}");
    }
    let lower = bare.to_ascii_lowercase();
    let mut chars = lower.chars();
    let first = chars.next().map(|c| c.to_ascii_uppercase());
    format!(
        "global_status.{}{}",
        first.unwrap_or_default(),
        chars.as_str()
    )
}

/// A counter's kind: gauges by the status list and INNODB_METRICS' `value` type.
fn kind(name: &str, row: &[Value]) -> Kind {
    let listed = name
        .strip_prefix("global_status.")
        .and_then(|bare| STATUS.iter().find(|(n, _)| *n == bare));
    match (listed, row.get(2).map(Value::to_string).as_deref()) {
        (Some((_, k)), _) => *k,
        (None, Some("value")) => Kind::Gauge,
        _ => Kind::Cumulative,
    }
}

/// The counters now, in one round trip. When the server refuses the query, each optional
/// part is tried alone: those it refuses are dropped from this and later readings and said
/// (with the server's reason); when it refuses none of them, the error stands.
pub fn read(session: &mut dyn Session, mariadb: bool, parts: &mut Parts) -> DbResult<Reading> {
    let sql: Vec<String> = (0..PARTS)
        .filter(|&p| parts.0[p])
        .map(|p| part_sql(p, mariadb))
        .collect();
    let (mut rows, unread) = match session.query_text(&sql.join(" UNION ALL ")) {
        Ok(rows) => (rows, Vec::new()),
        Err(e) if e.class != ErrorClass::ConnectionLost => {
            let unread = refused(session, mariadb, parts)?;
            if unread.is_empty() {
                return Err(e);
            }
            return read(session, mariadb, parts).map(|mut r| {
                r.unread.splice(0..0, unread);
                r
            });
        }
        Err(e) => return Err(e),
    };
    for r in &mut rows {
        r[0] = Value::Text(spelled(&r[0].to_string()));
    }
    let mut stats = stats::from_rows(&rows, kind, ROLES);
    mark_wait_times(&mut stats);
    Ok(Reading { stats, unread })
}

/// The wait summaries' counters marked as wait times (`Role::WaitTime`).
fn mark_wait_times(stats: &mut [stats::Stat]) {
    for s in stats
        .iter_mut()
        .filter(|s| s.name.starts_with(WAIT_SUMMARIES))
    {
        s.roles.push(Role::WaitTime);
    }
}

/// The optional parts the server refuses when asked alone, dropped from `parts`: each named
/// with the server's reason.
fn refused(session: &mut dyn Session, mariadb: bool, parts: &mut Parts) -> DbResult<Vec<String>> {
    let mut unread = Vec::new();
    let asked: Vec<usize> = (0..PARTS)
        .filter(|&p| p != STATUS_PART && parts.0[p])
        .collect();
    for p in asked {
        match session.query_text(&part_sql(p, mariadb)) {
            Err(e) if e.class == ErrorClass::ConnectionLost => return Err(e),
            Err(e) => {
                parts.0[p] = false;
                unread.push(format!("{}: {}", PART_NAMES[p], e.message));
            }
            Ok(_) => {}
        }
    }
    Ok(unread)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_summaries_counters_are_marked_as_wait_times() {
        let mut stats = vec![
            stats::Stat::new(
                "events_waits.wait/io/file/innodb/innodb_data_file.seconds",
                1.0,
                Kind::Cumulative,
            ),
            stats::Stat::new(
                "events_waits.wait/synch/mutex.seconds",
                1.0,
                Kind::Cumulative,
            ),
            stats::Stat::new("global_status.Com_commit", 1.0, Kind::Cumulative),
        ];
        mark_wait_times(&mut stats);
        let marked: Vec<bool> = stats
            .iter()
            .map(|s| s.roles.contains(&Role::WaitTime))
            .collect();
        assert_eq!(marked, [true, true, false]);
    }

    #[test]
    fn names_are_spelled_as_show_status_does() {
        assert_eq!(
            spelled("global_status.INNODB_BUFFER_POOL_READS"),
            "global_status.Innodb_buffer_pool_reads"
        );
        assert_eq!(
            spelled("global_status.HANDLER_READ_RND_NEXT"),
            "global_status.Handler_read_rnd_next"
        );
        assert_eq!(
            spelled("innodb_metrics.log_writes"),
            "innodb_metrics.log_writes"
        );
        let row = |t: &str| vec![Value::Null, Value::Null, Value::Text(t.into())];
        assert_eq!(kind("global_status.Threads_running", &row("")), Kind::Gauge);
        assert_eq!(kind("global_status.Com_commit", &row("")), Kind::Cumulative);
        assert_eq!(kind("innodb_metrics.x", &row("value")), Kind::Gauge);
        assert_eq!(kind("innodb_metrics.y", &row("counter")), Kind::Cumulative);
        assert!(part_sql(0, true).contains("information_schema.GLOBAL_STATUS"));
        assert!(part_sql(0, false).contains("performance_schema.global_status"));
    }
}
