//! The server's cumulative figures per statement (`Session::statements`): PostgreSQL's
//! pg_stat_statements, MariaDB/MySQL's statement digests in performance_schema, each row a
//! normalised statement of the run's database (and, where the server keeps it, user) with the
//! figures counted since the server (or its statistics) started. Figures an engine does not
//! keep are None. Where the engine keeps none, or they are switched off, the reason and how to
//! turn them on.

use serde::{Deserialize, Serialize};

/// What the server counted for one statement (or the difference of two readings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Times it was executed.
    pub calls: u64,
    /// Time the server spent executing it, milliseconds.
    pub total_ms: f64,
    /// Rows it returned or changed.
    pub rows: u64,
    /// Shared buffers found in the cache, read from storage, dirtied and written (PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks_hit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks_read: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks_dirtied: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks_written: Option<u64>,
    /// Temporary blocks read and written (PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_blocks: Option<u64>,
    /// Time reading data blocks, milliseconds (PostgreSQL with track_io_timing on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ms: Option<f64>,
    /// WAL it generated (PostgreSQL 13 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_bytes: Option<u64>,
    /// Time waiting for table locks, milliseconds (MariaDB/MySQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_ms: Option<f64>,
    /// Rows the server read to find the rows it returned or changed (MariaDB/MySQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_examined: Option<u64>,
    /// Internal temporary tables written to disk (MariaDB/MySQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmp_disk_tables: Option<u64>,
}

impl Figures {
    /// What was counted between `before` and `self` (a counter that went down, the server's
    /// statistics reset in between, counts from zero).
    pub fn since(&self, before: &Figures) -> Figures {
        let reset = self.calls < before.calls;
        let n = |now: Option<u64>, then: Option<u64>| match (now, then) {
            (Some(a), Some(b)) if !reset => Some(a.saturating_sub(b)),
            (a, _) => a,
        };
        let t = |now: Option<f64>, then: Option<f64>| match (now, then) {
            (Some(a), Some(b)) if !reset => Some((a - b).max(0.0)),
            (a, _) => a,
        };
        Figures {
            calls: n(Some(self.calls), Some(before.calls)).unwrap_or(0),
            total_ms: t(Some(self.total_ms), Some(before.total_ms)).unwrap_or(0.0),
            rows: n(Some(self.rows), Some(before.rows)).unwrap_or(0),
            blocks_hit: n(self.blocks_hit, before.blocks_hit),
            blocks_read: n(self.blocks_read, before.blocks_read),
            blocks_dirtied: n(self.blocks_dirtied, before.blocks_dirtied),
            blocks_written: n(self.blocks_written, before.blocks_written),
            temp_blocks: n(self.temp_blocks, before.temp_blocks),
            read_ms: t(self.read_ms, before.read_ms),
            wal_bytes: n(self.wal_bytes, before.wal_bytes),
            lock_ms: t(self.lock_ms, before.lock_ms),
            rows_examined: n(self.rows_examined, before.rows_examined),
            tmp_disk_tables: n(self.tmp_disk_tables, before.tmp_disk_tables),
        }
    }

    /// Both counted together (a figure one side lacks counts as the other's).
    pub fn add(&mut self, other: &Figures) {
        fn sum<T: std::ops::Add<Output = T> + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            }
        }
        self.calls += other.calls;
        self.total_ms += other.total_ms;
        self.rows += other.rows;
        self.blocks_hit = sum(self.blocks_hit, other.blocks_hit);
        self.blocks_read = sum(self.blocks_read, other.blocks_read);
        self.blocks_dirtied = sum(self.blocks_dirtied, other.blocks_dirtied);
        self.blocks_written = sum(self.blocks_written, other.blocks_written);
        self.temp_blocks = sum(self.temp_blocks, other.temp_blocks);
        self.read_ms = sum(self.read_ms, other.read_ms);
        self.wal_bytes = sum(self.wal_bytes, other.wal_bytes);
        self.lock_ms = sum(self.lock_ms, other.lock_ms);
        self.rows_examined = sum(self.rows_examined, other.rows_examined);
        self.tmp_disk_tables = sum(self.tmp_disk_tables, other.tmp_disk_tables);
    }
}

/// One normalised statement as the server keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// The server's identity of the statement (queryid, digest), unique in one reading.
    pub key: String,
    /// Its text, constants replaced by placeholders.
    pub text: String,
    pub figures: Figures,
}

/// One reading of the server's per-statement figures.
#[derive(Debug, Clone, PartialEq)]
pub enum Reading {
    Statements(Vec<Statement>),
    /// The server keeps none, or they cannot be read: why, and how to turn them on.
    Unavailable(String),
}

/// A statement from a row that starts with its key, text, calls, total time (in units of
/// `ms_per_unit` milliseconds) and rows; the engine's other figures in `more`.
pub fn statement(r: &[super::Value], ms_per_unit: f64, more: Figures) -> Statement {
    let text = |i: usize| r.get(i).map(super::Value::to_string).unwrap_or_default();
    Statement {
        key: text(0),
        text: text(1),
        figures: Figures {
            calls: count(r.get(2)).unwrap_or(0),
            total_ms: number(r.get(3), ms_per_unit).unwrap_or(0.0),
            rows: count(r.get(4)).unwrap_or(0),
            ..more
        },
    }
}

/// An optional cumulative counter read from a row (NULL or absent: None; a negative or
/// fractional value read as the count it means).
pub fn count(v: Option<&super::Value>) -> Option<u64> {
    v.and_then(super::Value::as_i64).map(|n| n.max(0) as u64)
}

/// An optional figure read from a row as a number, scaled by `unit` (NULL: None).
pub fn number(v: Option<&super::Value>, unit: f64) -> Option<f64> {
    let f = match v? {
        super::Value::Int(i) => *i as f64,
        super::Value::Float(f) => *f,
        super::Value::Text(s) => s.trim().parse().ok()?,
        super::Value::Null => return None,
    };
    Some(f * unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_count_what_happened_between_readings() {
        let before = Figures {
            calls: 10,
            total_ms: 5.0,
            rows: 10,
            blocks_read: Some(3),
            wal_bytes: Some(100),
            ..Figures::default()
        };
        let after = Figures {
            calls: 30,
            total_ms: 12.5,
            rows: 31,
            blocks_read: Some(4),
            wal_bytes: Some(400),
            ..Figures::default()
        };
        let d = after.since(&before);
        assert_eq!((d.calls, d.rows), (20, 21));
        assert!((d.total_ms - 7.5).abs() < 1e-9);
        assert_eq!(
            (d.blocks_read, d.wal_bytes, d.lock_ms),
            (Some(1), Some(300), None)
        );
        // Statistics reset between the readings: the second one is all there is.
        let reset = Figures {
            calls: 4,
            total_ms: 1.0,
            rows: 4,
            ..Figures::default()
        };
        assert_eq!(reset.since(&before).calls, 4);
        let mut sum = d.clone();
        sum.add(&d);
        assert_eq!((sum.calls, sum.wal_bytes), (40, Some(600)));
    }
}
