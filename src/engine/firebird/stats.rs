//! Firebird's counters for `Session::stats`, in one query on the database-level rows
//! (`MON$STAT_GROUP = 0`) of `MON$IO_STATS` (page reads, writes, fetches, marks) and
//! `MON$RECORD_STATS` (sequential and indexed reads, inserts, updates, deletes, backouts,
//! purges, expunges, lock waits and update conflicts), with `MON$DATABASE`'s next
//! transaction number (transactions started). A statement outside a transaction runs in one
//! of its own, so each reading is a fresh snapshot of the monitoring tables.

use crate::engine::stats::{Kind, Reading, Role, Stat, number};
use crate::engine::{DbResult, Session};

/// The columns read, in the query's order: (table, column, roles).
const COLUMNS: &[(&str, &str, &[Role])] = &[
    (
        "MON$IO_STATS",
        "MON$PAGE_READS",
        &[Role::Headline, Role::PagesRead],
    ),
    ("MON$IO_STATS", "MON$PAGE_WRITES", &[Role::Headline]),
    (
        "MON$IO_STATS",
        "MON$PAGE_FETCHES",
        &[Role::Headline, Role::PageRequests],
    ),
    ("MON$IO_STATS", "MON$PAGE_MARKS", &[]),
    ("MON$RECORD_STATS", "MON$RECORD_SEQ_READS", &[]),
    ("MON$RECORD_STATS", "MON$RECORD_IDX_READS", &[]),
    ("MON$RECORD_STATS", "MON$RECORD_INSERTS", &[]),
    ("MON$RECORD_STATS", "MON$RECORD_UPDATES", &[]),
    ("MON$RECORD_STATS", "MON$RECORD_DELETES", &[]),
    ("MON$RECORD_STATS", "MON$RECORD_BACKOUTS", &[]),
    ("MON$RECORD_STATS", "MON$RECORD_PURGES", &[]),
    ("MON$RECORD_STATS", "MON$RECORD_EXPUNGES", &[]),
    ("MON$RECORD_STATS", "MON$RECORD_WAITS", &[Role::Headline]),
    ("MON$RECORD_STATS", "MON$RECORD_CONFLICTS", &[]),
    ("MON$DATABASE", "MON$NEXT_TRANSACTION", &[Role::Headline]),
];

fn sql() -> String {
    let alias = |table: &str| match table {
        "MON$IO_STATS" => "io",
        "MON$RECORD_STATS" => "r",
        _ => "d",
    };
    let list: Vec<String> = COLUMNS
        .iter()
        .map(|(t, c, _)| format!("{}.{c}", alias(t)))
        .collect();
    format!(
        "SELECT {} FROM MON$DATABASE d \
         JOIN MON$IO_STATS io ON io.MON$STAT_ID = d.MON$STAT_ID AND io.MON$STAT_GROUP = 0 \
         JOIN MON$RECORD_STATS r ON r.MON$STAT_ID = d.MON$STAT_ID AND r.MON$STAT_GROUP = 0",
        list.join(", ")
    )
}

/// The counters now, in one round trip.
pub fn read(session: &mut dyn Session) -> DbResult<Option<Reading>> {
    let rows = session.query_text(&sql())?;
    let Some(row) = rows.first() else {
        return Ok(Some(Reading::default()));
    };
    let stats = COLUMNS
        .iter()
        .zip(row)
        .filter_map(|((table, column, roles), v)| {
            let mut stat = Stat::new(format!("{table}.{column}"), number(v)?, Kind::Cumulative);
            stat.roles = roles.to_vec();
            Some(stat)
        })
        .collect();
    Ok(Some(Reading {
        stats,
        unread: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_query_reads_the_database_level_rows() {
        let q = super::sql();
        assert!(q.starts_with("SELECT io.MON$PAGE_READS, io.MON$PAGE_WRITES"));
        assert!(q.contains("d.MON$NEXT_TRANSACTION FROM MON$DATABASE d"));
        assert_eq!(q.matches("MON$STAT_GROUP = 0").count(), 2);
    }
}
