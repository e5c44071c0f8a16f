//! Shards and `merge`: three `run --shard I/3 --start-at` processes of one TPC-C run against one
//! PostgreSQL, merged: totals are the shards' sums, each percentile is the one of the shards'
//! histograms merged, windows line up, NOPM follows from the merged counts, `check` passes; each
//! refusal of `merge` (a missing or doubled shard, another run's options or version, windows that
//! do not overlap, a result that is no shard's) and of `--shard`; the Kubernetes manifests'
//! structure (an Indexed Job whose pods are the shards, and the merge) and that dbduel parses the
//! run's arguments; a one-node Slurm cluster of its own (slurm-wlm, which scripts/test installs:
//! munged, slurmctld and slurmd on free ports) running the shards with `srun -n 2 ... --shard
//! auto`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use base64::Engine as _;
use hdrhistogram::Histogram;
use libtest_mimic::Trial;
use serde_json::Value;

use crate::env::{Env, Target, dbduel, ensure, expect_code, read_result, refusals, text, with_env};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out = refusals(
        "shards",
        [
            (
                "index_past_count",
                &["run", "tpcb", "-c", "4", "--shard", "4/4"][..],
                "must be below the number of shards (4)",
            ),
            (
                "not_i_of_n",
                &["run", "tpcb", "--shard", "second"][..],
                "give I/N",
            ),
            (
                "more_shards_than_clients",
                &["run", "tpcb", "-c", "2", "--shard", "0/4"][..],
                "4 shards need at least 4 clients",
            ),
            (
                "auto_outside_an_orchestrator",
                &["run", "tpcb", "--shard", "auto"][..],
                "SLURM_NTASKS",
            ),
            (
                "tpch_streams",
                &["run", "tpch", "--shard", "0/2"][..],
                "cannot be split",
            ),
            (
                "ycsb_inserts",
                &[
                    "run",
                    "ycsb",
                    "-P",
                    "workloadd",
                    "-c",
                    "2",
                    "--shard",
                    "0/2",
                ][..],
                "insertproportion",
            ),
            (
                "start_at_passed",
                &["run", "tpcb", "--start-at", "2020-01-01T00:00:00Z"][..],
                "has passed",
            ),
            (
                "start_at_years_ahead",
                &["run", "tpcb", "--start-at", "2099-01-01T00:00:00Z"][..],
                "more than a day away",
            ),
            (
                "start_at_malformed",
                &["run", "tpcb", "--start-at", "tomorrow"][..],
                "give an RFC 3339 time",
            ),
        ],
    );
    out.push(with_env(
        env,
        "shards::tpcc_postgres_three_shards_merged",
        three_shards,
    ));
    out.push(with_env(env, "shards::merge_refuses", merge_refusals));
    out.push(with_env(
        env,
        "shards::open_loop_shards_started_apart",
        started_apart,
    ));
    out.push(with_env(env, "shards::slurm_one_node_srun", slurm));
    out.push(crate::env::trial("shards::kubernetes_manifests", || {
        Ok(kubernetes()?)
    }));
    out
}

/// An RFC 3339 time `secs` from now.
fn in_seconds(secs: u64) -> String {
    humantime::format_rfc3339_seconds(
        std::time::SystemTime::now() + std::time::Duration::from_secs(secs),
    )
    .to_string()
}

/// Run `shards` processes of one run at once, each with its --json file; their exit codes
/// must be 0.
pub fn run_shards(
    env: &Env,
    name: &str,
    shards: u32,
    args: &[&str],
) -> Result<Vec<PathBuf>, String> {
    let at = in_seconds(8);
    let mut children = Vec::new();
    let mut files = Vec::new();
    for i in 0..shards {
        let file = env.path(&format!("{name}-{i}.json"));
        let child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
            .args(args)
            .args(["--shard", &format!("{i}/{shards}"), "--start-at", &at])
            .arg("--json")
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting shard {i}: {e}"))?;
        children.push(child);
        files.push(file);
    }
    for (i, child) in children.into_iter().enumerate() {
        let out = child
            .wait_with_output()
            .map_err(|e| format!("shard {i}: {e}"))?;
        expect_code(&out, 0, &format!("shard {i}/{shards}"))?;
    }
    Ok(files)
}

pub fn merge(files: &[PathBuf], json: &Path) -> std::process::Output {
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--json".into(), json.display().to_string()]);
    dbduel(&args)
}

pub fn histogram(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| e.to_string())?;
    dbduel::metrics::deserialize(&bytes)
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn three_shards(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "shards_tpcc");
    let prepare = dbduel(&["prepare", "tpcc", "--warehouses", "2", "--dsn", &dsn]);
    expect_code(&prepare, 0, "prepare tpcc --warehouses 2")?;
    let args = [
        "run",
        "tpcc",
        "--dsn",
        &dsn,
        "-c",
        "6",
        "-T",
        "4",
        "--max-tries",
        "1000",
    ];
    let files = run_shards(env, "tpcc-shard", 3, &args)?;
    let shards: Vec<Value> = files
        .iter()
        .map(|f| read_result(f))
        .collect::<Result<_, _>>()?;
    let json = env.path("tpcc-merged.json");
    let store = env.fresh_db(Target::Postgres, "shards_store");
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(
        [
            "--json",
            &json.display().to_string(),
            "--store",
            &store,
            "--plan",
            "sharded",
        ]
        .map(String::from),
    );
    let merged = dbduel(&args);
    expect_code(&merged, 0, "merge")?;
    let summary = text(&merged);
    ensure(summary.contains("merged from 3 shards"), || {
        format!("summary:\n{summary}")
    })?;
    let m = read_result(&json)?;

    // One set of NURand run constants for the whole run (clause 2.1.6), recorded by each.
    let constants = |r: &Value| r["workload"]["settings"]["nurand_run_constants"].clone();
    ensure(
        constants(&shards[0]).is_string()
            && shards.iter().all(|s| constants(s) == constants(&shards[0]))
            && constants(&m) == constants(&shards[0]),
        || {
            let each: Vec<Value> = shards.iter().map(constants).collect();
            format!("the shards' run constants differ: {each:?}")
        },
    )?;
    // Each shard ran its own two clients of the six, and recorded the whole run's options.
    for (i, s) in shards.iter().enumerate() {
        let p = &s["shard"];
        ensure(
            p["index"] == i && p["count"] == 3 && p["first_client"] == 2 * i && p["clients"] == 2,
            || format!("shard {i}: {p}"),
        )?;
        ensure(s["options"]["clients"] == 6, || {
            format!("shard {i} options: {}", s["options"])
        })?;
    }
    let sum = |key: &str| shards.iter().map(|s| num(&s[key])).sum::<f64>();
    for key in ["transactions", "queries", "errors", "retries", "rollbacks"] {
        ensure(num(&m[key]) == sum(key), || {
            format!(
                "merged {key} {} is not the shards' sum {}",
                m[key],
                sum(key)
            )
        })?;
    }
    ensure(
        m.get("shard").is_none() && m["shards"].as_array().map(Vec::len) == Some(3),
        || format!("merged shards: {}", m["shards"]),
    )?;

    // Each type's percentiles are those of the shards' histograms merged.
    let mut all: Option<Histogram<u64>> = None;
    for (k, t) in m["transaction_types"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let name = t["name"].as_str().unwrap_or_default();
        let mut h: Option<Histogram<u64>> = None;
        let mut transactions = 0.0;
        for s in &shards {
            let sh = histogram(s["shard"]["histograms"][name].as_str().unwrap_or_default())?;
            match &mut h {
                Some(acc) => acc.add(&sh).map_err(|e| format!("{e:?}"))?,
                None => h = Some(sh),
            }
            transactions += num(&s["transaction_types"][k]["transactions"]);
        }
        let h = h.ok_or("no shard")?;
        ensure(
            num(&t["transactions"]) == transactions && h.len() as f64 == transactions,
            || {
                format!(
                    "{name}: merged {} transactions, shards {transactions}, histogram {}",
                    t["transactions"],
                    h.len()
                )
            },
        )?;
        for (q, key) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p99_9")] {
            let want = h.value_at_quantile(q) as f64 / 1000.0;
            ensure(num(&t["latency_ms"][key]) == want, || {
                format!(
                    "{name} {key}: merged {} against the merged histograms' {want}",
                    t["latency_ms"][key]
                )
            })?;
        }
        match &mut all {
            Some(acc) => acc.add(&h).map_err(|e| format!("{e:?}"))?,
            None => all = Some(h),
        }
    }
    let all = all.ok_or("no transaction types")?;
    let want = all.value_at_quantile(0.99) as f64 / 1000.0;
    ensure(num(&m["latency_ms"]["p99"]) == want, || {
        format!(
            "p99 of all: merged {} against {want}",
            m["latency_ms"]["p99"]
        )
    })?;

    // Every shard's seconds are in the merged timeline, and the shards started together.
    let in_windows = |r: &Value| {
        r["windows"]
            .as_array()
            .map(|w| w.iter().map(|w| num(&w["transactions"])).sum::<f64>())
            .unwrap_or(0.0)
    };
    let shard_windows: f64 = shards.iter().map(in_windows).sum();
    ensure(in_windows(&m) == shard_windows, || {
        format!(
            "merged windows hold {} transactions, the shards' {shard_windows}",
            in_windows(&m)
        )
    })?;
    for s in m["shards"].as_array().cloned().unwrap_or_default() {
        ensure(num(&s["offset_s"]) < 1.0, || {
            format!("a shard started late despite --start-at: {s}")
        })?;
    }

    // NOPM as one run of the whole computes it.
    let no = &m["transaction_types"][0];
    let minutes = num(&m["duration_s"]) / 60.0;
    let nopm = num(&m["workload"]["metrics"]["nopm"]);
    let want = (num(&no["transactions"]) - num(&no["rollbacks"])) / minutes;
    ensure(nopm > 0.0 && (nopm - want).abs() < 1e-6 * nopm, || {
        format!("merged nopm {nopm}, from the merged counts {want}")
    })?;
    // The merged run is in the shared store, with its figures.
    let listed = dbduel(&["results", "export", "--format", "json", "--results", &store]);
    expect_code(&listed, 0, "results export from the store the merge wrote")?;
    let rows: Value = serde_json::from_slice(&listed.stdout).map_err(|e| e.to_string())?;
    let row = &rows[0];
    ensure(
        row["plan"] == "sharded"
            && row["clients"] == 6
            && num(&row["tps"]) == num(&m["tps"])
            && num(&row["metrics"]["nopm"]) == nopm,
        || format!("stored: {rows}"),
    )?;
    let check = dbduel(&["check", "tpcc", "--dsn", &dsn]);
    expect_code(&check, 0, "check tpcc after the sharded run")
}

/// Two shards of a run on SQLite, then `merge` given what is not one whole run.
fn merge_refusals(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "shards_refusals");
    expect_code(
        &dbduel(&["prepare", "tpcb", "--dsn", &dsn]),
        0,
        "prepare tpcb",
    )?;
    let args = [
        "run",
        "tpcb",
        "--dsn",
        &dsn,
        "-c",
        "2",
        "-T",
        "2",
        "--max-tries",
        "100",
    ];
    let files = run_shards(env, "refuse-shard", 2, &args)?;
    let plain = env.path("refuse-plain.json");
    let run = dbduel(&[
        "run",
        "tpcb",
        "--dsn",
        &dsn,
        "-T",
        "1",
        "--json",
        &plain.display().to_string(),
    ]);
    expect_code(&run, 0, "a run without --shard")?;
    let changed = |name: &str, edit: &dyn Fn(&mut Value)| -> Result<PathBuf, String> {
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(&files[1]).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        edit(&mut v);
        let path = env.path(name);
        std::fs::write(&path, v.to_string()).map_err(|e| e.to_string())?;
        Ok(path)
    };
    let later = changed("refuse-later.json", &|v| {
        let at = v["shard"]["started_unix_ms"].as_u64().unwrap_or(0);
        v["shard"]["started_unix_ms"] = (at + 3_600_000).into();
    })?;
    let warmup = changed("refuse-warmup.json", &|v| {
        v["options"]["warmup_s"] = 5.into()
    })?;
    let version = changed("refuse-version.json", &|v| {
        v["dbduel_version"] = "0.0.1".into()
    })?;
    let types = changed("refuse-types.json", &|v| {
        // Another workload file of the same name whose first query is named otherwise.
        let old = v["transaction_types"][0]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        v["transaction_types"][0]["name"] = "other_query".into();
        if let Some(h) = v["shard"]["histograms"].as_object_mut() {
            let text = h.remove(&old).unwrap_or(Value::Null);
            h.insert("other_query".into(), text);
        }
    })?;
    let server = changed("refuse-server.json", &|v| {
        if let Some((_, value)) = v["engine"]["settings"]
            .as_object_mut()
            .and_then(|m| m.iter_mut().next())
        {
            *value = "changed".into();
        }
    })?;
    let constants = changed("refuse-constants.json", &|v| {
        v["workload"]["settings"]["nurand_run_constants"] = "C_LAST 1, C_ID 2, OL_I_ID 3".into();
    })?;
    let json = env.path("refuse-merged.json");
    // Each case: the files given after the first shard's, and what the refusal says.
    let cases: [(&str, Vec<PathBuf>, &str); 9] = [
        (
            "missing",
            vec![],
            "one that could not start or connect writes none",
        ),
        ("types", vec![types], "differ in the transaction types"),
        ("server settings", vec![server], "the server's setting"),
        (
            "constants",
            vec![constants],
            "setting nurand_run_constants differs",
        ),
        (
            "twice",
            vec![files[1].clone(), files[1].clone()],
            "shard 1/2 is given twice",
        ),
        ("options", vec![warmup], "differ in --warmup"),
        ("version", vec![version], "differ in dbduel's version"),
        ("apart", vec![later], "do not overlap"),
        ("plain", vec![plain], "not a shard's result"),
    ];
    for (what, others, needle) in cases {
        let given: Vec<PathBuf> = std::iter::once(files[0].clone()).chain(others).collect();
        let out = merge(&given, &json);
        expect_code(&out, 2, &format!("merge refuses {what}"))?;
        let all = text(&out);
        ensure(all.contains(needle), || {
            format!("{what}: message lacks '{needle}':\n{all}")
        })?;
    }
    ensure(!json.exists(), || "a refused merge wrote a result".into())?;
    expect_code(&merge(&files, &json), 0, "merge of both shards")?;
    stored_once(env, &files)?;
    let again = merge(
        &[json.clone(), files[0].clone()],
        &env.path("refuse-again.json"),
    );
    expect_code(&again, 2, "merge refuses a merged result")?;
    ensure(
        text(&again).contains("a merged result (of 2 shards)"),
        || format!("merging a merged result:\n{}", text(&again)),
    )?;
    // Another DSN for the same server (another host name) is merged, with a warning that
    // names both without a password.
    let other = changed("refuse-dsn.json", &|v| {
        v["engine"]["dsn"] = "sqlite:///elsewhere/the-same.db".into()
    })?;
    let out = merge(&[files[0].clone(), other], &env.path("dsn-merged.json"));
    expect_code(&out, 0, "merge of shards that name the server differently")?;
    ensure(
        text(&out).contains("different DSNs")
            && text(&out).contains("sqlite:///elsewhere/the-same.db"),
        || format!("no warning of the DSNs:\n{}", text(&out)),
    )
}

/// The same shards merged into a store twice (a retried merge job), on SQLite and on
/// PostgreSQL: the second merge says the run is stored already and the store holds it once.
fn stored_once(env: &Env, files: &[PathBuf]) -> Result<(), String> {
    let stores = [
        env.path("twice.db").display().to_string(),
        env.fresh_db(Target::Postgres, "shards_twice"),
    ];
    for store in stores {
        let mut args: Vec<String> = vec!["merge".into()];
        args.extend(files.iter().map(|f| f.display().to_string()));
        args.extend(["--store", &store, "--plan", "sharded"].map(String::from));
        expect_code(&dbduel(&args), 0, "merge into a store")?;
        let again = dbduel(&args);
        expect_code(&again, 0, "the same merge into the store again")?;
        ensure(text(&again).contains("not stored again"), || {
            format!(
                "{store}: the second merge did not say so:\n{}",
                text(&again)
            )
        })?;
        let listed = dbduel(&["results", "export", "--format", "json", "--results", &store]);
        expect_code(&listed, 0, "results export")?;
        let rows: Value = serde_json::from_slice(&listed.stdout).map_err(|e| e.to_string())?;
        ensure(rows.as_array().map(Vec::len) == Some(1), || {
            format!("{store} holds the merged run more than once: {rows}")
        })?;
    }
    Ok(())
}

fn yaml(name: &str) -> Result<yaml_rust2::Yaml, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/kubernetes")
        .join(name);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut docs =
        yaml_rust2::YamlLoader::load_from_str(&text).map_err(|e| format!("{name}: {e}"))?;
    ensure(docs.len() == 1, || {
        format!("{name}: {} documents", docs.len())
    })?;
    Ok(docs.remove(0))
}

fn strings(y: &yaml_rust2::Yaml) -> Vec<String> {
    y.as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// deploy/kubernetes: the run is an Indexed Job of N pods, each `dbduel run --shard auto/N`
/// (arguments dbduel parses), with the DSN from a Secret, a start time, and its result on
/// the volume the merge Job reads.
fn kubernetes() -> Result<(), String> {
    use clap::Parser;
    let run = yaml("run-job.yaml")?;
    let spec = &run["spec"];
    ensure(
        run["apiVersion"].as_str() == Some("batch/v1")
            && run["kind"].as_str() == Some("Job")
            && spec["completionMode"].as_str() == Some("Indexed"),
        || format!("run-job.yaml is not an Indexed Job: {run:?}"),
    )?;
    let n = spec["completions"]
        .as_i64()
        .ok_or("run-job.yaml: no completions")?;
    ensure(spec["parallelism"].as_i64() == Some(n), || {
        "run-job.yaml: parallelism differs from completions: the shards would not run together"
            .into()
    })?;
    let pod = &spec["template"]["spec"];
    let c = &pod["containers"][0];
    let args = strings(&c["args"]);
    ensure(
        args.windows(2)
            .any(|w| w[0] == "--shard" && w[1] == format!("auto/{n}")),
        || format!("run-job.yaml: the args lack --shard auto/{n}: {args:?}"),
    )?;
    let env: Vec<(String, &yaml_rust2::Yaml)> = c["env"]
        .as_vec()
        .map(|v| {
            v.iter()
                .map(|e| (e["name"].as_str().unwrap_or("").to_string(), e))
                .collect()
        })
        .unwrap_or_default();
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, e)| *e);
    let dsn = var("DBDUEL_DSN").ok_or("run-job.yaml: no DBDUEL_DSN")?;
    ensure(!dsn["valueFrom"]["secretKeyRef"].is_badvalue(), || {
        "run-job.yaml: DBDUEL_DSN must come from a Secret, not the manifest".into()
    })?;
    let at = var("DBDUEL_START_AT")
        .and_then(|e| e["value"].as_str())
        .ok_or("run-job.yaml: no DBDUEL_START_AT")?;
    humantime::parse_rfc3339_weak(at).map_err(|e| format!("DBDUEL_START_AT {at}: {e}"))?;
    let index = var("DBDUEL_SHARD_INDEX").ok_or("run-job.yaml: no DBDUEL_SHARD_INDEX")?;
    ensure(
        index["valueFrom"]["fieldRef"]["fieldPath"].as_str()
            == Some("metadata.annotations['batch.kubernetes.io/job-completion-index']"),
        || format!("DBDUEL_SHARD_INDEX: {index:?}"),
    )?;
    let mut argv = vec!["dbduel".to_string()];
    argv.extend(args.iter().map(|a| a.replace("$(DBDUEL_SHARD_INDEX)", "0")));
    dbduel::cli::Cli::try_parse_from(&argv).map_err(|e| format!("run-job.yaml's args: {e}"))?;
    let json = args
        .windows(2)
        .find(|w| w[0] == "--json")
        .map(|w| w[1].clone())
        .ok_or("run-job.yaml: no --json")?;
    let mount = c["volumeMounts"][0]["mountPath"].as_str().unwrap_or("");
    ensure(
        !mount.is_empty() && json.starts_with(mount) && json.contains("$(DBDUEL_SHARD_INDEX)"),
        || {
            format!(
                "run-job.yaml: --json {json} is not one file per shard on the volume at {mount}"
            )
        },
    )?;
    let claim = pod["volumes"][0]["persistentVolumeClaim"]["claimName"]
        .as_str()
        .unwrap_or("");

    let merge = yaml("merge-job.yaml")?;
    let mc = &merge["spec"]["template"]["spec"]["containers"][0];
    let command = strings(&mc["args"]).join(" ");
    let glob = json.replace("$(DBDUEL_SHARD_INDEX)", "*");
    ensure(
        merge["kind"].as_str() == Some("Job") && command.contains(&format!("dbduel merge {glob}")),
        || format!("merge-job.yaml does not merge {glob}: {command}"),
    )?;
    // The shared store is optional: a Secret that may be absent, and --store only when it is there.
    let store = &mc["env"][0];
    ensure(
        store["name"].as_str() == Some("DBDUEL_STORE")
            && store["valueFrom"]["secretKeyRef"]["optional"].as_bool() == Some(true)
            && command.contains("${DBDUEL_STORE:+--store \"$DBDUEL_STORE\""),
        || format!("merge-job.yaml does not keep the run in an optional shared store: {command}"),
    )?;
    ensure(
        merge["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
            .as_str()
            == Some(claim)
            && mc["volumeMounts"][0]["mountPath"].as_str() == Some(mount),
        || format!("merge-job.yaml does not mount the run's volume {claim} at {mount}"),
    )?;
    let pvc = yaml("results-volume.yaml")?;
    ensure(
        pvc["kind"].as_str() == Some("PersistentVolumeClaim")
            && pvc["metadata"]["name"].as_str() == Some(claim)
            && strings(&pvc["spec"]["accessModes"]).contains(&"ReadWriteMany".to_string()),
        || format!("results-volume.yaml is not the ReadWriteMany claim {claim}"),
    )
}

/// Two open-loop shards on SQLite started two seconds apart, without --start-at: the merged
/// timeline holds the later shard's seconds two windows on, the schedules and their lag are
/// merged, and the merge says how far apart the shards started.
fn started_apart(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "shards_apart");
    expect_code(
        &dbduel(&["prepare", "tpcb", "--dsn", &dsn]),
        0,
        "prepare tpcb",
    )?;
    let mut children = Vec::new();
    let mut files = Vec::new();
    for i in 0..2 {
        let file = env.path(&format!("apart-{i}.json"));
        let child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
            .args([
                "run", "tpcb", "--dsn", &dsn, "-c", "2", "-T", "4", "-R", "40",
            ])
            .args(["--max-tries", "100", "--shard", &format!("{i}/2"), "--json"])
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        children.push(child);
        files.push(file);
        std::thread::sleep(std::time::Duration::from_millis(2200));
    }
    for child in children {
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        expect_code(&out, 0, "an open-loop shard")?;
    }
    let shards: Vec<Value> = files
        .iter()
        .map(|f| read_result(f))
        .collect::<Result<_, _>>()?;
    let json = env.path("apart-merged.json");
    let out = merge(&files, &json);
    expect_code(&out, 0, "merge")?;
    let m = read_result(&json)?;
    let offset = num(&m["shards"][1]["offset_s"]);
    ensure((1.5..4.0).contains(&offset), || {
        format!("shard 1 started +{offset} s")
    })?;
    let whole = offset.round() as usize;
    // The later shard's first second is the merged timeline's second whole + 1.
    let (w0, w1, wm) = (&shards[0]["windows"], &shards[1]["windows"], &m["windows"]);
    let len = |w: &Value| w.as_array().map_or(0, Vec::len);
    ensure(len(wm) == len(w0).max(whole + len(w1)), || {
        format!(
            "merged {} windows from {} and {} at +{whole}",
            len(wm),
            len(w0),
            len(w1)
        )
    })?;
    for k in 0..len(wm) {
        let at = |w: &Value, i: Option<usize>| {
            i.and_then(|i| w.get(i))
                .map_or(0.0, |x| num(&x["transactions"]))
        };
        let want = at(w0, Some(k)) + at(w1, k.checked_sub(whole));
        ensure(num(&wm[k]["transactions"]) == want, || {
            format!(
                "merged second {}: {} transactions, the shards' {want}",
                k + 1,
                wm[k]["transactions"]
            )
        })?;
    }
    let due = |r: &Value| num(&r["open_loop"]["due"]);
    ensure(
        due(&m) == due(&shards[0]) + due(&shards[1]) && m["schedule_lag_ms"]["p99"].is_number(),
        || format!("open loop {} lag {}", m["open_loop"], m["schedule_lag_ms"]),
    )?;
    ensure(m["options"]["rate"] == 40.0, || {
        format!("rate {}", m["options"]["rate"])
    })?;
    let all = text(&out);
    ensure(all.contains("started up to"), || {
        format!("no warning of the gap:\n{all}")
    })
}

/// A free TCP port on the loopback interface.
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// The daemons of a one-node Slurm cluster, killed on drop.
struct Slurm {
    daemons: Vec<std::process::Child>,
    conf: PathBuf,
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for d in &mut self.daemons {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

impl Slurm {
    /// munged on a socket of its own, slurmctld and slurmd on free ports, all in `dir`;
    /// ready once the node is idle.
    fn start(dir: &Path) -> Result<Slurm, String> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map_err(|e| e.to_string())?
            .trim()
            .to_string();
        let d = dir.display();
        let socket = dir.join("munge.socket");
        let spawn = |cmd: &mut Command| {
            cmd.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("{cmd:?}: {e} (scripts/test installs slurm-wlm)"))
        };
        let mut slurm = Slurm {
            daemons: Vec::new(),
            conf: dir.join("slurm.conf"),
        };
        slurm.daemons.push(spawn(
            Command::new("/usr/sbin/munged")
                .arg("--foreground")
                .arg("--force")
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--pid-file={d}/munged.pid"))
                .arg(format!("--log-file={d}/munged.log"))
                .arg(format!("--seed-file={d}/munged.seed")),
        )?);
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let conf = format!(
            "ClusterName=dbduel\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser=root\nSlurmctldPort={}\nSlurmdPort={}\n\
             AuthType=auth/munge\nAuthInfo=socket={}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/ctld.pid\nSlurmdPidFile={d}/d.pid\nSlurmctldLogFile={d}/ctld.log\nSlurmdLogFile={d}/d.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             SchedulerType=sched/builtin\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nMpiDefault=none\n\
             ReturnToService=2\nNodeName={host} NodeAddr=127.0.0.1 CPUs={cores} State=UNKNOWN\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE\n",
            free_port()?,
            free_port()?,
            socket.display()
        );
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
        }
        std::fs::write(&slurm.conf, conf).map_err(|e| e.to_string())?;
        for daemon in ["/usr/sbin/slurmctld", "/usr/sbin/slurmd"] {
            slurm.daemons.push(spawn(
                Command::new(daemon)
                    .arg("-D")
                    .arg("-f")
                    .arg(&slurm.conf)
                    .env("SLURM_CONF", &slurm.conf),
            )?);
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let state = Command::new("sinfo")
                .args(["-h", "-o", "%T"])
                .env("SLURM_CONF", &slurm.conf)
                .output()
                .map_err(|e| e.to_string())?;
            if String::from_utf8_lossy(&state.stdout).trim() == "idle" {
                return Ok(slurm);
            }
            if std::time::Instant::now() > deadline {
                let log = std::fs::read_to_string(dir.join("ctld.log")).unwrap_or_default();
                return Err(format!("the Slurm node did not become idle:\n{log}"));
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }
}

/// `srun -n 2` runs two shards of one run on a one-node Slurm cluster, each taking its index
/// and the count from Slurm (`--shard auto`); `merge` makes one result of them.
fn slurm(env: &Env) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let cluster = Slurm::start(dir.path())?;
    let dsn = env.fresh_db(Target::Sqlite, "shards_slurm");
    expect_code(
        &dbduel(&["prepare", "tpcb", "--dsn", &dsn]),
        0,
        "prepare tpcb",
    )?;
    let bin = env!("CARGO_BIN_EXE_dbduel");
    let out_dir = env.path("slurm");
    std::fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
    let script = format!(
        "{bin} run tpcb -S --dsn '{dsn}' -c 4 -T 2 --shard auto --start-at {} --json {}/shard-$SLURM_PROCID.json",
        in_seconds(10),
        out_dir.display()
    );
    let out = Command::new("srun")
        .args(["-n", "2", "--kill-on-bad-exit=1", "sh", "-c", &script])
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .map_err(|e| e.to_string())?;
    expect_code(&out, 0, "srun -n 2 dbduel run --shard auto")?;
    let files: Vec<PathBuf> = (0..2)
        .map(|i| out_dir.join(format!("shard-{i}.json")))
        .collect();
    let shards: Vec<Value> = files
        .iter()
        .map(|f| read_result(f))
        .collect::<Result<_, _>>()?;
    for (i, s) in shards.iter().enumerate() {
        ensure(s["shard"]["index"] == i && s["shard"]["count"] == 2, || {
            format!("shard {i}: {}", s["shard"])
        })?;
    }
    let json = env.path("slurm-merged.json");
    let merged = merge(&files, &json);
    expect_code(&merged, 0, "merge of the srun shards")?;
    let m = read_result(&json)?;
    let sum: f64 = shards.iter().map(|s| num(&s["transactions"])).sum();
    ensure(num(&m["transactions"]) == sum && sum > 0.0, || {
        format!(
            "merged {} transactions, the shards {sum}",
            m["transactions"]
        )
    })
}
