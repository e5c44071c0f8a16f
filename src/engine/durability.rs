//! What a server's settings, as read back with a result, promise for committed transactions:
//! durable (every commit survives a crash of the server, the system or the power), not durable
//! (consistent after a crash, but the last commits may be lost), unsafe (a crash may corrupt the
//! data), or unknown (the settings do not tell). Each engine's rules are its entry's `durability`;
//! the report lets only durable points compete for "fastest" (bold). A run's durability
//! (`of_run`) is also as weak as the settings read again at its end and as what its clients'
//! own statements set (a script's `SET synchronous_commit = off`, `PRAGMA synchronous = OFF`,
//! `SET GLOBAL innodb_flush_log_at_trx_commit = 0`).

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

/// A run's durability: the settings read before it (`before`), made as weak as those read again
/// at its end (`after`, None when they could not be read) and as what the clients' statements
/// set (`statements`: where each is, and its text; one that sets a judged setting to a value
/// known only at run time makes it unknown).
pub fn of_run(
    engine: &str,
    before: &BTreeMap<String, String>,
    after: Option<&BTreeMap<String, String>>,
    statements: &[(String, String)],
) -> Durability {
    let judged = judge(engine, before);
    let mut run = judged.clone();
    let weaker = |run: Durability, settings: &BTreeMap<String, String>, by: &str| {
        let d = judge(engine, settings);
        if d.level >= judged.level {
            return run;
        }
        let why = d
            .why
            .into_iter()
            .filter(|w| !judged.why.contains(w))
            .map(|w| format!("{w} ({by})"))
            .collect();
        run.weakest(Durability {
            level: d.level,
            why,
        })
    };
    if let Some(after) = after {
        let changed: Vec<String> = before
            .iter()
            .filter_map(|(k, v)| {
                let now = after.get(k)?;
                (now != v).then(|| format!("{k} {v} -> {now}"))
            })
            .collect();
        if !changed.is_empty() {
            // What was read again over what was read before: a setting not read again is not
            // taken as changed.
            let mut now = before.clone();
            now.extend(
                after
                    .iter()
                    .filter(|(k, _)| before.contains_key(*k))
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
            run = weaker(
                run,
                &now,
                &format!("changed during the run: {}", changed.join(", ")),
            );
        }
    }
    for (place, sql) in statements {
        let Some((name, value)) = setting_set(sql) else {
            continue;
        };
        if !before.contains_key(&name) {
            continue;
        }
        match value {
            None => {
                run = run.weakest(Durability {
                    level: Level::Unknown,
                    why: vec![format!(
                        "{place} sets {name} to a value known only at run time: the server's settings do not tell what its sessions ran with"
                    )],
                })
            }
            Some(value) => {
                let mut set = before.clone();
                set.insert(name.clone(), value);
                run = weaker(run, &set, &format!("set by {place}"));
            }
        }
    }
    run
}

/// What a statement sets of the server's settings: `SET [SESSION | LOCAL | GLOBAL | PERSIST]
/// name {= | TO} value`, `SET @@[global. | session.]name = value`, `ALTER SYSTEM SET name ...`,
/// `PRAGMA [schema.]name {= value | (value)}`. The name in lower case, and the value unquoted in
/// the form settings are read back in (SQLite's `synchronous` as its number); None for a value
/// that is not a literal (a script's variable).
pub fn setting_set(sql: &str) -> Option<(String, Option<String>)> {
    let spaced: String = sql
        .trim()
        .trim_end_matches(';')
        .chars()
        .flat_map(|c| match c {
            '=' | '(' | ')' | ',' => [' ', c, ' '],
            c => [c, '\0', '\0'],
        })
        .filter(|&c| c != '\0')
        .collect();
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let lower = |i: usize| words.get(i).map(|w| w.to_ascii_lowercase());
    let (name_at, pragma) = match (lower(0)?.as_str(), lower(1).as_deref(), lower(2).as_deref()) {
        ("pragma", _, _) => (1, true),
        ("alter", Some("system"), Some("set")) => (3, false),
        ("set", Some("session" | "local" | "global" | "persist" | "persist_only"), _) => (2, false),
        ("set", _, _) => (1, false),
        _ => return None,
    };
    let raw = lower(name_at)?;
    let name = if pragma {
        // `PRAGMA main.synchronous`: the schema's.
        raw.rsplit('.').next().unwrap_or_default().to_string()
    } else {
        raw.trim_start_matches("@@global.")
            .trim_start_matches("@@session.")
            .trim_start_matches("@@")
            .to_string()
    };
    let mut at = name_at + 1;
    if matches!(lower(at).as_deref(), Some("=" | "to" | "(")) {
        at += 1;
    }
    let value = words.get(at)?.trim_matches(|c| c == '\'' || c == '"');
    if value.starts_with([':', '?', '$', '@']) {
        return Some((name, None));
    }
    let mut value = value.to_ascii_lowercase();
    if name == "synchronous" {
        // SQLite reads it back as a number.
        for (word, n) in [("off", "0"), ("normal", "1"), ("full", "2"), ("extra", "3")] {
            if value == word {
                value = n.into();
            }
        }
    }
    Some((name, Some(value)))
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
    fn statements_that_set_a_setting() {
        let set = |sql: &str| setting_set(sql);
        let some = |n: &str, v: &str| Some((n.to_string(), Some(v.to_string())));
        assert_eq!(
            set("SET synchronous_commit = off;"),
            some("synchronous_commit", "off")
        );
        assert_eq!(
            set("set local synchronous_commit to 'OFF'"),
            some("synchronous_commit", "off")
        );
        assert_eq!(set("ALTER SYSTEM SET fsync = off"), some("fsync", "off"));
        assert_eq!(
            set("SET GLOBAL innodb_flush_log_at_trx_commit=0"),
            some("innodb_flush_log_at_trx_commit", "0")
        );
        assert_eq!(
            set("SET @@global.sync_binlog = 0"),
            some("sync_binlog", "0")
        );
        assert_eq!(set("PRAGMA synchronous=OFF"), some("synchronous", "0"));
        assert_eq!(
            set("pragma main.synchronous(normal)"),
            some("synchronous", "1")
        );
        assert_eq!(
            set("PRAGMA journal_mode = MEMORY"),
            some("journal_mode", "memory")
        );
        assert_eq!(
            set("SET synchronous_commit = :mode"),
            Some(("synchronous_commit".into(), None))
        );
        assert_eq!(set("SELECT 1"), None);
        assert_eq!(set("UPDATE t SET a = 1"), None);
    }

    #[test]
    fn a_run_is_as_durable_as_its_end_and_its_statements() {
        let on = settings(&[
            ("fsync", "on"),
            ("full_page_writes", "on"),
            ("synchronous_commit", "on"),
        ]);
        let none: &[(String, String)] = &[];
        assert_eq!(
            of_run("postgres", &on, Some(&on), none).level,
            Level::Durable
        );
        let script = [(
            "t.sql:2".to_string(),
            "SET synchronous_commit = off".to_string(),
        )];
        let d = of_run("postgres", &on, Some(&on), &script);
        assert_eq!(d.level, Level::NotDurable, "{d:?}");
        assert!(d.text().contains("set by t.sql:2"), "{}", d.text());
        let var = [(
            "t.sql:2".to_string(),
            "SET synchronous_commit = :m".to_string(),
        )];
        assert_eq!(of_run("postgres", &on, None, &var).level, Level::Unknown);
        // A setting no rule reads changes nothing.
        let work = [("t.sql:1".to_string(), "SET work_mem = '1GB'".to_string())];
        assert_eq!(of_run("postgres", &on, None, &work).level, Level::Durable);
        let mut off = on.clone();
        off.insert("fsync".into(), "off".into());
        let d = of_run("postgres", &on, Some(&off), none);
        assert_eq!(d.level, Level::Unsafe);
        assert!(
            d.text().contains("changed during the run: fsync on -> off"),
            "{}",
            d.text()
        );
        let lite = settings(&[("journal_mode", "wal"), ("synchronous", "2")]);
        let pragma = [("s.sql:1".to_string(), "PRAGMA synchronous=OFF".to_string())];
        assert_eq!(of_run("sqlite", &lite, None, &pragma).level, Level::Unsafe);
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
