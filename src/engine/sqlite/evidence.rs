//! Where a SQLite connection's time went, counted by the connection itself: its page cache
//! (`sqlite3_db_status`: hits, misses, writes, spills), a busy handler of dbduel's own that
//! waits as `busy_timeout` would (SQLite's own pauses) while counting the waits, retries,
//! give-ups and time, a write-ahead log hook that runs the autocheckpoint as SQLite's default
//! hook would while timing it, and the time in COMMIT. Read by `Session::connection_figures`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, ffi};

use crate::engine::figures::ConnectionFigures;

/// What the busy handler and the log hook count, shared with the closures SQLite calls.
#[derive(Default)]
struct Counts {
    busy_waits: AtomicU64,
    busy_retries: AtomicU64,
    busy_timeouts: AtomicU64,
    busy_wait_us: AtomicU64,
    checkpoints: AtomicU64,
    checkpoint_us: AtomicU64,
    checkpoint_frames: AtomicU64,
}

/// A connection's counts, and its COMMITs.
pub(super) struct Evidence {
    counts: Arc<Counts>,
    commits: u64,
    commit: Duration,
    /// What the handler and the hook keep in place of SQLite's own (whose PRAGMAs then read
    /// 0): the busy timeout in milliseconds, the autocheckpoint in log frames.
    busy_timeout_ms: u64,
    autocheckpoint: i64,
}

/// SQLite's own pauses between retries when the database is locked (sqliteDefaultBusyCallback):
/// the pause before retry `count` (0 for the first), in milliseconds, or None once `timeout_ms`
/// would be passed.
fn busy_pause(count: u32, timeout_ms: u64) -> Option<u64> {
    const DELAYS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];
    let i = (count as usize).min(DELAYS.len() - 1);
    let prior: u64 = if (count as usize) < DELAYS.len() {
        DELAYS[..i].iter().sum()
    } else {
        DELAYS.iter().sum::<u64>() - 100 + 100 * (u64::from(count) - 11)
    };
    let delay = DELAYS[i].min(timeout_ms.saturating_sub(prior));
    (delay > 0).then_some(delay)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Evidence {
    /// Put the busy handler (waiting up to `busy_timeout`) and the log hook on `conn`, after
    /// its PRAGMAs: a later `busy_timeout` or `wal_autocheckpoint` would replace them.
    pub(super) fn install(conn: &mut Connection, busy_timeout: Duration) -> rusqlite::Result<Self> {
        let counts = Arc::new(Counts::default());
        let timeout_ms = u64::try_from(busy_timeout.as_millis()).unwrap_or(u64::MAX);
        let c = counts.clone();
        conn.busy_handler(Some(move |count: i32| {
            let count = u32::try_from(count).unwrap_or(0);
            if count == 0 {
                c.busy_waits.fetch_add(1, Ordering::Relaxed);
            }
            let Some(ms) = busy_pause(count, timeout_ms) else {
                c.busy_timeouts.fetch_add(1, Ordering::Relaxed);
                return false;
            };
            let started = Instant::now();
            std::thread::sleep(Duration::from_millis(ms));
            c.busy_wait_us
                .fetch_add(micros(started.elapsed()), Ordering::Relaxed);
            c.busy_retries.fetch_add(1, Ordering::Relaxed);
            true
        }))?;
        let every: i64 = conn.pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))?;
        let c = counts.clone();
        conn.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, frames: i32| {
            if every <= 0 || i64::from(frames) < every {
                return Ok(());
            }
            let started = Instant::now();
            // As SQLite's default hook: a passive checkpoint, whose failure (readers in the
            // way) leaves the commit as it is.
            let copied = wal
                .checkpoint_v2(CheckpointMode::PASSIVE)
                .map_or(0, |c| c.1);
            c.checkpoint_us
                .fetch_add(micros(started.elapsed()), Ordering::Relaxed);
            c.checkpoints.fetch_add(1, Ordering::Relaxed);
            c.checkpoint_frames
                .fetch_add(u64::try_from(copied).unwrap_or(0), Ordering::Relaxed);
            Ok(())
        }))?;
        Ok(Evidence {
            counts,
            commits: 0,
            commit: Duration::ZERO,
            busy_timeout_ms: timeout_ms,
            autocheckpoint: every,
        })
    }

    /// The settings the handler and the hook keep, as `PRAGMA busy_timeout` and
    /// `PRAGMA wal_autocheckpoint` would read them without dbduel's.
    pub(super) fn settings(&self) -> [(&'static str, String); 2] {
        [
            ("busy_timeout", self.busy_timeout_ms.to_string()),
            ("wal_autocheckpoint", self.autocheckpoint.to_string()),
        ]
    }

    fn busy_wait(&self) -> Duration {
        Duration::from_micros(self.counts.busy_wait_us.load(Ordering::Relaxed))
    }

    /// Taken as a COMMIT starts: the instant, and the lock waits so far.
    pub(super) fn mark(&self) -> (Instant, Duration) {
        (Instant::now(), self.busy_wait())
    }

    /// A COMMIT that started at `mark` ended: counted with its time (lock waits inside it
    /// excluded) when it succeeded.
    pub(super) fn committed(&mut self, (started, waited): (Instant, Duration), ok: bool) {
        if ok {
            let waited = self.busy_wait().saturating_sub(waited);
            self.commits += 1;
            self.commit += started.elapsed().saturating_sub(waited);
        }
    }

    /// The connection's figures so far.
    pub(super) fn figures(&self, conn: &Connection) -> ConnectionFigures {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let secs = |a: &AtomicU64| n(a) as f64 / 1e6;
        let c = &self.counts;
        ConnectionFigures {
            cache_hits: db_status(conn, ffi::SQLITE_DBSTATUS_CACHE_HIT),
            cache_misses: db_status(conn, ffi::SQLITE_DBSTATUS_CACHE_MISS),
            cache_writes: db_status(conn, ffi::SQLITE_DBSTATUS_CACHE_WRITE),
            cache_spills: db_status(conn, ffi::SQLITE_DBSTATUS_CACHE_SPILL),
            busy_waits: n(&c.busy_waits),
            busy_retries: n(&c.busy_retries),
            busy_timeouts: n(&c.busy_timeouts),
            busy_wait_s: secs(&c.busy_wait_us),
            commits: self.commits,
            commit_s: self.commit.as_secs_f64(),
            checkpoints: n(&c.checkpoints),
            checkpoint_s: secs(&c.checkpoint_us),
            checkpoint_frames: n(&c.checkpoint_frames),
            wall_s: 0.0,
        }
    }
}

/// One of the connection's counters (`sqlite3_db_status`, not reset); 0 where SQLite refuses.
fn db_status(conn: &Connection, op: i32) -> u64 {
    let (mut current, mut highwater) = (0, 0);
    // SAFETY: the handle is this connection's own and stays open while `conn` is borrowed;
    // sqlite3_db_status only reads the connection's counters into the two integers given.
    let rc = unsafe { ffi::sqlite3_db_status(conn.handle(), op, &mut current, &mut highwater, 0) };
    if rc == ffi::SQLITE_OK {
        u64::try_from(current).unwrap_or(0)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_pauses_are_sqlites_own_up_to_the_timeout() {
        let pauses: Vec<u64> = (0..).map_while(|i| busy_pause(i, 100)).collect();
        // 1+2+5+10+15+20+25 = 78, then 22 of the next 25: 100 ms in all.
        assert_eq!(pauses, vec![1, 2, 5, 10, 15, 20, 25, 22]);
        assert_eq!(pauses.iter().sum::<u64>(), 100);
        // Past the table, 100 ms at a time.
        assert_eq!(busy_pause(12, 10_000), Some(100));
        assert_eq!(busy_pause(0, 0), None);
        let all: u64 = (0..).map_while(|i| busy_pause(i, 10_000)).sum();
        assert_eq!(all, 10_000);
    }

    #[test]
    fn a_locked_database_is_waited_for_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t(x); BEGIN IMMEDIATE;")
            .unwrap();
        let mut waiter = Connection::open(&path).unwrap();
        let evidence = Evidence::install(&mut waiter, Duration::from_millis(60)).unwrap();
        let refused = waiter.execute_batch("BEGIN IMMEDIATE");
        assert!(refused.is_err());
        let f = evidence.figures(&waiter);
        assert_eq!((f.busy_waits, f.busy_timeouts), (1, 1));
        assert!(f.busy_retries >= 5, "{f:?}");
        assert!(f.busy_wait_s >= 0.05, "{f:?}");
        // The settings the handler and the hook keep, where SQLite's PRAGMAs would read 0.
        assert_eq!(evidence.settings()[0], ("busy_timeout", "60".to_string()));
        assert_eq!(
            evidence.settings()[1],
            ("wal_autocheckpoint", "1000".to_string())
        );
    }
}
