//! `dbduel tune`: the seeds' knob-by-knob tuning as one command. Candidates are drawn from the
//! engine's knob space (`server::profile::Knob`, each engine's in its own server file) beside
//! `default` and `tuned`, and measured by successive halving: every candidate briefly, the best
//! third again for twice as long, until one is left. Each trial is a one-point sweep on the
//! managed server (or the SQLite file) started with the candidate's knobs on freshly loaded
//! data, so the results store keeps every trial and the same command run again resumes where
//! it stopped; a candidate the server refuses is recorded and dropped. The winner is then
//! measured again against `default` and `tuned`, the three taking turns over the repeats, and
//! judged by `compare`'s rule (the bootstrap interval of the difference of the means; over the
//! repeats' values for a capacity, which each trial finds by a staircase of rates): the
//! verdict says by how much it beats each, or that it does not beyond the noise. Each of the
//! winner's knobs is then put back to its shipped value in turn (ablation), to say which ones
//! mattered. The winner's knobs are written as the engine's own configuration, and printed as
//! a plan's profile.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::capacity::slo::{Figure, Objective};
use crate::error::Error;
use crate::metrics::phases::PhaseResult;
use crate::point::Outcome;
use crate::report::compare::{self, FigureComparison, Run, Side, Verdict};
use crate::server::profile::{Facts, Knob, Tuning};
use crate::store::{RunRow, Store};
use crate::sweep::matrix::Matrix;
use crate::sweep::plan_file::PlanFile;

/// What `dbduel tune` was asked for, checked.
#[derive(Debug, Clone)]
pub struct TunePlan {
    /// The engine's registry name (postgres, mysql, firebird, sqlite).
    pub engine: String,
    pub workload: String,
    pub scale: u32,
    pub clients: u32,
    /// Seconds of the first round's trials; each later round's are twice the last's.
    pub trial_s: u64,
    pub warmup_s: u64,
    /// Trials the search may spend (the final comparison's runs apart).
    pub trials: u32,
    /// Runs of each of default, tuned and the winner in the final comparison.
    pub repeats: u32,
    /// Whether knobs that give up durability may be tried (labelled UNSAFE).
    pub allow_unsafe: bool,
    pub seed: u64,
    pub protocol: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub bin_dir: Option<PathBuf>,
    pub results: PathBuf,
    /// Where the winner's configuration is written.
    pub out: PathBuf,
    /// The workload's own options, by name.
    pub options: BTreeMap<String, String>,
    /// A knob space of the user's own (`--space FILE`), in place of the engine's.
    pub space: Option<PathBuf>,
    /// `--json FILE`: the search, its verdicts and what mattered, for scripts.
    pub json: Option<PathBuf>,
    /// What the search ranks by.
    pub goal: Goal,
    /// `--html FILE`: the search drawn (every trial, the final comparison, what mattered).
    pub html: Option<PathBuf>,
}

/// What the search ranks candidates by, and the final comparison judges the winner on.
#[derive(Debug, Clone, PartialEq)]
pub enum Goal {
    /// Throughput at full speed (closed loop): the workload's headline (TPC-C's NOPM...) in
    /// the search, tps in the final comparison; more is better.
    Throughput,
    /// A latency percentile at a fixed rate (open loop, arrivals at `rate` a second): less is
    /// better, and a configuration that cannot keep the rate pays for its queue.
    Latency { figure: &'static str, rate: f64 },
    /// The capacity under latency objectives (`--slo 'p99<10ms'`, as `capacity` takes them):
    /// each trial's closed loop gives its ceiling, then a staircase of open-loop rates (the
    /// shares in STAIRS of that ceiling, one run in phases) finds the highest rate that, with
    /// every rate below it, met every objective and kept its schedule; more is better.
    Capacity { objectives: Vec<Objective> },
}

/// The staircase of a capacity trial: its rates as shares of the trial's closed-loop ceiling.
pub const STAIRS: &[f64] = &[0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0];

/// The percentiles a latency goal may rank by: those every stored run keeps and `compare`
/// judges.
const PERCENTILES: &[&str] = &["p50", "p95", "p99"];

impl Goal {
    /// `--objective` (tps, a percentile, or capacity), `--rate` and `--slo`, checked together.
    pub fn parse(
        objective: Option<&str>,
        rate: Option<f64>,
        slo: &[String],
    ) -> Result<Goal, Error> {
        let figure = objective.map(str::to_lowercase);
        if !slo.is_empty() || figure.as_deref() == Some("capacity") {
            if let Some(f) = figure.as_deref().filter(|f| *f != "capacity") {
                return Err(Error::Usage(format!(
                    "--objective {f} with --slo: --slo ranks by the capacity under the objectives; drop --objective, or drop --slo"
                )));
            }
            if rate.is_some() {
                return Err(Error::Usage(
                    "--rate with --slo: a capacity trial chooses its rates itself (a staircase up to its own ceiling): drop --rate".into(),
                ));
            }
            if slo.is_empty() {
                return Err(Error::Usage(
                    "--objective capacity: give the objectives the capacity must meet, e.g. --slo 'p99<10ms'".into(),
                ));
            }
            let objectives = slo
                .iter()
                .map(|s| Objective::parse(s))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Goal::Capacity { objectives });
        }
        match (figure.as_deref(), rate) {
            (None | Some("tps"), None) => Ok(Goal::Throughput),
            (None | Some("tps"), Some(_)) => Err(Error::Usage(
                "--rate: at a fixed rate every candidate that keeps up gives the same throughput: rank by a latency percentile at that rate (--objective p99), or drop --rate".into(),
            )),
            (Some(f), rate) => {
                let Some(figure) = PERCENTILES.iter().copied().find(|p| *p == f) else {
                    return Err(Error::Usage(format!(
                        "--objective {f}: give tps, a latency percentile at a fixed rate ({}), or capacity with --slo",
                        PERCENTILES.join(", ")
                    )));
                };
                match rate {
                    Some(rate) if rate.is_finite() && rate > 0.0 => {
                        Ok(Goal::Latency { figure, rate })
                    }
                    Some(rate) => Err(Error::Usage(format!(
                        "--rate {rate}: give transactions a second, above 0"
                    ))),
                    None => Err(Error::Usage(format!(
                        "--objective {figure}: a percentile is compared at a fixed rate, or the faster candidate queues more: give --rate TPS"
                    ))),
                }
            }
        }
    }

    /// `compare`'s figure the final comparison judges: tps, or the percentile.
    pub fn figure(&self) -> &'static str {
        match self {
            Goal::Throughput => "tps",
            Goal::Latency { figure, .. } => figure,
            Goal::Capacity { .. } => compare::CAPACITY.name,
        }
    }

    fn unit(&self) -> String {
        match self {
            Goal::Throughput => "tps".into(),
            Goal::Latency { figure, .. } => format!("ms {figure}"),
            Goal::Capacity { .. } => "tps capacity".into(),
        }
    }

    fn higher_is_better(&self) -> bool {
        !matches!(self, Goal::Latency { .. })
    }

    /// The objectives as written, joined: "p99<10ms, errors<1%".
    fn objectives_text(&self) -> String {
        match self {
            Goal::Capacity { objectives } => objectives
                .iter()
                .map(|o| o.text.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            _ => String::new(),
        }
    }

    /// The run's figure the final comparison and the ablation judge: tps, or the percentile.
    fn judged(&self, row: &RunRow) -> f64 {
        match self {
            Goal::Throughput => row.tps,
            Goal::Latency { figure, .. } => match *figure {
                "p50" => row.p50_ms,
                "p95" => row.p95_ms,
                _ => row.p99_ms,
            },
            // A capacity is a staircase's (`capacity_of`), not one row's: never asked here.
            Goal::Capacity { .. } => f64::NAN,
        }
    }

    /// The figure the search ranks by: for throughput the workload's own headline (TPC-C's
    /// NOPM...) where it has one.
    fn ranked(&self, entry: &crate::workload::WorkloadEntry, row: &RunRow) -> f64 {
        match self {
            Goal::Throughput => entry
                .headline
                .iter()
                .find_map(|h| row.metrics.get(*h).copied())
                .unwrap_or(row.tps),
            Goal::Latency { .. } | Goal::Capacity { .. } => self.judged(row),
        }
    }

    /// The name of the ranked figure, for the table of trials.
    fn ranked_name(&self, entry: &crate::workload::WorkloadEntry) -> String {
        match self {
            Goal::Throughput => entry.headline.first().copied().unwrap_or("tps").into(),
            Goal::Latency { figure, rate } => format!("{figure} ms at {rate} tps"),
            Goal::Capacity { .. } => format!("tps capacity ({})", self.objectives_text()),
        }
    }

    /// `a` is better than `b`.
    fn better(&self, a: f64, b: f64) -> std::cmp::Ordering {
        if self.higher_is_better() {
            b.total_cmp(&a)
        } else {
            a.total_cmp(&b)
        }
    }
}

/// A configuration tried: `default`, `tuned`, or knobs drawn from the space.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub name: String,
    /// The knobs it sets (none for `default`; `tuned`'s are the profile's own).
    pub knobs: Vec<(String, String)>,
    /// A durability knob is off its shipped value.
    pub unsafe_profile: bool,
}

/// One trial's outcome: the objective measured, or why there is none.
#[derive(Debug, Clone)]
pub struct Trial {
    pub round: u32,
    pub candidate: String,
    pub seconds: u64,
    pub outcome: Result<f64, String>,
}

/// The engine's profile rules, with its knob space.
fn tuning(engine: &str) -> Result<&'static Tuning, Error> {
    crate::server::tunings()
        .find(|t| t.engine == engine)
        .ok_or_else(|| {
            let known: Vec<&str> = crate::server::tunings().map(|t| t.engine).collect();
            Error::Usage(format!(
                "--engine {engine}: dbduel tunes {} (a server it manages, or SQLite's file)",
                known.join(", ")
            ))
        })
}

/// Candidates drawn from the space: each knob's value uniform among its values (durability
/// knobs kept at their shipped value unless UNSAFE is allowed), only the knobs off their
/// shipped value set, no two candidates alike and none without a knob.
pub fn draw(space: &[Knob], n: usize, allow_unsafe: bool, seed: u64) -> Vec<Candidate> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut out: Vec<Candidate> = Vec::new();
    let mut tries = 0;
    while out.len() < n && tries < 100 * (n + 1) {
        tries += 1;
        let mut knobs = Vec::new();
        let mut unsafe_profile = false;
        for k in space {
            if k.durability && !allow_unsafe {
                continue;
            }
            let i = rng.random_range(0..k.values.len());
            if i > 0 {
                knobs.push((k.name.clone(), k.values[i].clone()));
                unsafe_profile |= k.durability;
            }
        }
        if knobs.is_empty() || out.iter().any(|c| c.knobs == knobs) {
            continue;
        }
        out.push(Candidate {
            name: format!("c{:02}", out.len() + 1),
            knobs,
            unsafe_profile,
        });
    }
    out
}

/// A knob space from a TOML file: each knob with the values to try, its shipped value first
/// (`shared_buffers = ["128MB", "1GB", "4GB"]`); knobs that give up durability in a
/// `[durability]` table, tried only under `--unsafe`.
pub fn space_file(path: &std::path::Path) -> Result<Vec<Knob>, Error> {
    let text = std::fs::read_to_string(path).map_err(Error::io("read", path))?;
    space_text(&text).map_err(|why| Error::Usage(format!("--space {}: {why}", path.display())))
}

fn space_text(text: &str) -> Result<Vec<Knob>, String> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    let values = |name: &str, v: &toml::Value| -> Result<Vec<String>, String> {
        let bad = || {
            format!(
                "knob `{name}`: give a list of two or more values, the shipped one first (`{name} = [\"a\", \"b\"]`)"
            )
        };
        let list = v.as_array().ok_or_else(bad)?;
        let out: Vec<String> = list
            .iter()
            .map(|x| match x {
                toml::Value::String(s) => Ok(s.clone()),
                toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_) => {
                    Ok(x.to_string())
                }
                _ => Err(bad()),
            })
            .collect::<Result<_, _>>()?;
        if out.len() < 2 {
            return Err(bad());
        }
        Ok(out)
    };
    let mut space = Vec::new();
    for (name, v) in &table {
        if name == "durability" {
            let risky = v
                .as_table()
                .ok_or("`durability`: a table of knobs that give up durability")?;
            for (name, v) in risky {
                space.push(Knob {
                    name: name.clone(),
                    values: values(name, v)?,
                    durability: true,
                });
            }
            continue;
        }
        space.push(Knob {
            name: name.clone(),
            values: values(name, v)?,
            durability: false,
        });
    }
    if space.is_empty() {
        return Err("no knob in it".into());
    }
    Ok(space)
}

/// The first round's candidates for a budget of `trials`: the most n (at least 2) whose
/// measured rounds n, ceil(n/3), ceil(n/9) ... fit in it.
pub fn first_round(trials: u32) -> usize {
    let cost = |n: usize| rounds_of(n).iter().sum::<usize>();
    let mut n = 2;
    while cost(n + 1) <= trials as usize {
        n += 1;
    }
    n
}

/// The candidates measured in each round of successive halving from `n`: a third kept each
/// time, until one is left (it is measured in the final comparison, not alone).
pub fn rounds_of(n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut left = n;
    while left > 1 {
        out.push(left);
        left = left.div_ceil(3);
    }
    out
}

/// A short name for the search's settings, so that the same command finds its own trials
/// in the store (and resumes) and another search never takes them.
fn search_id(p: &TunePlan) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        &p.engine,
        &p.workload,
        p.scale,
        p.clients,
        p.trial_s,
        p.warmup_s,
        p.trials,
        p.allow_unsafe,
        p.seed,
        &p.protocol,
        &p.options,
        &p.space,
    )
        .hash(&mut h);
    // A throughput search keeps the ids it had before goals were added; a capacity's
    // objectives count by what they mean, in any order or case.
    match &p.goal {
        Goal::Throughput => {}
        Goal::Capacity { objectives } => {
            let mut meant: Vec<String> = objectives
                .iter()
                .map(|o| {
                    let op = if o.inclusive { "<=" } else { "<" };
                    format!("{}{op}{}", o.figure_name(), o.limit)
                })
                .collect();
            meant.sort();
            meant.dedup();
            format!("Capacity {meant:?}").hash(&mut h);
        }
        goal => format!("{goal:?}").hash(&mut h),
    }
    format!("{:08x}", h.finish() as u32)
}

/// Run the search, the final comparison, and write the winner's configuration.
pub fn run(p: &TunePlan, stop: &Arc<AtomicBool>) -> Result<Outcome, Error> {
    let tuning = tuning(&p.engine)?;
    let entry = crate::workload::find(&p.workload)?;
    if !matches!(p.goal, Goal::Throughput) {
        // Rates spread over some of the clients asked (CH's side alone) are not the load they
        // carry in the whole: refused before any trial, as `run --rate` refuses them.
        let built = (entry.new)(&crate::workload::WorkloadOptions {
            clients: p.clients,
            params: p.options.clone(),
            ..Default::default()
        })?;
        if let Some((_, n)) = built.clients_run() {
            return Err(Error::Usage(format!(
                "tune --{}: {} runs {n} of the {} clients asked, and a trial's rates would be spread over them, not the load they carry in the whole: tune the whole mix, or rank by throughput",
                if matches!(p.goal, Goal::Capacity { .. }) {
                    "slo"
                } else {
                    "rate"
                },
                built.variant(),
                p.clients
            )));
        }
    }
    let host = crate::metrics::Host::read();
    let facts = Facts {
        ram_bytes: host.ram_bytes,
        cores: host.cores,
        dataset_bytes: entry.bytes_per_scale * u64::from(p.scale),
        max_clients: p.clients,
    };
    let space = match &p.space {
        Some(path) => space_file(path)?,
        None => (tuning.space)(&facts),
    };
    let id = search_id(p);
    let began = std::time::Instant::now();
    // Where the outcome goes is checked before any trial.
    crate::result::check_writable_as("-o", &p.out)?;
    if let Some(path) = &p.json {
        crate::result::check_writable_as("--json", path)?;
    }
    if let Some(path) = &p.html {
        crate::result::check_writable_as("--html", path)?;
    }
    let n = first_round(p.trials);
    let mut candidates = vec![
        Candidate {
            name: "default".into(),
            knobs: Vec::new(),
            unsafe_profile: false,
        },
        Candidate {
            name: "tuned".into(),
            knobs: Vec::new(),
            unsafe_profile: false,
        },
    ];
    // A published heuristic's recommendation (pgtune's), as a DBA would try it first.
    if let Some(r) = &tuning.recommended {
        candidates.push(Candidate {
            name: r.name.into(),
            knobs: (r.knobs)(&facts, p.bin_dir.as_deref()),
            unsafe_profile: false,
        });
    }
    let drawn = n.saturating_sub(candidates.len());
    candidates.extend(draw(&space, drawn, p.allow_unsafe, p.seed));
    errln!(
        "tune {id}: {} on {} at scale {}, {} clients; {} candidates from {} knobs, rounds of {} trials, the first {} s each; results in {}",
        p.workload,
        p.engine,
        p.scale,
        p.clients,
        candidates.len(),
        space.len(),
        rounds_of(candidates.len())
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        p.trial_s,
        p.results.display()
    );
    let mut trials: Vec<Trial> = Vec::new();
    let mut alive: Vec<Candidate> = candidates.clone();
    let mut seconds = p.trial_s;
    let mut round = 1;
    while alive.len() > 1 {
        let mut measured: Vec<(f64, Candidate)> = Vec::new();
        for c in &alive {
            let outcome = trial(p, &id, &format!("r{round}"), c, seconds, stop)?;
            // The engine as shipped sets no knob: when it cannot run, no candidate can, and
            // the reason is the setup's (a server that does not start, data that cannot load).
            if let (Err(why), "default") = (&outcome, c.name.as_str()) {
                return Err(Error::Server(format!(
                    "tune: {} could not run as shipped, so no candidate can: {why}",
                    p.engine
                )));
            }
            if let Ok(v) = &outcome {
                measured.push((*v, c.clone()));
            }
            errln!(
                "tune: round {round}, {}: {}",
                describe(c),
                match &outcome {
                    Ok(v) => format!("{v:.1} {}", p.goal.ranked_name(entry)),
                    Err(why) => format!("not measured: {why}"),
                }
            );
            trials.push(Trial {
                round,
                candidate: c.name.clone(),
                seconds,
                outcome,
            });
        }
        if measured.is_empty() {
            return Err(Error::Usage(format!(
                "tune: no candidate of round {round} could be measured (see the lines above)"
            )));
        }
        measured.sort_by(|a, b| p.goal.better(a.0, b.0));
        let keep = alive.len().div_ceil(3).max(1);
        alive = measured.into_iter().take(keep).map(|(_, c)| c).collect();
        round += 1;
        if alive.len() > 1 {
            seconds *= 2;
        }
    }
    let winner = alive.remove(0);
    errln!("tune: the search's best is {}", describe(&winner));
    let seconds = seconds.max(p.trial_s);
    let baselines: Vec<&Candidate> = candidates.iter().take_while(|c| !is_drawn(c)).collect();
    let verdicts = verify(p, &id, &winner, &baselines, seconds, stop)?;
    let durability = |k: &str| space.iter().any(|s| s.name == k && s.durability);
    // A knob set to the value the engine ships with (tuned sets some) changes nothing.
    let shipped = |k: &str, v: &str| space.iter().any(|s| s.name == k && s.values[0] == v);
    let winner_knobs = knobs_of(&winner, tuning, &facts);
    let knobs = Knobs {
        all: &winner_knobs,
        durability: &durability,
        shipped: &shipped,
    };
    // Knobs carry a gain only where there is one: a winner that does not beat default beyond
    // the noise has none to credit, and its knobs are not put back one by one.
    let gained = verdicts
        .against
        .iter()
        .any(|(b, f)| b == "default" && f.verdict == Verdict::Faster);
    let ablations = if gained {
        ablate(p, &id, &knobs, seconds, &verdicts, stop)?
    } else {
        Vec::new()
    };
    let mut text = summary(p, &winner, &trials, &verdicts, entry);
    if gained {
        text += &mattered(&ablations, &verdicts, seconds, &p.goal);
    } else if winner.name != "default" {
        text += &format!(
            "what mattered: not measured: {} has no gain over default beyond the noise to credit to a knob\n",
            winner.name
        );
    }
    out!("{text}");
    let conf = (tuning.config)(&winner_knobs);
    std::fs::write(&p.out, conf).map_err(Error::io("write", &p.out))?;
    if let Some(path) = &p.json {
        // The winner's knobs as set (tuned's are its profile's).
        let set = Candidate {
            knobs: winner_knobs.clone(),
            ..winner.clone()
        };
        let record = json_record(p, &id, &set, &trials, &verdicts, &ablations, began);
        let text = serde_json::to_string_pretty(&record).expect("json serializes") + "\n";
        std::fs::write(path, text).map_err(Error::io("write", path))?;
    }
    if let Some(path) = &p.html {
        let page = crate::report::tune_html(&view(
            p,
            &candidates,
            &winner,
            &winner_knobs,
            &trials,
            &verdicts,
            &ablations,
        ));
        std::fs::write(path, page).map_err(Error::io("write", path))?;
        errln!("tune: the search drawn in {}", path.display());
    }
    errln!(
        "tune: the winner's configuration written to {}",
        p.out.display()
    );
    if verdicts.failed > 0 {
        errln!(
            "tune: {} runs of the final comparison were not measured (see above): its verdicts rest on fewer runs",
            verdicts.failed
        );
        return Ok(Outcome::Failures);
    }
    Ok(Outcome::Success)
}

/// A candidate drawn from the space (c01, c02...), not one of the baselines every search
/// measures (default, tuned, a heuristic's recommendation).
fn is_drawn(c: &Candidate) -> bool {
    c.name.len() == 3 && c.name.starts_with('c') && c.name[1..].bytes().all(|b| b.is_ascii_digit())
}

/// The knobs a candidate sets (`tuned`'s are its profile's).
fn knobs_of(c: &Candidate, tuning: &Tuning, facts: &Facts) -> Vec<(String, String)> {
    if c.name == "tuned" {
        (tuning.tuned)(facts)
    } else {
        c.knobs.clone()
    }
}

fn describe(c: &Candidate) -> String {
    if c.knobs.is_empty() {
        return c.name.clone();
    }
    let knobs: Vec<String> = c.knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{}{} ({})",
        c.name,
        if c.unsafe_profile { " UNSAFE" } else { "" },
        knobs.join(" ")
    )
}

/// What a trial's point offers: a closed loop for its seconds, or phases (`--phase` specs).
enum Load {
    Closed(u64),
    Phases(Vec<String>),
}

impl Load {
    /// The load of a trial of `seconds` for the goal: a capacity trial's first point is its
    /// closed loop (the ceiling its staircase climbs to).
    fn of(goal: &Goal, seconds: u64) -> Load {
        match goal {
            Goal::Throughput | Goal::Capacity { .. } => Load::Closed(seconds),
            // Arrivals at the rate for the trial's seconds: one phase.
            Goal::Latency { rate, .. } => Load::Phases(vec![format!("{seconds}s:rate={rate}")]),
        }
    }
}

/// The plan of one trial: one point of the candidate, its own name in the store.
fn trial_plan(
    p: &TunePlan,
    name: &str,
    c: &Candidate,
    load: &Load,
) -> Result<(PlanFile, String), Error> {
    let count = |n: u64| toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let text = |s: &str| toml::Value::String(s.to_string());
    let mut pairs: Vec<(&str, toml::Value)> = vec![
        ("name", text(name)),
        ("workload", text(&p.workload)),
        ("engines", vec![p.engine.clone()].into()),
        ("profiles", vec![c.name.clone()].into()),
        ("clients", toml::Value::Array(vec![count(p.clients.into())])),
        ("warmup", count(p.warmup_s)),
        ("repeats", count(1)),
        ("scale", count(p.scale.into())),
    ];
    match load {
        Load::Closed(seconds) => pairs.push(("time", count(*seconds))),
        Load::Phases(specs) => pairs.push(("phases", specs.clone().into())),
    }
    if let Some(protocol) = &p.protocol {
        pairs.push(("protocol", text(protocol)));
    }
    if let Some(dir) = &p.data_dir {
        pairs.push(("data_dir", text(&dir.display().to_string())));
    }
    if let Some(dir) = &p.bin_dir {
        let mut t = toml::Table::new();
        t.insert(p.engine.clone(), text(&dir.display().to_string()));
        pairs.push(("bin_dir", toml::Value::Table(t)));
    }
    if !c.knobs.is_empty() {
        let knobs: toml::Table = c.knobs.iter().map(|(k, v)| (k.clone(), text(v))).collect();
        let mut profile = toml::Table::new();
        profile.insert("unsafe".into(), toml::Value::Boolean(c.unsafe_profile));
        profile.insert(p.engine.clone(), toml::Value::Table(knobs));
        let mut profiles = toml::Table::new();
        profiles.insert(c.name.clone(), toml::Value::Table(profile));
        pairs.push(("profile", toml::Value::Table(profiles)));
    }
    if !p.options.is_empty() {
        let options: toml::Table = p
            .options
            .iter()
            .map(|(k, v)| (k.clone(), text(v)))
            .collect();
        pairs.push(("options", toml::Value::Table(options)));
    }
    PlanFile::build(pairs)
}

/// One trial: the candidate's point measured (or found in the store), its objective; a
/// candidate the server refuses, or whose point failed, has the reason instead.
fn trial(
    p: &TunePlan,
    id: &str,
    tag: &str,
    c: &Candidate,
    seconds: u64,
    stop: &Arc<AtomicBool>,
) -> Result<Result<f64, String>, Error> {
    let name = format!("tune-{id}-{tag}-{}", c.name);
    if let Goal::Capacity { objectives } = &p.goal {
        return capacity(p, &name, c, seconds, objectives, stop);
    }
    let entry = crate::workload::find(&p.workload)?;
    Ok(point(p, &name, c, seconds, stop)?.map(|row| p.goal.ranked(entry, &row)))
}

/// The figure the final comparison and the ablation judge for candidate `c`, stored under
/// `name`: a capacity trial's capacity, or the one run's tps or percentile.
fn judged_value(
    p: &TunePlan,
    name: &str,
    c: &Candidate,
    seconds: u64,
    stop: &Arc<AtomicBool>,
) -> Result<Result<f64, String>, Error> {
    if let Goal::Capacity { objectives } = &p.goal {
        return capacity(p, name, c, seconds, objectives, stop);
    }
    Ok(point(p, name, c, seconds, stop)?.map(|row| p.goal.judged(&row)))
}

/// A capacity trial of candidate `c`: its closed loop (`NAME-ceiling`), then a staircase
/// of open-loop rates up to that ceiling in one run (`NAME-stairs`), each step `seconds` long
/// (stretched, up to MAX_STRETCH times, until the strictest percentile has the transactions it
/// needs, as `capacity`'s steps are); the capacity found, or why there is none.
fn capacity(
    p: &TunePlan,
    name: &str,
    c: &Candidate,
    seconds: u64,
    objectives: &[Objective],
    stop: &Arc<AtomicBool>,
) -> Result<Result<f64, String>, Error> {
    let ceiling = match point(p, &format!("{name}-ceiling"), c, seconds, stop)? {
        Ok(row) => row.tps,
        Err(why) => return Ok(Err(why)),
    };
    let needed = objectives
        .iter()
        .map(Objective::transactions_needed)
        .fold(0.0, f64::max);
    // Each step's rate as its spec gives it (to a thousandth of a transaction a second).
    let rates: Vec<f64> = STAIRS
        .iter()
        .map(|share| (share * ceiling * 1000.0).round() / 1000.0)
        .collect();
    let specs: Vec<String> = rates
        .iter()
        .map(|rate| {
            let want = (needed / rate).ceil() as u64;
            let secs = want.clamp(seconds, seconds * MAX_STRETCH);
            format!("{secs}s:rate={rate:.3}")
        })
        .collect();
    // Steps too slow for the strictest objective's transactions even stretched, as
    // `capacity` warns of its own.
    let short = |rate: f64| needed / rate > (seconds * MAX_STRETCH) as f64;
    let stairs = format!("{name}-stairs");
    let row = match point_loaded(p, &stairs, c, &Load::Phases(specs), stop)? {
        Ok(row) => row,
        Err(why) => return Ok(Err(why)),
    };
    let result = Store::open(&p.results)?.result(row.id)?;
    // A lost client fails `capacity`'s step; a staircase cannot say which step it left in.
    if let Some(lost) = result["lost_clients"].as_array().filter(|l| !l.is_empty()) {
        return Ok(Err(format!(
            "run {}: {} clients lost during the staircase",
            row.id,
            lost.len()
        )));
    }
    let phases: Vec<PhaseResult> = match serde_json::from_value(result["phases"].clone()) {
        Ok(phases) => phases,
        Err(e) => return Ok(Err(format!("run {}: its phases unreadable: {e}", row.id))),
    };
    let steps: Vec<String> = phases
        .iter()
        .zip(&rates)
        .map(|(phase, rate)| {
            let misses = step_misses(phase, objectives, p.clients);
            let few = if short(*rate) {
                " (too few transactions for the objectives)"
            } else {
                ""
            };
            if misses.is_empty() {
                format!("{rate:.1} met{few}")
            } else {
                format!("{rate:.1} FAILED ({}){few}", misses.join(", "))
            }
        })
        .collect();
    errln!(
        "tune: {}: ceiling {ceiling:.1} tps; staircase (tps offered): {}",
        c.name,
        steps.join("; ")
    );
    Ok(Ok(capacity_of(&phases, &rates, objectives, p.clients)))
}

/// A step of the staircase too slow for its percentile is stretched at most this many times.
const MAX_STRETCH: u64 = 10;

/// Why a step of the staircase failed (empty: it passed): an objective missed, the rate not
/// kept (`capacity::rate_kept`), no transaction, or failed transactions where no objective
/// allows some, by the rules of `capacity`'s steps.
pub fn step_misses(phase: &PhaseResult, objectives: &[Objective], clients: u32) -> Vec<String> {
    let mut failed: Vec<String> = objectives
        .iter()
        .map(|o| {
            (
                o,
                o.value_of(&phase.latency_ms, phase.transactions, phase.errors),
            )
        })
        .filter(|(o, v)| !o.met(*v))
        .map(|(o, v)| format!("{} ({})", o.text, o.show(v)))
        .collect();
    if let (Some(due), Some(started)) = (phase.due, phase.started)
        && !crate::capacity::rate_kept(due, started, clients)
    {
        failed.push(format!(
            "rate not kept ({} of {due} due never started)",
            due - started
        ));
    }
    if phase.transactions == 0 {
        failed.push("no transaction completed".into());
    }
    let errors_judged = objectives.iter().any(|o| o.figure == Figure::Errors);
    if phase.errors > 0 && !errors_judged {
        failed.push(format!("{} transactions failed", phase.errors));
    }
    failed
}

/// The capacity a staircase found: the rate offered by its highest step (`rates`, in the
/// phases' order) that passed with every step below it (`step_misses`), 0 when its first
/// step failed; a step the run never reached fails.
pub fn capacity_of(
    phases: &[PhaseResult],
    rates: &[f64],
    objectives: &[Objective],
    clients: u32,
) -> f64 {
    let mut found = 0.0;
    for (phase, rate) in phases.iter().zip(rates) {
        if !step_misses(phase, objectives, clients).is_empty() {
            break;
        }
        found = *rate;
    }
    found
}

/// One point of candidate `c`, stored under the plan `name`: measured, or found in the store
/// from an earlier search; its row, or why there is none (a server that refused the knobs,
/// one that restarted during the run, a run that committed nothing).
fn point(
    p: &TunePlan,
    name: &str,
    c: &Candidate,
    seconds: u64,
    stop: &Arc<AtomicBool>,
) -> Result<Result<RunRow, String>, Error> {
    point_loaded(p, name, c, &Load::of(&p.goal, seconds), stop)
}

/// One point of candidate `c` offering `load`, stored under the plan `name` (see `point`).
fn point_loaded(
    p: &TunePlan,
    name: &str,
    c: &Candidate,
    load: &Load,
    stop: &Arc<AtomicBool>,
) -> Result<Result<RunRow, String>, Error> {
    let (plan, text) = trial_plan(p, name, c, load)?;
    let matrix = Matrix::new(&plan, text)?;
    let ran = crate::sweep::run(&matrix, &p.results, stop);
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(Error::Interrupted);
    }
    if let Err(e) = ran {
        return Ok(Err(e.to_string()));
    }
    let Some(row) = Store::open(&p.results)?.list(Some(name))?.pop() else {
        return Ok(Err("no run was stored".into()));
    };
    if row.server_restarts > 0 || row.tps <= 0.0 {
        return Ok(Err(format!(
            "run {}: {} server restarts, {:.1} tps",
            row.id, row.server_restarts, row.tps
        )));
    }
    Ok(Ok(row))
}

/// The winner against each baseline (`default`, `tuned`, pgtune's), by compare's rule on
/// throughput.
pub struct Verdicts {
    /// Each baseline's name and its runs' mean, the winner's mean, and the judgement.
    pub against: Vec<(String, FigureComparison)>,
    /// The winner's runs' judged figure (tps, or the goal's percentile) in the final
    /// comparison.
    pub winner_values: Vec<f64>,
    /// Each side of the final comparison (in the order they took turns) and its runs' judged
    /// figure.
    pub sides: Vec<(String, Vec<f64>)>,
    /// Runs of the final comparison that could not be measured: the command then exits 1.
    pub failed: usize,
}

/// The final comparison: the baselines (default, tuned, a heuristic's recommendation) and
/// the winner taking turns over `repeats` rounds, each run `seconds` long; then the winner
/// judged against each.
fn verify(
    p: &TunePlan,
    id: &str,
    winner: &Candidate,
    baselines: &[&Candidate],
    seconds: u64,
    stop: &Arc<AtomicBool>,
) -> Result<Verdicts, Error> {
    let mut sides: Vec<&Candidate> = baselines.to_vec();
    if !sides.iter().any(|c| c.name == winner.name) {
        sides.push(winner);
    }
    errln!(
        "tune: the final comparison: {} taking turns, {} runs each of {seconds} s",
        sides
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        p.repeats
    );
    let mut failed = 0;
    let mut runs: BTreeMap<String, Vec<RunRow>> = BTreeMap::new();
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in 0..p.repeats {
        let k = r as usize % sides.len();
        for c in sides[k..].iter().chain(&sides[..k]) {
            let name = format!("tune-{id}-v{}-{}", r + 1, c.name);
            // A capacity is judged over the repeats' values; another figure over the runs
            // themselves (their seconds too, when the repeats are few).
            let measured = match &p.goal {
                Goal::Capacity { .. } => {
                    judged_value(p, &name, c, seconds, stop)?.map(|v| (v, None))
                }
                _ => point(p, &name, c, seconds, stop)?.map(|row| (p.goal.judged(&row), Some(row))),
            };
            match measured {
                Ok((value, row)) => {
                    values.entry(c.name.clone()).or_default().push(value);
                    runs.entry(c.name.clone()).or_default().extend(row);
                }
                Err(why) => {
                    errln!(
                        "tune: the final comparison's run of {}: not measured: {why}",
                        c.name
                    );
                    failed += 1;
                }
            }
        }
    }
    let store = Store::open(&p.results)?;
    let side = |name: &str| -> Result<Side, Error> {
        let runs = runs
            .get(name)
            .into_iter()
            .flatten()
            .map(|row| {
                Ok(Run {
                    source: format!("run {}", row.id),
                    result: store.result(row.id)?,
                    profile: Some(name.to_string()),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Side {
            label: name.to_string(),
            runs,
        })
    };
    let b = side(&winner.name)?;
    let mut against = Vec::new();
    for base in baselines {
        if base.name == winner.name {
            continue;
        }
        if let Goal::Capacity { .. } = p.goal {
            let of = |name: &str| values.get(name).cloned().unwrap_or_default();
            let f = compare::judge_repeats(&compare::CAPACITY, &of(&base.name), &of(&winner.name));
            against.push((base.name.clone(), f));
            continue;
        }
        let a = side(&base.name)?;
        if let Some(f) = compare::judge_one(p.goal.figure(), &a, &b) {
            against.push((base.name.clone(), f));
        }
    }
    let winner_values = values.get(&winner.name).cloned().unwrap_or_default();
    let sides = sides
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                values.get(&c.name).cloned().unwrap_or_default(),
            )
        })
        .collect();
    Ok(Verdicts {
        against,
        winner_values,
        sides,
        failed,
    })
}

/// One of the winner's knobs back to its shipped value: the run without it.
#[derive(Debug, Clone)]
pub struct Ablation {
    pub knob: String,
    pub value: String,
    /// The run's judged figure (tps, or the goal's percentile), or why there is none.
    pub without: Result<f64, String>,
}

/// The winner's knobs, and what the space says of each: whether it gives up durability, and
/// whether a value is the one the engine ships with.
struct Knobs<'a> {
    all: &'a [(String, String)],
    durability: &'a dyn Fn(&str) -> bool,
    shipped: &'a dyn Fn(&str, &str) -> bool,
}

/// What mattered: each of the winner's knobs (but those at their shipped value) left unset in
/// turn, the others kept, one run each as long as the final comparison's.
fn ablate(
    p: &TunePlan,
    id: &str,
    knobs: &Knobs,
    seconds: u64,
    v: &Verdicts,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<Ablation>, Error> {
    let tried: Vec<&(String, String)> = knobs
        .all
        .iter()
        .filter(|(k, val)| !(knobs.shipped)(k, val))
        .collect();
    if tried.is_empty() || v.winner_values.is_empty() {
        return Ok(Vec::new());
    }
    errln!(
        "tune: what mattered: each of the winner's {} knobs off its shipped value back to it, one run of {seconds} s each",
        tried.len()
    );
    let mut out = Vec::new();
    for (i, (knob, value)) in tried.into_iter().enumerate() {
        let rest: Vec<(String, String)> = knobs
            .all
            .iter()
            .filter(|(k, _)| k != knob)
            .cloned()
            .collect();
        let c = Candidate {
            name: if rest.is_empty() {
                "default".into()
            } else {
                format!("a{:02}", i + 1)
            },
            unsafe_profile: rest.iter().any(|(k, _)| (knobs.durability)(k)),
            knobs: rest,
        };
        let name = format!("tune-{id}-a{:02}", i + 1);
        let without = judged_value(p, &name, &c, seconds, stop)?;
        out.push(Ablation {
            knob: knob.clone(),
            value: value.clone(),
            without,
        });
    }
    Ok(out)
}

/// Whether a knob mattered, by one rule: the run without it fell outside the 95% prediction
/// interval of the winner's runs in the final comparison, on the worse side (below it for
/// throughput, above it for a latency). The interval is where one more run of the winner
/// falls 95% of the time, its runs taken as normal: mean +- t(0.975, n-1) x sd x sqrt(1 + 1/n).
/// A knob with no effect is called one that mattered 2.5% of the time (falling below the
/// winner's slowest run, the rule before it, happens to one in n+1 runs of the winner itself).
/// None with fewer than two runs of the winner.
pub fn knob_mattered(without: f64, winner: &[f64], higher_is_better: bool) -> Option<bool> {
    let bound = worse_bound(winner, higher_is_better)?;
    Some(if higher_is_better {
        without < bound
    } else {
        without > bound
    })
}

/// The worse end of the 95% prediction interval of one more run of the winner.
pub fn worse_bound(values: &[f64], higher_is_better: bool) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let half = t975(n - 1) * sd * (1.0 + 1.0 / n as f64).sqrt();
    Some(if higher_is_better {
        mean - half
    } else {
        mean + half
    })
}

/// Student's t 0.975 quantile for `df` degrees of freedom (the standard table; 1.96 beyond 30).
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.saturating_sub(1)).copied().unwrap_or(1.96)
}

/// The knobs whose absence cost most first, those not measured last.
fn costliest_first<'a>(ablations: &'a [Ablation], goal: &Goal) -> Vec<&'a Ablation> {
    let mut sorted: Vec<&Ablation> = ablations.iter().collect();
    sorted.sort_by(|a, b| match (&a.without, &b.without) {
        (Ok(x), Ok(y)) => goal.better(*y, *x),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        _ => std::cmp::Ordering::Equal,
    });
    sorted
}

/// The ablations' lines, the knobs whose absence cost most first.
fn mattered(ablations: &[Ablation], v: &Verdicts, seconds: u64, goal: &Goal) -> String {
    if ablations.is_empty() {
        return String::new();
    }
    let values = &v.winner_values;
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    let higher = goal.higher_is_better();
    let (unit, digits) = (goal.unit(), if higher { 1 } else { 3 });
    let rule = match worse_bound(values, higher) {
        Some(b) => format!(
            "{} {b:.digits$} {unit}, the worse end of the 95% prediction interval of the winner's {} runs",
            if higher { "fell below" } else { "rose above" },
            values.len()
        ),
        None => "could be judged (the winner has fewer than two runs)".into(),
    };
    let mut out = format!(
        "what mattered (each knob back to its shipped value, one run of {seconds} s; a knob mattered when the run without it {rule}):\n"
    );
    for a in costliest_first(ablations, goal) {
        let line = match &a.without {
            Ok(t) => format!(
                "  {}={}: {t:.digits$} {unit} without it ({:+.1}% against the winner's mean): {}\n",
                a.knob,
                a.value,
                100.0 * (t - mean) / mean.max(f64::MIN_POSITIVE),
                match knob_mattered(*t, values, higher) {
                    Some(true) => "mattered",
                    Some(false) => "within the winner's own spread",
                    None => "not judged",
                }
            ),
            Err(why) => format!(
                "  {}={}: not measured without it: {}\n",
                a.knob,
                a.value,
                why.lines().rfind(|l| !l.trim().is_empty()).unwrap_or(why)
            ),
        };
        out += &line;
    }
    out
}

/// One verdict line: the winner against a baseline, by the interval's rule.
pub fn verdict_line(winner: &str, base: &str, f: &FigureComparison) -> String {
    let interval = f
        .ci_pct
        .map(|[lo, hi]| format!(" (95% interval {lo:+.1}% to {hi:+.1}%)"))
        .unwrap_or_default();
    let (a, b, d) = (f.a, f.b, f.difference_pct);
    // Throughput to a tenth of a transaction, latency (`ms p99`) to a microsecond.
    let (unit, digits) = if f.higher_is_better {
        (f.unit.to_string(), 1)
    } else {
        (format!("{} {}", f.unit, f.name), 3)
    };
    let figures = if d.is_finite() {
        format!("{b:.digits$} against {a:.digits$} {unit}, {d:+.1}%{interval}")
    } else {
        // A baseline with nothing (a capacity of 0 in every run): no ratio, the note says why.
        let note = f
            .note
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        format!("{b:.digits$} against {a:.digits$} {unit}{note}")
    };
    match f.verdict {
        Verdict::Faster => format!("{winner} beats {base}: {figures}"),
        Verdict::Slower => format!("{winner} is slower than {base}: {figures}"),
        Verdict::NoDifference => {
            format!("{winner} does not beat {base} beyond the noise: {figures}")
        }
        // The figures still show: a reader sees what could not be judged, and why.
        Verdict::Unknown if d.is_finite() => format!(
            "{winner} against {base}: {figures}; not judged ({})",
            f.note
                .as_deref()
                .unwrap_or("the noise could not be estimated")
        ),
        Verdict::Unknown => format!("{winner} against {base}: {figures}; not judged"),
    }
}

/// `--json`'s record: the search's settings, every trial, the winner, its verdicts against
/// default and tuned (compare's figures), what mattered, and the seconds the whole took.
fn json_record(
    p: &TunePlan,
    id: &str,
    winner: &Candidate,
    trials: &[Trial],
    v: &Verdicts,
    ablations: &[Ablation],
    began: std::time::Instant,
) -> serde_json::Value {
    let outcome = |o: &Result<f64, String>| match o {
        Ok(x) => serde_json::json!({ "value": x }),
        Err(why) => serde_json::json!({ "failed": why }),
    };
    serde_json::json!({
        "search": id,
        "engine": p.engine,
        "workload": p.workload,
        "scale": p.scale,
        "clients": p.clients,
        "trial_s": p.trial_s,
        "budget": p.trials,
        "repeats": p.repeats,
        "unsafe_allowed": p.allow_unsafe,
        "seed": p.seed,
        "objective": {
            "figure": p.goal.figure(),
            "ranked": crate::workload::find(&p.workload).ok().map(|e| p.goal.ranked_name(e)),
            "higher_is_better": p.goal.higher_is_better(),
            "rate": match p.goal { Goal::Latency { rate, .. } => Some(rate), _ => None },
            "slo": match &p.goal { Goal::Capacity { objectives } => objectives.iter().map(|o| o.text.clone()).collect(), _ => Vec::new() },
        },
        "trials": trials.iter().map(|t| {
            let mut o = outcome(&t.outcome);
            o["round"] = t.round.into();
            o["candidate"] = t.candidate.clone().into();
            o["seconds"] = t.seconds.into();
            o
        }).collect::<Vec<_>>(),
        "winner": {
            "name": winner.name,
            "unsafe": winner.unsafe_profile,
            "knobs": winner.knobs.iter().cloned().collect::<BTreeMap<_, _>>(),
            // The final comparison's runs: tps, the goal's percentile in ms, or the capacity.
            "runs": v.winner_values,
        },
        "against": v.against.iter().map(|(base, f)| serde_json::json!({
            "baseline": base,
            "comparison": f,
        })).collect::<Vec<_>>(),
        // A knob mattered when its run fell past this (the worse end of the winner's 95%
        // prediction interval).
        "mattered_bound": worse_bound(&v.winner_values, p.goal.higher_is_better()),
        "beats_default": v.against.iter().any(|(b, f)| b == "default" && f.verdict == Verdict::Faster),
        "ablation": ablations.iter().map(|a| {
            let mut o = match &a.without {
                Ok(x) => serde_json::json!({
                    "without": x,
                    "mattered": knob_mattered(*x, &v.winner_values, p.goal.higher_is_better()),
                }),
                Err(why) => serde_json::json!({ "failed": why }),
            };
            o["knob"] = a.knob.clone().into();
            o["value"] = a.value.clone().into();
            o
        }).collect::<Vec<_>>(),
        "elapsed_s": began.elapsed().as_secs_f64(),
    })
}

/// The winner, its verdict against each baseline, and whether anything beat the baselines a
/// DBA would settle for without a search.
fn conclusions(winner: &Candidate, v: &Verdicts) -> Vec<String> {
    let mut out = vec![format!("winner: {}", describe(winner))];
    for (base, f) in &v.against {
        out.push(verdict_line(&winner.name, base, f));
    }
    for (base, f) in &v.against {
        if base != "default" && f.verdict != Verdict::Faster {
            out.push(format!(
                "nothing the search found beat {base} beyond the noise"
            ));
        }
    }
    out
}

/// What `--html` draws: every trial, the final comparison's sides and verdicts, what mattered.
fn view(
    p: &TunePlan,
    candidates: &[Candidate],
    winner: &Candidate,
    knobs: &[(String, String)],
    trials: &[Trial],
    v: &Verdicts,
    ablations: &[Ablation],
) -> crate::report::TuneView {
    use crate::report::{AblationView, AgainstView, TrialView, TuneView};
    let ranked = crate::workload::find(&p.workload)
        .map(|e| p.goal.ranked_name(e))
        .unwrap_or_else(|_| p.goal.figure().to_string());
    let verdict = |f: &FigureComparison| {
        serde_json::to_value(f.verdict)
            .ok()
            .and_then(|x| x.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let ablations = costliest_first(ablations, &p.goal);
    TuneView {
        title: format!(
            "dbduel tune: {} on {}, scale {}, {} clients",
            p.workload, p.engine, p.scale, p.clients
        ),
        conclusions: conclusions(winner, v),
        ranked,
        judged: p.goal.unit(),
        higher_is_better: p.goal.higher_is_better(),
        trials: trials
            .iter()
            .map(|t| TrialView {
                round: t.round,
                candidate: t.candidate.clone(),
                knobs: candidates
                    .iter()
                    .find(|c| c.name == t.candidate)
                    .map(|c| match c.name.as_str() {
                        "default" => "(as shipped)".to_string(),
                        "tuned" => "(dbduel's tuned profile)".to_string(),
                        _ => {
                            let words: Vec<String> =
                                c.knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                            words.join(" ")
                        }
                    })
                    .unwrap_or_default(),
                seconds: t.seconds,
                value: t.outcome.clone(),
            })
            .collect(),
        winner: winner.name.clone(),
        knobs: knobs.to_vec(),
        sides: v.sides.clone(),
        against: v
            .against
            .iter()
            .map(|(base, f)| AgainstView {
                baseline: base.clone(),
                difference_pct: f.difference_pct,
                ci_pct: f.ci_pct,
                verdict: verdict(f),
            })
            .collect(),
        ablation: ablations
            .into_iter()
            .map(|a| AblationView {
                knob: a.knob.clone(),
                value: a.value.clone(),
                without: a.without.clone(),
                mattered: a
                    .without
                    .as_ref()
                    .ok()
                    .and_then(|x| knob_mattered(*x, &v.winner_values, p.goal.higher_is_better())),
            })
            .collect(),
        bound: worse_bound(&v.winner_values, p.goal.higher_is_better()),
    }
}

/// What the search found: every trial, the final verdicts, the winner's knobs as a plan's
/// profile.
fn summary(
    p: &TunePlan,
    winner: &Candidate,
    trials: &[Trial],
    v: &Verdicts,
    entry: &crate::workload::WorkloadEntry,
) -> String {
    let mut out = format!(
        "tune: {} on {}, {} trials ({} measured)\n",
        p.workload,
        p.engine,
        trials.len(),
        trials.iter().filter(|t| t.outcome.is_ok()).count()
    );
    out += &format!(
        "  {:<5} {:<9} {:>6} {:>12}\n",
        "round",
        "candidate",
        "s",
        p.goal.ranked_name(entry)
    );
    for t in trials {
        // A refusal's last line says why (a server's log ends with its FATAL line).
        let value = match &t.outcome {
            Ok(v) => format!("{v:.1}"),
            Err(why) => format!(
                "refused or failed: {}",
                why.lines().rfind(|l| !l.trim().is_empty()).unwrap_or(why)
            ),
        };
        out += &format!(
            "  {:<5} {:<9} {:>6} {:>12}\n",
            t.round, t.candidate, t.seconds, value
        );
    }
    for line in conclusions(winner, v) {
        out += &line;
        out += "\n";
    }
    if !winner.knobs.is_empty() {
        out += &format!(
            "as a plan's profile:\n[profile.{}]\nunsafe = {}\n{} = {{ {} }}\n",
            winner.name,
            winner.unsafe_profile,
            p.engine,
            winner
                .knobs
                .iter()
                .map(|(k, val)| format!("{k} = \"{val}\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successive_halving_spends_the_budget() {
        assert_eq!(rounds_of(8), vec![8, 3]);
        assert_eq!(rounds_of(2), vec![2]);
        assert_eq!(rounds_of(1), Vec::<usize>::new());
        assert_eq!(first_round(12), 9);
        assert_eq!(first_round(3), 3);
        assert_eq!(first_round(4), 3);
        for budget in 3..60 {
            let n = first_round(budget);
            let spent = |n: usize| rounds_of(n).iter().sum::<usize>();
            assert!(spent(n) <= budget as usize && spent(n + 1) > budget as usize);
        }
    }

    #[test]
    fn a_knob_mattered_only_outside_the_prediction_interval() {
        // Mean 996.67, sd 15.28: 95% of further runs above 996.67 - 4.303 x 15.28 x 1.155.
        let winner = [1000.0, 980.0, 1010.0];
        let bound = worse_bound(&winner, true).unwrap();
        assert!((bound - 920.77).abs() < 0.01, "{bound}");
        assert_eq!(knob_mattered(920.0, &winner, true), Some(true));
        assert_eq!(knob_mattered(921.0, &winner, true), Some(false));
        // Below the slowest run is not enough: a run of the winner itself does that one time
        // in four.
        assert_eq!(knob_mattered(979.9, &winner, true), Some(false));
        assert_eq!(knob_mattered(1200.0, &winner, true), Some(false));
        assert_eq!(knob_mattered(500.0, &[], true), None);
        assert_eq!(knob_mattered(500.0, &[1000.0], true), None);
        // A latency: it mattered above the interval (mean 2.233, sd 0.252: 3.484).
        let p99 = [2.0, 2.5, 2.2];
        assert_eq!(knob_mattered(3.49, &p99, false), Some(true));
        assert_eq!(knob_mattered(3.48, &p99, false), Some(false));
        assert_eq!(knob_mattered(1.0, &p99, false), Some(false));
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(200), 1.96);
    }

    #[test]
    fn goals_are_checked_together() {
        assert_eq!(Goal::parse(None, None, &[]).unwrap(), Goal::Throughput);
        assert_eq!(
            Goal::parse(Some("TPS"), None, &[]).unwrap(),
            Goal::Throughput
        );
        assert_eq!(
            Goal::parse(Some("P99"), Some(500.0), &[]).unwrap(),
            Goal::Latency {
                figure: "p99",
                rate: 500.0
            }
        );
        let refused = |o: Option<&str>, r: Option<f64>| match Goal::parse(o, r, &[]) {
            Err(Error::Usage(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(refused(Some("p99"), None).contains("give --rate TPS"));
        assert!(refused(None, Some(100.0)).contains("--objective p99"));
        assert!(refused(Some("p42"), Some(100.0)).contains("p50, p95, p99"));
        assert!(refused(Some("p95"), Some(0.0)).contains("above 0"));
        // Less is better for a latency: the lowest first.
        let g = Goal::parse(Some("p95"), Some(10.0), &[]).unwrap();
        let mut v = [3.0, 1.0, 2.0];
        v.sort_by(|a, b| g.better(*a, *b));
        assert_eq!(v, [1.0, 2.0, 3.0]);
        v.sort_by(|a, b| Goal::Throughput.better(*a, *b));
        assert_eq!(v, [3.0, 2.0, 1.0]);
    }

    #[test]
    fn a_capacity_goal_takes_objectives_and_no_rate() {
        let slo = ["p99<10ms".to_string(), "errors<1%".to_string()];
        let g = Goal::parse(None, None, &slo).unwrap();
        let Goal::Capacity { objectives } = &g else {
            panic!("{g:?}")
        };
        assert_eq!(objectives.len(), 2);
        assert_eq!(Goal::parse(Some("Capacity"), None, &slo).unwrap(), g);
        // More capacity is better.
        let mut v = [1.0, 3.0, 2.0];
        v.sort_by(|a, b| g.better(*a, *b));
        assert_eq!(v, [3.0, 2.0, 1.0]);
        let refused = |o: Option<&str>, r: Option<f64>, slo: &[String]| match Goal::parse(o, r, slo)
        {
            Err(Error::Usage(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(refused(None, Some(100.0), &slo).contains("drop --rate"));
        assert!(refused(Some("p99"), None, &slo).contains("drop --objective"));
        assert!(refused(Some("capacity"), None, &[]).contains("--slo 'p99<10ms'"));
        assert!(refused(None, None, &["p99>1ms".to_string()]).contains("FIGURE<LIMIT"));
    }

    /// The same objectives in another order or case resume the same search; another limit
    /// is another search.
    #[test]
    fn a_capacity_search_is_named_by_what_its_objectives_mean() {
        let plan = |slo: &[&str]| TunePlan {
            engine: "sqlite".into(),
            workload: "tpcb".into(),
            scale: 1,
            clients: 1,
            trial_s: 1,
            warmup_s: 0,
            trials: 4,
            repeats: 3,
            allow_unsafe: false,
            seed: 1,
            protocol: None,
            data_dir: None,
            bin_dir: None,
            results: "r.db".into(),
            out: "s.conf".into(),
            options: BTreeMap::new(),
            space: None,
            json: None,
            goal: Goal::parse(
                None,
                None,
                &slo.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            )
            .unwrap(),
            html: None,
        };
        let id = search_id(&plan(&["p99<10ms", "errors<1%"]));
        assert_eq!(id, search_id(&plan(&["Errors < 1%", "P99<10MS"])));
        assert_ne!(id, search_id(&plan(&["p99<20ms", "errors<1%"])));
        assert_ne!(id, search_id(&plan(&["p99<=10ms", "errors<1%"])));
    }

    /// A step of a staircase at `rate` a second for 2 s: its p99, the arrivals that never
    /// started, its failed transactions.
    fn step(rate: f64, p99: f64, unstarted: u64, errors: u64) -> PhaseResult {
        let due = (rate * 2.0) as u64;
        serde_json::from_value(serde_json::json!({
            "name": "p", "load": "", "start_s": 0.0, "seconds": 2.0,
            "transactions": due - unstarted - errors, "tps": rate, "due": due,
            "started": due - unstarted, "errors": errors, "retries": 0,
            "latency_ms": {"mean": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0, "p99": p99,
                           "p99_9": p99, "max": p99},
        }))
        .unwrap()
    }

    #[test]
    fn the_capacity_is_the_highest_step_met_with_every_step_below() {
        let slo = [Objective::parse("p99<10ms").unwrap()];
        let stairs = [
            step(100.0, 2.0, 0, 0),
            step(200.0, 4.0, 0, 0),
            step(300.0, 12.0, 0, 0),
            // Met again above a failed step: a queue's chance, not the capacity.
            step(400.0, 5.0, 0, 0),
        ];
        assert_eq!(
            capacity_of(&stairs, &[100.0, 200.0, 300.0, 400.0], &slo, 4),
            200.0
        );
        assert_eq!(
            step_misses(&stairs[2], &slo, 4),
            ["p99<10ms (12.000 ms)".to_string()]
        );
        // The first step failed: no capacity on the staircase.
        assert_eq!(capacity_of(&stairs[2..], &[300.0, 400.0], &slo, 4), 0.0);
        // A step whose arrivals did not all start missed its rate, however fast the rest
        // were: 50 of 400 left, over 1% and over 10 a client.
        let behind = [step(100.0, 2.0, 0, 0), step(200.0, 2.0, 50, 0)];
        assert_eq!(capacity_of(&behind, &[100.0, 200.0], &slo, 4), 100.0);
        assert!(step_misses(&behind[1], &slo, 4)[0].contains("rate not kept"));
        // ... but 30 left at 4 clients is a queue that comes and goes.
        assert_eq!(
            capacity_of(&[step(200.0, 2.0, 30, 0)], &[200.0], &slo, 4),
            200.0
        );
        // The rate is the one offered, whatever the arrivals drawn; a step never reached
        // fails.
        assert_eq!(capacity_of(&stairs[..2], &[100.5, 199.5], &slo, 4), 199.5);
        assert_eq!(capacity_of(&stairs[..1], &[100.0, 200.0], &slo, 4), 100.0);
        // A failed transaction fails the step, unless an objective allows some.
        let failing = [step(100.0, 2.0, 0, 0), step(200.0, 2.0, 0, 3)];
        assert_eq!(capacity_of(&failing, &[100.0, 200.0], &slo, 4), 100.0);
        let allowed = [slo[0].clone(), Objective::parse("errors<1%").unwrap()];
        assert_eq!(capacity_of(&failing, &[100.0, 200.0], &allowed, 4), 200.0);
    }

    #[test]
    fn a_space_of_ones_own() {
        let space = space_text(
            "shared_buffers = [\"128MB\", \"1GB\"]\nrandom_page_cost = [4, 1.1]\n\
             [durability]\nsynchronous_commit = [\"on\", \"off\"]\n",
        )
        .unwrap();
        assert_eq!(space.len(), 3);
        let knob = |n: &str| space.iter().find(|k| k.name == n).unwrap();
        assert_eq!(knob("random_page_cost").values, vec!["4", "1.1"]);
        assert!(knob("synchronous_commit").durability && !knob("shared_buffers").durability);
        assert!(
            space_text("x = [\"only\"]")
                .unwrap_err()
                .contains("two or more")
        );
        assert!(space_text("").unwrap_err().contains("no knob"));
        assert!(space_text("x = 3").unwrap_err().contains("knob `x`"));
    }

    #[test]
    fn candidates_differ_and_keep_durability_unless_unsafe() {
        let space = vec![
            Knob::new("a", &["1", "2", "3"]),
            Knob::new("b", &["x", "y"]),
            Knob::durability("sync", &["on", "off"]),
        ];
        let safe = draw(&space, 4, false, 7);
        assert_eq!(safe.len(), 4);
        for (i, c) in safe.iter().enumerate() {
            assert!(!c.knobs.is_empty() && !c.unsafe_profile);
            assert!(c.knobs.iter().all(|(k, _)| k != "sync"));
            assert!(safe[..i].iter().all(|o| o.knobs != c.knobs));
        }
        // Only 5 safe combinations set a knob: no more are drawn.
        assert_eq!(draw(&space, 10, false, 7).len(), 5);
        let risky = draw(&space, 11, true, 7);
        assert_eq!(risky.len(), 11);
        assert!(
            risky
                .iter()
                .all(|c| c.unsafe_profile == c.knobs.iter().any(|(k, _)| k == "sync"))
        );
        assert_eq!(
            draw(&space, 4, false, 7),
            safe,
            "the same seed, the same draws"
        );
    }

    #[test]
    fn a_verdict_not_judged_still_shows_its_figures() {
        let f = FigureComparison {
            name: "tps",
            unit: "tps",
            higher_is_better: true,
            a: 2408.8,
            b: 2957.8,
            difference: 549.0,
            difference_pct: 22.8,
            ci: None,
            ci_pct: Some([-3.5, 51.0]),
            verdict: Verdict::Unknown,
            note: Some("3 and 3 repeats are too few".into()),
        };
        assert_eq!(
            verdict_line("default", "tuned", &f),
            "default against tuned: 2957.8 against 2408.8 tps, +22.8% (95% interval -3.5% to +51.0%); not judged (3 and 3 repeats are too few)"
        );
        let judged = FigureComparison {
            verdict: Verdict::NoDifference,
            note: None,
            ..f
        };
        assert!(
            verdict_line("default", "tuned", &judged)
                .starts_with("default does not beat tuned beyond the noise: 2957.8 against")
        );
    }
}
