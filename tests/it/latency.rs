//! Latency checked against delays known in advance: a transaction that sleeps 5 ms on the
//! server (PostgreSQL's pg_sleep, MariaDB's SLEEP), and a `SELECT 1` behind a proxy in this
//! file that holds every chunk a fixed time each way. No percentile may fall below the delay,
//! and the median may not stray far above it.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, read_result, with_env};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out = Vec::new();
    for (target, sleep) in [
        (Target::Postgres, "SELECT pg_sleep(0.005);"),
        (Target::MariaDb("InnoDB"), "SELECT SLEEP(0.005);"),
    ] {
        out.push(with_env(
            env,
            format!("latency::server_sleep_5ms::{}", target.label()),
            move |env| server_sleep(env, target, sleep),
        ));
    }
    out.push(with_env(
        env,
        "latency::network_delay_2_5ms_each_way::postgres",
        network_delay,
    ));
    for target in [Target::Postgres, Target::MariaDb("InnoDB")] {
        out.push(with_env(
            env,
            format!(
                "latency::lazy_begin_one_round_trip_less::{}",
                target.label()
            ),
            move |env| lazy_begin(env, target),
        ));
    }
    out
}

/// Every latency figure of a result in milliseconds, with where it was found: the totals, each
/// transaction type, the measured per-second windows and the first transaction.
pub fn all_latencies(r: &serde_json::Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let keys = ["mean", "p50", "p90", "p95", "p99", "p99_9", "max"];
    let mut of = |what: &str, l: &serde_json::Value| {
        for k in keys {
            out.push((format!("{what} {k}"), l[k].as_f64().unwrap_or(f64::NAN)));
        }
    };
    of("total", &r["latency_ms"]);
    for t in r["transaction_types"].as_array().into_iter().flatten() {
        of(t["name"].as_str().unwrap_or("?"), &t["latency_ms"]);
    }
    for w in r["windows"].as_array().into_iter().flatten() {
        if w["warmup"] == true || w["transactions"] == 0 {
            continue;
        }
        for k in ["p50_ms", "p99_ms"] {
            out.push((
                format!("window {} {k}", w["t"]),
                w[k].as_f64().unwrap_or(f64::NAN),
            ));
        }
    }
    if let Some(first) = r["first_transaction_ms"].as_f64() {
        out.push(("first transaction".into(), first));
    }
    out
}

/// Every figure at or above `floor` (a NaN is a missing figure and fails too).
fn check_floor(r: &serde_json::Value, floor: f64) -> Result<(), String> {
    ensure(r["errors"] == 0, || {
        format!("errors: {}", r["error_messages"])
    })?;
    ensure(r["transactions"].as_u64().unwrap_or(0) >= 200, || {
        format!("only {} transactions", r["transactions"])
    })?;
    let below: Vec<String> = all_latencies(r)
        .into_iter()
        .filter(|(_, v)| v.is_nan() || *v < floor)
        .map(|(k, v)| format!("{k} = {v} ms"))
        .collect();
    ensure(below.is_empty(), || {
        format!("below the {floor} ms floor: {}", below.join(", "))
    })
}

/// Runs `attempt` until its median is at most `ceiling`, three times at most. The floor is
/// checked on every run: nothing can be faster than the delay, so one figure below it is a
/// fault in dbduel's accounting. The ceiling is machine noise as much as dbduel (two shared
/// cores; pgbench's own mean for pg_sleep(0.005) at two clients was 5.8 ms here in one run
/// under load), so one run out of three within it is enough; an overhead dbduel adds to every
/// transaction still fails all three.
fn floor_and_ceiling(
    floor: f64,
    ceiling: f64,
    mut attempt: impl FnMut(u32) -> Result<serde_json::Value, String>,
) -> Result<(), String> {
    let mut medians = Vec::new();
    for n in 0..3 {
        let r = attempt(n)?;
        check_floor(&r, floor)?;
        let p50 = r["latency_ms"]["p50"].as_f64().unwrap_or(f64::NAN);
        if p50 <= ceiling {
            return Ok(());
        }
        medians.push(format!("{p50} ms ({})", r["latency_ms"]));
    }
    Err(format!(
        "p50 over {ceiling} ms in three runs: {}",
        medians.join("; ")
    ))
}

fn run_script(
    env: &Env,
    name: &str,
    dsn: &str,
    sql: &str,
    extra: &[&str],
) -> Result<serde_json::Value, String> {
    let file = env.path(&format!("{name}.sql"));
    std::fs::write(&file, format!("{sql}\n")).map_err(|e| e.to_string())?;
    let json = env.path(&format!("{name}.json"));
    let (f, j) = (file.display().to_string(), json.display().to_string());
    let mut args = vec!["run", "-f", &f, "--dsn", dsn, "--json", &j];
    args.extend(extra);
    expect_code(&dbduel(&args), 0, name)?;
    read_result(&json)
}

/// A transaction that sleeps 5 ms on the server: p50 between 5.0 and 5.6 ms, and nothing
/// (mean, percentiles, max, windows, first transaction) below 5 ms. Both protocols.
fn server_sleep(env: &Env, target: Target, sql: &str) -> Result<(), String> {
    let dsn = env.fresh_db(target, "sleep5");
    for protocol in ["simple", "prepared"] {
        floor_and_ceiling(5.0, 5.6, |n| {
            let name = format!("sleep5-{}-{protocol}-{n}", target.label());
            let args = ["-c", "2", "-T", "3", "-M", protocol];
            run_script(env, &name, &dsn, sql, &args)
        })
        .map_err(|e| format!("-M {protocol}: {e}"))?;
    }
    Ok(())
}

/// `SELECT 1` through a proxy that holds every chunk 2.5 ms each way: one round trip per
/// transaction, so nothing below 5 ms, and the median within 1.5 ms of it (the proxy's own
/// sleeps overshoot by tens of microseconds per hop; the server answers in well under 1 ms).
fn network_delay(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "delayed");
    let port = env.pg().lock().unwrap().port;
    let proxy = DelayProxy::start(
        SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_micros(2500),
    )
    .map_err(|e| format!("proxy: {e}"))?;
    let from = format!("127.0.0.1:{port}/");
    ensure(dsn.contains(&from), || format!("DSN {dsn} has no {from}"))?;
    let delayed = dsn.replace(&from, &format!("127.0.0.1:{}/", proxy.port));
    for protocol in ["simple", "prepared"] {
        floor_and_ceiling(5.0, 6.5, |n| {
            let name = format!("delayed-{protocol}-{n}");
            let args = ["-c", "2", "-T", "3", "-M", protocol];
            run_script(env, &name, &delayed, "SELECT 1;", &args)
        })
        .map_err(|e| format!("-M {protocol}: {e}"))?;
    }
    ensure(proxy.connections() >= 3, || {
        format!("the proxy saw {} connections", proxy.connections())
    })
}

/// `--lazy-begin` sends BEGIN with the transaction's first statement. Through a proxy holding
/// every chunk 2.5 ms each way, `BEGIN; SELECT 1; END;` is three round trips (nothing below
/// 15 ms) without it and two with it (nothing below 10 ms, the median under 13 ms), in each
/// protocol the engine has. And the transactions are still transactions: a lazy transaction's
/// INSERT that rolls back leaves no row (it would stay if the INSERT had run on its own), one
/// that commits keeps its row, a transaction of no statement ends without an error, an INSERT
/// outside any transaction commits on its own (MariaDB's session runs with autocommit off:
/// without the COMMIT dbduel sends after it, the row would go with the session), and a
/// transaction begun by a statement with options (`START TRANSACTION WITH CONSISTENT SNAPSHOT`)
/// that rolls back leaves none of its rows.
fn lazy_begin(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "lazy");
    let port: u16 = dsn
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("no 127.0.0.1 port in {dsn}"))?;
    let proxy = DelayProxy::start(
        SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_micros(2500),
    )
    .map_err(|e| format!("proxy: {e}"))?;
    let delayed = dsn.replace(
        &format!("127.0.0.1:{port}/"),
        &format!("127.0.0.1:{}/", proxy.port),
    );
    let label = target.label();
    let script = "BEGIN;\nSELECT 1;\nEND;";
    let protocols: &[&str] = match target {
        Target::Postgres => &["simple", "prepared", "extended"],
        _ => &["simple", "prepared"],
    };
    let alone = ["-c", "2", "-T", "3", "-M", "prepared"];
    let r = run_script(env, &format!("lazy-off-{label}"), &delayed, script, &alone)?;
    check_floor(&r, 15.0).map_err(|e| format!("without --lazy-begin: {e}"))?;
    for protocol in protocols {
        floor_and_ceiling(10.0, 13.0, |n| {
            let name = format!("lazy-{label}-{protocol}-{n}");
            let args = ["-c", "2", "-T", "3", "-M", protocol, "--lazy-begin"];
            let r = run_script(env, &name, &delayed, script, &args)?;
            ensure(r["options"]["lazy_begin"] == true, || {
                format!("the result does not say --lazy-begin: {}", r["options"])
            })?;
            Ok(r)
        })
        .map_err(|e| format!("--lazy-begin -M {protocol}: {e}"))?;
    }
    let mut s = crate::env::session(&dsn);
    s.batch("CREATE TABLE lazy_t (k INT)")
        .map_err(|e| e.to_string())?;
    // A transaction begun by a statement with options of its own, which dbduel sends as it is.
    let begin_with = match target {
        Target::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ",
        _ => "START TRANSACTION WITH CONSISTENT SNAPSHOT",
    };
    let txns = format!(
        "BEGIN;\nINSERT INTO lazy_t VALUES (1);\nROLLBACK;\n\
         BEGIN;\nINSERT INTO lazy_t VALUES (2);\nEND;\nBEGIN;\nEND;\n\
         INSERT INTO lazy_t VALUES (3);\n\
         {begin_with};\nINSERT INTO lazy_t VALUES (4);\nINSERT INTO lazy_t VALUES (4);\nROLLBACK;"
    );
    for protocol in protocols {
        let name = format!("lazy-rows-{label}-{protocol}");
        let args = ["-c", "1", "-t", "5", "-M", protocol, "--lazy-begin"];
        let r = run_script(env, &name, &dsn, &txns, &args)?;
        ensure(r["errors"] == 0 && r["transactions"] == 5, || {
            format!(
                "-M {protocol}: {} transactions, errors {}",
                r["transactions"], r["error_messages"]
            )
        })?;
    }
    let rows = s
        .query_text("SELECT k, count(*) FROM lazy_t GROUP BY k ORDER BY k")
        .map_err(|e| e.to_string())?;
    let rows: Vec<String> = rows.iter().map(|r| format!("{}:{}", r[0], r[1])).collect();
    let n = 5 * protocols.len();
    let want = vec![format!("2:{n}"), format!("3:{n}")];
    ensure(rows == want, || {
        format!(
            "rows by k after the lazy transactions: {rows:?}, want {want:?} (k=1 and 4 rolled back)"
        )
    })
}

/// A TCP proxy on a free loopback port that forwards each chunk it reads after holding it for
/// `delay`, in both directions. Chunks are stamped when read and written in order when due, so
/// the delay is fixed, not added per chunk queued behind another.
pub struct DelayProxy {
    pub port: u16,
    stop: Arc<AtomicBool>,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
}

impl DelayProxy {
    pub fn start(upstream: SocketAddr, delay: Duration) -> std::io::Result<DelayProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (stop2, accepted2) = (stop.clone(), accepted.clone());
        thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        accepted2.fetch_add(1, Ordering::Relaxed);
                        let _ = client.set_nonblocking(false);
                        if let Ok(server) = TcpStream::connect(upstream) {
                            pipe(&client, &server, delay);
                            pipe(&server, &client, delay);
                        }
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(DelayProxy {
            port,
            stop,
            accepted,
        })
    }

    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One direction: a reader stamps each chunk, a writer sends it when its time has come and
/// passes the end of the stream on as a half-close.
fn pipe(from: &TcpStream, to: &TcpStream, delay: Duration) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    let _ = to.set_nodelay(true);
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                break;
            }
        }
    });
    thread::spawn(move || {
        for (read_at, chunk) in rx {
            let due = read_at + delay;
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
