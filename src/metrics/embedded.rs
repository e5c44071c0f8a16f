//! What limited a run on an embedded engine (SQLite), which has no server to sample: the
//! clients' connections' own figures over the measured window (`engine::figures`), summed over
//! the run's connections, as shares of the clients' time, and one stated rule (`verdict`).

use serde::{Deserialize, Serialize};

use crate::engine::figures::ConnectionFigures;
use crate::metrics::waits::Verdict;

/// Cache misses per transaction from which a run's reads are its limit (`verdict`).
const MISSES_PER_TRANSACTION: f64 = 1.0;

/// The run's connections' figures, and the shares the verdict reads.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EmbeddedWaits {
    /// Connections whose figures are summed (the clients').
    pub connections: u32,
    /// Summed over the connections; `wall_s` is the clients' time (each client's measured
    /// window, added up).
    #[serde(flatten)]
    pub figures: ConnectionFigures,
    /// Of the clients' time: waiting for the database's lock (the busy handler's pauses).
    pub lock_share: f64,
    /// Of the clients' time: in COMMIT (the log's write and sync, checkpoints included).
    pub commit_share: f64,
    /// Page cache misses per measured transaction, and the hits' share of page lookups.
    pub misses_per_transaction: f64,
    pub cache_hit_ratio: Option<f64>,
}

impl EmbeddedWaits {
    /// The shares of `figures` summed over `connections`, for `transactions` measured.
    pub fn of(figures: ConnectionFigures, connections: u32, transactions: u64) -> EmbeddedWaits {
        let share = |s: f64| {
            if figures.wall_s > 0.0 {
                s / figures.wall_s
            } else {
                0.0
            }
        };
        let lookups = figures.cache_hits + figures.cache_misses;
        EmbeddedWaits {
            connections,
            lock_share: share(figures.busy_wait_s),
            commit_share: share(figures.commit_s),
            misses_per_transaction: figures.cache_misses as f64 / transactions.max(1) as f64,
            cache_hit_ratio: (lookups > 0).then(|| figures.cache_hits as f64 / lookups as f64),
            figures,
        }
    }

    /// Several results' figures as one (a run's shards).
    pub fn sum<'a>(
        each: impl Iterator<Item = &'a EmbeddedWaits>,
        transactions: u64,
    ) -> Option<EmbeddedWaits> {
        let mut total: Option<(ConnectionFigures, u32)> = None;
        for e in each {
            let (f, n) = total.get_or_insert_with(Default::default);
            f.add(&e.figures);
            *n += e.connections;
        }
        total.map(|(f, n)| EmbeddedWaits::of(f, n, transactions))
    }

    /// The summary's line: where the clients' time went, by the connections' own counts.
    pub fn summary(&self) -> String {
        let f = &self.figures;
        format!(
            "engine's connections ({}, {:.1} s of clients' time): {:.0}% waiting for the database lock ({} waits, {} retries, {} gave up), {:.0}% in COMMIT ({} commits, {} checkpoints in {:.3} s); page cache {} hits, {} misses ({:.2} a transaction), {} writes, {} spills",
            self.connections,
            f.wall_s,
            100.0 * self.lock_share,
            f.busy_waits,
            f.busy_retries,
            f.busy_timeouts,
            100.0 * self.commit_share,
            f.commits,
            f.checkpoints,
            f.checkpoint_s,
            f.cache_hits,
            f.cache_misses,
            self.misses_per_transaction,
            f.cache_writes,
            f.cache_spills
        )
    }
}

/// The rule for an engine that runs in the clients' own threads, over the clients' time (each
/// client's measured window): (1) at least half of it waiting for the database's lock: locks;
/// (2) at least half of it in COMMIT (the log's write and sync): commit flushes; (3) the two
/// together at least half of it: mixed, both named; (4) at least one page cache miss per
/// transaction (each a read through the file system): data reads; (5) else the clients'
/// own CPU, which for an embedded engine is the engine's work as well as dbduel's. Without
/// figures or measured time: not determined, `absent` saying why.
pub fn verdict(e: Option<&EmbeddedWaits>, absent: &str) -> Verdict {
    let make = |limiter: &str, says: String| Verdict {
        limiter: limiter.into(),
        says,
    };
    let Some(e) = e.filter(|e| e.figures.wall_s > 0.0) else {
        return make("not_determined", format!("not determined: {absent}"));
    };
    let (lock, commit) = (100.0 * e.lock_share, 100.0 * e.commit_share);
    let shares = format!(
        "{lock:.0}% of the clients' time waiting for the database lock, {commit:.0}% in COMMIT, {:.2} cache misses a transaction; the connections' own counts",
        e.misses_per_transaction
    );
    if e.lock_share >= 0.5 {
        return make(
            "lock",
            format!(
                "locks: the clients waited for the database's lock ({shares}; {} waits)",
                e.figures.busy_waits
            ),
        );
    }
    if e.commit_share >= 0.5 {
        return make(
            "commit",
            format!("commit flushes (the log's writes and syncs in COMMIT) ({shares})"),
        );
    }
    if e.lock_share + e.commit_share >= 0.5 {
        return make(
            "mixed",
            format!("no one limiter: lock {lock:.0}%, commit {commit:.0}% ({shares})"),
        );
    }
    if e.misses_per_transaction >= MISSES_PER_TRANSACTION {
        return make(
            "data_read",
            format!(
                "data reads: pages not in the connections' cache, read from the files ({shares})"
            ),
        );
    }
    make(
        "cpu",
        format!(
            "the clients' CPU, which runs the embedded engine's work as well as dbduel's ({shares})"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(busy: f64, commit: f64, misses: u64) -> EmbeddedWaits {
        let f = ConnectionFigures {
            busy_wait_s: busy,
            busy_waits: 7,
            commit_s: commit,
            cache_hits: 900,
            cache_misses: misses,
            wall_s: 10.0,
            ..ConnectionFigures::default()
        };
        EmbeddedWaits::of(f, 4, 100)
    }

    fn limiter(e: &EmbeddedWaits) -> String {
        verdict(Some(e), "").limiter
    }

    #[test]
    fn the_rule_in_its_order() {
        let locked = run(6.0, 3.0, 500);
        assert_eq!(limiter(&locked), "lock");
        let says = verdict(Some(&locked), "").says;
        assert!(says.contains("60% of the clients' time waiting"), "{says}");
        assert!(says.contains("7 waits"), "{says}");
        // Exactly half is enough; the lock comes before COMMIT.
        assert_eq!(limiter(&run(5.0, 5.0, 0)), "lock");
        assert_eq!(limiter(&run(1.0, 5.0, 0)), "commit");
        // Neither at half, both together: mixed.
        let mixed = verdict(Some(&run(3.0, 3.0, 0)), "");
        assert_eq!(mixed.limiter, "mixed");
        assert!(
            mixed.says.contains("lock 30%, commit 30%"),
            "{}",
            mixed.says
        );
        // Then the reads: one miss a transaction.
        assert_eq!(limiter(&run(1.0, 1.0, 100)), "data_read");
        assert_eq!(limiter(&run(1.0, 1.0, 99)), "cpu");
    }

    #[test]
    fn the_shares_are_of_the_clients_time() {
        let e = run(2.5, 1.0, 100);
        assert_eq!(e.lock_share, 0.25);
        assert_eq!(e.commit_share, 0.1);
        assert_eq!(e.misses_per_transaction, 1.0);
        assert_eq!(e.cache_hit_ratio, Some(0.9));
        let both = EmbeddedWaits::sum([&e, &e].into_iter(), 200).unwrap();
        assert_eq!((both.connections, both.lock_share), (8, 0.25));
        assert_eq!(both.misses_per_transaction, 1.0);
    }

    #[test]
    fn no_figures_or_no_time_is_not_determined_and_says_why() {
        let v = verdict(None, "wait sampling was off");
        assert_eq!(v.limiter, "not_determined");
        assert!(v.says.contains("wait sampling was off"));
        let empty = EmbeddedWaits::of(ConnectionFigures::default(), 1, 0);
        assert_eq!(verdict(Some(&empty), "x").limiter, "not_determined");
    }
}
