//! Command-line arguments -> a validated plan (`RunPlan`, `Target`), before any connection is
//! opened: impossible or conflicting options are refused here with the flag to change. The only
//! files read are the scripts of `run FILE.sql` / `-f`, parsed here so that their errors come
//! first.
//!
//! A run as asked (`RunInput`, from `run`'s flags or one point of a sweep's plan) becomes a
//! `RunPlan` only through `RunInput::plan`, so a sweep point and the same `dbduel run` are checked,
//! and retry, alike. `--shard I/N` (or `auto/N`, `auto` taken from the orchestrator's environment)
//! becomes this process's `Shard` of the clients and the rate; `Workload::shards_refused` names a
//! run that cannot be split.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{PrepareArgs, RunArgs, TargetArgs, YcsbArgs};
use crate::dsn::Dsn;
use crate::engine::{EngineOptions, Protocol};
use crate::error::Error;
use crate::metrics::txn_log::LogPlan;
use crate::runner::connections::ConnectionPlan;
use crate::runner::shape::Shape;
use crate::runner::{Limit, RunConfig};
use crate::workload::{self, WorkloadEntry, WorkloadOptions};

/// Default measured duration when neither --time nor --transactions is given.
pub const DEFAULT_SECONDS: u64 = 10;

/// Where a command acts: which workload on which database.
pub struct Target {
    pub workload: &'static WorkloadEntry,
    /// None: a temporary SQLite database (allowed for `run` only).
    pub dsn: Option<Dsn>,
    pub engine: EngineOptions,
}

pub struct RunPlan {
    pub target: Target,
    pub workload: WorkloadOptions,
    pub protocol: Protocol,
    pub run: RunConfig,
    pub progress: Option<Duration>,
    /// `--progress-timestamp`: progress lines stamped with Unix time, as pgbench's.
    pub progress_timestamp: bool,
    /// pgbench's `-v`: pgbench's four tables vacuumed (each engine's way) before the run.
    pub vacuum_first: bool,
    pub json: Option<PathBuf>,
    /// `-l`: pgbench's transaction log.
    pub log: Option<LogPlan>,
    /// `--exit-on-abort`: the first client lost stops the run.
    pub exit_on_abort: bool,
    pub time_s: Option<u64>,
    pub transactions: Option<u64>,
    /// `--shard I/N`: this process runs one part of a run whose clients are split over N.
    pub shard: Option<Shard>,
    /// `--start-at`: the wall-clock time the clients are released at, as given.
    pub start_at: Option<String>,
    /// Whether the server's sessions are sampled during the run (`metrics::waits`).
    pub waits: bool,
    /// `--waits-hz`: the samples a second asked for (None: `metrics::waits::rate` chooses).
    pub waits_hz: Option<u32>,
}

/// One part of a run whose load comes from several processes (`--shard I/N`): its index, the
/// number of shards, and the clients it runs (`first..first + clients` of the run's ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
    pub first_client: u32,
    pub clients: u32,
}

/// `--shard I/N`, `auto/N` or `auto`: the index and the count, the orchestrator's taken from
/// `env` (Kubernetes' Indexed Job: JOB_COMPLETION_INDEX; Slurm: SLURM_PROCID, SLURM_NTASKS).
pub fn shard_spec(given: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<(u32, u32), Error> {
    let number = |what: &str, text: &str| {
        text.trim().parse::<u32>().map_err(|_| {
            Error::Usage(format!(
                "--shard {given}: {what} `{text}` is not a whole number (give I/N, e.g. --shard 0/4, or auto/N)"
            ))
        })
    };
    let (index, count) = match given.split_once('/') {
        Some(("auto", n)) => {
            let index = ["JOB_COMPLETION_INDEX", "SLURM_PROCID"]
                .iter()
                .find_map(|v| env(v).map(|i| (*v, i)));
            let Some((var, i)) = index else {
                return usage(format!(
                    "--shard {given}: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor SLURM_PROCID (srun) is set: give the index, --shard I/N"
                ));
            };
            let count = number("the count", n)?;
            let tasks = env("SLURM_NTASKS").filter(|_| var == "SLURM_PROCID");
            if let Some(tasks) = tasks.filter(|t| t.trim() != count.to_string()) {
                return usage(format!(
                    "--shard {given}: srun runs {tasks} tasks (SLURM_NTASKS): give --shard auto/{tasks}, or --shard auto"
                ));
            }
            (number(var, &i)?, count)
        }
        Some((i, n)) => (number("the index", i)?, number("the count", n)?),
        None if given == "auto" => match (env("SLURM_PROCID"), env("SLURM_NTASKS")) {
            (Some(i), Some(n)) => (number("SLURM_PROCID", &i)?, number("SLURM_NTASKS", &n)?),
            _ => {
                return usage(
                    "--shard auto takes the index and the count from srun (SLURM_PROCID, SLURM_NTASKS), which are not set: under a Kubernetes Indexed Job give the count, --shard auto/N (the Job's completions)",
                );
            }
        },
        None => {
            return usage(format!(
                "--shard {given}: give I/N, the shard's index from 0 and the number of shards (e.g. --shard 0/4), or auto/N"
            ));
        }
    };
    if count == 0 {
        return usage(format!(
            "--shard {given}: the number of shards must be at least 1"
        ));
    }
    if index >= count {
        return usage(format!(
            "--shard {given}: the index counts from 0, so it must be below the number of shards ({count})"
        ));
    }
    Ok((index, count))
}

/// The seed every shard of a run shares: `--start-at`'s instant (which `merge` requires to
/// be the same for every shard), else `--seed` (which shards may give differently), else 0.
fn shared_seed(start_at: Option<std::time::SystemTime>, seed: Option<u64>) -> u64 {
    let at = start_at
        .and_then(|at| at.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64);
    at.or(seed).unwrap_or(0)
}

/// `--start-at`: an RFC 3339 time still to come.
fn start_at(given: &str) -> Result<std::time::SystemTime, Error> {
    let at = humantime::parse_rfc3339_weak(given).map_err(|e| {
        Error::Usage(format!(
            "--start-at {given}: {e}: give an RFC 3339 time, e.g. 2026-12-01T10:00:00Z"
        ))
    })?;
    let now = std::time::SystemTime::now();
    if at < now {
        return usage(format!(
            "--start-at {given} has passed (it is {} now, UTC): give a time to come",
            humantime::format_rfc3339_seconds(now)
        ));
    }
    if at.duration_since(now).unwrap_or_default() > START_AT_HORIZON {
        return usage(format!(
            "--start-at {given} is more than a day away (it is {} now, UTC): give a time within 24 hours, or start the run later",
            humantime::format_rfc3339_seconds(now)
        ));
    }
    Ok(at)
}

/// How far ahead `--start-at` may be: the shards of one run are started together, within
/// minutes; a time further off is a mistake in the date, not a plan to wait.
const START_AT_HORIZON: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
/// `-L`'s bound in milliseconds: a day, far past any transaction and within a `Duration`.
const LATENCY_LIMIT_MOST_MS: f64 = 86_400_000.0;

fn usage<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error::Usage(msg.into()))
}

pub fn target(args: &TargetArgs, command: &str) -> Result<Target, Error> {
    let Some(name) = args.workload.as_deref() else {
        return usage(format!(
            "{command} needs a workload name (see `dbduel list`){}",
            if command == "run" {
                ", a script FILE.sql, or -f FILE"
            } else {
                ""
            }
        ));
    };
    let workload = workload::find(name)?;
    let dsn = target_dsn(args)?;
    if dsn.is_none() && command != "run" {
        return usage(format!(
            "{command} needs --dsn (or DBDUEL_DSN): only `run` without --dsn uses a temporary SQLite database"
        ));
    }
    Ok(Target {
        workload,
        dsn,
        engine: EngineOptions {
            table_engine: args.table_engine.clone(),
            statement_timeout: statement_timeout(args)?,
            lazy_begin: false,
        },
    })
}

pub fn prepare_plan(args: &PrepareArgs) -> Result<(Target, WorkloadOptions), Error> {
    let target = target(&args.target, "prepare")?;
    if args.scale == 0 {
        return usage("--scale must be at least 1");
    }
    let opts = WorkloadOptions {
        scale: args.scale,
        fillfactor: args.fillfactor,
        variant: None,
        params: {
            let mut all = args.workload.params.clone();
            all.extend(ycsb_params(&args.ycsb, args.property_file.as_deref())?);
            pgbench_init_habits(args, target.workload.name, &mut all);
            all
        },
        clients: 0,
        run_s: None,
        scripts: None,
        shared_seed: None,
        seed: 0,
    };
    // The workload's own options are checked before anything connects.
    (target.workload.new)(&opts)?;
    Ok((target, opts))
}

/// pgbench -i's -n (no vacuum: tpcb's -I steps without `v`) and -q (quieter logging: taken,
/// dbduel prints a line a table), each with a note.
fn pgbench_init_habits(args: &PrepareArgs, workload: &str, params: &mut BTreeMap<String, String>) {
    if args.quiet {
        errln!("note: -q taken: dbduel prints one line a table as it loads");
    }
    if !args.no_vacuum {
        return;
    }
    if workload != "tpcb" {
        errln!("note: -n taken: {workload}'s load has no vacuum step");
        return;
    }
    let steps = params.get("init_steps").map_or("dtgvp", String::as_str);
    let steps = steps.replace('v', "");
    errln!("note: -n taken: the steps run are -I {steps} (no vacuum)");
    params.insert("init_steps".into(), steps);
}

/// A run as asked for, before anything is checked: what the flags of `dbduel run` or one
/// point of a plan (`sweep`, `duel`) give. `RunInput::plan` is the one way from it to a
/// `RunPlan`, so a sweep point and the same `dbduel run` are checked, and count errors and
/// retries, alike.
pub struct RunInput {
    pub target: Target,
    /// Given: what the run is told the scale is; None: read from the data.
    pub scale: Option<u32>,
    pub variant: Option<String>,
    /// The workload's own options, by name (`spec_timing`, `isolation`, `tables`...).
    pub params: BTreeMap<String, String>,
    pub clients: u32,
    /// Whether `clients` was asked for (`-c`; a plan's point other than 1), or is the default
    /// 1 that a workload's or a phase's own number replaces.
    pub clients_given: bool,
    pub time: Option<u64>,
    pub transactions: Option<u64>,
    pub warmup: u64,
    pub rate: Option<f64>,
    /// `--phase` specs, as given (`runner::shape`).
    pub phases: Vec<String>,
    /// `-L`: the latency limit in milliseconds.
    pub latency_limit_ms: Option<f64>,
    pub progress: Option<u64>,
    /// None: the workload's default (`Workload::default_max_tries`).
    pub max_tries: Option<u32>,
    /// None: from the clock.
    pub seed: Option<u64>,
    pub protocol: Protocol,
    pub json: Option<PathBuf>,
    /// `-l` and its companions.
    pub log: Option<LogPlan>,
    pub exit_on_abort: bool,
    /// `--verbose-errors`: every error a client meets, and what follows it, on stderr.
    pub verbose_errors: bool,
    /// `--stall-timeout` in seconds; None: the workload's.
    pub stall_timeout: Option<u64>,
    /// Script files (`FILE[@WEIGHT]`) and their `-D` defines.
    pub scripts: Vec<String>,
    pub defines: Vec<String>,
    /// What the user wrote, so that an error names the thing to change.
    pub asked_by: AskedBy,
    /// `--shard`: the index and the number of shards.
    pub shard: Option<(u32, u32)>,
    /// `--start-at`, as given.
    pub start_at: Option<String>,
    /// Sample the server's sessions' waits during the run (`--no-waits`: not).
    pub waits: bool,
    /// `--waits-hz`: samples a second, as asked.
    pub waits_hz: Option<u32>,
    /// Time every statement on the client (`--no-statement-latencies`: not).
    pub statements: bool,
    /// How the clients hold their connections (`-C`, `--reconnect-*`, `--idle-connections`).
    pub connections: ConnectionPlan,
    /// `-j`: the threads that run the clients (None: `runner::threads` chooses).
    pub threads: Option<u32>,
}

/// Where a run's options were written: `dbduel run`'s flags or a plan file's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskedBy {
    Flags,
    Plan,
}

impl AskedBy {
    /// The flag (`--clients`) as the user wrote it: a plan's key (key `clients`) for a plan.
    fn name(self, flag: &str) -> String {
        match self {
            AskedBy::Flags => flag.to_string(),
            AskedBy::Plan => format!("key `{}`", flag.trim_start_matches('-').replace('-', "_")),
        }
    }
}

pub fn run_plan(args: &RunArgs) -> Result<RunPlan, Error> {
    for note in args.habits.check().map_err(Error::Usage)? {
        errln!("note: {note}");
    }
    let scripts = script_specs(args)?;
    let mut target = if scripts.is_empty() {
        target(&args.target, "run")?
    } else {
        script_target(args, &scripts)?
    };
    target.engine.lazy_begin = args.lazy_begin;
    load_options_refused(&target, &args.workload.params)?;
    let mut params = args.workload.params.clone();
    let (progress, file) = progress_or_file(args)?;
    params.extend(ycsb_params(&args.ycsb, file)?);
    RunInput {
        target,
        scale: args.scale,
        variant: variant(args)?,
        params,
        clients: args.clients.unwrap_or(1),
        clients_given: args.clients.is_some(),
        time: args.time,
        transactions: args.transactions,
        warmup: args.warmup,
        rate: args.rate,
        phases: args.phase.clone(),
        latency_limit_ms: args.latency_limit,
        progress,
        max_tries: args.max_tries,
        seed: args.habits.seed(args.seed).map_err(Error::Usage)?,
        protocol: args.protocol,
        json: args.json.clone(),
        log: log_plan(args)?,
        exit_on_abort: args.exit_on_abort,
        verbose_errors: args.verbose_errors,
        stall_timeout: args.stall_timeout,
        scripts,
        defines: args.defines.clone(),
        asked_by: AskedBy::Flags,
        shard: args
            .shard
            .as_deref()
            .map(|s| shard_spec(s, &|v| std::env::var(v).ok()))
            .transpose()?,
        start_at: args.start_at.clone(),
        waits: !args.no_waits,
        waits_hz: args.waits_hz,
        statements: statement_latencies(args)?,
        connections: connection_plan(args)?,
        threads: jobs(args)?,
    }
    .plan()
    .and_then(|mut plan| {
        plan.progress_timestamp = args.progress_timestamp;
        plan.vacuum_first = vacuum_first(args, &plan.target)?;
        Ok(plan)
    })
}

/// pgbench's `-v`: for tpcb and scripts (which run on pgbench's tables); `-n` beside it wins,
/// as in pgbench.
fn vacuum_first(args: &RunArgs, target: &Target) -> Result<bool, Error> {
    if !args.habits.vacuum_all || args.habits.no_vacuum {
        return Ok(false);
    }
    let name = target.workload.name;
    if name != "tpcb" && name != "script" {
        return usage(format!(
            "-v vacuums pgbench's four tables before the run: {name} has none of them; drop -v"
        ));
    }
    Ok(true)
}

/// tpcb's load options given to a run on a database (prepared already): pgbench refuses them
/// in benchmarking mode, and so does dbduel, naming `prepare` (a run without --dsn prepares
/// its temporary SQLite database with them).
fn load_options_refused(target: &Target, params: &BTreeMap<String, String>) -> Result<(), Error> {
    let entry = target.workload;
    if entry.name != "tpcb" || target.dsn.is_none() {
        return Ok(());
    }
    let load = entry
        .options
        .opts
        .iter()
        .find(|o| params.contains_key(o.name));
    match load {
        Some(o) => usage(format!(
            "--{} is a load option (pgbench: cannot be used in benchmarking mode): give it to `dbduel prepare tpcb`",
            o.name.replace('_', "-")
        )),
        None => Ok(()),
    }
}

/// `-j N`: 1 or more.
fn jobs(args: &RunArgs) -> Result<Option<u32>, Error> {
    match args.jobs {
        Some(0) => usage(
            "-j 0: give 1 or more threads to run the clients on (or leave -j out: dbduel chooses)",
        ),
        j => Ok(j),
    }
}

/// How the clients hold their connections, from `-C`, `--reconnect-every`, `--reconnect-after`
/// and `--idle-connections`.
fn connection_plan(args: &RunArgs) -> Result<ConnectionPlan, Error> {
    ConnectionKeys {
        connect: args.connect,
        reconnect_every: args.reconnect_every,
        reconnect_after: args.reconnect_after,
        idle_connections: args.idle_connections,
    }
    .plan(AskedBy::Flags)
}

/// The connection flags as given (`run`'s flags, or a plan's keys of the same names).
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectionKeys {
    pub connect: bool,
    pub reconnect_every: Option<i64>,
    pub reconnect_after: Option<f64>,
    pub idle_connections: Option<i64>,
}

impl ConnectionKeys {
    /// Checked: a count and an age of 1 or more, no lifetime with `-C` (its connections serve
    /// one transaction), idle connections 0 or more; an error names the flag or the plan's key.
    pub fn plan(self, asked_by: AskedBy) -> Result<ConnectionPlan, Error> {
        let name = |flag: &str| asked_by.name(flag);
        let every = match self.reconnect_every {
            Some(n) if n < 1 => {
                return usage(format!(
                    "{} {n}: give the transactions a connection serves, 1 or more",
                    name("--reconnect-every")
                ));
            }
            n => n.map(|n| n as u64),
        };
        if let Some(s) = self
            .reconnect_after
            .filter(|s| !(s.is_finite() && *s > 0.0))
        {
            return usage(format!(
                "{} {s}: give the seconds a connection lives, more than 0",
                name("--reconnect-after")
            ));
        }
        if self.connect && (every.is_some() || self.reconnect_after.is_some()) {
            let flag = if every.is_some() {
                "--reconnect-every"
            } else {
                "--reconnect-after"
            };
            let connect = match asked_by {
                AskedBy::Flags => "-C".to_string(),
                AskedBy::Plan => name("--connect"),
            };
            return usage(format!(
                "{connect} opens a connection for every transaction: {} has nothing to renew; give one of them",
                name(flag)
            ));
        }
        let idle = match self.idle_connections {
            Some(n) if !(0..=i64::from(u32::MAX)).contains(&n) => {
                return usage(format!(
                    "{} {n}: give the idle connections to hold open, 0 or more",
                    name("--idle-connections")
                ));
            }
            n => n.unwrap_or(0) as u32,
        };
        Ok(ConnectionPlan {
            per_transaction: self.connect,
            reconnect_every: every,
            reconnect_after_s: self.reconnect_after,
            idle_connections: idle,
        })
    }
}

/// `-l`, `--log-prefix`, `--sampling-rate` and `--aggregate-interval`, with pgbench's rules: the
/// others only with `-l`, sampling and aggregation not together, a rate in (0, 1], an interval
/// of 1 s or more that divides `-T`.
fn log_plan(args: &RunArgs) -> Result<Option<LogPlan>, Error> {
    let companion = [
        (args.log_prefix.is_some(), "--log-prefix"),
        (args.sampling_rate.is_some(), "--sampling-rate"),
        (args.aggregate_interval.is_some(), "--aggregate-interval"),
    ];
    if args.failures_detailed && !args.log {
        // The summary and the JSON break errors down by kind on every run.
        errln!("note: --failures-detailed taken: dbduel's summary always counts failures by kind");
    }
    if !args.log {
        return match companion.iter().find(|(given, _)| *given) {
            Some((_, flag)) => usage(format!(
                "{flag} is for the transaction log: add -l, or drop it"
            )),
            None => Ok(None),
        };
    }
    if args.sampling_rate.is_some() && args.aggregate_interval.is_some() {
        return usage(
            "--sampling-rate and --aggregate-interval cannot be used together (as in pgbench): give one of them",
        );
    }
    if let Some(r) = args
        .sampling_rate
        .filter(|r| !(r.is_finite() && *r > 0.0 && *r <= 1.0))
    {
        return usage(format!(
            "--sampling-rate {r}: give the fraction of transactions to log, more than 0 and at most 1"
        ));
    }
    let interval = match args.aggregate_interval {
        Some(n) if n < 1 => {
            return usage(format!(
                "--aggregate-interval {n}: give the seconds per line, 1 or more"
            ));
        }
        Some(n) => {
            let n = n as u64;
            if let Some(t) = args.time.filter(|t| t % n != 0) {
                return usage(format!(
                    "--aggregate-interval {n}: -T {t} is not a multiple of it (as pgbench asks): change one of them"
                ));
            }
            Some(n)
        }
        None => None,
    };
    let prefix = args
        .log_prefix
        .clone()
        .unwrap_or_else(|| "pgbench_log".into());
    if prefix.is_empty() {
        return usage("--log-prefix: give a file name prefix (pgbench_log by default)");
    }
    Ok(Some(LogPlan {
        prefix,
        sampling_rate: args.sampling_rate,
        aggregate_interval: interval,
        failures_detailed: args.failures_detailed,
    }))
}

/// Whether to time every statement: on unless `--no-statement-latencies`; pgbench's -r asks for
/// it explicitly, so both together are refused.
fn statement_latencies(args: &RunArgs) -> Result<bool, Error> {
    if args.no_statement_latencies && args.habits.per_statement {
        return Err(Error::Usage(
            "-r (--report-per-command) asks for per-statement latencies and --no-statement-latencies turns them off: give one of them".into(),
        ));
    }
    Ok(!args.no_statement_latencies)
}

impl RunInput {
    /// Check everything a run can be refused for before it connects, and give the plan.
    pub fn plan(mut self) -> Result<RunPlan, Error> {
        self.workload_asks()?;
        let limit = self.check()?;
        let mut shape = self.shape()?;
        let limit = match &shape {
            Some(s) => Limit::Time(Duration::from_secs_f64(s.seconds())),
            None => limit,
        };
        let seed = self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
        let mut workload = self.workload_options(seed)?;
        let released = self.start_at.as_deref().map(start_at).transpose()?;
        if self.shard.is_some() {
            workload.shared_seed = Some(shared_seed(released, self.seed));
        }
        let built = (self.target.workload.new)(&workload)?;
        let shard = self
            .shard
            .map(|s| self.split(s, built.as_ref()))
            .transpose()?;
        if shape.is_some() && built.fixed_clients().is_some() {
            return usage(format!(
                "--phase: {} runs its streams to their end, one client each: drop --phase",
                self.target.workload.name
            ));
        }
        let (clients, limit, transactions) = self.run_length(built.as_ref(), limit)?;
        // A workload that runs some of the clients asked keeps their number in its options
        // (CH's side alone: the mix's split), and starts them at their own ids.
        let part = built.clients_run();
        if let Some((_, n)) = part {
            // A rate or phases spread over the clients that run would not be the whole's.
            let name = built.variant();
            if self.rate.is_some() || shape.is_some() {
                return usage(format!(
                    "{name} runs {n} of the {} clients asked, and a rate or phases spread over them would not be the load they carry in the whole: drop --rate and --phase (a plan's phases), or run the whole",
                    self.clients
                ));
            }
        } else {
            workload.clients = clients;
        }
        if let Some(s) = &mut shape {
            s.run_clients = clients;
            if s.mixed() {
                let name = self.target.workload.name;
                if !built.weighable() {
                    return usage(format!(
                        "--phase: mix: {name} ({}) runs one fixed mix of its transactions: drop mix=",
                        built.variant()
                    ));
                }
                s.resolve_mixes(name, &built.transaction_types())
                    .map_err(Error::Usage)?;
            }
        }
        let time_s = match limit {
            Limit::Time(t) => Some(t.as_secs_f64().ceil() as u64),
            Limit::Transactions(_) => None,
        };
        workload.run_s = time_s.map(|t| t + self.warmup);
        Ok(RunPlan {
            target: self.target,
            workload,
            protocol: self.protocol,
            run: RunConfig {
                clients: shard.map_or(clients, |s| s.clients),
                first_client: shard.map_or(part.map_or(0, |(first, _)| first), |s| s.first_client),
                limit,
                warmup: Duration::from_secs(self.warmup),
                // A shard keeps its clients' share of the run's rate.
                rate: self
                    .rate
                    .map(|r| shard.map_or(r, |s| r * f64::from(s.clients) / f64::from(clients))),
                // 0: the workload's default (`Workload::default_max_tries`).
                max_tries: match self.max_tries {
                    Some(0) => crate::runner::UNLIMITED_TRIES,
                    given => given.unwrap_or(0),
                },
                seed,
                start_at: released,
                statements: self.statements,
                shape: shape.map(Arc::new),
                connections: self.connections.clone(),
                latency_limit: self
                    .latency_limit_ms
                    .map(|ms| Duration::from_secs_f64(ms / 1000.0)),
                threads: self.threads,
                verbose_errors: self.verbose_errors,
                stall_timeout: self.stall_timeout.map(Duration::from_secs),
            },
            progress: self.progress.map(Duration::from_secs),
            progress_timestamp: false,
            vacuum_first: false,
            json: self.json,
            log: self.log,
            exit_on_abort: self.exit_on_abort,
            time_s,
            transactions,
            shard,
            start_at: self.start_at,
            waits: self.waits,
            waits_hz: self.waits_hz,
        })
    }

    /// What the workload is built from: the run's scale, variant, parameters and clients, and
    /// its scripts, loaded (the shared seed and the run's length are set by `plan`).
    fn workload_options(&self, seed: u64) -> Result<WorkloadOptions, Error> {
        let scripts = if self.scripts.is_empty() {
            None
        } else {
            let program = workload::script::load(
                &self.scripts,
                &self.defines,
                self.protocol,
                seed,
                self.scale,
            )?;
            Some(std::sync::Arc::new(program))
        };
        Ok(WorkloadOptions {
            scale: self.scale.unwrap_or(0),
            fillfactor: None,
            variant: self.variant.clone(),
            params: self.params.clone(),
            clients: self.clients,
            run_s: None,
            scripts,
            shared_seed: None,
            seed,
        })
    }

    /// The run's clients, limit and transactions per client: as asked, unless the workload
    /// decides them.
    fn run_length(
        &self,
        built: &dyn workload::Workload,
        limit: Limit,
    ) -> Result<(u32, Limit, Option<u64>), Error> {
        if let Some(each) = built.fixed_clients() {
            // The workload's clients run their own work to its end (TPC-H's streams).
            self.refuse_fixed()?;
            let most = each.iter().copied().max().unwrap_or(1);
            return Ok((each.len() as u32, Limit::Transactions(most), Some(most)));
        }
        if let Some((_, n)) = built.clients_run() {
            return Ok((n, limit, self.transactions));
        }
        if self.time.is_none()
            && self.transactions.is_none()
            && self.phases.is_empty()
            && let Some(n) = built.operations()
        {
            // A workload that counts its operations for the whole run (YCSB's
            // operationcount) gives each client its share, rounded up.
            let each = n.div_ceil(u64::from(self.clients));
            return Ok((self.clients, Limit::Transactions(each), Some(each)));
        }
        Ok((self.clients, limit, self.transactions))
    }

    /// This shard's clients: the run's `--clients` split as evenly as they go, each shard a
    /// run of consecutive ids, so that no two shards share a client id (and with it a TPC-C
    /// terminal or a random stream).
    fn split(
        &self,
        (index, count): (u32, u32),
        workload: &dyn workload::Workload,
    ) -> Result<Shard, Error> {
        let name = self.target.workload.name;
        if workload.fixed_clients().is_some() {
            return usage(format!(
                "--shard: {name} runs a fixed set of streams, one client each, that cannot be split over processes: drop --shard"
            ));
        }
        if let Some(why) = workload.shards_refused() {
            return usage(format!("--shard: {why}"));
        }
        if count > self.clients {
            return usage(format!(
                "--shard {index}/{count}: {count} shards need at least {count} clients in all, and --clients is {}: give --clients as the whole run's (every shard the same)",
                self.clients
            ));
        }
        let at = |i: u32| (u64::from(i) * u64::from(self.clients) / u64::from(count)) as u32;
        Ok(Shard {
            index,
            count,
            first_client: at(index),
            clients: at(index + 1) - at(index),
        })
    }

    /// The workload's own names for the run's clients and rate (YCSB's `-p threadcount=8`,
    /// `-p target=500`): taken as -c and -R; refused when the flag says otherwise, and in a
    /// plan, whose points take them from its own keys.
    fn workload_asks(&mut self) -> Result<(), Error> {
        let asks = (self.target.workload.run_asks)(&mut self.params)?;
        if self.asked_by == AskedBy::Plan
            && let Some(said) = asks
                .clients
                .as_ref()
                .map(|c| &c.1)
                .or(asks.rate.as_ref().map(|r| &r.1))
        {
            return usage(format!(
                "{said}: a plan's points take their clients and rate from its own keys: drop it"
            ));
        }
        if let Some((n, said)) = asks.clients {
            if self.clients_given && self.clients != n {
                return usage(format!(
                    "{said} and {} {} disagree: give one of them",
                    self.asked_by.name("--clients"),
                    self.clients
                ));
            }
            self.clients = n;
        }
        if let Some((rate, said)) = asks.rate {
            if self.rate.is_some_and(|r| r != rate) {
                return usage(format!(
                    "{said} and {} disagree: give one of them",
                    self.asked_by.name("--rate")
                ));
            }
            self.rate = Some(rate);
        }
        Ok(())
    }

    /// A workload that fixes its clients and their work takes no --clients, --time,
    /// --transactions nor --rate.
    fn refuse_fixed(&self) -> Result<(), Error> {
        let name = self.target.workload.name;
        let given = [
            (self.clients_given, "--clients"),
            (self.time.is_some(), "--time"),
            (self.transactions.is_some(), "--transactions"),
            (self.rate.is_some(), "--rate"),
        ];
        match given.iter().find(|(g, _)| *g) {
            Some((_, flag)) => usage(format!(
                "{}: {name} runs its streams to their end, one client each (--streams sets them): drop it",
                self.asked_by.name(flag)
            )),
            None => Ok(()),
        }
    }

    /// The phases of a run whose load changes shape (`--phase`), checked against the flags it
    /// replaces; their clients raise `clients` (unless more were asked for than a phase needs).
    fn shape(&mut self) -> Result<Option<Shape>, Error> {
        if self.phases.is_empty() {
            return Ok(None);
        }
        let shape = Shape::parse(&self.phases).map_err(Error::Usage)?;
        let name = |flag: &str| self.asked_by.name(flag);
        let given = [
            (
                self.time.is_some(),
                name("--time"),
                "the phases' lengths are the run's time",
            ),
            (
                self.transactions.is_some(),
                name("--transactions"),
                "the phases' lengths are the run's time",
            ),
            (
                self.rate.is_some(),
                name("--rate"),
                "each phase has its own load",
            ),
            (
                self.params.contains_key("spec_timing"),
                match self.asked_by {
                    AskedBy::Flags => "--spec-timing".to_string(),
                    AskedBy::Plan => "key `options.spec-timing`".to_string(),
                },
                "its terminals pace themselves",
            ),
        ];
        if let Some((_, flag, why)) = given.iter().find(|(g, _, _)| *g) {
            let phases = match self.asked_by {
                AskedBy::Flags => "--phase",
                AskedBy::Plan => "key `phases`",
            };
            return usage(format!("{phases} with {flag}: {why}: drop one of them"));
        }
        let needed = shape.clients_needed();
        if self.clients_given && self.clients < needed {
            return usage(format!(
                "{} {}: a phase asks for {needed} clients: give at least {needed}, or leave it out",
                self.asked_by.name("--clients"),
                self.clients
            ));
        }
        self.clients = self.clients.max(needed);
        if u64::from(self.clients) > most_clients() {
            return usage(format!(
                "--phase: a phase asks for {} clients, more than this machine allows ({})",
                self.clients,
                most_clients()
            ));
        }
        Ok(Some(shape))
    }

    /// The checks, in the order `dbduel run` has always made them; the limit of the run.
    fn check(&self) -> Result<Limit, Error> {
        if self.clients == 0 {
            return usage("--clients must be at least 1");
        }
        if let Some(ms) = self
            .latency_limit_ms
            .filter(|ms| !(ms.is_finite() && *ms > 0.0 && *ms <= LATENCY_LIMIT_MOST_MS))
        {
            return usage(format!(
                "-L {ms:?}: give the latency limit in milliseconds, more than 0 and at most {LATENCY_LIMIT_MOST_MS} (a day)"
            ));
        }
        let most = most_clients();
        let idle = u64::from(self.connections.idle_connections);
        let room = most_files().saturating_sub(64 + 2 * u64::from(self.clients));
        if idle > room {
            return usage(format!(
                "{} {idle}: with {} clients this process can hold at most {room} more connections open (each is a file; see ulimit -n)",
                self.asked_by.name("--idle-connections"),
                self.clients
            ));
        }
        if u64::from(self.clients) > most {
            return usage(format!(
                "{} {}: this machine allows at most {most} (each client holds two open files and may be a thread: see ulimit -n and /proc/sys/kernel/threads-max)",
                self.asked_by.name("--clients"),
                self.clients
            ));
        }
        for (flag, secs) in [
            ("--time", self.time),
            ("--warmup", Some(self.warmup)),
            ("--progress", self.progress),
        ] {
            if secs.is_some_and(|s| s > MAX_SECONDS) {
                return usage(format!(
                    "{} {}: at most {MAX_SECONDS} seconds (a year)",
                    self.asked_by.name(flag),
                    secs.unwrap_or_default()
                ));
            }
        }
        if self.scale == Some(0) {
            return usage("--scale must be at least 1");
        }
        let limit = match (self.time, self.transactions) {
            (Some(_), Some(_)) => {
                return usage("--time and --transactions exclude each other: give one of them");
            }
            (Some(0), None) => return usage("--time must be at least 1 second"),
            (None, Some(0)) => return usage("--transactions must be at least 1"),
            (Some(t), None) => Limit::Time(Duration::from_secs(t)),
            (None, Some(n)) => Limit::Transactions(n),
            (None, None) => Limit::Time(Duration::from_secs(DEFAULT_SECONDS)),
        };
        if let Some(r) = self.rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
            return usage(format!(
                "--rate {r} is not a positive number of transactions per second"
            ));
        }
        if self.progress == Some(0) {
            return usage("--progress must be at least 1 second");
        }
        if self.max_tries == Some(0) && self.time.is_none() && self.latency_limit_ms.is_none() {
            return usage(
                "an unlimited number of transaction tries (--max-tries 0) can only be used with --latency-limit or a duration (-T), as pgbench",
            );
        }
        if self.params.contains_key("spec_timing") && self.rate.is_some() {
            return usage(
                "--spec-timing paces each terminal by its keying and think times: drop --rate",
            );
        }
        let json_dir = self
            .json
            .as_ref()
            .and_then(|p| p.parent())
            .filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = json_dir.filter(|d| !d.is_dir()) {
            return usage(format!(
                "--json: directory {} does not exist",
                dir.display()
            ));
        }
        Ok(limit)
    }
}

/// `run -P`: seconds between progress lines (pgbench's -P), or, when not a number, YCSB's
/// property file (YCSB's -P), which `--property-file` names too.
fn progress_or_file(args: &RunArgs) -> Result<(Option<u64>, Option<&str>), Error> {
    let given = args.progress.as_deref();
    match (
        given.map(|p| p.parse::<u64>()),
        args.property_file.as_deref(),
    ) {
        (Some(Ok(secs)), file) => Ok((Some(secs), file)),
        (Some(Err(_)), Some(_)) => {
            usage("-P FILE and --property-file name two YCSB property files: give one")
        }
        (Some(Err(_)), None) => Ok((None, given)),
        (None, file) => Ok((None, file)),
    }
}

/// YCSB's `-p name=value` overrides and its property file (under `workload`, the key a plan's
/// `[options]` gives it), by name.
fn ycsb_params(args: &YcsbArgs, file: Option<&str>) -> Result<BTreeMap<String, String>, Error> {
    let mut out = BTreeMap::new();
    for p in &args.properties {
        let Some((name, value)) = p.split_once('=') else {
            return usage(format!("-p {p}: give a YCSB property as name=value"));
        };
        out.insert(name.trim().to_string(), value.trim().to_string());
    }
    if let Some(f) = file {
        out.insert(workload::ycsb::FILE_OPTION.to_string(), f.to_string());
    }
    Ok(out)
}

/// The variants asked for, as given: every -b, then -S and -N as the names they stand for.
fn picks(args: &RunArgs) -> Vec<&str> {
    let mut out: Vec<&str> = args.builtin.iter().map(String::as_str).collect();
    if args.select_only {
        out.push("select-only");
    }
    if args.simple_update {
        out.push("simple-update");
    }
    out
}

/// Whether the run is pgbench's: tpcb (named, or by default), or scripts.
fn pgbench_run(args: &RunArgs) -> bool {
    args.target
        .workload
        .as_deref()
        .is_none_or(|w| w == "tpcb" || is_script_word(w))
}

/// tpcb's built-in scripts asked for (-b NAME[@W], -S, -N), each by its name and weight text.
fn builtins(args: &RunArgs) -> Result<Vec<(&'static str, Option<&str>)>, Error> {
    let mut picks = picks(args);
    if picks.is_empty() && defined_builtin(args) {
        picks.push("tpcb-like");
    }
    picks
        .into_iter()
        .map(|b| {
            let (name, weight) = match b.rsplit_once('@') {
                Some((n, w)) => (n, Some(w)),
                None => (b, None),
            };
            Ok((workload::tpcb::builtin(name)?, weight))
        })
        .collect()
}

/// Whether tpcb's built-ins run as scripts, as pgbench mixes them: several of them, or one
/// beside script files; one alone is tpcb's own variant.
fn mixed(args: &RunArgs) -> bool {
    let n = picks(args).len();
    pgbench_run(args) && (n > 1 || n == 1 && has_scripts(args)) || defined_builtin(args)
}

/// Whether the run names script files (-f, or the workload's word).
fn has_scripts(args: &RunArgs) -> bool {
    !args.files.is_empty() || args.target.workload.as_deref().is_some_and(is_script_word)
}

/// `-D` on tpcb's built-in scripts with no file: pgbench defines the variables for them, so
/// they run as scripts, which read them.
fn defined_builtin(args: &RunArgs) -> bool {
    !args.defines.is_empty() && pgbench_run(args) && !has_scripts(args)
}

/// The workload's variant: the one asked for (tpcb's without its weight), none when tpcb's
/// built-ins run mixed as scripts.
fn variant(args: &RunArgs) -> Result<Option<String>, Error> {
    if mixed(args) {
        return Ok(None);
    }
    match picks(args).as_slice() {
        [] => Ok(None),
        [one] if pgbench_run(args) => Ok(Some(one.split('@').next().unwrap_or(one).to_string())),
        [one] => Ok(Some(one.to_string())),
        _ => usage("give only one of --builtin, --select-only (-S), --simple-update (-N)"),
    }
}

/// What `-b list` and `--show-script NAME` print, in pgbench's words (None: neither was asked).
pub fn builtin_listing(args: &RunArgs) -> Result<Option<String>, Error> {
    use std::fmt::Write as _;
    let scripts = &workload::tpcb::SCRIPTS;
    if args.builtin.iter().any(|b| b == "list") {
        let mut out = String::from("Available builtin scripts:\n");
        for (name, desc, _) in scripts {
            let _ = writeln!(out, "{name:>15}: {desc}");
        }
        return Ok(Some(out));
    }
    let Some(asked) = &args.show_script else {
        return Ok(None);
    };
    let name = workload::tpcb::builtin(asked)?;
    let (_, desc, text) = scripts
        .iter()
        .find(|(n, _, _)| *n == name)
        .expect("a resolved name is listed");
    Ok(Some(format!("-- {name}: {desc}\n{text}")))
}

/// The scripts of a run: every `-f FILE[@WEIGHT]`, and the workload argument when it names a
/// script (ends in .sql, or is a file and no workload's name).
fn script_specs(args: &RunArgs) -> Result<Vec<String>, Error> {
    let mut specs = Vec::new();
    let mixed = mixed(args);
    if let Some(w) = args.target.workload.as_deref() {
        if is_script_word(w) {
            specs.push(w.to_string());
        } else if !args.files.is_empty() || mixed && w != "tpcb" {
            return usage(format!(
                "give either the workload {w} or scripts (-f FILE, several -b), not both"
            ));
        }
    }
    if mixed {
        for (name, weight) in builtins(args)? {
            let weight = weight.map_or(String::new(), |w| format!("@{w}"));
            specs.push(format!("{}{name}{weight}", workload::script::BUILTIN));
        }
    }
    specs.extend(args.files.iter().cloned());
    if specs.is_empty() && !args.defines.is_empty() {
        return usage("-D defines script variables: give a script (FILE.sql or -f FILE)");
    }
    Ok(specs)
}

/// Whether the workload's word names a script: ends in .sql, or is a file and no workload's
/// name (with its @WEIGHT left out).
fn is_script_word(w: &str) -> bool {
    let path = w.rsplit_once('@').map_or(w, |(p, _)| p);
    path.ends_with(".sql")
        || (!workload::custom::is_file(path)
            && workload::find(w).is_err()
            && std::path::Path::new(path).is_file())
}

/// `--statement-timeout` as a duration: positive, and at most a day.
fn statement_timeout(args: &TargetArgs) -> Result<Option<Duration>, Error> {
    match args.statement_timeout {
        None => Ok(None),
        Some(s) if s > 0.0 && s <= 86_400.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => usage(format!(
            "--statement-timeout {s}: give seconds above 0 and at most 86400"
        )),
    }
}

/// Longest --time, --warmup or --progress: a year.
const MAX_SECONDS: u64 = 365 * 24 * 3600;

/// The most clients this machine can run: each has two open files (its connection and a handle
/// to shut it down) and may be a thread of its own (on an engine whose clients cannot share
/// one), within the open-files hard limit and the system's thread limit, less some room for
/// the rest.
fn most_clients() -> u64 {
    let threads = std::fs::read_to_string("/proc/sys/kernel/threads-max")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    (most_files().saturating_sub(64) / 2).min(threads.saturating_sub(64))
}

/// The files this process may open (its hard limit, which it raises its own to).
fn most_files() -> u64 {
    // SAFETY: reads this process's own limit.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_max
        } else {
            1024
        }
    }
}

/// The DSN, with the password of `--password-file` when one is given, or a managed server's
/// own (`--server DIR`).
/// libpq's variables that name a server, each of which makes a command without --dsn connect
/// to PostgreSQL as pgbench would (PGUSER and PGPASSWORD alone do not: they name no server).
const PG_SERVER_VARIABLES: [&str; 3] = ["PGHOST", "PGPORT", "PGDATABASE"];

/// pgbench's way to name the server, taken where no --dsn or --server is given: `-h HOST`,
/// `-p PORT` (YCSB's `-p` when its value is a number: moved from `ycsb`), `-U USER`, DBNAME;
/// with none of them, PGHOST, PGPORT or PGDATABASE in the environment. Either means
/// PostgreSQL, the rest of the connection coming from libpq's variables and defaults as for
/// any DSN. Then a first word that names no workload and no file is pgbench's DBNAME, and with
/// no workload left, `default_workload` (run without scripts, prepare: tpcb) is pgbench's own.
pub fn pgbench_connection(
    t: &mut TargetArgs,
    ycsb: Option<&mut YcsbArgs>,
    default_workload: bool,
) -> Result<(), Error> {
    if let Some(y) = ycsb {
        let (ports, props): (Vec<String>, Vec<String>) = std::mem::take(&mut y.properties)
            .into_iter()
            .partition(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        y.properties = props;
        if let Some(p) = ports.last() {
            t.port = Some(p.parse().map_err(|_| {
                Error::Usage(format!("-p {p}: a port is a number from 1 to 65535"))
            })?);
        }
    }
    let flags = [
        t.host.as_ref().map(|_| "-h"),
        t.port.map(|_| "-p"),
        t.username.as_ref().map(|_| "-U"),
        t.dbname.as_ref().map(|_| "DBNAME"),
    ];
    let given: Vec<&str> = flags.into_iter().flatten().collect();
    if t.dsn.is_some() || t.server.is_some() {
        if let Some(first) = given.first() {
            return usage(format!(
                "{first} is pgbench's way to name a PostgreSQL server, and {} names one already: give one of them",
                if t.server.is_some() {
                    "--server"
                } else {
                    "--dsn"
                }
            ));
        }
        return Ok(());
    }
    let from_env = PG_SERVER_VARIABLES
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| !x.is_empty()));
    if given.is_empty() && !from_env {
        return Ok(());
    }
    if t.dbname.is_none()
        && let Some(w) = t.workload.as_deref()
    {
        let path = w.rsplit_once('@').map_or(w, |(p, _)| p);
        if workload::find(w).is_err()
            && !std::path::Path::new(path).is_file()
            && !path.contains('.')
        {
            t.dbname = t.workload.take();
        }
    }
    if t.workload.is_none() && default_workload {
        t.workload = Some("tpcb".into());
    }
    // Each part named, from its flag or else its variable, so that the summary shows it.
    let env = |v: &str| std::env::var(v).ok().filter(|x| !x.is_empty());
    let host = t.host.clone().or_else(|| env("PGHOST"));
    let port = t.port.map(|p| p.to_string()).or_else(|| env("PGPORT"));
    let user = t.username.clone().or_else(|| env("PGUSER"));
    let dbname = t.dbname.clone().or_else(|| env("PGDATABASE"));
    t.pgbench_dsn = Some(Dsn::postgres(
        host.as_deref(),
        port.as_deref(),
        user.as_deref(),
        dbname.as_deref(),
    ));
    Ok(())
}

fn target_dsn(args: &TargetArgs) -> Result<Option<Dsn>, Error> {
    if let Some(dir) = &args.server {
        return crate::engine::parse_dsn(&crate::server::full_dsn(dir)?).map(Some);
    }
    let dsn = match &args.pgbench_dsn {
        Some(made) => Some(made.clone()),
        None => args
            .dsn
            .as_deref()
            .map(crate::engine::parse_dsn)
            .transpose()?,
    };
    let Some(file) = &args.password_file else {
        return Ok(dsn);
    };
    let Some(dsn) = dsn else {
        return usage("--password-file goes with --dsn (or DBDUEL_DSN)");
    };
    if dsn.password().is_some() {
        return usage(format!(
            "--dsn {dsn} carries a password and --password-file gives another: give it once"
        ));
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| Error::Usage(format!("--password-file {}: {e}", file.display())))?;
    let password = text.lines().next().unwrap_or_default().to_string();
    if password.is_empty() {
        return usage(format!(
            "--password-file {}: the first line is empty",
            file.display()
        ));
    }
    Ok(Some(dsn.with_password(password)))
}

/// The target of a script run: any engine, on data the user prepared.
fn script_target(args: &RunArgs, scripts: &[String]) -> Result<Target, Error> {
    let Some(dsn) = target_dsn(&args.target)? else {
        if scripts
            .iter()
            .all(|s| s.starts_with(workload::script::BUILTIN))
        {
            return usage(
                "tpcb's built-in scripts together (-S with -N, several -b) run as scripts, on data you prepared: give --dsn (or DBDUEL_DSN) after `dbduel prepare tpcb --dsn ...`; one alone (-S, -N, -b NAME) also runs on the temporary SQLite database",
            );
        }
        return usage(
            "a script runs on a database you prepared: give --dsn (or DBDUEL_DSN), e.g. after `dbduel prepare tpcb --dsn ...`",
        );
    };
    workload::options::parse(&workload::options::NONE, "scripts", &args.workload.params)?;
    Ok(Target {
        workload: &workload::script::ENTRY,
        dsn: Some(dsn),
        engine: EngineOptions {
            table_engine: args.target.table_engine.clone(),
            statement_timeout: statement_timeout(&args.target)?,
            lazy_begin: false,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn refused(given: &str, vars: &[(&str, &str)]) -> String {
        match shard_spec(given, &env(vars)) {
            Err(Error::Usage(m)) => m,
            other => panic!("--shard {given} was not refused: {other:?}"),
        }
    }

    #[test]
    fn shard_from_flags_and_orchestrators() {
        assert_eq!(shard_spec("2/8", &env(&[])).unwrap(), (2, 8));
        let k8s = [("JOB_COMPLETION_INDEX", "5")];
        assert_eq!(shard_spec("auto/8", &env(&k8s)).unwrap(), (5, 8));
        let slurm = [("SLURM_PROCID", "3"), ("SLURM_NTASKS", "4")];
        assert_eq!(shard_spec("auto", &env(&slurm)).unwrap(), (3, 4));
        assert_eq!(shard_spec("auto/4", &env(&slurm)).unwrap(), (3, 4));
    }

    #[test]
    fn shard_refusals_name_what_to_change() {
        assert!(refused("8/8", &[]).contains("below the number of shards (8)"));
        assert!(refused("0/0", &[]).contains("at least 1"));
        assert!(refused("a/2", &[]).contains("`a` is not a whole number"));
        assert!(refused("auto/4", &[]).contains("JOB_COMPLETION_INDEX"));
        assert!(refused("auto", &[("JOB_COMPLETION_INDEX", "1")]).contains("auto/N"));
        let slurm = [("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")];
        assert!(refused("auto/4", &slurm).contains("--shard auto/2"));
        assert!(refused("auto", &[("SLURM_PROCID", "2"), ("SLURM_NTASKS", "2")]).contains("below"));
    }

    /// A run of `workload` as its flags give it, at 70 transactions per second.
    fn input(workload: &str, clients: u32) -> RunInput {
        RunInput {
            target: Target {
                workload: workload::find(workload).unwrap(),
                dsn: None,
                engine: EngineOptions::default(),
            },
            scale: None,
            variant: None,
            params: BTreeMap::new(),
            clients,
            clients_given: true,
            time: None,
            transactions: None,
            warmup: 0,
            rate: Some(70.0),
            phases: Vec::new(),
            latency_limit_ms: None,
            log: None,
            exit_on_abort: false,
            verbose_errors: false,
            stall_timeout: None,
            progress: None,
            max_tries: None,
            seed: Some(1),
            protocol: Protocol::Simple,
            json: None,
            scripts: Vec::new(),
            defines: Vec::new(),
            asked_by: AskedBy::Flags,
            shard: None,
            start_at: None,
            waits: true,
            waits_hz: None,
            statements: true,
            connections: Default::default(),
            threads: None,
        }
    }

    #[test]
    fn a_workloads_own_names_for_clients_and_rate() {
        // Clients 1: -c not given (the default 1).
        let ycsb = |clients, asked_by, props: &[(&str, &str)]| {
            let mut i = input("ycsb", clients);
            i.clients_given = clients != 1;
            i.rate = None;
            i.asked_by = asked_by;
            for (k, v) in props {
                i.params.insert(k.to_string(), v.to_string());
            }
            i.plan()
        };
        let given = [("threadcount", "8"), ("target", "500")];
        let plan = ycsb(1, AskedBy::Flags, &given).unwrap();
        assert_eq!((plan.run.clients, plan.run.rate), (8, Some(500.0)));
        let refused = |r: Result<RunPlan, Error>| match r {
            Err(Error::Usage(m)) => m,
            other => panic!("not refused: {:?}", other.map(|p| p.run.clients)),
        };
        let m = refused(ycsb(4, AskedBy::Flags, &given[..1]));
        assert!(
            m.contains("YCSB property threadcount=8 and --clients 4 disagree"),
            "{m}"
        );
        // -c 1 given is a number asked for, not the default.
        let mut one = input("ycsb", 1);
        one.rate = None;
        one.params.insert("threadcount".into(), "8".into());
        let m = refused(one.plan());
        assert!(m.contains("threadcount=8 and --clients 1 disagree"), "{m}");
        let m = refused(ycsb(1, AskedBy::Plan, &given[1..]));
        assert!(
            m.contains("YCSB property target=500: a plan's points take"),
            "{m}"
        );
        let m = refused(ycsb(1, AskedBy::Flags, &[("threadcount", "0")]));
        assert!(m.contains("give a whole number of clients"), "{m}");
    }

    #[test]
    fn shards_split_clients_without_overlap() {
        let input = |clients| input("tpcb", clients);
        let mut next = 0;
        let mut rate = 0.0;
        for index in 0..3 {
            let plan = RunInput {
                shard: Some((index, 3)),
                ..input(7)
            }
            .plan()
            .unwrap();
            let s = plan.shard.unwrap();
            assert_eq!((s.first_client, plan.run.first_client), (next, next));
            assert!(s.clients == 2 || s.clients == 3);
            assert_eq!(plan.run.clients, s.clients);
            assert_eq!(
                plan.workload.clients, 7,
                "the workload sees the whole run's clients"
            );
            assert_eq!(plan.workload.shared_seed, Some(1), "every shard's --seed");
            next += s.clients;
            rate += plan.run.rate.unwrap();
        }
        assert_eq!(next, 7);
        assert!(
            (rate - 70.0).abs() < 1e-9,
            "the shards' rates add up to the run's: {rate}"
        );
        assert_eq!(input(7).plan().unwrap().workload.shared_seed, None);
    }

    #[test]
    fn shards_share_a_seed_from_start_at_before_seed() {
        let at = std::time::UNIX_EPOCH + Duration::from_millis(1_790_000_000_123);
        assert_eq!(shared_seed(Some(at), Some(9)), 1_790_000_000_123);
        assert_eq!(shared_seed(None, Some(9)), 9);
        assert_eq!(shared_seed(None, None), 0);
    }
}
