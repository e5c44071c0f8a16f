//! From the stored runs to a report's `ReportData`: runs grouped into points and summarised over
//! their repeats (median and spread, instability) with their workload figures and
//! per-transaction-type medians, timelines with server events, settings per profile.

use super::compare;
use crate::engine::durability::{self, Durability};
use std::collections::BTreeMap;

use super::data::{
    Figure, PointSummary, ProfileComparison, ProfileSettings, ReportData, Second, Timeline,
    TypeFigures,
};
use crate::error::Error;
use crate::stats;
use crate::store::{self, RunRow, Store};

/// What one stored run contributes.
struct RunFacts {
    row: RunRow,
    result: serde_json::Value,
    resources: Vec<serde_json::Value>,
}

pub fn report_data(store: &Store, plan: Option<&str>) -> Result<ReportData, Error> {
    let mut runs = Vec::new();
    for row in store.list(plan)? {
        let result = store.result(row.id)?;
        let resources = store.resources(row.id)?;
        runs.push(RunFacts {
            row,
            result,
            resources,
        });
    }
    // Points are grouped within a plan: two plans that share an engine, profile, workload
    // and client count measured different things (durations, settings, data), so their runs
    // are not repeats of one point.
    let mut plans: Vec<String> = Vec::new();
    for run in &runs {
        if !plans.contains(&run.row.plan) {
            plans.push(run.row.plan.clone());
        }
    }
    let several = plans.len() > 1;
    let mut groups: Vec<(String, Vec<&RunFacts>)> = Vec::new();
    for run in &runs {
        let r = &run.row;
        let key = format!(
            "{}|{}|{}|{}|{}|{}|{}",
            r.plan, r.engine, r.profile, r.workload, r.variant, r.clients, r.cold
        );
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(run),
            None => groups.push((key, vec![run])),
        }
    }
    let host = runs
        .first()
        .map(|r| host_facts(&r.result))
        .unwrap_or_default();
    Ok(ReportData {
        title: format!(
            "dbduel report{}",
            plan.map(|p| format!(": {p}")).unwrap_or_default()
        ),
        generated_at: store::now(),
        host,
        points: groups
            .iter()
            .map(|(_, members)| summarise(members, several))
            .collect(),
        timelines: runs.iter().map(|r| timeline(r, several)).collect(),
        plans,
        comparisons: comparisons(&groups, several),
        sides: super::sides::costs(&side_points(&groups), several),
        profiles: store
            .settings(plan)?
            .into_iter()
            .map(|(engine, profile, unsafe_profile, json)| {
                let settings = serde_json::from_str(&json).unwrap_or_default();
                ProfileSettings {
                    durability: durability::judge(&engine, &settings),
                    engine,
                    profile,
                    unsafe_profile,
                    settings,
                }
            })
            .collect(),
    })
}

/// Every profile against the first profile measured on its engine in the same plan, at the
/// same point.
fn comparisons(groups: &[(String, Vec<&RunFacts>)], several: bool) -> Vec<ProfileComparison> {
    let mut out = Vec::new();
    let side = |members: &[&RunFacts]| compare::Side {
        label: String::new(),
        runs: members
            .iter()
            .map(|m| compare::Run {
                source: m.row.id.to_string(),
                result: m.result.clone(),
                profile: Some(m.row.profile.clone()),
            })
            .collect(),
    };
    for (_, members) in groups {
        let r = &members[0].row;
        let baseline_profile = groups
            .iter()
            .map(|(_, m)| &m[0].row)
            .find(|b| b.plan == r.plan && b.engine == r.engine)
            .map(|b| b.profile.clone());
        let Some(baseline_profile) = baseline_profile.filter(|b| *b != r.profile) else {
            continue;
        };
        let same_point = |b: &RunRow| {
            b.plan == r.plan
                && b.engine == r.engine
                && b.profile == baseline_profile
                && b.workload == r.workload
                && b.variant == r.variant
                && b.clients == r.clients
                && b.cold == r.cold
        };
        let Some((_, base)) = groups.iter().find(|(_, m)| same_point(&m[0].row)) else {
            continue;
        };
        let Some(c) = compare::judge_one("tps", &side(base), &side(members)) else {
            continue;
        };
        out.push(ProfileComparison {
            plan: if several {
                r.plan.clone()
            } else {
                String::new()
            },
            engine: r.engine.clone(),
            workload: r.workload.clone(),
            variant: r.variant.clone(),
            clients: r.clients,
            baseline: baseline_profile,
            profile: r.profile.clone(),
            ratio: c.b / c.a,
            verdict: compare::render::verdict(c.verdict).into(),
            note: c.note,
        });
    }
    out
}

/// The points as the sides of a CH-benCHmark mix are matched (`report::sides`).
fn side_points<'a>(groups: &'a [(String, Vec<&RunFacts>)]) -> Vec<super::sides::PointRuns<'a>> {
    groups
        .iter()
        .map(|(_, members)| {
            let r = &members[0].row;
            super::sides::PointRuns {
                plan: &r.plan,
                engine: &r.engine,
                profile: &r.profile,
                workload: &r.workload,
                variant: &r.variant,
                clients: r.clients,
                cold: r.cold,
                results: members.iter().map(|m| &m.result).collect(),
            }
        })
        .collect()
}

fn host_facts(result: &serde_json::Value) -> BTreeMap<String, String> {
    let h = &result["host"];
    BTreeMap::from([
        ("cores".to_string(), h["cores"].to_string()),
        (
            "RAM".to_string(),
            super::human_bytes(h["ram_bytes"].as_u64().unwrap_or(0)),
        ),
        (
            "kernel".to_string(),
            h["kernel"].as_str().unwrap_or_default().to_string(),
        ),
        (
            "CPU".to_string(),
            h["cpu"].as_str().unwrap_or("unknown").to_string(),
        ),
        (
            "frequency governor".to_string(),
            h["governor"].as_str().unwrap_or("not exposed").to_string(),
        ),
    ])
}

/// Per-second throughput of a run, warm-up excluded.
fn seconds_tps(result: &serde_json::Value) -> Vec<f64> {
    let windows = result["windows"].as_array().cloned().unwrap_or_default();
    windows
        .iter()
        .filter(|w| w["warmup"] == false)
        .map(|w| w["transactions"].as_f64().unwrap_or(0.0))
        .collect()
}

/// What a run's settings promise for commits, judged again from the settings it recorded (so
/// that results stored before dbduel judged durability are judged too), as weak as the judgment
/// it recorded (which also counts the settings at its end and what its statements set).
fn durability_of(result: &serde_json::Value) -> Durability {
    let engine = result["engine"]["name"].as_str().unwrap_or_default();
    let settings = serde_json::from_value(result["engine"]["settings"].clone()).unwrap_or_default();
    let judged = durability::judge(engine, &settings);
    match serde_json::from_value::<Durability>(result["engine"]["durability"].clone()) {
        Ok(recorded) => judged.weakest(recorded),
        Err(_) => judged,
    }
}

/// What the observation of a point's repeats missed: the wait sampler's samples and the
/// counters' readings each repeat missed, summed, in a sentence each.
fn missed(results: &[&serde_json::Value]) -> Vec<String> {
    let sum = |path: [&str; 2]| -> u64 {
        results
            .iter()
            .filter_map(|r| r[path[0]][path[1]].as_u64())
            .sum()
    };
    let mut out = Vec::new();
    let samples = sum(["waits", "missed"]);
    if samples > 0 {
        out.push(format!(
            "the wait sampler missed {samples} of its samples (the server answered slower than asked): the sessions' shares rest on fewer samples, and seconds without one are empty"
        ));
    }
    let readings = sum(["server_counters", "missed"]);
    if readings > 0 {
        out.push(format!(
            "{readings} of the server counters' readings were missed (the server answered slower than once a second)"
        ));
    }
    out
}

/// A point over its repeats; `several` plans in the report: the point is labelled with its plan.
fn summarise(members: &[&RunFacts], several: bool) -> PointSummary {
    let first = &members[0].row;
    let tps: Vec<f64> = members.iter().map(|m| m.row.tps).collect();
    let s = stats::spread(&tps);
    let median = |f: fn(&RunRow) -> f64| {
        stats::spread(&members.iter().map(|m| f(&m.row)).collect::<Vec<_>>()).median
    };
    let seconds: Vec<Vec<f64>> = members.iter().map(|m| seconds_tps(&m.result)).collect();
    let mut warnings: Vec<String> = members
        .iter()
        .flat_map(|m| m.result["warnings"].as_array().cloned().unwrap_or_default())
        .filter_map(|w| w.as_str().map(str::to_string))
        .collect();
    warnings.dedup();
    PointSummary {
        plan: if several {
            first.plan.clone()
        } else {
            String::new()
        },
        engine: first.engine.clone(),
        profile: first.profile.clone(),
        unsafe_profile: first.unsafe_profile,
        durability: members
            .iter()
            .map(|m| durability_of(&m.result))
            .reduce(Durability::weakest)
            .unwrap_or_default(),
        isolation: {
            let mut levels: Vec<&str> = members
                .iter()
                .filter_map(|m| m.result["engine"]["isolation"].as_str())
                .collect();
            levels.dedup();
            levels.join("/")
        },
        workload: first.workload.clone(),
        variant: first.variant.clone(),
        clients: first.clients,
        clients_ran: members
            .iter()
            .filter_map(|m| m.result["options"]["clients"].as_u64())
            .map(|c| c as u32)
            .find(|c| *c < first.clients),
        repeats: members.len() as u32,
        tps_median: s.median,
        tps_min: s.min,
        tps_max: s.max,
        tps_cv: s.cv,
        p50_ms: median(|r| r.p50_ms),
        p95_ms: median(|r| r.p95_ms),
        p99_ms: median(|r| r.p99_ms),
        first_ms: {
            let firsts: Vec<f64> = members
                .iter()
                .filter_map(|m| m.result["first_transaction_ms"].as_f64())
                .collect();
            (!firsts.is_empty()).then(|| stats::spread(&firsts).median)
        },
        errors: members.iter().map(|m| m.row.errors.max(0) as u64).sum(),
        client_bound: members.iter().any(|m| m.row.client_bound),
        limited_by: limiters(members),
        limited_by_says: members
            .first()
            .and_then(|m| m.result["verdict"]["says"].as_str())
            .unwrap_or_default()
            .to_string(),
        counters: members
            .first()
            .map(|m| super::counters::of_result(&m.result))
            .unwrap_or_default(),
        server_restarted: members.iter().any(|m| m.row.server_restarts > 0),
        unstable: stats::unstable_reasons(&tps, &seconds),
        cold: first.cold,
        missed: missed(&members.iter().map(|m| &m.result).collect::<Vec<_>>()),
        server_rss_bytes: members
            .iter()
            .filter_map(|m| peak(&m.resources, "server_rss_bytes"))
            .max(),
        server_cpu_per_tx_us: cpu_per_tx(members),
        database_size_bytes: members
            .iter()
            .filter_map(|m| m.result["engine"]["database_size_bytes"].as_u64())
            .max(),
        warnings,
        metrics: figures(members),
        types: types(members),
        connect: connect_row(&members.iter().map(|m| &m.result).collect::<Vec<_>>()),
        statement_latencies: super::statement_latencies::over_repeats(
            &members.iter().map(|m| &m.result).collect::<Vec<_>>(),
        ),
    }
}

/// The repeats' limiters: one word when they agree, else each with its count ("lock 2, mixed
/// 1"); empty when no repeat recorded one.
fn limiters(members: &[&RunFacts]) -> String {
    let mut counts: Vec<(&str, u32)> = Vec::new();
    for l in members
        .iter()
        .filter_map(|m| m.result["verdict"]["limiter"].as_str())
    {
        match counts.iter_mut().find(|(k, _)| *k == l) {
            Some((_, n)) => *n += 1,
            None => counts.push((l, 1)),
        }
    }
    match counts.as_slice() {
        [(one, _)] => one.replace('_', " "),
        many => many
            .iter()
            .map(|(k, n)| format!("{} {n}", k.replace('_', " ")))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The workload's own figures (result.workload.metrics) over the repeats that report them.
fn figures(members: &[&RunFacts]) -> BTreeMap<String, Figure> {
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for m in members {
        for (name, value) in m.result["workload"]["metrics"]
            .as_object()
            .into_iter()
            .flatten()
        {
            if let Some(v) = value.as_f64() {
                values.entry(name.clone()).or_default().push(v);
            }
        }
    }
    values
        .into_iter()
        .map(|(name, v)| {
            let s = stats::spread(&v);
            let figure = Figure {
                median: s.median,
                min: s.min,
                max: s.max,
            };
            (name, figure)
        })
        .collect()
}

/// Each transaction type over the repeats, when the workload has more than one.
fn types(members: &[&RunFacts]) -> Vec<TypeFigures> {
    let mut names: Vec<String> = Vec::new();
    for m in members {
        for t in m.result["transaction_types"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(name) = t["name"].as_str().filter(|n| !names.iter().any(|x| x == n)) {
                names.push(name.to_string());
            }
        }
    }
    if names.len() < 2 {
        return Vec::new();
    }
    names
        .into_iter()
        .map(|name| {
            let of_type: Vec<&serde_json::Value> = members
                .iter()
                .flat_map(|m| {
                    m.result["transaction_types"]
                        .as_array()
                        .into_iter()
                        .flatten()
                })
                .filter(|t| t["name"] == name.as_str())
                .collect();
            let median = |f: &dyn Fn(&serde_json::Value) -> Option<f64>| {
                stats::spread(&of_type.iter().filter_map(|t| f(t)).collect::<Vec<_>>()).median
            };
            let sum = |field: &str| of_type.iter().filter_map(|t| t[field].as_u64()).sum();
            TypeFigures {
                tps: median(&|t| t["tps"].as_f64()),
                p50_ms: median(&|t| t["latency_ms"]["p50"].as_f64()),
                p95_ms: median(&|t| t["latency_ms"]["p95"].as_f64()),
                p99_ms: median(&|t| t["latency_ms"]["p99"].as_f64()),
                errors: sum("errors"),
                retries: sum("retries"),
                rollbacks: sum("rollbacks"),
                executions: of_type
                    .iter()
                    .filter_map(|t| t["transactions"].as_u64())
                    .max()
                    .unwrap_or(0),
                name,
            }
        })
        // Types that never ran (TPC-H queries left out by --queries) are left out.
        .filter(|t| t.executions + t.errors + t.rollbacks > 0)
        .collect()
}

/// The connections as a row of the per-type table: connections a second, their connect time's
/// percentiles (medians over the repeats), the tries that failed under errors; for a point whose
/// clients opened more than their first connections. Its name says how many were opened and
/// how long the clients took to connect at the start.
fn connect_row(results: &[&serde_json::Value]) -> Option<TypeFigures> {
    let count = |c: &serde_json::Value, field: &str| c[field].as_u64().unwrap_or(0);
    let beyond = |r: &&serde_json::Value| {
        count(&r["connections"], "opened") > count(&r["connections"], "initial")
    };
    if !results.iter().any(beyond) {
        return None;
    }
    let median = |f: &dyn Fn(&serde_json::Value) -> Option<f64>| {
        let values: Vec<f64> = results.iter().filter_map(|r| f(r)).collect();
        stats::spread(&values).median
    };
    let opened = results
        .iter()
        .map(|r| count(&r["connections"], "opened"))
        .max()
        .unwrap_or(0);
    let storm = median(&|r| r["connections"]["storm_s"].as_f64());
    let percentile = |p: &'static str| median(&move |r| r["connections"]["connect_ms"][p].as_f64());
    Some(TypeFigures {
        name: format!("connect ({opened} opened; clients connected in {storm:.3} s)"),
        tps: median(&|r| {
            let secs = r["duration_s"].as_f64()?;
            Some(count(&r["connections"], "opened") as f64 / secs.max(1e-9))
        }),
        p50_ms: percentile("p50"),
        p95_ms: percentile("p95"),
        p99_ms: percentile("p99"),
        errors: results
            .iter()
            .map(|r| count(&r["connections"], "failed"))
            .sum(),
        retries: 0,
        rollbacks: 0,
        executions: opened,
    })
}

fn peak(samples: &[serde_json::Value], field: &str) -> Option<u64> {
    samples.iter().filter_map(|s| s[field].as_u64()).max()
}

/// Server CPU seconds over transactions, over all repeats.
fn cpu_per_tx(members: &[&RunFacts]) -> Option<f64> {
    let (mut cpu, mut txns) = (0.0, 0.0);
    for m in members {
        let cpus: Vec<f64> = m
            .resources
            .iter()
            .filter_map(|s| s["server_cpu_s"].as_f64())
            .collect();
        let (Some(first), Some(last)) = (cpus.first(), cpus.last()) else {
            continue;
        };
        cpu += (last - first).max(0.0);
        txns += m.result["transactions"].as_f64().unwrap_or(0.0);
    }
    (txns > 0.0 && cpu > 0.0).then(|| cpu / txns * 1e6)
}

/// A result's per-second figures (`[{"t": T, FIELD: {name: value}}]`) by second.
fn by_second(seconds: &serde_json::Value, field: &str) -> BTreeMap<u64, BTreeMap<String, f64>> {
    seconds
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let values = s[field]
                .as_object()?
                .iter()
                .filter_map(|(c, v)| Some((c.clone(), v.as_f64()?)))
                .collect();
            Some((s["t"].as_u64()?, values))
        })
        .collect()
}

fn timeline(run: &RunFacts, several: bool) -> Timeline {
    let events: BTreeMap<u64, &serde_json::Value> = run
        .resources
        .iter()
        .filter_map(|s| Some((s["t"].as_u64()?, s)))
        .collect();
    let windows = run.result["windows"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let sessions = by_second(&run.result["waits"]["seconds"], "by_class");
    let counters = by_second(&run.result["server_counters"]["seconds"], "values");
    // Every run's counters mark the seconds a checkpoint or autovacuum covered, where the
    // observer (sweeps) did not count them.
    let checkpoints = super::counters::covered(&run.result, "checkpoint");
    let autovacuums = super::counters::covered(&run.result, "autovacuum");
    // Window t covers the second before t. The run's last window is partial (the run ends
    // between two ticks): drawn as a second, its few transactions look like a plunge to 0 tps,
    // so a window less than 95% inside the run is left out of the timeline.
    let total = run.result["duration_s"].as_f64().unwrap_or(0.0)
        + run.result["options"]["warmup_s"].as_f64().unwrap_or(0.0);
    let seconds = windows
        .iter()
        .filter(|w| w["t"].as_f64().is_some_and(|t| t - total <= 0.05))
        .map(|w| {
            let t = w["t"].as_u64().unwrap_or(0);
            let sample = events.get(&t);
            let count = |f: &str| sample.and_then(|s| s[f].as_u64()).unwrap_or(0) as u32;
            Second {
                t: t as u32,
                warmup: w["warmup"] == true,
                tps: w["transactions"].as_f64().unwrap_or(0.0),
                p99_ms: w["p99_ms"].as_f64(),
                checkpoints: count("checkpoints").max(u32::from(checkpoints.contains(&t))),
                autovacuums: count("autovacuums").max(u32::from(autovacuums.contains(&t))),
                server_rss_bytes: sample.and_then(|s| s["server_rss_bytes"].as_u64()),
                sessions: sessions.get(&t).cloned().unwrap_or_default(),
                counters: counters.get(&t).cloned().unwrap_or_default(),
            }
        })
        .collect();
    let r = &run.row;
    Timeline {
        plan: if several {
            r.plan.clone()
        } else {
            String::new()
        },
        engine: r.engine.clone(),
        profile: r.profile.clone(),
        workload: r.workload.clone(),
        clients: r.clients,
        repeat: r.repeat,
        seconds,
        statements: serde_json::from_value(run.result["statements"].clone()).ok(),
        embedded: serde_json::from_value(run.result["embedded_waits"].clone()).ok(),
        phases: serde_json::from_value(run.result["phases"].clone()).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn what_the_observation_missed_is_said_and_what_a_run_recorded_weakens_it() {
        let full = json!({"waits": {"missed": 0}, "server_counters": {"missed": 0}});
        assert!(missed(&[&full]).is_empty());
        let short = json!({"waits": {"missed": 7}, "server_counters": {"missed": 2}});
        let said = missed(&[&full, &short, &short]);
        assert_eq!(said.len(), 2);
        assert!(
            said[0].starts_with("the wait sampler missed 14 of its samples"),
            "{said:?}"
        );
        assert!(
            said[1].starts_with("4 of the server counters' readings"),
            "{said:?}"
        );
        // A run whose script turned the sync off recorded it: the report keeps it, though the
        // server's settings alone are durable.
        let settings = json!({"journal_mode": "wal", "synchronous": "2"});
        let mut r = json!({"engine": {"name": "sqlite", "settings": settings}});
        assert_eq!(durability_of(&r).level, durability::Level::Durable);
        r["engine"]["durability"] =
            json!({"level": "unsafe", "why": ["synchronous=OFF (set by s.sql:1)"]});
        assert_eq!(durability_of(&r).level, durability::Level::Unsafe);
    }

    #[test]
    fn a_connect_row_only_for_points_that_opened_more_than_their_clients_first_connections() {
        let run = |opened: u64, p99: f64| {
            json!({"duration_s": 2.0, "connections": {"opened": opened, "initial": 2,
                   "failed": 1, "storm_s": 0.25, "connect_ms": {"p50": 1.0, "p95": 2.0, "p99": p99}}})
        };
        let (a, b, plain) = (run(42, 3.0), run(22, 5.0), run(2, 9.0));
        assert!(connect_row(&[&plain]).is_none());
        let row = connect_row(&[&a, &b]).unwrap();
        assert_eq!(
            row.name,
            "connect (42 opened; clients connected in 0.250 s)"
        );
        assert_eq!((row.p99_ms, row.errors, row.executions), (4.0, 2, 42));
        assert!((row.tps - 16.0).abs() < 1e-9, "{}", row.tps);
    }
}
