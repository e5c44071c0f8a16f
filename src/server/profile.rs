//! Configuration profiles: `default` (as shipped), `tuned` (computed from the machine's RAM
//! and cores and the dataset's size, with the rules the seeds and the engines' documentation
//! give), `unsafe` (tuned, with durability off: labelled unsafe wherever its numbers appear),
//! and user profiles (knob = value per engine) from a plan file. The rules are each engine's
//! own `Tuning`, kept with its server kind (or, embedded, in `server::EMBEDDED`).
//!
//! A profile is data: knobs per engine. A sweep passes a managed server's knobs on its command
//! line (so a rejected knob stops the server with its own message) and an embedded engine's as
//! DSN parameters; the settings in effect are read back from the server for every point.

use std::collections::BTreeMap;

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

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

/// The profile rules of one engine: what `tuned` sets from the facts, what `unsafe` changes
/// on top of it, and the knob that admits connections. A managed server kind carries its own
/// (`ServerKind::tuning`); an embedded engine's are listed in `server::EMBEDDED`.
pub struct Tuning {
    /// The engine (registry name) the knobs are for.
    pub engine: &'static str,
    /// The knobs of the `tuned` profile.
    pub tuned: fn(&Facts) -> Vec<(String, String)>,
    /// What `unsafe` sets on top of `tuned` (durability off), replacing a tuned value.
    pub durability_off: &'static [(&'static str, &'static str)],
    /// The setting that limits connections and the value the engine ships with, where the
    /// plan's clients may need more.
    pub connections: Option<(&'static str, u64)>,
    /// The knobs `dbduel tune` searches, with the values it tries (`Knob`).
    pub space: fn(&Facts) -> Vec<Knob>,
    /// Knobs written as the engine's own configuration (postgresql.conf lines, a my.cnf
    /// section, firebird.conf lines, SQLite's PRAGMAs), as `dbduel tune` gives its winner.
    pub config: fn(&[(String, String)]) -> String,
    /// A published heuristic's recommendation for this machine (PostgreSQL: pgtune's rules),
    /// which `dbduel tune` measures beside `default` and `tuned`; none where the engine has no
    /// such rules that need no running server.
    pub recommended: Option<Recommended>,
}

/// Knobs from the machine's facts and the directory of the server's binaries.
pub type RecommendedKnobs = fn(&Facts, Option<&std::path::Path>) -> Vec<(String, String)>;

/// A heuristic tuner's configuration, computed from the machine's facts and the server's
/// major version (from its binaries in `bin_dir` or the usual places; None when not found).
#[derive(Debug, Clone, Copy)]
pub struct Recommended {
    /// The candidate's name in the search (`pgtune`).
    pub name: &'static str,
    /// The rules it follows, as the summary cites them.
    pub rules: &'static str,
    pub knobs: RecommendedKnobs,
}

/// Knobs as `NAME<sep>VALUE` lines under a heading of comment lines and a first line.
pub fn config_lines(
    heading: &str,
    first: &str,
    knobs: &[(String, String)],
    line: impl Fn(&str, &str) -> String,
) -> String {
    let mut out = format!("{heading}\n{first}");
    for (k, v) in knobs {
        out += &line(k, v);
        out.push('\n');
    }
    out
}

/// One knob of an engine's search space (`dbduel tune`): the values to try, the first the one
/// the engine ships with, each within the machine's facts; `durability` when a value other
/// than the first may lose commits or the data in a crash (tried only under UNSAFE).
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    pub name: String,
    pub values: Vec<String>,
    pub durability: bool,
}

impl Knob {
    pub fn new(name: &str, values: &[&str]) -> Knob {
        Knob {
            name: name.to_string(),
            values: values.iter().map(|v| v.to_string()).collect(),
            durability: false,
        }
    }

    /// A knob whose values other than the first give up durability.
    pub fn durability(name: &str, values: &[&str]) -> Knob {
        Knob {
            durability: true,
            ..Knob::new(name, values)
        }
    }

    /// Sizes in MiB written with `unit` ("MB", "M"): the shipped one first, then each of
    /// `tries` within [`floor`, `ceiling`], rounded to a power of two, each once.
    pub fn sizes(name: &str, shipped: &str, tries: &[u64], ceiling: u64, unit: &str) -> Knob {
        let mut values = vec![shipped.to_string()];
        for &b in tries {
            // A power of two, the one below when rounding up would pass the ceiling (a
            // buffer pool of 32 GB on a machine of 24 is not a candidate).
            let mut mib = mb(b.min(ceiling)).max(1).next_power_of_two();
            if mib > 1 && mib * MIB > ceiling {
                mib /= 2;
            }
            let v = format!("{mib}{unit}");
            if !values.contains(&v) {
                values.push(v);
            }
        }
        Knob {
            name: name.to_string(),
            values,
            durability: false,
        }
    }
}

/// A built-in profile for the given facts, or None when `name` is not built in.
pub fn builtin(name: &str, facts: &Facts) -> Option<Profile> {
    let unsafe_profile = match name {
        "default" | "tuned" => false,
        "unsafe" => true,
        _ => return None,
    };
    let knobs = super::tunings()
        .map(|t| {
            let mut knobs = if name == "default" {
                vec![]
            } else {
                (t.tuned)(facts)
            };
            if unsafe_profile {
                for (key, value) in t.durability_off {
                    knobs.retain(|(k, _)| k != key);
                    knobs.push((key.to_string(), value.to_string()));
                }
            }
            (t.engine.to_string(), knobs)
        })
        .collect();
    Some(Profile {
        name: name.into(),
        unsafe_profile,
        knobs,
    })
}

/// Knobs every profile needs to run the plan at all (not tuning): enough connections.
pub fn required(engine: &str, facts: &Facts) -> Vec<(String, String)> {
    let needed = facts.max_clients as u64 + 10;
    match super::tunings().find(|t| t.engine == engine) {
        Some(Tuning {
            connections: Some((knob, shipped)),
            ..
        }) if needed > *shipped => pairs(&[(knob, &needed.to_string())]),
        _ => vec![],
    }
}

pub fn pairs(kv: &[(&str, &str)]) -> Vec<(String, String)> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn mb(bytes: u64) -> u64 {
    bytes.div_ceil(MIB)
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
    fn sizes_stay_under_their_ceiling() {
        let ram = 23 * GIB + GIB / 2;
        let k = Knob::sizes("pool", "128M", &[GIB, ram * 4 / 5, ram], ram * 4 / 5, "M");
        // 80% of 23.5 GiB rounds up to 32 GiB, past the ceiling: 16 GiB instead, once.
        assert_eq!(k.values, vec!["128M", "1024M", "16384M"]);
        let k = Knob::sizes("cache", "4096MB", &[ram * 3 / 4], ram, "MB");
        assert_eq!(k.values, vec!["4096MB", "16384MB"]);
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

    #[test]
    fn each_engine_brings_its_own_rules() {
        for t in super::super::tunings() {
            assert!(crate::engine::named(t.engine).is_some(), "{}", t.engine);
        }
        for k in super::super::KINDS {
            assert_eq!(k.tuning.engine, k.engine);
        }
        let p = builtin("unsafe", &facts(8, 100)).unwrap();
        assert_eq!(knob(&p, "sqlite", "synchronous"), "OFF");
        assert_eq!(knob(&p, "sqlite", "journal_mode"), "WAL");
        assert!(!knob(&p, "firebird", "DefaultDbCachePages").is_empty());
        let default = builtin("default", &facts(8, 100)).unwrap();
        let engines: Vec<&str> = default.knobs.keys().map(String::as_str).collect();
        assert_eq!(engines, ["firebird", "mysql", "postgres", "sqlite"]);
        assert!(default.knobs.values().all(Vec::is_empty));
        let many = Facts {
            max_clients: 120,
            ..facts(8, 100)
        };
        assert_eq!(
            required("postgres", &many),
            pairs(&[("max_connections", "130")])
        );
        assert!(required("mysql", &many).is_empty());
        assert!(required("sqlite", &many).is_empty());
    }
}
