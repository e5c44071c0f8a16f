//! `dbduel capacity`: the highest rate a database sustains while every objective holds (`--slo
//! 'p99<10ms'`): a closed-loop step for the ceiling, open-loop steps at rising rates until one
//! fails, steps that narrow in between the highest passing rate and the lowest failing one, and the
//! boundary step repeated; each step long enough for its percentile and warmed up. The steps the
//! search asks for are run here, each one `point::run_point` of the same `RunPlan` with its rate
//! and length set (stretched until its objectives have the transactions they need), judged
//! (objectives, rate kept, clients lost) and printed as it ends; the record's warnings
//! (client-bound steps, steps too short for their percentile). The steps (the latency-against-rate
//! curve, the client's headroom) as a table, a JSON `Capacity` record and the `CapacityView` an
//! HTML chart is drawn from (report/html/capacity.rs), which the command (commands.rs) prints and
//! writes. The search's decisions are `search.rs` (no database); the objectives `slo.rs`.

mod search;
pub mod slo;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use crate::cli::CapacityArgs;
use crate::dsn::Dsn;
use crate::error::Error;
use crate::point::{self, Observe};
use crate::result::RunResult;
use crate::run_plan::{self, RunPlan};
use crate::runner::Limit;
use search::{CEILING_SHARE, CONFIRM_TRIES, Found, Judged};
use slo::Objective;

/// Warm-up of each step when `--warmup` is not given.
const STEP_WARMUP_S: u64 = 2;
/// A step runs at most this many times `-T` to reach the transactions its percentile needs.
const MAX_STRETCH: u64 = 10;
/// Transactions per client that may still wait at the end of a step that keeps its rate:
/// below capacity a queue comes and goes (near it, a few per client in a step of seconds),
/// above it the queue grows with the step; over 1% of the due ones and over this many fail.
pub const QUEUED_PER_CLIENT: u64 = 10;

/// Whether an open loop kept its rate: 99% of the transactions due started, or no more than
/// QUEUED_PER_CLIENT a client still waited at the end (a queue that comes and goes).
pub fn rate_kept(due: u64, started: u64, clients: u32) -> bool {
    started * 100 >= due * 99
        || due.saturating_sub(started) <= QUEUED_PER_CLIENT * u64::from(clients)
}

/// One measured step.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// closed-loop (the ceiling), rising, narrowing, falling (below a failing first step), or
    /// confirming (the boundary repeated).
    pub phase: &'static str,
    /// The offered rate (None: the closed loop).
    pub rate: Option<f64>,
    pub measured_s: f64,
    pub tps: f64,
    pub transactions: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    /// Each objective's value in this step.
    pub values: Vec<f64>,
    /// The open loop kept its schedule (99% of the transactions due started in time).
    pub rate_met: bool,
    /// The client's headroom: its process's share of the machine and its threads' busy share.
    pub client_cpu_share: f64,
    pub client_busy: f64,
    pub client_bound: bool,
    /// Why it failed: objectives missed, the rate not kept, clients lost. Empty: it passed.
    pub failed: Vec<String>,
    /// Too few transactions for the strictest percentile, even stretched to its limit.
    pub short: bool,
    /// What limited the step (`metrics::waits::verdict`): its key and its sentence.
    pub limiter: String,
    pub limited_by: String,
    /// The evidence the verdict rests on, as a run's result keeps it: the sessions' waits (or
    /// an embedded engine's connections' figures), the server's counters, where the time went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits: Option<crate::metrics::waits::Waits>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedded_waits: Option<crate::metrics::embedded::EmbeddedWaits>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_counters: Option<crate::metrics::counters::ServerCounters>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statements: Option<crate::metrics::statements::Statements>,
}

impl Step {
    pub fn passed(&self) -> bool {
        self.failed.is_empty()
    }
}

/// The whole search, as far as it went.
#[derive(Debug, Clone, Serialize)]
pub struct Capacity {
    pub dbduel_version: &'static str,
    pub workload: String,
    pub engine: String,
    pub dsn: String,
    pub clients: u32,
    pub objectives: Vec<String>,
    pub step_s: u64,
    pub warmup_s: u64,
    /// How close the passing and failing rates get before the search stops, in percent.
    pub precision_pct: f64,
    pub steps: Vec<Step>,
    /// The highest rate that met every objective, confirmed by a second step.
    pub capacity_tps: Option<f64>,
    /// The lowest rate that failed (None: none failed up to the ceiling).
    pub failing_tps: Option<f64>,
    /// One sentence: what was found.
    pub verdict: String,
    /// What weakens the verdict: client-bound steps, steps too short for their percentile.
    pub warnings: Vec<String>,
    /// Open-loop steps with too few transactions for the strictest percentile.
    pub short_steps: usize,
    pub interrupted: bool,
}

/// A search as asked, checked before anything connects.
pub struct Search {
    plan: RunPlan,
    dsn: Dsn,
    /// `--json`: the search's record (not each step's result).
    json: Option<std::path::PathBuf>,
    objectives: Vec<Objective>,
    step_s: u64,
    warmup_s: u64,
    precision: f64,
}

fn usage<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error::Usage(msg.into()))
}

impl Search {
    pub fn new(args: &CapacityArgs) -> Result<Search, Error> {
        let run = &args.run;
        if run.rate.is_some() {
            return usage("--rate: capacity chooses the rates itself: drop it");
        }
        if !run.phase.is_empty() {
            return usage(
                "--phase: capacity chooses each step's rate itself: drop it (a run in phases is `dbduel run --phase`)",
            );
        }
        if run.transactions.is_some() {
            return usage(
                "--transactions: capacity's steps are timed: give each step's length with --time",
            );
        }
        if run.shard.is_some() {
            return usage("--shard: capacity runs from one process: drop it");
        }
        if run.start_at.is_some() {
            return usage(
                "--start-at (or DBDUEL_START_AT): capacity's steps start one after another: drop it",
            );
        }
        if !(args.precision > 0.0 && args.precision <= 50.0) {
            return usage(format!(
                "--precision {}: give a percentage above 0 and at most 50",
                args.precision
            ));
        }
        let objectives = args
            .slo
            .iter()
            .map(|s| Objective::parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        let plan = run_plan::run_plan(run)?;
        if plan.workload.params.contains_key("spec_timing") {
            return usage(
                "--spec-timing paces each terminal by its keying and think times, and capacity offers rates of its own: drop --spec-timing",
            );
        }
        let Some(dsn) = plan.target.dsn.clone() else {
            return usage(
                "capacity needs --dsn (or DBDUEL_DSN): the database whose capacity to find, prepared",
            );
        };
        let built = (plan.target.workload.new)(&plan.workload)?;
        if built.fixed_clients().is_some() {
            return usage(format!(
                "capacity: {} runs a fixed set of streams to their end and takes no rate",
                plan.target.workload.name
            ));
        }
        if let Some((_, n)) = built.clients_run() {
            return usage(format!(
                "capacity: {} runs {n} of the {} clients asked, and the rates a step offers would be spread over them, not the load they carry in the whole: find the whole mix's capacity",
                built.variant(),
                plan.workload.clients
            ));
        }
        if let Some(path) = &plan.json {
            crate::result::check_writable(path)?;
        }
        let mut plan = plan;
        let json = plan.json.take();
        Ok(Search {
            json,
            step_s: plan.time_s.unwrap_or(run_plan::DEFAULT_SECONDS),
            warmup_s: match run.warmup {
                0 => STEP_WARMUP_S,
                w => w,
            },
            plan,
            dsn,
            objectives,
            precision: args.precision / 100.0,
        })
    }

    pub fn json_path(&self) -> Option<&std::path::Path> {
        self.json.as_deref()
    }

    /// The record the steps go into, before the first.
    pub fn record(&self) -> Capacity {
        Capacity {
            dbduel_version: env!("CARGO_PKG_VERSION"),
            workload: self.plan.target.workload.name.to_string(),
            // The DSN's engine until a step reads the server's version.
            engine: crate::engine::entry_for(&self.dsn.scheme)
                .map_or_else(|| self.dsn.scheme.clone(), |e| e.name.to_string()),
            dsn: self.dsn.to_string(),
            clients: self.plan.run.clients,
            objectives: self.objectives.iter().map(|o| o.text.clone()).collect(),
            step_s: self.step_s,
            warmup_s: self.warmup_s,
            precision_pct: self.precision * 100.0,
            steps: Vec::new(),
            capacity_tps: None,
            failing_tps: None,
            verdict: String::new(),
            warnings: Vec::new(),
            short_steps: 0,
            interrupted: false,
        }
    }

    /// Run the search, each step added to `out` as it ends (so that an error keeps them).
    fn run(&mut self, out: &mut Capacity, stop: &Arc<AtomicBool>) -> Result<(), Error> {
        let ceiling = self.step("closed-loop", None, out, stop)?;
        if out.interrupted {
            return Ok(());
        }
        if ceiling <= 0.0 {
            out.verdict =
                "the closed loop completed no transaction: there is no rate to search".into();
            return Ok(());
        }
        let precision = self.precision;
        let found = search::search(ceiling, precision, |phase, rate| {
            self.step(phase, Some(rate), out, stop)?;
            Ok(if out.interrupted {
                Judged::Interrupted
            } else if out.steps.last().is_some_and(Step::passed) {
                Judged::Met
            } else {
                Judged::Failed
            })
        })?;
        let clients = out.clients;
        out.verdict = match found {
            Found::Capacity { tps, failing } => {
                out.capacity_tps = Some(tps);
                out.failing_tps = failing;
                match failing {
                    Some(f) => format!(
                        "capacity {tps:.1} tps at {clients} clients: the highest rate that met every objective, twice; {f:.1} tps failed"
                    ),
                    None => format!(
                        "capacity at least {tps:.1} tps at {clients} clients: every rate up to {CEILING_SHARE} times the closed loop's met every objective (give more clients to go higher)"
                    ),
                }
            }
            Found::NoneMet { down_to, failing } => {
                out.failing_tps = failing;
                format!(
                    "no rate met every objective, down to {down_to:.1} tps: the objectives are beyond this database at {clients} clients"
                )
            }
            Found::Unconfirmed { near, failing } => {
                out.failing_tps = failing;
                format!(
                    "no capacity confirmed: the boundary step near {near:.1} tps passed and failed in turn {CONFIRM_TRIES} times; run longer steps (-T)"
                )
            }
            Found::Unsteady { lowest, failing } => {
                out.failing_tps = failing;
                format!(
                    "no capacity confirmed: rates down to {lowest:.1} tps failed after higher ones had met every objective, so the database's speed changed during the search (another load on it or on this machine, a checkpoint, a vacuum); run longer steps (-T) on a quiet system"
                )
            }
            // `command` writes the verdict of an interrupted search.
            Found::Interrupted => String::new(),
        };
        Ok(())
    }

    /// Run one step; its tps.
    fn step(
        &mut self,
        phase: &'static str,
        rate: Option<f64>,
        out: &mut Capacity,
        stop: &Arc<AtomicBool>,
    ) -> Result<f64, Error> {
        let needed = self
            .objectives
            .iter()
            .map(Objective::transactions_needed)
            .fold(0.0, f64::max);
        let (secs, short) = match rate {
            Some(r) => {
                let want = (needed / r).ceil() as u64;
                let most = self.step_s * MAX_STRETCH;
                (want.clamp(self.step_s, most), want > most)
            }
            None => (self.step_s, false),
        };
        let plan = &mut self.plan;
        plan.run.rate = rate;
        plan.run.limit = Limit::Time(Duration::from_secs(secs));
        plan.run.warmup = Duration::from_secs(self.warmup_s);
        plan.time_s = Some(secs);
        plan.transactions = None;
        plan.workload.run_s = Some(secs + self.warmup_s);
        let (r, _) = point::run_point(plan, &self.dsn, stop, Observe::Nothing)?;
        out.interrupted = r.interrupted;
        out.engine = format!("{} {}", r.engine.name, r.engine.server_version);
        let step = self.judged(phase, rate, &r, short);
        errln!("{}", step_line(&step, &self.objectives));
        let tps = step.tps;
        out.steps.push(step);
        Ok(tps)
    }

    fn judged(&self, phase: &'static str, rate: Option<f64>, r: &RunResult, short: bool) -> Step {
        let m = &r.measurement;
        let values: Vec<f64> = self.objectives.iter().map(|o| o.value(r)).collect();
        let mut failed: Vec<String> = self
            .objectives
            .iter()
            .zip(&values)
            .filter(|(o, v)| !o.met(**v))
            .map(|(o, v)| format!("{} ({})", o.text, o.show(*v)))
            .collect();
        let rate_met = m
            .open_loop
            .is_none_or(|o| rate_kept(o.due, o.started, self.plan.run.clients));
        if !rate_met {
            let o = m.open_loop.unwrap_or_default();
            failed.push(format!(
                "rate not kept ({} of {} transactions due had not started at the end: over 1% and over {QUEUED_PER_CLIENT} per client)",
                o.due - o.started,
                o.due
            ));
        }
        if !m.lost_clients.is_empty() {
            failed.push(format!("{} clients lost", m.lost_clients.len()));
        }
        if m.transactions == 0 {
            failed.push("no transaction completed".into());
        }
        // Without an objective on errors, a failed transaction fails the step: latencies of the
        // transactions that succeeded say nothing of those that did not.
        let errors_judged = self
            .objectives
            .iter()
            .any(|o| o.figure == slo::Figure::Errors);
        if m.errors > 0 && !errors_judged {
            failed.push(format!(
                "{} transactions failed (give --slo 'errors<X%' to allow some)",
                m.errors
            ));
        }
        Step {
            phase,
            rate,
            measured_s: m.duration_s,
            tps: r.tps,
            transactions: m.transactions,
            errors: m.errors,
            p50_ms: m.latency_ms.p50,
            p95_ms: m.latency_ms.p95,
            p99_ms: m.latency_ms.p99,
            p99_9_ms: m.latency_ms.p99_9,
            values,
            rate_met,
            client_cpu_share: r.client_cpu_share,
            client_busy: m.client_threads.busy,
            client_bound: r.client_bound,
            // The closed loop is the ceiling, not a candidate: it is never judged.
            failed: if rate.is_some() { failed } else { Vec::new() },
            short,
            limiter: r.verdict.as_ref().map_or("", |v| &v.limiter).to_string(),
            limited_by: r.verdict.as_ref().map_or("", |v| &v.says).to_string(),
            waits: r.waits.clone(),
            embedded_waits: r.embedded_waits.clone(),
            server_counters: r.server_counters.clone(),
            statements: r.statements.clone(),
        }
    }
}

/// A step as a line of the progress and of the table.
fn step_line(s: &Step, objectives: &[Objective]) -> String {
    let offered = s.rate.map_or_else(
        || "closed loop".to_string(),
        |r| format!("{r:.1} tps offered"),
    );
    let values: Vec<String> = objectives
        .iter()
        .zip(&s.values)
        .map(|(o, v)| {
            let name = o.text.split('<').next().unwrap_or_default().trim();
            format!("{name} {}", o.show(*v))
        })
        .collect();
    let verdict = match (s.rate, s.passed()) {
        (None, _) => "the ceiling".to_string(),
        (Some(_), true) => "met".to_string(),
        (Some(_), false) => format!("FAILED: {}", s.failed.join(", ")),
    };
    let limiter = if s.limiter.is_empty() {
        String::new()
    } else {
        format!("  limited by {}", s.limiter.replace('_', " "))
    };
    format!(
        "  {:<11} {offered:>20}  {:>9.1} tps  {:>5.0} s  {}  client {:.0}% busy{}{}  {verdict}{limiter}",
        s.phase,
        s.tps,
        s.measured_s,
        values.join(", "),
        s.client_busy * 100.0,
        if s.client_bound { " CLIENT-BOUND" } else { "" },
        if s.short {
            " (too few transactions for the percentile)"
        } else {
            ""
        },
    )
}

/// The search as text: every step, then what was found.
/// The search's summary; `steps`: with a line per step (left out when they were just printed
/// to the same terminal).
pub fn summary(c: &Capacity, objectives: &[Objective], steps: bool) -> String {
    let mut out = format!(
        "\ncapacity of {} on {} at {}, {} clients, objectives {}{}\n",
        c.workload,
        c.engine,
        c.dsn,
        c.clients,
        c.objectives.join(", "),
        if steps { "" } else { " (steps above)" }
    );
    for s in c.steps.iter().filter(|_| steps) {
        out += &step_line(s, objectives);
        out.push('\n');
    }
    for w in &c.warnings {
        out += &format!("  warning: {w}\n");
    }
    if c.interrupted {
        out += "  interrupted: the search stopped at the step above\n";
    }
    out += &format!("{}\n", c.verdict);
    if let Some(line) = limit_reason(c) {
        out += &format!("{line}\n");
    }
    out
}

/// What limited the search's boundary: the lowest failing step's verdict (what stopped the
/// rate from rising), else the closed loop's (the ceiling's).
fn limit_reason(c: &Capacity) -> Option<String> {
    let failing = c
        .steps
        .iter()
        .filter(|s| s.rate.is_some() && !s.passed())
        .min_by(|a, b| a.rate.unwrap_or(0.0).total_cmp(&b.rate.unwrap_or(0.0)));
    let (what, step) = match failing {
        Some(s) => (
            format!(
                "at {:.1} tps, the lowest rate that failed",
                s.rate.unwrap_or(0.0)
            ),
            s,
        ),
        None => (
            "at the ceiling (the closed loop)".to_string(),
            c.steps.iter().find(|s| s.rate.is_none())?,
        ),
    };
    (!step.limited_by.is_empty()).then(|| format!("limited {what}, by {}", step.limited_by))
}

/// What weakens the search's verdict, for the summary and the JSON.
fn warnings(c: &Capacity) -> Vec<String> {
    let mut out = Vec::new();
    if c.steps.iter().any(|s| s.client_bound) {
        out.push(
            "a step was client-bound: dbduel's client, not the database, set its limit there"
                .into(),
        );
    }
    if c.short_steps > 0 {
        out.push(format!(
            "{} of {} steps were too short for their percentile (too few transactions even at {MAX_STRETCH} times -T {} s): their verdicts rest on a few slow transactions; give a longer -T",
            c.short_steps,
            c.steps.len(),
            c.step_s
        ));
    }
    out
}

impl Search {
    /// The objectives, as parsed from `--slo`.
    pub fn objectives(&self) -> &[Objective] {
        &self.objectives
    }

    /// The search run as far as it goes: the record of every step measured, its verdict (the
    /// error's, when a step failed with one, which is returned beside the record so that the
    /// steps measured are kept) and its warnings.
    pub fn find(&mut self, stop: &Arc<AtomicBool>) -> (Capacity, Result<(), Error>) {
        let mut record = self.record();
        let ran = self.run(&mut record, stop);
        if let Err(e) = &ran {
            record.verdict = format!("the search stopped: {e}");
        }
        if record.interrupted {
            // The last step's figures are partial and the search did not finish: no capacity.
            record.capacity_tps = None;
            record.failing_tps = None;
            let passed = record
                .steps
                .iter()
                .rev()
                .skip(1)
                .filter(|s| s.rate.is_some() && s.passed());
            record.verdict = match passed.map(|s| s.rate.unwrap_or(0.0)).reduce(f64::max) {
                Some(r) => format!(
                    "interrupted after {} steps: no capacity found; the highest rate that met every objective so far was {r:.1} tps",
                    record.steps.len()
                ),
                None => format!(
                    "interrupted after {} steps: no capacity found",
                    record.steps.len()
                ),
            };
        }
        record.short_steps = record.steps.iter().filter(|s| s.short).count();
        record.warnings = warnings(&record);
        (record, ran)
    }
}

/// What the chart shows of a search: p50 and p99, and the curve of every other latency
/// figure an objective judges (its value in each step), under that objective's limit.
pub fn view(c: &Capacity, objectives: &[Objective]) -> crate::report::CapacityView {
    let latency: Vec<(usize, &Objective)> = objectives
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o.figure, slo::Figure::Latency(_)))
        .collect();
    let mut judged: Vec<(&'static str, usize)> = Vec::new();
    for (i, o) in &latency {
        let name = o.figure_name();
        if !["p50", "p99"].contains(&name) && !judged.iter().any(|(n, _)| *n == name) {
            judged.push((name, *i));
        }
    }
    let mut curves = vec!["p50", "p99"];
    curves.extend(judged.iter().map(|(n, _)| *n));
    crate::report::CapacityView {
        title: format!(
            "capacity of {} on {}, {} clients",
            c.workload, c.engine, c.clients
        ),
        limits: latency
            .iter()
            .map(|(_, o)| (o.text.clone(), o.limit))
            .collect(),
        curves,
        steps: c
            .steps
            .iter()
            .filter_map(|s| {
                let mut latency_ms = vec![s.p50_ms, s.p99_ms];
                latency_ms.extend(
                    judged
                        .iter()
                        .map(|(_, i)| s.values.get(*i).copied().unwrap_or(0.0)),
                );
                s.rate.map(|offered| crate::report::StepView {
                    offered,
                    done: s.tps,
                    latency_ms,
                    passed: s.passed(),
                    client_busy: s.client_busy,
                })
            })
            .collect(),
        capacity: c.capacity_tps,
        ceiling: c.steps.iter().find(|s| s.rate.is_none()).map(|s| s.tps),
        verdict: c.verdict.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn search(extra: &[&str]) -> Result<Search, Error> {
        let mut argv = vec!["dbduel", "capacity"];
        argv.extend(extra);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Capacity(args) => Search::new(&args),
            other => panic!("not capacity: {other:?}"),
        }
    }

    fn step(rate: f64, values: Vec<f64>, short: bool) -> Step {
        Step {
            phase: "rising",
            rate: Some(rate),
            measured_s: 2.0,
            tps: rate,
            transactions: 100,
            errors: 0,
            p50_ms: 1.0,
            p95_ms: 2.0,
            p99_ms: 3.0,
            p99_9_ms: 4.0,
            values,
            rate_met: true,
            client_cpu_share: 0.1,
            client_busy: 0.1,
            client_bound: false,
            failed: Vec::new(),
            short,
            limiter: "cpu".into(),
            limited_by: format!("server CPU at {rate}"),
            waits: None,
            embedded_waits: None,
            server_counters: None,
            statements: None,
        }
    }

    #[test]
    fn the_boundary_is_explained_by_the_lowest_failing_steps_verdict() {
        let mut c = search(&["tpcb", "--dsn", "sqlite:///tmp/x.db", "--slo", "p99<10ms"])
            .unwrap()
            .record();
        let mut ceiling = step(50.0, vec![1.0], false);
        ceiling.rate = None;
        ceiling.limited_by = "locks at the ceiling".into();
        c.steps = vec![ceiling, step(40.0, vec![1.0], false)];
        // Nothing failed: the ceiling's verdict.
        assert!(
            summary(&c, &[], true)
                .contains("limited at the ceiling (the closed loop), by locks at the ceiling"),
            "{}",
            summary(&c, &[], true)
        );
        let mut failed = |rate: f64| {
            let mut s = step(rate, vec![20.0], false);
            s.failed = vec!["p99<10ms (20 ms)".into()];
            c.steps.push(s);
        };
        failed(45.0);
        failed(42.5);
        let text = summary(&c, &[], true);
        assert!(
            text.contains(
                "limited at 42.5 tps, the lowest rate that failed, by server CPU at 42.5"
            ),
            "{text}"
        );
        assert!(step_line(&c.steps[1], &[]).ends_with("met  limited by cpu"));
    }

    #[test]
    fn spec_timing_is_refused_before_anything_runs() {
        let tpcc = ["tpcc", "--dsn", "sqlite:///tmp/x.db", "--slo", "p99<10ms"];
        let mut args = tpcc.to_vec();
        args.push("--spec-timing");
        match search(&args) {
            Err(Error::Usage(m)) => assert!(m.contains("drop --spec-timing"), "{m}"),
            other => panic!("--spec-timing was not refused: {:?}", other.err()),
        }
        assert!(search(&tpcc).is_ok());
    }

    #[test]
    fn a_search_stopped_before_its_first_step_names_the_engine() {
        let s = search(&["tpcb", "--dsn", "sqlite:///tmp/x.db", "--slo", "p99<10ms"]).unwrap();
        let text = summary(&s.record(), &s.objectives, true);
        assert!(
            text.contains("capacity of tpcb on sqlite at sqlite://"),
            "{text}"
        );
    }

    #[test]
    fn the_chart_draws_the_curve_each_objective_limits() {
        let objectives: Vec<Objective> = ["p90<10ms", "errors<1%", "p99<20ms", "mean<5ms"]
            .iter()
            .map(|t| Objective::parse(t).unwrap())
            .collect();
        let mut c = search(&["tpcb", "--dsn", "sqlite:///tmp/x.db", "--slo", "p99<1ms"])
            .unwrap()
            .record();
        c.steps = vec![
            step(10.0, vec![7.5, 0.0, 3.0, 2.5], false),
            step(20.0, vec![9.5, 0.0, 3.0, 4.5], false),
        ];
        let v = view(&c, &objectives);
        assert_eq!(v.curves, ["p50", "p99", "p90", "mean"]);
        assert_eq!(v.steps[1].latency_ms, [1.0, 3.0, 9.5, 4.5]);
        let page = crate::report::capacity_html(&v);
        assert!(page.contains("data-series=\"p90\""), "no p90 curve");
        assert!(
            page.contains("p90 9.500 ms at 20.0 tps offered"),
            "no p90 point"
        );
        assert!(page.contains("p90 (triangles), mean (diamonds)"));
    }

    #[test]
    fn steps_too_short_for_their_percentile_are_warned_of() {
        let mut c = search(&["tpcb", "--dsn", "sqlite:///tmp/x.db", "--slo", "p99<10ms"])
            .unwrap()
            .record();
        c.steps = vec![step(10.0, vec![1.0], true), step(20.0, vec![1.0], false)];
        c.short_steps = 1;
        let w = warnings(&c);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("1 of 2 steps were too short"), "{w:?}");
        assert!(w[0].contains("longer -T"), "{w:?}");
        c.warnings = w;
        assert!(summary(&c, &[], true).contains("warning: 1 of 2 steps were too short"));
        let line = step_line(&c.steps[0], &[]);
        assert!(summary(&c, &[], true).contains(&line));
        let quiet = summary(&c, &[], false);
        assert!(
            !quiet.contains(&line) && quiet.contains("(steps above)"),
            "{quiet}"
        );
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["short_steps"], 1);
        assert!(json["warnings"][0].as_str().unwrap().contains("too short"));
    }
}
