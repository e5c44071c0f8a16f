//! One measured point, for `run` and `sweep` alike: `open` (an engine and a session), `prepare` (a
//! workload's data, its progress recorded in `dbduel_facts`), `run_point` (the measuring loop: the
//! clients started, their events drained into the aggregator every 100 ms, progress lines, the
//! process's CPU read at the measured window's start and end, the server observed when asked) and a
//! `Point`, the value a run's result is assembled from (warnings for weak figures, the client's CPU
//! share, the options in effect). `Outcome`: how a command that ran to its end went.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use crate::dsn::Dsn;
use crate::engine::figures::ConnectionFigures;
use crate::engine::stall::StallGuard;
use crate::engine::{self, Engine, ServerInfo, Session};
use crate::error::Error;
use crate::event::Event;
use crate::metrics::counters::ServerCounters;
use crate::metrics::embedded::{self, EmbeddedWaits};
use crate::metrics::evidence;
use crate::metrics::observe::{Observer, ResourceSample};
use crate::metrics::statements::{self, Statements};
use crate::metrics::txn_log::ThreadLogs;
use crate::metrics::waits::{self, WaitSampler, Waits};
use crate::metrics::{self, Aggregator, Measurement};
use crate::result::{self, RunResult};
use crate::run_plan::RunPlan;
use crate::runner::{self, Limit, RunConfig};
use crate::workload::{self, Loader, Workload, WorkloadEntry, WorkloadOptions};

/// How a command that ran to its end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// Finished, but transactions failed or a check did not hold.
    Failures,
    Interrupted,
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
    entry: &WorkloadEntry,
    opts: &WorkloadOptions,
    stop: &AtomicBool,
    quiet: bool,
) -> Result<u64, Error> {
    let (engine, mut session) = open(dsn, engine_opts)?;
    let workload = (entry.new)(opts)?;
    let started = Instant::now();
    let scale = workload.scale();
    let guard = StallGuard::new(engine);
    guard.watch(session.as_ref());
    let prepared = workload::prepare_recorded(
        workload.as_ref(),
        guard.engine().as_ref(),
        session.as_mut(),
        &Loader { stop, quiet },
    );
    guard.judge(prepared, "prepare")?;
    drop(guard);
    let size = session.database_size().unwrap_or(0);
    if !quiet {
        errln!(
            "prepared {}{} in {:.2} s; database size {}",
            workload.name(),
            scale.map(|s| format!(" at scale {s}")).unwrap_or_default(),
            started.elapsed().as_secs_f64(),
            crate::out::human_bytes(size)
        );
    }
    Ok(size)
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
pub fn run_point(
    plan: &RunPlan,
    dsn: &Dsn,
    stop: &Arc<AtomicBool>,
    observe: Observe,
) -> Result<(RunResult, Vec<ResourceSample>), Error> {
    let engine: Arc<dyn Engine> = engine::open(dsn, &plan.target.engine, plan.protocol)?.into();
    let mut admin = engine.connect().map_err(|e| Error::Connect(e.message))?;
    let mut workload = (plan.target.workload.new)(&plan.workload)?;
    // The checks before the run, on a server that may have stalled since the last point.
    let guard = StallGuard::new(engine.clone());
    guard.watch(admin.as_ref());
    let before = (|| {
        workload::refuse_unfinished(workload.as_ref(), admin.as_mut())?;
        if plan.vacuum_first {
            workload::tpcb::vacuum(engine.as_ref(), admin.as_mut())?;
        }
        let warnings = workload.attach(engine.as_ref(), admin.as_mut())?;
        let info = admin
            .server_info()
            .map_err(|e| workload::db_error(e, "reading the server's settings"))?;
        Ok((warnings, info))
    })();
    let (mut warnings, info) = guard.judge(before, "reading the data's state before the run")?;
    drop(guard);
    let size_before = admin.database_size().unwrap_or(0);
    let workload: Arc<dyn Workload> = workload.into();
    let mut run = plan.run.clone();
    if run.max_tries == 0 {
        run.max_tries = workload.default_max_tries();
    }
    let released = Arc::new(OnceLock::new());
    let observer = match observe {
        Observe::Server { pid } => Some(Observer::start(
            pid,
            engine.connect().ok(),
            released.clone(),
        )),
        Observe::Nothing => None,
    };
    let sampler = waits_sampler(plan, engine.as_ref(), &released);
    let measured = measure(
        plan,
        &run,
        engine.clone(),
        workload.clone(),
        stop,
        &released,
    );
    let (waits, counters, statements) = stop_sampler(sampler, engine.as_ref());
    let resources = observer.map(|o| o.stop()).unwrap_or_default();
    // A server that stalled during the run must not hold the end of it either.
    admin.set_timeout(Some(2 * runner::GRACE));
    // Recorded even when the run failed: its changes are in the data all the same.
    let finished = finish(workload.as_ref(), engine.as_ref(), &mut admin);
    let measured = measured?;
    // The measurement stands; what could not be recorded is said with it, and fails it.
    let unrecorded = finished.err().map(|e| {
        let line = format!(
            "the run's changes could not be recorded in dbduel_facts ({e}): `dbduel check` may count them wrongly; prepare again before the next run"
        );
        warnings.push(line.clone());
        line
    });
    let size_after = admin.database_size().unwrap_or(0);
    // Read again: a setting changed during the run (SET GLOBAL, ALTER SYSTEM and a reload)
    // weakens its durability.
    let settings_after = admin.server_info().ok().map(|i| i.settings);
    let point = Point {
        plan,
        dsn,
        engine: engine.as_ref(),
        workload: workload.as_ref(),
        info,
        sizes: (size_before, size_after),
        settings_after,
        measured,
        interrupted: stop.load(Ordering::SeqCst),
        warnings,
        waits,
        statements,
        counters,
    };
    let mut result = point.assemble();
    result.unrecorded = unrecorded;
    Ok((result, resources))
}

/// The wait sampler of a run on a server (`metrics::waits`), on a connection of its own, with
/// what to say when it gives nothing: None when the plan turned it off (`--no-waits`).
fn waits_sampler(
    plan: &RunPlan,
    engine: &dyn Engine,
    released: &Arc<OnceLock<Instant>>,
) -> Option<(Option<WaitSampler>, String)> {
    if !plan.waits {
        return None;
    }
    if engine.embedded() {
        let why = format!(
            "{} runs inside dbduel: no server sessions to sample, and its connections counted nothing",
            engine.name()
        );
        return Some((None, why));
    }
    let absent = format!(
        "{}'s sessions are not sampled by this version of dbduel",
        engine.name()
    );
    let measured = match plan.run.limit {
        Limit::Time(t) => Some(t),
        Limit::Transactions(_) => None,
    };
    match engine.connect() {
        Ok(s) => Some((
            Some(WaitSampler::start(
                s,
                Instant::now(),
                plan.run.warmup,
                plan.waits_hz
                    .unwrap_or_else(|| waits::rate(engine, plan.run.clients, measured)),
                released.clone(),
            )),
            absent,
        )),
        Err(e) => Some((
            None,
            format!("the sampler could not connect: {}", e.message),
        )),
    }
}

/// What the sampler gave: the sessions' waits with what to say when there are none (None: it
/// was off), the server's counters, the statements' figures.
type Sampled = (
    Option<(Option<Waits>, String)>,
    Option<ServerCounters>,
    Statements,
);

/// Stop the wait sampler: what it saw of the sessions' waits, with what to say when it saw
/// nothing (None: it was off), the server's counters, and the statements
/// (`metrics::statements`).
fn stop_sampler(sampler: Option<(Option<WaitSampler>, String)>, engine: &dyn Engine) -> Sampled {
    match sampler {
        None => (
            None,
            None,
            Statements::absent("not read: --no-waits turned the server's sampling off"),
        ),
        Some((Some(s), absent)) => {
            let (w, c, st) = s.stop();
            (Some((w, absent)), c, st)
        }
        Some((None, absent)) => {
            let st = statements::unread(engine, &absent);
            (Some((None, absent)), None, st)
        }
    }
}

/// The workload's after-run bookkeeping (`Workload::finish`) on the admin session, or, when
/// that session was lost during the run (a server that ended every connection, or restarted),
/// on a new one that then replaces it.
fn finish(
    workload: &dyn Workload,
    engine: &dyn Engine,
    admin: &mut Box<dyn Session>,
) -> Result<(), Error> {
    let Err(first) = workload.finish(admin.as_mut()) else {
        return Ok(());
    };
    let Ok(mut fresh) = engine.connect() else {
        return Err(first);
    };
    fresh.set_timeout(Some(2 * runner::GRACE));
    *admin = fresh;
    workload.finish(admin.as_mut())
}

/// What the measuring loop hands over: the measurement and the process's CPU time with the
/// wall time it was read over.
struct Measured {
    measurement: Measurement,
    cpu: Duration,
    cpu_wall: Duration,
    /// The share of the machine busy over the measured window (None: /proc/stat unread).
    host_busy: Option<f64>,
    started: SystemTime,
    /// Why the run was stopped early: every transaction failed the same lasting way.
    doomed: Option<String>,
    /// The clients' connections' own figures over the window, summed, and how many sent
    /// them (an embedded engine's evidence).
    figures: Option<(ConnectionFigures, u32)>,
}

/// How long a run whose every transaction fails the same lasting way goes on before it is
/// stopped (long enough for a table being created by another session to appear).
const DOOMED_AFTER: Duration = Duration::from_secs(3);

/// The process's CPU clock read at the start of the measured window (the end of the warm-up)
/// and at its end (the end of -T, or when the clients are done), each with its instant: CPU
/// time and wall time always cover the same stretch, so the share of the machine is one.
/// The machine's CPU ticks are read with them (`metrics::host_ticks`).
#[derive(Default)]
struct ProcessCpu {
    start: Option<CpuRead>,
    end: Option<CpuRead>,
}

type CpuRead = (Instant, Duration, Option<(u64, u64)>);

impl ProcessCpu {
    fn read() -> CpuRead {
        (Instant::now(), metrics::cpu_time(), metrics::host_ticks())
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

    /// The CPU time and the wall time between the two reads (the end read now if not yet),
    /// and the share of the machine's CPU time busy over them.
    fn finish(self) -> (Duration, Duration, Option<f64>) {
        let Some((t0, c0, h0)) = self.start else {
            return (Duration::ZERO, Duration::ZERO, None);
        };
        let (t1, c1, h1) = self.end.unwrap_or_else(Self::read);
        let busy = h0.zip(h1).and_then(|(a, b)| metrics::host_busy(a, b));
        (
            c1.saturating_sub(c0),
            t1.saturating_duration_since(t0),
            busy,
        )
    }
}

/// Start the clients, collect their events, print progress, stop at the end.
fn measure(
    plan: &RunPlan,
    run: &RunConfig,
    engine: Arc<dyn Engine>,
    workload: Arc<dyn Workload>,
    stop: &Arc<AtomicBool>,
    released: &OnceLock<Instant>,
) -> Result<Measured, Error> {
    let (tx, rx) = mpsc::channel();
    let open_loop =
        plan.run.rate.is_some() || plan.run.shape.as_ref().is_some_and(|s| s.open_loop());
    let mut agg = Aggregator::new(workload.transaction_types(), plan.run.warmup, open_loop);
    if plan.shard.is_some() {
        agg.keep_window_histograms();
    }
    if let Some(shape) = &plan.run.shape {
        agg.phases(shape);
    }
    let mut log = match &plan.log {
        Some(l) => {
            let max_tries = match plan.run.max_tries {
                0 => workload.default_max_tries(),
                n => n,
            };
            // pgbench writes a file per thread: -j's, at most one a client.
            let files = plan.run.threads.unwrap_or(1).min(plan.run.clients).max(1);
            Some(
                ThreadLogs::create(
                    l,
                    files,
                    plan.run.warmup,
                    match plan.run.limit {
                        Limit::Time(t) => Some(t),
                        Limit::Transactions(_) => None,
                    },
                    open_loop,
                    max_tries,
                    plan.run.seed,
                )
                .map_err(Error::Usage)?,
            )
        }
        None => None,
    };
    if let Some(limit) = plan.run.latency_limit {
        agg.latency_limit(limit);
    }
    // The clients stop on Ctrl-C, or when every transaction has failed the same lasting way
    // for DOOMED_AFTER (a missing table makes thousands of errors a second, all alike).
    let halt = Arc::new(AtomicBool::new(false));
    let mut doomed: Option<String> = None;
    if let (Some(j), Some(why)) = (run.threads, runner::alone_why(&*engine, &*workload)) {
        errln!("note: -j {j} taken: {why}");
    }
    let progress_tries = match plan.run.max_tries {
        0 => workload.default_max_tries(),
        n => n,
    };
    let running = runner::start(engine, workload, run.clone(), halt.clone(), tx)?;
    // The clients are connected and released: the wait sampler's measured part starts after
    // the warm-up from here.
    let _ = released.set(running.start);
    let started = SystemTime::now() - running.start.elapsed();
    if let Some(l) = &mut log {
        l.begin(started);
    }
    let warmup_end = running.start + plan.run.warmup;
    let window_end = match run.limit {
        Limit::Time(t) => Some(warmup_end + t),
        Limit::Transactions(_) => None,
    };
    let mut cpu = ProcessCpu::default();
    cpu.tick(Instant::now(), warmup_end, window_end);
    let mut next_progress = plan.progress.map(|p| (running.start + p, p));
    let last_end_us = std::cell::Cell::new(0u64);
    let mut figures: Option<(ConnectionFigures, u32)> = None;
    let mut take = |agg: &mut Aggregator, rx: &mpsc::Receiver<Vec<Event>>| {
        for ev in rx.try_iter().flatten() {
            match &ev {
                Event::Txn(s) => last_end_us.set(last_end_us.get().max(s.end_us)),
                Event::ConnectionFigures(f) => {
                    let (sum, n) = figures.get_or_insert_with(Default::default);
                    sum.add(f);
                    *n += 1;
                }
                _ => {}
            }
            if let Some(l) = &mut log {
                l.add(&ev);
            }
            agg.add(ev);
        }
    };
    let mut running = running;
    while !running.watch(last_end_us.get()) {
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
            let style = metrics::ProgressStyle {
                max_tries: progress_tries,
                timestamp: plan.progress_timestamp.then(std::time::SystemTime::now),
            };
            let since = (at - running.start).as_secs_f64();
            let line = agg.progress_line(since, every.as_secs_f64(), &style);
            let warming = at <= warmup_end && !plan.run.warmup.is_zero();
            errln!("{line}{}", if warming { " (warm-up)" } else { "" });
            next_progress = Some((at + every, every));
        }
        agg.settle((now - running.start).as_secs().saturating_sub(10) as usize);
        if stop.load(Ordering::SeqCst) {
            halt.store(true, Ordering::SeqCst);
        }
        if plan.exit_on_abort
            && doomed.is_none()
            && let Some(lost) = agg.first_lost()
        {
            let why = format!("--exit-on-abort: {lost}; the run stopped there");
            errln!("dbduel: {why}");
            doomed = Some(why);
            halt.store(true, Ordering::SeqCst);
        }
        if doomed.is_none() && running.start.elapsed() >= DOOMED_AFTER {
            doomed = agg.doomed();
            if let Some(why) = &doomed {
                errln!("dbduel: {why}");
                halt.store(true, Ordering::SeqCst);
            }
        }
    }
    if let Some(why) = running.stalled() {
        errln!("dbduel: {why}");
        doomed.get_or_insert_with(|| why.to_string());
    }
    let (cpu, cpu_wall, host_busy) = cpu.finish();
    let ended = running.start.elapsed();
    running.join();
    take(&mut agg, &rx);
    // The measured window: -T, or up to the last transaction's end when one that was in
    // flight at the end finished later (less than -T only when Ctrl-C stopped the run: clients
    // that had nothing to do, or were lost, do not shorten it); for a count of transactions
    // per client, up to the last transaction's end.
    let tail = Duration::from_micros(last_end_us.get()).saturating_sub(plan.run.warmup);
    let measured = match run.limit {
        Limit::Time(t) if stop.load(Ordering::SeqCst) || doomed.is_some() => {
            ended.saturating_sub(plan.run.warmup).min(t)
        }
        Limit::Time(t) => t.max(tail),
        Limit::Transactions(_) => tail,
    };
    if let Some(l) = log {
        let end = plan.run.warmup + measured;
        match l.finish(u64::try_from(end.as_micros()).unwrap_or(u64::MAX)) {
            Ok(path) => errln!("transaction log written to {path}"),
            Err(e) => errln!("warning: {e}"),
        }
    }
    Ok(Measured {
        measurement: agg.finish(measured),
        cpu,
        cpu_wall,
        host_busy,
        started,
        doomed,
        figures,
    })
}

/// A measured point: all its result is assembled from (the run as planned, what ran it,
/// what the server said of itself, what was measured).
struct Point<'a> {
    plan: &'a RunPlan,
    dsn: &'a Dsn,
    engine: &'a dyn Engine,
    workload: &'a dyn Workload,
    info: ServerInfo,
    /// The database's size before and after the run.
    sizes: (u64, u64),
    /// The server's settings read again after the run (None: not read).
    settings_after: Option<std::collections::BTreeMap<String, String>>,
    measured: Measured,
    interrupted: bool,
    /// The workload's warnings (from `attach`), to which the point's own are added.
    warnings: Vec<String>,
    /// What the wait sampler saw, and what to say when it saw nothing (None: it was off).
    waits: Option<(Option<Waits>, String)>,
    /// The statements' figures over the measured run, or why there are none.
    statements: Statements,
    /// The server's counters the sampler read.
    counters: Option<ServerCounters>,
}

impl Point<'_> {
    fn assemble(mut self) -> RunResult {
        let host = metrics::Host::read();
        let (cpu_s, share) = self.client_cpu(&host);
        let more = self.warnings();
        self.warnings.extend(more);
        let options = self.options();
        let workload = self.workload_report();
        let Point {
            dsn,
            engine,
            info,
            sizes,
            measured,
            interrupted,
            warnings,
            waits,
            mut statements,
            counters,
            ..
        } = self;
        let m = measured.measurement;
        let secs = m.duration_s.max(1e-9);
        let client_bound = !engine.embedded()
            && m.transactions > 0
            && metrics::client_bound(&m.client_threads, share).is_some();
        // A shard's verdict weighs the whole run's clients; a run of some of the clients asked
        // (CH's side alone), those that ran.
        let clients = if self.plan.shard.is_some() {
            self.plan.run.clients.max(self.plan.workload.clients)
        } else {
            self.plan.run.clients
        };
        let judged = waits::Judged {
            clients,
            client_bound,
            paced: self.plan.run.rate.is_some()
                || self.plan.run.shape.as_ref().is_some_and(|s| s.open_loop()),
            host_busy: measured.host_busy,
            clients_queued: m.client_threads.queued(),
            measured_s: m.duration_s,
            server_here: engine.embedded() || dsn.is_local(),
            unanswered: runner::unanswered(&m.lost_clients),
        };
        // An engine with no server to sample judged by its connections' own figures, when
        // observation is on.
        let embedded = measured.figures.filter(|_| waits.is_some()).map(|(f, n)| {
            EmbeddedWaits::of(f, n, m.transactions, m.client_threads.storage_read_bytes)
        });
        let shard = self
            .plan
            .shard
            .map(|s| shard_part(s, self.plan, &m, measured.started));
        let mut result = RunResult {
            dbduel_version: env!("CARGO_PKG_VERSION").into(),
            started_at: humantime::format_rfc3339_seconds(measured.started).to_string(),
            interrupted,
            engine: result::EngineReport {
                name: engine.name().into(),
                dsn: dsn.to_string(),
                server_version: info.version,
                embedded: engine.embedded(),
                durability: engine::durability::of_run(
                    engine.name(),
                    &info.settings,
                    self.settings_after.as_ref(),
                    &self.workload.user_statements(),
                ),
                settings: info.settings,
                database_size_bytes: sizes.0,
                database_size_after_bytes: sizes.1,
                transport: info.transport,
                isolation: info.isolation,
            },
            workload,
            options,
            host,
            tps: m.transactions as f64 / secs,
            client_cpu_s: cpu_s,
            client_cpu_share: share,
            client_bound,
            host_cpu_busy: measured.host_busy,
            client_peak_rss_bytes: metrics::peak_rss_bytes(),
            verdict: Some(match &waits {
                Some((None, absent)) if engine.embedded() => {
                    embedded::verdict(embedded.as_ref(), absent)
                }
                Some((w, absent)) => waits::verdict(w.as_ref(), judged, absent),
                None => waits::verdict(None, judged, "wait sampling was off (--no-waits)"),
            }),
            waits: waits.and_then(|(w, _)| w),
            embedded_waits: embedded,
            statements: Some({
                statements.relate(m.transactions, &m.statement_latencies);
                statements
            }),
            server_counters: counters,
            measurement: m,
            server_restarts: Vec::new(),
            unrecorded: None,
            warnings,
            shard,
            shards: Vec::new(),
        };
        evidence::judge(
            result.verdict.as_mut(),
            result.server_counters.as_mut(),
            result.waits.as_ref(),
            &result.measurement.windows,
            result.measurement.transactions,
        );
        result
    }

    /// The process's CPU seconds and its share of the machine: over the wall time the CPU
    /// time was read over, not the measured window (a window of a few milliseconds, -t 10,
    /// against CPU read up to the clients' end gave shares over 100%).
    fn client_cpu(&self, host: &metrics::Host) -> (f64, f64) {
        let cpu_s = self.measured.cpu.as_secs_f64();
        let wall = self.measured.cpu_wall.as_secs_f64();
        let share = if wall > 0.0 {
            cpu_s / (wall * host.cores as f64)
        } else {
            0.0
        };
        (cpu_s, share)
    }

    /// Tries per transaction: `--max-tries`, or the workload's default.
    fn max_tries(&self) -> u32 {
        match self.plan.run.max_tries {
            0 => self.workload.default_max_tries(),
            n => n,
        }
    }

    /// What makes the point's figures weak: too few transactions, a rate not kept, conflicts
    /// lost on every try, an embedded engine's CPU counted as the client's.
    fn warnings(&self) -> Vec<String> {
        let m = &self.measured.measurement;
        let mut warnings = Vec::new();
        let fixed = self.workload.fixed_clients().is_some();
        if let Some(why) = &self.measured.doomed {
            warnings.push(why.clone());
        }
        if m.transactions == 0 {
            let paced = self.plan.workload.params.contains_key("spec_timing");
            warnings.push(format!(
                "no transaction completed in the measured window: nothing here is a measurement (see the errors above{})",
                if paced {
                    "; --spec-timing waits the keying and think times: run longer than them"
                } else {
                    ""
                }
            ));
        } else if m.transactions < 1000 {
            warnings.push(format!(
                "only {} transactions were measured: percentiles above p99 need thousands; {}",
                m.transactions,
                if fixed {
                    "this workload runs its streams once: repeat the run for more"
                } else if self.plan.run.shape.is_some() {
                    "make the phases longer or their loads higher"
                } else {
                    "run longer (--time) or with more clients"
                }
            ));
        }
        if let Some(open) = m.open_loop.filter(|o| !o.met()) {
            let lag = m
                .schedule_lag_ms
                .as_ref()
                .map(|l| format!(", schedule lag p99 {:.1} ms", l.p99))
                .unwrap_or_default();
            let asked = if self.plan.run.shape.is_some() {
                "the phases' rates (each phase's due and started are in its figures)"
            } else {
                "--rate"
            };
            warnings.push(format!(
                "rate not met: scheduled {}, started {}{lag}: the server (or the client) could not keep up with {asked}",
                open.due, open.started
            ));
        }
        let failed_conflicts = m.errors_by_kind.get("serialization").copied();
        if let Some(n) = failed_conflicts.filter(|n| *n > 0) {
            warnings.push(format!(
                "{n} transactions lost a conflict on each of their {} tries (isolation {}): they count as errors, not in tps; a hot row (tpcb at scale 1) under snapshot isolation makes every waiting transaction fail, so raise --max-tries or the scale",
                self.max_tries(),
                self.info.isolation
            ));
        }
        if let Some(w) = firebird3_contention(&self.info.version, m.retries, &m.errors_by_kind) {
            warnings.push(w);
        }
        if let Some(late) = self.late_start().filter(|l| *l > 1.0) {
            warnings.push(format!(
                "the clients started {late:.1} s after --start-at (connecting took that long): this shard's windows begin later than the others'"
            ));
        }
        if self.engine.embedded() {
            warnings.push("embedded engine: the client CPU includes the database's own work, so client-bound is not judged".into());
        }
        warnings
    }

    /// Seconds between `--start-at` and the clients' release.
    fn late_start(&self) -> Option<f64> {
        let at = self.plan.run.start_at?;
        Some(
            self.measured
                .started
                .duration_since(at)
                .map_or(0.0, |d| d.as_secs_f64()),
        )
    }

    fn workload_report(&self) -> result::WorkloadReport {
        let w = self.workload;
        result::WorkloadReport {
            name: w.name().into(),
            variant: w.variant().into(),
            scale: w.scale(),
            settings: w.settings(),
            metrics: w.metrics(&self.measured.measurement.counts()),
        }
    }

    fn options(&self) -> result::Options {
        let plan = self.plan;
        result::Options {
            // A shard records the whole run's clients and rate; its own part is in `shard`.
            clients: plan
                .shard
                .map_or(plan.run.clients, |_| plan.workload.clients),
            time_s: plan.time_s,
            transactions_per_client: plan.transactions,
            warmup_s: plan.run.warmup.as_secs(),
            rate: plan.run.rate.map(|r| {
                plan.shard.map_or(r, |s| {
                    r * f64::from(plan.workload.clients) / f64::from(s.clients)
                })
            }),
            protocol: plan.protocol,
            // pgbench's notation: 0 for unlimited tries.
            max_tries: match self.max_tries() {
                runner::UNLIMITED_TRIES => 0,
                n => n,
            },
            progress_s: plan.progress.map(|p| p.as_secs()),
            seed: plan.run.seed,
            // What the data is stored in, read from the server; the flag where it cannot tell.
            table_engine: self
                .info
                .table_engine
                .clone()
                .or_else(|| plan.target.engine.table_engine.clone()),
            statement_timeout_s: plan
                .target
                .engine
                .statement_timeout
                .map(|t| t.as_secs_f64()),
            lazy_begin: plan.target.engine.lazy_begin,
            phases: plan
                .run
                .shape
                .as_ref()
                .map(|s| s.phases.clone())
                .unwrap_or_default(),
            connections: plan.run.connections.clone(),
        }
    }
}

/// A shard's part of its result: its place in the run, its release on the wall clock, and its
/// histograms for `merge`.
fn shard_part(
    shard: crate::run_plan::Shard,
    plan: &RunPlan,
    m: &Measurement,
    started: SystemTime,
) -> result::ShardPart {
    use base64::Engine as _;
    let b64 = |bytes: &Vec<u8>| base64::engine::general_purpose::STANDARD.encode(bytes);
    result::ShardPart {
        index: shard.index,
        count: shard.count,
        first_client: shard.first_client,
        clients: shard.clients,
        start_at: plan.start_at.clone(),
        started_unix_ms: started
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        histograms: m
            .histograms
            .iter()
            .map(|(name, h)| (name.clone(), b64(h)))
            .collect(),
        schedule_lag_histogram: m.lag_histogram.as_ref().map(b64),
        window_histograms: m
            .window_histograms
            .iter()
            .map(|h| h.as_ref().map(b64))
            .collect(),
        statement_histograms: m
            .statement_latencies
            .iter()
            .map(|s| b64(&s.histogram))
            .collect(),
        phase_histograms: m
            .phases
            .iter()
            .map(|p| result::PhaseHistograms {
                latency: b64(&p.histogram),
                lag: p.lag_histogram.as_ref().map(b64),
                seconds: p.second_histograms.iter().map(b64).collect(),
            })
            .collect(),
        connect_histogram: Some(b64(&m.connections.histogram)),
    }
}

/// Firebird 3.0.11 has been seen to commit a transaction in part on contended rows (an UPDATE
/// that waited matching no row, or a rolled-back try's update staying; docs/connecting.md):
/// a Firebird 3 run that met conflicts says so, since its tps may count such transactions and
/// only `check` afterwards can tell.
fn firebird3_contention(
    version: &str,
    retries: u64,
    errors: &std::collections::BTreeMap<String, u64>,
) -> Option<String> {
    if !version.starts_with("Firebird 3.") {
        return None;
    }
    let kinds = ["serialization", "deadlock", "lock_timeout", "missed_row"];
    let failed: u64 = kinds.iter().filter_map(|k| errors.get(*k)).sum();
    let missed = errors.get("missed_row").copied().unwrap_or(0);
    if retries + failed == 0 {
        return None;
    }
    Some(format!(
        "{version} met conflicts ({retries} retries, {failed} failed transactions{}): under contention Firebird 3 has been seen to commit a transaction in part, which no client can see; run `dbduel check` on the workload after (docs/connecting.md, Firebird's isolation and lock wait)",
        if missed > 0 {
            format!(", {missed} of them an UPDATE that changed no row it must")
        } else {
            String::new()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn firebird3_under_contention_is_warned() {
        let none = std::collections::BTreeMap::new();
        let mut errors = std::collections::BTreeMap::new();
        errors.insert("missed_row".to_string(), 2);
        errors.insert("serialization".to_string(), 3);
        errors.insert("other_x".to_string(), 5);
        let w = firebird3_contention("Firebird 3.0.11", 10, &errors).unwrap();
        assert!(
            w.contains("10 retries, 5 failed transactions, 2 of them")
                && w.contains("dbduel check"),
            "{w}"
        );
        assert!(firebird3_contention("Firebird 3.0.11", 4, &none).is_some());
        assert_eq!(firebird3_contention("Firebird 3.0.11", 0, &none), None);
        assert_eq!(firebird3_contention("Firebird 4.0.5", 10, &errors), None);
        assert_eq!(firebird3_contention("PostgreSQL 15.18", 10, &errors), None);
    }
}
