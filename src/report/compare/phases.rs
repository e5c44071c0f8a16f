//! `compare` phase by phase, for runs whose load changed shape (`--phase`): each phase both sides
//! ran (by name, in A's order) gets its own table of the same figures, judged by the same rule as
//! the run's (over repeats when each side has 3 or more, over the phase's own measured seconds
//! otherwise), each table holding as a whole (Bonferroni over its figures). A phase's seconds
//! are the windows that lie wholly inside it; its figures are the phase's own (from its
//! histograms).

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
        let (pa, pb) = (view(a, name), view(b, name));
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

fn load(side: &Side, name: &str) -> String {
    phase(&side.runs[0].result, name)
        .and_then(|p| p["load"].as_str())
        .unwrap_or("")
        .to_string()
}

/// The side as one phase of it: each run's record with the phase's figures in the run's place
/// and only the windows wholly inside the phase. A run without the phase, or without a
/// transaction in it, has no figures.
fn view(side: &Side, name: &str) -> Side {
    let runs = side
        .runs
        .iter()
        .map(|run| {
            let r = &run.result;
            let mut result = serde_json::json!({});
            // A phase without a completed transaction (or never reached) has no figures to
            // judge.
            if let Some(p) = phase(r, name).filter(|p| p["transactions"].as_u64() > Some(0)) {
                let warmup = r["options"]["warmup_s"].as_f64().unwrap_or(0.0);
                let from = warmup + p["start_s"].as_f64().unwrap_or(0.0);
                let to = from + p["seconds"].as_f64().unwrap_or(0.0);
                // Window t covers the second before t; the last one is kept (a phase's last
                // window is whole), and `seconds` drops a side's last, so one more is added.
                let mut windows: Vec<Value> = r["windows"]
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
                    .collect();
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
