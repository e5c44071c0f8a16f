//! `dbduel merge`: the shards of one run (`run --shard I/N --json FILE` on several processes or
//! machines) made into one `RunResult`. Refusals first: a result that is no shard's or already
//! merged; shards of different runs (options, transaction types, the server's and the workload's
//! settings one by one, TPC-C's NURand run constants among them); a missing or doubled shard;
//! measured windows that do not overlap; no lookup or histogram sum that can panic. A warning when
//! shards reached the server by different DSNs. Then counts summed, each type's HDR histogram
//! (carried base64 in the shard's `shard` part) merged for exact percentiles (never an average of
//! percentiles), per-second windows aligned on the wall clock by each shard's start (their
//! percentiles from the windows' histograms merged), tps and the workload's figures (rebuilt from
//! its registry entry) over the span from the earliest measured start to the latest end, each
//! shard's client CPU in `shards`, and the per-statement latencies from each statement's
//! histograms merged (left out, with a warning saying why, when a shard has none), the
//! connections added (counts, connect-time histograms, the slowest storm), and each phase of a
//! run in phases from its histograms (`merge_phases`). `merge --results` keeps the merged run in
//! a store
//! (`Store::save_run`: a point of a named plan, the next free repeat; a run already stored, by the
//! identity of its start, engine, DSN, workload, counts and shards, is not stored again).

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use hdrhistogram::Histogram;

use crate::error::Error;
use crate::metrics::connections::Connections;
use crate::metrics::phases::{self, PhaseResult};
use crate::metrics::{self, Latency, Measurement, TypeSummary, Window};
use crate::result::{RunResult, ShardPart, ShardReport};
use crate::workload::{self, WorkloadOptions};

/// One shard's result, with the file it came from.
pub struct ShardFile {
    pub file: String,
    pub result: RunResult,
}

fn refuse<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error::Usage(msg.into()))
}

/// The start times a shard may have: from 2000 to the last day of year 9999 (the dates a
/// result can name), in milliseconds since 1970.
const EPOCHS: std::ops::RangeInclusive<u64> = 946_684_800_000..=253_402_300_799_999;

/// The longest measured window a run may have (a year, as `-T` allows).
const MAX_SECONDS: f64 = 366.0 * 86_400.0;

/// Read the shards' result files.
pub fn read(files: &[PathBuf]) -> Result<Vec<ShardFile>, Error> {
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
                doing: "read a shard's result",
                path: path.clone(),
                source,
            })?;
            let result: RunResult = serde_json::from_str(&text).map_err(|e| {
                Error::Usage(format!(
                    "{}: not a dbduel result file ({e}): give the files of `run --shard I/N --json FILE`",
                    path.display()
                ))
            })?;
            Ok(ShardFile {
                file: path.display().to_string(),
                result,
            })
        })
        .collect()
}

/// The shards made into one result, or the reason they are not one run.
pub fn merge(mut shards: Vec<ShardFile>) -> Result<RunResult, Error> {
    for s in &shards {
        if !s.result.shards.is_empty() {
            return refuse(format!(
                "{}: a merged result (of {} shards), not a shard's: merge takes the shards' own files of `run --shard I/N --json FILE`",
                s.file,
                s.result.shards.len()
            ));
        }
        let Some(part) = &s.result.shard else {
            return refuse(format!(
                "{}: not a shard's result (it was run without --shard): merge takes the files of `run --shard I/N --json FILE`",
                s.file
            ));
        };
        let m = &s.result.measurement;
        if !(EPOCHS.contains(&part.started_unix_ms)
            && m.duration_s.is_finite()
            && (0.0..=MAX_SECONDS).contains(&m.duration_s))
        {
            return refuse(format!(
                "{}: started at {} ms since 1970 for {} s: no run did; give the file `run --shard I/N --json FILE` wrote, unedited",
                s.file, part.started_unix_ms, m.duration_s
            ));
        }
    }
    shards.sort_by_key(|s| part(s).index);
    let Some((first, rest)) = shards.split_first() else {
        return refuse("merge: give the shards' result files");
    };
    one_run(first, rest)?;
    every_shard_once(&shards)?;
    overlapping(&shards)?;
    let parts: Vec<Decoded> = shards.iter().map(decode).collect::<Result<_, _>>()?;
    let mut merged = assemble(&shards, &parts)?;
    merged.warnings.extend(other_dsns(first, rest));
    Ok(merged)
}

fn part(s: &ShardFile) -> &ShardPart {
    s.result.shard.as_ref().expect("checked to be a shard")
}

/// What must be the same in every shard of one run: everything but the shard itself, the
/// seed (each shard may draw its own) and where it ran; the server's and the workload's
/// settings are compared one by one (`setting_differs`).
fn identity(r: &RunResult) -> Vec<(&'static str, String)> {
    let o = &r.options;
    let w = &r.workload;
    let p = r.shard.as_ref().expect("checked to be a shard");
    vec![
        ("the number of shards", p.count.to_string()),
        ("dbduel's version", r.dbduel_version.clone()),
        ("the engine", r.engine.name.clone()),
        ("the server's version", r.engine.server_version.clone()),
        ("the workload", format!("{} {}", w.name, w.variant)),
        ("the scale", format!("{:?}", w.scale)),
        (
            "the transaction types",
            r.measurement
                .transaction_types
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("--clients", o.clients.to_string()),
        ("--time", format!("{:?}", o.time_s)),
        ("--transactions", format!("{:?}", o.transactions_per_client)),
        ("--warmup", o.warmup_s.to_string()),
        // The rate goes through each shard's share and back: equal to a few parts in 1e12.
        ("--rate", format!("{:?}", o.rate.map(|r| format!("{r:.6}")))),
        ("--protocol", o.protocol.name().to_string()),
        ("--lazy-begin", o.lazy_begin.to_string()),
        ("--max-tries", o.max_tries.to_string()),
        ("the table engine", format!("{:?}", o.table_engine)),
        (
            "--statement-timeout",
            format!("{:?}", o.statement_timeout_s),
        ),
        ("--start-at", format!("{:?}", p.start_at)),
        (
            "--phase",
            o.phases
                .iter()
                .map(|p| format!("{} {} s {}", p.name, p.seconds, p.load_said()))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    ]
}

fn one_run(first: &ShardFile, rest: &[ShardFile]) -> Result<(), Error> {
    let want = identity(&first.result);
    for s in rest {
        let not_one = |why: String| {
            refuse(format!(
                "{} and {} are not shards of one run: {why}",
                first.file, s.file
            ))
        };
        for ((what, a), (_, b)) in want.iter().zip(identity(&s.result)) {
            if *a != b {
                return not_one(format!(
                    "they differ in {what} ({a} against {b}); every shard of a run takes the same options but --shard (and --seed)"
                ));
            }
        }
        let (ea, eb) = (&first.result.engine.settings, &s.result.engine.settings);
        if let Some((name, a, b)) = setting_differs(ea, eb) {
            return not_one(format!(
                "the server's setting {name} differs ({a} against {b}), so they did not measure one server configuration: run every shard against the same server, unchanged during the run"
            ));
        }
        let (wa, wb) = (&first.result.workload.settings, &s.result.workload.settings);
        if let Some((name, a, b)) = setting_differs(wa, wb) {
            return not_one(format!(
                "the workload's setting {name} differs ({a} against {b}); every shard of a run takes the same options but --shard, and the same --start-at (or, without it, the same --seed: TPC-C draws from it the run's NURand constants, which every shard must share)"
            ));
        }
    }
    Ok(())
}

/// The first setting whose value differs between two shards, with both values ("unset"
/// where one lacks it).
fn setting_differs(
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> Option<(String, String, String)> {
    let shown = |v: Option<&String>| v.map_or_else(|| "unset".to_string(), Clone::clone);
    a.keys()
        .chain(b.keys())
        .find(|k| a.get(*k) != b.get(*k))
        .map(|k| (k.clone(), shown(a.get(k)), shown(b.get(k))))
}

/// A warning for each shard that reached the server by another DSN than the first shard:
/// machines may name one server by different host names, so this is not refused. The DSNs
/// are as the results hold them, without their passwords.
fn other_dsns(first: &ShardFile, rest: &[ShardFile]) -> Vec<String> {
    rest.iter()
        .filter(|s| s.result.engine.dsn != first.result.engine.dsn)
        .map(|s| {
            format!(
                "the shards reached the server by different DSNs ({} in {}, {} in {}): merged as one server; check that they are the same one",
                first.result.engine.dsn, first.file, s.result.engine.dsn, s.file
            )
        })
        .collect()
}

fn every_shard_once(shards: &[ShardFile]) -> Result<(), Error> {
    let count = shards.first().map_or(0, |s| part(s).count);
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for s in shards {
        let index = part(s).index;
        if let Some(other) = seen.insert(index, &s.file) {
            return refuse(format!(
                "shard {index}/{count} is given twice ({other} and {}): give each shard's file once",
                s.file
            ));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return refuse(format!(
            "shard {} missing: a merged result needs every shard's file (a shard whose run failed writes its --json all the same, but one that could not start or connect writes none: run that shard again, with the others)",
            if missing.len() == 1 {
                format!("{} is", missing[0])
            } else {
                format!("s {} are", missing.join(", "))
            }
        ));
    }
    Ok(())
}

/// A shard's measured window on the wall clock, in milliseconds since the epoch.
fn measured_window(r: &RunResult) -> (f64, f64) {
    let p = r.shard.as_ref().expect("checked to be a shard");
    let start = p.started_unix_ms as f64 + r.options.warmup_s as f64 * 1000.0;
    (start, start + r.measurement.duration_s * 1000.0)
}

fn overlapping(shards: &[ShardFile]) -> Result<(), Error> {
    let windows: Vec<(f64, f64)> = shards.iter().map(|s| measured_window(&s.result)).collect();
    let latest = (0..shards.len()).max_by(|&a, &b| windows[a].0.total_cmp(&windows[b].0));
    let earliest = (0..shards.len()).min_by(|&a, &b| windows[a].1.total_cmp(&windows[b].1));
    let (Some(l), Some(e)) = (latest, earliest) else {
        return Ok(());
    };
    if windows[l].0 >= windows[e].1 {
        let at = |ms: f64| {
            humantime::format_rfc3339_millis(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0.0) as u64),
            )
        };
        return refuse(format!(
            "the shards' measured windows do not overlap: {} measured from {} to {}, {} from {} to {}: they are not one run (start every shard together, with --start-at)",
            shards[e].file,
            at(windows[e].0),
            at(windows[e].1),
            shards[l].file,
            at(windows[l].0),
            at(windows[l].1)
        ));
    }
    Ok(())
}

/// A shard's histograms, read back.
struct Decoded {
    types: BTreeMap<String, Histogram<u64>>,
    lag: Option<Histogram<u64>>,
    windows: Vec<Option<Histogram<u64>>>,
}

fn decode(s: &ShardFile) -> Result<Decoded, Error> {
    let p = part(s);
    let bad = |what: &str, e: String| {
        Error::Usage(format!(
            "{}: its {what} histogram cannot be read ({e}): the file was changed after the run",
            s.file
        ))
    };
    let read = |what: &str, text: &str| {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| bad(what, e.to_string()))?;
        metrics::deserialize(&bytes).map_err(|e| bad(what, e))
    };
    let mut types = BTreeMap::new();
    for t in &s.result.measurement.transaction_types {
        let Some(text) = p.histograms.get(&t.name) else {
            return Err(bad(&t.name, "it is not in the file".into()));
        };
        types.insert(t.name.clone(), read(&t.name, text)?);
    }
    let lag = match &p.schedule_lag_histogram {
        Some(text) => Some(read("schedule lag", text)?),
        None => None,
    };
    if p.window_histograms.len() != s.result.measurement.windows.len() {
        return Err(bad(
            "windows'",
            format!(
                "{} histograms for {} windows",
                p.window_histograms.len(),
                s.result.measurement.windows.len()
            ),
        ));
    }
    let windows = p
        .window_histograms
        .iter()
        .enumerate()
        .map(|(i, h)| {
            h.as_deref()
                .map(|text| read(&format!("window {}'s", i + 1), text))
                .transpose()
        })
        .collect::<Result<_, _>>()?;
    Ok(Decoded {
        types,
        lag,
        windows,
    })
}

/// Add `h` into `into`, the first one taken as it is.
fn add(into: &mut Option<Histogram<u64>>, h: &Histogram<u64>) -> Result<(), Error> {
    match into {
        Some(acc) => acc.add(h).map_err(|e| {
            Error::Usage(format!(
                "the shards' histograms cannot be added ({e:?}): dbduel's share their bounds (1 µs to one hour), so a file was changed after its run"
            ))
        }),
        None => {
            *into = Some(h.clone());
            Ok(())
        }
    }
}

/// When the shards ran, on one clock.
struct Timeline {
    /// The earliest shard's start, in milliseconds since 1970.
    t0: u64,
    /// The merged measured window, in seconds.
    duration_s: f64,
    /// The window, never zero: what every rate is divided by.
    secs: f64,
}

impl Timeline {
    /// The merged window runs from the earliest shard's measured start to the latest's end:
    /// rates over it never count a second in which only some shards ran as a full one.
    fn of(results: &[&RunResult]) -> Timeline {
        let t0 = results
            .iter()
            .map(|r| r.shard.as_ref().expect("a shard").started_unix_ms)
            .min()
            .unwrap_or(0);
        let spans: Vec<(f64, f64)> = results.iter().map(|r| measured_window(r)).collect();
        let from = spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
        let to = spans.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
        let duration_s = ((to - from) / 1000.0).max(0.0);
        Timeline {
            t0,
            duration_s,
            secs: duration_s.max(1e-9),
        }
    }

    /// Milliseconds from the earliest shard's start to this one's.
    fn offset_ms(&self, r: &RunResult) -> f64 {
        (r.shard.as_ref().expect("a shard").started_unix_ms - self.t0) as f64
    }
}

/// The merged result: its counts, latencies, windows, shards and warnings.
fn assemble(shards: &[ShardFile], parts: &[Decoded]) -> Result<RunResult, Error> {
    let results: Vec<&RunResult> = shards.iter().map(|s| &s.result).collect();
    let Some(&first) = results.first() else {
        return refuse("merge: give the shards' result files");
    };
    let time = Timeline::of(&results);
    let mut m = summed_counts(first, &results, &time);
    merge_latencies(&mut m, shards, parts, time.secs)?;
    m.phases = merge_phases(shards)?;
    let statements = merge_statements(&m, shards);
    m.statement_latencies = statements.as_ref().cloned().unwrap_or_default();
    let offsets: Vec<usize> = results
        .iter()
        .map(|r| (time.offset_ms(r) / 1000.0).round() as usize)
        .collect();
    m.windows = windows(&results, parts, &offsets)?;
    m.window_histograms = Vec::new();
    m.lag_histogram = None;
    m.connections = merge_connections(shards)?;
    let reports = shard_reports(shards, &time);
    let mut warnings = shard_warnings(shards, &reports);
    warnings.extend(statements.err());
    let mut merged = whole_run(first, &results, &time, m);
    warnings.extend(lost_figures(first, &merged.workload.metrics));
    merged.warnings = warnings;
    merged.shards = reports;
    Ok(merged)
}

/// The shards' connections made one: counts summed, connect-time histograms added, the storm
/// the slowest shard's over all their clients (`metrics::connections::Connections::add`).
fn merge_connections(shards: &[ShardFile]) -> Result<Connections, Error> {
    let mut all = Connections::default();
    for s in shards {
        let mut one = s.result.measurement.connections.clone();
        if let Some(text) = &part(s).connect_histogram {
            one.histogram = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| e.to_string())
                .and_then(|bytes| metrics::deserialize(&bytes).map(|_| bytes))
                .map_err(|e| {
                    Error::Usage(format!(
                        "{}: its connect-time histogram cannot be read ({e}): the file was changed after the run",
                        s.file
                    ))
                })?;
        }
        all.add(&one)
            .map_err(|e| Error::Usage(format!("{}: {e}", s.file)))?;
    }
    Ok(all)
}

/// The first shard's measurement with every count summed over the shards (latencies and
/// windows still the first shard's: `merge_latencies` and `windows` replace them).
fn summed_counts(first: &RunResult, results: &[&RunResult], time: &Timeline) -> Measurement {
    let mut m: Measurement = first.measurement.clone();
    let sum =
        |f: &dyn Fn(&Measurement) -> u64| results.iter().map(|r| f(&r.measurement)).sum::<u64>();
    m.duration_s = time.duration_s;
    m.transactions = sum(&|m| m.transactions);
    m.queries = sum(&|m| m.queries);
    m.qps = m.queries as f64 / time.secs;
    m.errors = sum(&|m| m.errors);
    m.retries = sum(&|m| m.retries);
    m.retried = sum(&|m| m.retried);
    m.rollbacks = sum(&|m| m.rollbacks);
    m.reconnects = sum(&|m| m.reconnects);
    m.unfinished = sum(&|m| m.unfinished);
    m.disconnected_s = results.iter().map(|r| r.measurement.disconnected_s).sum();
    m.errors_by_kind = BTreeMap::new();
    m.error_messages = BTreeMap::new();
    m.lost_clients = Vec::new();
    for r in results {
        for (k, n) in &r.measurement.errors_by_kind {
            *m.errors_by_kind.entry(k.clone()).or_default() += n;
        }
        for (k, msg) in &r.measurement.error_messages {
            m.error_messages
                .entry(k.clone())
                .or_insert_with(|| msg.clone());
        }
        m.lost_clients
            .extend(r.measurement.lost_clients.iter().cloned());
    }
    m.open_loop = results
        .iter()
        .filter_map(|r| r.measurement.open_loop)
        .reduce(|a, b| metrics::OpenLoop {
            due: a.due + b.due,
            started: a.started + b.started,
        });
    m.latency_limit = results
        .iter()
        .filter_map(|r| r.measurement.latency_limit)
        .reduce(|a, b| metrics::LatencyLimit {
            limit_ms: a.limit_ms,
            late: a.late + b.late,
            skipped: add_some(a.skipped, b.skipped),
        });
    m.client_threads = client_threads(results);
    m.first_transaction_ms = results
        .iter()
        .filter_map(|r| {
            r.measurement
                .first_transaction_ms
                .map(|ms| (time.offset_ms(r), ms))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, ms)| ms);
    m
}

/// Each phase's figures over all shards: counts summed, histograms merged (latency, schedule
/// lag, each second's), tps over the phase's length, and the recovery after a spike judged
/// again on the merged seconds (the first shard says which phases follow a spike: every shard
/// ran the same phases).
/// Two shards' counts of a phase's arrivals, where either has them.
fn add_some(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

fn merge_phases(shards: &[ShardFile]) -> Result<Vec<PhaseResult>, Error> {
    let Some(first) = shards.first() else {
        return Ok(Vec::new());
    };
    let read = |s: &ShardFile, what: &str, text: &str| -> Result<Histogram<u64>, Error> {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| e.to_string())
            .and_then(|b| metrics::deserialize(&b))
            .map_err(|e| {
                Error::Usage(format!(
                    "{}: its {what} histogram cannot be read ({e}): the file was changed after the run",
                    s.file
                ))
            })
    };
    let mut out: Vec<PhaseResult> = Vec::new();
    let mut seconds_p99: Vec<Vec<Option<f64>>> = Vec::new();
    for (i, p0) in first.result.measurement.phases.iter().enumerate() {
        let mut merged = p0.clone();
        let (mut lat, mut lag) = (None, None);
        let mut seconds: Vec<Option<Histogram<u64>>> = Vec::new();
        for (k, s) in shards.iter().enumerate() {
            let phase = s.result.measurement.phases.get(i);
            let hists = part(s).phase_histograms.get(i);
            let (Some(p), Some(h)) = (phase, hists) else {
                return refuse(format!(
                    "{}: its phase {} has no figures or histograms: the shards are not one run, or the file was changed",
                    s.file, p0.name
                ));
            };
            if k > 0 {
                merged.transactions += p.transactions;
                merged.due = add_some(merged.due, p.due);
                merged.started = add_some(merged.started, p.started);
                // A shard stopped earlier than the others: the phase ran as long as the
                // shortest.
                merged.ran_s = match (merged.ran_s, p.ran_s) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                merged.errors += p.errors;
                merged.retries += p.retries;
                for (kind, n) in &p.errors_by_kind {
                    *merged.errors_by_kind.entry(kind.clone()).or_default() += n;
                }
                for (t, n) in &p.transaction_types {
                    *merged.transaction_types.entry(t.clone()).or_default() += n;
                }
            }
            let what = format!("phase {}'s", p0.name);
            add(&mut lat, &read(s, &what, &h.latency)?)?;
            if let Some(l) = &h.lag {
                add(&mut lag, &read(s, &what, l)?)?;
            }
            for (j, text) in h.seconds.iter().enumerate() {
                if seconds.len() <= j {
                    seconds.resize(j + 1, None);
                }
                if !text.is_empty() {
                    add(&mut seconds[j], &read(s, &what, text)?)?;
                }
            }
        }
        merged.tps =
            phases::per_second(merged.transactions, merged.ran_s.unwrap_or(merged.seconds));
        merged.latency_ms = lat.as_ref().map(Latency::of).unwrap_or_default();
        merged.schedule_lag_ms = lag.as_ref().map(Latency::of);
        merged.histogram = lat.as_ref().map(metrics::serialize).unwrap_or_default();
        merged.lag_histogram = lag.as_ref().map(metrics::serialize);
        merged.second_histograms = Vec::new();
        merged.windows = phases::windows(
            &seconds.iter().map(Option::as_ref).collect::<Vec<_>>(),
            merged.ran_s.unwrap_or(merged.seconds),
        );
        seconds_p99.push(
            seconds
                .iter()
                .map(|h| {
                    h.as_ref()
                        .filter(|h| !h.is_empty())
                        .map(|h| h.value_at_quantile(0.99) as f64 / 1000.0)
                })
                .collect(),
        );
        out.push(merged);
    }
    for i in 0..out.len() {
        let Some(r) = out[i].recovery.clone() else {
            continue;
        };
        let Some(spike) = out.iter().position(|p| p.name == r.after) else {
            continue;
        };
        let band = spike
            .checked_sub(1)
            .map_or(0.0, |b| phases::band(&seconds_p99[b]));
        let not_started = out[i]
            .due
            .unwrap_or(0)
            .saturating_sub(out[i].started.unwrap_or(0));
        out[i].recovery = Some(phases::recovery(
            &r.after,
            band,
            &seconds_p99[i],
            out[i].ran_s.unwrap_or(out[i].seconds),
            not_started,
        ));
    }
    Ok(out)
}

/// Each transaction type's histograms merged (its summary and latencies, and the whole run's
/// latency from all of them), and the schedule lag's.
fn merge_latencies(
    m: &mut Measurement,
    shards: &[ShardFile],
    parts: &[Decoded],
    secs: f64,
) -> Result<(), Error> {
    let mut all = None;
    let mut types = Vec::new();
    let mut histograms = Vec::new();
    for t in &m.transaction_types {
        let mut h = None;
        for (p, s) in parts.iter().zip(shards) {
            let Some(sh) = p.types.get(&t.name) else {
                return refuse(format!(
                    "{}: it has no transactions of type {} that the first shard ran: the shards are not one run",
                    s.file, t.name
                ));
            };
            add(&mut h, sh)?;
        }
        let Some(h) = h else { continue };
        add(&mut all, &h)?;
        histograms.push((t.name.clone(), metrics::serialize(&h)));
        types.push(type_summary(&t.name, shards, &h, secs));
    }
    m.latency_ms = all.as_ref().map(Latency::of).unwrap_or_default();
    let mut lag = None;
    for h in parts.iter().filter_map(|p| p.lag.as_ref()) {
        add(&mut lag, h)?;
    }
    m.schedule_lag_ms = lag.as_ref().map(Latency::of);
    m.histograms = histograms;
    m.transaction_types = types;
    Ok(())
}

/// Each statement's lines over every shard, their histograms merged, figured against the merged
/// transaction types; Err says why they cannot be (a shard timed none, or its file lost them).
fn merge_statements(
    m: &Measurement,
    shards: &[ShardFile],
) -> Result<Vec<metrics::statement_latencies::Statement>, String> {
    use metrics::statement_latencies::{Statements, TypeTotals, times_of};
    let why = |file: &str, what: &str| {
        format!("per-statement latencies left out of the merged result: {file} {what}")
    };
    let timed = shards
        .iter()
        .filter(|s| !s.result.measurement.statement_latencies.is_empty())
        .count();
    if timed == 0 {
        return Ok(Vec::new());
    }
    let mut all = Statements::default();
    for s in shards {
        let lines = &s.result.measurement.statement_latencies;
        let texts = &part(s).statement_histograms;
        if lines.is_empty() {
            return Err(why(&s.file, "timed none (--no-statement-latencies?)"));
        }
        if texts.len() != lines.len() {
            return Err(why(&s.file, "has no histogram for each statement"));
        }
        let mut times = Vec::new();
        for (line, text) in lines.iter().zip(texts) {
            let hist = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| e.to_string())
                .and_then(|b| metrics::deserialize(&b))
                .map_err(|e| {
                    why(
                        &s.file,
                        &format!("has a statement histogram that cannot be read ({e})"),
                    )
                })?;
            let Some(txn) = m
                .transaction_types
                .iter()
                .position(|t| t.name == line.transaction)
            else {
                return Err(why(
                    &s.file,
                    &format!(
                        "names a transaction type the run has not ({})",
                        line.transaction
                    ),
                ));
            };
            times.push(times_of(line, txn as u16, hist));
        }
        all.add(times);
    }
    let totals: Vec<TypeTotals> = m.transaction_types.iter().map(TypeTotals::of).collect();
    Ok(all.finish(&totals))
}

/// One transaction type over every shard: its counts summed, its latency from the merged
/// histogram `h`.
fn type_summary(name: &str, shards: &[ShardFile], h: &Histogram<u64>, secs: f64) -> TypeSummary {
    let each: Vec<&TypeSummary> = shards
        .iter()
        .filter_map(|s| {
            s.result
                .measurement
                .transaction_types
                .iter()
                .find(|x| x.name == name)
        })
        .collect();
    let transactions = each.iter().map(|x| x.transactions).sum::<u64>();
    TypeSummary {
        name: name.to_string(),
        transactions,
        tps: transactions as f64 / secs,
        errors: each.iter().map(|x| x.errors).sum(),
        retries: each.iter().map(|x| x.retries).sum(),
        retried: each.iter().map(|x| x.retried).sum(),
        rollbacks: each.iter().map(|x| x.rollbacks).sum(),
        skipped: each.iter().filter_map(|x| x.skipped).reduce(|a, b| a + b),
        latency_ms: Latency::of(h),
    }
}

/// What the merged result says of each shard.
fn shard_reports(shards: &[ShardFile], time: &Timeline) -> Vec<ShardReport> {
    shards
        .iter()
        .map(|s| {
            let r = &s.result;
            let p = part(s);
            ShardReport {
                index: p.index,
                file: s.file.clone(),
                host: r.host.clone(),
                first_client: p.first_client,
                clients: p.clients,
                started_at: r.started_at.clone(),
                offset_s: time.offset_ms(r) / 1000.0,
                transactions: r.measurement.transactions,
                tps: r.tps,
                client_cpu_s: r.client_cpu_s,
                client_cpu_share: r.client_cpu_share,
                client_threads: r.measurement.client_threads,
                client_bound: r.client_bound,
            }
        })
        .collect()
}

/// Each shard's own warnings, named by shard; the client-bound shards; shards started apart.
fn shard_warnings(shards: &[ShardFile], reports: &[ShardReport]) -> Vec<String> {
    let mut warnings = Vec::new();
    for (s, rep) in shards.iter().zip(reports) {
        for w in &s.result.warnings {
            warnings.push(format!("shard {}: {w}", rep.index));
        }
        if rep.client_bound {
            warnings.push(format!(
                "shard {} ({}) was client-bound: its machine measured itself rather than the database; add load machines or give it fewer clients",
                rep.index, s.file
            ));
        }
    }
    let spread = reports.iter().map(|r| r.offset_s).fold(0.0, f64::max);
    if spread > 1.0 {
        warnings.push(format!(
            "the shards started up to {spread:.1} s apart: the merged window covers them all, so its rates are below those of the seconds when every shard ran (start them together with --start-at)"
        ));
    }
    warnings
}

/// The first shard's result with the merged measurement and what the run as a whole did:
/// its start, rate, workload figures, client CPU and memory, restarts and database sizes.
fn whole_run(
    first: &RunResult,
    results: &[&RunResult],
    time: &Timeline,
    m: Measurement,
) -> RunResult {
    let mut merged = first.clone();
    merged.started_at = humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(time.t0),
    )
    .to_string();
    merged.interrupted = results.iter().any(|r| r.interrupted);
    merged.tps = m.transactions as f64 / time.secs;
    merged.workload.metrics = workload_metrics(first, &m);
    merged.client_cpu_s = results.iter().map(|r| r.client_cpu_s).sum();
    // Shares of different machines do not add up: the busiest shard's is the one to read.
    merged.client_cpu_share = results
        .iter()
        .map(|r| r.client_cpu_share)
        .fold(0.0, f64::max);
    merged.client_bound = results.iter().any(|r| r.client_bound);
    // Each shard sampled every session of the run on the server (they share its database
    // and application name): the first shard's samples stand for the run, judged with the
    // run's clients.
    // The busiest shard's machine is the one with the least headroom.
    merged.host_cpu_busy = results
        .iter()
        .filter_map(|r| r.host_cpu_busy)
        .reduce(f64::max);
    let judged = crate::metrics::waits::Judged {
        clients: merged.options.clients,
        client_bound: merged.client_bound,
        paced: merged.options.rate.is_some()
            || merged
                .options
                .phases
                .iter()
                .any(|p| matches!(p.load, crate::runner::shape::Load::Rate { .. })),
        host_busy: merged.host_cpu_busy,
        clients_queued: merged.measurement.client_threads.queued(),
        measured_s: merged.measurement.duration_s,
        server_here: merged.engine.embedded
            || crate::engine::parse_dsn(&merged.engine.dsn).is_ok_and(|d| d.is_local()),
        unanswered: crate::runner::unanswered(&merged.measurement.lost_clients),
    };
    merged.verdict = Some(crate::metrics::waits::verdict(
        merged.waits.as_ref(),
        judged,
        "the first shard sampled no server sessions",
    ));
    // An embedded engine's shards each counted their own clients' connections: summed.
    merged.embedded_waits = crate::metrics::embedded::EmbeddedWaits::sum(
        results.iter().filter_map(|r| r.embedded_waits.as_ref()),
        m.transactions,
    );
    if merged.waits.is_none() && merged.embedded_waits.is_some() {
        merged.verdict = Some(crate::metrics::embedded::verdict(
            merged.embedded_waits.as_ref(),
            "the shards' connections counted no measured time",
        ));
    }
    // Likewise its statements' figures, per transaction of the whole run.
    if let Some(st) = merged.statements.as_mut() {
        st.relate(m.transactions, &m.statement_latencies);
    }
    merged.client_peak_rss_bytes = results
        .iter()
        .map(|r| r.client_peak_rss_bytes)
        .max()
        .unwrap_or(0);
    merged.server_restarts = results
        .iter()
        .flat_map(|r| r.server_restarts.iter().cloned())
        .collect();
    merged.engine.database_size_bytes = results
        .iter()
        .map(|r| r.engine.database_size_bytes)
        .min()
        .unwrap_or(0);
    merged.engine.database_size_after_bytes = results
        .iter()
        .map(|r| r.engine.database_size_after_bytes)
        .max()
        .unwrap_or(0);
    merged.measurement = m;
    merged.shard = None;
    // The first shard's counters are the server's, whole: per transaction of the whole run.
    crate::metrics::evidence::judge(
        merged.verdict.as_mut(),
        merged.server_counters.as_mut(),
        merged.waits.as_ref(),
        &merged.measurement.windows,
        merged.measurement.transactions,
    );
    merged
}

/// The client threads of every shard together; the busy share is recomputed from each
/// shard's CPU time and the wall time it implies (CPU time over busy share).
fn client_threads(results: &[&RunResult]) -> metrics::ClientThreads {
    let each: Vec<metrics::ClientThreads> = results
        .iter()
        .map(|r| r.measurement.client_threads)
        .collect();
    let wall: f64 = each
        .iter()
        .filter(|t| t.busy > 0.0)
        .map(|t| t.cpu_s / t.busy)
        .sum();
    let cpu: f64 = each.iter().map(|t| t.cpu_s).sum();
    let waits: Option<Vec<f64>> = each.iter().map(|t| t.run_queue_s).collect();
    metrics::ClientThreads {
        threads: each.iter().map(|t| t.threads).sum(),
        cpu_s: cpu,
        run_queue_s: waits.map(|w| w.iter().sum()),
        busy: if wall > 0.0 { cpu / wall } else { 0.0 },
        busiest: each.iter().map(|t| t.busiest).fold(0.0, f64::max),
        storage_read_bytes: each
            .iter()
            .map(|t| t.storage_read_bytes)
            .sum::<Option<u64>>(),
    }
}

/// The per-second windows of all shards on one timeline: shard j's window t is the merged
/// window t + its start's offset in whole seconds; counts summed, percentiles from the
/// windows' histograms merged.
fn windows(
    results: &[&RunResult],
    parts: &[Decoded],
    offsets: &[usize],
) -> Result<Vec<Window>, Error> {
    let n = results
        .iter()
        .zip(offsets)
        .map(|(r, o)| o + r.measurement.windows.len())
        .max()
        .unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let mut w = Window::empty(k as u32 + 1, false);
        let mut h = None;
        for ((r, p), o) in results.iter().zip(parts).zip(offsets) {
            let Some(i) = k.checked_sub(*o) else { continue };
            let Some(sw) = r.measurement.windows.get(i) else {
                continue;
            };
            w.warmup |= sw.warmup;
            w.transactions += sw.transactions;
            w.errors += sw.errors;
            w.retries += sw.retries;
            for (kind, c) in &sw.errors_by_kind {
                *w.errors_by_kind.entry(kind.clone()).or_default() += c;
            }
            if let Some(Some(sh)) = p.windows.get(i) {
                add(&mut h, sh)?;
            }
        }
        if let Some(h) = h.filter(|h| !h.is_empty()) {
            w.percentiles_of(&h);
        }
        out.push(w);
    }
    Ok(out)
}

/// The workload's own figures (TPC-C's NOPM) from the merged counts, as a single run of the
/// whole would have computed them.
fn workload_metrics(first: &RunResult, m: &Measurement) -> BTreeMap<String, f64> {
    let w = &first.workload;
    let built = workload::all().find(|e| e.name == w.name).and_then(|e| {
        (e.new)(&WorkloadOptions {
            variant: Some(w.variant.clone()),
            ..Default::default()
        })
        .ok()
    });
    match built {
        Some(built) => built.metrics(&m.counts()),
        // A workload made from a file or from scripts: it has no figures of its own.
        None => BTreeMap::new(),
    }
}

/// Figures the shards had that the merge could not compute again, as a warning.
fn lost_figures(first: &RunResult, merged: &BTreeMap<String, f64>) -> Option<String> {
    let lost: Vec<&str> = first
        .workload
        .metrics
        .keys()
        .filter(|k| !merged.contains_key(*k))
        .map(String::as_str)
        .collect();
    (!lost.is_empty()).then(|| {
        format!(
            "the shards' {} could not be computed for the whole run (workload {} not found in this dbduel): read them per shard",
            lost.join(", "),
            first.workload.name
        )
    })
}
