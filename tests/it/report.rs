//! The HTML report in a real browser: a realistic report (three engines, two profiles each, one
//! of them unsafe, clients 1 to 8, timelines with checkpoints) rendered by headless Chromium,
//! whose DOM must show that the script ran and that every series and checkpoint was drawn.
//! Set DBDUEL_REPORT_HTML=/some/file.html to keep the rendered report for a look.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dbduel::engine::durability::judge;
use dbduel::report::data::{PointSummary, ProfileSettings, ReportData, Second, Timeline};
use libtest_mimic::Trial;

use crate::env::ensure;

const CHROMIUM: &str = "/usr/bin/chromium";
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

pub fn trials() -> Vec<Trial> {
    vec![Trial::test("report::html_renders_in_chromium", || {
        Ok(renders_in_chromium()?)
    })]
}

fn renders_in_chromium() -> Result<(), String> {
    ensure(Path::new(CHROMIUM).exists(), || {
        format!(
            "{CHROMIUM} is missing: install Debian's chromium package \
             (apt-get install chromium, or run scripts/test) to test the HTML report"
        )
    })?;
    let data = fixture();
    let html = dbduel::report::html::html(&data);
    if let Some(keep) = std::env::var_os("DBDUEL_REPORT_HTML") {
        std::fs::write(&keep, &html).map_err(|e| format!("DBDUEL_REPORT_HTML: {e}"))?;
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).map_err(|e| e.to_string())?;
    let dom = dump_dom(dir.path(), &page)?;
    check_dom(&dom, &data)
}

/// Chromium's serialised DOM of the page after its scripts ran.
fn dump_dom(dir: &Path, page: &Path) -> Result<String, String> {
    let (out, err) = (dir.join("dom.html"), dir.join("chromium.log"));
    let file = |p: &Path| std::fs::File::create(p).map_err(|e| e.to_string());
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(file(&out)?)
        .stderr(file(&err)?)
        .spawn()
        .map_err(|e| format!("cannot start {CHROMIUM}: {e}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "chromium did not finish within {BROWSER_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let log = std::fs::read_to_string(&err).unwrap_or_default();
    ensure(status.success(), || {
        format!("chromium failed ({status}):\n{log}")
    })?;
    std::fs::read_to_string(&out).map_err(|e| e.to_string())
}

fn check_dom(dom: &str, data: &ReportData) -> Result<(), String> {
    let body = dom
        .find("<body")
        .map(|i| &dom[i..i + dom[i..].find('>').unwrap_or(0)])
        .ok_or_else(|| format!("no <body> in the dumped DOM:\n{dom:.2000}"))?;
    ensure(body.contains("data-rendered=\"yes\""), || {
        format!("the report's script did not finish (body tag: {body})")
    })?;
    for series in data.series() {
        let drawn = format!("class=\"series\" data-series=\"{series}\"");
        ensure(dom.contains(&drawn), || {
            format!("series {series} is not drawn in the rendered report")
        })?;
    }
    let checkpoints = dom.matches("class=\"checkpoint\"").count();
    let expected: u32 = data
        .timelines
        .iter()
        .flat_map(|t| &t.seconds)
        .filter(|s| s.checkpoints > 0)
        .count() as u32;
    ensure(checkpoints as u32 == expected, || {
        format!("{checkpoints} checkpoint markers rendered, {expected} expected")
    })?;
    ensure(dom.contains("data-tip=\""), || {
        "the tooltip script did not turn the charts' titles into tooltips".into()
    })?;
    ensure(dom.contains("(unsafe)"), || {
        "the unsafe profile is not labelled in the legend".into()
    })
}

// ---------------------------------------------------------------------------------------------
// The fixture: what a report of a real comparison looks like.

/// (engine, profile, unsafe, tps at one client, how soon it saturates)
const SERIES: &[(&str, &str, bool, f64, f64)] = &[
    ("postgres", "default", false, 610.0, 0.12),
    ("postgres", "tuned", false, 1480.0, 0.08),
    ("mariadb", "default", false, 540.0, 0.16),
    ("mariadb", "no-flush", true, 2150.0, 0.10),
    ("sqlite", "default", false, 2900.0, 0.95),
    ("sqlite", "wal-normal", false, 5200.0, 0.97),
];

fn fixture() -> ReportData {
    let host = [
        ("cores", "16"),
        ("cpu", "AMD EPYC 7443P 24-Core Processor"),
        ("memory", "62.8 GiB"),
        ("kernel", "6.1.0-28-amd64"),
        ("os", "Debian GNU/Linux 12 (bookworm)"),
        ("storage", "NVMe, ext4 (noatime)"),
    ];
    ReportData {
        title: "PostgreSQL vs MariaDB vs SQLite: TPC-B, scale 50".into(),
        generated_at: "2026-11-22 06:40:12 UTC".into(),
        host: host
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        points: points(),
        timelines: timelines(),
        profiles: profiles(),
        comparisons: vec![],
        plans: vec!["engines".into()],
    }
}

fn points() -> Vec<PointSummary> {
    let mut points = Vec::new();
    for (variant, factor) in [("tpcb-like", 1.0), ("select-only", 9.0)] {
        for &(engine, profile, unsafe_profile, base, sat) in SERIES {
            for clients in [1u32, 2, 4, 8] {
                let c = clients as f64;
                let tps = base * factor * c / (1.0 + (c - 1.0) * sat);
                points.push(point(
                    engine,
                    profile,
                    unsafe_profile,
                    variant,
                    clients,
                    tps,
                ));
            }
        }
    }
    points
}

fn point(
    engine: &str,
    profile: &str,
    unsafe_profile: bool,
    variant: &str,
    clients: u32,
    tps: f64,
) -> PointSummary {
    let spread = if engine == "sqlite" && clients == 8 {
        0.16
    } else {
        0.03
    };
    let p50 = clients as f64 / tps * 1000.0;
    let mut p = PointSummary {
        engine: engine.into(),
        profile: profile.into(),
        unsafe_profile,
        workload: "tpcb".into(),
        variant: variant.into(),
        clients,
        repeats: 3,
        tps_median: tps,
        tps_min: tps * (1.0 - spread),
        tps_max: tps * (1.0 + spread * 0.6),
        tps_cv: spread / 2.0,
        p50_ms: p50,
        p95_ms: p50 * if engine == "sqlite" { 3.1 } else { 1.7 },
        p99_ms: p50 * if engine == "sqlite" { 6.0 } else { 2.6 },
        server_rss_bytes: (engine != "sqlite").then(|| rss(engine, profile, clients)),
        server_cpu_per_tx_us: (engine != "sqlite").then(|| cpu_per_tx(engine, profile, clients)),
        database_size_bytes: Some(size(engine, clients)),
        durability: profiles()
            .into_iter()
            .find(|s| s.engine == engine && s.profile == profile)
            .map(|s| s.durability)
            .unwrap_or_default(),
        ..Default::default()
    };
    if spread > 0.1 {
        p.unstable = vec!["repeats spread 19% (over 10%)".into()];
        p.errors = 12;
        p.warnings = vec!["12 transactions failed: database is locked (SQLITE_BUSY)".into()];
    }
    if profile == "no-flush" && clients == 8 && variant == "select-only" {
        p.client_bound = true;
    }
    p
}

fn cpu_per_tx(engine: &str, profile: &str, clients: u32) -> f64 {
    let base = match (engine, profile) {
        ("postgres", "tuned") => 142.0,
        ("postgres", _) => 171.0,
        (_, "default") => 236.0,
        _ => 198.0,
    };
    base + 6.5 * clients as f64
}

fn size(engine: &str, clients: u32) -> u64 {
    let mib = match engine {
        "postgres" => 752,
        "mariadb" => 1130,
        _ => 681,
    };
    (mib + 2 * clients as u64) << 20
}

fn rss(engine: &str, profile: &str, clients: u32) -> u64 {
    let base: u64 = match (engine, profile) {
        ("postgres", "tuned") => 4400,
        ("postgres", _) => 180,
        (_, "default") => 460,
        _ => 4700,
    };
    (base + 11 * clients as u64) * 1024 * 1024
}

fn timelines() -> Vec<Timeline> {
    type Run<'a> = (&'a str, &'a str, &'a [u32], &'a [u32], f64);
    let plan: &[Run] = &[
        ("postgres", "default", &[14, 29], &[21], 3900.0),
        ("postgres", "tuned", &[33], &[], 8300.0),
        ("mariadb", "default", &[], &[], 2600.0),
        ("mariadb", "no-flush", &[], &[], 10900.0),
        ("sqlite", "default", &[11, 23, 35], &[], 3300.0),
        ("sqlite", "wal-normal", &[], &[], 5600.0),
    ];
    plan.iter()
        .map(|&(engine, profile, checkpoints, vacuums, tps)| Timeline {
            plan: String::new(),
            engine: engine.into(),
            profile: profile.into(),
            workload: "tpcb".into(),
            clients: 8,
            repeat: 1,
            seconds: (0..40)
                .map(|t| second(t, tps, checkpoints, vacuums))
                .collect(),
        })
        .collect()
}

fn second(t: u32, tps: f64, checkpoints: &[u32], vacuums: &[u32]) -> Second {
    let ramp = if t < 5 { 0.55 + 0.09 * t as f64 } else { 1.0 };
    let dip = if checkpoints.iter().any(|c| t >= *c && t < c + 3) {
        0.72
    } else {
        1.0
    };
    let wobble = 1.0 + 0.025 * ((t as f64 * 1.7).sin() + (t as f64 * 0.6).cos() * 0.5);
    Second {
        t,
        warmup: t < 5,
        tps: tps * ramp * dip * wobble,
        p99_ms: Some(8.0 / (ramp * dip)),
        checkpoints: checkpoints.iter().filter(|c| **c == t).count() as u32,
        autovacuums: vacuums.iter().filter(|c| **c == t).count() as u32,
        server_rss_bytes: None,
    }
}

type Profile = (
    &'static str,
    &'static str,
    bool,
    &'static [(&'static str, &'static str)],
);

const PROFILES: &[Profile] = &[
    (
        "postgres",
        "default",
        false,
        &[
            ("shared_buffers", "128MB"),
            ("max_wal_size", "1GB"),
            ("checkpoint_timeout", "5min"),
            ("fsync", "on"),
            ("synchronous_commit", "on"),
            ("wal_buffers", "4MB"),
            ("work_mem", "4MB"),
        ],
    ),
    (
        "postgres",
        "tuned",
        false,
        &[
            ("shared_buffers", "4GB"),
            ("max_wal_size", "16GB"),
            ("checkpoint_timeout", "15min"),
            ("fsync", "on"),
            ("synchronous_commit", "on"),
            ("wal_buffers", "64MB"),
            ("work_mem", "4MB"),
        ],
    ),
    (
        "mariadb",
        "default",
        false,
        &[
            ("innodb_buffer_pool_size", "134217728"),
            ("innodb_flush_log_at_trx_commit", "1"),
            ("innodb_log_file_size", "100663296"),
            ("sync_binlog", "0"),
            ("query_cache_type", "OFF"),
        ],
    ),
    (
        "mariadb",
        "no-flush",
        true,
        &[
            ("innodb_buffer_pool_size", "4294967296"),
            ("innodb_flush_log_at_trx_commit", "0"),
            ("innodb_log_file_size", "1073741824"),
            ("sync_binlog", "0"),
            ("query_cache_type", "OFF"),
        ],
    ),
    (
        "sqlite",
        "default",
        false,
        &[
            ("journal_mode", "wal"),
            ("synchronous", "FULL"),
            ("cache_size", "-2000"),
            ("busy_timeout", "10000"),
        ],
    ),
    (
        "sqlite",
        "wal-normal",
        false,
        &[
            ("journal_mode", "wal"),
            ("synchronous", "NORMAL"),
            ("cache_size", "-262144"),
            ("busy_timeout", "10000"),
        ],
    ),
];

fn profiles() -> Vec<ProfileSettings> {
    PROFILES
        .iter()
        .map(|&(engine, profile, unsafe_profile, settings)| {
            let settings = settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>();
            ProfileSettings {
                engine: engine.into(),
                profile: profile.into(),
                unsafe_profile,
                durability: judge(engine, &settings),
                settings,
            }
        })
        .collect()
}
