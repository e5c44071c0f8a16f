//! Sweeps: run a plan's matrix (engines x profiles x client counts x repeats) on a `Target`
//! (managed servers, embedded files or servers given by DSN), with cold restarts and reloads as the
//! plan asks; commit every point to the results store the moment it finishes (a point the store
//! refuses goes to a file in the current directory, named in the error); skip the points a
//! previous, interrupted sweep already measured. A managed server is watched during each point from
//! the sweep's own thread (a server's parent-death signal follows the thread that started it) and
//! started again when it exits, the point marked (`server_restarts`); before each point, one that
//! accepts no connection within 10 s (stalled) is killed and started again. Exits 1 when a point
//! had failed transactions. `plan_file.rs` reads the TOML, `matrix.rs` makes it the checked list of
//! points before any server starts, and `run` here walks that list.

pub mod matrix;
pub mod plan_file;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::dsn::Dsn;
use crate::error::Error;
use crate::metrics::observe::ResourceSample;
use crate::point::{self, Observe, Outcome};
use crate::server::{Server, ServerKind, ServerOptions};
use crate::store::{PointKey, PointRecord, Store};
use matrix::{Matrix, Place, ProfileRuns, embedded_dsn};

/// The database dbduel creates on the servers it manages.
const DATABASE: &str = "dbduel";

/// How long a managed server has, between points, to accept a connection before it is taken
/// for stalled and killed.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// Where one engine of the plan runs, once the sweep has reached it.
enum Target {
    Managed {
        kind: &'static ServerKind,
        server: Option<Server>,
        dir: Option<PathBuf>,
        bin_dir: Option<PathBuf>,
        statements: bool,
    },
    Embedded {
        engine: String,
        path: PathBuf,
        dsn: Dsn,
    },
    Given(Dsn),
}

impl Target {
    fn new(engine: &str, place: &Place, temp: &Path) -> Result<Target, Error> {
        Ok(match place {
            Place::Given(dsn) => Target::Given(dsn.clone()),
            Place::Managed {
                kind,
                dir,
                bin_dir,
                statements,
            } => Target::Managed {
                kind,
                server: None,
                dir: dir.clone(),
                bin_dir: bin_dir.clone(),
                statements: *statements,
            },
            Place::Embedded => {
                let path = temp.join(format!("{engine}.db"));
                Target::Embedded {
                    engine: engine.into(),
                    dsn: embedded_dsn(engine, &path, &[])?,
                    path,
                }
            }
        })
    }

    /// Bring the target up under a profile's knobs. Returns true when the data is new.
    fn apply(&mut self, profile: &ProfileRuns) -> Result<bool, Error> {
        let knobs = &profile.knobs;
        match self {
            Target::Managed {
                kind,
                server,
                dir,
                bin_dir,
                statements,
            } => {
                // A start or restart can take a minute (Firebird): say what is under way.
                let started = std::time::Instant::now();
                errln!(
                    "  {} {} for profile '{}'...",
                    if server.is_some() {
                        "restarting"
                    } else {
                        "starting"
                    },
                    kind.product,
                    profile.name
                );
                let fresh = match server {
                    Some(s) => s.restart(knobs).map(|_| false),
                    None => {
                        let opts = ServerOptions {
                            dir: dir.clone(),
                            bin_dir: bin_dir.clone(),
                            settings: knobs.to_vec(),
                            statements: *statements,
                            ..Default::default()
                        };
                        let s = Server::start(kind, &opts)?;
                        let mut admin = s.session()?;
                        (kind.fresh_db)(admin.as_mut(), DATABASE)?;
                        *server = Some(s);
                        Ok(true)
                    }
                }?;
                errln!(
                    "  {} ready in {:.1} s",
                    kind.product,
                    started.elapsed().as_secs_f64()
                );
                Ok(fresh)
            }
            Target::Embedded { engine, path, dsn } => {
                let fresh = !path.exists();
                *dsn = embedded_dsn(engine, path, knobs)?;
                Ok(fresh)
            }
            // A DSN's server takes no knobs: the matrix refused a profile that sets any.
            Target::Given(_) => Ok(true),
        }
    }

    fn dsn(&self) -> Dsn {
        match self {
            Target::Managed { server, .. } => server.as_ref().expect("started").dsn(DATABASE),
            Target::Embedded { dsn, .. } | Target::Given(dsn) => dsn.clone(),
        }
    }

    fn pid(&self) -> Option<u32> {
        match self {
            Target::Managed { server, .. } => server.as_ref().and_then(Server::pid),
            _ => None,
        }
    }

    /// A managed server found gone between points (killed, crashed) is started again, with a
    /// line saying so; one that no longer answers (stopped, stuck) is killed first, as a
    /// service manager's watchdog would. An error when it cannot be started again.
    fn revive(&mut self, knobs: &[(String, String)]) -> Result<(), Error> {
        let Target::Managed {
            server: Some(s), ..
        } = self
        else {
            return Ok(());
        };
        if let Some(status) = s.exited() {
            errln!("  the server exited ({status}) between points: starting it again");
            s.restart(knobs)?;
        } else if !s.answers(ANSWER_WAIT) {
            errln!(
                "  the server stopped answering (no connection within {} s) between points: killing it and starting it again",
                ANSWER_WAIT.as_secs()
            );
            s.kill();
            s.restart(knobs)?;
        }
        Ok(())
    }

    /// Cold start: restart the server (same knobs) and drop the OS page cache where permitted.
    fn cold(&mut self, knobs: &[(String, String)]) -> Result<bool, Error> {
        if let Target::Managed {
            server: Some(s), ..
        } = self
        {
            s.restart(knobs)?;
        }
        // SAFETY: sync has no preconditions.
        unsafe { libc::sync() };
        Ok(std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok())
    }
}

/// Run a plan's matrix into the store. Prints one line per point.
pub fn run(matrix: &Matrix, results: &Path, stop: &Arc<AtomicBool>) -> Result<Outcome, Error> {
    let mut store = Store::open(results)?;
    let plan_id = store.claim(&matrix.name, &matrix.text)?;
    let done = store.done(plan_id)?;
    let temp = tempfile::Builder::new()
        .prefix("dbduel-sweep-")
        .tempdir()
        .map_err(|source| Error::TempDir { source })?;
    let (mut measured, mut skipped) = (0, 0);
    let mut failures = Vec::new();
    for engine in &matrix.engines {
        let mut target = Target::new(&engine.engine, &engine.place, temp.path())?;
        for profile in &engine.profiles {
            let todo: Vec<&matrix::Point> = profile
                .points
                .iter()
                .filter(|p| !done.contains(&p.key.key()))
                .collect();
            skipped += profile.points.len() - todo.len();
            if todo.is_empty() {
                continue;
            }
            errln!(
                "== {}/{}{}",
                engine.engine,
                profile.name,
                if profile.unsafe_profile {
                    " (UNSAFE)"
                } else {
                    ""
                }
            );
            let knobs = &profile.knobs;
            if target.apply(profile)? {
                prepare(matrix, &target.dsn(), stop)?;
            }
            for point in todo {
                if stop.load(Ordering::SeqCst) {
                    return Ok(Outcome::Interrupted);
                }
                target.revive(knobs)?;
                let cache_dropped = point.key.cold.then(|| target.cold(knobs)).transpose()?;
                if matrix.reload && measured + skipped > 0 {
                    prepare(matrix, &target.dsn(), stop)?;
                }
                let (result, resources, gone) = measure(&mut target, knobs, &point.run, stop)?;
                if result.interrupted {
                    return Ok(Outcome::Interrupted);
                }
                let resources = samples_json(&resources);
                let rec = PointRecord {
                    plan_id,
                    point: &point.key,
                    unsafe_profile: profile.unsafe_profile,
                    cache_dropped,
                    result: &result,
                    resources: &resources,
                };
                let id = store
                    .save(&rec)
                    .map_err(|e| unsaved(e, &point.key, &result))?;
                measured += 1;
                errln!("{}", point_line(id, &point.key, &result));
                if result.failed() {
                    failures.push(id);
                }
                // Stored first: the point that saw the server die is kept, marked.
                if let Some(e) = gone {
                    return Err(e);
                }
            }
        }
    }
    errln!(
        "{measured} points measured, {skipped} already in {} skipped",
        store.path().display()
    );
    Ok(outcome(&failures))
}

/// The server's per-second samples as the store keeps them.
fn samples_json(resources: &[ResourceSample]) -> Vec<serde_json::Value> {
    resources
        .iter()
        .map(|r| serde_json::to_value(r).expect("samples serialize"))
        .collect()
}

/// Success, or failures named by their stored runs' ids.
fn outcome(failures: &[i64]) -> Outcome {
    if failures.is_empty() {
        return Outcome::Success;
    }
    let ids: Vec<String> = failures.iter().map(i64::to_string).collect();
    errln!(
        "{} points had failed transactions, lost clients, no transaction or a server restart (runs {}: see `dbduel results show ID`)",
        failures.len(),
        ids.join(", ")
    );
    Outcome::Failures
}

/// What `measure` gives back: the result, the server's samples, and the error of a managed
/// server that exited during the point and could not be started again (the sweep stores the
/// point, then stops with it).
type Measured = (crate::result::RunResult, Vec<ResourceSample>, Option<Error>);

/// Measure one point. A managed server is watched meanwhile, from this thread (a server's
/// parent-death signal follows the thread that started it, so only a thread that lasts may
/// start one): when it exits (killed, crashed), it is started again at once on the same port
/// and data, as a service manager would, and the run goes on: its clients reconnect, and
/// their lost transactions and time without a connection are counted. The point records each
/// restart in `server_restarts`, which marks it failed.
fn measure(
    target: &mut Target,
    knobs: &[(String, String)],
    run_plan: &crate::run_plan::RunPlan,
    stop: &Arc<AtomicBool>,
) -> Result<Measured, Error> {
    let dsn = target.dsn();
    let observe = Observe::Server { pid: target.pid() };
    let mut server = match target {
        Target::Managed {
            server: Some(s), ..
        } => Some(s),
        _ => None,
    };
    let began = Instant::now();
    let mut restarts = Vec::new();
    let mut gone = None;
    let measured = std::thread::scope(|scope| {
        let bench = scope.spawn(|| point::run_point(run_plan, &dsn, stop, observe));
        while !bench.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
            let Some(s) = server.as_deref_mut().filter(|_| gone.is_none()) else {
                continue;
            };
            let Some(status) = s.exited() else {
                continue;
            };
            let at = began.elapsed().as_secs_f64();
            let restarting = Instant::now();
            let line = match s.restart(knobs) {
                Ok(()) => format!(
                    "the server exited {at:.1} s into the point ({status}) and was started again on the same port and data in {:.1} s; its clients reconnected, and the transactions it cut off count as errors",
                    restarting.elapsed().as_secs_f64()
                ),
                Err(e) => {
                    let line = format!(
                        "the server exited {at:.1} s into the point ({status}) and could not be started again: {e}"
                    );
                    gone = Some(e);
                    line
                }
            };
            errln!("  {line}");
            restarts.push(line);
        }
        bench
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    let (mut result, resources) = measured?;
    result.server_restarts = restarts;
    Ok((result, resources, gone))
}

/// The store refused a point (disk full, made read-only): keep the measurement in a file of
/// the current directory, named in the error, so that nothing measured is lost.
fn unsaved(e: Error, p: &PointKey, result: &crate::result::RunResult) -> Error {
    let name = format!(
        "dbduel-unsaved-{}-{}-c{}-r{}-{}.json",
        p.engine,
        p.profile,
        p.clients,
        p.repeat,
        std::process::id()
    )
    .replace(['/', ' '], "_");
    let json = serde_json::to_string_pretty(result).expect("results serialize");
    let kept = match std::fs::write(&name, json) {
        Ok(()) => Ok(std::path::Path::new(".").join(&name)),
        Err(w) => Err(format!("./{name}: {w}")),
    };
    Error::Unsaved {
        cause: Box::new(e),
        kept,
    }
}

/// Load the plan's data on a target, as `dbduel prepare` would.
fn prepare(matrix: &Matrix, dsn: &Dsn, stop: &AtomicBool) -> Result<(), Error> {
    point::prepare(
        dsn,
        &matrix.engine_options,
        matrix.workload,
        &matrix.data,
        stop,
        false,
    )
    .map(drop)
}

fn point_line(id: i64, p: &PointKey, r: &crate::result::RunResult) -> String {
    let mut flags = Vec::new();
    if r.client_bound {
        flags.push("client-bound");
    }
    if r.measurement.errors > 0 {
        flags.push("errors");
    }
    if !r.measurement.lost_clients.is_empty() {
        flags.push("lost clients");
    }
    if r.measurement.transactions == 0 {
        flags.push("no transaction");
    }
    if !r.server_restarts.is_empty() {
        flags.push("server restarted");
    }
    // A point that ran some of its clients (CH's side alone) says how many.
    let ran = if r.options.clients >= p.clients {
        String::new()
    } else {
        format!(" ({} ran)", r.options.clients)
    };
    format!(
        "  run {id}: {}/{} {} c={}{ran} r={}: {:.1} tps, p95 {:.2} ms{}",
        p.engine,
        p.profile,
        p.variant,
        p.clients,
        p.repeat,
        r.tps,
        r.measurement.latency_ms.p95,
        if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        }
    )
}
