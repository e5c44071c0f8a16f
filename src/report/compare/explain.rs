//! Why two sides differ, from the server's evidence: each side's verdict, the classes of the
//! sessions' time (`metrics::waits`) whose share moved beyond the noise, judged by
//! `SHIFT_RULE` with compare's own bootstrap (over repeats, or over the measured seconds in
//! blocks; an embedded engine's whole-run counts over repeats only), the events that took the
//! most time in them named beside (and, for locks, what the queues' heads were doing, judged
//! over repeats by `HOLDER_RULE`); and the statements whose mean time per call changed
//! (`STATEMENT_RULE`: the server's figures per statement, else the client's latencies), judged
//! over repeats, shown unjudged for single runs.

use serde::Serialize;
use serde_json::Value;

use super::{CONFIDENCE, Method, RESAMPLES, SEED, Side};
use crate::resample::{self, Sample, Scheme};

/// The least change of a class's share, in points of the sessions' time, that is named.
pub const MIN_SHIFT_POINTS: f64 = 5.0;

/// The rule the explanation follows, stated once (printed under it).
pub const SHIFT_RULE: &str = "A class of the sessions' time is named when its share of the time the run's sessions were active (in the server, or idle inside a transaction) moved by at least 5 points and the interval of that change, by the bootstrap the figures use, excludes no change; each class is judged at 1 - 0.05/k, k the classes seen on either side.";

/// The least change of a statement's mean time per call that is named, in percent.
pub const MIN_STATEMENT_PCT: f64 = 10.0;

/// How many statements a comparison shows when it cannot judge them (single runs).
const SHOWN_UNJUDGED: usize = 3;

/// The rule for statements, stated once.
pub const STATEMENT_RULE: &str = "A statement is named when its mean time per call changed by at least 10% and the interval of the ratio of its means (bootstrap over 3 or more repeats a side, at 1 - 0.05/k for k statements) excludes no change; from the server's figures per statement where every run has them, else from the latencies the clients timed. A run's mean per call is one value: with fewer repeats the largest changes are shown, not judged.";

/// The rule for the lock queues' heads, stated once.
pub const HOLDER_RULE: &str = "What the sessions at the head of the lock queues were doing is judged over repeats (3 or more a side, a head seen in every run): an event is named when its share of the lock waits whose head was seen moved by at least 5 points and the interval of that change (bootstrap over the repeats, at 1 - 0.05/k for k events seen on either side) excludes no change. Heads are counted over the whole run, not by second: with fewer repeats each side's first run is shown beside the lock class, not judged.";

/// What the lock queues' heads were doing on each side, over its runs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HolderShift {
    /// The heads' event, in the sessions' words ("Client:idle in transaction").
    pub event: String,
    /// Its share of the lock waits whose head was seen, in percent, the mean over each side's
    /// runs.
    pub a_pct: f64,
    pub b_pct: f64,
    /// The interval of the change (B - A) in points.
    pub ci_points: Option<[f64; 2]>,
    pub moved: bool,
}

/// One statement's mean time per call on each side.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StatementShift {
    /// Its text (the client's: prefixed by its transaction type).
    pub text: String,
    /// Mean milliseconds per call, the mean over each side's runs.
    pub a_ms: f64,
    pub b_ms: f64,
    /// The interval of the change in percent (None: not judged).
    pub ci_pct: Option<[f64; 2]>,
    pub moved: bool,
}

/// One class of time whose share moved, or that was judged and did not.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Shift {
    pub class: String,
    /// Share of the sessions' active time on each side, in percent.
    pub a_pct: f64,
    pub b_pct: f64,
    /// The interval of the change (B - A) in points; None when the noise is unknown.
    pub ci_points: Option<[f64; 2]>,
    /// Moved beyond the noise by `SHIFT_RULE`.
    pub moved: bool,
    /// The events of this class that took the most time on each side, with their share.
    pub events_a: Vec<(String, f64)>,
    pub events_b: Vec<(String, f64)>,
    /// For locks: what the sessions at the head of the lock queues were doing on each side
    /// (a side's first run), their two largest events as shares of the waits whose holder was
    /// seen; empty for other classes and where no holder was seen.
    pub holders_a: Vec<(String, f64)>,
    pub holders_b: Vec<(String, f64)>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Explanation {
    /// Each side's verdict, as its first run says (`limiter: says`).
    pub limited_a: Option<String>,
    pub limited_b: Option<String>,
    /// Average active sessions of each side (mean over its runs).
    pub active_a: Option<f64>,
    pub active_b: Option<f64>,
    /// Every class seen on either side, the most moved first.
    pub shifts: Vec<Shift>,
    /// Why no class could be judged, if none could.
    pub note: Option<String>,
    /// Where the statements' figures come from (`server`, `client`), None when not every run
    /// has them.
    pub statements_from: Option<String>,
    /// The statements judged (repeats: every statement in every run, the moved first) or
    /// shown (single runs: the largest changes).
    pub statements: Vec<StatementShift>,
    pub statements_judged: bool,
    /// The lock queues' heads judged by `HOLDER_RULE` (every event seen, the moved first);
    /// empty where they cannot be (fewer repeats, a run without a head seen).
    pub holders: Vec<HolderShift>,
}

impl Explanation {
    pub fn moved(&self) -> impl Iterator<Item = &Shift> {
        self.shifts.iter().filter(|s| s.moved)
    }
}

/// A run's average active sessions by class over the measured run: the sampled sessions', or
/// on an embedded engine (SQLite) its connections' own counts (`embedded_waits`), each client
/// an active session whose time went to the database's lock, to COMMIT, or to the rest (the
/// engine's work and dbduel's, in the client's process: `client`). The embedded figures are
/// the whole run's, not by second.
fn classes(run: &Value) -> Option<serde_json::Map<String, Value>> {
    if let Some(m) = run["waits"]["by_class"]
        .as_object()
        .filter(|m| run["waits"]["samples"].as_u64().unwrap_or(0) > 0 && !m.is_empty())
    {
        return Some(m.clone());
    }
    let e = &run["embedded_waits"];
    let clients = e["connections"].as_f64().filter(|n| *n > 0.0)?;
    let (lock, commit) = (e["lock_share"].as_f64()?, e["commit_share"].as_f64()?);
    let rest = (1.0 - lock - commit).max(0.0);
    Some(
        [("lock", lock), ("commit", commit), ("client", rest)]
            .into_iter()
            .map(|(c, share)| (c.to_string(), Value::from(share * clients)))
            .collect(),
    )
}

/// Whether a run's classes are an embedded engine's whole-run counts (no seconds to judge).
fn whole_run_only(run: &Value) -> bool {
    run["waits"]["samples"].as_u64().unwrap_or(0) == 0 && classes(run).is_some()
}

fn busy(by_class: &serde_json::Map<String, Value>) -> f64 {
    by_class.values().filter_map(Value::as_f64).sum()
}

/// A class's share of a run's active time, 0 where it was not seen.
fn run_share(by_class: &serde_json::Map<String, Value>, class: &str) -> f64 {
    let total = busy(by_class);
    if total <= 0.0 {
        return 0.0;
    }
    by_class.get(class).and_then(Value::as_f64).unwrap_or(0.0) / total
}

/// A class's share in each measured second of a side's runs (seconds with no active session
/// left out), the last second of each run left out as compare leaves it out.
fn second_shares(side: &Side, class: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for run in &side.runs {
        let r = &run.result;
        let measured: Vec<u64> = r["windows"]
            .as_array()
            .map(|w| {
                w.iter()
                    .filter(|w| w["warmup"] == false)
                    .filter_map(|w| w["t"].as_u64())
                    .collect()
            })
            .unwrap_or_default();
        let Some(last) = measured.last().copied() else {
            continue;
        };
        let first = measured[0];
        for s in r["waits"]["seconds"].as_array().into_iter().flatten() {
            let t = s["t"].as_u64().unwrap_or(0);
            let Some(by_class) = s["by_class"].as_object() else {
                continue;
            };
            if t < first || t >= last || busy(by_class) <= 0.0 {
                continue;
            }
            out.push(run_share(by_class, class));
        }
    }
    out
}

/// The events of `class` that took the most of a side's first run's active time.
fn events(side: &Side, class: &str) -> Vec<(String, f64)> {
    let r = &side.runs[0].result;
    let total = classes(r).map(|m| busy(&m)).unwrap_or(0.0);
    if total <= 0.0 {
        return Vec::new();
    }
    let of_class = r["waits"]["top_events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["class"] == class);
    two_largest(of_class, total)
}

/// The first two of `events` (`{"event", "sessions"}`, most first), as percentages of `total`.
fn two_largest<'a>(events: impl Iterator<Item = &'a Value>, total: f64) -> Vec<(String, f64)> {
    events
        .take(2)
        .filter_map(|e| {
            Some((
                e["event"].as_str()?.to_string(),
                100.0 * e["sessions"].as_f64()? / total,
            ))
        })
        .collect()
}

/// What the lock queues' heads were doing in a side's first run: the two largest events, as
/// percentages of the lock waits whose holder was seen (as the verdict says them).
fn holders(side: &Side) -> Vec<(String, f64)> {
    let all = side.runs[0].result["waits"]["lock_holders"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let seen: f64 = all.iter().filter_map(|h| h["sessions"].as_f64()).sum();
    if seen <= 0.0 {
        return Vec::new();
    }
    two_largest(all.iter(), seen)
}

/// A run's heads' events as fractions of its lock waits whose head was seen; None when it saw
/// none.
fn head_shares(run: &Value) -> Option<Vec<(String, f64)>> {
    let all = run["waits"]["lock_holders"].as_array()?;
    let each: Vec<(String, f64)> = all
        .iter()
        .filter_map(|h| Some((h["event"].as_str()?.to_string(), h["sessions"].as_f64()?)))
        .collect();
    let seen: f64 = each.iter().map(|(_, n)| n).sum();
    (seen > 0.0).then(|| each.into_iter().map(|(e, n)| (e, n / seen)).collect())
}

/// The heads' events of B against A by `HOLDER_RULE`, over repeats; empty where every run of
/// both sides did not see a head, or by seconds.
fn holder_shifts(a: &Side, b: &Side, method: Method) -> Vec<HolderShift> {
    let per_run = |s: &Side| -> Option<Vec<Vec<(String, f64)>>> {
        s.runs.iter().map(|r| head_shares(&r.result)).collect()
    };
    let (Method::Repeats, Some(ra), Some(rb)) = (method, per_run(a), per_run(b)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = ra
        .iter()
        .chain(&rb)
        .flat_map(|run| run.iter().map(|(e, _)| e.clone()))
        .collect();
    names.sort();
    names.dedup();
    let level = 1.0 - (1.0 - CONFIDENCE) / names.len().max(1) as f64;
    let values = |side: &[Vec<(String, f64)>], e: &str| -> Vec<f64> {
        side.iter()
            .map(|run| run.iter().find(|(x, _)| x == e).map_or(0.0, |(_, v)| *v))
            .collect()
    };
    let mut out: Vec<HolderShift> = names
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (va, vb) = (values(&ra, e), values(&rb, e));
            let (ma, mb) = (resample::mean(&va), resample::mean(&vb));
            let [sa, sb] = repeats(&va, &vb);
            let ci =
                resample::difference_interval(&sa, &sb, level, RESAMPLES, SEED + 200 + i as u64)
                    .map(|(lo, hi)| points(lo, hi));
            let moved = ci.is_some_and(|[lo, hi]| {
                (100.0 * (mb - ma)).abs() >= MIN_SHIFT_POINTS && (lo > 0.0 || hi < 0.0)
            });
            HolderShift {
                event: e.clone(),
                a_pct: 100.0 * ma,
                b_pct: 100.0 * mb,
                ci_points: ci,
                moved,
            }
        })
        .collect();
    let change = |h: &HolderShift| (h.b_pct - h.a_pct).abs();
    out.sort_by(|x, y| y.moved.cmp(&x.moved).then(change(y).total_cmp(&change(x))));
    out
}

/// Two sides' values a run, as independent repeats for the bootstrap.
fn repeats<'a>(a: &'a [f64], b: &'a [f64]) -> [Sample<'a>; 2] {
    [a, b].map(|values| Sample {
        values,
        scheme: Scheme::Independent,
    })
}

/// An interval of a change of shares (fractions) in points: a share moves by 100 points at
/// most, so the bootstrap's widened bounds are held to that.
fn points(lo: f64, hi: f64) -> [f64; 2] {
    [(100.0 * lo).max(-100.0), (100.0 * hi).min(100.0)]
}

/// One head's line: "Client:idle in transaction 49% -> 12% of the lock waits whose head was
/// seen (-45 .. -29 points)".
pub fn holder_line(h: &HolderShift) -> String {
    let mut out = format!(
        "{} {:.0}% -> {:.0}% of the lock waits whose head was seen",
        h.event, h.a_pct, h.b_pct
    );
    if let Some([lo, hi]) = h.ci_points {
        out += &format!(" ({lo:+.0} .. {hi:+.0} points)");
    }
    out
}

fn limited(side: &Side) -> Option<String> {
    let v = &side.runs[0].result["verdict"];
    Some(format!(
        "{}: {}",
        v["limiter"].as_str()?,
        v["says"].as_str().unwrap_or("")
    ))
}

/// What a run's samples could not see (`waits.unseen`), up to its reason: the same blind spot
/// whatever the server said.
fn unseen(run: &Value) -> Option<&str> {
    let u = run["waits"]["unseen"].as_str()?;
    Some(u.split_once(" (").map_or(u, |(what, _)| what))
}

/// Where the runs' samples did not see the same waits (one side's sampler refused a view the
/// other read: MariaDB's INNODB_TRX), their shares are not alike: a lock wait one side saw is
/// running time on the other. Why none is judged, or None where every run saw alike.
fn unlike_samples(a: &Side, b: &Side) -> Option<String> {
    fn all(s: &Side) -> Vec<Option<&str>> {
        s.runs.iter().map(|r| unseen(&r.result)).collect()
    }
    let (sa, sb) = (all(a), all(b));
    let first = sa.first().copied().flatten();
    if sa.iter().chain(&sb).all(|u| *u == first) {
        return None;
    }
    let said = |v: &[Option<&str>]| {
        let mut v: Vec<&str> = v.iter().map(|u| u.unwrap_or("all seen")).collect();
        v.dedup();
        v.join(" / ")
    };
    Some(format!(
        "the sides' samples did not see the same waits (A: {}; B: {}): their shares are not compared",
        said(&sa),
        said(&sb)
    ))
}

fn active(side: &Side) -> Option<f64> {
    let each: Vec<f64> = side
        .runs
        .iter()
        .filter_map(|r| classes(&r.result).map(|m| busy(&m)))
        .collect();
    (!each.is_empty()).then(|| resample::mean(&each))
}

/// Explain B against A by `SHIFT_RULE`, with the method the figures were judged by.
pub fn explain(a: &Side, b: &Side, method: Method) -> Explanation {
    let (statements_from, statements, statements_judged) = statement_shifts(a, b, method);
    let mut out = Explanation {
        limited_a: limited(a),
        limited_b: limited(b),
        active_a: active(a),
        active_b: active(b),
        shifts: Vec::new(),
        note: None,
        statements_from,
        statements,
        statements_judged,
        holders: holder_shifts(a, b, method),
    };
    let sampled = |s: &Side| s.runs.iter().all(|r| classes(&r.result).is_some());
    if !sampled(a) || !sampled(b) {
        out.note = Some(
            "a side's runs have no sampled server sessions nor an embedded engine's counts (--no-waits, or a result from before dbduel sampled them): nothing to explain the difference by".into(),
        );
        return out;
    }
    if let Some(note) = unlike_samples(a, b) {
        out.note = Some(note);
        return out;
    }
    let mut names: Vec<String> = [a, b]
        .iter()
        .flat_map(|s| &s.runs)
        .filter_map(|r| classes(&r.result))
        .flat_map(|m| m.keys().cloned().collect::<Vec<_>>())
        .collect();
    names.sort();
    names.dedup();
    let level = 1.0 - (1.0 - CONFIDENCE) / names.len().max(1) as f64;
    for (i, class) in names.iter().enumerate() {
        let per_run = |s: &Side| -> Vec<f64> {
            s.runs
                .iter()
                .filter_map(|r| classes(&r.result).map(|m| run_share(&m, class)))
                .collect()
        };
        let (va, vb) = (resample::mean(&per_run(a)), resample::mean(&per_run(b)));
        let (sa, sb, scheme_a, scheme_b) = match method {
            Method::Repeats => (
                per_run(a),
                per_run(b),
                Scheme::Independent,
                Scheme::Independent,
            ),
            Method::Seconds => {
                let (sa, sb) = (second_shares(a, class), second_shares(b, class));
                let block = |v: &[f64]| Scheme::Blocks {
                    block: resample::block_length(v),
                };
                (sa.clone(), sb.clone(), block(&sa), block(&sb))
            }
        };
        let enough = match method {
            Method::Repeats => 2,
            Method::Seconds => super::MIN_SECONDS,
        };
        let ci = (sa.len() >= enough && sb.len() >= enough)
            .then(|| {
                resample::difference_interval(
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
                    SEED + i as u64,
                )
            })
            .flatten()
            // The interval of the sampled shares, moved onto the runs' own change.
            .map(|(lo, hi)| {
                let shift = (vb - va) - (resample::mean(&sb) - resample::mean(&sa));
                points(lo + shift, hi + shift)
            });
        let moved = ci.is_some_and(|[lo, hi]| {
            (100.0 * (vb - va)).abs() >= MIN_SHIFT_POINTS && (lo > 0.0 || hi < 0.0)
        });
        out.shifts.push(Shift {
            class: class.clone(),
            a_pct: 100.0 * va,
            b_pct: 100.0 * vb,
            ci_points: ci,
            moved,
            events_a: events(a, class),
            events_b: events(b, class),
            holders_a: if class == "lock" {
                holders(a)
            } else {
                Vec::new()
            },
            holders_b: if class == "lock" {
                holders(b)
            } else {
                Vec::new()
            },
        });
    }
    out.shifts.sort_by(|x, y| {
        y.moved.cmp(&x.moved).then(
            (y.b_pct - y.a_pct)
                .abs()
                .total_cmp(&(x.b_pct - x.a_pct).abs()),
        )
    });
    let whole = [a, b]
        .iter()
        .any(|s| s.runs.iter().any(|r| whole_run_only(&r.result)));
    if out.shifts.iter().all(|s| s.ci_points.is_none()) && whole && method == Method::Seconds {
        out.note = Some(format!(
            "an embedded engine counts its connections' time over the whole run, not by second: its shares are judged over repeats ({} a side)",
            super::MIN_REPEATS
        ));
    } else if out.shifts.iter().all(|s| s.ci_points.is_none()) {
        out.note = Some(format!(
            "too few sampled seconds to judge the shares' noise (fewer than {} a side): run longer (-T 30 or more), or {} repeats a side",
            super::MIN_SECONDS,
            super::MIN_REPEATS
        ));
    }
    out
}

/// Each statement's mean per call in one run, by key: the server's figures (`server`) or the
/// client's latencies (`client`); None when the run has none from that source.
fn statement_means(run: &Value, from: &str) -> Option<Vec<(String, f64)>> {
    let rows: Vec<(String, f64)> = if from == "server" {
        run["statements"]["top"]
            .as_array()?
            .iter()
            .filter_map(|s| Some((s["text"].as_str()?.to_string(), s["mean_ms"].as_f64()?)))
            .collect()
    } else {
        run["statement_latencies"]
            .as_array()?
            .iter()
            .filter_map(|s| {
                let key = format!("{}: {}", s["transaction"].as_str()?, s["text"].as_str()?);
                Some((key, s["mean_ms"].as_f64()?))
            })
            .collect()
    };
    (!rows.is_empty()).then_some(rows)
}

/// The statements of B against A by `STATEMENT_RULE`: their source, the statements, and
/// whether they were judged.
fn statement_shifts(
    a: &Side,
    b: &Side,
    method: Method,
) -> (Option<String>, Vec<StatementShift>, bool) {
    let runs = || a.runs.iter().chain(&b.runs);
    let Some(from) = ["server", "client"]
        .into_iter()
        .find(|f| runs().all(|r| statement_means(&r.result, f).is_some()))
    else {
        return (None, Vec::new(), false);
    };
    let per_run = |s: &Side| -> Vec<Vec<(String, f64)>> {
        s.runs
            .iter()
            .filter_map(|r| statement_means(&r.result, from))
            .collect()
    };
    let (ra, rb) = (per_run(a), per_run(b));
    // The statements every run of both sides has (the server names only its top ones).
    let keys: Vec<String> = ra[0]
        .iter()
        .map(|(k, _)| k.clone())
        .filter(|k| {
            ra.iter()
                .chain(&rb)
                .all(|run| run.iter().any(|(x, _)| x == k))
        })
        .collect();
    let values = |side: &[Vec<(String, f64)>], k: &str| -> Vec<f64> {
        side.iter()
            .filter_map(|run| run.iter().find(|(x, _)| x == k).map(|(_, v)| *v))
            .collect()
    };
    let judged = method == Method::Repeats;
    let level = 1.0 - (1.0 - CONFIDENCE) / keys.len().max(1) as f64;
    let mut out: Vec<StatementShift> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let (va, vb) = (values(&ra, k), values(&rb, k));
            let (ma, mb) = (resample::mean(&va), resample::mean(&vb));
            let [sa, sb] = repeats(&va, &vb);
            let ci = judged
                .then(|| {
                    resample::ratio_interval(&sa, &sb, level, RESAMPLES, SEED + 100 + i as u64)
                })
                .flatten()
                .map(|(lo, hi)| [(lo - 1.0) * 100.0, (hi - 1.0) * 100.0]);
            let moved = ci.is_some_and(|[lo, hi]| {
                (100.0 * (mb / ma - 1.0)).abs() >= MIN_STATEMENT_PCT && (lo > 0.0 || hi < 0.0)
            });
            StatementShift {
                text: k.clone(),
                a_ms: ma,
                b_ms: mb,
                ci_pct: ci,
                moved,
            }
        })
        .collect();
    let change = |s: &StatementShift| (s.b_ms / s.a_ms - 1.0).abs();
    out.sort_by(|x, y| y.moved.cmp(&x.moved).then(change(y).total_cmp(&change(x))));
    if !judged {
        out.truncate(SHOWN_UNJUDGED);
    }
    (Some(from.to_string()), out, judged)
}

/// One statement's line: "UPDATE pgbench_accounts ... mean 0.210 -> 0.380 ms (+81%; +60% ..
/// +104%)".
pub fn statement_line(s: &StatementShift) -> String {
    let text: String = if s.text.chars().count() > 70 {
        s.text.chars().take(69).chain(['…']).collect()
    } else {
        s.text.clone()
    };
    let mut out = format!(
        "{text}: mean {:.3} -> {:.3} ms ({:+.0}%",
        s.a_ms,
        s.b_ms,
        100.0 * (s.b_ms / s.a_ms - 1.0)
    );
    if let Some([lo, hi]) = s.ci_pct {
        out += &format!("; {lo:+.0}% .. {hi:+.0}%");
    }
    out + ")"
}

/// One class's line: "lock 12% -> 61% of active time (+44 .. +54 points); A: Lock:tuple 10%;
/// B: Lock:tuple 58%".
pub fn line(s: &Shift) -> String {
    let mut out = format!(
        "{} {:.0}% -> {:.0}% of active time",
        s.class, s.a_pct, s.b_pct
    );
    match s.ci_points {
        Some([lo, hi]) => out += &format!(" ({lo:+.0} .. {hi:+.0} points)"),
        None => out += " (noise unknown)",
    }
    let named = |e: &[(String, f64)]| {
        e.iter()
            .map(|(n, p)| format!("{n} {p:.0}%"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let or_none = |t: String| if t.is_empty() { "none".into() } else { t };
    let (ea, eb) = (named(&s.events_a), named(&s.events_b));
    if !ea.is_empty() || !eb.is_empty() {
        out += &format!("; A: {}; B: {}", or_none(ea), or_none(eb));
    }
    let (ha, hb) = (named(&s.holders_a), named(&s.holders_b));
    if !ha.is_empty() || !hb.is_empty() {
        out += &format!(
            "; the queues' heads in A: {}; B: {}",
            or_none(ha),
            or_none(hb)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Run;
    use super::*;
    use serde_json::json;

    /// A run of `secs` measured seconds (one warm-up second first) whose sessions spent
    /// `lock(t)` in locks and `cpu(t)` on CPU in second t.
    fn run(secs: u64, lock: impl Fn(u64) -> f64, cpu: impl Fn(u64) -> f64) -> Run {
        let windows: Vec<Value> = (1..=secs + 1)
            .map(|t| json!({"t": t, "warmup": t == 1, "transactions": 100}))
            .collect();
        let seconds: Vec<Value> = (1..=secs + 1)
            .map(|t| json!({"t": t, "by_class": {"lock": lock(t), "cpu": cpu(t)}}))
            .collect();
        let n = secs as f64;
        let (l, c) = (
            (2..=secs + 1).map(&lock).sum::<f64>() / n,
            (2..=secs + 1).map(&cpu).sum::<f64>() / n,
        );
        Run {
            source: "r".into(),
            profile: None,
            result: json!({
                "windows": windows,
                "waits": {"samples": secs * 10, "by_class": {"lock": l, "cpu": c},
                          "top_events": [{"event": "Lock:tuple", "class": "lock", "sessions": l}],
                          "seconds": seconds},
                "verdict": {"limiter": if l >= c { "lock" } else { "cpu" }, "says": "x"},
            }),
        }
    }

    fn side(runs: Vec<Run>) -> Side {
        Side {
            label: "s".into(),
            runs,
        }
    }

    /// A wobble that is the same on both sides' seconds, so that the noise is not zero.
    fn wobble(t: u64) -> f64 {
        [0.0, 0.2, -0.2, 0.1, -0.1][(t % 5) as usize]
    }

    #[test]
    fn a_class_that_took_over_is_named_and_an_unmoved_one_is_not() {
        let a = side(vec![run(30, |t| 1.0 + wobble(t), |t| 3.0 - wobble(t))]);
        let b = side(vec![run(30, |t| 3.0 + wobble(t), |t| 1.0 - wobble(t))]);
        let e = explain(&a, &b, Method::Seconds);
        let mut moved: Vec<&str> = e.moved().map(|s| s.class.as_str()).collect();
        moved.sort();
        assert_eq!(moved, ["cpu", "lock"], "{e:?}");
        let lock = e.shifts.iter().find(|s| s.class == "lock").unwrap();
        assert!(lock.moved, "{e:?}");
        assert!(
            (lock.a_pct - 25.0).abs() < 1.0 && (lock.b_pct - 75.0).abs() < 1.0,
            "{lock:?}"
        );
        let [lo, hi] = lock.ci_points.unwrap();
        assert!(lo > 40.0 && hi < 60.0, "{lock:?}");
        assert!(
            line(lock).starts_with("lock 25% -> 75% of active time (+"),
            "{}",
            line(lock)
        );
        assert!(
            line(lock).contains("A: Lock:tuple 25%; B: Lock:tuple 75%"),
            "{}",
            line(lock)
        );
        // The same side against itself: nothing moved.
        let same = explain(&a, &a, Method::Seconds);
        assert_eq!(same.moved().count(), 0, "{same:?}");
        assert!(same.shifts.iter().all(|s| s.ci_points.is_some()));
    }

    #[test]
    fn a_small_or_noisy_change_is_not_named() {
        // 3 points, however steady: under MIN_SHIFT_POINTS.
        let a = side(vec![run(30, |t| 1.0 + wobble(t) / 10.0, |_| 3.0)]);
        let b = side(vec![run(30, |t| 1.15 + wobble(t) / 10.0, |_| 2.85)]);
        assert_eq!(explain(&a, &b, Method::Seconds).moved().count(), 0);
        // 20 points on average, but eight seconds that swing anywhere from no lock to all
        // lock: within the noise.
        let u = |t: u64| ((t as f64 * 12.9898).sin() * 43758.5453).rem_euclid(1.0);
        let a = side(vec![run(
            11,
            move |t| 4.0 * u(t),
            move |t| 4.0 - 4.0 * u(t),
        )]);
        let b = side(vec![run(
            11,
            move |t| 4.0 * (0.6 * u(t + 100) + 0.4),
            move |t| 4.0 - 4.0 * (0.6 * u(t + 100) + 0.4),
        )]);
        let e = explain(&a, &b, Method::Seconds);
        let lock = e.shifts.iter().find(|s| s.class == "lock").unwrap();
        assert!((lock.b_pct - lock.a_pct).abs() >= 10.0, "{lock:?}");
        assert!(!lock.moved, "{lock:?}");
    }

    #[test]
    fn repeats_are_judged_run_by_run_and_missing_samples_say_so() {
        let reps = |l: [f64; 3]| {
            side(
                l.iter()
                    .map(|&l| run(3, move |_| l, move |_| 4.0 - l))
                    .collect(),
            )
        };
        let e = explain(
            &reps([1.0, 1.1, 0.9]),
            &reps([2.0, 2.1, 1.9]),
            Method::Repeats,
        );
        let lock = e.shifts.iter().find(|s| s.class == "lock").unwrap();
        assert!(lock.moved, "{e:?}");
        // A side without samples: a note, no shifts.
        let mut bare = run(10, |_| 1.0, |_| 1.0);
        bare.result["waits"] = Value::Null;
        let e = explain(&side(vec![bare]), &reps([1.0, 1.0, 1.0]), Method::Seconds);
        assert!(e.shifts.is_empty() && e.note.unwrap().contains("no sampled server sessions"));
        // Single runs of fewer seconds than compare judges: the shares' noise is unknown.
        let short = |l: f64| side(vec![run(5, move |_| l, move |_| 4.0 - l)]);
        let e = explain(&short(1.0), &short(3.0), Method::Seconds);
        assert_eq!(e.moved().count(), 0);
        assert!(e.note.unwrap().contains("too few sampled seconds"));
    }

    #[test]
    fn samples_that_saw_unlike_are_not_compared() {
        let blind = "row lock waits and idle transactions not seen (information_schema.INNODB_TRX not read: denied (error 1227)): they count as running and as idle";
        let reps = |l: [f64; 3]| {
            side(
                l.iter()
                    .map(|&l| run(3, move |_| l, move |_| 4.0 - l))
                    .collect(),
            )
        };
        let seeing = reps([1.0, 1.1, 0.9]);
        let mut refused = reps([2.0, 2.1, 1.9]);
        for r in &mut refused.runs {
            r.result["waits"]["unseen"] = Value::from(blind);
        }
        let e = explain(&seeing, &refused, Method::Repeats);
        assert!(e.shifts.is_empty(), "{e:?}");
        assert_eq!(
            e.note.as_deref(),
            Some(
                "the sides' samples did not see the same waits (A: all seen; B: row lock waits and idle transactions not seen): their shares are not compared"
            )
        );
        // The same blind spot on both sides, whatever the server said: compared.
        let mut also = reps([1.0, 1.1, 0.9]);
        for r in &mut also.runs {
            r.result["waits"]["unseen"] = Value::from(blind.replace("1227", "1142"));
        }
        let e = explain(&also, &refused, Method::Repeats);
        assert!(
            e.note.is_none() && e.moved().any(|s| s.class == "lock"),
            "{e:?}"
        );
    }

    #[test]
    fn lock_holders_are_named_beside_the_lock_class() {
        let mut a = run(30, |t| 1.0 + wobble(t), |t| 3.0 - wobble(t));
        let mut b = run(30, |t| 3.0 + wobble(t), |t| 1.0 - wobble(t));
        a.result["waits"]["lock_holders"] = json!([
            {"event": "IO:WALSync", "class": "commit", "sessions": 0.6},
            {"event": "CPU", "class": "cpu", "sessions": 0.2},
        ]);
        b.result["waits"]["lock_holders"] = json!([
            {"event": "Client:idle in transaction", "class": "client", "sessions": 1.5},
            {"event": "IO:WALSync", "class": "commit", "sessions": 0.3},
            {"event": "CPU", "class": "cpu", "sessions": 0.2},
        ]);
        let e = explain(&side(vec![a]), &side(vec![b]), Method::Seconds);
        let lock = e.shifts.iter().find(|s| s.class == "lock").unwrap();
        assert!(
            line(lock).ends_with(
                "; the queues' heads in A: IO:WALSync 75%, CPU 25%; B: Client:idle in transaction 75%, IO:WALSync 15%"
            ),
            "{}",
            line(lock)
        );
        let cpu = e.shifts.iter().find(|s| s.class == "cpu").unwrap();
        assert!(cpu.holders_a.is_empty() && !line(cpu).contains("heads"));
    }

    /// A run whose lock queues' heads were in the client's turn `idle` of the waits whose head
    /// was seen, their commit's flush the rest.
    fn headed(idle: f64) -> Run {
        let mut r = run(5, |_| 2.0, |_| 1.0);
        r.result["waits"]["lock_holders"] = json!([
            {"event": "Client:idle in transaction", "class": "client", "sessions": idle},
            {"event": "IO:WALSync", "class": "commit", "sessions": 1.0 - idle},
        ]);
        r
    }

    #[test]
    fn the_heads_are_judged_over_repeats_and_only_then() {
        let a = side([0.48, 0.52, 0.50, 0.49].map(headed).into());
        let b = side([0.20, 0.25, 0.22, 0.18].map(headed).into());
        let e = explain(&a, &b, Method::Repeats);
        assert!(e.holders.iter().all(|h| h.moved), "{:?}", e.holders);
        let idle = e
            .holders
            .iter()
            .find(|h| h.event.starts_with("Client"))
            .unwrap();
        assert!(idle.moved, "{idle:?}");
        let [lo, hi] = idle.ci_points.unwrap();
        assert!(lo < -20.0 && hi < 0.0, "{lo} .. {hi}");
        assert!(
            holder_line(idle).starts_with(
                "Client:idle in transaction 50% -> 21% of the lock waits whose head was seen ("
            ),
            "{}",
            holder_line(idle)
        );
        // From all to none, with the repeats apart: the interval stays within 100 points.
        let all = side([0.7, 1.0, 0.9].map(headed).into());
        let none = side([0.0, 0.0, 0.0].map(headed).into());
        for h in explain(&all, &none, Method::Repeats).holders {
            let [lo, hi] = h.ci_points.unwrap();
            assert!((-100.0..=100.0).contains(&lo) && (-100.0..=100.0).contains(&hi));
        }
        // The same heads on both sides, run to run apart: nothing moved.
        let same = side([0.30, 0.60, 0.45, 0.50].map(headed).into());
        let e = explain(&a, &same, Method::Repeats);
        assert!(e.holders.iter().all(|h| !h.moved), "{:?}", e.holders);
        // By seconds (single runs), or with a run that saw no head: not judged.
        assert!(explain(&a, &b, Method::Seconds).holders.is_empty());
        let mut none = headed(0.5);
        none.result["waits"]["lock_holders"] = json!([]);
        let c = side(vec![headed(0.2), headed(0.2), none]);
        assert!(explain(&a, &c, Method::Repeats).holders.is_empty());
    }

    /// A SQLite run: `clients` connections that spent `lock` and `commit` of their time there.
    fn embedded(clients: u32, lock: f64, commit: f64) -> Run {
        let mut r = run(3, |_| 1.0, |_| 1.0);
        r.result["waits"] = Value::Null;
        r.result["embedded_waits"] =
            json!({"connections": clients, "lock_share": lock, "commit_share": commit});
        r
    }

    #[test]
    fn an_embedded_engines_shares_are_judged_over_repeats() {
        let reps = |lock: [f64; 3]| side(lock.iter().map(|&l| embedded(4, l, 0.1)).collect());
        let e = explain(
            &reps([0.10, 0.12, 0.11]),
            &reps([0.60, 0.62, 0.58]),
            Method::Repeats,
        );
        let lock = e.shifts.iter().find(|s| s.class == "lock").unwrap();
        assert!(lock.moved, "{e:?}");
        assert!((lock.a_pct - 11.0).abs() < 0.01 && (lock.b_pct - 60.0).abs() < 0.01);
        let rest = e.shifts.iter().find(|s| s.class == "client").unwrap();
        assert!(rest.moved && (rest.a_pct - 79.0).abs() < 0.01, "{rest:?}");
        let commit = e.shifts.iter().find(|s| s.class == "commit").unwrap();
        assert!(!commit.moved, "{commit:?}");
        assert_eq!(e.active_a, Some(4.0));
        // Single runs: no seconds to judge by, and the note says what would judge them.
        let e = explain(
            &side(vec![embedded(4, 0.1, 0.1)]),
            &side(vec![embedded(4, 0.6, 0.1)]),
            Method::Seconds,
        );
        assert_eq!(e.moved().count(), 0);
        assert!(
            e.note
                .as_deref()
                .unwrap_or("")
                .contains("judged over repeats"),
            "{e:?}"
        );
    }

    /// A run whose server named `update` ms and `select` ms per call, and whose client timed
    /// them a tenth of a millisecond longer.
    fn with_statements(update: f64, select: f64, server: bool) -> Run {
        let mut r = run(3, |_| 1.0, |_| 1.0);
        if server {
            r.result["statements"] = json!({"top": [
                {"text": "UPDATE t SET v = $1", "mean_ms": update, "share": 0.8},
                {"text": "SELECT v FROM t", "mean_ms": select, "share": 0.2},
            ]});
        }
        r.result["statement_latencies"] = json!([
            {"transaction": "tx", "text": "UPDATE t SET v = ?", "mean_ms": update + 0.1},
            {"transaction": "tx", "text": "SELECT v FROM t", "mean_ms": select + 0.1},
        ]);
        r
    }

    #[test]
    fn statements_are_judged_over_repeats_and_only_shown_for_single_runs() {
        let reps = |u: [f64; 3], server: bool| {
            side(
                u.iter()
                    .map(|&u| with_statements(u, 0.05, server))
                    .collect(),
            )
        };
        let e = explain(
            &reps([0.20, 0.21, 0.22], true),
            &reps([0.37, 0.38, 0.39], true),
            Method::Repeats,
        );
        assert_eq!(e.statements_from.as_deref(), Some("server"));
        assert!(e.statements_judged);
        let moved: Vec<&str> = e
            .statements
            .iter()
            .filter(|s| s.moved)
            .map(|s| s.text.as_str())
            .collect();
        assert_eq!(moved, ["UPDATE t SET v = $1"], "{e:?}");
        assert!(
            statement_line(&e.statements[0])
                .starts_with("UPDATE t SET v = $1: mean 0.210 -> 0.380 ms (+81%; +"),
            "{}",
            statement_line(&e.statements[0])
        );
        // Repeats that spread over the change: not named.
        let e = explain(
            &reps([0.10, 0.21, 0.32], true),
            &reps([0.12, 0.25, 0.35], true),
            Method::Repeats,
        );
        assert!(e.statements.iter().all(|s| !s.moved), "{e:?}");
        // A run without the server's figures: the client's latencies, by transaction type.
        let mixed = side(vec![with_statements(0.2, 0.05, false)]);
        let e = explain(
            &mixed,
            &side(vec![with_statements(0.4, 0.05, true)]),
            Method::Seconds,
        );
        assert_eq!(e.statements_from.as_deref(), Some("client"));
        assert!(
            !e.statements_judged && e.statements.iter().all(|s| s.ci_pct.is_none() && !s.moved)
        );
        assert_eq!(e.statements[0].text, "tx: UPDATE t SET v = ?");
    }
}
