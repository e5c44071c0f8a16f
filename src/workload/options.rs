//! The workloads' own options: each registry entry's table of `Opt`s (name, help, kind, whether it
//! applies to the data (`prepare`) or the run, default), from which the command line's flags are
//! built (`cli.rs`) and against which every given value is checked, once, here: the flags of
//! `prepare` and `run` and a plan's `[options]` reach a workload as text by name, and `parse` turns
//! them into values or one message that names the option and what to give (unknown names, numbers,
//! switches, choices).

use std::collections::BTreeMap;

use crate::error::Error;

/// What an option's value is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A whole number of at least 1.
    Count,
    /// A whole number, 0 included.
    Number,
    /// A number with decimals.
    Decimal,
    /// `on` or `off` (also true/false, 1/0).
    OnOff,
    /// A flag: given or not (`--procedures`; `procedures = true` in a plan).
    Flag,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// Any text the workload reads itself (TPC-H's `--queries 1,6,14`).
    Text,
}

/// When an option applies: to the data (`prepare`, and `run` on a temporary database) or to
/// the run only.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    Data,
    Run,
}

/// One option of a workload.
#[derive(Debug)]
pub struct Opt {
    /// Its name, with `_` between words: `--table-size` and `--table_size` on the command
    /// line, `table-size` or `table_size` in a plan.
    pub name: &'static str,
    pub short: Option<char>,
    pub help: &'static str,
    pub kind: Kind,
    pub phase: Phase,
    /// The value when it is not given, as help shows it ("" when there is none to show).
    pub default: &'static str,
    /// The value's name in help (`N`, `SECONDS`, `LIST`).
    pub value_name: &'static str,
}

/// A workload's options, under the heading its flags have in help.
#[derive(Debug)]
pub struct Table {
    /// Help's heading for these flags ("sysbench options"); also how messages name the
    /// workloads that take them ("the sysbench workloads").
    pub heading: &'static str,
    pub who: &'static str,
    pub opts: &'static [Opt],
}

/// The table of a workload without options of its own.
pub const NONE: Table = Table {
    heading: "",
    who: "",
    opts: &[],
};

impl Table {
    pub fn get(&self, name: &str) -> Option<&'static Opt> {
        self.opts.iter().find(|o| o.name == name)
    }
}

/// The flag's spelling on the command line: `--table-size`.
pub fn flag(name: &str) -> String {
    format!("--{}", name.replace('_', "-"))
}

/// The options given to a workload, checked: every name is one of its table's and every value
/// of its kind.
#[derive(Debug, Default)]
pub struct Given {
    values: BTreeMap<&'static str, String>,
}

/// Check what was given (by name, `-` or `_` between words) against a workload's table.
/// `workload` names it in the message of an option it does not take.
pub fn parse(
    table: &Table,
    workload: &str,
    given: &BTreeMap<String, String>,
) -> Result<Given, Error> {
    let mut values = BTreeMap::new();
    for (name, value) in given {
        let key = name.replace('-', "_");
        let Some(opt) = table.get(&key) else {
            let owner = super::all()
                .map(|w| w.options)
                .find(|t| t.get(&key).is_some())
                .map_or(String::new(), |t| format!(": it is an option of {}", t.who));
            return Err(Error::Usage(format!(
                "{} does not apply to {workload}{owner} (see `dbduel run --help`)",
                flag(&key)
            )));
        };
        values.insert(opt.name, check(opt, value.trim())?);
    }
    Ok(Given { values })
}

/// The value in its canonical text (`on`/`off` for switches), or the message naming what to
/// give.
fn check(opt: &Opt, v: &str) -> Result<String, Error> {
    let f = flag(opt.name);
    let bad = |what: String| Err(Error::Usage(format!("{f} '{v}': {what}")));
    match opt.kind {
        Kind::Count => match v.parse::<u64>() {
            Ok(0) => Err(Error::Usage(format!("{f} must be at least 1"))),
            Ok(n) => Ok(n.to_string()),
            Err(_) => bad("give a whole number of at least 1".into()),
        },
        Kind::Number => match v.parse::<u64>() {
            Ok(n) => Ok(n.to_string()),
            Err(_) => bad("give a whole number".into()),
        },
        Kind::Decimal => match v.parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(v.to_string()),
            _ => bad("give a number".into()),
        },
        Kind::OnOff | Kind::Flag => match v {
            "on" | "true" | "1" => Ok("on".into()),
            "off" | "false" | "0" => Ok("off".into()),
            _ => bad("use on or off".into()),
        },
        Kind::Choice(words) => {
            if words.contains(&v) {
                Ok(v.to_string())
            } else if let [a, b] = words {
                bad(format!("use {a} or {b}"))
            } else {
                bad(format!("use one of {}", words.join(", ")))
            }
        }
        Kind::Text => Ok(v.to_string()),
    }
}

impl Given {
    /// Whether the option was given (a flag given `off` counts as not given).
    pub fn has(&self, name: &str) -> bool {
        self.values.get(name).is_some_and(|v| v != "off")
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A Count's or a Number's value.
    pub fn number(&self, name: &str) -> Option<u64> {
        self.text(name).and_then(|v| v.parse().ok())
    }

    pub fn decimal(&self, name: &str) -> Option<f64> {
        self.text(name).and_then(|v| v.parse().ok())
    }

    /// An OnOff's value, or `default` when it was not given.
    pub fn on(&self, name: &str, default: bool) -> bool {
        self.text(name).map_or(default, |v| v == "on")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Table = Table {
        heading: "test options",
        who: "test",
        opts: &[
            Opt {
                name: "warehouses",
                short: Some('w'),
                help: "",
                kind: Kind::Count,
                phase: Phase::Data,
                default: "1",
                value_name: "N",
            },
            Opt {
                name: "point_selects",
                short: None,
                help: "",
                kind: Kind::Number,
                phase: Phase::Run,
                default: "10",
                value_name: "N",
            },
            Opt {
                name: "skip_trx",
                short: None,
                help: "",
                kind: Kind::OnOff,
                phase: Phase::Run,
                default: "off",
                value_name: "on|off",
            },
            Opt {
                name: "isolation",
                short: None,
                help: "",
                kind: Kind::Choice(&["default", "serializable"]),
                phase: Phase::Run,
                default: "default",
                value_name: "LEVEL",
            },
        ],
    };

    fn given(pairs: &[(&str, &str)]) -> Result<Given, String> {
        let map = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse(&T, "test", &map).map_err(|e| e.to_string())
    }

    #[test]
    fn values_are_checked_once_by_kind() {
        let g = given(&[
            ("warehouses", "4"),
            ("point-selects", "0"),
            ("skip_trx", "true"),
            ("isolation", "serializable"),
        ])
        .unwrap();
        assert_eq!(g.number("warehouses"), Some(4));
        assert_eq!(g.number("point_selects"), Some(0));
        assert!(g.on("skip_trx", false));
        assert_eq!(g.text("isolation"), Some("serializable"));
        assert!(!g.has("nothing"));
        let e = |pairs: &[(&str, &str)]| given(pairs).unwrap_err();
        assert!(e(&[("warehouses", "0")]).contains("--warehouses must be at least 1"));
        assert!(
            e(&[("warehouses", "x")])
                .contains("--warehouses 'x': give a whole number of at least 1")
        );
        assert!(
            e(&[("point_selects", "-1")]).contains("--point-selects '-1': give a whole number")
        );
        assert!(e(&[("skip_trx", "maybe")]).contains("use on or off"));
        assert!(
            e(&[("isolation", "snapshot")])
                .contains("--isolation 'snapshot': use default or serializable")
        );
        assert!(e(&[("tables", "8")]).contains("--tables does not apply to test"));
    }
}
