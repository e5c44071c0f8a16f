//! Measurement, the consumer of the runner's events (`Aggregator::add`): HDR histograms per
//! transaction type (3 significant digits, 1 µs to 1 h), per-second windows, errors by kind with
//! the first message of each, retries, schedule lag and the open loop's due and started
//! transactions, unfinished transactions, the client threads' own CPU and run-queue time; gives a
//! workload the counts its own figures come from (`Measurement::counts`: `workload::Counts`); reads
//! the process's CPU time, its peak memory and the host's facts; judges whether a run was
//! client-bound (`client_bound`). `observe.rs` is the server observer, `waits.rs` the wait
//! sampler and the rule that names what limited a run, `embedded.rs` that rule for an engine
//! with no server (its connections' own figures), `statements.rs` where the server's time went
//! statement by statement (read on the wait sampler's connection), `statement_latencies.rs` the
//! per-statement latencies the clients timed, `connections.rs` every connection the run opened
//! and its connect time, `txn_log.rs` pgbench's transaction logs (`-l`), `counters.rs` the
//! server's counters the sampler reads once a second and the evidence they add.
//!
//! Latency runs from the scheduled start in the open loop (coordinated omission is not hidden) and
//! from the actual start in the closed loop (`event::Sample`). A failed transaction counts as an
//! error, not a transaction, and its latency stays out of the histograms and percentiles.
//!
//! Warm-up samples are kept in the per-second windows, marked, and left out of the totals. The
//! measured window is `-T`, stretched to the last transaction's end when one in flight at the end
//! finished later (shorter only when Ctrl-C stopped the run), or, for `-t`, from the end of the
//! warm-up to the last transaction's end; tps is counted over it.
//!
//! Client CPU is judged per client thread: each reads its own CPU clock and run-queue wait over its
//! part of the measured window and sends them as an event when it ends; the aggregator sums them
//! (`client_threads`). The process's user+system time is read at the window's start and end with
//! the instants of both reads, so that its share of the machine is over the same stretch. Client
//! threads busy more than half of their time, or the process over half the machine, flag the result
//! client-bound (reasons in docs/run.md). An embedded engine's work is the client's, so the flag is
//! not judged for SQLite.

pub mod connections;
pub mod counters;
pub mod embedded;
pub mod evidence;
pub mod observe;
pub mod phases;
pub mod statement_latencies;
pub mod statements;
pub mod txn_log;
pub mod waits;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::engine::ErrorClass;
use crate::event::{Event, Sample};
use crate::workload::{Counts, TypeCounts};

/// Latencies are recorded in microseconds, from 1 µs to one hour.
fn histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, sigfig).expect("valid histogram bounds")
}

/// Percentiles of a latency distribution, in milliseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
    /// The standard deviation, from the histogram (pgbench's "latency stddev").
    #[serde(default)]
    pub stddev: f64,
}

impl Latency {
    pub fn of(h: &Histogram<u64>) -> Latency {
        let ms = |us: u64| us as f64 / 1000.0;
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            mean: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            p99_9: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
            stddev: h.stdev() / 1000.0,
        }
    }
}

/// One second of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Window {
    /// Seconds since the start at the end of this window (1 = the first second).
    pub t: u32,
    /// True for seconds inside the warm-up, which the totals exclude.
    pub warmup: bool,
    pub transactions: u64,
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    pub retries: u64,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl Window {
    /// Second `t`, with nothing in it yet.
    pub fn empty(t: u32, warmup: bool) -> Window {
        Window {
            t,
            warmup,
            transactions: 0,
            errors: 0,
            errors_by_kind: BTreeMap::new(),
            retries: 0,
            p50_ms: None,
            p90_ms: None,
            p95_ms: None,
            p99_ms: None,
        }
    }

    /// Its percentiles, from its latency histogram (microseconds).
    pub fn percentiles_of(&mut self, h: &Histogram<u64>) {
        let ms = |q: f64| Some(h.value_at_quantile(q) as f64 / 1000.0);
        (self.p50_ms, self.p90_ms, self.p95_ms, self.p99_ms) =
            (ms(0.5), ms(0.9), ms(0.95), ms(0.99));
    }
}

/// Totals of one transaction type.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TypeSummary {
    pub name: String,
    pub transactions: u64,
    pub tps: f64,
    pub errors: u64,
    pub retries: u64,
    /// Transactions tried more than once, whether they then succeeded or failed (pgbench's
    /// "number of transactions retried"; 0 in results from before it was counted).
    #[serde(default)]
    pub retried: u64,
    /// Transactions that ended in a rollback the workload asked for (TPC-C's 1% of
    /// New-Orders): counted in `transactions`, not in `errors`.
    pub rollbacks: u64,
    /// `-L` in an open loop: those of this type skipped (pgbench's per-script "skipped";
    /// absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
    pub latency_ms: Latency,
}

/// Everything measured in a run, after the warm-up.
/// An open-loop run's schedule: transactions due within the run and those started. The rate
/// was met when no more than 1% of them could not start before the end (a few transactions
/// due in the last milliseconds may always miss it).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct OpenLoop {
    pub due: u64,
    pub started: u64,
}

/// `-L` (pgbench's latency limit): its limit, the measured successful transactions slower than
/// it (latency from the schedule in an open loop), and, in an open loop, those skipped: already
/// later than the limit when their turn came, never sent to the server (pgbench's "skipped").
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct LatencyLimit {
    pub limit_ms: f64,
    pub late: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
}

impl OpenLoop {
    pub fn met(&self) -> bool {
        self.started * 100 >= self.due * 99
    }
}

/// The client threads' own CPU time (their thread CPU clocks) over their part of the measured
/// window: from the end of the warm-up, connecting excluded, to each client's last transaction.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct ClientThreads {
    /// Client threads that reported (a client that ended during the warm-up has nothing).
    pub threads: u32,
    pub cpu_s: f64,
    /// Time they were ready to run but waited for a core (None where the kernel keeps no
    /// scheduler statistics).
    pub run_queue_s: Option<f64>,
    /// Their CPU time over their wall time in the window, all threads together: the share of
    /// its time a client spent running its own code (0 to 1). Run-queue wait is not in it.
    pub busy: f64,
    /// The same for the busiest thread alone.
    pub busiest: f64,
    /// Bytes they read from storage (None where the kernel does not count them): an embedded
    /// engine's page reads that the operating system's cache did not serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_read_bytes: Option<u64>,
}

impl ClientThreads {
    /// The share of their wall time the client threads waited for a core (None where the
    /// kernel keeps no scheduler statistics, or they ran not at all).
    pub fn queued(&self) -> Option<f64> {
        let wall = self.cpu_s / self.busy;
        self.run_queue_s
            .filter(|_| self.busy > 0.0 && wall > 0.0)
            .map(|q| q / wall)
    }
}

/// Client threads busy (running on a core) more than this share of their time spent more of
/// each transaction on the client's side than waiting for the database.
pub const CLIENT_BOUND_BUSY: f64 = 0.5;

/// A process that used more than this share of the machine's CPU left the server on the same
/// machine less than it took itself.
pub const CLIENT_BOUND_SHARE: f64 = 0.5;

/// Why a run measured the client rather than the database, in a sentence; None when it did
/// not. `share` is the process's CPU time over (wall time x cores).
pub fn client_bound(threads: &ClientThreads, share: f64) -> Option<String> {
    if threads.threads > 0 && threads.busy > CLIENT_BOUND_BUSY {
        return Some(format!(
            "dbduel's client threads were busy {:.0}% of the measured window (the busiest {:.0}%; over {:.0}%): they spent more time running their own code than waiting for the database",
            threads.busy * 100.0,
            threads.busiest * 100.0,
            CLIENT_BOUND_BUSY * 100.0
        ));
    }
    (share > CLIENT_BOUND_SHARE).then(|| {
        format!(
            "dbduel used {:.0}% of the machine's CPU (over {:.0}%): a server on this machine had less than the client took",
            share * 100.0,
            CLIENT_BOUND_SHARE * 100.0
        )
    })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    pub duration_s: f64,
    pub transactions: u64,
    /// Statements of the successful transactions (sysbench's read + write + other).
    pub queries: u64,
    pub qps: f64,
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    pub retries: u64,
    /// Transactions tried more than once (pgbench's "number of transactions retried").
    #[serde(default)]
    pub retried: u64,
    /// Successful transactions that ended in a rollback the workload asked for.
    pub rollbacks: u64,
    pub reconnects: u64,
    /// The clients' time without a connection (lost, until reconnected or the end), summed
    /// over clients: time the measured window holds and no transaction could use.
    pub disconnected_s: f64,
    pub lost_clients: Vec<String>,
    /// Transactions in flight at the end of the run that were cancelled.
    pub unfinished: u64,
    /// The first message of each kind of error, as the server (or dbduel) said it.
    pub error_messages: BTreeMap<String, String>,
    /// Open loop: whether the rate was kept (None in the closed loop). Skipped transactions
    /// (`-L`) are not started.
    pub open_loop: Option<OpenLoop>,
    /// `-L`: the late and skipped transactions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_limit: Option<LatencyLimit>,
    pub client_threads: ClientThreads,
    pub latency_ms: Latency,
    pub schedule_lag_ms: Option<Latency>,
    /// The latency of the run's first successful transaction (the earliest to start, warm-up
    /// included): after a cold start, the cold-cache time of the first query.
    pub first_transaction_ms: Option<f64>,
    pub transaction_types: Vec<TypeSummary>,
    /// Each statement of each transaction type, timed on the client (`metrics::statement_latencies`);
    /// empty when timing was off (`--no-statement-latencies`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statement_latencies: Vec<statement_latencies::Statement>,
    /// Each phase's own figures, in a run whose load changes shape (`--phase`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<phases::PhaseResult>,
    pub windows: Vec<Window>,
    /// Every connection the run opened, its connect times, and the clients' storm
    /// (`metrics::connections`; absent in results of dbduel versions before it).
    #[serde(default)]
    pub connections: connections::Connections,
    /// Each transaction type's latency histogram (microseconds), HdrHistogram V2-serialized.
    #[serde(skip)]
    pub histograms: Vec<(String, Vec<u8>)>,
    /// The open loop's schedule-lag histogram, serialized likewise.
    #[serde(skip)]
    pub lag_histogram: Option<Vec<u8>>,
    /// Each window's latency histogram (2 significant digits), serialized likewise, when the
    /// aggregator was asked to keep them (`Aggregator::keep_window_histograms`, for shards);
    /// None for a window without a transaction.
    #[serde(skip)]
    pub window_histograms: Vec<Option<Vec<u8>>>,
}

impl Measurement {
    /// The counts a workload computes its own figures from (`Workload::metrics`).
    pub fn counts(&self) -> Counts {
        Counts {
            duration_s: self.duration_s,
            types: self
                .transaction_types
                .iter()
                .map(|t| TypeCounts {
                    name: t.name.clone(),
                    transactions: t.transactions,
                    rollbacks: t.rollbacks,
                })
                .collect(),
        }
    }
}

struct TypeAcc {
    hist: Histogram<u64>,
    transactions: u64,
    errors: u64,
    retries: u64,
    retried: u64,
    rollbacks: u64,
    skipped: u64,
}

struct WindowAcc {
    window: Window,
    hist: Option<Histogram<u64>>,
    /// The histogram, serialized as it was settled, when windows' histograms are kept.
    kept: Option<Vec<u8>>,
}

/// Counts since the last progress line.
struct ProgressAcc {
    hist: Histogram<u64>,
    transactions: u64,
    errors: u64,
    retries: u64,
    retried: u64,
    skipped: u64,
    /// The successful transactions' schedule lag (open loop), summed, and how many.
    lag_us: u64,
    lagged: u64,
}

impl ProgressAcc {
    fn new() -> ProgressAcc {
        ProgressAcc {
            hist: histogram(2),
            transactions: 0,
            errors: 0,
            retries: 0,
            retried: 0,
            skipped: 0,
            lag_us: 0,
            lagged: 0,
        }
    }
}

/// What a progress line shows besides the figures every run has, as pgbench's -P decides:
/// the schedule lag (and with -L the skipped) in an open loop, the retried and retries when
/// transactions may be tried more than once; the time as Unix seconds
/// (`--progress-timestamp`) instead of since the start.
pub struct ProgressStyle {
    pub max_tries: u32,
    pub timestamp: Option<std::time::SystemTime>,
}

pub struct Aggregator {
    names: Vec<&'static str>,
    warmup_us: u64,
    types: Vec<TypeAcc>,
    lag: Option<Histogram<u64>>,
    windows: Vec<WindowAcc>,
    errors: BTreeMap<String, u64>,
    retries: u64,
    queries: u64,
    reconnects: u64,
    offline: Duration,
    lost_clients: Vec<String>,
    unfinished: u64,
    error_messages: BTreeMap<String, String>,
    schedule: Option<OpenLoop>,
    /// Each client thread's clocks in the measured window.
    thread_cpu: Vec<ThreadClocks>,
    progress: ProgressAcc,
    /// (start, latency) of the earliest-starting successful transaction, in µs.
    first: Option<(u64, u64)>,
    /// Keep each window's histogram in the measurement (a shard's, for `merge`).
    keep_windows: bool,
    /// Since the start, warm-up included: transactions that committed, and the kinds of the
    /// errors that failed the others, each with whether it is a fault of the workload itself
    /// (a missing table, a syntax error) rather than of the moment (a conflict, a lost link).
    seen_ok: u64,
    seen_errors: u64,
    seen_kinds: BTreeMap<String, bool>,
    statements: statement_latencies::Statements,
    /// Each phase's accumulators, in a run whose load changes shape.
    phases: Option<phases::Phases>,
    connections: connections::Acc,
    /// `-L` in µs, and what it counted: measured late, measured skipped, all skipped (the
    /// warm-up's too, as the schedule's counts are).
    limit: Option<(u64, LatencyLimit, u64)>,
}

impl Aggregator {
    pub fn new(names: Vec<&'static str>, warmup: Duration, open_loop: bool) -> Aggregator {
        let types = names
            .iter()
            .map(|_| TypeAcc {
                hist: histogram(3),
                transactions: 0,
                errors: 0,
                retries: 0,
                retried: 0,
                rollbacks: 0,
                skipped: 0,
            })
            .collect();
        Aggregator {
            names,
            warmup_us: warmup.as_micros() as u64,
            types,
            lag: open_loop.then(|| histogram(3)),
            windows: Vec::new(),
            errors: BTreeMap::new(),
            retries: 0,
            queries: 0,
            reconnects: 0,
            offline: Duration::ZERO,
            lost_clients: Vec::new(),
            unfinished: 0,
            error_messages: BTreeMap::new(),
            schedule: None,
            thread_cpu: Vec::new(),
            progress: ProgressAcc::new(),
            first: None,
            keep_windows: false,
            seen_ok: 0,
            seen_errors: 0,
            seen_kinds: BTreeMap::new(),
            statements: statement_latencies::Statements::default(),
            phases: None,
            limit: None,
            connections: connections::Acc::default(),
        }
    }

    /// Keep each phase's own figures too (a run whose load changes shape).
    /// The first client lost, as its message says (`--exit-on-abort`).
    pub fn first_lost(&self) -> Option<&str> {
        self.lost_clients.first().map(String::as_str)
    }

    /// Count the transactions slower than `limit` (and skipped, in an open loop).
    pub fn latency_limit(&mut self, limit: Duration) {
        let counted = LatencyLimit {
            limit_ms: limit.as_secs_f64() * 1000.0,
            late: 0,
            skipped: self.lag.is_some().then_some(0),
        };
        let us = u64::try_from(limit.as_micros()).unwrap_or(u64::MAX);
        self.limit = Some((us, counted, 0));
    }

    pub fn phases(&mut self, shape: &crate::runner::shape::Shape) {
        self.phases = Some(phases::Phases::new(shape, self.warmup_us, &self.names));
    }

    /// Keep each per-second window's histogram in the measurement, so that windows of runs
    /// made apart (shards) can be merged with their exact percentiles.
    pub fn keep_window_histograms(&mut self) {
        self.keep_windows = true;
    }

    pub fn add(&mut self, event: Event) {
        if self.connections.add(&event) {
            return;
        }
        match event {
            Event::Txn(s) => self.add_sample(&s),
            Event::Reconnected => self.reconnects += 1,
            Event::Offline(d) => self.offline += d,
            Event::ClientLost(msg) => self.lost_clients.push(msg),
            Event::Unfinished => self.unfinished += 1,
            Event::ClientCpu {
                cpu,
                wait,
                wall,
                read_bytes,
            } => self.thread_cpu.push(ThreadClocks {
                cpu,
                wait,
                wall,
                read_bytes,
            }),
            // Summed beside the measurement, into the result's embedded evidence (point.rs).
            Event::ConnectionFigures(_) => {}
            Event::Statements(lines) => self.statements.add(lines),
            Event::Schedule(due, started) => {
                let s = self.schedule.get_or_insert(OpenLoop::default());
                s.due += due;
                s.started += started;
            }
            Event::Skipped(_, txn, at_us) => {
                self.progress.skipped += 1;
                if let Some((_, counted, all)) = &mut self.limit {
                    *all += 1;
                    if at_us >= self.warmup_us {
                        *counted.skipped.get_or_insert(0) += 1;
                        if let Some(t) = self.types.get_mut(txn) {
                            t.skipped += 1;
                        }
                    }
                }
            }
            Event::PhaseSchedule(due, started) => {
                if let Some(p) = &mut self.phases {
                    p.schedule(&due, &started);
                }
            }
            Event::ErrorMessage(kind, message) => {
                self.error_messages.entry(kind).or_insert(message);
            }
            // Taken above (`connections::Acc::add`).
            Event::Connected(..)
            | Event::ConnectFailed(..)
            | Event::Storm(..)
            | Event::IdleOpened(..) => {}
        }
    }

    fn add_sample(&mut self, s: &Sample) {
        match &s.error {
            None => self.seen_ok += 1,
            Some(e) => {
                self.seen_errors += 1;
                let lasting = !e.is_retryable()
                    && !matches!(
                        e,
                        ErrorClass::ConnectionLost
                            | ErrorClass::Unreachable
                            | ErrorClass::Interrupted
                            | ErrorClass::StatementTimeout
                    );
                self.seen_kinds.entry(e.kind()).or_insert(lasting);
            }
        }
        let retries = u64::from(s.tries.saturating_sub(1));
        let second = (s.end_us / 1_000_000) as usize;
        let warmup_us = self.warmup_us;
        let w = self.window(second);
        w.window.retries += retries;
        let kind = s.error.as_ref().map(|e| e.kind());
        match &kind {
            Some(k) => {
                w.window.errors += 1;
                *w.window.errors_by_kind.entry(k.clone()).or_default() += 1;
            }
            None => {
                w.window.transactions += 1;
                if let Some(h) = &mut w.hist {
                    h.saturating_record(s.latency_us.max(1));
                }
            }
        }
        self.progress.retries += retries;
        self.progress.retried += u64::from(retries > 0);
        if let (None, Some(us)) = (&kind, s.lag_us) {
            self.progress.lag_us += us;
            self.progress.lagged += 1;
        }
        if kind.is_none() {
            let start = s.end_us.saturating_sub(s.latency_us);
            if self.first.is_none_or(|(t, _)| start < t) {
                self.first = Some((start, s.latency_us));
            }
        }
        match kind {
            Some(_) => self.progress.errors += 1,
            None => {
                self.progress.transactions += 1;
                self.progress.hist.saturating_record(s.latency_us.max(1));
            }
        }
        if s.end_us < warmup_us {
            return;
        }
        if let Some(p) = &mut self.phases {
            p.add(s);
        }
        self.retries += retries;
        let t = &mut self.types[s.txn as usize];
        t.retries += retries;
        t.retried += u64::from(retries > 0);
        match s.error.as_ref().map(|e| e.kind()) {
            Some(k) => {
                t.errors += 1;
                *self.errors.entry(k).or_default() += 1;
            }
            None => {
                t.transactions += 1;
                t.rollbacks += u64::from(s.rolled_back);
                self.queries += u64::from(s.queries);
                t.hist.saturating_record(s.latency_us.max(1));
                if let (Some(lag), Some(us)) = (&mut self.lag, s.lag_us) {
                    lag.saturating_record(us.max(1));
                }
                if let Some((limit, counted, _)) = &mut self.limit
                    && s.latency_us > *limit
                {
                    counted.late += 1;
                }
            }
        }
    }

    fn window(&mut self, second: usize) -> &mut WindowAcc {
        while self.windows.len() <= second {
            let t = self.windows.len() as u32 + 1;
            let warmup = u64::from(t) * 1_000_000 <= self.warmup_us;
            self.windows.push(WindowAcc {
                window: Window::empty(t, warmup),
                hist: Some(histogram(2)),
                kept: None,
            });
        }
        &mut self.windows[second]
    }

    /// Why the run cannot measure anything, when every transaction so far failed the same way
    /// and that way lasts (a missing table, a syntax error): the caller stops the run.
    pub fn doomed(&self) -> Option<String> {
        if self.seen_ok > 0 || self.seen_kinds.len() != 1 {
            return None;
        }
        let (kind, lasting) = self.seen_kinds.iter().next()?;
        lasting.then(|| {
            let message = self
                .error_messages
                .get(kind)
                .map(|m| format!(": {}", m.chars().take(200).collect::<String>()))
                .unwrap_or_default();
            format!(
                "every one of the {} transactions so far failed the same way ({kind}{message}), so the run was stopped: fix the cause (a table not prepared, a statement the engine refuses) and run again",
                self.seen_errors
            )
        })
    }

    /// Compute the percentiles of windows that ended before `second` and free their histograms.
    pub fn settle(&mut self, second: usize) {
        for w in self.windows.iter_mut().take(second) {
            if let Some(h) = w.hist.take().filter(|h| !h.is_empty()) {
                if self.keep_windows {
                    w.kept = Some(serialize(&h));
                }
                w.window.percentiles_of(&h);
            }
        }
    }

    /// A progress line for the transactions seen since the last one, in pgbench 17's -P words
    /// (time, tps, the successful transactions' mean latency and its standard deviation,
    /// failed; lag and skipped in an open loop, retried and retries with --max-tries above 1),
    /// then dbduel's p50 and p99 of the same transactions.
    pub fn progress_line(&mut self, at_s: f64, interval_s: f64, style: &ProgressStyle) -> String {
        let open_loop = self.lag.is_some();
        let limit = self.limit.is_some();
        let p = &mut self.progress;
        let ms = |us: f64| us / 1000.0;
        let (mean, sd, p50, p99) = if p.hist.is_empty() {
            (0.0, 0.0, 0.0, 0.0)
        } else {
            let q = |x| ms(p.hist.value_at_quantile(x) as f64);
            (ms(p.hist.mean()), ms(p.hist.stdev()), q(0.5), q(0.99))
        };
        let at = match style.timestamp {
            Some(now) => {
                let epoch = now
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                format!("{:.3} s", epoch.as_secs_f64())
            }
            None => format!("{at_s:.1} s"),
        };
        let mut line = format!(
            "progress: {at}, {:.1} tps, lat {mean:.3} ms stddev {sd:.3}, {} failed",
            p.transactions as f64 / interval_s,
            p.errors
        );
        if open_loop {
            let lag = ms(p.lag_us as f64 / p.lagged.max(1) as f64);
            let _ = write!(line, ", lag {lag:.3} ms");
            if limit {
                let _ = write!(line, ", {} skipped", p.skipped);
            }
        }
        if style.max_tries != 1 {
            let _ = write!(line, ", {} retried, {} retries", p.retried, p.retries);
        }
        let _ = write!(line, ", p50 {p50:.3} ms p99 {p99:.3} ms");
        *p = ProgressAcc::new();
        line
    }

    /// Close the measurement: `duration` is the measured time (after the warm-up).
    pub fn finish(mut self, duration: Duration) -> Measurement {
        self.settle(usize::MAX);
        // All types together: merged once here rather than recorded twice per transaction.
        let mut all = histogram(3);
        for t in &self.types {
            all.add(&t.hist).expect("histograms share their bounds");
        }
        let secs = duration.as_secs_f64().max(1e-9);
        let transaction_types: Vec<TypeSummary> = self
            .names
            .iter()
            .zip(&self.types)
            .map(|(name, t)| TypeSummary {
                name: name.to_string(),
                transactions: t.transactions,
                tps: t.transactions as f64 / secs,
                errors: t.errors,
                retries: t.retries,
                retried: t.retried,
                rollbacks: t.rollbacks,
                skipped: self
                    .limit
                    .as_ref()
                    .and_then(|(_, l, _)| l.skipped)
                    .map(|_| t.skipped),
                latency_ms: Latency::of(&t.hist),
            })
            .collect();
        let totals: Vec<statement_latencies::TypeTotals> = transaction_types
            .iter()
            .map(statement_latencies::TypeTotals::of)
            .collect();
        let statements = std::mem::take(&mut self.statements).finish(&totals);
        Measurement {
            statement_latencies: statements,
            phases: self
                .phases
                .take()
                .map(|p| p.finish(duration.as_secs_f64()))
                .unwrap_or_default(),
            queries: self.queries,
            qps: self.queries as f64 / secs,
            duration_s: duration.as_secs_f64(),
            transactions: self.types.iter().map(|t| t.transactions).sum(),
            errors: self.types.iter().map(|t| t.errors).sum(),
            errors_by_kind: self.errors,
            retries: self.retries,
            retried: self.types.iter().map(|t| t.retried).sum(),
            rollbacks: self.types.iter().map(|t| t.rollbacks).sum(),
            reconnects: self.reconnects,
            disconnected_s: self.offline.as_secs_f64(),
            lost_clients: self.lost_clients,
            unfinished: self.unfinished,
            error_messages: self.error_messages,
            open_loop: self.schedule.map(|mut o| {
                o.started -= self.limit.map_or(0, |l| l.2).min(o.started);
                o
            }),
            latency_limit: self.limit.map(|l| l.1),
            client_threads: client_threads(&self.thread_cpu),
            latency_ms: Latency::of(&all),
            schedule_lag_ms: self.lag.as_ref().map(Latency::of),
            first_transaction_ms: self.first.map(|(_, us)| us as f64 / 1000.0),
            transaction_types,
            histograms: self
                .names
                .iter()
                .zip(&self.types)
                .map(|(n, t)| (n.to_string(), serialize(&t.hist)))
                .collect(),
            lag_histogram: self.lag.as_ref().map(serialize),
            window_histograms: if self.keep_windows {
                self.windows.iter_mut().map(|w| w.kept.take()).collect()
            } else {
                Vec::new()
            },
            windows: self.windows.into_iter().map(|w| w.window).collect(),
            connections: self.connections.finish(),
        }
    }
}

/// The client threads' figures from each one's CPU, run-queue wait and wall time. A thread
/// with no wall time (it stopped as its window opened) adds its CPU time and nothing else. A
/// thread's clocks are read inside its wall time; should their rates differ, busy time beyond
/// the wall time is cut off (a thread is on one core at a time). Busy is CPU time alone: a
/// thread waiting for a core on a machine the server saturates is not the bottleneck, and
/// counting its wait flagged server-bound runs on a loaded 2-core machine as client-bound.
/// One client thread's clocks over its part of the measured window (`Event::ClientCpu`).
#[derive(Debug, Clone, Copy)]
struct ThreadClocks {
    cpu: Duration,
    wait: Option<Duration>,
    wall: Duration,
    read_bytes: Option<u64>,
}

fn client_threads(each: &[ThreadClocks]) -> ClientThreads {
    let busy_of = |t: &ThreadClocks| t.cpu.min(t.wall);
    let ratio = |busy: Duration, wall: Duration| {
        if wall.is_zero() {
            0.0
        } else {
            busy.as_secs_f64() / wall.as_secs_f64()
        }
    };
    let busy: Duration = each.iter().map(busy_of).sum();
    let wall: Duration = each.iter().map(|t| t.wall).sum();
    let waits: Option<Vec<Duration>> = each.iter().map(|t| t.wait).collect();
    let reads: Option<Vec<u64>> = each.iter().map(|t| t.read_bytes).collect();
    ClientThreads {
        threads: each.len() as u32,
        cpu_s: busy.as_secs_f64(),
        run_queue_s: waits.map(|w| w.iter().sum::<Duration>().as_secs_f64()),
        busy: ratio(busy, wall),
        busiest: each
            .iter()
            .map(|t| ratio(busy_of(t), t.wall))
            .fold(0.0, f64::max),
        storage_read_bytes: reads.filter(|r| !r.is_empty()).map(|r| r.iter().sum()),
    }
}

/// A histogram read back from HdrHistogram's V2 format (as `serialize` writes it).
pub fn deserialize(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("{e:?}"))
}

/// A histogram in HdrHistogram's V2 format, for storing.
pub fn serialize(h: &Histogram<u64>) -> Vec<u8> {
    use hdrhistogram::serialization::Serializer;
    let mut out = Vec::new();
    let _ = hdrhistogram::serialization::V2Serializer::new().serialize(h, &mut out);
    out
}

/// The machine's CPU time so far, from /proc/stat's first line, in clock ticks: (busy, all),
/// busy being all but idle and I/O wait. None where /proc/stat cannot be read.
pub fn host_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user's).
    let all: u64 = n.iter().take(8).sum();
    let idle = n.get(3)? + n.get(4).copied().unwrap_or(0);
    Some((all - idle, all))
}

/// The share of the machine's CPU time busy between two `host_ticks` readings.
pub fn host_busy(from: (u64, u64), to: (u64, u64)) -> Option<f64> {
    let all = to.1.checked_sub(from.1).filter(|&a| a > 0)?;
    Some(to.0.saturating_sub(from.0) as f64 / all as f64)
}

/// CPU time (user + system) this process has used so far.
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Peak resident memory of this process, in bytes.
pub fn peak_rss_bytes() -> u64 {
    // SAFETY: as above.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss as u64 * 1024
}

/// The machine the run happened on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    pub cores: usize,
    pub ram_bytes: u64,
    pub kernel: String,
    /// CPU model name, where /proc/cpuinfo tells.
    pub cpu: Option<String>,
    /// CPU frequency governor, where the kernel exposes it (not in most VMs).
    pub governor: Option<String>,
}

impl Host {
    pub fn read() -> Host {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let ram_kb = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string();
        Host {
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            ram_bytes: ram_kb * 1024,
            kernel,
            cpu: std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
                c.lines().find_map(|l| {
                    l.strip_prefix("model name")?
                        .split_once(':')
                        .map(|(_, v)| v.trim().to_string())
                })
            }),
            governor: std::fs::read_to_string(
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            )
            .ok()
            .map(|g| g.trim().to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ErrorClass;

    fn sample(end_ms: u64, latency_ms: u64, tries: u32, error: Option<ErrorClass>) -> Event {
        Event::Txn(Sample {
            client: 0,
            txn: 0,
            end_us: end_ms * 1000,
            latency_us: latency_ms * 1000,
            lag_us: None,
            tries,
            error,
            queries: 1,
            rolled_back: false,
        })
    }

    #[test]
    fn warmup_excluded_and_windows_kept() {
        let mut agg = Aggregator::new(vec!["t"], Duration::from_secs(1), false);
        agg.add(sample(500, 2, 1, None)); // warm-up
        agg.add(sample(1500, 4, 2, None));
        agg.add(sample(1600, 8, 3, Some(ErrorClass::Deadlock)));
        agg.add(sample(2100, 6, 1, None));
        let m = agg.finish(Duration::from_secs(2));
        assert_eq!(m.transactions, 2);
        assert_eq!(m.errors, 1);
        assert_eq!(m.errors_by_kind["deadlock"], 1);
        assert_eq!(m.retries, 3);
        assert_eq!(m.windows.len(), 3);
        assert!(m.windows[0].warmup && !m.windows[1].warmup);
        assert_eq!(m.windows[1].transactions, 1);
        assert_eq!(m.windows[1].errors, 1);
        assert!((m.latency_ms.max - 6.0).abs() < 0.01, "{:?}", m.latency_ms);
        assert!((m.transaction_types[0].tps - 1.0).abs() < 1e-9);
    }

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    /// A thread's clocks: CPU, run-queue wait, wall; 1000 bytes read from storage.
    fn clocks(cpu: Duration, wait: Option<Duration>, wall: Duration) -> ThreadClocks {
        ThreadClocks {
            cpu,
            wait,
            wall,
            read_bytes: Some(1000),
        }
    }

    #[test]
    fn client_threads_busy_together_and_busiest() {
        let t = client_threads(&[
            clocks(s(0.9), Some(s(0.05)), s(1.0)),
            clocks(s(0.1), Some(s(0.0)), s(1.0)),
        ]);
        assert_eq!(t.threads, 2);
        assert_eq!(t.storage_read_bytes, Some(2000));
        assert!((t.cpu_s - 1.0).abs() < 1e-9, "{t:?}");
        assert!((t.run_queue_s.unwrap() - 0.05).abs() < 1e-9, "{t:?}");
        // Busy is CPU time only: the 0.05 s waiting for a core is recorded, not counted.
        assert!((t.busy - 0.5).abs() < 1e-9, "{t:?}");
        assert!((t.busiest - 0.9).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn client_threads_never_over_their_wall_time() {
        // Clocks whose rates differ a little, a thread with no wall time, one without
        // scheduler statistics: nothing over 100%, and no run-queue figure made up.
        let mut unread = clocks(s(0.1), None, s(1.0));
        unread.read_bytes = None;
        let t = client_threads(&[
            clocks(s(1.001), Some(s(0.01)), s(1.0)),
            clocks(s(0.002), Some(s(0.0)), Duration::ZERO),
            unread,
        ]);
        // A thread whose reads the kernel did not tell: none for the run.
        assert_eq!(t.storage_read_bytes, None);
        assert!(t.busy <= 1.0 && t.busiest <= 1.0, "{t:?}");
        assert!((t.busiest - 1.0).abs() < 1e-9, "{t:?}");
        assert_eq!(t.run_queue_s, None);
        assert_eq!(client_threads(&[]).busy, 0.0);
    }

    #[test]
    fn client_bound_by_threads_or_by_the_machine() {
        let busy = |b: f64| ClientThreads {
            threads: 1,
            cpu_s: b,
            run_queue_s: Some(0.0),
            busy: b,
            busiest: b,
            storage_read_bytes: None,
        };
        let why = client_bound(&busy(0.9), 0.1).expect("busy threads");
        assert!(why.contains("busy 90%"), "{why}");
        let why = client_bound(&busy(0.1), 0.6).expect("most of the machine");
        assert!(why.contains("60% of the machine"), "{why}");
        assert_eq!(client_bound(&busy(0.5), 0.5), None);
        // One saturated thread on eight cores: 12.5% of the machine, and client-bound.
        assert!(client_bound(&busy(0.99), 0.125).is_some());
        assert_eq!(client_bound(&ClientThreads::default(), 0.2), None);
    }
}
