//! What an embedded engine's own connections count of their time (`Session::connection_figures`):
//! page cache hits, misses, writes and spills, waits for the database's lock and their retries,
//! write-ahead log checkpoints, time in COMMIT. There is no server to sample for an engine that
//! runs inside dbduel: each client's connection tells its own figures, which the runner takes
//! over the measured window and the run sums (metrics/embedded.rs judges them).

use serde::{Deserialize, Serialize};

/// One connection's cumulative figures (or a window's, or a run's sum of them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionFigures {
    /// Pages found in the connection's page cache.
    pub cache_hits: u64,
    /// Pages not found there, read through the file system.
    pub cache_misses: u64,
    /// Dirty pages written to the file (at commit, or to make room).
    pub cache_writes: u64,
    /// Dirty pages written before commit because the cache was full.
    pub cache_spills: u64,
    /// Times a statement found the database locked and waited (one per locking event).
    pub busy_waits: u64,
    /// Retries after a wait (each pause of the busy handler).
    pub busy_retries: u64,
    /// Waits that ended by giving up (the busy timeout passed): the statement failed busy.
    pub busy_timeouts: u64,
    /// Seconds spent waiting for the lock.
    pub busy_wait_s: f64,
    /// COMMITs, and seconds in them (the log's write and sync, and the checkpoints they ran),
    /// lock waits inside them excluded.
    pub commits: u64,
    pub commit_s: f64,
    /// Write-ahead log checkpoints run by these connections (at commit, when the log grew past
    /// the autocheckpoint size), their seconds, and the log frames they copied back.
    pub checkpoints: u64,
    pub checkpoint_s: f64,
    pub checkpoint_frames: u64,
    /// Wall seconds the figures cover (set by whoever takes a window of them; 0 in a
    /// connection's cumulative figures).
    pub wall_s: f64,
}

impl ConnectionFigures {
    /// What happened between `earlier` and `self` (cumulative figures of one connection).
    pub fn since(&self, earlier: &ConnectionFigures) -> ConnectionFigures {
        let n = |a: u64, b: u64| a.saturating_sub(b);
        let s = |a: f64, b: f64| (a - b).max(0.0);
        ConnectionFigures {
            cache_hits: n(self.cache_hits, earlier.cache_hits),
            cache_misses: n(self.cache_misses, earlier.cache_misses),
            cache_writes: n(self.cache_writes, earlier.cache_writes),
            cache_spills: n(self.cache_spills, earlier.cache_spills),
            busy_waits: n(self.busy_waits, earlier.busy_waits),
            busy_retries: n(self.busy_retries, earlier.busy_retries),
            busy_timeouts: n(self.busy_timeouts, earlier.busy_timeouts),
            busy_wait_s: s(self.busy_wait_s, earlier.busy_wait_s),
            commits: n(self.commits, earlier.commits),
            commit_s: s(self.commit_s, earlier.commit_s),
            checkpoints: n(self.checkpoints, earlier.checkpoints),
            checkpoint_s: s(self.checkpoint_s, earlier.checkpoint_s),
            checkpoint_frames: n(self.checkpoint_frames, earlier.checkpoint_frames),
            wall_s: s(self.wall_s, earlier.wall_s),
        }
    }

    /// Add another connection's (or window's) figures to these.
    pub fn add(&mut self, o: &ConnectionFigures) {
        self.cache_hits += o.cache_hits;
        self.cache_misses += o.cache_misses;
        self.cache_writes += o.cache_writes;
        self.cache_spills += o.cache_spills;
        self.busy_waits += o.busy_waits;
        self.busy_retries += o.busy_retries;
        self.busy_timeouts += o.busy_timeouts;
        self.busy_wait_s += o.busy_wait_s;
        self.commits += o.commits;
        self.commit_s += o.commit_s;
        self.checkpoints += o.checkpoints;
        self.checkpoint_s += o.checkpoint_s;
        self.checkpoint_frames += o.checkpoint_frames;
        self.wall_s += o.wall_s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_the_difference_and_windows_add_up() {
        let before = ConnectionFigures {
            cache_misses: 10,
            busy_wait_s: 1.0,
            commits: 3,
            ..ConnectionFigures::default()
        };
        let after = ConnectionFigures {
            cache_misses: 25,
            busy_wait_s: 1.5,
            commits: 3,
            ..ConnectionFigures::default()
        };
        let mut w = after.since(&before);
        assert_eq!(w.cache_misses, 15);
        assert_eq!(w.busy_wait_s, 0.5);
        assert_eq!(w.commits, 0);
        // A connection replaced (its counters back at zero) never gives negative figures.
        assert_eq!(before.since(&after).cache_misses, 0);
        w.add(&after);
        assert_eq!(w.cache_misses, 40);
        assert_eq!(w.busy_wait_s, 2.0);
    }
}
