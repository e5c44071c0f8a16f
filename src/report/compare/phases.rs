//! `compare` phase by phase, for runs whose load changed shape (`--phase`): each phase both sides
//! ran (by name, in A's order) gets its own table of the same figures, judged by the same rule as
//! the run's (over repeats when each side has 3 or more, over the phase's own measured seconds
//! otherwise), each table holding as a whole (Bonferroni over its figures). A phase's seconds
//! are its own (its whole seconds, by its transactions' start, as its figures take them; the
//! run's windows wholly inside it for a result from before phases kept them); its figures are
//! the phase's own (from its histograms).

use serde::Serialize;
use serde_json::Value;

use super::{CONFIDENCE, FIGURES, FigureComparison, Run, SEED, Side, figure, method_for};

/// One phase compared.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseComparison {
    pub name: String,
    /// Each side's load as asked ("rate 500/s (poisson)").
    pub load_a: String,
    pub load_b: String,
    pub figures: Vec<FigureComparison>,
}

/// The phases both sides ran, compared; empty when a side ran none. A phase only one side ran
/// is named in `unmatched`.
pub fn compare(a: &Side, b: &Side) -> (Vec<PhaseComparison>, Vec<String>) {
    let names = |s: &Side| -> Vec<String> {
        s.runs[0].result["phases"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str().map(str::to_string))
            .collect()
    };
    let (na, nb) = (names(a), names(b));
    if na.is_empty() && nb.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let per_figure = 1.0 - (1.0 - CONFIDENCE) / FIGURES.len() as f64;
    let mut out = Vec::new();
    for (k, name) in na.iter().filter(|n| nb.contains(n)).enumerate() {
        // Both sides' seconds counted one way: the phases' own when every run kept them.
        let own = [a, b]
            .iter()
            .all(|s| s.runs.iter().all(|r| has_windows(&r.result, name)));
        let (pa, pb) = (view(a, name, own), view(b, name, own));
        let method = method_for(&pa, &pb);
        let figures = FIGURES
            .iter()
            .enumerate()
            .map(|(i, f)| {
                figure(
                    f,
                    &pa,
                    &pb,
                    method,
                    per_figure,
                    SEED + 100 * (k as u64 + 1) + i as u64,
                )
            })
            .collect();
        out.push(PhaseComparison {
            name: name.clone(),
            load_a: load(a, name),
            load_b: load(b, name),
            figures,
        });
    }
    let unmatched = na
        .iter()
        .filter(|n| !nb.contains(n))
        .map(|n| format!("{n} (A only)"))
        .chain(
            nb.iter()
                .filter(|n| !na.contains(n))
                .map(|n| format!("{n} (B only)")),
        )
        .collect();
    (out, unmatched)
}

/// A phase of a run's record.
fn phase<'a>(result: &'a Value, name: &str) -> Option<&'a Value> {
    result["phases"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

/// Whether a run kept phase `name`'s own seconds (a result written before they were kept did
/// not; a phase without a transaction has none to judge either way).
fn has_windows(result: &Value, name: &str) -> bool {
    phase(result, name).is_none_or(|p| {
        p["transactions"].as_u64() == Some(0)
            || p["windows"].as_array().is_some_and(|w| !w.is_empty())
    })
}

/// The run's measured windows wholly inside phase `p` (window t covers the second before t).
fn run_windows(r: &Value, p: &Value) -> Vec<Value> {
    let warmup = r["options"]["warmup_s"].as_f64().unwrap_or(0.0);
    let from = warmup + p["start_s"].as_f64().unwrap_or(0.0);
    let to = from + p["seconds"].as_f64().unwrap_or(0.0);
    r["windows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| {
            w["t"]
                .as_f64()
                .is_some_and(|t| t - 1.0 >= from - 1e-9 && t <= to + 1e-9)
                && w["warmup"] == false
        })
        .cloned()
        .collect()
}

fn load(side: &Side, name: &str) -> String {
    phase(&side.runs[0].result, name)
        .and_then(|p| p["load"].as_str())
        .unwrap_or("")
        .to_string()
}

/// The side as one phase of it: each run's record with the phase's figures in the run's place
/// and the phase's own seconds (`own`), or else only the run's windows wholly inside the phase. A run without the phase, or without a
/// transaction in it, has no figures.
fn view(side: &Side, name: &str, own: bool) -> Side {
    let runs = side
        .runs
        .iter()
        .map(|run| {
            let r = &run.result;
            let mut result = serde_json::json!({});
            // A phase without a completed transaction (or never reached) has no figures to
            // judge.
            if let Some(p) = phase(r, name).filter(|p| p["transactions"].as_u64() > Some(0)) {
                let mut windows = match p["windows"].as_array().filter(|_| own) {
                    // The phase's own seconds, by its transactions' start.
                    Some(own) => own
                        .iter()
                        .map(|w| {
                            let mut w = w.clone();
                            w["warmup"] = Value::Bool(false);
                            w
                        })
                        .collect(),
                    // A result from before phases kept their seconds: the run's windows
                    // wholly inside the phase (by their transactions' end).
                    None => run_windows(r, p),
                };
                // Every window kept is whole, and `seconds` drops a side's last: one more.
                windows.push(serde_json::json!({"t": 0, "warmup": false}));
                result = serde_json::json!({
                    "tps": p["tps"],
                    "latency_ms": p["latency_ms"],
                    "windows": windows,
                });
            }
            Run {
                source: run.source.clone(),
                result,
                profile: run.profile.clone(),
            }
        })
        .collect();
    Side {
        label: side.label.clone(),
        runs,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Verdict;
    use super::*;
    use serde_json::json;

    /// A run of one 12-second phase whose own seconds hold `own` transactions each, and whose
    /// run-wide seconds (by their transactions' end) hold `ended` each.
    fn side(own: &[f64], ended: &[f64]) -> Side {
        let second = |i: usize, t: f64| {
            json!({"t": i + 1, "warmup": false, "transactions": t,
                "p50_ms": 1.0, "p90_ms": 2.0, "p95_ms": 3.0, "p99_ms": 4.0})
        };
        let own_windows: Vec<Value> = own.iter().enumerate().map(|(i, t)| second(i, *t)).collect();
        let run_windows: Vec<Value> = ended
            .iter()
            .enumerate()
            .map(|(i, t)| second(i, *t))
            .collect();
        let tps = own.iter().sum::<f64>() / own.len() as f64;
        let latency = json!({"p50": 1.0, "p90": 2.0, "p95": 3.0, "p99": 4.0});
        Side {
            label: "x".into(),
            runs: vec![Run {
                source: "test".into(),
                result: json!({
                    "tps": tps, "latency_ms": latency, "windows": run_windows,
                    "options": {"warmup_s": 0.0},
                    "phases": [{"name": "steady", "load": "rate 100/s (poisson)", "start_s": 0.0,
                        "seconds": 12.0, "transactions": (tps * 12.0) as u64, "tps": tps,
                        "latency_ms": latency, "windows": own_windows}],
                }),
                profile: None,
            }],
        }
    }

    #[test]
    fn a_phase_is_judged_over_its_own_seconds_not_the_runs() {
        // B's phase starts 10% more transactions every second, steadily; the run's seconds (by
        // end) swing with the transactions of the phases either side ending in them. Judged
        // over the phase's own seconds B is faster; over the run's, the swing would hide it.
        let steady = |base: f64| -> Vec<f64> { (0..12).map(|i| base + (i % 2) as f64).collect() };
        let swing: Vec<f64> = (0..13)
            .map(|i| if i % 2 == 0 { 20.0 } else { 180.0 })
            .collect();
        let (a, b) = (side(&steady(100.0), &swing), side(&steady(110.0), &swing));
        // The tps verdict of the one phase compared.
        let tps = |a: &Side, b: &Side| {
            let (compared, unmatched) = compare(a, b);
            assert!(unmatched.is_empty());
            let f = compared[0].figures.iter().find(|f| f.name == "tps");
            f.unwrap().verdict
        };
        assert_eq!(tps(&a, &b), Verdict::Faster);
        // A result without the phase's seconds (written before they were kept) falls back on
        // the run's windows wholly inside the phase.
        let old = |s: &Side| {
            let mut s = Side {
                label: s.label.clone(),
                runs: vec![Run {
                    source: "test".into(),
                    result: s.runs[0].result.clone(),
                    profile: None,
                }],
            };
            s.runs[0].result["phases"][0]
                .as_object_mut()
                .unwrap()
                .remove("windows");
            s
        };
        assert_ne!(tps(&old(&a), &old(&b)), Verdict::Faster);
        // One side without them: both sides are judged over the run's windows, never one
        // side's seconds counted by start against the other's counted by end.
        assert_ne!(tps(&old(&a), &b), Verdict::Faster);
    }
}
