//! A managed PostgreSQL server: initdb (SCRAM passwords on loopback TCP, peer on the socket),
//! postgres on a loopback port with the given settings, its Unix socket in the server's run
//! directory (closed to other users). pg_stat_statements is created in template1 and postgres
//! at the first start, where the server's $libdir has it, and preloaded when the server is
//! started with `--server-statements`: every database dbduel (or a test) creates then has
//! the statements' figures.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::profile::{Facts, GIB, Knob, MIB, Recommended, Tuning, config_lines, mb, pairs};
use super::{Layout, ServerKind, chown, command, find_binary, run_logged};
use crate::dsn::Dsn;
use crate::engine::{self, EngineOptions, Protocol};
use crate::error::Error;

pub static POSTGRES: ServerKind = ServerKind {
    engine: "postgres",
    product: "PostgreSQL",
    package: "postgresql",
    account: "postgres",
    binaries,
    init,
    command: server_command,
    dsn,
    stop_signal: libc::SIGINT,
    default_db: "postgres",
    setup,
    fresh_db: super::fresh_db_by_sql,
    tuning: TUNING,
    statements,
};

/// The profile rules: `tuned` below; `unsafe` turns durability off on top of it.
const TUNING: Tuning = Tuning {
    engine: "postgres",
    tuned,
    durability_off: &[
        ("fsync", "off"),
        ("synchronous_commit", "off"),
        ("full_page_writes", "off"),
    ],
    connections: Some(("max_connections", 100)),
    space,
    config,
    recommended: Some(Recommended {
        name: "pgtune",
        rules: "pgtune's rules (pgtune.leopard.in.ua) for an OLTP server on Linux with SSDs",
        knobs: pgtune_here,
    }),
};

/// postgresql.conf lines (or `ALTER SYSTEM SET` after them), values quoted.
fn config(knobs: &[(String, String)]) -> String {
    config_lines(
        "# postgresql.conf: the settings dbduel tune chose (restart the server to apply them)",
        "",
        knobs,
        |k, v| format!("{k} = '{}'", v.replace('\'', "''")),
    )
}

/// What `dbduel tune` searches on PostgreSQL, for OLTP and analytics: the buffer cache up to
/// 40% of RAM, the planner's view of the cache and of random reads, WAL and checkpoints, sort
/// memory, I/O concurrency, the background writer, JIT; synchronous_commit only under UNSAFE.
fn space(f: &Facts) -> Vec<Knob> {
    let ram = f.ram_bytes;
    vec![
        Knob::sizes(
            "shared_buffers",
            "128MB",
            &[256 * MIB, 512 * MIB, GIB, ram / 8, ram / 4, ram * 2 / 5],
            ram * 2 / 5,
            "MB",
        ),
        Knob::sizes(
            "effective_cache_size",
            "4096MB",
            &[ram / 2, ram * 3 / 4],
            ram,
            "MB",
        ),
        Knob::new("wal_buffers", &["-1", "16MB", "64MB"]),
        Knob::new("max_wal_size", &["1GB", "4GB", "16GB"]),
        Knob::new("checkpoint_timeout", &["5min", "15min", "30min"]),
        Knob::new("checkpoint_completion_target", &["0.9", "0.5"]),
        Knob::new("random_page_cost", &["4", "1.1"]),
        Knob::new("effective_io_concurrency", &["1", "200"]),
        Knob::new("work_mem", &["4MB", "16MB", "64MB"]),
        Knob::new("wal_compression", &["off", "on"]),
        Knob::new("commit_delay", &["0", "100"]),
        Knob::new("bgwriter_lru_maxpages", &["100", "400"]),
        Knob::new("jit", &["on", "off"]),
        Knob::durability("synchronous_commit", &["on", "off"]),
    ]
}

/// PostgreSQL: shared_buffers a quarter of RAM (but no more than 1.5x the dataset, and at
/// least the shipped 128MB), effective_cache_size three quarters of RAM, work_mem RAM shared
/// by four sorts per connection (4-64MB), room for WAL so checkpoints come from the timeout.
fn tuned(f: &Facts) -> Vec<(String, String)> {
    let shared = (f.dataset_bytes * 3 / 2).clamp(128 * MIB, (f.ram_bytes / 4).max(128 * MIB));
    let connections = (f.max_clients as u64 + 10).max(100);
    let work = (f.ram_bytes / (4 * connections)).clamp(4 * MIB, 64 * MIB);
    let maintenance = (f.ram_bytes / 16).clamp(64 * MIB, GIB);
    let max_wal = (f.dataset_bytes * 2).clamp(GIB, 16 * GIB);
    pairs(&[
        ("shared_buffers", &format!("{}MB", mb(shared))),
        (
            "effective_cache_size",
            &format!("{}MB", mb(f.ram_bytes * 3 / 4)),
        ),
        ("work_mem", &format!("{}MB", mb(work))),
        ("maintenance_work_mem", &format!("{}MB", mb(maintenance))),
        ("wal_buffers", "16MB"),
        ("max_wal_size", &format!("{}MB", mb(max_wal))),
        ("min_wal_size", "512MB"),
        ("checkpoint_timeout", "15min"),
        ("checkpoint_completion_target", "0.9"),
    ])
}

/// pgtune's recommendation for this machine and the server found in `bin_dir` (or the newest
/// installed): its major version from `postgres --version`; 15 when none answers, said (a
/// setting that version's server refuses is then recorded as the candidate's refusal).
fn pgtune_here(f: &Facts, bin_dir: Option<&Path>) -> Vec<(String, String)> {
    let version = binaries(bin_dir)
        .and_then(|(_, postgres)| Command::new(postgres).arg("--version").output().ok())
        .and_then(|out| major_version(&String::from_utf8_lossy(&out.stdout)));
    let version = version.unwrap_or_else(|| {
        crate::errln!(
            "note: pgtune: the PostgreSQL server's version could not be read from `postgres --version`; its rules are applied for version 15"
        );
        15
    });
    pgtune(f, version)
}

/// The major version in `postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)`.
fn major_version(text: &str) -> Option<u32> {
    let after = text.split(')').nth(1)?.trim_start();
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// pgtune's published rules (github.com/le0pard/pgtune, configurationSlice.js) as a DBA fills
/// its form for a benchmark server: DB type "OLTP", Linux, SSD storage, the machine's RAM and
/// CPUs (RAM in whole MB, as the form takes it), the connections left blank (its OLTP default, 300, or the run's clients and 10 more),
/// and the data size class from the dataset against RAM (below RAM, up to 3x, more).
pub fn pgtune(f: &Facts, version: u32) -> Vec<(String, String)> {
    const KB: u64 = 1024;
    // The RAM in whole MB, as its form takes it.
    let ram_kb = f.ram_bytes / MIB * 1024;
    let connections = (f.max_clients as u64 + 10).max(300);
    let shared = ram_kb / 4;
    let maintenance = (ram_kb / 16).min(8 * GIB / KB);
    let wal_buffers = {
        let v = (3 * shared / 100).min(16 * MIB / KB);
        let v = if v > 14 * MIB / KB { 16 * MIB / KB } else { v };
        v.max(32)
    };
    // Parallel settings only from 4 CPUs; work_mem's share counts the workers PostgreSQL
    // starts by default (8) otherwise.
    let parallel = f.cores >= 4;
    let workers = if parallel { f.cores as u64 } else { 8 };
    let size_class = if f.dataset_bytes < f.ram_bytes {
        1.3
    } else if f.dataset_bytes <= 3 * f.ram_bytes {
        1.0
    } else {
        0.9
    };
    let work = ((ram_kb - shared) as f64 / ((connections + workers) * 3) as f64).floor();
    let work = ((work * size_class).floor() as u64).max(4 * MIB / KB);
    let mut out = vec![
        ("max_connections", connections.to_string()),
        ("shared_buffers", kb_text(shared)),
        ("effective_cache_size", kb_text(ram_kb * 3 / 4)),
        ("maintenance_work_mem", kb_text(maintenance)),
        ("checkpoint_completion_target", "0.9".into()),
        ("wal_buffers", kb_text(wal_buffers)),
        ("default_statistics_target", "100".into()),
        ("random_page_cost", "1.1".into()),
        ("effective_io_concurrency", "200".into()),
        ("work_mem", kb_text(work)),
        (
            "huge_pages",
            if shared >= 2 * GIB / KB { "try" } else { "off" }.into(),
        ),
        ("min_wal_size", "2GB".into()),
        ("max_wal_size", "8GB".into()),
    ];
    if version >= 12 {
        out.push(("jit", "off".into()));
    }
    if version >= 10 {
        let compression = if version >= 15 { "lz4" } else { "on" };
        out.push(("wal_compression", compression.into()));
    }
    if maintenance >= 2 * GIB / KB {
        out.push(("autovacuum_work_mem", kb_text(2 * GIB / KB)));
    }
    if f.cores >= 16 {
        let n = if f.cores >= 32 { "5" } else { "4" };
        out.push(("autovacuum_max_workers", n.into()));
    }
    if parallel {
        let half = (f.cores as u64).div_ceil(2).min(4);
        out.push(("max_worker_processes", f.cores.to_string()));
        out.push(("max_parallel_workers_per_gather", half.to_string()));
        if version >= 10 {
            out.push(("max_parallel_workers", f.cores.to_string()));
        }
        if version >= 11 {
            out.push(("max_parallel_maintenance_workers", half.to_string()));
        }
    }
    if version >= 18 {
        out.push(("io_method", "io_uring".into()));
    }
    out.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// A size in kB as pgtune writes it: whole GB, else whole MB, else kB.
fn kb_text(kb: u64) -> String {
    if kb.is_multiple_of(1024 * 1024) {
        format!("{}GB", kb / (1024 * 1024))
    } else if kb.is_multiple_of(1024) {
        format!("{}MB", kb / 1024)
    } else {
        format!("{kb}kB")
    }
}

/// Debian installs each major version in /usr/lib/postgresql/<version>/bin; newest first.
fn bin_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.0));
    dirs.into_iter().map(|(_, d)| d).collect()
}

fn binaries(first: Option<&Path>) -> Option<(PathBuf, PathBuf)> {
    let initdb = find_binary(&["initdb"], first, &bin_dirs())?;
    let postgres = initdb.with_file_name("postgres");
    postgres.is_file().then_some((initdb, postgres))
}

fn init(
    layout: &Layout,
    initdb: &Path,
    account: Option<(u32, u32)>,
    password: Option<&str>,
) -> Result<(), Error> {
    let mut cmd = command(initdb, account);
    cmd.arg("-D").arg(&layout.data).args([
        "-U",
        "dbduel",
        "-E",
        "UTF8",
        "--no-sync",
        "--auth-local=peer",
    ]);
    let pwfile = layout.run.join("pwfile");
    match password {
        Some(pw) => {
            std::fs::write(&pwfile, pw).map_err(Error::io("write", &pwfile))?;
            chown(&pwfile, account)?;
            cmd.arg("--auth-host=scram-sha-256")
                .arg(format!("--pwfile={}", pwfile.display()));
        }
        None => {
            cmd.arg("--auth-host=trust");
        }
    }
    let result = run_logged(cmd, &layout.log, "initdb");
    let _ = std::fs::remove_file(&pwfile);
    result
}

fn server_command(
    layout: &Layout,
    postgres: &Path,
    port: u16,
    settings: &[(String, String)],
    account: Option<(u32, u32)>,
) -> Command {
    let mut cmd = command(postgres, account);
    cmd.arg("-D").arg(&layout.data).args([
        "-p",
        &port.to_string(),
        "-c",
        "listen_addresses=127.0.0.1",
    ]);
    cmd.arg("-c")
        .arg(format!("unix_socket_directories={}", layout.run.display()));
    for (k, v) in settings {
        cmd.arg("-c").arg(format!("{k}={v}"));
    }
    cmd
}

/// The extension that keeps the figures per statement (`Session::statements`).
const STATEMENTS: &str = "pg_stat_statements";

/// `--server-statements`: pg_stat_statements preloaded, where the server has its library,
/// added to the libraries the settings preload (the last `shared_preload_libraries` given).
fn statements(postgres: &Path, settings: &super::Settings) -> Result<Vec<super::Setting>, String> {
    statements_library(postgres)?;
    Ok(vec![(PRELOAD.into(), preloaded_with_statements(settings))])
}

const PRELOAD: &str = "shared_preload_libraries";

/// The settings' preloaded libraries with pg_stat_statements among them.
fn preloaded_with_statements(settings: &super::Settings) -> String {
    let given = settings
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(PRELOAD))
        .map(|(_, v)| v.trim().trim_matches('\'').trim())
        .unwrap_or_default();
    let mut libraries: Vec<&str> = given
        .split(',')
        .map(|l| l.trim().trim_matches('"'))
        .filter(|l| !l.is_empty())
        .collect();
    if !libraries.contains(&STATEMENTS) {
        libraries.push(STATEMENTS);
    }
    libraries.join(",")
}

/// Its library in the server's $libdir, or what is missing. The $libdir is beside the binaries'
/// `bin`: `lib` (Debian's layout, and a build whose prefix names postgres or pgsql) or
/// `lib/postgresql` (a build under any other prefix, as PostgreSQL's configure chooses).
fn statements_library(postgres: &Path) -> Result<PathBuf, String> {
    let root = postgres
        .parent()
        .and_then(Path::parent)
        .ok_or("the server's $libdir is unknown")?;
    let file = format!("{STATEMENTS}.so");
    let candidates = [
        root.join("lib").join(&file),
        root.join("lib").join("postgresql").join(&file),
    ];
    candidates
        .iter()
        .find(|lib| lib.is_file())
        .cloned()
        .ok_or_else(|| {
            format!(
                "neither {} nor {} found",
                candidates[0].display(),
                candidates[1].display()
            )
        })
}

/// After the first start: pg_stat_statements created in template1 (every database created
/// later copies it) and in postgres. A server without the library keeps going without it:
/// runs then say how to enable it.
fn setup(layout: &Layout, password: Option<&str>) -> Result<(), Error> {
    let Some(port) = running_port(layout) else {
        return Ok(());
    };
    for db in ["template1", "postgres"] {
        let dsn = Dsn::parse(&format!("{}{db}", dsn(port, password)))?;
        let created = engine::open(&dsn, &EngineOptions::default(), Protocol::Simple)?
            .connect()
            .and_then(|mut s| s.batch(&format!("CREATE EXTENSION IF NOT EXISTS {STATEMENTS}")));
        if let Err(e) = created {
            crate::errln!("note: {STATEMENTS} not created in {db}: {}", e.message);
        }
    }
    Ok(())
}

/// The port of the running server, from its postmaster.pid (the fourth line).
fn running_port(layout: &Layout) -> Option<u16> {
    let pid = std::fs::read_to_string(layout.data.join("postmaster.pid")).ok()?;
    pid.lines().nth(3)?.trim().parse().ok()
}

fn dsn(port: u16, password: Option<&str>) -> String {
    let pw = password.map(|p| format!(":{p}")).unwrap_or_default();
    format!("postgres://dbduel{pw}@127.0.0.1:{port}/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_adds_pg_stat_statements_to_the_given_libraries() {
        let set = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(preloaded_with_statements(&[]), "pg_stat_statements");
        assert_eq!(
            preloaded_with_statements(&set(&[("shared_preload_libraries", "")])),
            "pg_stat_statements"
        );
        assert_eq!(
            preloaded_with_statements(&set(&[
                ("shared_preload_libraries", "pg_prewarm"),
                (
                    "shared_preload_libraries",
                    "'auto_explain, pg_stat_statements'"
                ),
            ])),
            "auto_explain,pg_stat_statements",
            "the last given, kept whole"
        );
        assert_eq!(
            preloaded_with_statements(&set(&[("shared_preload_libraries", "auto_explain")])),
            "auto_explain,pg_stat_statements"
        );
    }

    #[test]
    fn statements_library_in_either_libdir_layout() {
        let root = tempfile::tempdir().unwrap();
        let postgres = root.path().join("bin").join("postgres");
        let missing = statements_library(&postgres).unwrap_err();
        assert!(missing.contains("lib/pg_stat_statements.so"), "{missing}");
        assert!(
            missing.contains("lib/postgresql/pg_stat_statements.so"),
            "{missing}"
        );
        for dir in [vec!["lib", "postgresql"], vec!["lib"]] {
            let libdir = dir.iter().fold(root.path().to_path_buf(), |p, d| p.join(d));
            std::fs::create_dir_all(&libdir).unwrap();
            std::fs::write(libdir.join("pg_stat_statements.so"), b"").unwrap();
            assert_eq!(
                statements_library(&postgres).unwrap(),
                libdir.join("pg_stat_statements.so")
            );
        }
    }

    fn knob<'a>(knobs: &'a [(String, String)], name: &str) -> Option<&'a str> {
        knobs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Figures worked out by hand from pgtune's rules for its form's OLTP / Linux / SSD.
    #[test]
    fn pgtune_follows_its_published_rules() {
        let facts = Facts {
            ram_bytes: 24 * GIB,
            cores: 2,
            dataset_bytes: 750 * MIB,
            max_clients: 8,
        };
        let k = pgtune(&facts, 15);
        let want = [
            ("max_connections", "300"),
            ("shared_buffers", "6GB"),
            ("effective_cache_size", "18GB"),
            ("maintenance_work_mem", "1536MB"),
            ("wal_buffers", "16MB"),
            ("random_page_cost", "1.1"),
            ("effective_io_concurrency", "200"),
            // (24 GiB - 6 GiB) in kB / ((300 + 8 default workers) * 3), times 1.3 below RAM.
            ("work_mem", "26553kB"),
            ("huge_pages", "try"),
            ("min_wal_size", "2GB"),
            ("max_wal_size", "8GB"),
            ("jit", "off"),
            ("wal_compression", "lz4"),
        ];
        for (name, value) in want {
            assert_eq!(knob(&k, name), Some(value), "{name}");
        }
        // Two CPUs: no parallel settings; 1.5 GB of maintenance memory: no autovacuum cap.
        assert_eq!(knob(&k, "max_worker_processes"), None);
        assert_eq!(knob(&k, "autovacuum_work_mem"), None);
        // Larger than three times RAM, 8 CPUs, 64 GiB, PostgreSQL 14.
        let big = Facts {
            ram_bytes: 64 * GIB,
            cores: 8,
            dataset_bytes: 200 * GIB,
            max_clients: 400,
        };
        let k = pgtune(&big, 14);
        assert_eq!(knob(&k, "max_connections"), Some("410"));
        assert_eq!(knob(&k, "maintenance_work_mem"), Some("4GB"));
        assert_eq!(knob(&k, "autovacuum_work_mem"), Some("2GB"));
        assert_eq!(knob(&k, "max_parallel_workers_per_gather"), Some("4"));
        assert_eq!(knob(&k, "max_parallel_maintenance_workers"), Some("4"));
        assert_eq!(knob(&k, "wal_compression"), Some("on"));
        // (64 - 16) GiB in kB / ((410 + 8) * 3), times 0.9: 36122 kB.
        assert_eq!(knob(&k, "work_mem"), Some("36122kB"));
        assert_eq!(
            major_version("postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)"),
            Some(15)
        );
        assert_eq!(major_version("postgres (PostgreSQL) 17beta1"), Some(17));
        assert_eq!(major_version("postgres"), None);
    }
}
