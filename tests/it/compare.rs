//! `dbduel compare` on real runs on embedded SQLite: two result files (a closed-loop run and
//! one held to 10 tps) judged by their seconds; two sweep points of three repeats each
//! (SQLite's default profile against `unsafe`, synchronous off) judged by their repeats, by
//! @ID and by id lists; --fail-if exit codes; JSON checked against schema/compare.schema.json;
//! refusals.

use std::path::Path;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::env::{dbduel, ensure, expect_code, refusals, text};

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![
        crate::env::trial("compare::result_files_one_run_each", || Ok(result_files()?)),
        crate::env::trial("compare::sweep_points_with_repeats", || Ok(sweep_points()?)),
    ];
    trials.extend(refusals(
        "compare",
        [
            (
                "malformed_fail_if",
                &["compare", "1", "2", "--fail-if", "tps<<5"][..],
                "--fail-if 'tps<<5'",
            ),
            (
                "unknown_fail_if_figure",
                &["compare", "1", "2", "--fail-if", "qps<-5%"][..],
                "unknown figure 'qps'",
            ),
            (
                "bad_point",
                &["compare", "@one", "2"][..],
                "compare A '@one'",
            ),
            (
                "missing_file",
                &["compare", "1", "/nonexistent/b.json"][..],
                "no such file or run id: /nonexistent/b.json",
            ),
            (
                "missing_store",
                &["compare", "1", "2", "--results", "/nonexistent/r.db"][..],
                "no results store at /nonexistent/r.db",
            ),
        ],
    ));
    trials
}

/// Run dbduel and fail unless it exits with `code`; its standard output.
fn run_ok(args: &[&str], code: i32) -> Result<String, String> {
    let out = dbduel(args);
    expect_code(&out, code, &args.join(" "))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A comparison as JSON, checked against the schema.
pub fn compare_json(args: &[&str]) -> Result<Value, String> {
    let mut all = vec!["compare"];
    all.extend(args);
    all.extend(["--format", "json"]);
    let stdout = run_ok(&all, 0)?;
    let value: Value = serde_json::from_str(&stdout).map_err(|e| format!("{e}:\n{stdout}"))?;
    let schema: Value = serde_json::from_str(include_str!("../../schema/compare.schema.json"))
        .map_err(|e| e.to_string())?;
    let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    ensure(errors.is_empty(), || {
        format!(
            "comparison does not match schema/compare.schema.json:\n{}",
            errors.join("\n")
        )
    })?;
    Ok(value)
}

fn verdict(c: &Value, figure: &str) -> String {
    c["figures"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["name"] == figure))
        .map(|f| f["verdict"].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

/// A run held to 200 tps against one held to 10 tps: slower beyond the noise by its seconds,
/// --fail-if exits 1 only for the condition it meets; a run against itself shows no
/// difference; a run of another variant is refused. Both runs keep a rate: a closed loop's
/// seconds swing with whatever else the machine runs, and twelve strongly autocorrelated
/// seconds leave too few independent ones to call even a 100x change beyond the noise.
fn result_files() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = |n: &str| dir.path().join(n).display().to_string();
    let (a, b, c) = (file("a.json"), file("b.json"), file("c.json"));
    run_ok(&["run", "tpcb", "-T", "12", "-R", "200", "--json", &a], 0)?;
    run_ok(&["run", "tpcb", "-T", "12", "-R", "10", "--json", &b], 0)?;
    let cmp = compare_json(&[&a, &b])?;
    ensure(cmp["method"] == "seconds", || cmp.to_string())?;
    ensure(verdict(&cmp, "tps") == "slower", || cmp.to_string())?;
    ensure(
        cmp["differences"]
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["name"] == "options.rate")),
        || format!("the rate is not among the differences: {cmp}"),
    )?;
    // A run against itself is no comparison: refused, naming it.
    let same = dbduel(&["compare", &a, &a]);
    expect_code(&same, 2, "compare a run with itself")?;
    ensure(text(&same).contains("are the same run"), || text(&same))?;
    let txt = run_ok(&["compare", &a, &b, "--fail-if", "tps<-5%"], 1)?;
    ensure(
        txt.contains("circular block bootstrap") && txt.contains("fail-if tps<-5%: FAILED"),
        || txt.clone(),
    )?;
    let md = run_ok(
        &[
            "compare",
            &a,
            &b,
            "--fail-if",
            "tps>+5%",
            "--format",
            "markdown",
        ],
        0,
    )?;
    ensure(md.contains("| tps |") && md.contains("slower"), || {
        md.clone()
    })?;
    // A side of two seconds cannot be judged: the gate fails rather than pass in silence.
    let short = file("short.json");
    run_ok(&["run", "tpcb", "-T", "2", "--json", &short], 0)?;
    let unjudged = run_ok(&["compare", &a, &short, "--fail-if", "p99>+10%"], 1)?;
    for needle in [
        "fail-if p99>+10%: FAILED",
        "could not be judged",
        "longer -T",
    ] {
        ensure(unjudged.contains(needle), || {
            format!("no '{needle}':\n{unjudged}")
        })?;
    }
    run_ok(&["run", "tpcb", "-S", "-T", "1", "--json", &c], 0)?;
    let out = dbduel(&["compare", &a, &c]);
    expect_code(&out, 2, "compare of two variants")?;
    ensure(text(&out).contains("compare runs of one workload"), || {
        text(&out)
    })
}

/// The run ids of a profile's repeats, from `results export`.
fn ids_of(store: &Path, profile: &str) -> Result<Vec<i64>, String> {
    let out = run_ok(
        &[
            "results",
            "export",
            "--format",
            "json",
            "--results",
            &store.display().to_string(),
        ],
        0,
    )?;
    let rows: Value = serde_json::from_str(&out).map_err(|e| e.to_string())?;
    Ok(rows
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["profile"] == profile)
        .filter_map(|r| r["id"].as_i64())
        .collect())
}

/// SQLite with and without synchronous writes, three repeats each: the unsafe profile is
/// faster beyond the noise by the repeats, whether the sides are named @ID or as id lists;
/// one run each is judged by its seconds; an unknown id is refused.
fn sweep_points() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = dir.path().join("cmp.toml");
    std::fs::write(
        &plan,
        "name = \"cmp\"\nengines = [\"sqlite\"]\nprofiles = [\"default\", \"unsafe\"]\nclients = [1]\ntime = 2\nrepeats = 3\n",
    )
    .map_err(|e| e.to_string())?;
    let store = dir.path().join("r.db");
    let results = store.display().to_string();
    run_ok(
        &["sweep", &plan.display().to_string(), "--results", &results],
        0,
    )?;
    let (safe, fast) = (ids_of(&store, "default")?, ids_of(&store, "unsafe")?);
    ensure(safe.len() == 3 && fast.len() == 3, || {
        format!("{safe:?} {fast:?}")
    })?;
    let (pa, pb) = (format!("@{}", safe[1]), format!("@{}", fast[0]));
    let by_point = compare_json(&[&pa, &pb, "--results", &results])?;
    ensure(by_point["method"] == "repeats", || by_point.to_string())?;
    ensure(
        by_point["a"]["runs"] == 3 && by_point["b"]["runs"] == 3,
        || by_point.to_string(),
    )?;
    ensure(verdict(&by_point, "tps") == "faster", || {
        by_point.to_string()
    })?;
    ensure(
        by_point["differences"].as_array().is_some_and(|d| {
            d.iter()
                .any(|d| d["name"] == "profile" && d["b"] == "unsafe")
        }),
        || format!("the profile is not among the differences: {by_point}"),
    )?;
    let list = |ids: &[i64]| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    let (la, lb) = (list(&safe), list(&fast));
    let by_ids = compare_json(&[&la, &lb, "--results", &results])?;
    ensure(by_ids["figures"] == by_point["figures"], || {
        format!("@ID and the id list differ:\n{by_point}\n{by_ids}")
    })?;
    let one_each = run_ok(
        &[
            "compare",
            &safe[0].to_string(),
            &fast[0].to_string(),
            "--results",
            &results,
        ],
        0,
    )?;
    ensure(one_each.contains("per-second windows"), || one_each.clone())?;
    let out = dbduel(&["compare", "999", &pb, "--results", &results]);
    expect_code(&out, 2, "compare of an unknown run")?;
    ensure(text(&out).contains("no run 999 in"), || text(&out))
}
