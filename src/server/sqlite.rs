//! SQLite's profile rules. SQLite is embedded: there is no server to manage, and its knobs
//! are DSN parameters (PRAGMAs) given to each session.

use super::profile::{Facts, Knob, Tuning, config_lines, pairs};

pub static TUNING: Tuning = Tuning {
    engine: "sqlite",
    tuned,
    durability_off: &[("synchronous", "OFF")],
    connections: None,
    space,
    config,
    recommended: None,
};

/// PRAGMAs for each connection (or dbduel's DSN parameters of the same names).
fn config(knobs: &[(String, String)]) -> String {
    config_lines(
        "-- SQLite: the PRAGMAs dbduel tune chose, for each connection (journal_mode persists in the file)",
        "",
        knobs,
        |k, v| format!("PRAGMA {k} = {v};"),
    )
}

/// What `dbduel tune` searches on SQLite (DSN parameters): the journal (WAL, or a rollback
/// journal deleted or truncated at each commit) and the page cache up to a quarter of RAM;
/// synchronous below FULL only under UNSAFE (with WAL, NORMAL may lose the last commits).
fn space(f: &Facts) -> Vec<Knob> {
    let most = f.ram_bytes / 4 / 1024;
    let mut cache = vec!["-2000".to_string()];
    for kib in [16_384, 65_536, f.dataset_bytes * 11 / 10 / 1024] {
        let v = format!("-{}", kib.clamp(2000, most.max(2000)));
        if !cache.contains(&v) {
            cache.push(v);
        }
    }
    vec![
        Knob::new("journal_mode", &["WAL", "DELETE", "TRUNCATE"]),
        Knob {
            name: "cache_size".into(),
            values: cache,
            durability: false,
        },
        Knob::durability("synchronous", &["FULL", "NORMAL", "OFF"]),
    ]
}

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
