//! Experiments end to end: a sweep of two profiles x two client counts on every engine fills
//! the store and the report; tuned settings are visible inside the servers; an interrupted
//! sweep resumes with only what was missing; bad plans and bad server options are refused.

use std::path::Path;
use std::time::{Duration, Instant};

use libtest_mimic::Trial;

use crate::env::{dbduel, ensure, expect_code, text};

pub fn trials() -> Vec<Trial> {
    vec![
        crate::env::trial("sweep::two_profiles_two_client_counts_every_engine", || {
            Ok(every_engine()?)
        }),
        crate::env::trial(
            "sweep::tatp_and_smallbank_in_plans_store_and_report",
            || Ok(tatp_and_smallbank()?),
        ),
        crate::env::trial("sweep::tpcc_figures_in_store_export_and_report", || {
            Ok(tpcc_figures()?)
        }),
        crate::env::trial("sweep::killed_sweep_resumes_only_what_is_missing", || {
            Ok(resume()?)
        }),
        crate::env::trial("sweep::tuned_settings_visible_inside_postgres", || {
            Ok(tuned_visible("postgres")?)
        }),
        crate::env::trial("sweep::tuned_settings_visible_inside_mariadb", || {
            Ok(tuned_visible("mysql")?)
        }),
        crate::env::trial("sweep::plan_errors_name_line_and_key", || Ok(bad_plan()?)),
        crate::env::trial(
            "sweep::server_start_refuses_bad_directory_and_busy_port",
            || Ok(bad_server()?),
        ),
        crate::env::trial("sweep::rejected_knob_is_an_error", || Ok(rejected_knob()?)),
        crate::env::trial("sweep::report_keeps_plans_apart", || Ok(plans_apart()?)),
        crate::env::trial("sweep::every_point_runs_the_same_work", || Ok(same_work()?)),
        crate::env::trial("sweep::durability_read_back_decides_the_bold", || {
            Ok(durability_decides()?)
        }),
        crate::env::trial("sweep::failed_transactions_exit_1", || {
            Ok(failed_transactions()?)
        }),
        crate::env::trial("sweep::transactions_plan_stores_its_count_and_time", || {
            Ok(transactions_plan()?)
        }),
        crate::env::trial("sweep::point_retries_as_run_does", || Ok(same_retries()?)),
        crate::env::trial("sweep::point_checked_as_run_checks_it", || {
            Ok(point_checked()?)
        }),
        crate::env::trial(
            "sweep::invalid_last_point_refused_before_anything_runs",
            || Ok(last_point_invalid()?),
        ),
        crate::env::trial("sweep::firebird_knob_reaches_the_server", || {
            Ok(firebird_knob()?)
        }),
        crate::env::trial("sweep::knobs_of_an_unknown_engine_are_refused", || {
            Ok(unknown_engine_knobs()?)
        }),
        crate::env::trial(
            "sweep::connection_keys_reach_the_points_and_the_server_has_room",
            || Ok(connection_keys()?),
        ),
        crate::env::trial("sweep::connection_keys_checked_as_run_checks_them", || {
            refused(
                "engines = [\"sqlite\"]\nclients = [1]\nconnect = true\nreconnect_every = 5\n",
                "key `connect` opens a connection for every transaction: key `reconnect_every` has nothing to renew",
            )?;
            refused(
                "engines = [\"sqlite\"]\nclients = [1]\nidle_connections = -2\n",
                "key `idle_connections` -2: give the idle connections to hold open, 0 or more",
            )?;
            refused(
                "engines = [\"sqlite\"]\nclients = [1]\nreconnect_after = 0\n",
                "key `reconnect_after` 0: give the seconds a connection lives, more than 0",
            )?;
            Ok(())
        }),
    ]
}

/// A plan's connection keys reach every point as `run`'s flags: 2 clients x 20 transactions
/// replacing their connection every 5 give 6 reconnects, and 150 idle connections are held beside
/// them on a managed PostgreSQL, which ships with room for 100 connections: the server dbduel
/// starts is given room for the idle ones too (without it the point fails to open them). The
/// plan's `lazy_begin` reaches the points too, as `run --lazy-begin`.
fn connection_keys() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = write(
        dir.path(),
        "conn.toml",
        "engines = [\"postgres\"]\nclients = [2]\ntransactions = 20\nreconnect_every = 5\nidle_connections = 150\nlazy_begin = true\n",
    );
    let results = dir.path().join("r.db").display().to_string();
    let out = dbduel(&["sweep", &plan, "--results", &results]);
    expect_code(&out, 0, "sweep with connection keys")?;
    let r = first_run(&results)?;
    let c = &r["connections"];
    ensure(
        c["by_count"] == 6 && c["idle"] == 150 && r["transactions"] == 40,
        || {
            format!(
                "stored connections: {c}, {} transactions",
                r["transactions"]
            )
        },
    )?;
    let o = &r["options"]["connections"];
    ensure(
        o["reconnect_every"] == 5 && o["idle_connections"] == 150,
        || format!("stored options: {o}"),
    )?;
    ensure(r["options"]["lazy_begin"] == true, || {
        format!("stored options without lazy_begin: {}", r["options"])
    })
}

/// A point whose transactions fail (every insert meets the primary key) is stored, flagged,
/// and the sweep exits 1.
fn failed_transactions() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let workload = write(
        dir.path(),
        "dup.toml",
        "name = \"dup\"\n[[table]]\nname = \"t\"\nrows = 10\nprimary_key = [\"id\"]\ncolumns = [{ name = \"id\", type = \"int\", gen = { kind = \"sequence\" } }]\n[[query]]\nname = \"dup\"\nsql = \"INSERT INTO t (id) VALUES (1)\"\n",
    );
    let plan =
        format!("engines = [\"sqlite\"]\nworkload = \"{workload}\"\nclients = [1]\ntime = 1\n");
    let plan = write(dir.path(), "dup-plan.toml", &plan);
    let results = dir.path().join("r.db").display().to_string();
    let out = dbduel(&["sweep", &plan, "--results", &results]);
    expect_code(&out, 1, "sweep with failed transactions")?;
    let all = text(&out);
    ensure(
        all.contains("[errors") && all.contains("1 points had failed transactions"),
        || all.clone(),
    )?;
    let rows = exported(&results)?;
    ensure(
        rows.len() == 1 && rows[0]["errors"].as_i64() > Some(0),
        || format!("stored: {rows:?}"),
    )
}

/// `transactions = N`: the stored result says N per client and no time, and its measured
/// time is the run's own (not the plan's default 10 s).
fn transactions_plan() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = write(
        dir.path(),
        "count.toml",
        "engines = [\"sqlite\"]\nclients = [2]\ntransactions = 50\n",
    );
    let results = dir.path().join("r.db").display().to_string();
    let started = Instant::now();
    let out = dbduel(&["sweep", &plan, "--results", &results]);
    let took = started.elapsed().as_secs_f64();
    expect_code(&out, 0, "sweep of a count of transactions")?;
    let r = first_run(&results)?;
    let o = &r["options"];
    ensure(
        o["transactions_per_client"] == 50 && o["time_s"].is_null(),
        || format!("stored options: {o}"),
    )?;
    ensure(r["transactions"] == 100, || {
        format!("{} transactions stored", r["transactions"])
    })?;
    let secs = r["duration_s"].as_f64().unwrap_or(-1.0);
    ensure(secs > 0.0 && secs < took, || {
        format!("measured time {secs} s for a sweep that took {took:.2} s")
    })?;
    let rows = exported(&results)?;
    ensure(rows[0]["duration_s"].as_f64() == Some(secs), || {
        format!("stored duration {} against {secs}", rows[0]["duration_s"])
    })
}

/// A sweep point builds its run as `dbduel run` does: the same workload, asked the same way,
/// retries a failed transaction as often (tpcb: its own default, not a sweep's own count).
fn same_retries() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("run.json");
    let out = dbduel(&[
        "run",
        "tpcb",
        "-c",
        "1",
        "-T",
        "1",
        "--json",
        &json.display().to_string(),
    ]);
    expect_code(&out, 0, "dbduel run tpcb")?;
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let plan = write(
        dir.path(),
        "tries.toml",
        "engines = [\"sqlite\"]\nworkload = \"tpcb\"\nclients = [1]\ntime = 1\n",
    );
    let results = dir.path().join("r.db").display().to_string();
    let out = dbduel(&["sweep", &plan, "--results", &results]);
    expect_code(&out, 0, "sweep of tpcb")?;
    let point = first_run(&results)?;
    let (ran, swept) = (&run["options"]["max_tries"], &point["options"]["max_tries"]);
    ensure(ran.as_u64().is_some() && ran == swept, || {
        format!("dbduel run tpcb tries {ran} times, a sweep point {swept}")
    })?;
    // A plan's own `max_tries` is what its points run with.
    let plan = write(
        dir.path(),
        "tries7.toml",
        "engines = [\"sqlite\"]\nworkload = \"tpcb\"\nclients = [1]\ntime = 1\nmax_tries = 7\n",
    );
    let results = dir.path().join("r7.db").display().to_string();
    expect_code(
        &dbduel(&["sweep", &plan, "--results", &results]),
        0,
        "sweep with max_tries = 7",
    )?;
    let point = first_run(&results)?;
    ensure(point["options"]["max_tries"] == 7, || {
        format!("max_tries = 7 ran with {}", point["options"]["max_tries"])
    })
}

/// A plan's point is refused for what `dbduel run` refuses (a time over a year, more clients
/// than the machine allows), with the plan's key, before a store or a server is made.
fn point_checked() -> Result<(), String> {
    for (plan, key) in [
        (
            "clients = [1]\ntime = 40000000\n",
            "plan plan: key `time` 40000000: at most",
        ),
        (
            "clients = [1]\nwarmup = 40000000\n",
            "plan plan: key `warmup` 40000000: at most",
        ),
        (
            "clients = [1, 100000000]\ntime = 1\n",
            "plan plan: key `clients` 100000000: this machine allows at most",
        ),
    ] {
        refused(&format!("engines = [\"postgres\"]\n{plan}"), key)?;
    }
    Ok(())
}

/// A plan whose last point cannot run (its engine's DSN, its profile's knobs) exits 2 with
/// the plan's words before the first point: no store is made, no engine reached, no data
/// loaded.
fn last_point_invalid() -> Result<(), String> {
    for (plan, said) in [
        (
            "engines = [\"sqlite\", \"postgres\"]\n[dsn]\npostgres = \"postgres://u@127.0.0.1:1/d?sslmode=sometimes\"\n",
            "plan plan: engine postgres: sslmode 'sometimes'",
        ),
        (
            "engines = [\"postgres\", \"sqlite\"]\nlazy_begin = true\n",
            "plan plan: engine sqlite: --lazy-begin applies to postgresql:// and mysql:// only",
        ),
        (
            "engines = [\"sqlite\"]\nprofiles = [\"default\", \"odd\"]\n[profile.odd]\nsqlite = { journal_mode = \"sideways\" }\n",
            "plan plan: profile 'odd' on sqlite",
        ),
        (
            "engines = [\"sqlite\", \"postgres\"]\nprofiles = [\"default\", \"big\"]\n[dsn]\npostgres = \"postgres://u@127.0.0.1:1/d\"\n[profile.big]\npostgres = { work_mem = \"8MB\" }\n",
            "plan plan: profile 'big' sets knobs, but postgres://u@127.0.0.1:1/d is given by DSN",
        ),
    ] {
        let all = refused(&format!("clients = [1]\ntime = 1\n{plan}"), said)?;
        ensure(!all.contains("==") && !all.contains("prepared"), || {
            format!("a point began before the refusal: {all}")
        })?;
    }
    Ok(())
}

/// A plan's Firebird knob (firebird.conf) reaches the managed server: the page cache the
/// point ran with, read back from the server, is the one the profile set.
fn firebird_knob() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = write(
        dir.path(),
        "fb.toml",
        "engines = [\"firebird\"]\nprofiles = [\"big\"]\nclients = [1]\ntime = 1\n[profile.big]\nfirebird = { DefaultDbCachePages = 8192 }\n",
    );
    let results = dir.path().join("r.db").display().to_string();
    let out = dbduel(&["sweep", &plan, "--results", &results]);
    expect_code(&out, 0, "firebird sweep with a knob")?;
    let r = first_run(&results)?;
    let buffers = &r["engine"]["settings"]["page_buffers"];
    ensure(buffers == "8192", || {
        format!("page_buffers {buffers} after DefaultDbCachePages = 8192")
    })
}

/// Knobs under a name that is no engine are refused before anything starts, with the
/// plan's line and the engines there are.
fn unknown_engine_knobs() -> Result<(), String> {
    let plan = "engines = [\"sqlite\"]\nprofiles = [\"p\"]\nclients = [1]\n[profile.p]\nfirbird = { DefaultDbCachePages = 8192 }\n";
    let all = refused(plan, "unknown engine 'firbird'")?;
    ensure(all.contains("line 4") && all.contains("firebird"), || all)
}

/// A sweep of `plan` (its file `plan.toml`, so the plan `plan`) exits 2 saying `said`,
/// before a results store is made. Returns what it printed.
fn refused(plan: &str, said: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = write(dir.path(), "plan.toml", plan);
    let results = dir.path().join("r.db");
    let out = dbduel(&["sweep", &plan, "--results", &results.display().to_string()]);
    expect_code(&out, 2, said)?;
    let all = text(&out);
    ensure(all.contains(said), || all.clone())?;
    ensure(!results.exists(), || {
        "a refused plan created the results store".into()
    })?;
    Ok(all)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write plan");
    path.display().to_string()
}

/// The stored result of run 1, as `results show 1` prints it.
pub fn first_run(results: &str) -> Result<serde_json::Value, String> {
    let show = dbduel(&["results", "show", "1", "--results", results]);
    expect_code(&show, 0, "results show")?;
    serde_json::from_slice(&show.stdout).map_err(|e| e.to_string())
}

pub fn exported(results: &str) -> Result<Vec<serde_json::Value>, String> {
    let out = dbduel(&[
        "results",
        "export",
        "--format",
        "json",
        "--results",
        results,
    ]);
    expect_code(&out, 0, "results export")?;
    serde_json::from_slice(&out.stdout).map_err(|e| format!("export is not JSON: {e}"))
}

fn every_engine() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = "name = \"matrix\"\nengines = [\"sqlite\", \"postgres\", \"mysql\"]\nprofiles = [\"default\", \"tuned\"]\nclients = [1, 2]\ntime = 1\n";
    let plan = write(dir.path(), "matrix.toml", plan);
    let results = dir.path().join("r.db").display().to_string();
    let html = dir.path().join("r.html").display().to_string();
    let out = dbduel(&["sweep", &plan, "--results", &results, "--report", &html]);
    expect_code(&out, 0, "sweep")?;
    let rows = exported(&results)?;
    ensure(rows.len() == 12, || {
        format!(
            "3 engines x 2 profiles x 2 client counts gave {} runs",
            rows.len()
        )
    })?;
    for engine in ["sqlite", "postgres", "mysql"] {
        for profile in ["default", "tuned"] {
            let n = rows
                .iter()
                .filter(|r| {
                    r["engine"] == engine
                        && r["profile"] == profile
                        && r["tps"].as_f64() > Some(0.0)
                })
                .count();
            ensure(n == 2, || {
                format!("{engine}/{profile}: {n} measured points")
            })?;
        }
    }
    let page = std::fs::read_to_string(&html).map_err(|e| e.to_string())?;
    ensure(
        page.contains("postgres/tuned") && page.contains("mysql/default"),
        || "report lacks series".into(),
    )?;
    let list = dbduel(&["results", "list", "--results", &results]);
    ensure(text(&list).lines().count() == 13, || text(&list))?;
    let show = dbduel(&["results", "show", "1", "--results", &results]);
    crate::env::expect_code(&show, 0, "results show")
}

/// TPC-C's NOPM and tpmC reach the store (a column each in CSV), `results list`, and both
/// reports, with the five transaction types; the plan's `[options]` reach the run.
fn tpcc_figures() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = "name = \"nopm\"\nengines = [\"sqlite\"]\nworkload = \"tpcc\"\nscale = 1\nclients = [1, 2]\ntime = 2\n[options]\nisolation = \"serializable\"\n";
    let plan = write(dir.path(), "nopm.toml", plan);
    let results = dir.path().join("r.db").display().to_string();
    let html = dir.path().join("r.html").display().to_string();
    let out = dbduel(&["sweep", &plan, "--results", &results, "--report", &html]);
    expect_code(&out, 0, "tpcc sweep")?;
    let rows = exported(&results)?;
    ensure(rows.len() == 2, || format!("{} runs stored", rows.len()))?;
    for r in &rows {
        let (nopm, tpmc) = (&r["metrics"]["nopm"], &r["metrics"]["tpmC"]);
        ensure(
            nopm.as_f64() > Some(0.0) && tpmc.as_f64() >= nopm.as_f64(),
            || format!("run without NOPM <= tpmC: {r}"),
        )?;
    }
    let csv = dbduel(&[
        "results",
        "export",
        "--format",
        "csv",
        "--results",
        &results,
    ]);
    expect_code(&csv, 0, "csv export")?;
    let csv = String::from_utf8_lossy(&csv.stdout).to_string();
    let header: Vec<&str> = csv.lines().next().unwrap_or_default().split(',').collect();
    let at = header.iter().position(|h| *h == "nopm");
    ensure(at.is_some() && header.contains(&"tpmC"), || {
        format!("CSV header lacks nopm/tpmC: {header:?}")
    })?;
    for line in csv.lines().skip(1) {
        let cell = line.split(',').nth(at.unwrap_or(0)).unwrap_or_default();
        ensure(cell.parse::<f64>().is_ok_and(|v| v > 0.0), || {
            format!("CSV row without NOPM: {line}")
        })?;
    }
    let shown = first_run(&results)?;
    ensure(
        shown["workload"]["settings"]["isolation"] == "serializable",
        || {
            format!(
                "the plan's [options] did not reach the run: {}",
                shown["workload"]["settings"]
            )
        },
    )?;
    let list = text(&dbduel(&["results", "list", "--results", &results]));
    ensure(list.contains("nopm ") && list.contains("tpmC "), || {
        list.clone()
    })?;
    let page = std::fs::read_to_string(&html).map_err(|e| e.to_string())?;
    ensure(page.contains("New-Orders per minute"), || {
        "the HTML report has no NOPM chart".into()
    })?;
    ensure(page.contains("<section id=\"types\">"), || {
        "the HTML report has no per-type section".into()
    })?;
    let md = dbduel(&["report", "--format", "markdown", "--results", &results]);
    expect_code(&md, 0, "markdown report")?;
    let md = String::from_utf8_lossy(&md.stdout).to_string();
    for t in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        ensure(md.contains(&format!("| {t} |")), || {
            format!("markdown report lacks transaction type {t}:\n{md}")
        })?;
    }
    ensure(md.contains("nopm "), || {
        format!("markdown lacks NOPM:\n{md}")
    })
}

/// TATP and SmallBank as plans' workloads (their own options under `[options]`) in one store:
/// TATP's headline MQTh stored and reported, each one's transaction types in the report, and
/// the options reaching the runs.
fn tatp_and_smallbank() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let results = dir.path().join("r.db").display().to_string();
    let html = dir.path().join("r.html").display().to_string();
    let plans = [
        (
            "tatp.toml",
            "name = \"tatp\"\nengines = [\"sqlite\"]\nworkload = \"tatp\"\nclients = [1]\ntime = 1\n[options]\nkeys = \"uniform\"\n",
        ),
        (
            "smallbank.toml",
            "name = \"smallbank\"\nengines = [\"sqlite\"]\nworkload = \"smallbank\"\nclients = [1]\ntime = 1\n[options]\nhotspot = 100\n",
        ),
    ];
    for (name, text) in plans {
        let plan = write(dir.path(), name, text);
        let out = dbduel(&["sweep", &plan, "--results", &results]);
        expect_code(&out, 0, name)?;
    }
    let rows = exported(&results)?;
    ensure(
        rows.len() == 2
            && rows[0]["workload"] == "tatp"
            && rows[0]["metrics"]["mqth"].as_f64() > Some(0.0)
            && rows[1]["workload"] == "smallbank",
        || format!("a tatp run with its MQTh, then a smallbank run, stored: {rows:?}"),
    )?;
    let shown = |id: &str| -> Result<serde_json::Value, String> {
        let show = dbduel(&["results", "show", id, "--results", &results]);
        expect_code(&show, 0, "results show")?;
        serde_json::from_slice(&show.stdout).map_err(|e| e.to_string())
    };
    let (tatp, bank) = (shown("1")?, shown("2")?);
    ensure(
        tatp["workload"]["settings"]["keys"] == "uniform"
            && bank["workload"]["settings"]["hotspot"] == "100",
        || {
            format!(
                "the plans' [options] did not reach the runs: {} / {}",
                tatp["workload"]["settings"], bank["workload"]["settings"]
            )
        },
    )?;
    let out = dbduel(&["report", "--results", &results, "-o", &html]);
    expect_code(&out, 0, "html report")?;
    let md = dbduel(&["report", "--format", "markdown", "--results", &results]);
    expect_code(&md, 0, "markdown report")?;
    let md = String::from_utf8_lossy(&md.stdout).to_string();
    ensure(md.contains("mqth "), || {
        format!("markdown lacks MQTh:\n{md}")
    })?;
    for t in ["get_subscriber_data", "amalgamate", "send_payment"] {
        ensure(md.contains(&format!("| {t} |")), || {
            format!("markdown report lacks transaction type {t}:\n{md}")
        })?;
    }
    let page = std::fs::read_to_string(&html).map_err(|e| e.to_string())?;
    ensure(
        page.contains("<section id=\"types\">") && page.contains("get_subscriber_data"),
        || "the HTML report has no per-type section with TATP's types".into(),
    )
}

fn resume() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = write(
        dir.path(),
        "resume.toml",
        "engines = [\"sqlite\"]\nclients = [1, 2, 3, 4]\ntime = 1\nrepeats = 2\n",
    );
    let results = dir.path().join("r.db");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(["sweep", &plan, "--results"])
        .arg(&results)
        // Killed hard, it cannot remove its own temporary directory: the test's takes it.
        .env("TMPDIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    // Kill it hard once two points are in the store.
    let deadline = Instant::now() + Duration::from_secs(60);
    let stored = |p: &Path| {
        rusqlite::Connection::open(p)
            .and_then(|c| c.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0)
    };
    while stored(&results) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    let before = stored(&results);
    ensure((2..8).contains(&before), || {
        format!("{before} points stored before the kill")
    })?;
    let out = dbduel(&["sweep", &plan, "--results", &results.display().to_string()]);
    expect_code(&out, 0, "resumed sweep")?;
    let all = text(&out);
    let expect = format!("{} points measured, {before} already in", 8 - before);
    ensure(all.contains(&expect), || {
        format!("expected '{expect}':\n{all}")
    })?;
    ensure(stored(&results) == 8, || {
        format!("{} points after resuming", stored(&results))
    })
}

/// `server start --profile tuned` applies the tuned knobs, visible from inside the server.
fn tuned_visible(engine: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = dir.path().join(engine).display().to_string();
    let out = dbduel(&[
        "server",
        "start",
        engine,
        "--data-dir",
        &data,
        "--profile",
        "tuned",
        "--scale",
        "60",
    ]);
    expect_code(&out, 0, "server start")?;
    ensure(text(&out).contains("password: in "), || text(&out))?;
    let full = dbduel(&["server", "dsn", "--data-dir", &data]);
    expect_code(&full, 0, "server dsn")?;
    let result = check_tuned(engine, &format!("dsn: {}", text(&full)));
    let stop = dbduel(&["server", "stop", "--data-dir", &data]);
    result?;
    expect_code(&stop, 0, "server stop")?;
    let status = dbduel(&["server", "status", "--data-dir", &data]);
    ensure(
        text(&status).contains("stopped") || status.status.code() == Some(2),
        || text(&status),
    )
}

fn check_tuned(engine: &str, started: &str) -> Result<(), String> {
    let dsn = started
        .lines()
        .find_map(|l| l.strip_prefix("dsn: "))
        .ok_or("no dsn printed")?
        .trim()
        .to_string();
    let host = dbduel::metrics::Host::read();
    let facts = dbduel::server::profile::Facts {
        ram_bytes: host.ram_bytes,
        cores: host.cores,
        dataset_bytes: 60 * (16 << 20),
        max_clients: 100,
    };
    let tuned = dbduel::server::profile::builtin("tuned", &facts).expect("tuned");
    let knob = |name: &str| {
        tuned.knobs[engine]
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .expect("knob")
    };
    let mut s = crate::env::session(&dsn);
    if engine == "postgres" {
        let got = s.query_text("SHOW shared_buffers").map_err(|e| e.message)?[0][0].to_string();
        let want = knob("shared_buffers");
        let mb = |v: &str| {
            v.trim_end_matches("MB").parse::<u64>().ok().or_else(|| {
                v.trim_end_matches("GB")
                    .parse::<u64>()
                    .ok()
                    .map(|g| g * 1024)
            })
        };
        ensure(mb(&got) == mb(&want) && mb(&got) > Some(128), || {
            format!("SHOW shared_buffers = {got}, tuned = {want}")
        })
    } else {
        let got = s
            .query_text("SELECT @@innodb_buffer_pool_size")
            .map_err(|e| e.message)?[0][0]
            .as_i64()
            .unwrap_or(0);
        let want: i64 = knob("innodb_buffer_pool_size")
            .trim_end_matches('M')
            .parse::<i64>()
            .unwrap_or(0)
            << 20;
        // InnoDB rounds the pool up to whole chunks (128 MiB).
        ensure(got >= want && got - want < 128 << 20, || {
            format!("@@innodb_buffer_pool_size = {got}, tuned = {want}")
        })
    }
}

fn bad_plan() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = write(
        dir.path(),
        "bad.toml",
        "engines = [\"sqlite\"]\nclients = [1]\nrepeat = 3\n",
    );
    let out = dbduel(&[
        "sweep",
        &plan,
        "--results",
        &dir.path().join("r.db").display().to_string(),
    ]);
    expect_code(&out, 2, "plan with an unknown key")?;
    let all = text(&out);
    ensure(all.contains("line 3") && all.contains("repeat"), || {
        all.clone()
    })
}

fn bad_server() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join("precious.txt"), "keep me").map_err(|e| e.to_string())?;
    let d = dir.path().display().to_string();
    let out = dbduel(&["server", "start", "postgres", "--data-dir", &d]);
    expect_code(&out, 2, "non-empty data directory")?;
    ensure(text(&out).contains("is not empty"), || text(&out))?;
    ensure(dir.path().join("precious.txt").exists(), || {
        "the user's file was touched".into()
    })?;
    let busy = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = busy
        .local_addr()
        .map_err(|e| e.to_string())?
        .port()
        .to_string();
    let fresh = dir.path().join("new").display().to_string();
    let out = dbduel(&[
        "server",
        "start",
        "mysql",
        "--data-dir",
        &fresh,
        "--port",
        &port,
    ]);
    expect_code(&out, 2, "port in use")?;
    ensure(text(&out).contains("in use"), || text(&out))
}

/// A knob the server refuses stops the sweep with the server's own words, not a silent default.
fn rejected_knob() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = "engines = [\"postgres\"]\nprofiles = [\"bad\"]\nclients = [1]\ntime = 1\n[profile.bad]\npostgres = { shared_buffers = \"lots\" }\n";
    let plan = write(dir.path(), "bad-knob.toml", plan);
    let out = dbduel(&[
        "sweep",
        &plan,
        "--results",
        &dir.path().join("r.db").display().to_string(),
    ]);
    expect_code(&out, 2, "sweep with a rejected knob")?;
    let all = text(&out);
    ensure(
        all.contains("shared_buffers") && all.contains("lots"),
        || all.clone(),
    )
}

/// Two plans that share a point (engine, profile, workload, clients) in one store: a report
/// over both keeps their points apart, each labelled with its plan, and says so; an unknown
/// plan is refused by `report` and `results`; CSV puts the key columns first.
fn plans_apart() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let results = dir.path().join("r.db").display().to_string();
    for name in ["alpha", "beta"] {
        let plan = format!("name = \"{name}\"\nengines = [\"sqlite\"]\nclients = [1]\ntime = 1\n");
        let plan = write(dir.path(), &format!("{name}.toml"), &plan);
        let out = dbduel(&["sweep", &plan, "--results", &results]);
        expect_code(&out, 0, name)?;
    }
    let out = dbduel(&["report", "--format", "markdown", "--results", &results]);
    expect_code(&out, 0, "report over two plans")?;
    let md = text(&out);
    ensure(md.contains("covers 2 plans (alpha, beta)"), || {
        format!("no note about the two plans:\n{md}")
    })?;
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| sqlite | default · "))
        .collect();
    ensure(
        rows.len() == 2 && rows[0].contains("· alpha") && rows[1].contains("· beta"),
        || format!("the two plans' points are not two labelled rows:\n{md}"),
    )?;
    ensure(!md.contains("unstable"), || {
        format!("points of two plans were taken for repeats:\n{md}")
    })?;
    for args in [
        &["report", "--plan", "nosuch", "--format", "markdown"][..],
        &["results", "list", "--plan", "nosuch"][..],
        &["results", "export", "--format", "csv", "--plan", "nosuch"][..],
    ] {
        let mut args = args.to_vec();
        args.extend(["--results", &results]);
        let out = dbduel(&args);
        expect_code(&out, 2, &args.join(" "))?;
        ensure(text(&out).contains("no plan named 'nosuch'"), || text(&out))?;
    }
    let out = dbduel(&["results", "list", "--plan", "beta", "--results", &results]);
    expect_code(&out, 0, "results list --plan beta")?;
    ensure(text(&out).lines().count() == 2, || text(&out))?;
    let csv = dbduel(&[
        "results",
        "export",
        "--format",
        "csv",
        "--results",
        &results,
    ]);
    expect_code(&csv, 0, "csv export")?;
    let csv = text(&csv);
    ensure(
        csv.starts_with("id,plan,engine,profile,workload,variant,clients,repeat,"),
        || format!("CSV key columns are not first:\n{csv}"),
    )
}

/// SQLite under `default`, `tuned`, `unsafe` and a user profile named `fast` that sets
/// synchronous=NORMAL in WAL mode (faster, and not durable across a power loss): each result
/// records its durability as judged from the settings read back; the report flags `fast` as
/// not durable and `unsafe` as UNSAFE with their reasons, never bolds either, states the
/// verdict first in the settings table, and bolds one durable point.
fn durability_decides() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = "name = \"durable\"\nengines = [\"sqlite\"]\nprofiles = [\"default\", \"tuned\", \"unsafe\", \"fast\"]\nclients = [1]\ntime = 1\n\n[profile.fast]\nsqlite = { journal_mode = \"WAL\", synchronous = \"NORMAL\" }\n";
    let plan = write(dir.path(), "durable.toml", plan);
    let results = dir.path().join("r.db").display().to_string();
    expect_code(
        &dbduel(&["sweep", &plan, "--results", &results]),
        0,
        "sweep",
    )?;
    let rows = exported(&results)?;
    let level = |profile: &str| {
        let id = rows.iter().find(|r| r["profile"] == profile)?["id"].to_string();
        let show = dbduel(&["results", "show", &id, "--results", &results]);
        let run: serde_json::Value = serde_json::from_slice(&show.stdout).ok()?;
        Some(run["engine"]["durability"]["level"].clone())
    };
    for (profile, want) in [
        ("default", "durable"),
        ("tuned", "durable"),
        ("unsafe", "unsafe"),
        ("fast", "not_durable"),
    ] {
        ensure(level(profile) == Some(serde_json::json!(want)), || {
            format!(
                "{profile}: durability {:?}, expected {want}",
                level(profile)
            )
        })?;
    }
    let md = dbduel(&["report", "--format", "markdown", "--results", &results]);
    expect_code(&md, 0, "markdown report")?;
    let md = text(&md);
    let row = |profile: &str| {
        md.lines()
            .find(|l| l.starts_with("| sqlite | ") && l.contains(&format!("| {profile} |")))
            .unwrap_or_default()
            .to_string()
    };
    let fast = row("fast");
    ensure(
        fast.contains("not durable: synchronous=NORMAL in WAL mode") && !fast.contains("**"),
        || format!("the not durable profile is flagged and not bold:\n{md}"),
    )?;
    let unsafe_row = row("unsafe");
    ensure(
        unsafe_row.contains("UNSAFE: synchronous=OFF") && !unsafe_row.contains("**"),
        || format!("the unsafe profile is flagged and not bold:\n{md}"),
    )?;
    let bold = ["default", "tuned"]
        .iter()
        .filter(|p| row(p).contains("**"))
        .count();
    ensure(bold == 1, || {
        format!("exactly one durable point is bold, got {bold}:\n{md}")
    })?;
    ensure(
        md.lines().any(|l| {
            l.contains("durability (judged from these settings)")
                && l.contains("UNSAFE")
                && l.contains("not durable")
        }),
        || format!("the settings table states each profile's durability:\n{md}"),
    )?;
    // One repeat of one second: the noise cannot be judged, and the verdict says what to run,
    // under the one rule the report states.
    ensure(
        md.contains("judged as `dbduel compare` judges it")
            && md.lines().any(|l| {
                l.starts_with("| sqlite | tpcb |")
                    && l.contains("noise unknown (")
                    && l.contains("repeats a side")
            }),
        || format!("profiles against the baseline follow compare's rule:\n{md}"),
    )
}

/// A TPC-H plan (no `clients` key: its streams take one) over two profiles, two repeats: every
/// point runs with the plan's seed, so every one gets the same substitution parameters.
fn same_work() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = "name = \"same\"\nengines = [\"sqlite\"]\nworkload = \"tpch\"\nprofiles = [\"default\", \"tuned\"]\nrepeats = 2\n\n[options]\nscale-factor = 0.01\nqueries = \"2,9\"\n";
    let plan = write(dir.path(), "same.toml", plan);
    let results = dir.path().join("r.db").display().to_string();
    expect_code(
        &dbduel(&["sweep", &plan, "--results", &results]),
        0,
        "sweep",
    )?;
    let mut seen = Vec::new();
    for id in 1..=4 {
        let show = dbduel(&["results", "show", &id.to_string(), "--results", &results]);
        let run: serde_json::Value =
            serde_json::from_slice(&show.stdout).map_err(|e| format!("run {id}: {e}"))?;
        seen.push((
            run["options"]["seed"].clone(),
            run["workload"]["settings"]["params.stream0"].clone(),
        ));
    }
    ensure(
        seen[0].1.is_string() && seen.iter().all(|s| *s == seen[0]),
        || format!("the points ran different seeds or parameters: {seen:?}"),
    )
}
