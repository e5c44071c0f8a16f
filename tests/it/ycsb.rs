//! YCSB beyond the conformance suite (which runs workloads A to F on every target and checks):
//! bad properties are refused with their names, workload E's scans and inserts on
//! PostgreSQL, `latest` updating the records just inserted, `operationcount` as the run's
//! length, and `check ycsb` failing on a damaged table.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, dbduel, ensure, expect_code, read_result, refusals, session, text, with_env,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let refused: [(&str, &[&str], &str); 5] = [
        (
            "unknown_property",
            &["run", "ycsb", "-p", "recordcuont=10"],
            "unknown YCSB property 'recordcuont'",
        ),
        (
            "bad_distribution",
            &["run", "ycsb", "-p", "requestdistribution=gaussian"],
            "requestdistribution=gaussian",
        ),
        (
            "bad_proportion",
            &["run", "ycsb", "-P", "workloadb", "-p", "readproportion=1.5"],
            "readproportion=1.5",
        ),
        (
            "no_equals",
            &[
                "prepare",
                "ycsb",
                "--dsn",
                "sqlite:///nonexistent/y.db",
                "-p",
                "fieldcount",
            ],
            "-p fieldcount: give a YCSB property as name=value",
        ),
        (
            "missing_file",
            &["run", "ycsb", "-P", "/nonexistent/workloadz"],
            "YCSB property file /nonexistent/workloadz",
        ),
    ];
    let mut out = refusals("ycsb", refused);
    out.push(with_env(
        env,
        "ycsb::workloade_scans_postgres",
        workloade_scans,
    ));
    out.push(with_env(
        env,
        "ycsb::latest_updates_recent_inserts",
        latest_reads_recent,
    ));
    out.push(crate::env::trial(
        "ycsb::template_file_runs_and_names_its_mix",
        || Ok(template_file()?),
    ));
    out.push(with_env(
        env,
        "ycsb::check_fails_on_damage",
        check_fails_on_damage,
    ));
    out
}

fn prepare(dsn: &str, extra: &[&str]) -> Result<(), String> {
    let mut args = vec!["prepare", "ycsb", "--dsn", dsn, "-p", "recordcount=1000"];
    args.extend(extra);
    expect_code(&dbduel(&args), 0, "prepare ycsb")
}

fn check(dsn: &str) -> std::process::Output {
    dbduel(&["check", "ycsb", "--dsn", dsn])
}

/// One operation type's figures in a result.
fn op<'a>(r: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    r["transaction_types"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == name)
}

/// Workload E: 95% scans and 5% inserts, in the prepared protocol; the scans return rows (the
/// queries are counted by the server), the inserts are counted by `check`.
fn workloade_scans(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "ycsb_e");
    prepare(&dsn, &[])?;
    let json = env.path("ycsb-e.json");
    let json_s = json.display().to_string();
    let run = dbduel(&[
        "run",
        "ycsb",
        "--dsn",
        &dsn,
        "-P",
        "workloade",
        "-c",
        "2",
        "-t",
        "300",
        "-M",
        "prepared",
        "--json",
        &json_s,
    ]);
    expect_code(&run, 0, "run -P workloade")?;
    let r = read_result(&json)?;
    let (scans, inserts) = (op(&r, "SCAN"), op(&r, "INSERT"));
    let count = |t: Option<&serde_json::Value>| t.and_then(|t| t["transactions"].as_u64());
    ensure(
        count(scans).unwrap_or(0) > 450 && count(inserts).unwrap_or(0) > 5,
        || format!("SCAN and INSERT expected: {}", r["transaction_types"]),
    )?;
    ensure(
        r["errors"] == 0 && r["workload"]["variant"] == "workloade",
        || format!("errors {} variant {}", r["errors_by_kind"], r["workload"]),
    )?;
    // The scans read rows: PostgreSQL counts the tuples fetched through the key's index.
    let mut s = session(&dsn);
    let fetched = s
        .query_text("SELECT idx_tup_read FROM pg_stat_user_indexes WHERE relname = 'usertable'")
        .map_err(|e| e.message)?;
    let fetched = fetched.first().and_then(|r| r[0].as_i64()).unwrap_or(0);
    ensure(fetched > 1000, || {
        format!("the scans read {fetched} index entries")
    })?;
    let checked = check(&dsn);
    expect_code(&checked, 0, "check after workloade")?;
    let all = text(&checked);
    let want = format!("1000 loaded + {} inserted", count(inserts).unwrap_or(0));
    ensure(all.contains(&want), || {
        format!("check lacks '{want}':\n{all}")
    })
}

/// `latest` draws the keys most recently inserted: with as many inserts as updates, the
/// updates land on the records the run inserted, seldom on the loaded ones (PostgreSQL's
/// xmin tells which rows the run wrote). A uniform draw over the loaded keys would put
/// every update there; a read of a key whose insert is not acknowledged would fail.
fn latest_reads_recent(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "ycsb_latest");
    prepare(&dsn, &["-p", "insertorder=ordered"])?;
    let mut s = session(&dsn);
    let loaded_xid = |s: &mut Box<dyn dbduel::engine::Session>| {
        s.query_text("SELECT max(xmin::text::bigint) FROM usertable")
            .map_err(|e| e.message)
            .map(|r| r[0][0].as_i64().unwrap_or(0))
    };
    let before = loaded_xid(&mut s)?;
    let json = env.path("ycsb-latest.json");
    let json_s = json.display().to_string();
    let run = dbduel(&[
        "run",
        "ycsb",
        "--dsn",
        &dsn,
        "-P",
        "workloadd",
        "-p",
        "readproportion=0.2",
        "-p",
        "updateproportion=0.4",
        "-p",
        "insertproportion=0.4",
        "-c",
        "2",
        "-t",
        "500",
        "--json",
        &json_s,
    ]);
    expect_code(&run, 0, "run workloadd with updates")?;
    let r = read_result(&json)?;
    ensure(r["errors"] == 0, || {
        format!("errors: {}", r["error_messages"])
    })?;
    let updates = op(&r, "UPDATE")
        .and_then(|t| t["transactions"].as_u64())
        .unwrap_or(0);
    let old = s
        .query_text(&format!(
            "SELECT count(*) FROM usertable WHERE xmin::text::bigint > {before} \
             AND length(YCSB_KEY) <= 7"
        ))
        .map_err(|e| e.message)?;
    let old = old[0][0].as_i64().unwrap_or(-1) as u64;
    // Keys user0..user999 were loaded: at most 7 characters; inserted ones are longer.
    ensure(updates > 250 && old * 3 < updates, || {
        format!("{old} loaded records updated by {updates} updates drawn by `latest`")
    })?;
    expect_code(&check(&dsn), 0, "check after latest")
}

/// `check ycsb` passes on a fresh load and fails, naming what is wrong, once a field is
/// shortened, a key is malformed, or a record is missing.
fn check_fails_on_damage(env: &Env) -> Result<(), String> {
    let dsn = format!("sqlite://{}", env.path("ycsb-damage.db").display());
    prepare(&dsn, &[])?;
    expect_code(&check(&dsn), 0, "check on a fresh load")?;
    let damages = [
        (
            "UPDATE usertable SET FIELD3 = 'short' WHERE YCSB_KEY = (SELECT min(YCSB_KEY) FROM usertable)",
            "1 records with a field outside 100..100",
        ),
        (
            "UPDATE usertable SET YCSB_KEY = 'userX' || YCSB_KEY WHERE YCSB_KEY = (SELECT max(YCSB_KEY) FROM usertable)",
            "1 malformed keys",
        ),
        (
            "DELETE FROM usertable WHERE YCSB_KEY = (SELECT min(YCSB_KEY) FROM usertable)",
            "999 records; 1000 loaded + 0 inserted",
        ),
    ];
    for (sql, needle) in damages {
        prepare(&dsn, &[])?;
        session(&dsn).batch(sql).map_err(|e| e.message)?;
        let out = check(&dsn);
        expect_code(&out, 1, &format!("check after {sql}"))?;
        let all = text(&out);
        ensure(all.contains(needle), || {
            format!("check after {sql} lacks '{needle}':\n{all}")
        })?;
    }
    Ok(())
}

/// A property file written as YCSB's own workload template writes one (the old class name,
/// properties of YCSB's client and output, threadcount) runs unmodified on SQLite: threadcount
/// is -c, the client-only properties are named in one warning, and the run's variant is the
/// core workload whose mix the file has (workloadb), the file's name in its settings. A file
/// of another mix runs as that mix, and `compare` refuses to set the two side by side.
fn template_file() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let template = "workload=com.yahoo.ycsb.workloads.CoreWorkload\nrecordcount=1000\noperationcount=3000000\n\
        fieldcount=10\nfieldlength=100\nreadallfields=true\nreadproportion=0.95\nupdateproportion=0.05\n\
        insertproportion=0\nscanproportion=0\nrequestdistribution=zipfian\ntable=usertable\n\
        measurementtype=histogram\nhistogram.buckets=1000\ntimeseries.granularity=1000\nthreadcount=2\n";
    let b_file = dir.path().join("mytemplate");
    let mix_file = dir.path().join("mine");
    std::fs::write(&b_file, template).map_err(|e| e.to_string())?;
    let mine = template
        .replace("readproportion=0.95", "readproportion=0.5")
        .replace("updateproportion=0.05", "updateproportion=0.3")
        .replace("insertproportion=0", "insertproportion=0.2");
    std::fs::write(&mix_file, mine).map_err(|e| e.to_string())?;
    let dsn = format!("sqlite://{}", dir.path().join("y.db").display());
    let (b_path, mix_path) = (b_file.display().to_string(), mix_file.display().to_string());
    expect_code(
        &dbduel(&["prepare", "ycsb", "--dsn", &dsn, "-P", &b_path]),
        0,
        "prepare from the template",
    )?;
    let (a_json, b_json) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let run_file = |file: &str, json: &std::path::Path| {
        let json = json.display().to_string();
        dbduel(&[
            "run", "ycsb", "--dsn", &dsn, "-P", file, "-T", "1", "--json", &json,
        ])
    };
    let ran = run_file(&b_path, &a_json);
    expect_code(&ran, 0, "run from the template")?;
    let said = text(&ran);
    ensure(
        said.lines()
            .filter(|l| l.contains("do not apply here"))
            .count()
            == 1
            && said.contains("measurementtype=histogram"),
        || format!("one warning names the client-only properties:\n{said}"),
    )?;
    let a = read_result(&a_json)?;
    ensure(
        a["workload"]["variant"] == "workloadb"
            && a["workload"]["settings"]["file"] == "mytemplate"
            && a["options"]["clients"] == 2,
        || format!("variant, file and threadcount: {}", a["workload"]),
    )?;
    let ran = run_file(&mix_path, &b_json);
    expect_code(&ran, 0, "run from another mix")?;
    let b = read_result(&b_json)?;
    ensure(
        b["workload"]["variant"] == "mix r50/u30/i20/s0/rmw0 zipfian",
        || format!("the other file's variant: {}", b["workload"]["variant"]),
    )?;
    let cmp = dbduel(&[
        "compare",
        &a_json.display().to_string(),
        &b_json.display().to_string(),
    ]);
    expect_code(&cmp, 2, "compare of two mixes")?;
    let disagree = dbduel(&[
        "run",
        "ycsb",
        "--dsn",
        &dsn,
        "-P",
        &b_path,
        "-p",
        "threadcount=2",
        "-c",
        "3",
    ]);
    expect_code(&disagree, 2, "threadcount against -c")?;
    ensure(text(&disagree).contains("disagree"), || text(&disagree))
}
