//! The command line as users type and read it: a bare `dbduel run tpcb` runs on a temporary
//! SQLite database (no server), pgbench's and sysbench's flags are taken or refused naming
//! dbduel's way, `list` names the engines and workloads, completions and the manual page know
//! every command, a closed pipe ends quietly, `--json` is checked before the run, and `-b` takes
//! a built-in's unique prefix as pgbench does.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, Test, dbduel, dbduel_env, ensure, expect_code, read_result, run_json,
    run_json_said, text, trials_of,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 11] = [
        ("default_run_on_temporary_sqlite", default_run),
        ("pgbench_and_sysbench_habits", habits),
        ("list_names_engines_and_workloads", list),
        ("completions_and_man_page", completions_and_man),
        ("closed_pipe_ends_quietly", closed_pipe),
        ("json_checked_before_the_run", json_unwritable),
        ("builtin_by_prefix_as_pgbench", builtin_prefix),
        ("pgbench_connection_options", pgbench_connection),
        ("pgbench_summary_lines", pgbench_summary),
        ("builtins_mixed_as_pgbench", builtins_mixed),
        ("random_seed_gives_pgbenchs_draws", pgbench_draws),
    ];
    trials_of(env, "command_line", tests)
}

fn default_run(env: &Env) -> Result<(), String> {
    let r = run_json(env, "default", &["run", "tpcb", "-T", "2"], 0)?;
    ensure(
        r["engine"]["name"] == "sqlite" && r["transactions"].as_u64() > Some(0),
        || format!("{r}"),
    )?;
    ensure(
        r["options"]["clients"] == 1 && r["workload"]["scale"] == 1,
        || format!("{}", r["options"]),
    )
}

/// Flags pgbench and sysbench users type: sysbench's --threads and --report-interval are -c
/// and -P, pgbench's --random-seed is --seed; pgbench's -v vacuums pgbench's tables first (not
/// under -n; refused for a workload without them); pgbench's -n (on run and prepare), -q, -d and
/// --continue-on-error and
/// sysbench's --percentile are taken with a note, and -j with one on
/// SQLite (its clients keep a thread each); the others
/// are refused in one line that names dbduel's way (exit 2).
fn habits(_: &Env) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("r.json").display().to_string();
    let out = dbduel(&[
        "run",
        "tpcb",
        "--threads",
        "2",
        "--report-interval",
        "1",
        "-j",
        "2",
        "-n",
        "-d",
        "--random-seed",
        "42",
        "--percentile",
        "95",
        "--continue-on-error",
        "-T",
        "2",
        "--json",
        &json,
    ]);
    expect_code(&out, 0, "sysbench and pgbench flags")?;
    let said = text(&out);
    let r = read_result(std::path::Path::new(&json))?;
    ensure(
        r["options"]["clients"] == 2
            && said.contains("progress:")
            && said.contains("note: -j 2 taken: sqlite's clients keep a thread each")
            && said.contains("note: -n")
            && said.contains("note: --percentile 95")
            && said.contains("note: --continue-on-error taken")
            && said.contains("note: -d taken")
            && r["options"]["seed"] == 42,
        || format!("--threads, --report-interval and the notes:\n{said}"),
    )?;
    // pgbench -i's -n and -q on prepare: the steps without vacuum, and a note.
    let lite = format!("sqlite://{}", dir.path().join("init.db").display());
    let init = dbduel(&["prepare", "tpcb", "--dsn", &lite, "-n", "-q"]);
    expect_code(&init, 0, "prepare -n -q")?;
    let said = text(&init);
    ensure(
        said.contains("note: -n taken: the steps run are -I dtgp (no vacuum)")
            && said.contains("note: -q taken"),
        || format!("prepare -n -q:\n{said}"),
    )?;
    // -v: pgbench's tables vacuumed before the run; on a workload without them, refused.
    let out = dbduel(&["run", "tpcb", "-v", "-t", "5"]);
    expect_code(&out, 0, "run tpcb -v")?;
    ensure(
        text(&out).contains("vacuumed pgbench's tables before the run (-v)"),
        || text(&out),
    )?;
    let out = dbduel(&["run", "tpcb", "-v", "-n", "-t", "5"]);
    expect_code(&out, 0, "run tpcb -v -n")?;
    ensure(!text(&out).contains("vacuumed"), || text(&out))?;
    let out = dbduel(&["run", "ycsb", "-v", "-t", "5"]);
    expect_code(&out, 2, "run ycsb -v")?;
    ensure(text(&out).contains("ycsb has none of them"), || text(&out))?;
    for (flag, way) in [
        (&["-i"][..], "dbduel prepare"),
        (&["-r", "--no-statement-latencies"][..], "give one of them"),
        (&["--events", "100"][..], "give -t"),
        (&["--histogram"][..], "HDR histogram"),
        (
            &["--random-seed", "1", "--seed", "2"][..],
            "give one of them",
        ),
        (
            &["--random-seed", "x"][..],
            "time, rand or an unsigned integer",
        ),
    ] {
        let mut args = vec!["run", "tpcb"];
        args.extend(flag);
        let out = dbduel(&args);
        expect_code(&out, 2, &flag.join(" "))?;
        let said = text(&out);
        ensure(
            said.trim().lines().count() == 1 && said.contains(way),
            || format!("{flag:?} must be refused in one line naming {way}:\n{said}"),
        )?;
    }
    Ok(())
}

fn list(_: &Env) -> Result<(), String> {
    let out = dbduel(&["list"]);
    expect_code(&out, 0, "list")?;
    let all = text(&out);
    ensure(
        ["sqlite", "postgres", "mysql", "tpcb", "select-only"]
            .iter()
            .all(|w| all.contains(w)),
        || all.clone(),
    )
}

/// `dbduel completions SHELL` prints a script the shell accepts (bash parses it with -n) that
/// knows every command; `dbduel man` prints a roff page naming every command.
fn completions_and_man(_: &Env) -> Result<(), String> {
    let out = dbduel(&["completions", "bash"]);
    expect_code(&out, 0, "completions bash")?;
    let script = String::from_utf8_lossy(&out.stdout).to_string();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("dbduel.bash");
    std::fs::write(&file, &script).map_err(|e| e.to_string())?;
    let parsed = std::process::Command::new("bash")
        .arg("-n")
        .arg(&file)
        .output()
        .map_err(|e| e.to_string())?;
    ensure(parsed.status.success(), || {
        format!("bash -n refuses the completions: {}", text(&parsed))
    })?;
    let commands = [
        "run", "prepare", "check", "cleanup", "sweep", "duel", "report", "compare", "capacity",
    ];
    ensure(
        commands.iter().all(|c| script.contains(c)) && script.contains("--clients"),
        || "the bash completions lack a command or --clients".into(),
    )?;
    for shell in ["zsh", "fish"] {
        let out = dbduel(&["completions", shell]);
        expect_code(&out, 0, shell)?;
        ensure(
            String::from_utf8_lossy(&out.stdout).contains("capacity"),
            || format!("{shell} completions lack capacity"),
        )?;
    }
    let man = dbduel(&["man"]);
    expect_code(&man, 0, "man")?;
    let page = String::from_utf8_lossy(&man.stdout).to_string();
    ensure(
        page.starts_with(".ie")
            && page.contains(".TH dbduel 1")
            && commands.iter().all(|c| page.contains(c)),
        || format!("not a manual page naming every command:\n{page}"),
    )
}

/// `dbduel list | head -c 0`: the reader goes away before dbduel writes; it ends quietly
/// (SIGPIPE, as Unix tools), never with a panic (exit 101).
fn closed_pipe(_env: &Env) -> Result<(), String> {
    // A pipe whose reading end is closed before dbduel starts: its first write fails.
    let (reader, writer) = std::io::pipe().map_err(|e| e.to_string())?;
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .arg("list")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure(out.status.code() != Some(101) && stderr.is_empty(), || {
        format!("exit {:?}, stderr: {stderr}", out.status)
    })
}

/// `--json` in a place that cannot be written is refused before anything runs.
fn json_unwritable(_env: &Env) -> Result<(), String> {
    let started = std::time::Instant::now();
    let out = dbduel(&["run", "tpcb", "-T", "30", "--json", "/proc/dbduel.json"]);
    expect_code(&out, 2, "--json /proc/dbduel.json")?;
    ensure(text(&out).contains("cannot write there"), || text(&out))?;
    ensure(
        started.elapsed() < std::time::Duration::from_secs(10),
        || "the run went ahead".into(),
    )
}

/// pgbench's `-b si` is simple-update and `-b se` select-only; `-b s` is ambiguous, in
/// pgbench's words.
fn builtin_prefix(env: &Env) -> Result<(), String> {
    for (prefix, name) in [
        ("si", "simple-update"),
        ("se", "select-only"),
        ("t", "tpcb-like"),
    ] {
        let r = run_json(
            env,
            &format!("prefix_{prefix}"),
            &["run", "tpcb", "-b", prefix, "-t", "2"],
            0,
        )?;
        ensure(r["workload"]["variant"] == name, || {
            format!("-b {prefix}: {}", r["workload"])
        })?;
    }
    let out = dbduel(&["run", "tpcb", "-b", "s", "-t", "1"]);
    expect_code(&out, 2, "-b s")?;
    ensure(
        text(&out).contains("ambiguous builtin name: 2 builtin scripts found for prefix \"s\""),
        || text(&out),
    )
}

/// pgbench's way to name the server, on the test PostgreSQL: `prepare -s 1 -h HOST -p PORT
/// -U USER DBNAME` and `run -h HOST -p PORT -U USER -c 2 -t 5 DBNAME` (the word in the
/// workload's place is the database, the workload tpcb), the password from PGPASSWORD; then
/// PGHOST, PGPORT, PGUSER and PGDATABASE alone, with -S, and PGOPTIONS's setting read back
/// by the run. `-h` alone is the help; -h with
/// --dsn, and a -p that is no port, are refused.
fn pgbench_connection(env: &Env) -> Result<(), String> {
    let dsn = dbduel::dsn::Dsn::parse(&env.fresh_db(Target::Postgres, "pgbench_flags"))
        .map_err(|e| e.to_string())?;
    let (host, user) = (
        dsn.host.clone().unwrap_or_default(),
        dsn.user.clone().unwrap_or_default(),
    );
    let port = dsn.port.unwrap_or(5432).to_string();
    let password = dsn.password().unwrap_or_default().to_string();
    let db = dsn.database.clone();
    let pw = [("PGPASSWORD", password.as_str())];
    let flags = ["-h", &host, "-p", &port, "-U", &user];
    let prepare = [&["prepare", "-s", "1"], &flags[..], &[db.as_str()]].concat();
    expect_code(&dbduel_env(&prepare, &pw), 0, "prepare as pgbench -i")?;
    let json = env.path("pgbench-flags.json").display().to_string();
    let run = [
        &["run", "-c", "2", "-t", "5", "--json", &json],
        &flags[..],
        &[db.as_str()],
    ]
    .concat();
    let out = dbduel_env(&run, &pw);
    expect_code(&out, 0, "run as pgbench")?;
    let r = read_result(std::path::Path::new(&json))?;
    ensure(
        r["engine"]["name"] == "postgres"
            && r["workload"]["name"] == "tpcb"
            && r["transactions"].as_u64() == Some(10),
        || format!("{}\n{}", r["engine"], text(&out)),
    )?;
    ensure(text(&out).contains(&format!("dbname={db}")), || text(&out))?;
    let vars = [
        ("PGPASSWORD", password.as_str()),
        ("PGHOST", host.as_str()),
        ("PGPORT", port.as_str()),
        ("PGUSER", user.as_str()),
        ("PGDATABASE", db.as_str()),
        ("PGOPTIONS", "-c synchronous_commit=off"),
    ];
    let json2 = env.path("pgbench-vars.json").display().to_string();
    let out = dbduel_env(
        &["run", "-S", "-c", "1", "-t", "5", "--json", &json2],
        &vars,
    );
    expect_code(&out, 0, "run with PG variables")?;
    let r = read_result(std::path::Path::new(&json2))?;
    ensure(
        r["engine"]["name"] == "postgres"
            && r["workload"]["variant"] == "select-only"
            && r["engine"]["settings"]["synchronous_commit"] == "off",
        || format!("{}\n{}", r["workload"], text(&out)),
    )?;
    let help = dbduel(&["run", "-h"]);
    expect_code(&help, 0, "run -h")?;
    ensure(text(&help).contains("Usage: dbduel run"), || text(&help))?;
    let both = dbduel(&[
        "run",
        "tpcb",
        "-h",
        "localhost",
        "--dsn",
        "postgres://u@h/d",
    ]);
    expect_code(&both, 2, "-h with --dsn")?;
    ensure(text(&both).contains("give one of them"), || text(&both))?;
    let bad = dbduel(&["run", "tpcb", "-p", "70000"]);
    expect_code(&bad, 2, "-p 70000")?;
    ensure(text(&bad).contains("a port is a number"), || text(&bad))
}

/// pgbench's summary lines, read as the scripts that parse pgbench's output read them: tpcb
/// with -t on the temporary SQLite (processed N/M, pgbench's latency from the run's time, the
/// tps of the result with six decimals), then -C (average connection time, tps including
/// reconnection times), then a script with --max-tries and -P (retried and retries, latency
/// stddev, pgbench's progress lines; stamped with Unix time by --progress-timestamp). A
/// workload that is not pgbench's prints none.
fn pgbench_summary(env: &Env) -> Result<(), String> {
    let line = |said: &str, start: &str| -> Option<String> {
        said.lines()
            .find(|l| l.starts_with(start))
            .map(str::to_string)
    };
    let (r, said) = run_json_said(
        env,
        "pgbench-lines",
        &["run", "tpcb", "-c", "2", "-t", "50"],
        0,
    )?;
    let tps = format!(
        "tps = {:.6} (without initial connection time)",
        r["tps"].as_f64().unwrap_or(-1.0)
    );
    for expected in [
        "transaction type: <builtin: TPC-B (sort of)>",
        "scaling factor: 1",
        "query mode: simple",
        "number of clients: 2",
        "maximum number of tries: 1",
        "number of transactions per client: 50",
        "number of transactions actually processed: 100/100",
        "number of failed transactions: 0 (0.000%)",
        tps.as_str(),
    ] {
        ensure(said.lines().any(|l| l == expected), || {
            format!("no line '{expected}':\n{said}")
        })?;
    }
    let average = line(&said, "latency average = ").unwrap_or_default();
    let ms: f64 = average
        .trim_start_matches("latency average = ")
        .trim_end_matches(" ms")
        .parse()
        .map_err(|_| format!("latency average unreadable: '{average}'"))?;
    let duration = r["duration_s"].as_f64().unwrap_or(0.0);
    ensure((ms - 1000.0 * duration * 2.0 / 100.0).abs() < 0.002, || {
        format!("'{average}' is not pgbench's run time x clients / transactions ({duration} s)")
    })?;
    ensure(line(&said, "initial connection time = ").is_some(), || {
        said.clone()
    })?;
    let (_, said) = run_json_said(
        env,
        "pgbench-lines-c",
        &["run", "tpcb", "-c", "1", "-t", "5", "-C"],
        0,
    )?;
    ensure(
        line(&said, "average connection time = ").is_some()
            && line(&said, "tps = ")
                .is_some_and(|l| l.ends_with(" (including reconnection times)")),
        || said.clone(),
    )?;
    let (_, said) = run_json_said(
        env,
        "pgbench-lines-s",
        &[
            "run",
            "tpcb",
            "-S",
            "-c",
            "1",
            "-T",
            "2",
            "--max-tries",
            "3",
            "-P",
            "1",
        ],
        0,
    )?;
    for start in [
        "transaction type: <builtin: select only>",
        "maximum number of tries: 3",
        "duration: 2 s",
        "number of transactions retried: 0 (0.000%)",
        "total number of retries: 0",
        "latency stddev = ",
    ] {
        ensure(line(&said, start).is_some(), || {
            format!("no line '{start}':\n{said}")
        })?;
    }
    // pgbench's -P line, as its parsers read it: time, tps, mean and stddev, failed, retries.
    let progress = line(&said, "progress: 1.0 s, ").unwrap_or_default();
    let fields: Vec<&str> = progress.split(", ").collect();
    ensure(
        fields.len() >= 5
            && fields[1].ends_with(" tps")
            && fields[2].starts_with("lat ")
            && fields[2].contains(" ms stddev ")
            && fields[3].ends_with(" failed")
            && progress.contains(", 0 retried, 0 retries"),
        || format!("not pgbench's progress line: '{progress}'\n{said}"),
    )?;
    let (_, said) = run_json_said(
        env,
        "pgbench-lines-ts",
        &[
            "run",
            "tpcb",
            "-S",
            "-T",
            "2",
            "-P",
            "1",
            "--progress-timestamp",
        ],
        0,
    )?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let stamped = line(&said, "progress: ").unwrap_or_default();
    let at: f64 = stamped
        .trim_start_matches("progress: ")
        .split(" s,")
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0.0);
    ensure((now - 60.0..=now).contains(&at), || {
        format!("--progress-timestamp: '{stamped}' is not a Unix time of this minute")
    })?;
    // --max-tries 0: unlimited tries with -T (pgbench's), 0 in the result, no "maximum" line.
    let args = ["run", "tpcb", "-c", "2", "-T", "1", "--max-tries", "0"];
    let (r, said) = run_json_said(env, "pgbench-unlimited", &args, 0)?;
    ensure(
        r["options"]["max_tries"] == 0
            && line(&said, "maximum number of tries").is_none()
            && line(&said, "total number of retries: ").is_some(),
        || format!("--max-tries 0: {}\n{said}", r["options"]),
    )?;
    let refused = dbduel(&["run", "tpcb", "-t", "5", "--max-tries", "0"]);
    expect_code(&refused, 2, "--max-tries 0 -t 5")?;
    ensure(
        text(&refused).contains("--latency-limit or a duration (-T)"),
        || text(&refused),
    )?;
    let (_, said) = run_json_said(
        env,
        "pgbench-lines-ycsb",
        &["run", "oltp_point_select", "-T", "1"],
        0,
    )?;
    ensure(
        line(&said, "transaction type:").is_none() && line(&said, "tps = ").is_none(),
        || said,
    )
}

/// pgbench's built-ins beside scripts, among themselves and with -D, on a prepared SQLite
/// file (a repeated flag's last value counting, as pgbench's): `-b
/// se@1 -b tpcb@3` runs both as scripts by their weights (each its own transaction type,
/// pgbench's "SQL script N: <builtin: ...>" lines), `-S -f FILE` mixes one with a file;
/// `-b list` and `--show-script` print pgbench's text; an unknown name is refused.
fn builtins_mixed(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "builtins_mixed");
    expect_code(&dbduel(&["prepare", "tpcb", "--dsn", &dsn]), 0, "prepare")?;
    let args = [
        "run", "--dsn", &dsn, "-b", "se@1", "-b", "tpcb@3", "-c", "1", "-t", "400", "--seed", "7",
    ];
    let (r, said) = run_json_said(env, "builtins-mixed", &args, 0)?;
    let types = r["transaction_types"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let count = |name: &str| {
        types
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["transactions"].as_u64())
            .unwrap_or(0)
    };
    let (select, tpcb) = (count("builtin:select-only"), count("builtin:tpcb-like"));
    ensure(select + tpcb == 400 && (60..=140).contains(&select), || {
        format!(
            "select-only {select}, tpcb-like {tpcb} of 400 at weights 1:3: {}",
            r["transaction_types"]
        )
    })?;
    for line in [
        "transaction type: multiple scripts",
        "SQL script 1: <builtin: select only>",
        " - weight: 3 (targets 75.0% of total)",
    ] {
        ensure(said.lines().any(|l| l == line), || {
            format!("no line '{line}':\n{said}")
        })?;
    }
    let file = env.path("one-update.sql");
    std::fs::write(
        &file,
        "UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;\n",
    )
    .map_err(|e| e.to_string())?;
    let file_s = file.display().to_string();
    let args = [
        "run", "--dsn", &dsn, "-S", "-f", &file_s, "-c", "1", "-t", "50",
    ];
    let (r, _) = run_json_said(env, "builtins-with-file", &args, 0)?;
    ensure(
        r["transaction_types"]
            .as_array()
            .is_some_and(|t| t.len() == 2),
        || format!("-S with -f: {}", r["transaction_types"]),
    )?;
    // -D with a built-in (pgbench defines the variables for it), and a repeated flag: the
    // last one counts, as in pgbench.
    let args = [
        "run", "--dsn", &dsn, "-S", "-D", "x=1", "-c", "1", "-c", "2", "-t", "5",
    ];
    let (r, _) = run_json_said(env, "builtins-defined", &args, 0)?;
    ensure(
        r["transaction_types"][0]["name"] == "builtin:select-only"
            && r["options"]["clients"] == 2
            && r["transactions"] == 10,
        || {
            format!(
                "-S -D x=1 -c 1 -c 2: {} {}",
                r["transaction_types"], r["options"]
            )
        },
    )?;
    let list = dbduel(&["run", "-b", "list"]);
    expect_code(&list, 0, "-b list")?;
    ensure(
        text(&list).contains("    select-only: <builtin: select only>"),
        || text(&list),
    )?;
    let show = dbduel(&["run", "--show-script", "simple"]);
    expect_code(&show, 0, "--show-script")?;
    let shown = text(&show);
    ensure(
        shown.starts_with("-- simple-update: <builtin: simple update>\n\\set aid")
            && !shown.contains("pgbench_tellers"),
        || shown.clone(),
    )?;
    // A load option on a run of prepared data: refused as pgbench refuses it.
    let load = dbduel(&["run", "tpcb", "--dsn", &dsn, "--partitions", "2", "-t", "1"]);
    expect_code(&load, 2, "run --partitions")?;
    ensure(
        text(&load).contains("--partitions is a load option"),
        || text(&load),
    )?;
    let bad = dbduel(&["run", "--dsn", &dsn, "-b", "nope@2", "-f", &file_s]);
    expect_code(&bad, 2, "-b nope")?;
    ensure(text(&bad).contains("unknown tpcb script 'nope'"), || {
        text(&bad)
    })
}

/// `--random-seed N` gives pgbench's values, client by client: pgbench 15 with the same seed
/// and clients wrote these rows (tpcb-like and simple-update into pgbench_history at scale 2,
/// a script's random functions and :default_seed into a table), on PostgreSQL; here they are
/// written on SQLite.
fn pgbench_draws(_: &Env) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let db = dir.path().join("draws.db");
    let dsn = format!("sqlite://{}", db.display());
    let rows = |sql: &str| -> Result<Vec<String>, String> {
        let conn = rusqlite::Connection::open(&db).map_err(|e| e.to_string())?;
        let mut st = conn.prepare(sql).map_err(|e| e.to_string())?;
        let n = st.column_count();
        st.query_map([], |r| {
            (0..n)
                .map(|i| r.get::<_, i64>(i).map(|v| v.to_string()))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.join("|"))
        })
        .map_err(|e| e.to_string())?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
    };
    let exec = |sql: &str| {
        rusqlite::Connection::open(&db)
            .and_then(|c| c.execute_batch(sql))
            .map_err(|e| e.to_string())
    };
    let run = |args: &[&str]| -> Result<(), String> {
        let mut all = args.to_vec();
        all.extend(["--dsn", &dsn]);
        expect_code(&dbduel(&all), 0, &args.join(" "))
    };
    run(&["prepare", "tpcb", "-s", "2"])?;
    run(&["run", "tpcb", "-c", "1", "-t", "5", "--random-seed", "5432"])?;
    let tpcb = rows("SELECT tid, bid, aid, delta FROM pgbench_history ORDER BY rowid")?;
    let want = [
        "8|1|117829|3092",
        "12|1|179582|3758",
        "12|1|773|-1583",
        "13|1|31860|-2569",
        "7|2|197841|3754",
    ];
    ensure(tpcb == want, || format!("tpcb-like, seed 5432: {tpcb:?}"))?;
    exec("DELETE FROM pgbench_history")?;
    run(&[
        "run",
        "tpcb",
        "-b",
        "simple-update",
        "-c",
        "2",
        "-t",
        "3",
        "--random-seed",
        "99",
    ])?;
    let simple = rows("SELECT tid, bid, aid, delta FROM pgbench_history ORDER BY aid")?;
    let want = [
        "19|1|28087|2078",
        "20|1|44103|-383",
        "13|2|50811|-1733",
        "10|2|120885|-464",
        "1|2|138662|4421",
        "7|1|171496|-4786",
    ];
    ensure(simple == want, || {
        format!("simple-update, seed 99: {simple:?}")
    })?;
    exec("CREATE TABLE draws(id INTEGER PRIMARY KEY, c, r, e, g, z, ds, h)")?;
    let script = dir.path().join("draws.sql");
    std::fs::write(
        &script,
        "\\set r random(1, 1000000)\n\\set e random_exponential(1, 1000, 2.5)\n\\set g random_gaussian(1, 1000, 3.0)\n\\set z random_zipfian(1, 1000, 1.5)\n\\set h hash(:r)\nINSERT INTO draws(c, r, e, g, z, ds, h) VALUES (:client_id, :r, :e, :g, :z, :default_seed, :h);\n",
    )
    .map_err(|e| e.to_string())?;
    let file = script.display().to_string();
    run(&["run", &file, "-c", "3", "-t", "4", "--random-seed", "5432"])?;
    let drawn = rows("SELECT c, r, e, g, z, ds, h FROM draws ORDER BY c, id")?;
    let want = [
        "0|856256|213|349|4|-1082569615652803502|-4099524037314809446",
        "0|187762|401|241|1|-1082569615652803502|-1544955033636418787",
        "0|3090|206|931|1|-1082569615652803502|-1558058283990252715",
        "0|761787|473|724|7|-1082569615652803502|-3028001439530512210",
        "1|506940|199|634|20|-1082569615652803502|2341997964397735008",
        "1|891620|342|411|7|-1082569615652803502|6398473926427904996",
        "1|378869|317|452|50|-1082569615652803502|-4524398802559858154",
        "1|906587|902|506|3|-1082569615652803502|-9043030512384259298",
        "2|318233|34|557|1|-1082569615652803502|-9195118137209040537",
        "2|649767|465|584|1|-1082569615652803502|7773382871383600652",
        "2|155231|245|257|5|-1082569615652803502|4952005866535360725",
        "2|552695|16|437|612|-1082569615652803502|-5541282637563760792",
    ];
    ensure(drawn == want, || {
        format!("the script's draws, seed 5432: {drawn:#?}")
    })
}
