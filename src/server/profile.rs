//! Configuration profiles: `default` (as shipped), `tuned` (computed from the machine's RAM
//! and cores and the dataset's size, with the rules the seeds and the engines' documentation
//! give), `unsafe` (tuned, with durability off: labelled unsafe wherever its numbers appear),
//! and user profiles (knob = value per engine) from a plan file.

use std::collections::BTreeMap;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// What tuning depends on.
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    pub ram_bytes: u64,
    pub cores: usize,
    /// Estimated size of the loaded dataset.
    pub dataset_bytes: u64,
    /// The most clients any point of the plan runs.
    pub max_clients: u32,
}

/// A named set of knobs per engine.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    pub name: String,
    pub unsafe_profile: bool,
    /// engine -> (knob, value), in order.
    pub knobs: BTreeMap<String, Vec<(String, String)>>,
}

pub const BUILTIN: &[&str] = &["default", "tuned", "unsafe"];

/// A built-in profile for the given facts, or None when `name` is not built in.
pub fn builtin(name: &str, facts: &Facts) -> Option<Profile> {
    let knobs =
        |pg: Vec<(String, String)>, my: Vec<(String, String)>, lite: Vec<(String, String)>| {
            BTreeMap::from([
                ("postgres".to_string(), pg),
                ("mysql".to_string(), my),
                ("sqlite".to_string(), lite),
                (
                    "firebird".to_string(),
                    if name == "default" {
                        vec![]
                    } else {
                        fb_tuned(facts)
                    },
                ),
            ])
        };
    let profile = match name {
        "default" => Profile {
            name: name.into(),
            unsafe_profile: false,
            knobs: knobs(vec![], vec![], vec![]),
        },
        "tuned" => Profile {
            name: name.into(),
            unsafe_profile: false,
            knobs: knobs(pg_tuned(facts), my_tuned(facts), lite_tuned(facts)),
        },
        "unsafe" => {
            let mut pg = pg_tuned(facts);
            pg.extend(pairs(&[
                ("fsync", "off"),
                ("synchronous_commit", "off"),
                ("full_page_writes", "off"),
            ]));
            let mut my = my_tuned(facts);
            my.extend(pairs(&[
                ("innodb_flush_log_at_trx_commit", "0"),
                ("innodb_doublewrite", "0"),
                ("sync_binlog", "0"),
            ]));
            let mut lite = lite_tuned(facts);
            lite.retain(|(k, _)| k != "synchronous");
            lite.extend(pairs(&[("synchronous", "OFF")]));
            Profile {
                name: name.into(),
                unsafe_profile: true,
                knobs: knobs(pg, my, lite),
            }
        }
        _ => return None,
    };
    Some(profile)
}

/// Knobs every profile needs to run the plan at all (not tuning): enough connections.
pub fn required(engine: &str, facts: &Facts) -> Vec<(String, String)> {
    let needed = facts.max_clients as u64 + 10;
    match engine {
        "postgres" if needed > 100 => pairs(&[("max_connections", &needed.to_string())]),
        "mysql" if needed > 151 => pairs(&[("max_connections", &needed.to_string())]),
        _ => vec![],
    }
}

fn pairs(kv: &[(&str, &str)]) -> Vec<(String, String)> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn mb(bytes: u64) -> u64 {
    bytes.div_ceil(MIB)
}

/// PostgreSQL: shared_buffers a quarter of RAM (but no more than 1.5x the dataset, and at
/// least the shipped 128MB), effective_cache_size three quarters of RAM, work_mem RAM shared
/// by four sorts per connection (4-64MB), room for WAL so checkpoints come from the timeout.
fn pg_tuned(f: &Facts) -> Vec<(String, String)> {
    let shared = (f.dataset_bytes * 3 / 2).clamp(128 * MIB, (f.ram_bytes / 4).max(128 * MIB));
    let connections = (f.max_clients as u64 + 10).max(100);
    let work = (f.ram_bytes / (4 * connections)).clamp(4 * MIB, 64 * MIB);
    let maintenance = (f.ram_bytes / 16).clamp(64 * MIB, GIB);
    let max_wal = (f.dataset_bytes * 2).clamp(GIB, 16 * GIB);
    pairs(&[
        ("shared_buffers", &format!("{}MB", mb(shared))),
        (
            "effective_cache_size",
            &format!("{}MB", mb(f.ram_bytes * 3 / 4)),
        ),
        ("work_mem", &format!("{}MB", mb(work))),
        ("maintenance_work_mem", &format!("{}MB", mb(maintenance))),
        ("wal_buffers", "16MB"),
        ("max_wal_size", &format!("{}MB", mb(max_wal))),
        ("min_wal_size", "512MB"),
        ("checkpoint_timeout", "15min"),
        ("checkpoint_completion_target", "0.9"),
    ])
}

/// MariaDB: the InnoDB buffer pool at 80% of RAM, or the dataset plus 10% when that is
/// smaller (seed 000; never under the shipped 128M); a redo log a quarter of the pool
/// (96M-1G); O_DIRECT. MariaDB 10.5+ has one buffer pool instance, so there is no
/// instances-per-core knob to set. MyISAM's key buffer and Aria's page cache get a quarter of
/// the dataset (at least 128M).
fn my_tuned(f: &Facts) -> Vec<(String, String)> {
    let pool = (f.dataset_bytes * 11 / 10).clamp(128 * MIB, (f.ram_bytes * 4 / 5).max(128 * MIB));
    let log = (pool / 4).clamp(96 * MIB, GIB);
    let keys = (f.dataset_bytes / 4).clamp(128 * MIB, (f.ram_bytes / 4).max(128 * MIB));
    pairs(&[
        ("innodb_buffer_pool_size", &format!("{}M", mb(pool))),
        ("innodb_log_file_size", &format!("{}M", mb(log))),
        ("innodb_log_buffer_size", "64M"),
        ("innodb_flush_method", "O_DIRECT"),
        ("key_buffer_size", &format!("{}M", mb(keys))),
        ("aria_pagecache_buffer_size", &format!("{}M", mb(keys))),
    ])
}

/// Firebird (firebird.conf): SuperServer's shared page cache holds the dataset plus 10% (in
/// 16 KiB pages, at most a quarter of RAM, never under the shipped 2048 pages), the OS cache
/// stays in use for files up to that size, and the lock manager gets more hash slots and
/// memory for many connections. Firebird's durability switch (forced writes) belongs to each
/// database, not to the server, so `unsafe` adds nothing to `tuned` here.
fn fb_tuned(f: &Facts) -> Vec<(String, String)> {
    let pages = ((f.dataset_bytes * 11 / 10).min(f.ram_bytes / 4) / (16 * 1024)).max(2048);
    pairs(&[
        ("DefaultDbCachePages", &pages.to_string()),
        ("FileSystemCacheThreshold", &pages.max(65_536).to_string()),
        ("LockHashSlots", "30011"),
        ("LockMemSize", "8M"),
        ("TempCacheLimit", "256M"),
    ])
}

/// SQLite (DSN parameters): WAL with synchronous=NORMAL, the recommended pairing, and a page
/// cache that holds the dataset plus 10% (at most a quarter of RAM).
fn lite_tuned(f: &Facts) -> Vec<(String, String)> {
    let cache_kib = (f.dataset_bytes * 11 / 10).min(f.ram_bytes / 4) / 1024;
    pairs(&[
        ("journal_mode", "WAL"),
        ("synchronous", "NORMAL"),
        ("cache_size", &format!("-{}", cache_kib.max(2000))),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(ram_gib: u64, dataset_mib: u64) -> Facts {
        Facts {
            ram_bytes: ram_gib * GIB,
            cores: 2,
            dataset_bytes: dataset_mib * MIB,
            max_clients: 8,
        }
    }

    fn knob(p: &Profile, engine: &str, name: &str) -> String {
        p.knobs[engine]
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    #[test]
    fn tuned_follows_ram_and_dataset() {
        let big = builtin("tuned", &facts(8, 4096)).unwrap();
        assert_eq!(knob(&big, "mysql", "innodb_buffer_pool_size"), "4506M");
        assert_eq!(knob(&big, "postgres", "shared_buffers"), "2048MB");
        let small = builtin("tuned", &facts(24, 16)).unwrap();
        assert_eq!(knob(&small, "mysql", "innodb_buffer_pool_size"), "128M");
        assert_eq!(knob(&small, "postgres", "shared_buffers"), "128MB");
        let mid = builtin("tuned", &facts(24, 1000)).unwrap();
        assert_eq!(knob(&mid, "mysql", "innodb_buffer_pool_size"), "1100M");
    }

    #[test]
    fn unsafe_is_labelled_and_turns_durability_off() {
        let p = builtin("unsafe", &facts(8, 100)).unwrap();
        assert!(p.unsafe_profile);
        assert_eq!(knob(&p, "postgres", "fsync"), "off");
        assert_eq!(knob(&p, "mysql", "innodb_flush_log_at_trx_commit"), "0");
        assert!(!builtin("tuned", &facts(8, 100)).unwrap().unsafe_profile);
        assert!(builtin("nope", &facts(8, 100)).is_none());
    }
}
