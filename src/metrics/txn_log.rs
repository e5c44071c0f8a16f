//! pgbench's transaction logs (`-l`, `--log-prefix`, `--sampling-rate`, `--aggregate-interval`),
//! written as pgbench 15 to 17 write them, so that what reads pgbench's logs reads dbduel's.
//! One file, `PREFIX.PID`, as pgbench writes with one thread; with `-j N` (N above 1) a file per
//! thread as pgbench names them (`ThreadLogs`): `PREFIX.PID` for the first, `PREFIX.PID.I` for
//! the others, client `c` in file `c mod N` (the thread that runs it where clients share
//! threads), each with its own numbering, sampling and aggregated intervals.
//!
//! A line per transaction: `client_id transaction_no time script_no time_epoch time_us
//! [schedule_lag] [retries]`, where `time` is the latency in µs (`failed`, or `skipped` under
//! `-L`, instead; with `--failures-detailed`, `serialization` or `deadlock` for those), `script_no` the transaction type's index, `time_epoch time_us` the wall clock
//! at its end, `schedule_lag` (µs) only in an open loop and `retries` only when `--max-tries`
//! is not 1. `transaction_no` counts each client's transactions from 1, done, failed or skipped.
//! The warm-up's transactions are not logged, nor counted.
//!
//! With `--aggregate-interval N`, a line per N seconds from the measured part's start:
//! `interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency sum_lag
//! sum_lag_2 min_lag max_lag skipped retried retries serialization_failures deadlock_failures`,
//! where the counts and sums are of the successful transactions (the lag's are 0 in a closed
//! loop, `skipped` 0 without `-L`, the retries 0 when `--max-tries` is 1), and failures count
//! by kind with `--failures-detailed` (0 without it, as pgbench). A timed run has `-T / N` lines: the transactions in flight at its end, which end
//! after it and which the run counts, are in the last one (pgbench leaves them out of its log);
//! a run of `-t` ends with its last interval, partial.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::ErrorClass;
use crate::event::{Event, Sample};

/// What `-l` and its companions asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct LogPlan {
    /// `--log-prefix` (default `pgbench_log`): the file is `PREFIX.PID`.
    pub prefix: String,
    /// `--sampling-rate`: the fraction of transactions logged (0 < R <= 1).
    pub sampling_rate: Option<f64>,
    /// `--aggregate-interval`: seconds per aggregated line.
    pub aggregate_interval: Option<u64>,
    /// `--failures-detailed`: failures by kind in the log, as pgbench writes them then.
    pub failures_detailed: bool,
}

impl LogPlan {
    pub fn path(&self) -> String {
        self.path_of(0)
    }

    /// Thread `i`'s file, as pgbench names it (the first without the thread's number).
    pub fn path_of(&self, i: u32) -> String {
        match i {
            0 => format!("{}.{}", self.prefix, std::process::id()),
            i => format!("{}.{}.{i}", self.prefix, std::process::id()),
        }
    }
}

/// The log of a run split by thread as pgbench splits it (`-j N`), one file when N is 1.
pub struct ThreadLogs {
    logs: Vec<TxnLog>,
}

impl ThreadLogs {
    /// Open the `files` files of `plan` (see `TxnLog::create` for the rest).
    pub fn create(
        plan: &LogPlan,
        files: u32,
        warmup: Duration,
        time: Option<Duration>,
        open_loop: bool,
        max_tries: u32,
        seed: u64,
    ) -> Result<ThreadLogs, String> {
        let logs = (0..files.max(1))
            .map(|i| {
                let seed = seed ^ u64::from(i);
                TxnLog::create(plan, i, warmup, time, open_loop, max_tries, seed)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ThreadLogs { logs })
    }

    pub fn begin(&mut self, epoch: SystemTime) {
        for l in &mut self.logs {
            l.begin(epoch);
        }
    }

    /// A transaction done, failed or skipped, into its client's file.
    pub fn add(&mut self, event: &Event) {
        let client = match event {
            Event::Txn(s) => s.client,
            Event::Skipped(client, _, _) => *client,
            _ => return,
        };
        let n = self.logs.len();
        self.logs[client as usize % n].add(event);
    }

    /// Every file finished (`TxnLog::finish`): their paths, or the first error.
    pub fn finish(self, end_us: u64) -> Result<String, String> {
        let mut paths = Vec::new();
        let mut failed = None;
        for l in self.logs {
            match l.finish(end_us) {
                Ok(p) => paths.push(p),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(paths.join(", ")), Err)
    }
}

/// How the run logs its transactions.
pub struct TxnLog {
    out: BufWriter<File>,
    path: String,
    /// The wall clock at the runner's start, and the measured part's start in µs from it.
    epoch: SystemTime,
    warmup_us: u64,
    open_loop: bool,
    retries: bool,
    sampling: Option<(f64, SmallRng)>,
    counts: HashMap<u32, u64>,
    aggregate: Option<Interval>,
    detailed: bool,
    /// The first write error, said once at the end (the run goes on).
    failed: Option<String>,
}

/// One aggregated interval's sums.
#[derive(Default)]
struct Interval {
    every_us: u64,
    /// The runner's start on the wall clock, µs since the Unix epoch.
    epoch_us: u64,
    /// Its start, µs from the runner's start.
    start_us: u64,
    /// A timed run's last interval's start: the transactions after it are its.
    last_us: Option<u64>,
    done: u64,
    latency: Sums,
    lag: Sums,
    skipped: u64,
    retried: u64,
    retries: u64,
    serialization: u64,
    deadlock: u64,
}

#[derive(Default, Clone, Copy)]
struct Sums {
    sum: f64,
    sum2: f64,
    min: f64,
    max: f64,
    n: u64,
}

impl Sums {
    fn add(&mut self, v: f64) {
        if self.n == 0 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.sum += v;
        self.sum2 += v * v;
        self.n += 1;
    }
}

impl TxnLog {
    /// Open the log file of `plan` (before the run: a file that cannot be made refuses it) for
    /// a run whose measured part starts `warmup` after its runner (`begin` says when that was).
    pub fn create(
        plan: &LogPlan,
        file: u32,
        warmup: Duration,
        time: Option<Duration>,
        open_loop: bool,
        max_tries: u32,
        seed: u64,
    ) -> Result<TxnLog, String> {
        let path = plan.path_of(file);
        let file = File::create(&path).map_err(|e| {
            format!("-l: cannot create the log file {path} ({e}): give a writable --log-prefix")
        })?;
        let warmup_us = u64::try_from(warmup.as_micros()).unwrap_or(u64::MAX);
        Ok(TxnLog {
            out: BufWriter::with_capacity(1 << 16, file),
            path,
            epoch: UNIX_EPOCH,
            warmup_us,
            open_loop,
            retries: max_tries != 1,
            sampling: plan
                .sampling_rate
                .map(|r| (r, SmallRng::seed_from_u64(seed ^ 0x6c6f_675f_7261_7465))),
            counts: HashMap::new(),
            detailed: plan.failures_detailed,
            aggregate: plan.aggregate_interval.map(|s| Interval {
                every_us: s * 1_000_000,
                start_us: warmup_us,
                last_us: time.map(|t| {
                    let t = u64::try_from(t.as_micros()).unwrap_or(u64::MAX);
                    warmup_us + t.saturating_sub(s * 1_000_000)
                }),
                ..Interval::default()
            }),
            failed: None,
        })
    }

    /// The runner started at `epoch` on the wall clock.
    pub fn begin(&mut self, epoch: SystemTime) {
        self.epoch = epoch;
        if let Some(a) = &mut self.aggregate {
            a.epoch_us = epoch
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        }
    }

    /// A transaction done, failed or skipped; anything else is not logged.
    pub fn add(&mut self, event: &Event) {
        match event {
            Event::Txn(s) if s.end_us >= self.warmup_us => self.transaction(s),
            Event::Skipped(client, txn, at_us) if *at_us >= self.warmup_us => {
                self.skipped(*client, *txn, *at_us)
            }
            _ => {}
        }
    }

    fn numbered(&mut self, client: u32) -> u64 {
        let n = self.counts.entry(client).or_default();
        *n += 1;
        *n
    }

    /// Whether this line is in the sample (`--sampling-rate`).
    fn sampled(&mut self) -> bool {
        match &mut self.sampling {
            Some((rate, rng)) => rng.random::<f64>() <= *rate,
            None => true,
        }
    }

    fn transaction(&mut self, s: &Sample) {
        let no = self.numbered(s.client);
        if !self.sampled() {
            return;
        }
        if let Some(a) = &mut self.aggregate {
            let lines = a.roll_to(s.end_us);
            self.write(&lines);
            let a = self.aggregate.as_mut().expect("aggregating");
            if s.tries > 1 {
                a.retried += 1;
                a.retries += u64::from(s.tries - 1);
            }
            match &s.error {
                None => {
                    a.done += 1;
                    a.latency.add(s.latency_us as f64);
                    if let Some(lag) = s.lag_us {
                        a.lag.add(lag as f64);
                    }
                }
                // pgbench fills these two columns with --failures-detailed only (0 otherwise);
                // dbduel's other failures are counted by its result, not in pgbench's columns.
                Some(ErrorClass::Serialization) if self.detailed => a.serialization += 1,
                Some(ErrorClass::Deadlock) if self.detailed => a.deadlock += 1,
                Some(_) => {}
            }
            return;
        }
        let time = match &s.error {
            None => s.latency_us.to_string(),
            Some(ErrorClass::Serialization) if self.detailed => "serialization".to_string(),
            Some(ErrorClass::Deadlock) if self.detailed => "deadlock".to_string(),
            Some(_) => "failed".to_string(),
        };
        let mut line = format!("{} {no} {time} {} {}", s.client, s.txn, self.wall(s.end_us));
        if self.open_loop {
            line.push_str(&format!(" {}", s.lag_us.unwrap_or(0)));
        }
        if self.retries {
            line.push_str(&format!(" {}", s.tries.saturating_sub(1)));
        }
        line.push('\n');
        self.write(&line);
    }

    fn skipped(&mut self, client: u32, txn: usize, at_us: u64) {
        let no = self.numbered(client);
        if !self.sampled() {
            return;
        }
        if let Some(a) = &mut self.aggregate {
            let lines = a.roll_to(at_us);
            self.write(&lines);
            self.aggregate.as_mut().expect("aggregating").skipped += 1;
            return;
        }
        // pgbench's skipped line: the script it had chosen, lag 0 (it never ran).
        let mut line = format!("{client} {no} skipped {txn} {} 0", self.wall(at_us));
        if self.retries {
            line.push_str(" 0");
        }
        line.push('\n');
        self.write(&line);
    }

    /// `time_epoch time_us` of an instant `us` after the runner's start.
    fn wall(&self, us: u64) -> String {
        let at = (self.epoch + Duration::from_micros(us))
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        format!("{} {}", at.as_secs(), at.subsec_micros())
    }

    fn write(&mut self, text: &str) {
        if text.is_empty() || self.failed.is_some() {
            return;
        }
        if let Err(e) = self.out.write_all(text.as_bytes()) {
            self.failed = Some(e.to_string());
        }
    }

    /// The run ended `end_us` after the runner's start: the aggregated intervals left, the
    /// file flushed. The error that stopped the log, if any.
    pub fn finish(mut self, end_us: u64) -> Result<String, String> {
        if let Some(a) = &mut self.aggregate {
            let mut lines = a.roll_to(end_us);
            if a.start_us < end_us {
                lines.push_str(&a.line());
            }
            self.write(&lines);
        }
        if self.failed.is_none()
            && let Err(e) = self.out.flush()
        {
            self.failed = Some(e.to_string());
        }
        match self.failed {
            Some(e) => Err(format!(
                "the transaction log {} is incomplete: {e}",
                self.path
            )),
            None => Ok(self.path),
        }
    }
}

impl Interval {
    /// The lines of the intervals that ended by `us` (empty ones included, as pgbench prints
    /// them), and this one moved to the interval `us` is in.
    fn roll_to(&mut self, us: u64) -> String {
        let mut out = String::new();
        while self.start_us + self.every_us <= us && self.last_us.is_none_or(|l| self.start_us < l)
        {
            out.push_str(&self.line());
            *self = Interval {
                every_us: self.every_us,
                start_us: self.start_us + self.every_us,
                epoch_us: self.epoch_us,
                last_us: self.last_us,
                ..Interval::default()
            };
        }
        out
    }

    /// pgbench's aggregated line (15 columns; µs, sums of squares in µs²).
    fn line(&self) -> String {
        let lag = if self.lag.n > 0 {
            self.lag
        } else {
            Sums::default()
        };
        format!(
            "{} {} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {} {} {} {} {}\n",
            (self.epoch_us + self.start_us) / 1_000_000,
            self.done,
            self.latency.sum,
            self.latency.sum2,
            self.latency.min,
            self.latency.max,
            lag.sum,
            lag.sum2,
            lag.min,
            lag.max,
            self.skipped,
            self.retried,
            self.retries,
            self.serialization,
            self.deadlock,
        )
    }
}
