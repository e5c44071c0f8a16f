//! The server observer on the real servers: PostgreSQL's process tree and a CHECKPOINT seen
//! in the second it happened; MariaDB's process and its counters.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use dbduel::metrics::observe::{Observer, ResourceSample};
use libtest_mimic::Trial;

use crate::env::{Env, Target, Test, ensure, session, trials_of};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 2] = [
        ("postgres_tree_and_checkpoint", postgres),
        ("mariadb_tree_and_counters", mariadb),
    ];
    trials_of(env, "observe", tests)
}

/// Observe for `secs` from now (longer if `work` takes longer) while `work` runs through
/// another session at `at` seconds; the samples and the whole seconds observed.
fn observe(
    pid: Option<u32>,
    dsn: &str,
    at: f64,
    secs: f64,
    work: &[&str],
) -> Result<(Vec<ResourceSample>, u32), String> {
    let start = Instant::now();
    let released = Arc::new(OnceLock::new());
    let _ = released.set(start);
    let observer = Observer::start(pid, Some(session(dsn)), released);
    let mut other = session(dsn);
    std::thread::sleep(Duration::from_secs_f64(at));
    for sql in work {
        other.query_text(sql).map_err(|e| format!("{sql}: {e}"))?;
    }
    let rest = Duration::from_secs_f64(secs).saturating_sub(start.elapsed());
    std::thread::sleep(rest);
    // On a busy machine the work may outlast `secs`: the samples follow the time it took.
    let seconds = start.elapsed().as_secs() as u32;
    Ok((observer.stop(), seconds))
}

/// Every sample saw the process tree: CPU grew, memory and storage I/O are known. Samples
/// come at the start (t = 0), each whole second, and at the stop (the second under way).
fn tree_seen(samples: &[ResourceSample], seconds: u32) -> Result<(), String> {
    let t: Vec<u32> = samples.iter().map(|s| s.t).collect();
    ensure(t == (0..=seconds + 1).collect::<Vec<_>>(), || {
        format!("a sample at the start, each second and the stop: {samples:?}")
    })?;
    let last = samples.last().expect("samples");
    ensure(last.server_cpu_s > 0.0, || format!("no CPU: {samples:?}"))?;
    ensure(
        samples.iter().all(|s| {
            s.server_rss_bytes > Some(1 << 20)
                && s.read_bytes.is_some()
                && s.written_bytes.is_some()
        }),
        || format!("memory or I/O unknown: {samples:?}"),
    )?;
    ensure(
        samples.iter().all(|s| s.database_size_bytes > Some(0)),
        || format!("database size unknown: {samples:?}"),
    )
}

/// On a server of its own: checkpoints are the cluster's, and the shared server's other trials
/// make some (a DROP DATABASE requests one).
fn postgres(env: &Env) -> Result<(), String> {
    let server = env.own_server(&dbduel::server::POSTGRES, &[("fsync", "off")])?;
    let dsn = server.dsn_text("postgres");
    let pid = server.pid();
    ensure(pid.is_some(), || "the test server has no pid".into())?;
    let work = [
        "SELECT count(*) FROM generate_series(1, 2000000)",
        "CHECKPOINT",
    ];
    let (samples, seconds) = observe(pid, &dsn, 1.2, 3.3, &work)?;
    tree_seen(&samples, seconds)?;
    let checkpoints: Vec<u32> = samples.iter().map(|s| s.checkpoints).collect();
    ensure(
        checkpoints.iter().sum::<u32>() == 1 && checkpoints[0] == 0,
        || format!("one checkpoint, after the first second: {samples:?}"),
    )
}

fn mariadb(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::MariaDb("InnoDB"), "observe");
    session(&dsn)
        .batch("CREATE TABLE t (x INT) ENGINE=InnoDB")
        .map_err(|e| e.to_string())?;
    let pid = env.maria().lock().unwrap().pid();
    ensure(pid.is_some(), || "the test server has no pid".into())?;
    let work = ["SELECT BENCHMARK(2000000, MD5('dbduel'))"];
    let (samples, seconds) = observe(pid, &dsn, 0.3, 2.3, &work)?;
    tree_seen(&samples, seconds)
}
