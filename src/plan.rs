//! Command-line arguments -> a validated plan, before any connection is opened: impossible or
//! conflicting options are refused here with the flag to change. The only files read are the
//! scripts of `run FILE.sql` / `-f`, parsed here so that their errors come first.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{PrepareArgs, RunArgs, SysbenchArgs, TargetArgs, TpccArgs, YcsbArgs};
use crate::dsn::Dsn;
use crate::engine::{EngineOptions, Protocol};
use crate::error::Error;
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
    pub json: Option<PathBuf>,
    pub time_s: Option<u64>,
    pub transactions: Option<u64>,
}

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
            let mut all = params(&args.sysbench, &args.tpcc)?;
            all.extend(ycsb_params(&args.ycsb, args.property_file.as_deref())?);
            all.extend(args.tpch.params());
            all
        },
        clients: 0,
        run_s: None,
        scripts: None,
    };
    // The workload's own options are checked before anything connects.
    (target.workload.new)(&opts)?;
    Ok((target, opts))
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
    pub time: Option<u64>,
    pub transactions: Option<u64>,
    pub warmup: u64,
    pub rate: Option<f64>,
    pub progress: Option<u64>,
    /// None: the workload's default (`Workload::default_max_tries`).
    pub max_tries: Option<u32>,
    /// None: from the clock.
    pub seed: Option<u64>,
    pub protocol: Protocol,
    pub json: Option<PathBuf>,
    /// Script files (`FILE[@WEIGHT]`) and their `-D` defines.
    pub scripts: Vec<String>,
    pub defines: Vec<String>,
    /// What the user wrote, so that an error names the thing to change.
    pub asked_by: AskedBy,
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
            AskedBy::Plan => format!("key `{}`", flag.trim_start_matches('-')),
        }
    }
}

pub fn run_plan(args: &RunArgs) -> Result<RunPlan, Error> {
    let scripts = script_specs(args)?;
    let target = if scripts.is_empty() {
        target(&args.target, "run")?
    } else {
        script_target(args)?
    };
    let mut params = params(&args.sysbench, &args.tpcc)?;
    params.extend(args.sysbench_run.params());
    params.extend(args.tpcc_run.params());
    params.extend(args.tpch.params());
    params.extend(args.tpch_run.params());
    let (progress, file) = progress_or_file(args)?;
    params.extend(ycsb_params(&args.ycsb, file)?);
    RunInput {
        target,
        scale: args.scale,
        variant: variant(args)?,
        params,
        clients: args.clients,
        time: args.time,
        transactions: args.transactions,
        warmup: args.warmup,
        rate: args.rate,
        progress,
        max_tries: args.max_tries,
        seed: args.seed,
        protocol: args.protocol,
        json: args.json.clone(),
        scripts,
        defines: args.defines.clone(),
        asked_by: AskedBy::Flags,
    }
    .plan()
}

impl RunInput {
    /// Check everything a run can be refused for before it connects, and give the plan.
    pub fn plan(self) -> Result<RunPlan, Error> {
        let mut limit = self.check()?;
        let seed = self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
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
        let mut workload = WorkloadOptions {
            scale: self.scale.unwrap_or(0),
            fillfactor: None,
            variant: self.variant.clone(),
            params: self.params.clone(),
            clients: self.clients,
            run_s: None,
            scripts,
        };
        let mut transactions = self.transactions;
        let mut clients = self.clients;
        if let Some(each) = (self.target.workload.new)(&workload)?.fixed_clients() {
            // The workload's clients run their own work to its end (TPC-H's streams).
            self.refuse_fixed()?;
            clients = each.len() as u32;
            let most = each.iter().copied().max().unwrap_or(1);
            limit = Limit::Transactions(most);
            transactions = Some(most);
            workload.clients = clients;
        } else if self.time.is_none() && self.transactions.is_none() {
            // A workload that counts its operations for the whole run (YCSB's
            // operationcount) gives each client its share, rounded up.
            if let Some(n) = (self.target.workload.new)(&workload)?.operations() {
                let each = n.div_ceil(u64::from(self.clients));
                limit = Limit::Transactions(each);
                transactions = Some(each);
            }
        }
        let time_s = match limit {
            Limit::Time(t) => Some(t.as_secs()),
            Limit::Transactions(_) => None,
        };
        workload.run_s = time_s.map(|t| t + self.warmup);
        Ok(RunPlan {
            target: self.target,
            workload,
            protocol: self.protocol,
            run: RunConfig {
                clients,
                limit,
                warmup: Duration::from_secs(self.warmup),
                rate: self.rate,
                // 0: the workload's default (`Workload::default_max_tries`).
                max_tries: self.max_tries.unwrap_or(0),
                seed,
            },
            progress: self.progress.map(Duration::from_secs),
            json: self.json,
            time_s,
            transactions,
        })
    }

    /// A workload that fixes its clients and their work takes no --clients, --time,
    /// --transactions nor --rate.
    fn refuse_fixed(&self) -> Result<(), Error> {
        let name = self.target.workload.name;
        let given = [
            (self.clients != 1, "--clients"),
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

    /// The checks, in the order `dbduel run` has always made them; the limit of the run.
    fn check(&self) -> Result<Limit, Error> {
        if self.clients == 0 {
            return usage("--clients must be at least 1");
        }
        let most = most_clients();
        if u64::from(self.clients) > most {
            return usage(format!(
                "{} {}: this machine allows at most {most} (each client is a thread and two open files: see ulimit -n and /proc/sys/kernel/threads-max)",
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
        if self.max_tries == Some(0) {
            return usage("--max-tries must be at least 1 (1 means no retry)");
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

/// The workload-specific options given, by name; zero counts are refused here.
fn params(sysbench: &SysbenchArgs, tpcc: &TpccArgs) -> Result<BTreeMap<String, String>, Error> {
    if tpcc.warehouses == Some(0) {
        return usage("--warehouses must be at least 1");
    }
    if tpcc.load_workers == Some(0) {
        return usage("--load-workers must be at least 1");
    }
    let mut all = sysbench.params();
    all.extend(tpcc.params());
    Ok(all)
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

fn variant(args: &RunArgs) -> Result<Option<String>, Error> {
    let picked: Vec<&str> = [
        args.builtin.as_deref(),
        args.select_only.then_some("select-only"),
        args.simple_update.then_some("simple-update"),
    ]
    .into_iter()
    .flatten()
    .collect();
    match picked.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.to_string())),
        _ => usage("give only one of --builtin, --select-only (-S), --simple-update (-N)"),
    }
}

/// The scripts of a run: every `-f FILE[@WEIGHT]`, and the workload argument when it names a
/// script (ends in .sql, or is a file and no workload's name).
fn script_specs(args: &RunArgs) -> Result<Vec<String>, Error> {
    let mut specs = Vec::new();
    if let Some(w) = args.target.workload.as_deref() {
        let path = w.rsplit_once('@').map_or(w, |(p, _)| p);
        let is_script = path.ends_with(".sql")
            || (!workload::custom::is_file(path)
                && workload::find(w).is_err()
                && std::path::Path::new(path).is_file());
        if is_script {
            specs.push(w.to_string());
        } else if !args.files.is_empty() {
            return usage(format!(
                "give either the workload {w} or scripts (-f FILE), not both"
            ));
        }
    }
    specs.extend(args.files.iter().cloned());
    if specs.is_empty() && !args.defines.is_empty() {
        return usage("-D defines script variables: give a script (FILE.sql or -f FILE)");
    }
    Ok(specs)
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

/// The most clients this machine can run: each is a thread with two open files (its
/// connection and a handle to shut it down), within the open-files hard limit and the
/// system's thread limit, less some room for the rest.
fn most_clients() -> u64 {
    // SAFETY: reads this process's own limit.
    let files = unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_max
        } else {
            1024
        }
    };
    let threads = std::fs::read_to_string("/proc/sys/kernel/threads-max")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    (files.saturating_sub(64) / 2).min(threads.saturating_sub(64))
}

/// The DSN, with the password of `--password-file` when one is given.
fn target_dsn(args: &TargetArgs) -> Result<Option<Dsn>, Error> {
    let dsn = args
        .dsn
        .as_deref()
        .map(crate::engine::parse_dsn)
        .transpose()?;
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
fn script_target(args: &RunArgs) -> Result<Target, Error> {
    let Some(dsn) = target_dsn(&args.target)? else {
        return usage(
            "a script runs on a database you prepared: give --dsn (or DBDUEL_DSN), e.g. after `dbduel prepare tpcb --dsn ...`",
        );
    };
    if args.builtin.is_some() || args.select_only || args.simple_update {
        return usage(
            "--builtin, -S and -N choose tpcb's scripts: leave them out when running a script file",
        );
    }
    let mut sysbench = args.sysbench.params();
    sysbench.extend(args.sysbench_run.params());
    if let Some(k) = sysbench.keys().next() {
        return usage(format!(
            "--{} applies to the sysbench workloads, not to scripts",
            k.replace('_', "-")
        ));
    }
    Ok(Target {
        workload: &workload::script::ENTRY,
        dsn: Some(dsn),
        engine: EngineOptions {
            table_engine: args.target.table_engine.clone(),
            statement_timeout: statement_timeout(&args.target)?,
        },
    })
}
