//! The run result record `RunResult`: what one measured point was (engine, workload with its own
//! figures, options, host) and what it measured (the `Measurement`, client CPU, server restarts,
//! warnings, and the workload's after-run record when it could not be written, `unrecorded`, which
//! fails the point); a shard's `ShardPart` with its histograms and a merged result's
//! `ShardReport`s. The JSON file (its schema is schema/result.schema.json), the store and the
//! reports all read it; it knows nothing above the metrics. `failed`: a point that exits 1. Writing
//! it to a file (`--json`, checked writable before the run) without ever leaving half of one.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::engine::Protocol;
use crate::error::Error;
use crate::metrics::{Host, Measurement};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineReport {
    pub name: String,
    /// The DSN without its password.
    pub dsn: String,
    pub server_version: String,
    /// True when the database ran inside dbduel's process (its CPU is the client's CPU).
    pub embedded: bool,
    pub settings: BTreeMap<String, String>,
    pub database_size_bytes: u64,
    pub database_size_after_bytes: u64,
    /// How the clients reached the server: socket kind, TLS version and cipher suite.
    pub transport: crate::engine::tls::Transport,
    /// The isolation level the measured transactions ran at (the workload's, when it sets one:
    /// TPC-C's --isolation serializable), in lower-case words.
    pub isolation: String,
    /// What the settings promise for committed transactions (the engine's rules over them).
    #[serde(default)]
    pub durability: crate::engine::durability::Durability,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadReport {
    pub name: String,
    pub variant: String,
    /// None for a workload whose size is told by its options (sysbench: tables, table_size).
    pub scale: Option<u32>,
    /// The workload's own options in effect (TPC-C: warehouses, isolation...).
    pub settings: BTreeMap<String, String>,
    /// The workload's own figures (TPC-C: nopm, tpmC).
    pub metrics: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    pub clients: u32,
    pub time_s: Option<u64>,
    pub transactions_per_client: Option<u64>,
    pub warmup_s: u64,
    pub rate: Option<f64>,
    pub protocol: Protocol,
    pub max_tries: u32,
    pub progress_s: Option<u64>,
    pub seed: u64,
    pub table_engine: Option<String>,
    pub statement_timeout_s: Option<f64>,
    /// `--lazy-begin`: BEGIN went with each transaction's first statement (absent: it went
    /// alone, as in every dbduel result before the option).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lazy_begin: bool,
    /// `--phase`: the phases asked for, in order (empty for a run of one shape).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<crate::runner::shape::Phase>,
    /// How the clients held their connections (`-C`, `--reconnect-*`, `--idle-connections`;
    /// absent in results of dbduel versions before them).
    #[serde(default)]
    pub connections: crate::runner::connections::ConnectionPlan,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub dbduel_version: String,
    pub started_at: String,
    pub interrupted: bool,
    pub engine: EngineReport,
    pub workload: WorkloadReport,
    pub options: Options,
    pub host: Host,
    pub tps: f64,
    #[serde(flatten)]
    pub measurement: Measurement,
    pub client_cpu_s: f64,
    /// The process's CPU time over (wall time x cores), both read at the start and the end of
    /// the measured window.
    pub client_cpu_share: f64,
    /// Judged by `metrics::client_bound` (client threads busy, or the process's share of the
    /// machine); never for an embedded engine.
    pub client_bound: bool,
    /// The share of the machine dbduel ran on that was busy (all its processes, from
    /// /proc/stat) over the measured window; the verdict's headroom (`waits::Judged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu_busy: Option<f64>,
    pub client_peak_rss_bytes: u64,
    /// What the run's sessions spent their time on, sampled from the server
    /// (`metrics::waits`); None where nothing was sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits: Option<crate::metrics::waits::Waits>,
    /// An embedded engine's evidence in place of sampled sessions: its clients' connections'
    /// own figures over the measured window, summed (`metrics::embedded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedded_waits: Option<crate::metrics::embedded::EmbeddedWaits>,
    /// What limited the run, by `metrics::waits::verdict`'s rule (absent in results of
    /// dbduel versions before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::metrics::waits::Verdict>,
    /// Where the server's time went, statement by statement, over the measured run
    /// (`metrics::statements`), or why there are no figures (absent in results of dbduel
    /// versions before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statements: Option<crate::metrics::statements::Statements>,
    /// The server's counters over the run, read once a second on the sampler's connection
    /// (`metrics::counters`); None where the engine keeps none or sampling was off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_counters: Option<crate::metrics::counters::ServerCounters>,
    /// Sweeps only: the managed server exited during the point and was started again, one
    /// line each. A point with any is marked failed; `run` never fills it (it does not manage
    /// the server: its reconnections and lost transactions tell).
    pub server_restarts: Vec<String>,
    /// The workload's after-run record (YCSB's inserts in dbduel_facts) that could not be
    /// written, and why: `check` and the next run may then disagree with the data, so the
    /// point is marked failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrecorded: Option<String>,
    pub warnings: Vec<String>,
    /// A shard's result (`run --shard I/N`): which part of the run it is, and what `merge`
    /// needs to make the whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardPart>,
    /// A merged result (`merge`): each shard, in index order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardReport>,
}

/// What a shard's result adds for `merge`: its place in the run, its start on the wall clock,
/// and its histograms (HdrHistogram V2, base64): each transaction type's, the schedule lag's,
/// each per-second window's (null for a window without a transaction), each statement's and
/// the connect times'.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardPart {
    pub index: u32,
    pub count: u32,
    /// The run's client ids this shard ran: `first_client..first_client + clients`.
    pub first_client: u32,
    pub clients: u32,
    /// `--start-at` as given, the same for every shard of a run.
    pub start_at: Option<String>,
    /// When the clients were released (the first window's start), in milliseconds since
    /// the Unix epoch: the windows of all shards are aligned on it.
    pub started_unix_ms: u64,
    pub histograms: BTreeMap<String, String>,
    pub schedule_lag_histogram: Option<String>,
    pub window_histograms: Vec<Option<String>>,
    /// Each of `statement_latencies`' latency histogram (µs), in their order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statement_histograms: Vec<String>,
    /// Each phase's histograms, in their order (`--phase`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phase_histograms: Vec<PhaseHistograms>,
    /// The connect-time histogram of every connection the shard opened (µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_histogram: Option<String>,
}

/// One phase's histograms in a shard's result (base64 HdrHistogram V2): its latency, its
/// schedule lag, and each of its seconds' latency ("" for a second without a transaction).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseHistograms {
    pub latency: String,
    pub lag: Option<String>,
    pub seconds: Vec<String>,
}

/// One shard of a merged result: where it ran, what it ran and how hard its client worked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardReport {
    pub index: u32,
    /// The result file it was read from.
    pub file: String,
    pub host: Host,
    pub first_client: u32,
    pub clients: u32,
    pub started_at: String,
    /// Its clients' start after the earliest shard's, in seconds.
    pub offset_s: f64,
    pub transactions: u64,
    pub tps: f64,
    pub client_cpu_s: f64,
    pub client_cpu_share: f64,
    pub client_threads: crate::metrics::ClientThreads,
    pub client_bound: bool,
}

impl RunResult {
    /// Whether the point failed in part: failed transactions, lost clients, nothing
    /// measured, the workload's record of the run not written, or (in a sweep) a managed
    /// server that had to be restarted during it. `run`
    /// and `sweep` then exit 1.
    pub fn failed(&self) -> bool {
        let m = &self.measurement;
        m.errors > 0
            || !m.lost_clients.is_empty()
            || m.transactions == 0
            || !self.server_restarts.is_empty()
            || self.unrecorded.is_some()
    }

    /// Write the result atomically (a temporary file beside it, then a rename), so that a
    /// reader never sees half a result. When that fails, the result goes to a file in the
    /// current directory whose name the error gives, so nothing measured is lost.
    pub fn write_json(&self, path: &Path) -> Result<(), Error> {
        let text = serde_json::to_string_pretty(self).expect("results serialize") + "\n";
        let Err(e) = write_atomically(path, &text) else {
            return Ok(());
        };
        let rescue = std::path::PathBuf::from(format!(
            "dbduel-result-{}.json",
            self.started_at.replace(':', "")
        ));
        let kept = match write_atomically(&rescue, &text) {
            Ok(()) => Ok(rescue),
            Err(e2) => Err(format!(
                "cannot write {} ({e2}): it is in the summary above only",
                rescue.display()
            )),
        };
        Err(Error::Unsaved {
            cause: Box::new(Error::Io {
                doing: "write --json",
                path: path.to_path_buf(),
                source: e,
            }),
            kept,
        })
    }
}

/// Check before a run that `--json FILE` can be written: a file is created beside it and
/// removed again.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    check_writable_as("--json", path)
}

/// Check before a command's work that the file its `flag` names can be written.
pub fn check_writable_as(flag: &str, path: &Path) -> Result<(), Error> {
    let probe = temp_beside(path);
    std::fs::write(&probe, b"")
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| {
            Error::Usage(format!(
                "{flag} {}: cannot write there ({e}): give a file in a writable directory",
                path.display()
            ))
        })
}

fn temp_beside(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let temp = temp_beside(path);
    std::fs::write(&temp, text)
        .and_then(|_| std::fs::rename(&temp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })
}
