//! dbduel: the same benchmark on every SQL database. `run` dispatches a parsed command line
//! to the commands below; everything a test needs is reachable from here, in-process.

pub mod cli;
mod commands;
pub mod dsn;
pub mod engine;
pub mod metrics;
pub mod plan;
pub mod report;
pub mod runner;
pub mod server;
pub mod sql;
pub mod stats;
pub mod store;
pub mod sweep;
pub mod workload;

#[cfg(test)]
mod adding_an_engine;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cli::{Cli, Command};
use dsn::Dsn;
use engine::{Engine, Session};
use metrics::Aggregator;
use workload::{Loader, Workload};

/// Errors that end a command. Each message says what to change.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Connect(String),
    #[error("{0}")]
    Database(String),
    #[error("{0}")]
    Io(String),
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Interrupted => 130,
            _ => 2,
        }
    }
}

/// How a command that ran to its end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// Finished, but transactions failed or a check did not hold.
    Failures,
    Interrupted,
}

/// Run one command. `stop` is raised by Ctrl-C.
pub fn run(cli: Cli, stop: Arc<AtomicBool>) -> Result<Outcome, Error> {
    match cli.command {
        Command::List => {
            print!("{}", list());
            Ok(Outcome::Success)
        }
        Command::Prepare(args) => {
            let (target, opts) = plan::prepare_plan(&args)?;
            let dsn = target.dsn.expect("prepare requires --dsn");
            prepare(&dsn, &target.engine, target.workload, &opts, &stop, false)
                .map(|_| Outcome::Success)
        }
        Command::Check(args) => {
            let target = plan::target(&args, "check")?;
            let (engine, mut session) = open(
                target.dsn.as_ref().expect("check requires --dsn"),
                &target.engine,
            )?;
            let workload = (target.workload.new)(&workload::WorkloadOptions::default())?;
            workload::refuse_unfinished(workload.as_ref(), session.as_mut())?;
            let items = workload.check(engine.as_ref(), session.as_mut())?;
            let width = items.iter().map(|i| i.name.chars().count()).max();
            for i in &items {
                println!(
                    "{} {:<width$}  {}",
                    if i.ok { "ok    " } else { "FAILED" },
                    i.name,
                    i.detail,
                    width = width.unwrap_or(0)
                );
            }
            Ok(if items.iter().all(|i| i.ok) {
                Outcome::Success
            } else {
                Outcome::Failures
            })
        }
        Command::Cleanup(args) => {
            let target = plan::target(&args, "cleanup")?;
            let (engine, mut session) = open(
                target.dsn.as_ref().expect("cleanup requires --dsn"),
                &target.engine,
            )?;
            let workload = (target.workload.new)(&workload::WorkloadOptions::default())?;
            workload.cleanup(engine.as_ref(), session.as_mut())?;
            workload::prepare_forget(workload.as_ref(), session.as_mut())?;
            eprintln!("dropped the {} tables", target.workload.name);
            Ok(Outcome::Success)
        }
        Command::Run(args) => run_benchmark(&plan::run_plan(&args)?, &stop),
        Command::Server(args) => commands::server(&args.action),
        Command::Sweep(args) => commands::sweep_cmd(&args, &stop),
        Command::Duel(args) => commands::duel(&args, &stop),
        Command::Report(args) => commands::report_cmd(&args),
        Command::Results(args) => commands::results(&args),
    }
}

/// The text of `dbduel list`.
pub fn list() -> String {
    let mut out = String::from("engines (chosen by the DSN's scheme):\n");
    let schemes = |e: &engine::EngineEntry| {
        e.schemes
            .iter()
            .map(|s| format!("{s}://"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let width = engine::ENGINES.iter().map(|e| schemes(e).len()).max();
    for e in engine::ENGINES {
        out += &format!(
            "  {:<10} {:<width$}  {}\n",
            e.name,
            schemes(e),
            e.about,
            width = width.unwrap_or(0)
        );
    }
    out += "\nworkloads:\n";
    for w in workload::all() {
        out += &format!("  {:<22} {}\n", w.name, w.about);
        if w.variants.len() > 1 {
            out += &format!("  {:<22} variants: {}\n", "", w.variants.join(", "));
        }
    }
    out += "\nfiles in place of a workload name:\n\
             \x20 FILE.toml              a declarative workload (tables, generators, transactions; see\n\
             \x20                        workloads/seed002-thetable.toml): prepare, run, check, cleanup\n\
             \x20 FILE.sql               a pgbench-format script, run on data you prepared: run FILE.sql,\n\
             \x20                        or run -f FILE[@WEIGHT] (repeatable)\n";
    out
}

/// An engine and one session on it.
pub type Opened = (Arc<dyn Engine>, Box<dyn Session>);

/// Open the engine a DSN names and one session on it.
pub fn open(dsn: &Dsn, opts: &engine::EngineOptions) -> Result<Opened, Error> {
    let engine: Arc<dyn Engine> = engine::open(dsn, opts, engine::Protocol::Simple)?.into();
    let session = engine.connect().map_err(|e| Error::Connect(e.message))?;
    Ok((engine, session))
}

/// Prepare a workload: create and load its tables. Returns the database size afterwards.
pub fn prepare(
    dsn: &Dsn,
    engine_opts: &engine::EngineOptions,
    entry: &workload::WorkloadEntry,
    opts: &workload::WorkloadOptions,
    stop: &AtomicBool,
    quiet: bool,
) -> Result<u64, Error> {
    let (engine, mut session) = open(dsn, engine_opts)?;
    let workload = (entry.new)(opts)?;
    let started = Instant::now();
    let scale = workload.scale();
    workload::prepare_recorded(
        workload.as_ref(),
        engine.as_ref(),
        session.as_mut(),
        &Loader { stop, quiet },
    )?;
    let size = session.database_size().unwrap_or(0);
    if !quiet {
        eprintln!(
            "prepared {}{} in {:.2} s; database size {}",
            workload.name(),
            scale.map(|s| format!(" at scale {s}")).unwrap_or_default(),
            started.elapsed().as_secs_f64(),
            report::human_bytes(size)
        );
    }
    Ok(size)
}

/// Run a benchmark as planned: prepare a temporary SQLite database when no DSN is given.
fn run_benchmark(plan: &plan::RunPlan, stop: &Arc<AtomicBool>) -> Result<Outcome, Error> {
    if let Some(path) = &plan.json {
        report::check_writable(path)?;
    }
    let temp = match &plan.target.dsn {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("dbduel-")
                .tempdir()
                .map_err(|e| {
                    Error::Io(format!(
                        "cannot create a temporary directory (set TMPDIR to a writable one): {e}"
                    ))
                })?,
        ),
    };
    let dsn = match (&plan.target.dsn, &temp) {
        (Some(d), _) => d.clone(),
        (None, Some(dir)) => {
            Dsn::sqlite(&dir.path().join(format!("{}.db", plan.target.workload.name)))
        }
        (None, None) => unreachable!("a temporary directory exists when no DSN is given"),
    };
    if temp.is_some() {
        let mut opts = plan.workload.clone();
        opts.scale = opts.scale.max(1);
        eprintln!(
            "no --dsn given: {} at scale {} in a temporary SQLite database ({})",
            plan.target.workload.name, opts.scale, dsn
        );
        prepare(
            &dsn,
            &plan.target.engine,
            plan.target.workload,
            &opts,
            stop,
            false,
        )?;
    }
    let (result, _) = bench(plan, &dsn, stop, Observe::Nothing)?;
    let interrupted = result.interrupted;
    print!("{}", report::summary(&result));
    if let Some(path) = &plan.json {
        result.write_json(path)?;
        eprintln!("result written to {}", path.display());
    }
    Ok(if interrupted {
        Outcome::Interrupted
    } else if failed(&result) {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}

/// Whether a measured point failed in part: failed transactions, lost clients, nothing
/// measured, or (in a sweep) a managed server that had to be restarted during it. `run` and
/// `sweep` then exit 1.
pub fn failed(result: &report::RunResult) -> bool {
    let m = &result.measurement;
    m.errors > 0
        || !m.lost_clients.is_empty()
        || m.transactions == 0
        || !result.server_restarts.is_empty()
}

/// What to observe of the server during a point: nothing (a plain `run`), or its counters
/// and, when dbduel manages it, its process tree.
#[derive(Debug, Clone, Copy)]
pub enum Observe {
    Nothing,
    Server { pid: Option<u32> },
}

/// Run one measured point on `dsn` (already prepared). Returns the result and the server's
/// per-second samples (none when nothing is observed).
pub fn bench(
    plan: &plan::RunPlan,
    dsn: &Dsn,
    stop: &Arc<AtomicBool>,
    observe: Observe,
) -> Result<(report::RunResult, Vec<metrics::observe::ResourceSample>), Error> {
    let engine: Arc<dyn Engine> = engine::open(dsn, &plan.target.engine, plan.protocol)?.into();
    let mut admin = engine.connect().map_err(|e| Error::Connect(e.message))?;
    let mut workload = (plan.target.workload.new)(&plan.workload)?;
    workload::refuse_unfinished(workload.as_ref(), admin.as_mut())?;
    let mut warnings = workload.attach(engine.as_ref(), admin.as_mut())?;
    let info = admin
        .server_info()
        .map_err(|e| workload::db_error(e, "reading the server's settings"))?;
    let size_before = admin.database_size().unwrap_or(0);
    let workload: Arc<dyn Workload> = workload.into();
    let mut run = plan.run.clone();
    if run.max_tries == 0 {
        run.max_tries = workload.default_max_tries();
    }
    let observer = match observe {
        Observe::Server { pid } => Some(metrics::observe::Observer::start(
            pid,
            engine.connect().ok(),
            Instant::now(),
        )),
        Observe::Nothing => None,
    };
    let measured = measure(plan, &run, engine.clone(), workload.clone(), stop);
    let resources = observer.map(|o| o.stop()).unwrap_or_default();
    let measured = measured?;
    // A server that stalled during the run must not hold the end of it either.
    admin.set_timeout(Some(2 * runner::GRACE));
    let size_after = admin.database_size().unwrap_or(0);
    let interrupted = stop.load(Ordering::SeqCst);
    let sizes = (size_before, size_after);
    let result = assemble(
        plan,
        dsn,
        engine.as_ref(),
        workload.as_ref(),
        info,
        sizes,
        measured,
        interrupted,
        &mut warnings,
    );
    Ok((result, resources))
}

/// What the measuring loop hands over: the measurement and the process's CPU time with the
/// wall time it was read over.
struct Measured {
    measurement: metrics::Measurement,
    cpu: Duration,
    cpu_wall: Duration,
    started: std::time::SystemTime,
}

/// The process's CPU clock read at the start of the measured window (the end of the warm-up)
/// and at its end (the end of -T, or when the clients are done), each with its instant: CPU
/// time and wall time always cover the same stretch, so the share of the machine is one.
#[derive(Default)]
struct ProcessCpu {
    start: Option<(Instant, Duration)>,
    end: Option<(Instant, Duration)>,
}

impl ProcessCpu {
    fn read() -> (Instant, Duration) {
        (Instant::now(), metrics::cpu_time())
    }

    /// Called by the measuring loop: read at the window's start and at its end, once each.
    fn tick(&mut self, now: Instant, from: Instant, to: Option<Instant>) {
        if self.start.is_none() && now >= from {
            self.start = Some(Self::read());
        }
        if self.start.is_some() && self.end.is_none() && to.is_some_and(|t| now >= t) {
            self.end = Some(Self::read());
        }
    }

    /// The CPU time and the wall time between the two reads (the end read now if not yet).
    fn finish(self) -> (Duration, Duration) {
        let Some((t0, c0)) = self.start else {
            return (Duration::ZERO, Duration::ZERO);
        };
        let (t1, c1) = self.end.unwrap_or_else(Self::read);
        (c1.saturating_sub(c0), t1.saturating_duration_since(t0))
    }
}

/// Start the clients, collect their events, print progress, stop at the end.
fn measure(
    plan: &plan::RunPlan,
    run: &runner::RunConfig,
    engine: Arc<dyn Engine>,
    workload: Arc<dyn Workload>,
    stop: &Arc<AtomicBool>,
) -> Result<Measured, Error> {
    let (tx, rx) = mpsc::channel();
    let mut agg = Aggregator::new(
        workload.transaction_types(),
        plan.run.warmup,
        plan.run.rate.is_some(),
    );
    let running = runner::start(engine, workload, run.clone(), stop.clone(), tx)?;
    let started = std::time::SystemTime::now();
    let warmup_end = running.start + plan.run.warmup;
    let window_end = match run.limit {
        runner::Limit::Time(t) => Some(warmup_end + t),
        runner::Limit::Transactions(_) => None,
    };
    let mut cpu = ProcessCpu::default();
    cpu.tick(Instant::now(), warmup_end, window_end);
    let mut next_progress = plan.progress.map(|p| (running.start + p, p));
    let mut last_end_us = 0u64;
    let mut take = |agg: &mut Aggregator, rx: &mpsc::Receiver<Vec<runner::Event>>| {
        for ev in rx.try_iter().flatten() {
            if let runner::Event::Txn(s) = &ev {
                last_end_us = last_end_us.max(s.end_us);
            }
            agg.add(ev);
        }
    };
    let mut running = running;
    while !running.watch() {
        let now = Instant::now();
        let mut wake = now + Duration::from_millis(100);
        for at in [Some(warmup_end), window_end].into_iter().flatten() {
            if at > now {
                wake = wake.min(at);
            }
        }
        if let Some((at, _)) = next_progress {
            wake = wake.min(at);
        }
        std::thread::sleep(wake.saturating_duration_since(now));
        take(&mut agg, &rx);
        let now = Instant::now();
        cpu.tick(now, warmup_end, window_end);
        if let Some((at, every)) = next_progress.filter(|(at, _)| now >= *at) {
            let line = agg.progress_line((at - running.start).as_secs_f64(), every.as_secs_f64());
            let warming = at <= warmup_end && !plan.run.warmup.is_zero();
            eprintln!("{line}{}", if warming { " (warm-up)" } else { "" });
            next_progress = Some((at + every, every));
        }
        agg.settle((now - running.start).as_secs().saturating_sub(10) as usize);
    }
    let (cpu, cpu_wall) = cpu.finish();
    let ended = running.start.elapsed();
    running.join();
    take(&mut agg, &rx);
    // The measured window: -T, or up to the last transaction's end when one that was in
    // flight at the end finished later (less than -T only when Ctrl-C stopped the run: clients
    // that had nothing to do, or were lost, do not shorten it); for a count of transactions
    // per client, up to the last transaction's end.
    let tail = Duration::from_micros(last_end_us).saturating_sub(plan.run.warmup);
    let measured = match run.limit {
        runner::Limit::Time(t) if stop.load(Ordering::SeqCst) => {
            ended.saturating_sub(plan.run.warmup).min(t)
        }
        runner::Limit::Time(t) => t.max(tail),
        runner::Limit::Transactions(_) => tail,
    };
    Ok(Measured {
        measurement: agg.finish(measured),
        cpu,
        cpu_wall,
        started,
    })
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    plan: &plan::RunPlan,
    dsn: &Dsn,
    engine: &dyn Engine,
    workload: &dyn Workload,
    info: engine::ServerInfo,
    sizes: (u64, u64),
    measured: Measured,
    interrupted: bool,
    warnings: &mut Vec<String>,
) -> report::RunResult {
    let host = metrics::Host::read();
    let m = measured.measurement;
    let secs = m.duration_s.max(1e-9);
    let cpu_s = measured.cpu.as_secs_f64();
    // Over the wall time the CPU time was read over, not the measured window: a window of a
    // few milliseconds (-t 10) against CPU read up to the clients' end gave shares over 100%.
    let wall = measured.cpu_wall.as_secs_f64();
    let share = if wall > 0.0 {
        cpu_s / (wall * host.cores as f64)
    } else {
        0.0
    };
    if m.transactions == 0 {
        warnings.push(
            "no transaction completed in the measured window: nothing here is a measurement (see the errors above; with --spec-timing, run longer than the keying and think times)".into(),
        );
    } else if m.transactions < 1000 {
        warnings.push(format!(
            "only {} transactions were measured: percentiles above p99 need thousands; run longer (--time) or with more clients",
            m.transactions
        ));
    }
    if let Some(open) = m.open_loop.filter(|o| !o.met()) {
        let lag = m
            .schedule_lag_ms
            .as_ref()
            .map(|l| format!(", schedule lag p99 {:.1} ms", l.p99))
            .unwrap_or_default();
        warnings.push(format!(
            "rate not met: scheduled {}, started {}{lag}: the server (or the client) could not keep up with --rate",
            open.due, open.started
        ));
    }
    let failed_conflicts = m.errors_by_kind.get("serialization").copied();
    if let Some(n) = failed_conflicts.filter(|n| *n > 0) {
        let tries = match plan.run.max_tries {
            0 => workload.default_max_tries(),
            n => n,
        };
        warnings.push(format!(
            "{n} transactions lost a conflict on each of their {tries} tries (isolation {}): they count as errors, not in tps; a hot row (tpcb at scale 1) under snapshot isolation makes every waiting transaction fail, so raise --max-tries or the scale",
            info.isolation
        ));
    }
    if engine.embedded() {
        warnings.push("embedded engine: the client CPU includes the database's own work, so client-bound is not judged".into());
    }
    report::RunResult {
        dbduel_version: env!("CARGO_PKG_VERSION"),
        started_at: humantime::format_rfc3339_seconds(measured.started).to_string(),
        interrupted,
        engine: report::EngineReport {
            name: engine.name().into(),
            dsn: dsn.to_string(),
            server_version: info.version,
            embedded: engine.embedded(),
            settings: info.settings,
            database_size_bytes: sizes.0,
            database_size_after_bytes: sizes.1,
            transport: info.transport,
            isolation: info.isolation,
        },
        workload: report::WorkloadReport {
            name: workload.name().into(),
            variant: workload.variant().into(),
            scale: workload.scale(),
            settings: workload.settings(),
            metrics: workload.metrics(&m),
        },
        options: report::Options {
            clients: plan.run.clients,
            time_s: plan.time_s,
            transactions_per_client: plan.transactions,
            warmup_s: plan.run.warmup.as_secs(),
            rate: plan.run.rate,
            protocol: plan.protocol,
            max_tries: if plan.run.max_tries == 0 {
                workload.default_max_tries()
            } else {
                plan.run.max_tries
            },
            progress_s: plan.progress.map(|p| p.as_secs()),
            seed: plan.run.seed,
            // What the data is stored in, read from the server; the flag where it cannot tell.
            table_engine: info
                .table_engine
                .clone()
                .or_else(|| plan.target.engine.table_engine.clone()),
            statement_timeout_s: plan
                .target
                .engine
                .statement_timeout
                .map(|t| t.as_secs_f64()),
        },
        host,
        tps: m.transactions as f64 / secs,
        client_cpu_s: cpu_s,
        client_cpu_share: share,
        client_bound: !engine.embedded()
            && m.transactions > 0
            && metrics::client_bound(&m.client_threads, share).is_some(),
        client_peak_rss_bytes: metrics::peak_rss_bytes(),
        measurement: m,
        server_restarts: Vec::new(),
        warnings: std::mem::take(warnings),
    }
}
