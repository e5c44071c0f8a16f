//! `compare`: whether two runs, or two sets of repeats, differ beyond their noise. Loads each side
//! (store run ids, `@ID` a sweep point's repeats through `Store::point_runs`, or result files),
//! checks that both ran one workload, lists what else differs, and for tps and each latency
//! percentile (p50, p90, p95, p99) gives the difference with a bootstrap confidence interval
//! (resample.rs: over repeats when both sides have 3 or more, else over per-second windows in
//! blocks) and a verdict; repeats that do not overlap are never "no difference". The intervals hold
//! for the table as a whole: each figure is judged at 1 - 0.05/k (Bonferroni). `judge_one` judges
//! one figure alone for the reports, and `NOISE_RULE` states the rule every table prints.
//! What the server's sampled sessions say about the difference is explain.rs; `--fail-if` is
//! fail_if.rs; each phase of runs whose load changed shape, phases.rs; the text, markdown and
//! JSON renderings are render.rs.

pub mod explain;
pub mod fail_if;
pub mod phases;
pub mod render;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::resample::{self, Sample, Scheme};
use crate::store::Store;

/// The confidence of the table as a whole.
pub const CONFIDENCE: f64 = 0.95;
pub use resample::{RESAMPLES, SEED};
/// Fewest runs on each side for the bootstrap over repeats.
pub const MIN_REPEATS: usize = 3;
/// Fewest measured seconds on each side for the bootstrap over seconds: fewer cannot tell how
/// long the seconds remember each other.
pub const MIN_SECONDS: usize = 10;
/// Fewer independent values than this on a side (its seconds weighed by their autocorrelation)
/// leave "no difference" undecidable: the verdict is then that the noise is unknown.
pub const MIN_INDEPENDENT: f64 = 3.0;
/// The rule every verdict on a difference follows (`compare`, and each report's profiles
/// against their baseline), stated once.
pub const NOISE_RULE: &str = "A difference is judged as `dbduel compare` judges it: the 95% confidence interval of the ratio of the two sides' means, by bootstrap over the repeats when each side has 3 or more, over the measured seconds (in blocks, weighed by how much they remember each other) otherwise. Faster or slower when the interval excludes no change; no difference beyond the noise when it holds no change and the sides' repeats overlap; noise unknown, with what to run, when the data cannot tell (too few seconds, or repeats that do not overlap but are too few to judge).";

/// Options that differ between any two runs and say nothing about them.
const NOT_DIFFERENCES: &[&str] = &[
    "options.seed",
    "options.progress_s",
    // TPC-C's NURand constants, drawn for each run (clause 2.1.6.1).
    "workload.settings.nurand_run_constants",
];

/// A figure compared: its name, whether more is better, and where a run and a second keep it.
pub struct FigureDef {
    pub name: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// The run's figure: a path in the result record.
    run: &'static [&'static str],
    /// The second's figure: a field of a window.
    second: &'static str,
}

/// The capacity under a latency objective (`tune --slo`): a figure a whole run has, judged
/// over repeats only (`judge_repeats`), never read from a result.
pub const CAPACITY: FigureDef = FigureDef {
    name: "capacity",
    unit: "tps",
    higher_is_better: true,
    run: &[],
    second: "",
};

/// CH-benCHmark's figures, the terminals' NOPM and the streams' QphH: judged over repeats
/// only (`judge_repeats`), by the reports' sides of a mix (`report::sides`).
pub const NOPM: FigureDef = FigureDef {
    name: "nopm",
    unit: "NOPM",
    higher_is_better: true,
    run: &[],
    second: "",
};
pub const QPHH: FigureDef = FigureDef {
    name: "qphh",
    unit: "QphH",
    higher_is_better: true,
    run: &[],
    second: "",
};

/// The workloads' own figures (`WorkloadEntry::headline`), whole runs' figures read from a
/// result's `workload.metrics`: judged over repeats only, first, for a workload that has them.
pub const HEADLINES: &[FigureDef] = &[
    own("nopm", "NOPM", &["workload", "metrics", "nopm"]),
    own("qphh", "QphH", &["workload", "metrics", "qphh"]),
    own(
        "qphh_at_size",
        "QphH@Size",
        &["workload", "metrics", "qphh_at_size"],
    ),
    own(
        "power_at_size",
        "Power@Size",
        &["workload", "metrics", "power_at_size"],
    ),
    own(
        "throughput_at_size",
        "Throughput@Size",
        &["workload", "metrics", "throughput_at_size"],
    ),
];

/// A workload's own figure: more is better, no value per second.
const fn own(name: &'static str, unit: &'static str, run: &'static [&'static str]) -> FigureDef {
    FigureDef {
        name,
        unit,
        higher_is_better: true,
        run,
        second: "",
    }
}

/// The figures compared for a workload: its own (`HEADLINES`, those the workload ranks by),
/// then tps and the latency percentiles.
pub fn figures_for(workload: &str) -> Vec<&'static FigureDef> {
    let own = crate::workload::headline(workload);
    HEADLINES
        .iter()
        .filter(|f| own.contains(&f.name))
        .chain(FIGURES)
        .collect()
}

pub const FIGURES: &[FigureDef] = &[
    FigureDef {
        name: "tps",
        unit: "tps",
        higher_is_better: true,
        run: &["tps"],
        second: "transactions",
    },
    latency("p50", &["latency_ms", "p50"], "p50_ms"),
    latency("p90", &["latency_ms", "p90"], "p90_ms"),
    latency("p95", &["latency_ms", "p95"], "p95_ms"),
    latency("p99", &["latency_ms", "p99"], "p99_ms"),
];

/// A latency percentile: less is better.
const fn latency(
    name: &'static str,
    run: &'static [&'static str],
    second: &'static str,
) -> FigureDef {
    FigureDef {
        name,
        unit: "ms",
        higher_is_better: false,
        run,
        second,
    }
}

/// One run as `compare` reads it: where it came from and its result record.
pub struct Run {
    pub source: String,
    pub result: Value,
    /// The sweep profile it ran under (store runs only).
    pub profile: Option<String>,
}

/// One side: a run or a set of repeats.
pub struct Side {
    pub label: String,
    pub runs: Vec<Run>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Percentile bootstrap over the repeats of each side.
    Repeats,
    /// Circular block bootstrap over the measured seconds of each side.
    Seconds,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    NoDifference,
    /// The noise could not be estimated (too few seconds, figures missing).
    Unknown,
}

#[derive(Debug, Clone, Serialize)]
pub struct SideSummary {
    pub label: String,
    pub sources: Vec<String>,
    pub runs: usize,
    pub engine: String,
    pub workload: String,
    pub variant: String,
    /// Measured seconds resampled (the seconds method), over all the side's runs.
    pub seconds: Option<usize>,
    /// Block length of the seconds method, chosen from the tps series' autocorrelation.
    pub block_s: Option<usize>,
}

/// A setting that differs between the sides (first run of each).
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub name: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FigureComparison {
    pub name: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// The side's figure: its run's, or the mean of its runs'.
    pub a: f64,
    pub b: f64,
    pub difference: f64,
    pub difference_pct: f64,
    /// The interval of the difference at `per_figure_confidence`.
    pub ci: Option<[f64; 2]>,
    pub ci_pct: Option<[f64; 2]>,
    pub verdict: Verdict,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: SideSummary,
    pub b: SideSummary,
    pub differences: Vec<Difference>,
    pub method: Method,
    pub confidence: f64,
    pub per_figure_confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    pub figures: Vec<FigureComparison>,
    pub fail_if: Vec<fail_if::Judgement>,
    pub failed: bool,
    /// Why the sides differ, from their sampled server sessions (explain.rs).
    pub explanation: explain::Explanation,
    /// Runs whose load changed shape: each phase both sides ran, compared (phases.rs); the
    /// phases only one side ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<phases::PhaseComparison>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases_unmatched: Vec<String>,
}

/// What a side's argument names.
#[derive(Debug, Clone, PartialEq)]
pub enum SideSpec {
    /// Store runs: one, or repeats as a comma list.
    Ids(Vec<i64>),
    /// `@ID`: every repeat of run ID's sweep point.
    Point(i64),
    /// Result files (`run --json`), comma-separated.
    Files(Vec<PathBuf>),
}

/// Read a side's argument: `@ID`, `ID[,ID...]`, or `FILE[,FILE...]`.
pub fn parse_side(which: &str, text: &str) -> Result<SideSpec, Error> {
    let bad = |why: String| {
        Error::Usage(format!(
            "compare {which} '{text}': {why}; give a run id of the store (see `dbduel results list`), \
             ids of repeats (3,4,5), @ID for every repeat of run ID's sweep point, or result files (run --json)"
        ))
    };
    let text = text.trim();
    if let Some(id) = text.strip_prefix('@') {
        return id
            .trim()
            .parse()
            .map(SideSpec::Point)
            .map_err(|_| bad(format!("'{id}' after @ is not a run id")));
    }
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(bad("an empty item".into()));
    }
    if let Ok(ids) = parts.iter().map(|p| p.parse::<i64>()).collect() {
        return Ok(SideSpec::Ids(ids));
    }
    let files: Vec<PathBuf> = parts.iter().map(PathBuf::from).collect();
    if let Some(missing) = files.iter().find(|f| !f.is_file()) {
        return Err(bad(format!(
            "no such file or run id: {}",
            missing.display()
        )));
    }
    Ok(SideSpec::Files(files))
}

/// Load a side's runs from the store (opened on first need) or from its files.
pub fn load(
    spec: &SideSpec,
    label: &str,
    results: &Path,
    store: &mut Option<Store>,
) -> Result<Side, Error> {
    let runs = match spec {
        SideSpec::Files(files) => files
            .iter()
            .map(|f| load_file(f))
            .collect::<Result<_, _>>()?,
        SideSpec::Ids(ids) => store_runs(open(results, store)?, ids)?,
        SideSpec::Point(id) => {
            let store = open(results, store)?;
            let ids = store.point_runs(*id)?;
            store_runs(store, &ids)?
        }
    };
    let side = Side {
        label: label.to_string(),
        runs,
    };
    one_workload(&side)?;
    Ok(side)
}

fn open<'a>(results: &Path, store: &'a mut Option<Store>) -> Result<&'a Store, Error> {
    if store.is_none() {
        *store = Some(Store::open_existing(
            results,
            "give --results, or compare result files (`run --json`)",
        )?);
    }
    Ok(store.as_ref().expect("opened above"))
}

fn store_runs(store: &Store, ids: &[i64]) -> Result<Vec<Run>, Error> {
    let rows = store.list(None)?;
    ids.iter()
        .map(|&id| {
            let result = store.result(id)?;
            Ok(Run {
                source: format!("run {id}"),
                result,
                profile: rows.iter().find(|r| r.id == id).map(|r| r.profile.clone()),
            })
        })
        .collect()
}

pub(crate) fn load_file(path: &Path) -> Result<Run, Error> {
    let text = std::fs::read_to_string(path).map_err(Error::io("read", path))?;
    let result: Value = serde_json::from_str(&text).map_err(|e| {
        Error::Usage(format!(
            "{}: not a dbduel result file ({e}); give the file `dbduel run --json` wrote",
            path.display()
        ))
    })?;
    if !result["tps"].is_number() || !result["windows"].is_array() {
        return Err(Error::Usage(format!(
            "{}: not a dbduel result file (no tps or windows); give the file `dbduel run --json` wrote",
            path.display()
        )));
    }
    if let Some(why) = impossible(&result) {
        return Err(Error::Usage(format!(
            "{}: {why}: no run measures that; give the file `dbduel run --json` wrote, unedited",
            path.display()
        )));
    }
    Ok(Run {
        source: path.display().to_string(),
        result,
        profile: None,
    })
}

/// A figure no measurement can give (negative, infinite, not a number), named; None when the
/// figures compare reads are all possible: tps, the latency percentiles, each second's counts.
fn impossible(result: &Value) -> Option<String> {
    let bad = |v: &Value| v.as_f64().is_some_and(|x| !x.is_finite() || x < 0.0);
    if bad(&result["tps"]) {
        return Some(format!("tps is {}", result["tps"]));
    }
    if let Some((name, v)) = result["latency_ms"]
        .as_object()
        .and_then(|l| l.iter().find(|(_, v)| bad(v)))
    {
        return Some(format!("latency {name} is {v} ms"));
    }
    let windows = result["windows"].as_array()?;
    windows.iter().enumerate().find_map(|(i, w)| {
        let (name, v) = w.as_object()?.iter().find(|(_, v)| bad(v))?;
        Some(format!("second {} has {name} {v}", i + 1))
    })
}

/// The workload and variant a run ran.
fn workload_of(run: &Run) -> (String, String) {
    let w = &run.result["workload"];
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    (s(&w["name"]), s(&w["variant"]))
}

fn one_workload(side: &Side) -> Result<(), Error> {
    let first = &side.runs[0];
    for run in &side.runs[1..] {
        if workload_of(run) != workload_of(first) {
            return Err(Error::Usage(format!(
                "compare {}: {} ran {} and {} ran {}: the runs of a side must be repeats of one workload",
                side.label,
                first.source,
                workload_of(first).0 + " " + &workload_of(first).1,
                run.source,
                workload_of(run).0 + " " + &workload_of(run).1,
            )));
        }
    }
    Ok(())
}

/// Refuse a run on both sides (the same file twice, a copy of it, one store id twice): its
/// difference from itself is no comparison. A run is known by its start, server and figures.
pub fn distinct(a: &Side, b: &Side) -> Result<(), Error> {
    let key = |r: &Run| {
        let v = &r.result;
        (
            v["started_at"].to_string(),
            v["engine"]["dsn"].to_string(),
            v["transactions"].to_string(),
            v["tps"].to_string(),
        )
    };
    for ra in &a.runs {
        if let Some(rb) = b.runs.iter().find(|rb| key(rb) == key(ra)) {
            return Err(Error::Usage(format!(
                "{} (A) and {} (B) are the same run (started {}): compare two different runs",
                ra.source, rb.source, ra.result["started_at"]
            )));
        }
    }
    Ok(())
}

/// Compare side b against side a.
pub fn compare(a: &Side, b: &Side) -> Result<Comparison, Error> {
    let (wa, wb) = (workload_of(&a.runs[0]), workload_of(&b.runs[0]));
    if wa != wb {
        return Err(Error::Usage(format!(
            "A ran {} {} and B ran {} {}: compare runs of one workload and variant",
            wa.0, wa.1, wb.0, wb.1
        )));
    }
    let method = method_for(a, b);
    // A workload's own figures a side's runs do not all have (an older dbduel's, a TPC-H
    // run of some queries) are left out.
    let defs: Vec<&'static FigureDef> = figures_for(&wa.0)
        .into_iter()
        .filter(|f| {
            !f.second.is_empty()
                || [a, b]
                    .iter()
                    .all(|s| s.runs.iter().all(|r| run_value(r, f).is_some()))
        })
        .collect();
    let per_figure = 1.0 - (1.0 - CONFIDENCE) / defs.len() as f64;
    let figures = defs
        .iter()
        .enumerate()
        .map(|(i, f)| figure(f, a, b, method, per_figure, SEED + i as u64))
        .collect();
    let (phases, phases_unmatched) = phases::compare(a, b);
    Ok(Comparison {
        a: side_summary(a, method),
        b: side_summary(b, method),
        differences: differences(&a.runs[0], &b.runs[0]),
        method,
        confidence: CONFIDENCE,
        per_figure_confidence: per_figure,
        resamples: RESAMPLES,
        seed: SEED,
        figures,
        fail_if: Vec::new(),
        failed: false,
        explanation: explain::explain(a, b, method),
        phases,
        phases_unmatched,
    })
}

fn side_summary(side: &Side, method: Method) -> SideSummary {
    let first = &side.runs[0];
    let (workload, variant) = workload_of(first);
    let tps = seconds(side, &FIGURES[0]);
    let seconds_method = method == Method::Seconds;
    SideSummary {
        label: side.label.clone(),
        sources: side.runs.iter().map(|r| r.source.clone()).collect(),
        runs: side.runs.len(),
        engine: first.result["engine"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        workload,
        variant,
        seconds: seconds_method.then_some(tps.len()),
        block_s: seconds_method.then(|| resample::block_length(&tps)),
    }
}

/// A run's figure, when its record has it.
fn run_value(run: &Run, f: &FigureDef) -> Option<f64> {
    f.run
        .iter()
        .fold(&run.result, |v, key| &v[*key])
        .as_f64()
        .filter(|v| v.is_finite())
}

/// The measured seconds of a side's runs, one after the other: the warm-up and each run's
/// last second (usually partial) left out, and seconds without the figure skipped.
fn seconds(side: &Side, f: &FigureDef) -> Vec<f64> {
    let mut out = Vec::new();
    for run in &side.runs {
        let windows = run.result["windows"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let measured: Vec<&Value> = windows.iter().filter(|w| w["warmup"] == false).collect();
        let whole = &measured[..measured.len().saturating_sub(1)];
        out.extend(whole.iter().filter_map(|w| w[f.second].as_f64()));
    }
    out
}

/// One figure compared: values, difference, interval and verdict.
fn figure(
    f: &'static FigureDef,
    a: &Side,
    b: &Side,
    method: Method,
    level: f64,
    seed: u64,
) -> FigureComparison {
    let runs = |s: &Side| -> Vec<f64> { s.runs.iter().filter_map(|r| run_value(r, f)).collect() };
    let (ra, rb) = (runs(a), runs(b));
    let samples = match method {
        Method::Repeats => Ok((
            ra.clone(),
            rb.clone(),
            Scheme::Independent,
            Scheme::Independent,
        )),
        // A whole run's figure has no seconds to resample.
        Method::Seconds if f.second.is_empty() => Err(format!(
            "{} and {} runs, fewer than {MIN_REPEATS} a side: a whole run's figure is judged over repeats; give --repeats {MIN_REPEATS} or more",
            ra.len(),
            rb.len()
        )),
        Method::Seconds => second_samples(f, a, b),
    };
    judge(f, &ra, &rb, samples, level, seed)
}

/// Values of a figure that only whole runs have, one a run (a tune's capacities under an
/// objective), b's against a's by the same rule over repeats; too few repeats are not judged.
/// A side none of whose repeats found any (all 0: no rate met the objectives) has no ratio to
/// take: the other side, every repeat of which found some, is beyond it whatever the noise.
pub fn judge_repeats(f: &'static FigureDef, ra: &[f64], rb: &[f64]) -> FigureComparison {
    let enough = ra.len().min(rb.len()) >= MIN_REPEATS;
    let none = |v: &[f64]| v.iter().all(|x| *x == 0.0);
    let some = |v: &[f64]| v.iter().all(|x| *x > 0.0);
    if enough && (none(ra) && some(rb) || some(ra) && none(rb)) {
        let empty = if none(ra) { "A" } else { "B" };
        let mut out = judge(
            f,
            ra,
            rb,
            Err(format!(
                "every repeat of side {empty} found none (0), every repeat of the other some"
            )),
            CONFIDENCE,
            SEED,
        );
        out.verdict = if some(rb) == f.higher_is_better {
            Verdict::Faster
        } else {
            Verdict::Slower
        };
        return out;
    }
    let samples = if !enough {
        Err(format!(
            "{} and {} runs measured, fewer than {MIN_REPEATS} a side: give --repeats {MIN_REPEATS} or more (failed runs are not counted)",
            ra.len(),
            rb.len()
        ))
    } else {
        Ok((
            ra.to_vec(),
            rb.to_vec(),
            Scheme::Independent,
            Scheme::Independent,
        ))
    };
    judge(f, ra, rb, samples, CONFIDENCE, SEED + FIGURES.len() as u64)
}

/// A figure's values a run on each side, and the samples its interval resamples (or why
/// there are none), judged.
fn judge(
    f: &'static FigureDef,
    ra: &[f64],
    rb: &[f64],
    samples: Result<Samples, String>,
    level: f64,
    seed: u64,
) -> FigureComparison {
    let (va, vb) = (resample::mean(ra), resample::mean(rb));
    let mut out = FigureComparison {
        name: f.name,
        unit: f.unit,
        higher_is_better: f.higher_is_better,
        a: va,
        b: vb,
        difference: vb - va,
        difference_pct: (vb / va - 1.0) * 100.0,
        ci: None,
        ci_pct: None,
        verdict: Verdict::Unknown,
        note: None,
    };
    let (sa, sb, scheme_a, scheme_b) = match samples {
        Ok(s) => s,
        Err(note) => {
            out.note = Some(note);
            return out;
        }
    };
    if !(va.is_finite() && vb.is_finite() && va > 0.0) {
        out.note = Some(format!("no {} on a side", f.name));
        return out;
    }
    let interval = resample::ratio_interval(
        &Sample {
            values: &sa,
            scheme: scheme_a,
        },
        &Sample {
            values: &sb,
            scheme: scheme_b,
        },
        level,
        RESAMPLES,
        seed,
    );
    let Some((lo, hi)) = interval else {
        out.note = Some("no noise estimate (a side's mean is zero)".into());
        return out;
    };
    // The interval of the samples' ratio, moved onto the figures' own ratio (a run's p99 is
    // not the mean of its seconds' p99).
    let shift = (vb / va) / (resample::mean(&sb) / resample::mean(&sa));
    let (lo, hi) = (lo * shift, hi * shift);
    out.ci_pct = Some([(lo - 1.0) * 100.0, (hi - 1.0) * 100.0]);
    out.ci = Some([(lo - 1.0) * va, (hi - 1.0) * va]);
    out.verdict = verdict(lo, hi, f.higher_is_better);
    // Seconds that remember each other strongly are worth only a few independent values:
    // an interval over fewer than MIN_INDEPENDENT cannot tell "no difference" from "no idea".
    let effective = [("A", &sa, scheme_a), ("B", &sb, scheme_b)].map(|(name, values, scheme)| {
        (
            name,
            values.len(),
            resample::effective_size(&Sample { values, scheme }),
        )
    });
    let few = effective.iter().find(|(_, _, e)| *e < MIN_INDEPENDENT);
    if let (Verdict::NoDifference, Some((name, n, e))) = (out.verdict, few) {
        out.verdict = Verdict::Unknown;
        out.note = Some(format!(
            "too few independent seconds: side {name}'s {n} seconds follow each other so closely that they count as {e:.1} independent values (under {MIN_INDEPENDENT}): run longer (-T), or {MIN_REPEATS} repeats a side"
        ));
    }
    // Repeats that do not overlap are never "no difference": too few to judge, at most.
    if let (Verdict::NoDifference, Some(above)) = (out.verdict, apart(ra, rb)) {
        out.verdict = Verdict::Unknown;
        out.note = Some(format!(
            "every repeat of B is {} every repeat of A, but {} and {} repeats are too few to judge at this confidence: run {} or more repeats a side",
            if above { "above" } else { "below" },
            ra.len(),
            rb.len(),
            MIN_REPEATS.max(ra.len().max(rb.len()) + 2)
        ));
    }
    out
}

/// Whether two sides of two or more repeats each do not overlap: Some(true) when every
/// value of b is above every value of a, Some(false) when below.
fn apart(a: &[f64], b: &[f64]) -> Option<bool> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let range = |v: &[f64]| -> (f64, f64) {
        (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    };
    let ((a_lo, a_hi), (b_lo, b_hi)) = (range(a), range(b));
    if b_lo > a_hi {
        Some(true)
    } else if b_hi < a_lo {
        Some(false)
    } else {
        None
    }
}

/// One figure of b against a, alone (at the full confidence), by the rule of `compare`: the
/// report's profiles against their baseline. None when the figure is not one `compare` knows.
pub fn judge_one(name: &str, a: &Side, b: &Side) -> Option<FigureComparison> {
    let (i, f) = FIGURES.iter().enumerate().find(|(_, f)| f.name == name)?;
    Some(figure(
        f,
        a,
        b,
        method_for(a, b),
        CONFIDENCE,
        SEED + i as u64,
    ))
}

/// Repeats when each side has enough of them, seconds otherwise.
fn method_for(a: &Side, b: &Side) -> Method {
    if a.runs.len() >= MIN_REPEATS && b.runs.len() >= MIN_REPEATS {
        Method::Repeats
    } else {
        Method::Seconds
    }
}

type Samples = (Vec<f64>, Vec<f64>, Scheme, Scheme);

/// Each side's seconds and its block length, or why they cannot be resampled.
fn second_samples(f: &FigureDef, a: &Side, b: &Side) -> Result<Samples, String> {
    let short = seconds(a, &FIGURES[0])
        .len()
        .min(seconds(b, &FIGURES[0]).len());
    if short < MIN_SECONDS {
        return Err(format!(
            "{short} measured second(s) on a side, fewer than {MIN_SECONDS}: run longer (-T 30 or more), or {MIN_REPEATS} repeats a side"
        ));
    }
    let (sa, sb) = (seconds(a, f), seconds(b, f));
    if sa.is_empty() || sb.is_empty() {
        return Err(format!(
            "a side's per-second windows hold no {} (runs recorded by an older dbduel)",
            f.name
        ));
    }
    let blocks = |v: &[f64]| Scheme::Blocks {
        block: resample::block_length(v),
    };
    let (ba, bb) = (blocks(&sa), blocks(&sb));
    Ok((sa, sb, ba, bb))
}

/// The verdict of an interval of b/a: above 1 is "b higher", below 1 is "b lower".
fn verdict(lo: f64, hi: f64, higher_is_better: bool) -> Verdict {
    let higher = lo > 1.0;
    let lower = hi < 1.0;
    match (higher, lower) {
        (false, false) => Verdict::NoDifference,
        (true, _) if higher_is_better => Verdict::Faster,
        (true, _) => Verdict::Slower,
        (_, true) if higher_is_better => Verdict::Slower,
        (_, true) => Verdict::Faster,
    }
}

/// What was set differently: engine, server version, profile, the engine's and the
/// workload's settings, the run's options, dbduel's version.
fn differences(a: &Run, b: &Run) -> Vec<Difference> {
    let (fa, fb) = (facts(a), facts(b));
    let mut names: Vec<&String> = fa.keys().chain(fb.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| fa.get(*n) != fb.get(*n) && !NOT_DIFFERENCES.contains(&n.as_str()))
        .map(|n| Difference {
            name: n.clone(),
            a: fa.get(n).cloned(),
            b: fb.get(n).cloned(),
        })
        .collect()
}

fn facts(run: &Run) -> BTreeMap<String, String> {
    let r = &run.result;
    let mut out = BTreeMap::new();
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for key in ["name", "server_version", "isolation"] {
        out.insert(format!("engine.{key}"), text(&r["engine"][key]));
    }
    out.insert("dbduel_version".into(), text(&r["dbduel_version"]));
    out.insert("workload.scale".into(), text(&r["workload"]["scale"]));
    for (section, path) in [
        ("engine.settings", &r["engine"]["settings"]),
        ("workload.settings", &r["workload"]["settings"]),
        ("options", &r["options"]),
    ] {
        if let Some(map) = path.as_object() {
            for (k, v) in map {
                out.insert(format!("{section}.{k}"), text(v));
            }
        }
    }
    if let Some(p) = &run.profile {
        out.insert("profile".into(), p.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Capacities a repeat each, judged over the repeats: apart beyond the noise, within it,
    /// too few to judge, and a side that found none in any repeat.
    #[test]
    fn capacities_judged_over_repeats() {
        let apart = judge_repeats(
            &CAPACITY,
            &[100.0, 101.0, 99.0, 100.0],
            &[150.0, 151.0, 149.0, 150.0],
        );
        assert_eq!(apart.verdict, Verdict::Faster);
        assert!(apart.ci_pct.is_some_and(|[lo, _]| lo > 0.0));
        let within = judge_repeats(&CAPACITY, &[100.0, 130.0, 90.0], &[110.0, 95.0, 125.0]);
        assert_eq!(within.verdict, Verdict::NoDifference);
        let few = judge_repeats(&CAPACITY, &[100.0, 101.0], &[150.0, 151.0]);
        assert_eq!(few.verdict, Verdict::Unknown);
        assert!(few.note.unwrap().contains("--repeats 3"));
        // No ratio to a side that found nothing: the side that always found some is beyond it.
        let none = judge_repeats(&CAPACITY, &[0.0, 0.0, 0.0], &[10.0, 12.0, 11.0]);
        assert_eq!(none.verdict, Verdict::Faster);
        assert!(none.note.unwrap().contains("side A found none"));
        let lost = judge_repeats(&CAPACITY, &[10.0, 12.0, 11.0], &[0.0, 0.0, 0.0]);
        assert_eq!(lost.verdict, Verdict::Slower);
        // ... but one repeat of it that found some leaves the judgement to the interval.
        let once = judge_repeats(&CAPACITY, &[0.0, 0.0, 11.0], &[10.0, 12.0, 11.0]);
        assert!(once.note.is_none_or(|n| !n.contains("found none")));
    }

    fn run(tps: &[f64], p99: f64, variant: &str) -> Run {
        let windows: Vec<Value> = tps
            .iter()
            .enumerate()
            .map(|(i, t)| {
                serde_json::json!({"t": i + 1, "warmup": false, "transactions": t,
                    "p50_ms": 1.0, "p90_ms": 2.0, "p95_ms": 3.0, "p99_ms": p99})
            })
            .collect();
        let mean = resample::mean(tps);
        Run {
            source: "test".into(),
            result: serde_json::json!({
                "tps": mean, "latency_ms": {"p50": 1.0, "p90": 2.0, "p95": 3.0, "p99": p99},
                "windows": windows, "engine": {"name": "sqlite", "settings": {}},
                "workload": {"name": "tpcb", "variant": variant, "settings": {}},
                "options": {"clients": 1}
            }),
            profile: None,
        }
    }

    fn side(runs: Vec<Run>) -> Side {
        Side {
            label: "x".into(),
            runs,
        }
    }

    #[test]
    fn repeats_that_do_not_overlap_are_never_no_difference() {
        // Two repeats a side, every B above every A, but each run's seconds swing so widely
        // that the interval holds no change: the verdict says what to run, not "no difference".
        let swing = |base: f64| -> Vec<f64> {
            (0..20)
                .map(|i| if i % 2 == 0 { base * 0.2 } else { base * 1.8 })
                .collect()
        };
        let a = side(vec![
            run(&swing(100.0), 5.0, "v"),
            run(&swing(102.0), 5.0, "v"),
        ]);
        let b = side(vec![
            run(&swing(104.0), 5.0, "v"),
            run(&swing(106.0), 5.0, "v"),
        ]);
        let c = judge_one("tps", &a, &b).unwrap();
        assert_ne!(c.verdict, Verdict::NoDifference, "{c:?}");
        if c.verdict == Verdict::Unknown {
            let note = c.note.unwrap_or_default();
            assert!(note.contains("every repeat of B is above"), "{note}");
        }
        // Overlapping repeats with the same swing stay "no difference".
        let b = side(vec![
            run(&swing(101.0), 5.0, "v"),
            run(&swing(99.0), 5.0, "v"),
        ]);
        assert_eq!(
            judge_one("tps", &a, &b).unwrap().verdict,
            Verdict::NoDifference
        );
        assert_eq!(apart(&[1.0, 2.0], &[3.0, 4.0]), Some(true));
        assert_eq!(apart(&[3.0, 4.0], &[1.0, 2.0]), Some(false));
        assert_eq!(apart(&[1.0, 3.0], &[2.0, 4.0]), None);
        assert_eq!(apart(&[1.0], &[4.0]), None);
    }

    #[test]
    fn doctored_figures_are_refused() {
        let w = serde_json::json!({"t": 1, "transactions": 100, "p99_ms": 2.0});
        let good = serde_json::json!({"tps": 100.0, "latency_ms": {"p99": 2.0}, "windows": [w]});
        assert_eq!(impossible(&good), None);
        for (key, path, value) in [
            ("tps", None, serde_json::json!(-1e308)),
            ("latency_ms", Some("p99"), serde_json::json!(-3.0)),
            ("windows", Some("transactions"), serde_json::json!(-5)),
        ] {
            let mut r = good.clone();
            match (key, path) {
                ("windows", Some(f)) => r["windows"][0][f] = value,
                (k, Some(f)) => r[k][f] = value,
                (k, None) => r[k] = value,
            }
            assert!(impossible(&r).is_some(), "{r}");
        }
    }

    #[test]
    fn sides_are_parsed() {
        assert_eq!(parse_side("A", "7").unwrap(), SideSpec::Ids(vec![7]));
        assert_eq!(
            parse_side("A", "3, 4,5").unwrap(),
            SideSpec::Ids(vec![3, 4, 5])
        );
        assert_eq!(parse_side("A", "@12").unwrap(), SideSpec::Point(12));
        let e = parse_side("B", "@x").unwrap_err().to_string();
        assert!(e.contains("compare B '@x'"), "{e}");
        let e = parse_side("A", "/no/such.json").unwrap_err().to_string();
        assert!(e.contains("no such file or run id: /no/such.json"), "{e}");
    }

    #[test]
    fn seconds_method_finds_a_slower_run_and_not_an_equal_one() {
        let steady: Vec<f64> = (0..20).map(|i| 100.0 + (i % 3) as f64).collect();
        let slow: Vec<f64> = steady.iter().map(|t| t * 0.8).collect();
        let a = side(vec![run(&steady, 5.0, "tpcb-like")]);
        let b = side(vec![run(&slow, 5.0, "tpcb-like")]);
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.method, Method::Seconds);
        assert_eq!(c.figures[0].verdict, Verdict::Slower);
        assert!((c.figures[0].difference_pct + 20.0).abs() < 1.0);
        let same = compare(&a, &a).unwrap();
        assert!(same.figures.iter().all(|f| f.verdict != Verdict::Slower));
        assert_eq!(same.figures[0].verdict, Verdict::NoDifference);
        assert!(same.differences.is_empty());
    }

    #[test]
    fn repeats_method_and_latency_direction() {
        let runs = |p99s: &[f64]| {
            side(
                p99s.iter()
                    .map(|&p| run(&[100.0; 6], p, "tpcb-like"))
                    .collect(),
            )
        };
        let c = compare(&runs(&[5.0, 5.1, 4.9]), &runs(&[9.0, 9.2, 8.9])).unwrap();
        assert_eq!(c.method, Method::Repeats);
        let p99 = c.figures.iter().find(|f| f.name == "p99").unwrap();
        assert_eq!(p99.verdict, Verdict::Slower);
        assert!((c.per_figure_confidence - 0.99).abs() < 1e-9);
    }

    /// A simulated run of one configuration: 30 seconds whose throughput remembers the second
    /// before (AR(1), rho 0.5), latencies following the throughput with noise of their own.
    fn simulated(rng: &mut rand::rngs::SmallRng) -> Run {
        use rand::RngExt;
        let mut x = 0.0;
        let windows: Vec<Value> = (0..31)
            .map(|i| {
                x = 0.5 * x + rng.random_range(-60.0..60.0);
                let tps = 1000.0 + x;
                let lat = |base: f64, rng: &mut rand::rngs::SmallRng| {
                    base * 1000.0 / tps * (1.0 + rng.random_range(-0.1..0.1))
                };
                serde_json::json!({"t": i + 1, "warmup": false, "transactions": tps.round(),
                    "p50_ms": lat(1.0, rng), "p90_ms": lat(2.0, rng), "p95_ms": lat(3.0, rng),
                    "p99_ms": lat(5.0, rng)})
            })
            .collect();
        let figure = |key: &str| {
            resample::mean(
                &windows[..30]
                    .iter()
                    .map(|w| w[key].as_f64().unwrap())
                    .collect::<Vec<_>>(),
            )
        };
        Run {
            source: "simulated".into(),
            result: serde_json::json!({
                "tps": figure("transactions"),
                "latency_ms": {"p50": figure("p50_ms"), "p90": figure("p90_ms"),
                    "p95": figure("p95_ms"), "p99": figure("p99_ms")},
                "windows": windows, "engine": {"name": "sqlite", "settings": {}},
                "workload": {"name": "tpcb", "variant": "tpcb-like", "settings": {}},
                "options": {"clients": 1}
            }),
            profile: None,
        }
    }

    /// The promise: two runs of one configuration are judged "no difference" on every
    /// figure of the table in at least 19 of 20 trials.
    #[test]
    fn equal_runs_show_no_difference_in_19_of_20_tables() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(20);
        let mut clean = 0;
        for _ in 0..20 {
            let a = side(vec![simulated(&mut rng)]);
            let b = side(vec![simulated(&mut rng)]);
            let c = compare(&a, &b).unwrap();
            assert!(c.figures.iter().all(|f| f.verdict != Verdict::Unknown));
            clean += usize::from(c.figures.iter().all(|f| f.verdict == Verdict::NoDifference));
        }
        assert!(
            clean >= 19,
            "{clean} of 20 tables without a false difference"
        );
    }

    /// A TPC-H run: its queries' tps, and its own figures in `workload.metrics`.
    fn tpch(tps: f64, qphh: f64) -> Run {
        let mut r = run(&[tps; 12], 5.0, "power");
        r.result["workload"] = serde_json::json!({"name": "tpch", "variant": "power",
            "metrics": {"qphh_at_size": qphh, "power_at_size": qphh}});
        r
    }

    #[test]
    fn a_workloads_own_figures_come_first_judged_over_repeats() {
        let names = |c: &Comparison| c.figures.iter().map(|f| f.name).collect::<Vec<_>>();
        // One run a side: the own figures shown, not judged (no seconds to resample).
        let c = compare(&side(vec![tpch(1.0, 100.0)]), &side(vec![tpch(1.0, 200.0)])).unwrap();
        assert_eq!(names(&c)[..3], ["qphh_at_size", "power_at_size", "tps"]);
        assert_eq!(c.figures[0].verdict, Verdict::Unknown);
        assert!(
            c.figures[0].note.as_ref().unwrap().contains("--repeats 3"),
            "{:?}",
            c.figures[0].note
        );
        // Three repeats a side apart: B's QphH@Size is higher, whatever tps says.
        let a = side((0..3).map(|i| tpch(1.0, 100.0 + f64::from(i))).collect());
        let b = side((0..3).map(|i| tpch(1.0, 200.0 + f64::from(i))).collect());
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.figures[0].name, "qphh_at_size");
        assert_eq!(c.figures[0].verdict, Verdict::Faster);
        // tpcb has none of them; --fail-if on one it lacks is refused, naming those it has.
        let t = side(vec![run(&[100.0; 12], 5.0, "tpcb-like")]);
        let c = compare(&t, &t).unwrap();
        assert_eq!(names(&c)[0], "tps");
        let cond = fail_if::parse("nopm<-5%").unwrap();
        let e = fail_if::check(&cond, &c.figures).unwrap_err().to_string();
        assert!(
            e.contains("these runs have no nopm; their figures are tps, p50"),
            "{e}"
        );
    }

    #[test]
    fn a_run_on_both_sides_is_refused() {
        let mut one = run(&[100.0; 12], 5.0, "tpcb-like");
        one.result["started_at"] = "2026-12-05T08:00:00Z".into();
        let mut other = run(&[100.0; 12], 5.0, "tpcb-like");
        other.result["started_at"] = "2026-12-05T09:00:00Z".into();
        let copy = Run {
            source: "copy.json".into(),
            result: one.result.clone(),
            profile: None,
        };
        let e = distinct(&side(vec![one]), &side(vec![other, copy]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("test (A) and copy.json (B) are the same run"),
            "{e}"
        );
    }

    #[test]
    fn too_few_seconds_or_other_workloads() {
        let a = side(vec![run(&[100.0, 101.0], 5.0, "tpcb-like")]);
        let c = compare(&a, &a).unwrap();
        assert_eq!(c.figures[0].verdict, Verdict::Unknown);
        assert!(
            c.figures[0]
                .note
                .as_ref()
                .unwrap()
                .contains("fewer than 10")
        );
        let b = side(vec![run(&[100.0; 9], 5.0, "select-only")]);
        let e = compare(&a, &b).err().unwrap().to_string();
        assert!(
            e.contains("A ran tpcb tpcb-like and B ran tpcb select-only"),
            "{e}"
        );
    }

    /// Twelve seconds drifting slowly (a swing that spans the run) count as fewer than three
    /// independent values: two such runs are not "no difference" but noise unknown.
    #[test]
    fn drifting_seconds_are_not_no_difference() {
        let drift: Vec<f64> = (0..12)
            .map(|i| 100.0 + 40.0 * (i as f64 / 3.0).sin())
            .collect();
        let a = side(vec![run(&drift, 5.0, "tpcb-like")]);
        let b = side(vec![run(
            &drift.iter().rev().copied().collect::<Vec<_>>(),
            5.0,
            "tpcb-like",
        )]);
        let c = compare(&a, &b).unwrap();
        let tps = &c.figures[0];
        assert_eq!(tps.verdict, Verdict::Unknown, "{tps:?}");
        assert!(
            tps.note
                .as_deref()
                .unwrap_or("")
                .contains("too few independent seconds"),
            "{:?}",
            tps.note
        );
    }
}
