//! The commands: `list`, `check`, `cleanup`, `run` (a temporary SQLite database when no DSN is
//! given, the summary, `--json`), `server start|dsn|stop|status`, `sweep`, `duel`, `report`,
//! `results list|show|export`, `compare`, `capacity` and `merge`, each taking its validated input
//! and handing it to the room that does the work (point.rs, sweep/, capacity/, merge.rs, store/),
//! then to report/ for what is printed or written. `prepare` goes from lib.rs straight to point.rs.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::cli::{
    CapacityArgs, CompareArgs, CompareFormat, DuelArgs, ExportFormat, ReportArgs, ReportFormat,
    ResultsAction, ResultsArgs, ServerAction, ServerDirArgs, ServerStartArgs, SweepArgs,
};
use crate::dsn::Dsn;
use crate::engine;
use crate::engine::stall::StallGuard;
use crate::error::Error;
use crate::metrics::Host;
use crate::point::{self, Observe, Outcome};
use crate::report::{export, stored};
use crate::run_plan::{RunPlan, Target};
use crate::server::{self, Server, ServerOptions, profile};
use crate::store::Store;
use crate::sweep::matrix::Matrix;
use crate::sweep::plan_file::PlanFile;
use crate::workload::{self, WorkloadOptions};
use crate::{capacity, report, result, sweep};

pub fn server(action: &ServerAction) -> Result<Outcome, Error> {
    match action {
        ServerAction::Start(a) => server_start(a),
        ServerAction::Dsn(a) => {
            outln!("{}", server::full_dsn(&a.data_dir)?);
            Ok(Outcome::Success)
        }
        ServerAction::Stop(a) => {
            let state = server::stop_detached(&a.data_dir)?;
            outln!(
                "stopped the {} server (pid {}) of {}",
                state.engine,
                state.pid,
                a.data_dir.display()
            );
            Ok(Outcome::Success)
        }
        ServerAction::Status(a) => server_status(a),
    }
}

/// `server start`: a managed server with a built-in profile, detached, and how to reach it.
fn server_start(a: &ServerStartArgs) -> Result<Outcome, Error> {
    // An engine by its name or any of its DSN schemes (`mariadb` is the mysql engine's).
    let engine = crate::engine::named(&a.engine)
        .or_else(|| crate::engine::entry_for(&a.engine))
        .map_or(a.engine.as_str(), |e| e.name);
    let kind = server::kind_for(engine).ok_or_else(|| {
        let known: Vec<_> = server::KINDS.iter().map(|k| k.engine).collect();
        Error::Usage(format!(
            "dbduel cannot manage a '{}' server: use one of {}",
            a.engine,
            known.join(", ")
        ))
    })?;
    let entry = crate::workload::find(&a.workload)?;
    let host = Host::read();
    let facts = profile::Facts {
        ram_bytes: host.ram_bytes,
        cores: host.cores,
        dataset_bytes: entry.bytes_per_scale * u64::from(a.scale),
        max_clients: a.connections,
    };
    let chosen = profile::builtin(&a.profile, &facts).ok_or_else(|| {
        Error::Usage(format!(
            "unknown --profile '{}': use default, tuned or unsafe",
            a.profile
        ))
    })?;
    let mut settings = chosen.knobs.get(kind.engine).cloned().unwrap_or_default();
    let mut profile_name = chosen.name.clone();
    for (knob, value) in with_sets(&mut settings, &a.set)? {
        profile_name.push_str(&format!(", {knob}={value}"));
    }
    for (knob, value) in profile::required(kind.engine, &facts) {
        settings.retain(|(k, _)| *k != knob);
        settings.push((knob, value));
    }
    let opts = ServerOptions {
        dir: Some(a.data_dir.clone()),
        port: a.port,
        bin_dir: a.bin_dir.clone(),
        settings,
        statements: a.server_statements,
        keep_running: true,
        temp_in: None,
    };
    let server = Server::start(kind, &opts)?;
    if server.keeps_statements() {
        profile_name.push_str(", server statements");
    }
    let state = server.detach(&profile_name)?;
    // Firebird's version names the product already.
    let product = if state.version.starts_with(kind.product) {
        ""
    } else {
        kind.product
    };
    outln!(
        "{}{}{} runs (pid {}) on 127.0.0.1:{}, profile {}{}",
        product,
        if product.is_empty() { "" } else { " " },
        state.version,
        state.pid,
        state.port,
        profile_name,
        if chosen.unsafe_profile {
            " (UNSAFE)"
        } else {
            ""
        }
    );
    outln!("dsn: {}", state.dsn);
    outln!(
        "password: in {} (only you can read it); `--server {}` on prepare, run and check uses it without putting it on a command line",
        a.data_dir.join("password").display(),
        a.data_dir.display()
    );
    Ok(Outcome::Success)
}

/// `server status`: whether a directory's server runs; exits 1 when it does not.
fn server_status(a: &ServerDirArgs) -> Result<Outcome, Error> {
    let state = server::read_state(&a.data_dir)?;
    let running = state.running();
    let profile = if state.profile.is_empty() {
        String::new()
    } else {
        format!(", profile {}", state.profile)
    };
    outln!(
        "{} {}: {} ({}pid {}, 127.0.0.1:{}{profile}, data {})",
        state.engine,
        state.version,
        if running { "running" } else { "stopped" },
        if running { "" } else { "was " },
        state.pid,
        state.port,
        crate::out::human_bytes(server::data_size(&a.data_dir))
    );
    outln!("dsn: {}", state.dsn);
    Ok(if running {
        Outcome::Success
    } else {
        Outcome::Failures
    })
}

pub fn sweep_cmd(a: &SweepArgs, stop: &Arc<AtomicBool>) -> Result<Outcome, Error> {
    let (plan, text) = PlanFile::read(&a.plan)?;
    let matrix = Matrix::new(&plan, text)?;
    let outcome = sweep::run(&matrix, &a.results, stop)?;
    finish(&a.results, &matrix.name, a.report.as_deref())?;
    Ok(outcome)
}

/// Every engine installed here (or those `--engines` names), each default and tuned, at the
/// given client counts.
pub fn duel(a: &DuelArgs, stop: &Arc<AtomicBool>) -> Result<Outcome, Error> {
    let mut installed: Vec<String> = engine::ENGINES
        .iter()
        .filter(|e| e.file)
        .map(|e| e.name.to_string())
        .collect();
    installed.extend(
        server::KINDS
            .iter()
            .filter(|k| server::installed(k))
            .map(|k| k.engine.to_string()),
    );
    let engines = match &a.engines {
        None => installed,
        Some(asked) => {
            let mut engines: Vec<String> = Vec::new();
            for e in asked {
                let e = e.trim().to_lowercase();
                let e = engine::entry_for(&e)
                    .or_else(|| engine::named(&e))
                    .map_or(e, |entry| entry.name.to_string());
                if !installed.contains(&e) {
                    return Err(Error::Usage(format!(
                        "--engines {e}: not an engine installed here; installed: {}",
                        installed.join(", ")
                    )));
                }
                if !engines.contains(&e) {
                    engines.push(e);
                }
            }
            engines
        }
    };
    let clients: Vec<String> = a.clients.iter().map(u32::to_string).collect();
    let most = a.clients.iter().copied().max().unwrap_or(1);
    let follows = crate::workload::find(&a.workload)?.scale_follows_clients;
    let scale = a.scale.unwrap_or(if follows { most.max(1) } else { 1 });
    let count = |n: u64| toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let (plan, text) = PlanFile::build(vec![
        ("name", format!("duel-{}", a.workload).into()),
        ("workload", a.workload.clone().into()),
        ("engines", engines.clone().into()),
        ("profiles", vec!["default", "tuned"].into()),
        (
            "clients",
            toml::Value::Array(a.clients.iter().map(|&c| count(c.into())).collect()),
        ),
        ("time", count(a.time)),
        ("repeats", count(a.repeats.into())),
        ("scale", count(scale.into())),
        ("max_tries", count(a.max_tries.into())),
        ("server_statements", a.server_statements.into()),
    ])?;
    let matrix = Matrix::new(&plan, text)?;
    errln!(
        "duel: {} at scale {scale} on {}, default and tuned, clients {}",
        a.workload,
        engines.join(", "),
        clients.join(",")
    );
    let outcome = sweep::run(&matrix, &a.results, stop)?;
    finish(&a.results, &matrix.name, Some(&a.report))?;
    Ok(outcome)
}

/// `tune`: the search on the engine named, its options checked first.
pub fn tune(a: &crate::cli::TuneArgs, stop: &Arc<AtomicBool>) -> Result<Outcome, Error> {
    let engine = engine::entry_for(&a.engine.to_lowercase())
        .or_else(|| engine::named(&a.engine.to_lowercase()))
        .map_or(a.engine.to_lowercase(), |e| e.name.to_string());
    let plan = crate::tune::TunePlan {
        out: a
            .out
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from(format!("dbduel-tune-{engine}.conf"))),
        engine,
        workload: a.workload.clone(),
        scale: a.scale.max(1),
        clients: a.clients.max(1),
        trial_s: a.trial_time.max(1),
        warmup_s: a.warmup,
        trials: a.trials,
        repeats: a.repeats,
        allow_unsafe: a.allow_unsafe,
        seed: a.seed,
        protocol: a.protocol.clone(),
        data_dir: a.data_dir.clone(),
        bin_dir: a.bin_dir.clone(),
        results: a.results.clone(),
        options: a.workload_flags.params.clone(),
        space: a.space.clone(),
        json: a.json.clone(),
        goal: crate::tune::Goal::parse(a.objective.as_deref(), a.rate, &a.slo)?,
        html: a.html.clone(),
    };
    crate::tune::run(&plan, stop)
}

/// After a sweep: the comparison table on the terminal, where the rest is, and, when asked,
/// the HTML report.
fn finish(results: &Path, plan: &str, html: Option<&Path>) -> Result<(), Error> {
    let store = Store::open(results)?;
    let data = stored::report_data(&store, Some(plan))?;
    out!("{}", report::markdown::points_table(&data));
    if let Some(path) = html {
        std::fs::write(path, report::html::html(&data)).map_err(Error::io("write", path))?;
        errln!("report written to {}", path.display());
    }
    errln!(
        "every table (per transaction type, resources, settings): dbduel report --results {} --plan {plan} --format markdown",
        store.path().display()
    );
    Ok(())
}

pub fn report_cmd(a: &ReportArgs) -> Result<Outcome, Error> {
    let store = Store::open_existing(
        &a.results,
        "run `dbduel sweep` or `dbduel duel` first, or give --results",
    )?;
    let data = stored::report_data(&store, a.plan.as_deref())?;
    let (text, default) = match a.format {
        ReportFormat::Html => (report::html::html(&data), Some("dbduel-report.html")),
        ReportFormat::Markdown => (report::markdown::markdown(&data), None),
    };
    match a.output.as_deref().or(default.map(Path::new)) {
        Some(path) => {
            std::fs::write(path, text).map_err(Error::io("write", path))?;
            errln!("report written to {}", path.display());
        }
        None => out!("{text}"),
    }
    Ok(Outcome::Success)
}

/// `compare`: the conditions of --fail-if first, then both sides, the comparison, its
/// view; exits 1 when a condition is met.
pub fn compare(a: &CompareArgs) -> Result<Outcome, Error> {
    use report::compare::{self, fail_if, render};
    let conditions = a
        .fail_if
        .iter()
        .map(|c| fail_if::parse(c))
        .collect::<Result<Vec<_>, _>>()?;
    let specs = [
        compare::parse_side("A", &a.a)?,
        compare::parse_side("B", &a.b)?,
    ];
    let mut store = None;
    let side_a = compare::load(&specs[0], &a.a, &a.results, &mut store)?;
    let side_b = compare::load(&specs[1], &a.b, &a.results, &mut store)?;
    compare::distinct(&side_a, &side_b)?;
    let mut c = compare::compare(&side_a, &side_b)?;
    for cond in &conditions {
        fail_if::check(cond, &c.figures)?;
    }
    c.fail_if = conditions
        .iter()
        .map(|cond| fail_if::judge(cond, &c.figures))
        .collect();
    c.failed = c.fail_if.iter().any(|j| j.failed);
    out!(
        "{}",
        match a.format {
            CompareFormat::Text => render::text(&c),
            CompareFormat::Markdown => render::markdown(&c),
            CompareFormat::Json => render::json(&c),
        }
    );
    Ok(if c.failed {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}

/// `results`: the stored runs as a table, one run's result, or every run exported.
pub fn results(a: &ResultsArgs) -> Result<Outcome, Error> {
    let store = Store::open_existing(&a.results, "give --results")?;
    match &a.action {
        ResultsAction::List { plan } => out!("{}", export::table(&store.list(plan.as_deref())?)),
        ResultsAction::Show { id } => outln!(
            "{}",
            serde_json::to_string_pretty(&store.result(*id)?).expect("json")
        ),
        ResultsAction::Export { format, plan } => {
            let rows = store.list(plan.as_deref())?;
            out!(
                "{}",
                match format {
                    ExportFormat::Json => export::json(&rows),
                    ExportFormat::Csv => export::csv(&rows),
                }
            );
        }
    }
    Ok(Outcome::Success)
}

/// The text of `dbduel list`.
pub fn list() -> String {
    let mut out = String::from("engines (chosen by the DSN's scheme):\n");
    let schemes = |e: &engine::EngineEntry| {
        e.schemes
            .iter()
            .map(|s| format!("{s}://"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let width = engine::ENGINES.iter().map(|e| schemes(e).len()).max();
    for e in engine::ENGINES {
        out += &format!(
            "  {:<10} {:<width$}  {}\n",
            e.name,
            schemes(e),
            e.about,
            width = width.unwrap_or(0)
        );
    }
    out += "\nworkloads:\n";
    for w in workload::all() {
        out += &format!("  {:<22} {}\n", w.name, w.about);
        if w.variants.len() > 1 {
            out += &format!("  {:<22} variants: {}\n", "", w.variants.join(", "));
        }
    }
    out += "\ntheir own options (`dbduel run --help` says what each does):\n";
    let mut seen: Vec<&str> = Vec::new();
    for t in workload::all().map(|w| w.options) {
        if t.opts.is_empty() || seen.contains(&t.who) {
            continue;
        }
        seen.push(t.who);
        let of = |phase| {
            t.opts
                .iter()
                .filter(|o| o.phase == phase)
                .map(|o| workload::options::flag(o.name))
                .collect::<Vec<_>>()
                .join(" ")
        };
        out += &format!("  {}\n", t.who);
        for (phase, when) in [
            (workload::options::Phase::Data, "data (prepare, run)"),
            (workload::options::Phase::Run, "run"),
        ] {
            let flags = of(phase);
            if !flags.is_empty() {
                out += &format!("    {when}: {flags}\n");
            }
        }
    }
    out += "\nfiles in place of a workload name:\n\
             \x20 FILE.toml              a declarative workload (tables, generators, transactions; see\n\
             \x20                        workloads/seed002-thetable.toml): prepare, run, check, cleanup\n\
             \x20 FILE.sql               a pgbench-format script, run on data you prepared: run FILE.sql,\n\
             \x20                        or run -f FILE[@WEIGHT] (repeatable)\n";
    out
}

/// `check`: the workload's invariants on its data, one line each.
pub fn check(target: &Target) -> Result<Outcome, Error> {
    let (engine, mut session) = point::open(
        target.dsn.as_ref().expect("check requires --dsn"),
        &target.engine,
    )?;
    let workload = (target.workload.new)(&WorkloadOptions::default())?;
    let guard = StallGuard::new(engine);
    guard.watch(session.as_ref());
    let checked = workload::refuse_unfinished(workload.as_ref(), session.as_mut())
        .and_then(|()| workload.check(guard.engine().as_ref(), session.as_mut()));
    let items = guard.judge(checked, "check")?;
    let width = items.iter().map(|i| i.name.chars().count()).max();
    for i in &items {
        outln!(
            "{} {:<width$}  {}",
            if i.ok { "ok    " } else { "FAILED" },
            i.name,
            i.detail,
            width = width.unwrap_or(0)
        );
    }
    Ok(if items.iter().all(|i| i.ok) {
        Outcome::Success
    } else {
        Outcome::Failures
    })
}

/// `cleanup`: drop the workload's tables and forget its `prepare`.
pub fn cleanup(target: &Target) -> Result<Outcome, Error> {
    let (engine, mut session) = point::open(
        target.dsn.as_ref().expect("cleanup requires --dsn"),
        &target.engine,
    )?;
    let workload = (target.workload.new)(&WorkloadOptions::default())?;
    let guard = StallGuard::new(engine);
    guard.watch(session.as_ref());
    let cleaned = workload
        .cleanup(guard.engine().as_ref(), session.as_mut())
        .and_then(|()| workload::prepare_forget(workload.as_ref(), session.as_mut()));
    guard.judge(cleaned, "cleanup")?;
    errln!("dropped the {} tables", target.workload.name);
    Ok(Outcome::Success)
}

/// `run`: a benchmark as planned: prepare a temporary SQLite database when no DSN is given.
pub fn run(plan: &RunPlan, stop: &Arc<AtomicBool>) -> Result<Outcome, Error> {
    if let Some(path) = &plan.json {
        result::check_writable(path)?;
    }
    let temp = match &plan.target.dsn {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("dbduel-")
                .tempdir()
                .map_err(|source| Error::TempDir { source })?,
        ),
    };
    let dsn = match (&plan.target.dsn, &temp) {
        (Some(d), _) => d.clone(),
        (None, Some(dir)) => {
            Dsn::sqlite(&dir.path().join(format!("{}.db", plan.target.workload.name)))
        }
        (None, None) => unreachable!("a temporary directory exists when no DSN is given"),
    };
    if temp.is_some() {
        let mut opts = plan.workload.clone();
        opts.scale = opts.scale.max(1);
        errln!(
            "no --dsn given: {} at scale {} in a temporary SQLite database ({})",
            plan.target.workload.name,
            opts.scale,
            dsn
        );
        point::prepare(
            &dsn,
            &plan.target.engine,
            plan.target.workload,
            &opts,
            stop,
            false,
        )?;
    }
    let (result, _) = point::run_point(plan, &dsn, stop, Observe::Nothing)?;
    let interrupted = result.interrupted;
    out!("{}", report::run_summary(&result));
    if let Some(path) = &plan.json {
        result.write_json(path)?;
        errln!("result written to {}", path.display());
    }
    Ok(if interrupted {
        Outcome::Interrupted
    } else if result.failed() {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}

/// `capacity`: the search (capacity/), its summary printed, its record written as JSON and
/// drawn as a chart when asked; the steps measured are kept when a step fails with an error.
pub fn capacity(args: &CapacityArgs, stop: &Arc<AtomicBool>) -> Result<Outcome, Error> {
    let mut search = capacity::Search::new(args)?;
    let (record, ran) = search.find(stop);
    // Each step's line went to stderr as it ended; on one terminal, the summary does not print
    // them a second time.
    use std::io::IsTerminal;
    let seen = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    out!("{}", capacity::summary(&record, search.objectives(), !seen));
    let text = serde_json::to_string_pretty(&record).expect("capacity serializes") + "\n";
    if let Some(path) = search.json_path() {
        std::fs::write(path, &text).map_err(|source| Error::Io {
            doing: "write --json",
            path: path.to_path_buf(),
            source,
        })?;
        errln!("capacity written to {}", path.display());
    }
    if let Some(path) = &args.html {
        let view = capacity::view(&record, search.objectives());
        std::fs::write(path, report::capacity_html(&view)).map_err(|source| Error::Io {
            doing: "write --html",
            path: path.clone(),
            source,
        })?;
        errln!("chart written to {}", path.display());
    }
    ran?;
    Ok(if record.interrupted {
        Outcome::Interrupted
    } else if record.capacity_tps.is_some() {
        Outcome::Success
    } else {
        Outcome::Failures
    })
}

/// `merge`: one result from the shards of a run: the summary, and the JSON when asked.
pub fn merge(args: &crate::cli::MergeArgs) -> Result<Outcome, Error> {
    if let Some(path) = &args.json {
        result::check_writable(path)?;
    }
    let merged = crate::merge::merge(crate::merge::read(&args.files)?)?;
    out!("{}", report::run_summary(&merged));
    if let Some(path) = &args.json {
        merged.write_json(path)?;
        errln!("merged result written to {}", path.display());
    }
    if let Some(results) = &args.results {
        let mut store = Store::open(results)?;
        match store.save_run(&args.plan, &merged)? {
            crate::store::Saved::New(id) => errln!(
                "merged result stored as run {id} of plan '{}' in {}",
                args.plan,
                store.path().display()
            ),
            crate::store::Saved::Already { id, plan } => errln!(
                "merged result not stored again: {} already holds this run as run {id} of plan '{plan}' (the same shards merged before); a second copy would count as a repeat",
                store.path().display()
            ),
        }
    }
    Ok(if merged.interrupted {
        Outcome::Interrupted
    } else if merged.failed() {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}

/// `server start --set KNOB=VALUE`s on top of the profile's `settings`: a knob the profile sets
/// takes the given value instead; a knob given more than once is kept each time, in order, as
/// the server reads its options (MariaDB's `performance-schema-instrument` takes one pattern
/// each time; for a single value the last wins, on the server as before). Gives the settings
/// given, for the profile's name.
fn with_sets(
    settings: &mut Vec<(String, String)>,
    sets: &[String],
) -> Result<Vec<(String, String)>, Error> {
    let mut given = Vec::new();
    for set in sets {
        let (knob, value) = set
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim()))
            .filter(|(k, _)| !k.is_empty() && !k.contains(char::is_whitespace))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--set '{set}': write a setting as KNOB=VALUE, e.g. --set shared_buffers=1GB"
                ))
            })?;
        given.push((knob.to_string(), value.to_string()));
    }
    settings.retain(|(k, _)| !given.iter().any(|(g, _)| g == k));
    settings.extend(given.iter().cloned());
    Ok(given)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_replace_the_profile_and_repeat() {
        let mut settings = vec![
            ("shared_buffers".to_string(), "128MB".to_string()),
            ("max_connections".to_string(), "100".to_string()),
        ];
        let sets = [
            "shared_buffers=1GB",
            "performance-schema-instrument=wait/io/table/%=OFF",
            "performance-schema-instrument=wait/lock/table/%=OFF",
        ]
        .map(String::from);
        let given = with_sets(&mut settings, &sets).unwrap();
        assert_eq!(given.len(), 3);
        let pairs: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            pairs,
            [
                "max_connections=100",
                "shared_buffers=1GB",
                "performance-schema-instrument=wait/io/table/%=OFF",
                "performance-schema-instrument=wait/lock/table/%=OFF",
            ]
        );
        let e = with_sets(&mut settings, &["nothing".to_string()]).unwrap_err();
        assert!(e.to_string().contains("KNOB=VALUE"), "{e}");
    }
}
