//! The results store under contention and faults: two sweeps of one plan at once, sweeps
//! opening a new store at once, a read-only store and a full disk (on a small tmpfs); the
//! store in a PostgreSQL and in a MariaDB database, each opened by two sweeps at once and read
//! by every reader.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;

use base64::Engine as _;
use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, session, text};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let (pg, maria) = (env.clone(), env.clone());
    vec![
        crate::env::trial("store::postgres_shared_by_two_sweeps", move || {
            let hdr = "SELECT encode(hdr_v2, 'base64') FROM histograms ORDER BY run_id LIMIT 1";
            Ok(shared_store(&pg, Target::Postgres, hdr)?)
        }),
        crate::env::trial("store::mariadb_shared_by_two_sweeps", move || {
            let hdr = "SELECT TO_BASE64(hdr_v2) FROM histograms ORDER BY run_id LIMIT 1";
            Ok(shared_store(&maria, Target::MariaDb("InnoDB"), hdr)?)
        }),
        crate::env::trial(
            "store::second_sweep_of_a_plan_is_refused_naming_the_first",
            || Ok(same_plan_twice()?),
        ),
        crate::env::trial("store::two_sweeps_open_a_new_store_at_once", || {
            Ok(new_store_at_once()?)
        }),
        crate::env::trial(
            "store::read_only_store_is_one_line_and_keeps_points",
            || Ok(read_only()?),
        ),
        crate::env::trial(
            "store::full_disk_is_one_line_keeps_points_and_the_point",
            || Ok(disk_full()?),
        ),
    ]
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write plan");
    path.display().to_string()
}

fn spawn_sweep(plan: &str, results: &Path, cwd: &Path) -> Result<Child, String> {
    Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(["sweep", plan, "--results"])
        .arg(results)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())
}

/// A count from the store, 0 while it cannot be read.
fn count(store: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row(sql, [], |r| r.get::<_, i64>(0)))
        .unwrap_or(0)
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    while !cond() {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The second sweep of a plan that is being swept is refused with the first one's process id
/// and measures nothing; once the first has finished, the plan is complete and resumes to nothing.
fn same_plan_twice() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = write(
        dir.path(),
        "twice.toml",
        "engines = [\"sqlite\"]\nclients = [1, 2]\ntime = 2\n",
    );
    let results = dir.path().join("r.db");
    let first = spawn_sweep(&plan, &results, dir.path())?;
    let pid = first.id();
    wait_for("the first sweep's claim", Duration::from_secs(30), || {
        count(&results, "SELECT count(*) FROM sweeps") == 1
    })?;
    let second = dbduel(&["sweep", &plan, "--results", &results.display().to_string()]);
    let first = first.wait_with_output().map_err(|e| e.to_string())?;
    expect_code(&first, 0, "first sweep")?;
    expect_code(&second, 2, "second sweep of the same plan")?;
    let said = text(&second);
    ensure(said.contains(&format!("dbduel process {pid} ")), || {
        format!("the refusal does not name process {pid}:\n{said}")
    })?;
    ensure(said.trim().lines().count() == 1, || {
        format!("the refusal is not one line:\n{said}")
    })?;
    ensure(count(&results, "SELECT count(*) FROM runs") == 2, || {
        format!(
            "{} runs stored",
            count(&results, "SELECT count(*) FROM runs")
        )
    })?;
    let again = dbduel(&["sweep", &plan, "--results", &results.display().to_string()]);
    expect_code(&again, 0, "sweep after the first ended")?;
    ensure(
        text(&again).contains("0 points measured, 2 already in"),
        || text(&again),
    )
}

/// Two sweeps of different plans create the same new store at once: both migrate it without
/// error and both keep their point.
fn new_store_at_once() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let results = dir.path().join("new.db");
    let sweeps: Vec<Child> = (1..=2)
        .map(|c| {
            let plan = write(
                dir.path(),
                &format!("p{c}.toml"),
                &format!("name = \"p{c}\"\nengines = [\"sqlite\"]\nclients = [{c}]\ntime = 1\n"),
            );
            spawn_sweep(&plan, &results, dir.path())
        })
        .collect::<Result<_, _>>()?;
    for (i, sweep) in sweeps.into_iter().enumerate() {
        let out = sweep.wait_with_output().map_err(|e| e.to_string())?;
        expect_code(&out, 0, &format!("sweep {}", i + 1))?;
    }
    let runs = count(&results, "SELECT count(*) FROM runs");
    let plans = count(&results, "SELECT count(*) FROM plans");
    ensure(runs == 2 && plans == 2, || {
        format!("{runs} runs of {plans} plans stored")
    })
}

/// A small tmpfs, unmounted on drop; None when this machine cannot mount one (not root, or
/// no permission in a container), with the reason printed.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Option<Tmpfs>, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Ok(Some(Tmpfs { dir })),
            Ok(o) => {
                eprintln!(
                    "skipped: cannot mount a tmpfs here: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                Ok(None)
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount: {e}");
                Ok(None)
            }
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    fn remount(&self, mode: &str) -> Result<(), String> {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(self.dir.path())
            .output()
            .map_err(|e| e.to_string())?;
        ensure(out.status.success(), || {
            format!("remount {mode}: {}", String::from_utf8_lossy(&out.stderr))
        })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Stored points, and whether SQLite finds the store whole.
fn intact(store: &Path) -> Result<(i64, String), String> {
    let conn = rusqlite::Connection::open(store).map_err(|e| e.to_string())?;
    let runs = conn
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    let check = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    Ok((runs, check))
}

/// A store on a file system remounted read-only (which stops root too): the next sweep ends
/// at once with one line naming the store, before measuring anything, and the stored point
/// is still there.
fn read_only() -> Result<(), String> {
    let Some(fs) = Tmpfs::mount("64m")? else {
        return Ok(());
    };
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = "engines = [\"sqlite\"]\nclients = [1]\ntime = 1\n";
    let plan = write(dir.path(), "ro.toml", plan);
    let results = fs.path().join("r.db");
    let store = results.display().to_string();
    let out = dbduel(&["sweep", &plan, "--results", &store]);
    expect_code(&out, 0, "sweep into the store")?;
    fs.remount("ro")?;
    let bigger = write(
        dir.path(),
        "ro.toml",
        "engines = [\"sqlite\"]\nclients = [1, 2]\ntime = 1\n",
    );
    let started = Instant::now();
    let out = dbduel(&["sweep", &bigger, "--results", &store]);
    let took = started.elapsed();
    fs.remount("rw")?;
    expect_code(&out, 2, "sweep into a read-only store")?;
    let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
    ensure(
        said.lines().count() == 1 && said.contains(&store) && said.contains("read-only"),
        || format!("not one line naming the read-only store:\n{said}"),
    )?;
    ensure(took < Duration::from_secs(5), || {
        format!("the refusal came after {took:?}: something was measured first")
    })?;
    let (runs, check) = intact(&results)?;
    ensure(runs == 1 && check == "ok", || {
        format!("{runs} runs stored, integrity_check: {check}")
    })
}

/// The disk fills while a sweep measures its second point: the sweep ends with exit 2 and one
/// line naming the store and the file (in the current directory) that keeps the point in
/// flight; the first point stays in the store, and the store is whole.
fn disk_full() -> Result<(), String> {
    let Some(fs) = Tmpfs::mount("8m")? else {
        return Ok(());
    };
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = write(
        dir.path(),
        "full.toml",
        "engines = [\"sqlite\"]\nclients = [1, 2]\ntime = 3\n",
    );
    let results = fs.path().join("r.db");
    let sweep = spawn_sweep(&plan, &results, dir.path())?;
    wait_for("the first point", Duration::from_secs(60), || {
        count(&results, "SELECT count(*) FROM runs") == 1
    })?;
    let filler = fill(&fs.path().join("filler"))?;
    let out = sweep.wait_with_output().map_err(|e| e.to_string())?;
    std::fs::remove_file(&filler).map_err(|e| e.to_string())?;
    expect_code(&out, 2, "sweep on a full disk")?;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let last = stderr.trim().lines().last().unwrap_or_default().to_string();
    ensure(
        last.starts_with("dbduel: results store") && last.contains("full"),
        || format!("last line does not say the store is full:\n{stderr}"),
    )?;
    let kept = last
        .split("kept in ./")
        .nth(1)
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| format!("no file named for the point in flight: {last}"))?;
    let point: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(kept)).map_err(|e| format!("{kept}: {e}"))?,
    )
    .map_err(|e| e.to_string())?;
    ensure(
        point["options"]["clients"] == 2 && point["transactions"].as_u64() > Some(0),
        || format!("the kept point is not the second one: {}", point["options"]),
    )?;
    let (runs, check) = intact(&results)?;
    ensure(runs == 1 && check == "ok", || {
        format!("{runs} runs stored, integrity_check: {check}")
    })
}

/// Write zeros to `path` until the file system is full.
fn fill(path: &Path) -> Result<PathBuf, String> {
    use std::io::Write;
    let mut f = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let block = vec![0u8; 64 << 10];
    loop {
        match f.write(&block) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => return Err(format!("filling the tmpfs: {e}")),
        }
    }
    Ok(path.to_path_buf())
}

/// Two sweeps of different plans write one new store in a server's database at once;
/// `results`, `report` and `compare` read it; a sweep resumes from it; a plan another process
/// holds is refused; the password is never shown; a histogram reads back from its bytes
/// (`hdr`: the first one, as base64).
fn shared_store(env: &Env, target: Target, hdr: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let store = env.fresh_db(target, "results_store");
    let password = store
        .split("dbduel:")
        .nth(1)
        .and_then(|s| s.split('@').next())
        .unwrap_or_default()
        .to_string();
    let plans: Vec<String> = [("p1", 1, 3), ("p2", 2, 1)]
        .iter()
        .map(|(name, c, r)| {
            write(
                dir.path(),
                &format!("{name}.toml"),
                &format!("name = \"{name}\"\nengines = [\"sqlite\"]\nclients = [{c}]\ntime = 1\nrepeats = {r}\n"),
            )
        })
        .collect();
    let sweeps: Vec<Child> = plans
        .iter()
        .map(|plan| spawn_sweep(plan, Path::new(&store), dir.path()))
        .collect::<Result<_, _>>()?;
    let mut said = String::new();
    for (i, sweep) in sweeps.into_iter().enumerate() {
        let out = sweep.wait_with_output().map_err(|e| e.to_string())?;
        expect_code(&out, 0, &format!("sweep {} into {store}", i + 1))?;
        said += &text(&out);
    }
    let run = |args: &[&str]| -> Result<String, String> {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--store", &store]);
        let out = dbduel(&all);
        expect_code(&out, 0, &args.join(" "))?;
        let t = text(&out);
        Ok(t)
    };
    let exported = run(&["results", "export", "--format", "json"])?;
    let rows: serde_json::Value = serde_json::from_str(
        exported
            .lines()
            .skip_while(|l| !l.starts_with('['))
            .collect::<Vec<_>>()
            .join("\n")
            .as_str(),
    )
    .map_err(|e| format!("{e}: {exported}"))?;
    let rows = rows.as_array().cloned().unwrap_or_default();
    ensure(rows.len() == 4, || {
        format!("{} runs stored: {exported}", rows.len())
    })?;
    ensure(
        rows.iter().all(|r| r["tps"].as_f64().unwrap_or(0.0) > 0.0),
        || exported.clone(),
    )?;
    let first = rows[0]["id"].as_i64().unwrap_or(0).to_string();
    let shown = run(&["results", "show", &first])?;
    ensure(
        shown.contains("\"windows\"") && shown.contains("\"tps\""),
        || shown.clone(),
    )?;
    // The verdict's limiter is read out of the stored result by the store's own SQL.
    let limiter = format!("\"limiter\": {}", rows[0]["limiter"]);
    ensure(
        rows.iter()
            .all(|r| r["limiter"].as_str().is_some_and(|l| !l.is_empty()))
            && shown.contains(&limiter),
        || format!("limiter {limiter}: {exported}"),
    )?;
    let p1: Vec<String> = rows
        .iter()
        .filter(|r| r["plan"] == "p1")
        .map(|r| r["id"].to_string())
        .collect();
    let p2 = rows
        .iter()
        .find(|r| r["plan"] == "p2")
        .map(|r| r["id"].to_string())
        .unwrap_or_default();
    let compared = run(&["compare", &format!("@{}", p1[0]), &p2])?;
    ensure(compared.contains("tps"), || compared.clone())?;
    let report = run(&["report", "--plan", "p1", "--format", "markdown"])?;
    ensure(report.contains("sqlite"), || report.clone())?;
    let again = dbduel(&["sweep", &plans[0], "--results", &store]);
    expect_code(&again, 0, "the sweep again")?;
    said += &text(&again);
    ensure(
        text(&again).contains("0 points measured, 3 already in"),
        || text(&again),
    )?;
    ensure(
        password.len() > 8 && !said.contains(&password) && !exported.contains(&password),
        || "the store's password was shown".into(),
    )?;
    let mut s = session(&store);
    // A plan claimed by a live process (pid 1, as /proc tells it) is refused, naming it.
    let stat = std::fs::read_to_string("/proc/1/stat").map_err(|e| e.to_string())?;
    let start = stat[stat.rfind(')').unwrap_or(0) + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap_or("")
        .to_string();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    s.batch(&format!(
        "INSERT INTO sweeps (plan_id, pid, host, process_start, started_at)
         SELECT id, 1, '{}', '{start}', 'now' FROM plans WHERE name = 'p1'",
        host.trim()
    ))
    .map_err(|e| e.message)?;
    let refused = dbduel(&["sweep", &plans[0], "--results", &store]);
    expect_code(&refused, 2, "a sweep of a plan another process holds")?;
    ensure(text(&refused).contains("dbduel process 1 "), || {
        text(&refused)
    })?;
    let hdr = s.query_text(hdr).map_err(|e| e.message)?;
    let b64 = match hdr.first().and_then(|r| r.first()) {
        Some(dbduel::engine::Value::Text(t)) => t.replace('\n', ""),
        other => return Err(format!("no histogram stored: {other:?}")),
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| e.to_string())?;
    let h = dbduel::metrics::deserialize(&bytes)?;
    ensure(!h.is_empty(), || "an empty histogram".into())
}
