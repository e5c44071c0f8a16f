//! SQLite's profile rules. SQLite is embedded: there is no server to manage, and its knobs
//! are DSN parameters (PRAGMAs) given to each session.

use super::profile::{Facts, Tuning, pairs};

pub static TUNING: Tuning = Tuning {
    engine: "sqlite",
    tuned,
    durability_off: &[("synchronous", "OFF")],
    connections: None,
};

/// SQLite (DSN parameters): WAL with synchronous=FULL, which keeps every commit across a power
/// loss as `default` does (NORMAL, the pairing often recommended for speed, may roll the last
/// commits back: it is not durable, so `tuned` does not take it), and a page cache that holds
/// the dataset plus 10% (at most a quarter of RAM).
fn tuned(f: &Facts) -> Vec<(String, String)> {
    let cache_kib = (f.dataset_bytes * 11 / 10).min(f.ram_bytes / 4) / 1024;
    pairs(&[
        ("journal_mode", "WAL"),
        ("synchronous", "FULL"),
        ("cache_size", &format!("-{}", cache_kib.max(2000))),
    ])
}
