//! What a server's settings, as read back with a result, promise for committed transactions:
//! durable (every commit survives a crash of the server, the system or the power), not durable
//! (consistent after a crash, but the last commits may be lost), unsafe (a crash may corrupt the
//! data), or unknown (the settings do not tell). Each engine's rules are its entry's `durability`;
//! the report lets only durable points compete for "fastest" (bold).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// From weakest to strongest, so that the weakest of several is their minimum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// A crash may corrupt the data.
    Unsafe,
    /// Consistent after any crash, but the last committed transactions may be lost.
    NotDurable,
    /// The settings that decide it were not read back.
    #[default]
    Unknown,
    Durable,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Durability {
    pub level: Level,
    /// The settings that make it less than durable, each with what it costs.
    pub why: Vec<String>,
}

impl Durability {
    pub fn durable() -> Durability {
        Durability {
            level: Level::Durable,
            why: vec![],
        }
    }

    /// The weakest of several findings (durable when there are none).
    pub fn of(findings: Vec<(Level, String)>) -> Durability {
        let level = findings
            .iter()
            .map(|(l, _)| *l)
            .min()
            .unwrap_or(Level::Durable);
        let why = findings
            .into_iter()
            .filter(|(l, _)| *l == level)
            .map(|(_, w)| w)
            .collect();
        Durability { level, why }
    }

    /// The weakest of two (a point over repeats is as durable as its weakest run).
    pub fn weakest(self, other: Durability) -> Durability {
        match self.level.cmp(&other.level) {
            std::cmp::Ordering::Less => self,
            std::cmp::Ordering::Greater => other,
            std::cmp::Ordering::Equal => {
                let mut why = self.why;
                for w in other.why {
                    if !why.contains(&w) {
                        why.push(w);
                    }
                }
                Durability {
                    level: self.level,
                    why,
                }
            }
        }
    }

    /// The word a table shows: "durable", "not durable", "UNSAFE", "durability unknown".
    pub fn word(&self) -> &'static str {
        match self.level {
            Level::Durable => "durable",
            Level::NotDurable => "not durable",
            Level::Unsafe => "UNSAFE",
            Level::Unknown => "durability unknown",
        }
    }

    /// The word and its reasons, in one line.
    pub fn text(&self) -> String {
        if self.why.is_empty() {
            self.word().to_string()
        } else {
            format!("{}: {}", self.word(), self.why.join("; "))
        }
    }
}

/// The durability of an engine's settings (by its registry name); unknown for an engine
/// dbduel does not know.
pub fn judge(engine: &str, settings: &BTreeMap<String, String>) -> Durability {
    match super::named(engine).or_else(|| super::entry_for(engine)) {
        Some(entry) => (entry.durability)(settings),
        None => Durability {
            level: Level::Unknown,
            why: vec![format!("no durability rules for engine '{engine}'")],
        },
    }
}

/// A finding that a setting was not read back.
pub fn unread(name: &str) -> (Level, String) {
    (
        Level::Unknown,
        format!("{name} was not read back from the server"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn level(engine: &str, kv: &[(&str, &str)]) -> Level {
        judge(engine, &settings(kv)).level
    }

    #[test]
    fn each_engine_reads_its_settings() {
        let pg = |kv: &[(&str, &str)]| level("postgres", kv);
        let on = [
            ("fsync", "on"),
            ("full_page_writes", "on"),
            ("synchronous_commit", "on"),
        ];
        assert_eq!(pg(&on), Level::Durable);
        assert_eq!(
            pg(&[on[0], on[1], ("synchronous_commit", "off")]),
            Level::NotDurable
        );
        assert_eq!(
            pg(&[("fsync", "off"), on[1], ("synchronous_commit", "off")]),
            Level::Unsafe
        );
        assert_eq!(pg(&[]), Level::Unknown);
        // A database with unlogged tables (pgbench -i --unlogged-tables), whatever the server.
        assert_eq!(
            pg(&[on[0], on[1], on[2], ("unlogged_tables", "4")]),
            Level::Unsafe
        );

        let my = |kv: &[(&str, &str)]| level("mysql", kv);
        let innodb = [
            ("innodb_flush_log_at_trx_commit", "1"),
            ("innodb_doublewrite", "ON"),
            ("innodb_flush_method", "O_DIRECT"),
            ("log_bin", "OFF"),
            ("sync_binlog", "0"),
        ];
        assert_eq!(my(&innodb), Level::Durable);
        let mut two = innodb;
        two[0].1 = "2";
        assert_eq!(my(&two), Level::NotDurable);
        let mut binlog = innodb;
        binlog[3].1 = "ON";
        assert_eq!(my(&binlog), Level::NotDurable);
        let mut torn = innodb;
        torn[1].1 = "OFF";
        assert_eq!(my(&torn), Level::Unsafe);
        let myisam = [innodb[0], innodb[1], ("table_engines", "MyISAM")];
        assert_eq!(my(&myisam), Level::Unsafe);

        let lite = |kv: &[(&str, &str)]| level("sqlite", kv);
        assert_eq!(
            lite(&[("journal_mode", "wal"), ("synchronous", "2")]),
            Level::Durable
        );
        assert_eq!(
            lite(&[("journal_mode", "wal"), ("synchronous", "1")]),
            Level::NotDurable
        );
        assert_eq!(
            lite(&[("journal_mode", "delete"), ("synchronous", "1")]),
            Level::Unsafe
        );
        assert_eq!(
            lite(&[("journal_mode", "wal"), ("synchronous", "0")]),
            Level::Unsafe
        );
        assert_eq!(
            lite(&[("journal_mode", "memory"), ("synchronous", "2")]),
            Level::Unsafe
        );

        let fb = |kv: &[(&str, &str)]| level("firebird", kv);
        assert_eq!(fb(&[("forced_writes", "1")]), Level::Durable);
        assert_eq!(fb(&[("forced_writes", "0")]), Level::Unsafe);
    }

    #[test]
    fn the_weakest_wins() {
        let not = Durability::of(vec![(Level::NotDurable, "a".into())]);
        let bad = Durability::of(vec![(Level::Unsafe, "b".into())]);
        assert_eq!(not.clone().weakest(bad.clone()), bad);
        assert_eq!(Durability::durable().weakest(not.clone()), not);
        assert_eq!(Durability::of(vec![]).level, Level::Durable);
    }
}
