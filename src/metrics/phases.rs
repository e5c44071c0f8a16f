//! Each phase's own figures in a run whose load changes shape (`--phase`, `runner::shape`): its
//! transactions, throughput, errors, retries, latency percentiles and schedule lag, from HDR
//! histograms of its own. A transaction belongs to the phase its start was in (the scheduled
//! start in an open loop, the actual one in a closed loop), wherever it ended: no phase's figures
//! take a transaction another phase started. The warm-up's transactions that ended in the measured
//! part (counted by the run's totals) count in the first phase.
//!
//! After a phase of a higher rate than the one before it (a spike), the next phase's recovery is
//! the seconds until its per-second p99 is back within the band of the phase before the spike
//! (its highest per-second p99), and stays there. A phase some of whose arrivals never started
//! (the spike's backlog still queued at its end) has not recovered, whatever its few completed
//! transactions show; without a band (no transaction before the spike) or without a completed
//! transaction of its own, its recovery is unknown, and says why.
//!
//! A run stopped early (Ctrl-C, a lost server) divides each phase's transactions by the time the
//! phase ran (`ran_s`), and a phase it never reached shows no figures.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{Latency, histogram, serialize};
use crate::event::Sample;
use crate::runner::shape::{Load, Shape};

/// One phase's figures, as a result keeps them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseResult {
    pub name: String,
    /// Its load as asked, in words ("rate 100 -> 1000/s (poisson)", "8 clients").
    pub load: String,
    /// Seconds from the measured part's start, and its length.
    pub start_s: f64,
    pub seconds: f64,
    /// In a run stopped before this phase's end: the seconds of it that ran (0: never
    /// reached), which its tps divides by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_s: Option<f64>,
    pub transactions: u64,
    pub tps: f64,
    /// A rate phase's arrivals: scheduled in it (before the run's end) and started; the
    /// difference never ran (a server behind its schedule at the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
    pub errors: u64,
    #[serde(default)]
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Successful transactions by type, for a workload of several types (a phase's mix shows
    /// here); empty for one type.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub transaction_types: BTreeMap<String, u64>,
    pub retries: u64,
    pub latency_ms: Latency,
    /// Open loop only: how late its transactions started after their schedule.
    pub schedule_lag_ms: Option<Latency>,
    /// After a spike: seconds from this phase's start until its per-second p99 was back within
    /// the band of the phase before the spike (None: not a phase after a spike; `recovered`
    /// false: it never came back within this phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// Its latency histogram (microseconds), HdrHistogram V2-serialized, for `merge`.
    #[serde(skip)]
    pub histogram: Vec<u8>,
    #[serde(skip)]
    pub lag_histogram: Option<Vec<u8>>,
    /// Each whole second of the phase by its transactions' start (as the phase's figures take
    /// them): what `compare` judges a phase's noise over, where the run's seconds (by their
    /// transactions' end) would mix in the phases either side.
    #[serde(default)]
    pub windows: Vec<PhaseSecond>,
    /// Each second's latency histogram (2 significant digits; empty bytes for a second without
    /// a transaction), for `merge` to judge the recovery over all shards.
    #[serde(skip)]
    pub second_histograms: Vec<Vec<u8>>,
}

/// One second of a phase: the transactions that started in it and their latency percentiles
/// (None without a transaction).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseSecond {
    /// The second's end, from the phase's start (1: its first second).
    pub t: u32,
    pub transactions: u64,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// A phase's whole seconds (`length` of them, rounded down: a part second would count fewer
/// transactions), from each second's latency histogram (None or empty: no transaction).
pub fn windows(seconds: &[Option<&Histogram<u64>>], length: f64) -> Vec<PhaseSecond> {
    let whole = (length + 1e-9).floor().max(0.0) as usize;
    (0..whole)
        .map(|i| {
            let h = seconds.get(i).copied().flatten().filter(|h| !h.is_empty());
            let at = |q: f64| h.map(|h| h.value_at_quantile(q) as f64 / 1000.0);
            PhaseSecond {
                t: i as u32 + 1,
                transactions: h.map_or(0, |h| h.len()),
                p50_ms: at(0.5),
                p90_ms: at(0.9),
                p95_ms: at(0.95),
                p99_ms: at(0.99),
            }
        })
        .collect()
}

/// How long a phase after a spike took to get its p99 back.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Recovery {
    /// The spike's phase, and the band: the highest per-second p99 of the phase before it.
    pub after: String,
    pub band_p99_ms: f64,
    /// Whether the p99 came back within the band, and stayed, before this phase ended; the
    /// seconds it took (the phase's length when it never did).
    pub recovered: bool,
    pub seconds: f64,
    /// Arrivals of this phase that never started: the backlog was still queued at its end.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_started: u64,
    /// Why the recovery cannot be judged (then `recovered` is false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

struct Acc {
    hist: Histogram<u64>,
    lag: Option<Histogram<u64>>,
    transactions: u64,
    errors: u64,
    errors_by_kind: BTreeMap<String, u64>,
    retries: u64,
    by_type: Vec<u64>,
    /// Per second of the phase (from its start): a p99's histogram (2 significant digits).
    seconds: Vec<Histogram<u64>>,
    /// A rate phase's arrivals due and started, summed over the clients.
    due: u64,
    started: u64,
}

/// The phases' accumulators, fed the measured samples.
pub struct Phases {
    shape: Shape,
    /// The workload's transaction types, as the samples index them.
    names: Vec<&'static str>,
    /// Each phase's start, microseconds from the clients' start (the warm-up included).
    starts_us: Vec<u64>,
    accs: Vec<Acc>,
}

impl Phases {
    /// For `shape`, its measured part starting `warmup_us` after the clients' start, the
    /// workload's transaction types `names`.
    pub fn new(shape: &Shape, warmup_us: u64, names: &[&'static str]) -> Phases {
        let starts_us = shape
            .starts()
            .iter()
            .map(|s| warmup_us + (s * 1e6) as u64)
            .collect();
        let accs = shape
            .phases
            .iter()
            .map(|p| Acc {
                hist: histogram(3),
                lag: matches!(p.load, Load::Rate { .. }).then(|| histogram(3)),
                transactions: 0,
                errors: 0,
                errors_by_kind: BTreeMap::new(),
                retries: 0,
                by_type: vec![0; names.len()],
                seconds: Vec::new(),
                due: 0,
                started: 0,
            })
            .collect();
        Phases {
            shape: shape.clone(),
            names: names.to_vec(),
            starts_us,
            accs,
        }
    }

    /// The phase a transaction started in.
    fn phase_of(&self, start_us: u64) -> usize {
        self.starts_us
            .partition_point(|s| *s <= start_us)
            .saturating_sub(1)
    }

    /// A measured sample (the run's rule: it ended after the warm-up).
    pub fn add(&mut self, s: &Sample) {
        let start = s.end_us.saturating_sub(s.latency_us);
        let i = self.phase_of(start);
        let into = start.saturating_sub(self.starts_us[i]) / 1_000_000;
        let acc = &mut self.accs[i];
        acc.retries += u64::from(s.tries.saturating_sub(1));
        match &s.error {
            Some(e) => {
                acc.errors += 1;
                *acc.errors_by_kind.entry(e.kind()).or_default() += 1;
            }
            None => {
                acc.transactions += 1;
                if let Some(n) = acc.by_type.get_mut(usize::from(s.txn)) {
                    *n += 1;
                }
                acc.hist.saturating_record(s.latency_us.max(1));
                if let (Some(lag), Some(us)) = (&mut acc.lag, s.lag_us) {
                    lag.saturating_record(us.max(1));
                }
                // The warm-up's transactions count in the first phase's figures, not in its
                // seconds, which hold the transactions that started in them.
                if start >= self.starts_us[i] {
                    let second = into as usize;
                    if acc.seconds.len() <= second {
                        acc.seconds.resize_with(second + 1, || histogram(2));
                    }
                    acc.seconds[second].saturating_record(s.latency_us.max(1));
                }
            }
        }
    }

    /// A client's arrivals due and started, by phase (`Pace`).
    pub fn schedule(&mut self, due: &[u64], started: &[u64]) {
        for (acc, (d, s)) in self.accs.iter_mut().zip(due.iter().zip(started)) {
            acc.due += d;
            acc.started += s;
        }
    }

    /// Each phase's figures, the measured part having lasted `measured_s`.
    pub fn finish(self, measured_s: f64) -> Vec<PhaseResult> {
        let starts = self.shape.starts();
        let mut out: Vec<PhaseResult> = Vec::new();
        for (i, (phase, acc)) in self.shape.phases.iter().zip(&self.accs).enumerate() {
            let ran = ran(starts[i], phase.seconds, measured_s);
            let length = ran.unwrap_or(phase.seconds);
            let rate = matches!(phase.load, Load::Rate { .. });
            let recovery = spiked(&self.shape, i).map(|spike| {
                let band = band(&p99s(&self.accs[spike - 1].seconds));
                recovery(
                    &self.shape.phases[spike].name,
                    band,
                    &p99s(&acc.seconds),
                    length,
                    acc.due.saturating_sub(acc.started),
                )
            });
            out.push(PhaseResult {
                name: phase.name.clone(),
                load: phase.load_said(),
                start_s: starts[i],
                seconds: phase.seconds,
                ran_s: ran,
                transactions: acc.transactions,
                tps: per_second(acc.transactions, length),
                due: rate.then_some(acc.due),
                started: rate.then_some(acc.started),
                errors: acc.errors,
                errors_by_kind: acc.errors_by_kind.clone(),
                transaction_types: if self.names.len() > 1 {
                    self.names
                        .iter()
                        .zip(&acc.by_type)
                        .map(|(n, c)| (n.to_string(), *c))
                        .collect()
                } else {
                    BTreeMap::new()
                },
                retries: acc.retries,
                latency_ms: Latency::of(&acc.hist),
                schedule_lag_ms: acc.lag.as_ref().map(Latency::of),
                recovery,
                windows: windows(&acc.seconds.iter().map(Some).collect::<Vec<_>>(), length),
                histogram: serialize(&acc.hist),
                lag_histogram: acc.lag.as_ref().map(serialize),
                second_histograms: acc
                    .seconds
                    .iter()
                    .map(|h| {
                        if h.is_empty() {
                            Vec::new()
                        } else {
                            serialize(h)
                        }
                    })
                    .collect(),
            });
        }
        out
    }
}

/// The seconds of a phase (from `start`, `seconds` long) that a measured part of `measured_s`
/// ran, when it stopped before the phase's end (a 50 ms tolerance for the clock: a run that
/// went to its end is not cut short).
pub fn ran(start: f64, seconds: f64, measured_s: f64) -> Option<f64> {
    (measured_s + 0.05 < start + seconds).then(|| (measured_s - start).clamp(0.0, seconds))
}

/// Transactions per second over `seconds` (0 for a phase that never ran).
pub fn per_second(transactions: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        transactions as f64 / seconds
    } else {
        0.0
    }
}

/// When phase `i` follows a spike: the spike's index (the phase just before `i`, of a higher
/// rate than the phase before it and than phase `i`).
fn spiked(shape: &Shape, i: usize) -> Option<usize> {
    if i < 2 {
        return None;
    }
    let peak = |p: usize| match shape.phases[p].load {
        Load::Rate { from, to, .. } => Some(from.max(to)),
        Load::Clients(_) => None,
    };
    let (before, spike, after) = (peak(i - 2)?, peak(i - 1)?, peak(i)?);
    (spike > before && spike > after).then_some(i - 1)
}

/// Each second's p99 in ms (None for a second without a transaction).
pub fn p99s(seconds: &[Histogram<u64>]) -> Vec<Option<f64>> {
    seconds
        .iter()
        .map(|h| (!h.is_empty()).then(|| h.value_at_quantile(0.99) as f64 / 1000.0))
        .collect()
}

/// The band a phase after a spike must come back within: the highest per-second p99 of the
/// phase before the spike.
pub fn band(p99s: &[Option<f64>]) -> f64 {
    p99s.iter().flatten().fold(0.0, |a, b| a.max(*b))
}

/// The seconds from the phase's start to the first second after which every second's p99 is
/// within `band` (seconds without transactions do not break it). Not recovered when
/// `not_started` of its arrivals never started (the backlog outlasted it); unknown without a
/// band (0: no transaction before the spike) or without a completed transaction.
pub fn recovery(
    spike: &str,
    band: f64,
    p99s: &[Option<f64>],
    length: f64,
    not_started: u64,
) -> Recovery {
    let last_out = p99s.iter().rposition(|p| p.is_some_and(|p| p > band));
    let unknown = if band <= 0.0 {
        Some("the phase before the spike completed no transaction: no band to come back within")
    } else if not_started == 0 && p99s.iter().all(Option::is_none) {
        Some("no transaction of this phase completed")
    } else {
        None
    };
    let (recovered, seconds) = match last_out {
        _ if unknown.is_some() || not_started > 0 => (false, length),
        None => (true, 0.0),
        // The last second above the band was the phase's last whole second or later: it never
        // came back within the phase.
        Some(s) if (s + 1) as f64 >= length.floor() => (false, length),
        Some(s) => (true, (s + 1) as f64),
    };
    Recovery {
        after: spike.to_string(),
        band_p99_ms: band,
        recovered,
        seconds,
        not_started,
        unknown: unknown.map(str::to_string),
    }
}

/// The reports' phases table (HTML and markdown): its header and a phase's cells.
pub const HEADER: [&str; 9] = [
    "phase",
    "from s",
    "load",
    "tps",
    "p50 ms",
    "p99 ms",
    "errors",
    "lag p99 ms",
    "recovery",
];

/// A recovery in a few words, for tables.
fn recovery_short(r: &Recovery) -> String {
    match (&r.unknown, r.recovered, r.not_started) {
        (Some(_), ..) => format!("unknown after {}", r.after),
        (None, true, _) => format!("{:.0} s after {}", r.seconds, r.after),
        (None, false, 0) => format!("not back in {:.0} s after {}", r.seconds, r.after),
        (None, false, n) => format!("not back after {}: {n} never started", r.after),
    }
}

/// A latency figure in ms, "-" for a phase without a completed transaction.
fn ms(p: &PhaseResult, v: f64) -> String {
    if p.transactions == 0 {
        "-".into()
    } else {
        format!("{v:.3}")
    }
}

/// A phase's tps, "-" for one the run never reached.
fn tps_cell(p: &PhaseResult) -> String {
    if p.ran_s == Some(0.0) {
        "-".into()
    } else {
        crate::report::data::tps_text(p.tps)
    }
}

/// A phase's cells under `HEADER`.
pub fn cells(p: &PhaseResult) -> Vec<String> {
    vec![
        p.name.clone(),
        format!("{:.1}", p.start_s),
        p.load.clone(),
        tps_cell(p),
        ms(p, p.latency_ms.p50),
        ms(p, p.latency_ms.p99),
        p.errors.to_string(),
        p.schedule_lag_ms
            .as_ref()
            .map_or("-".to_string(), |l| ms(p, l.p99)),
        p.recovery.as_ref().map_or(String::new(), recovery_short),
    ]
}

/// The phases' table in the summary.
pub fn summary(out: &mut String, phases: &[PhaseResult]) {
    use std::fmt::Write;
    if phases.is_empty() {
        return;
    }
    let load_w = phases
        .iter()
        .map(|p| p.load.len())
        .max()
        .unwrap_or(4)
        .max(4)
        + 1;
    let _ = writeln!(
        out,
        "\n  {:<16}{:>8} {:>8} {:<load_w$}{:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9}",
        "phases",
        "from s",
        "for s",
        "load",
        "txns",
        "tps",
        "mean",
        "p50",
        "p99",
        "max",
        "errors",
        "lag p99"
    );
    for p in phases {
        let lag = p
            .schedule_lag_ms
            .as_ref()
            .map_or("-".to_string(), |l| ms(p, l.p99));
        let tps = if p.ran_s == Some(0.0) {
            "-".to_string()
        } else {
            format!("{:.1}", p.tps)
        };
        let _ = writeln!(
            out,
            "  {:<16}{:>8} {:>8} {:<load_w$}{:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9}",
            p.name,
            format!("{:.1}", p.start_s),
            format!("{:.1}", p.ran_s.unwrap_or(p.seconds)),
            p.load,
            p.transactions,
            tps,
            ms(p, p.latency_ms.mean),
            ms(p, p.latency_ms.p50),
            ms(p, p.latency_ms.p99),
            ms(p, p.latency_ms.max),
            p.errors,
            lag
        );
    }
    for p in phases {
        match p.ran_s {
            Some(0.0) => {
                let _ = writeln!(out, "  {}: not reached (the run stopped before it)", p.name);
            }
            Some(ran) => {
                let _ = writeln!(
                    out,
                    "  {}: cut short, {ran:.1} of its {:.1} s ran (its tps is over those)",
                    p.name, p.seconds
                );
            }
            None => {}
        }
        if let (Some(due), Some(started)) = (p.due, p.started)
            && due > started
        {
            let _ = writeln!(
                out,
                "  {}: {} of its {due} scheduled arrivals never started (the server was behind its schedule at the run's end)",
                p.name,
                due - started
            );
        }
        if let Some(r) = &p.recovery {
            let band = format!(
                "{:.3} ms (the highest second's before {})",
                r.band_p99_ms, r.after
            );
            let said = match (&r.unknown, r.recovered, r.not_started) {
                (Some(why), ..) => format!("unknown after {}: {why}", r.after),
                (None, true, _) => format!("p99 back within {band} after {:.0} s", r.seconds),
                (None, false, 0) => {
                    format!("p99 not back within {band} in its {:.0} s", r.seconds)
                }
                (None, false, n) => format!(
                    "not back: {n} of its arrivals never started (the backlog of {} outlasted it)",
                    r.after
                ),
            };
            let _ = writeln!(out, "  recovery of {}: {said}", p.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(start_us: u64, latency_us: u64) -> Sample {
        Sample {
            client: 0,
            txn: 0,
            end_us: start_us + latency_us,
            latency_us,
            lag_us: Some(0),
            tries: 1,
            queries: 1,
            rolled_back: false,
            error: None,
        }
    }

    fn shape(specs: &[&str]) -> Shape {
        Shape::parse(&specs.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn a_transaction_counts_in_the_phase_it_started_in() {
        let s = shape(&["2s:rate=10", "2s:rate=20"]);
        let mut p = Phases::new(&s, 1_000_000, &["t"]);
        // Started in the warm-up, ended in the first phase: the first phase's.
        p.add(&sample(900_000, 200_000));
        // Started at 2.9 s (1.9 s into phase 1), ended in phase 2 after 500 ms: phase 1's.
        p.add(&sample(2_900_000, 500_000));
        // Started at 3.0 s: phase 2's, at once.
        p.add(&sample(3_000_000, 1_000));
        let r = p.finish(4.0);
        assert_eq!((r[0].transactions, r[1].transactions), (2, 1));
        assert_eq!(r[0].latency_ms.max, 500.223);
        assert_eq!(r[1].latency_ms.max, 1.0);
        assert_eq!(r[0].tps, 1.0);
        assert_eq!(r[1].load, "rate 20/s (poisson)");
    }

    #[test]
    fn recovery_counts_the_seconds_until_p99_stays_in_the_band() {
        let s = shape(&["3s:rate=10", "1s:rate=100", "5s:rate=10"]);
        let mut p = Phases::new(&s, 0, &["t"]);
        for sec in 0..3 {
            p.add(&sample(sec * 1_000_000, 2_000));
        }
        p.add(&sample(3_000_000, 50_000));
        // After the spike: 40 ms, 30 ms, then 2 ms for three seconds.
        for (sec, lat) in [(4, 40_000), (5, 30_000), (6, 2_000), (7, 2_000), (8, 2_000)] {
            p.add(&sample(sec * 1_000_000, lat));
        }
        let r = p.finish(9.0);
        let rec = r[2].recovery.as_ref().expect("recovery after the spike");
        assert!(rec.recovered);
        assert_eq!(rec.seconds, 2.0);
        assert_eq!(rec.after, "phase2");
        assert!((rec.band_p99_ms - 2.0).abs() < 0.05, "{}", rec.band_p99_ms);
        assert!(r[0].recovery.is_none() && r[1].recovery.is_none());
        // A phase that never gets back.
        let mut p = Phases::new(&s, 0, &["t"]);
        p.add(&sample(0, 1_000));
        p.add(&sample(3_000_000, 50_000));
        for sec in 4..9 {
            p.add(&sample(sec * 1_000_000, 9_000));
        }
        let rec = p.finish(9.0)[2].recovery.clone().unwrap();
        assert!(!rec.recovered && rec.seconds == 5.0, "{rec:?}");
    }

    #[test]
    fn a_phase_whose_arrivals_never_started_has_not_recovered() {
        let s = shape(&["3s:rate=10", "1s:rate=100", "5s:rate=10"]);
        let spiked = |after: &[(u64, u64)], due: u64, started: u64| {
            let mut p = Phases::new(&s, 0, &["t"]);
            p.add(&sample(0, 1_000));
            p.add(&sample(3_000_000, 50_000));
            for (sec, lat) in after {
                p.add(&sample(sec * 1_000_000, *lat));
            }
            p.schedule(&[30, 100, due], &[30, 100, started]);
            p.finish(9.0)
        };
        // Its backlog still queued at the end: two fast ones completed, 48 never started.
        let r = spiked(&[(4, 500), (5, 500)], 50, 2);
        let rec = r[2].recovery.clone().unwrap();
        assert!(!rec.recovered && rec.not_started == 48, "{rec:?}");
        assert_eq!((r[2].due, r[2].started), (Some(50), Some(2)));
        let mut out = String::new();
        summary(&mut out, &r);
        assert!(
            out.contains("48 of its 50 scheduled arrivals never started"),
            "{out}"
        );
        assert!(
            out.contains("not back: 48 of its arrivals never started"),
            "{out}"
        );
        // Not one of its transactions completed, all started: unknown, not "0 s".
        let r = spiked(&[], 50, 50);
        let rec = r[2].recovery.clone().unwrap();
        assert!(!rec.recovered && rec.unknown.is_some(), "{rec:?}");
        assert_eq!(cells(&r[2])[5], "-");
        assert_eq!(cells(&r[2])[8], "unknown after phase2");
        // Every arrival served, in the band at once: recovered after 0 s.
        let r = spiked(&[(4, 500), (5, 500)], 50, 50);
        let rec = r[2].recovery.clone().unwrap();
        assert!(rec.recovered && rec.seconds == 0.0, "{rec:?}");
        // No transaction before the spike: no band, unknown.
        let mut p = Phases::new(&s, 0, &["t"]);
        p.add(&sample(4_000_000, 500));
        let rec = p.finish(9.0)[2].recovery.clone().unwrap();
        assert!(
            rec.unknown
                .as_deref()
                .is_some_and(|w| w.contains("no band")),
            "{rec:?}"
        );
    }

    #[test]
    fn a_run_stopped_early_divides_by_what_each_phase_ran() {
        let s = shape(&["2s:rate=10", "2s:rate=20", "2s:rate=30"]);
        let mut p = Phases::new(&s, 0, &["t"]);
        for ms in [100, 900, 2_100, 2_200, 2_300] {
            p.add(&sample(ms * 1_000, 1_000));
        }
        let r = p.finish(2.5);
        assert_eq!(r[0].ran_s, None);
        assert_eq!(r[0].tps, 1.0);
        assert_eq!(r[1].ran_s, Some(0.5));
        assert_eq!(r[1].tps, 6.0);
        assert_eq!((r[2].ran_s, r[2].tps), (Some(0.0), 0.0));
        assert_eq!(cells(&r[2])[3], "-");
        let mut out = String::new();
        summary(&mut out, &r);
        assert!(
            out.contains("phase2: cut short, 0.5 of its 2.0 s ran"),
            "{out}"
        );
        assert!(out.contains("phase3: not reached"), "{out}");
        // A run that went to its end (its measured time a hair short): nothing cut.
        let r = Phases::new(&s, 0, &["t"]).finish(5.99);
        assert!(r.iter().all(|p| p.ran_s.is_none()));
    }
}
