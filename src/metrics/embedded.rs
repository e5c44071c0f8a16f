//! What limited a run on an embedded engine (SQLite), which has no server to sample: the
//! clients' connections' own figures over the measured window (`engine::figures`), summed over
//! the run's connections, as shares of the clients' time, and one stated rule (`verdict`).

use serde::{Deserialize, Serialize};

use crate::engine::figures::ConnectionFigures;
use crate::metrics::waits::Verdict;

/// Cache misses per transaction from which a run's reads are its limit (`verdict`).
const MISSES_PER_TRANSACTION: f64 = 1.0;

/// Bytes read from storage per cache miss below which the misses were the operating system's
/// cache's to serve (`verdict`): SQLite's smallest page, an eighth of its default one.
const STORAGE_BYTES_PER_MISS: f64 = 512.0;

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
    /// Bytes the client threads read from storage over the measured window (what the
    /// operating system's cache did not serve; None where the kernel does not count them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_read_bytes: Option<u64>,
}

impl EmbeddedWaits {
    /// The shares of `figures` summed over `connections`, for `transactions` measured, with
    /// the client threads' reads from storage.
    pub fn of(
        figures: ConnectionFigures,
        connections: u32,
        transactions: u64,
        storage_read_bytes: Option<u64>,
    ) -> EmbeddedWaits {
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
            storage_read_bytes,
        }
    }

    /// Bytes read from storage per page cache miss, where both are known.
    pub fn storage_bytes_per_miss(&self) -> Option<f64> {
        let misses = self.figures.cache_misses;
        self.storage_read_bytes
            .filter(|_| misses > 0)
            .map(|b| b as f64 / misses as f64)
    }

    /// Several results' figures as one (a run's shards).
    pub fn sum<'a>(
        each: impl Iterator<Item = &'a EmbeddedWaits>,
        transactions: u64,
    ) -> Option<EmbeddedWaits> {
        let mut total: Option<(ConnectionFigures, u32, Option<u64>)> = None;
        for e in each {
            let (f, n, reads) = total.get_or_insert((Default::default(), 0, Some(0)));
            f.add(&e.figures);
            *n += e.connections;
            *reads = reads.zip(e.storage_read_bytes).map(|(a, b)| a + b);
        }
        total.map(|(f, n, reads)| EmbeddedWaits::of(f, n, transactions, reads))
    }

    /// The summary's line: where the clients' time went, by the connections' own counts.
    pub fn summary(&self) -> String {
        let f = &self.figures;
        format!(
            "engine's connections ({}, {:.1} s of clients' time): {:.0}% waiting for the database lock ({} waits, {} retries, {} gave up), {:.0}% in COMMIT ({} commits, {} checkpoints in {:.3} s); page cache {} hits, {} misses ({:.2} a transaction{}), {} writes, {} spills",
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
            self.storage_read_bytes
                .map(|b| format!(", {} read from storage", bytes(b)))
                .unwrap_or_default(),
            f.cache_writes,
            f.cache_spills
        )
    }
}

/// Bytes as the summary says them: "812 kB", "3.4 MB".
fn bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / f64::from(1 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.0} kB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
}

/// The rule for an engine that runs in the clients' own threads, over the clients' time (each
/// client's measured window): (1) at least half of it waiting for the database's lock: locks;
/// (2) at least half of it in COMMIT (the log's write and sync): commit flushes; (3) the two
/// together at least half of it: mixed, both named; (4) at least one page cache miss per
/// transaction (each a read through the file system): data reads, unless the client threads
/// read less than `STORAGE_BYTES_PER_MISS` from storage a miss (the operating system's cache
/// served them: each miss is then a system call and a copy, the clients' CPU, and (5) says
/// so); (5) else the clients' own CPU, which for an embedded engine is the engine's work as
/// well as dbduel's. Without figures or measured time: not determined, `absent` saying why.
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
    let per_miss = e.storage_bytes_per_miss();
    let missed = e.misses_per_transaction >= MISSES_PER_TRANSACTION;
    if missed && per_miss.is_none_or(|b| b >= STORAGE_BYTES_PER_MISS) {
        let storage = match (per_miss, e.storage_read_bytes) {
            (Some(b), Some(all)) => format!("{} from storage, {b:.0} B a miss", bytes(all)),
            _ => "the reads from storage not counted by this kernel".into(),
        };
        return make(
            "data_read",
            format!(
                "data reads: pages not in the connections' cache, read from the files ({shares}; {storage})"
            ),
        );
    }
    let served = match per_miss.filter(|_| missed) {
        Some(b) => format!(
            "; its cache's misses were served by the operating system's cache, {b:.0} B a miss from storage: a larger cache_size would save their system calls"
        ),
        None => String::new(),
    };
    make(
        "cpu",
        format!(
            "the clients' CPU, which runs the embedded engine's work as well as dbduel's ({shares}{served})"
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
        EmbeddedWaits::of(f, 4, 100, None)
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
    fn misses_the_operating_systems_cache_served_are_the_clients_cpu() {
        let mut e = run(1.0, 1.0, 100);
        // A page from storage for each miss: data reads, with the bytes said.
        e.storage_read_bytes = Some(100 * 4096);
        let v = verdict(Some(&e), "");
        assert_eq!(v.limiter, "data_read");
        assert!(
            v.says.contains("400 kB from storage, 4096 B a miss"),
            "{}",
            v.says
        );
        // At the bound, still from storage; under it, the operating system's cache served
        // them.
        e.storage_read_bytes = Some(100 * 512);
        assert_eq!(limiter(&e), "data_read");
        e.storage_read_bytes = Some(100 * 511);
        let v = verdict(Some(&e), "");
        assert_eq!(v.limiter, "cpu");
        assert!(
            v.says
                .contains("served by the operating system's cache, 511 B a miss"),
            "{}",
            v.says
        );
        e.storage_read_bytes = Some(0);
        assert_eq!(limiter(&e), "cpu");
        // Not counted: the misses alone decide, and the verdict says the reads are unknown.
        e.storage_read_bytes = None;
        let v = verdict(Some(&e), "");
        assert_eq!(v.limiter, "data_read");
        assert!(v.says.contains("not counted"), "{}", v.says);
        // Few misses: the CPU, with nothing said of the operating system's cache.
        let mut few = run(1.0, 1.0, 10);
        few.storage_read_bytes = Some(0);
        let v = verdict(Some(&few), "");
        assert!(
            v.limiter == "cpu" && !v.says.contains("operating system"),
            "{}",
            v.says
        );
        assert!(
            e.summary().contains("misses (1.00 a transaction)"),
            "{}",
            e.summary()
        );
        let mut read = run(1.0, 1.0, 100);
        read.storage_read_bytes = Some(3 << 20);
        assert!(
            read.summary()
                .contains("(1.00 a transaction, 3.0 MB read from storage)"),
            "{}",
            read.summary()
        );
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
        // Storage reads add up where every shard counted them.
        assert_eq!(both.storage_read_bytes, None);
        let mut read = e.clone();
        read.storage_read_bytes = Some(7);
        let both = EmbeddedWaits::sum([&read, &read].into_iter(), 200).unwrap();
        assert_eq!(both.storage_read_bytes, Some(14));
    }

    #[test]
    fn no_figures_or_no_time_is_not_determined_and_says_why() {
        let v = verdict(None, "wait sampling was off");
        assert_eq!(v.limiter, "not_determined");
        assert!(v.says.contains("wait sampling was off"));
        let empty = EmbeddedWaits::of(ConnectionFigures::default(), 1, 0, None);
        assert_eq!(verdict(Some(&empty), "x").limiter, "not_determined");
    }
}
