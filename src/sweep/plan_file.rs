//! Plan files (TOML): which engines, profiles or cumulative steps, workload, scale, client counts,
//! duration, warm-up, repeats, cold or warm, fresh data or continued. Parsed and validated before
//! any server starts; an error names the line and the key. A profile's or step's knobs are per
//! engine, each engine a name of the engine registry; steps are made cumulative; `[options]` go to
//! the workload, which refuses what it does not take; a workload without variants that fixes its
//! clients (TPC-H) is one point per engine and profile, measured without `time`. `PlanFile::build`
//! makes a plan from keys and values without a file, as `duel` does.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::engine::Protocol;
use crate::error::Error;
use crate::run_plan::{AskedBy, ConnectionKeys};
use crate::runner::connections::ConnectionPlan;
use crate::server::profile::{self, Facts, Profile};

/// A plan as written in its file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    pub name: Option<String>,
    #[serde(default = "default_engines")]
    pub engines: Vec<String>,
    #[serde(default = "default_workload")]
    pub workload: String,
    pub variant: Option<String>,
    /// Several variants (tpcb: tpcb-like, simple-update, select-only), each a point of its own.
    #[serde(default)]
    pub variants: Vec<String>,
    #[serde(default = "one")]
    pub scale: u32,
    #[serde(default = "default_clients")]
    pub clients: Vec<u32>,
    /// Measured seconds per point (10 when neither this nor `transactions` is given).
    pub time: Option<u64>,
    /// Transactions per client instead of a time (seed 002: 20 clients x 10 queries).
    pub transactions: Option<u64>,
    /// Phases of a load that changes shape, each as `run --phase` takes it (`"30s:rate=100"`),
    /// instead of a time: every point runs them.
    #[serde(default)]
    pub phases: Vec<String>,
    /// Tries of a transaction that met a retryable error, as `run --max-tries` (default: the
    /// workload's, as `run`'s).
    pub max_tries: Option<u32>,
    /// A new connection for every transaction (`run -C`).
    #[serde(default)]
    pub connect: bool,
    /// A connection's transactions before it is replaced (`run --reconnect-every`).
    pub reconnect_every: Option<i64>,
    /// A connection's seconds of life before it is replaced (`run --reconnect-after`).
    pub reconnect_after: Option<f64>,
    /// Connections held open and idle beside the clients (`run --idle-connections`); a managed
    /// server is given room for them.
    pub idle_connections: Option<i64>,
    #[serde(default)]
    pub warmup: u64,
    #[serde(default = "one")]
    pub repeats: u32,
    /// "points" (default): each point's repeats one after another (variant, clients, repeat);
    /// "rounds": the repeats in rounds, each round measuring every variant and client count
    /// once, each from the next in turn, so that what drifts over a sweep (data that grows,
    /// caches) falls on all alike.
    #[serde(default = "default_order")]
    pub order: String,
    /// The random seed of every point and repeat (as `run --seed`): the same keys, mix and
    /// TPC-H substitution parameters on every engine and profile. Default: one derived from
    /// the plan's name.
    pub seed: Option<u64>,
    #[serde(default = "default_protocol")]
    pub protocol: String,
    /// BEGIN with each transaction's first statement (`run --lazy-begin`).
    #[serde(default)]
    pub lazy_begin: bool,
    /// `true`: restart the server (and drop the OS page cache where permitted) before every
    /// point; `"both"`: measure each point cold, then again warm right after it.
    #[serde(default)]
    pub cold: Cold,
    /// "continue" (default): points follow each other on the same data; "reload": every
    /// point starts from freshly loaded data.
    #[serde(default = "default_data")]
    pub data: String,
    #[serde(default = "default_profiles")]
    pub profiles: Vec<String>,
    /// Cumulative steps (seed 000's curves A to F): step N applies the knobs of steps 1..N.
    #[serde(default)]
    pub steps: Vec<StepFile>,
    /// User profiles: [profile.NAME] with `unsafe = bool` and a table of knobs per engine.
    #[serde(default)]
    pub profile: BTreeMap<String, ProfileFile>,
    /// Engines reached through a DSN instead of a managed server.
    #[serde(default)]
    pub dsn: BTreeMap<String, String>,
    /// Where managed servers keep their data (one directory per engine); default: temporary.
    pub data_dir: Option<String>,
    /// Directory of server binaries, per engine.
    #[serde(default)]
    pub bin_dir: BTreeMap<String, String>,
    /// Managed servers keep their own figures per statement (`server start --server-statements`).
    #[serde(default)]
    pub server_statements: bool,
    /// MariaDB storage engine.
    pub table_engine: Option<String>,
    /// The workload's own options, named as `dbduel run` takes them, without the dashes
    /// (tpcc: `isolation = "serializable"`, `spec-timing = true`; sysbench: `tables = 8`).
    #[serde(default)]
    pub options: BTreeMap<String, toml::Value>,
}

/// `[profile.NAME]`: `unsafe = bool` and a table of knobs per engine, each engine a name in
/// the engine registry (`firebird = { DefaultDbCachePages = 8192 }`).
#[derive(Debug, Clone, Default)]
pub struct ProfileFile {
    pub unsafe_profile: bool,
    /// engine -> knob -> value.
    pub engines: BTreeMap<String, BTreeMap<String, toml::Value>>,
}

/// `[[steps]]`: a profile with a name, its knobs added to those of the steps before it.
#[derive(Debug, Clone)]
pub struct StepFile {
    pub name: String,
    pub unsafe_profile: bool,
    pub engines: BTreeMap<String, BTreeMap<String, toml::Value>>,
}

impl<'de> Deserialize<'de> for ProfileFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (_, unsafe_profile, engines) = d.deserialize_map(KnobsVisitor { step: false })?;
        Ok(ProfileFile {
            unsafe_profile,
            engines,
        })
    }
}

impl<'de> Deserialize<'de> for StepFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (name, unsafe_profile, engines) = d.deserialize_map(KnobsVisitor { step: true })?;
        Ok(StepFile {
            name: name.ok_or_else(|| serde::de::Error::missing_field("name"))?,
            unsafe_profile,
            engines,
        })
    }
}

/// Reads a profile's or a step's table; a key that is neither `unsafe`, a step's `name`, nor
/// an engine of the registry is refused with the names it could be.
struct KnobsVisitor {
    step: bool,
}

type Knobs = (
    Option<String>,
    bool,
    BTreeMap<String, BTreeMap<String, toml::Value>>,
);

impl<'de> serde::de::Visitor<'de> for KnobsVisitor {
    type Value = Knobs;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a table of `unsafe` and knobs per engine")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Knobs, A::Error> {
        let (mut name, mut unsafe_profile, mut engines) = (None, false, BTreeMap::new());
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" if self.step => name = Some(map.next_value()?),
                "unsafe" => unsafe_profile = map.next_value()?,
                engine if engine_names().contains(&engine) => {
                    engines.insert(key, map.next_value()?);
                }
                other => {
                    return Err(serde::de::Error::custom(format!(
                        "unknown engine '{other}': knobs go under one of {}{}",
                        engine_names().join(", "),
                        if self.step {
                            " (or name, unsafe)"
                        } else {
                            " (or unsafe)"
                        }
                    )));
                }
            }
        }
        Ok((name, unsafe_profile, engines))
    }
}

fn default_engines() -> Vec<String> {
    vec!["sqlite".into()]
}
fn default_workload() -> String {
    "tpcb".into()
}
fn one() -> u32 {
    1
}
/// Whether the workload named so fixes its clients (TPC-H's streams).
fn runs_streams(workload: &str) -> bool {
    crate::workload::find(workload)
        .ok()
        .and_then(|e| (e.new)(&crate::workload::WorkloadOptions::default()).ok())
        .is_some_and(|w| w.fixed_clients().is_some())
}

fn default_clients() -> Vec<u32> {
    vec![1, 2, 4, 8]
}
fn default_protocol() -> String {
    "prepared".into()
}
fn default_order() -> String {
    "points".into()
}
fn default_data() -> String {
    "continue".into()
}
fn default_profiles() -> Vec<String> {
    vec!["default".into()]
}

/// `cold = true | false | "both"`.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(untagged)]
pub enum Cold {
    Flag(bool),
    Word(String),
    #[default]
    #[serde(skip)]
    Warm,
}

impl Cold {
    /// The cache states each point is measured in, in order.
    pub fn states(&self) -> Vec<bool> {
        match self {
            Cold::Flag(true) => vec![true],
            Cold::Word(_) => vec![true, false],
            Cold::Flag(false) | Cold::Warm => vec![false],
        }
    }
}

/// The engines a plan may name: the engine registry's.
fn engine_names() -> Vec<&'static str> {
    crate::engine::ENGINES.iter().map(|e| e.name).collect()
}

impl PlanFile {
    /// The seed every point of the plan runs with: `seed`, else a hash of the plan's name
    /// (FNV-1a), so that every engine and profile does the same work.
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or_else(|| {
            self.name().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
        })
    }

    pub fn read(path: &Path) -> Result<(PlanFile, String), Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Usage(format!("cannot read plan {}: {e}", path.display())))?;
        let plan = Self::parse(&text, path)?;
        Ok((plan, text))
    }

    /// A plan's text, as read from `path` (its name and the directory of a workload file).
    pub fn parse(text: &str, path: &Path) -> Result<PlanFile, Error> {
        let mut plan: PlanFile = toml::from_str(text).map_err(|e| {
            // One line: where, then TOML's own words, without its drawing of the line.
            let place = e.span().map_or(String::new(), |span| {
                let before = &text[..text.floor_char_boundary(span.start)];
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
                let shown: String = text
                    .lines()
                    .nth(line - 1)
                    .unwrap_or("")
                    .trim()
                    .chars()
                    .take(80)
                    .collect();
                format!("line {line}, column {column} ({shown}): ")
            });
            let message = e.message().trim().replace('\n', "; ");
            Error::Usage(format!("plan {}: {place}{message}", path.display()))
        })?;
        if plan.name.is_none() {
            plan.name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        }
        // A workload file is named relative to the plan file.
        if crate::workload::custom::is_file(&plan.workload)
            && Path::new(&plan.workload).is_relative()
            && let Some(dir) = path.parent()
        {
            plan.workload = dir.join(&plan.workload).display().to_string();
        }
        // A workload that runs its own streams (TPC-H) takes one client: the default for it.
        let given = toml::from_str::<toml::Table>(text).is_ok_and(|t| t.contains_key("clients"));
        if !given && runs_streams(&plan.workload) {
            plan.clients = vec![1];
        }
        plan.validate()?;
        Ok(plan)
    }

    /// A plan a command builds (`duel`) instead of reading it: keys and values as a file
    /// would give them, in order, checked as a file's are. Returns the plan and its text as
    /// the store keeps it (one `key = value` line each, values written by TOML's own rules).
    pub fn build(pairs: Vec<(&str, toml::Value)>) -> Result<(PlanFile, String), Error> {
        let text: String = pairs.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
        let table: toml::Table = pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let plan: PlanFile = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| Error::Usage(format!("plan: {}", e.message())))?;
        plan.validate()?;
        Ok((plan, text))
    }

    /// The variants to measure (none given: the one the workload runs with the plan's options,
    /// as YCSB's `[options] workload = "workloadb"` selects workloadb; else its first).
    pub fn variants(&self) -> Vec<String> {
        let first = || {
            let entry = crate::workload::find(&self.workload).ok()?;
            let options = crate::workload::WorkloadOptions {
                scale: self.scale,
                params: self.params().ok()?,
                ..Default::default()
            };
            let chosen = (entry.new)(&options).ok().map(|w| w.variant());
            chosen
                .filter(|v| entry.variants.contains(v) || entry.variants.is_empty())
                .or(entry.variants.first().copied())
                .map(str::to_string)
        };
        match (&self.variant, self.variants.is_empty()) {
            (_, false) => self.variants.clone(),
            (Some(v), true) => vec![v.clone()],
            (None, true) => first().into_iter().collect(),
        }
    }

    /// How every point's clients hold their connections (keys `connect`, `reconnect_every`,
    /// `reconnect_after`, `idle_connections`, checked as `run` checks its flags).
    pub fn connections(&self) -> Result<ConnectionPlan, Error> {
        ConnectionKeys {
            connect: self.connect,
            reconnect_every: self.reconnect_every,
            reconnect_after: self.reconnect_after,
            idle_connections: self.idle_connections,
        }
        .plan(AskedBy::Plan)
        .map_err(|e| Error::Usage(format!("plan {}: {e}", self.name())))
    }

    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("plan")
    }

    /// Measured seconds per point.
    pub fn time(&self) -> u64 {
        self.time.unwrap_or(10)
    }

    /// `options` as the workload's parameters: `spec-timing = true` is the flag given, `false`
    /// is `off` (a flag not given, a switch turned off), numbers and words are their text.
    pub fn params(&self) -> Result<BTreeMap<String, String>, Error> {
        let mut params = BTreeMap::new();
        for (key, value) in &self.options {
            let text = match value {
                toml::Value::Boolean(false) => "off".to_string(),
                toml::Value::Boolean(true) => "on".to_string(),
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(f) => f.to_string(),
                _ => {
                    return Err(Error::Usage(format!(
                        "plan {}: key `options.{key}`: give a number, a word or true",
                        self.name()
                    )));
                }
            };
            params.insert(key.replace('-', "_"), text);
        }
        Ok(params)
    }

    pub fn protocol(&self) -> Protocol {
        match self.protocol.as_str() {
            "simple" => Protocol::Simple,
            "extended" => Protocol::Extended,
            _ => Protocol::Prepared,
        }
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |msg: String| Err(Error::Usage(format!("plan {}: {msg}", self.name())));
        if let Some(e) = self
            .engines
            .iter()
            .find(|e| !engine_names().contains(&e.as_str()))
        {
            return bad(format!(
                "key `engines`: unknown engine '{e}': use {}",
                engine_names().join(", ")
            ));
        }
        self.validate_workload()?;
        if self.name().trim().is_empty() {
            return bad(
                "key `name`: give the plan a name, or leave the key out to take the file's".into(),
            );
        }
        if self.clients.is_empty() || self.clients.contains(&0) {
            return bad("key `clients`: give client counts of at least 1".into());
        }
        let clients: Vec<String> = self.clients.iter().map(u32::to_string).collect();
        for (key, values) in [
            ("clients", &clients),
            ("engines", &self.engines),
            ("profiles", &self.profiles),
            ("variants", &self.variants),
        ] {
            if let Some(twice) = values
                .iter()
                .enumerate()
                .find(|(i, v)| values[..*i].contains(v))
            {
                return bad(format!(
                    "key `{key}`: '{}' is given twice: give each once (repeats are `repeats = N`)",
                    twice.1
                ));
            }
        }
        if self.scale == 0 || self.repeats == 0 || self.time == Some(0) {
            return bad("keys `scale`, `repeats` and `time` must be at least 1".into());
        }
        if self.time.is_some() && self.transactions.is_some() {
            return bad(
                "keys `time` and `transactions` both given: give one (a point runs for a time or for a number of transactions per client)".into(),
            );
        }
        if let Cold::Word(w) = &self.cold
            && w != "both"
        {
            return bad(format!("key `cold`: '{w}': use true, false or \"both\""));
        }
        self.connections()?;
        if self.transactions == Some(0) {
            return bad("key `transactions` must be at least 1 (per client)".into());
        }
        if !["simple", "extended", "prepared"].contains(&self.protocol.as_str()) {
            return bad(format!(
                "key `protocol`: '{}' is not simple, extended or prepared",
                self.protocol
            ));
        }
        if !["points", "rounds"].contains(&self.order.as_str()) {
            return bad(format!(
                "key `order`: '{}' is not points or rounds",
                self.order
            ));
        }
        if !["continue", "reload"].contains(&self.data.as_str()) {
            return bad(format!(
                "key `data`: '{}' is not continue or reload",
                self.data
            ));
        }
        if let Some(p) = self
            .profiles
            .iter()
            .find(|p| !profile::BUILTIN.contains(&p.as_str()) && !self.profile.contains_key(*p))
        {
            return bad(format!(
                "key `profiles`: unknown profile '{p}': use default, tuned, unsafe or define [profile.{p}]"
            ));
        }
        if let Some(engine) = self
            .dsn
            .keys()
            .find(|e| !engine_names().contains(&e.as_str()))
        {
            return bad(format!("key `dsn.{engine}`: unknown engine"));
        }
        Ok(())
    }

    /// The workload, its variants and its options: the workload refuses what it does not take.
    fn validate_workload(&self) -> Result<(), Error> {
        let bad = |msg: String| Err(Error::Usage(format!("plan {}: {msg}", self.name())));
        let entry = crate::workload::find(&self.workload)?;
        let options = crate::workload::WorkloadOptions {
            scale: self.scale,
            params: self.params()?,
            ..Default::default()
        };
        // A workload without variants that runs its own streams (TPC-H) is one point per
        // engine and profile; any other one has nothing to sweep.
        let streams = (entry.new)(&options).is_ok_and(|w| w.fixed_clients().is_some());
        if entry.variants.is_empty() && !streams {
            return bad(format!(
                "key `workload`: {} has nothing a plan can prepare and sweep; run it with `dbduel run`",
                entry.name
            ));
        }
        if let Some(v) = self
            .variants()
            .iter()
            .find(|v| !entry.variants.contains(&v.as_str()) && !streams)
        {
            return bad(format!(
                "key `variants`: '{v}' is not a variant of {}: use {}",
                entry.name,
                entry.variants.join(", ")
            ));
        }
        if let Err(e) = (entry.new)(&options) {
            return bad(format!("key `options`: {e}"));
        }
        Ok(())
    }

    /// The profiles to measure, in order: the cumulative steps when there are steps.
    pub fn profiles(&self, facts: &Facts) -> Vec<Profile> {
        if !self.steps.is_empty() {
            return self.cumulative_steps();
        }
        self.profiles
            .iter()
            .map(|name| match self.profile.get(name) {
                Some(p) => user_profile(name, p.unsafe_profile, &p.engines),
                None => profile::builtin(name, facts).expect("validated"),
            })
            .collect()
    }

    fn cumulative_steps(&self) -> Vec<Profile> {
        let mut acc = Profile::default();
        self.steps
            .iter()
            .map(|step| {
                let next = user_profile(&step.name, step.unsafe_profile, &step.engines);
                for (engine, knobs) in next.knobs {
                    let entry = acc.knobs.entry(engine).or_default();
                    for (k, v) in knobs {
                        entry.retain(|(old, _)| *old != k);
                        entry.push((k, v));
                    }
                }
                acc.name.clone_from(&step.name);
                acc.unsafe_profile |= step.unsafe_profile;
                acc.clone()
            })
            .collect()
    }
}

fn user_profile(
    name: &str,
    unsafe_profile: bool,
    engines: &BTreeMap<String, BTreeMap<String, toml::Value>>,
) -> Profile {
    let text = |v: &toml::Value| match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let knobs = engines
        .iter()
        .map(|(engine, t)| {
            (
                engine.clone(),
                t.iter().map(|(k, v)| (k.clone(), text(v))).collect(),
            )
        })
        .collect();
    Profile {
        name: name.into(),
        unsafe_profile,
        knobs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PlanFile, Error> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, text).unwrap();
        PlanFile::read(&path).map(|(p, _)| p)
    }

    #[test]
    fn duplicates_and_conflicting_limits_refused_before_any_point() {
        for (text, needle) in [
            ("clients = [1, 4, 4]\n", "key `clients`: '4' is given twice"),
            (
                "engines = [\"sqlite\", \"sqlite\"]\n",
                "key `engines`: 'sqlite' is given twice",
            ),
            (
                "profiles = [\"default\", \"default\"]\n",
                "key `profiles`: 'default'",
            ),
            (
                "time = 5\ntransactions = 10\n",
                "keys `time` and `transactions` both given",
            ),
            ("name = \"\"\n", "key `name`: give the plan a name"),
            ("name = \"  \"\n", "key `name`: give the plan a name"),
        ] {
            let e = parse(&format!("engines = [\"sqlite\"]\n{text}"))
                .or_else(|_| parse(text))
                .map(|_| "accepted".to_string())
                .unwrap_or_else(|e| e.to_string());
            assert!(e.contains(needle), "{text}: {e}");
        }
        let ok = parse("engines = [\"sqlite\"]\ntransactions = 10\n").unwrap();
        assert_eq!((ok.time, ok.transactions), (None, Some(10)));
        assert_eq!(parse("engines = [\"sqlite\"]\n").unwrap().time(), 10);
    }

    #[test]
    fn errors_name_line_and_key() {
        let e = parse("engines = [\"sqlite\"]\nclients = [1, 2]\nwarmpu = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("warmpu"), "{e}");
        let e = parse("clients = [\"two\"]\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("clients"), "{e}");
        let e = parse("profiles = [\"fast\"]\n").unwrap_err().to_string();
        assert!(e.contains("unknown profile 'fast'"), "{e}");
    }

    #[test]
    fn knobs_go_under_engines_of_the_registry() {
        let plan = parse(
            "engines = [\"firebird\"]\nprofiles = [\"big\"]\n[profile.big]\nfirebird = { DefaultDbCachePages = 8192 }\n",
        )
        .unwrap();
        let facts = Facts {
            ram_bytes: 1 << 33,
            cores: 2,
            dataset_bytes: 1 << 24,
            max_clients: 8,
        };
        let knobs = &plan.profiles(&facts)[0].knobs["firebird"];
        assert_eq!(knobs, &[("DefaultDbCachePages".into(), "8192".into())]);
        let e = parse("profiles = [\"big\"]\n[profile.big]\nunsafe = true\nfirbird = { A = 1 }\n")
            .unwrap_err()
            .to_string();
        // The line of the table that holds the key.
        assert!(e.contains("line 2") && e.contains("[profile.big]"), "{e}");
        assert!(
            e.contains("unknown engine 'firbird'") && e.contains("firebird"),
            "{e}"
        );
        let e = parse("[[steps]]\nname = \"A\"\npostgress = { work_mem = \"8MB\" }\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown engine 'postgress'") && e.contains("postgres"),
            "{e}"
        );
        let e = parse("[[steps]]\nsqlite = { cache_size = 100 }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("name"), "{e}");
    }

    #[test]
    fn variants_are_points_of_their_own() {
        let plan = parse("variants = [\"select-only\", \"tpcb-like\"]\n").unwrap();
        assert_eq!(plan.variants(), ["select-only", "tpcb-like"]);
        assert_eq!(parse("").unwrap().variants(), ["tpcb-like"]);
        let e = parse("variants = [\"select-all\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'select-all' is not a variant of tpcb"), "{e}");
        // A plan that names no variant measures the one its options select.
        let ycsb = "workload = \"ycsb\"\n[options]\nworkload = \"workloadb\"\n";
        assert_eq!(parse(ycsb).unwrap().variants(), ["workloadb"]);
        let ycsb = "workload = \"ycsb\"\n[options]\nrecordcount = 100\n";
        assert_eq!(parse(ycsb).unwrap().variants(), ["workloada"]);
    }

    #[test]
    fn steps_accumulate() {
        let plan = parse(
            "engines = [\"mysql\"]\n[[steps]]\nname = \"A\"\n[[steps]]\nname = \"C\"\nmysql = { innodb_buffer_pool_size = \"1G\" }\n\
             [[steps]]\nname = \"E\"\nunsafe = true\nmysql = { innodb_flush_log_at_trx_commit = 2 }\n",
        )
        .unwrap();
        let facts = Facts {
            ram_bytes: 1 << 33,
            cores: 2,
            dataset_bytes: 1 << 24,
            max_clients: 8,
        };
        let steps = plan.profiles(&facts);
        assert_eq!(
            steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["A", "C", "E"]
        );
        assert!(steps[0].knobs.get("mysql").is_none_or(|k| k.is_empty()));
        assert_eq!(steps[2].knobs["mysql"].len(), 2);
        assert!(steps[2].unsafe_profile && !steps[1].unsafe_profile);
    }

    #[test]
    fn options_reach_the_workload_or_are_refused() {
        let plan = parse(
            "workload = \"tpcc\"\n[options]\nisolation = \"serializable\"\nspec-timing = true\nload-workers = 2\n",
        )
        .unwrap();
        let params = plan.params().unwrap();
        assert_eq!(params["isolation"], "serializable");
        assert_eq!(params["spec_timing"], "on");
        assert_eq!(params["load_workers"], "2");
        let e = parse("workload = \"tpcc\"\n[options]\nisolation = \"snapshot\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("key `options`") && e.contains("snapshot"), "{e}");
        let e = parse("workload = \"tpcc\"\n[options]\ntables = 8\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--tables does not apply to tpcc"), "{e}");
    }

    /// A built plan is the plan its text would give, whatever its values hold.
    #[test]
    fn built_plans_escape_their_values() {
        let odd = "a \"quoted\" \\ name";
        let (plan, text) = PlanFile::build(vec![
            ("name", toml::Value::from(odd)),
            ("engines", toml::Value::from(vec!["sqlite"])),
            ("clients", toml::Value::from(vec![1, 2])),
            ("time", toml::Value::from(3)),
        ])
        .unwrap();
        assert_eq!(plan.name(), odd);
        assert_eq!(plan.clients, [1, 2]);
        assert_eq!(
            text,
            "name = 'a \"quoted\" \\ name'\nengines = [\"sqlite\"]\nclients = [1, 2]\ntime = 3\n"
        );
        let reread: PlanFile = toml::from_str(&text).unwrap();
        assert_eq!(reread.name(), odd);
        let e = PlanFile::build(vec![("engines", toml::Value::from(vec!["oracle"]))])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown engine 'oracle'"), "{e}");
    }

    /// The example plans shipped in plans/ read and validate as they are.
    #[test]
    fn shipped_plans_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let plan = PlanFile::read(&path).map(|(p, _)| p);
                assert!(plan.is_ok(), "{}: {}", path.display(), plan.unwrap_err());
                read += 1;
            }
        }
        assert!(read >= 5, "{read} plans in {}", dir.display());
    }
}
