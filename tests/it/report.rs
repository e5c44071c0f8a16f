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

use crate::env::{dbduel, ensure, text};

const CHROMIUM: &str = "/usr/bin/chromium";
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

pub fn trials() -> Vec<Trial> {
    let mut out = vec![crate::env::trial(
        "report::html_renders_in_chromium",
        || Ok(renders_in_chromium()?),
    )];
    for kind in ["duel", "sweep", "tpcc", "tpch", "capacity", "tune"] {
        out.push(crate::env::trial(
            format!("report::every_chart_renders_in_chromium::{kind}"),
            move || Ok(every_chart_renders(kind)?),
        ));
    }
    out
}

/// A report of each kind, made by dbduel itself on SQLite, laid out by Chromium: every chart
/// shown has a plot of some area inside its frame and a legend (or, for a timeline, its
/// series named in the caption); after every scale box is switched, so has every chart of
/// the other scale; a legend entry clicked hides its series and clicked again shows it.
fn every_chart_renders(kind: &str) -> Result<(), String> {
    ensure(Path::new(CHROMIUM).exists(), || {
        format!("{CHROMIUM} is missing: install Debian's chromium package to test the HTML report")
    })?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let d = |name: &str| dir.path().join(name).display().to_string();
    let (store, page) = (d("results.db"), d("report.html"));
    let plan = |text: &str| -> Result<String, String> {
        let path = d("plan.toml");
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        Ok(path)
    };
    let out = match kind {
        "duel" => dbduel(&[
            "duel",
            "--engines",
            "sqlite",
            "-c",
            "1,2",
            "-T",
            "1",
            "--results",
            &store,
            "--report",
            &page,
        ]),
        "sweep" => dbduel(&[
            "sweep",
            &plan(
                "engines = [\"sqlite\"]\nprofiles = [\"default\", \"tuned\", \"unsafe\"]\n\
                 clients = [1, 2]\ntime = 1\nwarmup = 1\n",
            )?,
            "--results",
            &store,
            "--report",
            &page,
        ]),
        "tpcc" => dbduel(&[
            "sweep",
            &plan(
                "engines = [\"sqlite\"]\nworkload = \"tpcc\"\nprofiles = [\"default\", \"tuned\"]\n\
                 clients = [1, 2]\ntime = 2\n",
            )?,
            "--results",
            &store,
            "--report",
            &page,
        ]),
        "tpch" => dbduel(&[
            "sweep",
            &plan(
                "engines = [\"sqlite\"]\nworkload = \"tpch\"\nprofiles = [\"default\", \"tuned\"]\n\n\
                 [options]\nscale-factor = 0.01\n",
            )?,
            "--results",
            &store,
            "--report",
            &page,
        ]),
        "tune" => dbduel(
            &[
                crate::tune::SMALL_SEARCH,
                &[
                    "--results",
                    &store,
                    "-o",
                    &d("sqlite.conf"),
                    "--html",
                    &page,
                ],
            ]
            .concat(),
        ),
        _ => {
            let dsn = format!("sqlite://{}", d("cap.db"));
            let prepared = dbduel(&["prepare", "tpcb", "--dsn", &dsn]);
            ensure(prepared.status.success(), || text(&prepared))?;
            dbduel(&[
                "capacity",
                "tpcb",
                "--dsn",
                &dsn,
                "-c",
                "2",
                "-T",
                "1",
                "--warmup",
                "0",
                "--precision",
                "25",
                "--slo",
                "p99<20ms",
                "--html",
                &page,
            ])
        }
    };
    // A capacity search that finds no rate still draws its steps (exit 1).
    ensure(matches!(out.status.code(), Some(0 | 1)), || {
        format!("dbduel {kind} failed:\n{}", text(&out))
    })?;
    let html =
        std::fs::read_to_string(&page).map_err(|e| format!("{page}: {e}\n{}", text(&out)))?;
    let checked = html.replacen("</body>", &format!("<script>{CHECK}</script></body>"), 1);
    let path = dir.path().join("checked.html");
    std::fs::write(&path, checked).map_err(|e| e.to_string())?;
    if let Some(keep) = std::env::var_os("DBDUEL_REPORT_HTML") {
        let keep = Path::new(&keep).with_extension(format!("{kind}.html"));
        std::fs::write(&keep, &html).map_err(|e| format!("DBDUEL_REPORT_HTML: {e}"))?;
    }
    let dom = dump_dom(dir.path(), &path)?;
    let found = dom
        .find("data-check=\"")
        .map(|i| &dom[i + 12..])
        .and_then(|rest| rest.find('"').map(|j| &rest[..j]))
        .ok_or_else(|| format!("the check script did not run in Chromium:\n{dom:.3000}"))?;
    let json = found
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&json).map_err(|e| format!("{e}: {json}"))?;
    let problems = v["problems"].as_array().cloned().unwrap_or_default();
    ensure(problems.is_empty(), || {
        format!(
            "{kind} report: {}",
            serde_json::to_string_pretty(&problems).unwrap_or_default()
        )
    })?;
    let charts = v["charts"].as_u64().unwrap_or(0);
    let least = match kind {
        // Throughput (tps, and NOPM or Power@Size: the power test's figure) on two scales,
        // three latency percentiles on two scales, a timeline per point (TPC-H at SF 0.01 ends
        // within its first second: none); capacity: its two charts; tune: the trials, the
        // final comparison's runs and its intervals (what mattered only when the winner
        // gained).
        "capacity" => 2,
        "tune" => 3,
        "tpcc" => 2 * 2 + 2 * 3 + 4,
        "tpch" => 2 * 2 + 2 * 3,
        _ => 2 + 2 * 3 + 4,
    };
    ensure(charts >= least, || {
        format!("{kind} report: {charts} charts checked, at least {least} expected: {json}")
    })?;
    ensure(v["legend_click"] == "hides and shows", || {
        format!("{kind} report: a legend click did not hide and show its series: {json}")
    })
}

/// Run in the page after its own script: what Chromium laid out, into `body[data-check]`.
const CHECK: &str = r#"
(function(){
  var problems=[],charts=0,seen=new Set();
  function where(svg){
    var f=svg.closest("figure"),c=f&&f.querySelector("figcaption");
    var h=svg.closest("section")&&svg.closest("section").querySelector("h2");
    return (h?h.textContent:"")+" / "+(c?c.textContent.slice(0,80):"")+" / "+(svg.getAttribute("aria-label")||"");
  }
  function check(){
    document.querySelectorAll("svg.chart").forEach(function(svg){
      if(seen.has(svg)||getComputedStyle(svg.parentNode).display==="none")return;
      if(svg.closest(".scaled")&&getComputedStyle(svg.closest(".linear,.log")).display==="none")return;
      seen.add(svg);charts++;
      var r=svg.getBoundingClientRect(),vb=svg.viewBox.baseVal;
      if(r.width<100||r.height<60){problems.push(where(svg)+": laid out "+r.width+"x"+r.height);return;}
      var plotted=0;
      svg.querySelectorAll("g.series").forEach(function(g){
        if(getComputedStyle(g).display==="none")return;
        var b=g.getBBox();
        if(b.width+b.height<=0)return;
        if(b.x<-2||b.y<-2||b.x+b.width>vb.width+2||b.y+b.height>vb.height+2){
          problems.push(where(svg)+": series "+g.getAttribute("data-series")+" drawn outside its frame");}
        plotted++;});
      if(!plotted)problems.push(where(svg)+": nothing plotted");
      var box=svg.closest("figure")||svg.closest("section");
      if(!box||!(box.querySelector("ul.legend li")||box.querySelector("figcaption .dot")))
        problems.push(where(svg)+": no legend");
    });
  }
  check();
  document.querySelectorAll(".scale-toggle input").forEach(function(i){i.click();});
  check();
  var click="no legend entry to click";
  var li=document.querySelector("li[data-legend]");
  if(li){
    var fig=li.closest("figure"),name=li.getAttribute("data-legend");
    var mine=Array.prototype.filter.call(fig.querySelectorAll("g.series"),function(g){return g.getAttribute("data-series")===name;});
    var shown=function(){return mine.filter(function(g){return getComputedStyle(g).display!=="none";}).length;};
    var before=shown();li.click();var hidden=shown();li.click();var after=shown();
    click=(mine.length&&before>0&&hidden===0&&after===before)?"hides and shows":
      "series "+name+": "+mine.length+" drawn, shown "+before+" then "+hidden+" then "+after;
  }
  document.body.setAttribute("data-check",JSON.stringify({charts:charts,problems:problems,legend_click:click}));
})();
"#;

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
    let stacked = dom.matches("aria-label=\"active sessions\"").count();
    ensure(stacked == data.timelines.len(), || {
        format!(
            "{stacked} charts of the sampled sessions rendered, {} expected",
            data.timelines.len()
        )
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
        sides: vec![],
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
            statements: None,
            embedded: None,
            phases: Vec::new(),
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
        // The server's counters: the commits follow the throughput, the checkpoint's buffers
        // are written in its seconds.
        counters: [
            (
                "pg_stat_database.xact_commit".to_string(),
                tps * ramp * dip * wobble,
            ),
            (
                "pg_stat_bgwriter.buffers_checkpoint".to_string(),
                if dip < 1.0 { 900.0 } else { 0.0 },
            ),
        ]
        .into(),
        // The sampled sessions: on a CPU, committing, and waiting on locks more in a dip.
        sessions: if t < 5 {
            BTreeMap::new()
        } else {
            [
                ("cpu".to_string(), 1.5 * wobble),
                ("commit".to_string(), 0.3),
                ("lock".to_string(), if dip < 1.0 { 2.0 } else { 0.4 }),
            ]
            .into()
        },
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
