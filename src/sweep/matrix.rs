//! A sweep as it will run, made from its plan file and checked whole before a store is opened or a
//! server started (as `run` makes a `RunPlan` from a `RunInput`): the `Matrix` of the workload and
//! what `prepare` loads, where each engine runs, each profile's knobs on each engine, and every
//! point with the run that `dbduel run` would make of it (through `run_plan::RunInput`). A DSN, a
//! knob or an engine option that the last point cannot use is refused first. `sweep::run` only
//! walks it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::DATABASE;
use super::plan_file::PlanFile;
use crate::dsn::Dsn;
use crate::engine::{self, EngineOptions};
use crate::error::Error;
use crate::metrics::Host;
use crate::run_plan::{AskedBy, RunInput, RunPlan};
use crate::server::profile::{self, Facts};
use crate::server::{self, ServerKind};
use crate::store::PointKey;
use crate::workload::{self, WorkloadEntry, WorkloadOptions};

/// A plan checked whole: what a sweep measures, in order.
pub struct Matrix {
    /// The plan's name and its text, as the store keeps them.
    pub name: String,
    pub text: String,
    pub workload: &'static WorkloadEntry,
    /// What `prepare` loads: the scale and the workload's options.
    pub data: WorkloadOptions,
    /// The engine options of every session (`table_engine`).
    pub engine_options: EngineOptions,
    /// Every point starts from freshly loaded data (`data = "reload"`).
    pub reload: bool,
    pub engines: Vec<EngineRuns>,
}

/// One engine of the plan: where it runs, and its profiles in order.
pub struct EngineRuns {
    pub engine: String,
    pub place: Place,
    pub profiles: Vec<ProfileRuns>,
}

/// Where an engine of the plan runs.
pub enum Place {
    /// A server dbduel starts: its directory (None: a temporary one) and its binaries'.
    Managed {
        kind: &'static ServerKind,
        dir: Option<PathBuf>,
        bin_dir: Option<PathBuf>,
        /// Keep the server's own figures per statement (the plan's `server_statements`).
        statements: bool,
    },
    /// A file of the sweep's own, the knobs as DSN parameters.
    Embedded,
    /// A server given by DSN, which dbduel cannot configure.
    Given(Dsn),
}

/// One profile on one engine: the knobs it runs with (the ones the sweep requires included)
/// and its points.
pub struct ProfileRuns {
    pub name: String,
    pub unsafe_profile: bool,
    pub knobs: Vec<(String, String)>,
    pub points: Vec<Point>,
}

/// One point: its key in the store and the run it measures.
pub struct Point {
    pub key: PointKey,
    pub run: Arc<RunPlan>,
}

/// The run of a variant at a client count.
type Run = (String, u32, Arc<RunPlan>);
/// The run of each variant at each client count, in the plan's order.
type Runs = Vec<Run>;

impl Matrix {
    /// The plan made into its points; every mistake a plan can hold is refused here, before a
    /// store is opened or a server started, but a knob that a managed server refuses (the
    /// server judges its own, when it starts).
    pub fn new(plan: &PlanFile, text: String) -> Result<Matrix, Error> {
        let entry = workload::find(&plan.workload)?;
        let data = WorkloadOptions {
            scale: plan.scale,
            params: plan.params()?,
            ..WorkloadOptions::default()
        };
        let engine_options = EngineOptions {
            table_engine: plan.table_engine.clone(),
            lazy_begin: plan.lazy_begin,
            ..EngineOptions::default()
        };
        let runs = runs(plan, entry, &data, &engine_options)?;
        // A workload file's own name, not the registry's `custom`.
        let workload_name = (entry.new)(&WorkloadOptions::default())?.name();
        let facts = facts(plan, entry);
        let profiles = plan.profiles(&facts);
        let engines = plan
            .engines
            .iter()
            .map(|engine| {
                let place = place(plan, engine)?;
                check_engine(plan, engine, &place, &engine_options)?;
                let profiles = profiles
                    .iter()
                    .map(|p| {
                        let mut knobs = p.knobs.get(engine).cloned().unwrap_or_default();
                        knobs.extend(profile::required(engine, &facts));
                        check_knobs(plan, engine, &place, &p.name, &knobs)?;
                        let points = points(plan, &runs, workload_name, engine, &p.name);
                        Ok(ProfileRuns {
                            name: p.name.clone(),
                            unsafe_profile: p.unsafe_profile,
                            knobs,
                            points,
                        })
                    })
                    .collect::<Result<_, Error>>()?;
                Ok(EngineRuns {
                    engine: engine.clone(),
                    place,
                    profiles,
                })
            })
            .collect::<Result<Vec<EngineRuns>, Error>>()?;
        let managed = engines
            .iter()
            .any(|e| matches!(e.place, Place::Managed { .. }));
        if plan.server_statements && !managed {
            return Err(Error::Usage(format!(
                "plan {}: key `server_statements`: no engine of the plan runs on a server dbduel manages (each is given by `[dsn]` or embedded), so none would keep its figures per statement: drop the key, or let dbduel manage a server",
                plan.name()
            )));
        }
        Ok(Matrix {
            name: plan.name().to_string(),
            text,
            workload: entry,
            data,
            engine_options,
            reload: plan.data == "reload",
            engines,
        })
    }
}

/// Every variant's run at every client count, built as `dbduel run` builds its own
/// (`RunInput`): the same checks, and the workload's own default for retries.
fn runs(
    plan: &PlanFile,
    entry: &'static WorkloadEntry,
    data: &WorkloadOptions,
    engine_options: &EngineOptions,
) -> Result<Runs, Error> {
    // A workload that runs its own streams to their end (TPC-H) takes no time.
    let streams = (entry.new)(data).is_ok_and(|w| w.fixed_clients().is_some());
    let mut runs = Vec::new();
    for variant in plan.variants() {
        for &clients in &plan.clients {
            let input = RunInput {
                target: crate::run_plan::Target {
                    workload: entry,
                    dsn: None,
                    engine: engine_options.clone(),
                },
                scale: None,
                variant: Some(variant.clone()),
                params: data.params.clone(),
                clients,
                // A plan's clients are always a list (1, 2, 4, 8 when not given): 1 is taken as
                // its default, which a phase's or a workload's own number replaces.
                clients_given: clients != 1,
                // What the point was asked to do, as `run -T`/`-t` records it: a time or a
                // count of transactions per client, never both.
                time: if plan.phases.is_empty() {
                    (plan.transactions.is_none() && !streams).then(|| plan.time())
                } else {
                    // Phases are the time: a `time` key beside them is refused.
                    plan.time
                },
                transactions: plan.transactions,
                warmup: plan.warmup,
                rate: None,
                phases: plan.phases.clone(),
                latency_limit_ms: None,
                log: None,
                exit_on_abort: false,
                verbose_errors: false,
                stall_timeout: None,
                progress: None,
                max_tries: plan.max_tries,
                seed: Some(plan.seed()),
                protocol: plan.protocol(),
                json: None,
                scripts: Vec::new(),
                defines: Vec::new(),
                asked_by: AskedBy::Plan,
                shard: None,
                start_at: None,
                waits: true,
                waits_hz: None,
                statements: true,
                connections: plan.connections()?,
                threads: None,
            };
            let run = input
                .plan()
                .map_err(|e| Error::Usage(format!("plan {}: {e}", plan.name())))?;
            runs.push((variant.clone(), clients, Arc::new(run)));
        }
    }
    Ok(runs)
}

/// What a sweep's tuned profiles are sized by: this machine, the plan's data and clients.
fn facts(plan: &PlanFile, entry: &WorkloadEntry) -> Facts {
    let host = Host::read();
    Facts {
        ram_bytes: host.ram_bytes,
        cores: host.cores,
        dataset_bytes: entry.bytes_per_scale * u64::from(plan.scale),
        max_clients: room(plan),
    }
}

/// The connections a point may hold at once: its clients, the idle connections beside them,
/// and with `connect` (a connection per transaction) as many again, for the server's sessions
/// still ending when their clients have opened the next (none for an invalid key: refused
/// before).
fn room(plan: &PlanFile) -> u32 {
    let clients = plan.clients.iter().copied().max().unwrap_or(1);
    let c = plan.connections().unwrap_or_default();
    let again = if c.per_transaction { clients } else { 0 };
    clients
        .saturating_add(c.idle_connections)
        .saturating_add(again)
}

/// Where `engine` runs: the plan's DSN for it (which must reach that engine), else a server
/// dbduel manages (its binaries there, its data directory usable), else a file of its own.
fn place(plan: &PlanFile, engine: &str) -> Result<Place, Error> {
    let bad = |msg: String| Error::Usage(format!("plan {}: {msg}", plan.name()));
    if let Some(text) = plan.dsn.get(engine) {
        let dsn = engine::parse_dsn(text).map_err(|e| bad(format!("key `dsn.{engine}`: {e}")))?;
        if engine::entry_for(&dsn.scheme).is_none_or(|e| e.name != engine) {
            let schemes = engine::named(engine).map_or(String::new(), |e| e.schemes.join(", "));
            return Err(bad(format!(
                "key `dsn.{engine}`: {dsn} does not reach {engine}: give a DSN of the scheme {schemes}"
            )));
        }
        return Ok(Place::Given(dsn));
    }
    let Some(kind) = server::kind_for(engine) else {
        return Ok(Place::Embedded);
    };
    let dir = plan.data_dir.as_ref().map(|d| Path::new(d).join(engine));
    let bin_dir = plan.bin_dir.get(engine).map(PathBuf::from);
    server::binaries(kind, bin_dir.as_deref()).map_err(|e| bad(format!("engine {engine}: {e}")))?;
    if let Some(dir) = &dir {
        server::check_dir(kind, dir).map_err(|e| bad(format!("key `data_dir`: {e}")))?;
    }
    Ok(Place::Managed {
        kind,
        dir,
        bin_dir,
        statements: plan.server_statements,
    })
}

/// The plan's engine options and protocol, checked by the engine as it will meet them on the
/// DSN it will be reached by (a managed server's, but for the port it will be given).
fn check_engine(
    plan: &PlanFile,
    engine: &str,
    place: &Place,
    options: &EngineOptions,
) -> Result<(), Error> {
    let dsn = match place {
        Place::Given(dsn) => dsn.clone(),
        Place::Embedded => embedded_dsn(engine, &stand_in(engine), &[])?,
        Place::Managed { kind, .. } => Dsn::parse(&format!("{}{DATABASE}", (kind.dsn)(0, None)))?,
    };
    engine::open(&dsn, options, plan.protocol())
        .map(drop)
        .map_err(|e| Error::Usage(format!("plan {}: engine {engine}: {e}", plan.name())))
}

/// A profile's knobs on an engine, checked as its points will meet them: a DSN's server takes
/// none; an embedded engine takes them as DSN parameters, which it checks when it is opened.
/// A managed server judges its own knobs when it starts.
fn check_knobs(
    plan: &PlanFile,
    engine: &str,
    place: &Place,
    profile: &str,
    knobs: &[(String, String)],
) -> Result<(), Error> {
    let bad = |msg: String| Error::Usage(format!("plan {}: {msg}", plan.name()));
    match place {
        _ if knobs.is_empty() => Ok(()),
        Place::Given(dsn) => Err(bad(format!(
            "profile '{profile}' sets knobs, but {dsn} is given by DSN and dbduel cannot configure it: use the default profile or let dbduel manage the server"
        ))),
        Place::Embedded => {
            let dsn = embedded_dsn(engine, &stand_in(engine), knobs)?;
            engine::open(&dsn, &EngineOptions::default(), plan.protocol())
                .map(drop)
                .map_err(|e| bad(format!("profile '{profile}' on {engine}: {e}")))
        }
        Place::Managed { .. } => Ok(()),
    }
}

/// The file an embedded engine's DSN names while the plan is checked (the sweep's own is made
/// in a temporary directory when it starts).
fn stand_in(engine: &str) -> PathBuf {
    Path::new(engine).with_extension("db")
}

/// The DSN of an embedded engine's file under a profile's knobs.
pub fn embedded_dsn(engine: &str, path: &Path, knobs: &[(String, String)]) -> Result<Dsn, Error> {
    let query: Vec<String> = knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let sep = if query.is_empty() { "" } else { "?" };
    engine::parse_dsn(&format!(
        "{engine}://{}{sep}{}",
        path.display(),
        query.join("&")
    ))
}

/// The points of one profile on one engine, in the order they are measured: variant, clients,
/// repeat, cold before warm; with `order = "rounds"`, repeat first, each round starting one
/// run further along the plan's order (with as many rounds as runs, each run takes each place
/// in a round once; which run comes just before another is not balanced).
fn points(plan: &PlanFile, runs: &Runs, workload: &str, engine: &str, profile: &str) -> Vec<Point> {
    let mut out = Vec::new();
    let order: Vec<(u32, &Run)> = if plan.order == "rounds" {
        let n = runs.len().max(1);
        (1..=plan.repeats)
            .flat_map(|repeat| {
                let start = (repeat as usize - 1) % n;
                (0..runs.len()).map(move |k| (repeat, &runs[(start + k) % n]))
            })
            .collect()
    } else {
        runs.iter()
            .flat_map(|r| (1..=plan.repeats).map(move |repeat| (repeat, r)))
            .collect()
    };
    for (repeat, (variant, clients, run)) in order {
        for cold in plan.cold.states() {
            out.push(Point {
                key: PointKey {
                    engine: engine.into(),
                    profile: profile.into(),
                    workload: workload.into(),
                    variant: variant.clone(),
                    scale: plan.scale,
                    clients: *clients,
                    repeat,
                    cold,
                },
                run: Arc::clone(run),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(text: &str) -> Result<Matrix, Error> {
        let plan = PlanFile::parse(text, Path::new("m.toml"))?;
        Matrix::new(&plan, text.into())
    }

    #[test]
    fn points_in_the_order_they_are_measured() {
        let m = matrix(
            "engines = [\"sqlite\"]\nprofiles = [\"default\", \"tuned\"]\nvariants = [\"select-only\", \"tpcb-like\"]\nclients = [1, 2]\nrepeats = 2\ncold = \"both\"\ntime = 3\n",
        )
        .unwrap();
        assert_eq!(m.name, "m");
        let sqlite = &m.engines[0];
        assert!(matches!(sqlite.place, Place::Embedded));
        let names: Vec<&str> = sqlite.profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["default", "tuned"]);
        let points = &sqlite.profiles[1].points;
        assert_eq!(points.len(), 2 * 2 * 2 * 2);
        let keys: Vec<String> = points[..5]
            .iter()
            .map(|p| {
                let k = &p.key;
                format!(
                    "{} {} c{} r{} {}",
                    k.profile, k.variant, k.clients, k.repeat, k.cold
                )
            })
            .collect();
        assert_eq!(
            keys,
            [
                "tuned select-only c1 r1 true",
                "tuned select-only c1 r1 false",
                "tuned select-only c1 r2 true",
                "tuned select-only c1 r2 false",
                "tuned select-only c2 r1 true",
            ]
        );
        // Each point measures its own variant at its own client count, for the plan's time.
        let last = points.last().unwrap();
        assert_eq!(last.run.run.clients, 2);
        assert_eq!(last.run.workload.variant.as_deref(), Some("tpcb-like"));
        assert_eq!(last.run.time_s, Some(3));
    }

    #[test]
    fn rounds_measure_every_variant_once_before_the_next_repeat_each_from_the_next() {
        let m = matrix(
            "variants = [\"select-only\", \"tpcb-like\"]\nclients = [1, 2]\nrepeats = 2\norder = \"rounds\"\ntime = 3\n",
        )
        .unwrap();
        let keys: Vec<String> = m.engines[0].profiles[0]
            .points
            .iter()
            .map(|p| format!("{} c{} r{}", p.key.variant, p.key.clients, p.key.repeat))
            .collect();
        assert_eq!(
            keys,
            [
                "select-only c1 r1",
                "select-only c2 r1",
                "tpcb-like c1 r1",
                "tpcb-like c2 r1",
                "select-only c2 r2",
                "tpcb-like c1 r2",
                "tpcb-like c2 r2",
                "select-only c1 r2",
            ]
        );
        let Err(e) = matrix("order = \"random\"\n") else {
            panic!("an unknown order accepted");
        };
        assert!(
            e.to_string()
                .contains("key `order`: 'random' is not points or rounds"),
            "{e}"
        );
    }

    /// A bad last profile, or a DSN that cannot be used for the last engine, is refused when
    /// the matrix is made, before the first point of the first engine.
    #[test]
    fn what_the_last_point_cannot_run_is_refused_first() {
        for (plan, needle) in [
            (
                "profiles = [\"default\", \"odd\"]\n[profile.odd]\nsqlite = { journal_mode = \"sideways\" }\n",
                "profile 'odd' on sqlite",
            ),
            (
                "engines = [\"sqlite\", \"postgres\"]\nserver_statements = true\n[dsn]\npostgres = \"postgres://u@h/d\"\n",
                "key `server_statements`: no engine of the plan runs on a server dbduel manages",
            ),
            (
                "engines = [\"sqlite\", \"postgres\"]\n[dsn]\npostgres = \"mysql://u@h/d\"\n",
                "key `dsn.postgres`: mysql://u@h/d does not reach postgres",
            ),
            (
                "engines = [\"sqlite\", \"postgres\"]\n[dsn]\npostgres = \"postgres://u@h/d?sslmode=sometimes\"\n",
                "engine postgres: sslmode 'sometimes'",
            ),
            (
                "engines = [\"sqlite\", \"postgres\"]\nprofiles = [\"default\", \"p\"]\n[dsn]\npostgres = \"postgres://u@h/d\"\n[profile.p]\npostgres = { work_mem = \"8MB\" }\n",
                "profile 'p' sets knobs, but postgres://u@h/d is given by DSN",
            ),
            (
                "engines = [\"sqlite\"]\ntable_engine = \"Aria\"\n",
                "engine sqlite: --table-engine applies to mysql:// only",
            ),
        ] {
            let e = matrix(&format!("clients = [1]\n{plan}"))
                .map(|_| "accepted".to_string())
                .unwrap_or_else(|e| e.to_string());
            assert!(
                e.starts_with("plan m: ") && e.contains(needle),
                "{plan}: {e}"
            );
        }
    }
}
