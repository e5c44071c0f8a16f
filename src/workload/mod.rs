//! The workload seam: the `Workload` and `Client` traits, the `WORKLOADS` registry (each entry with
//! its options, headline figures and their meanings, what its options ask of the run itself:
//! `run_asks`), what `prepare` and `run` tell a workload (`WorkloadOptions`) and what it computes
//! its figures from (`Counts`), and the helpers every workload shares: `start_over` (the opening of
//! every prepare: drop the tables, forget the workload's facts, create them) and `clear_out` (the
//! end of every cleanup), `take_held` and `set_serializable` (for `attach` and the clients),
//! `record_fact`, the loader with its
//! progress bar (one style for loads and appends) and parallel jobs, the dbduel_facts table and the
//! record of a finished prepare (created in SQL every engine takes: no IF NOT EXISTS, no reserved
//! column names), errors named by step. Options are parsed in options.rs, generated rows and the
//! size the data holds in rows.rs, random distributions in random.rs, dates in calendar.rs; each workload is a
//! folder.
//!
//! A new workload is its folder and one line in `WORKLOADS`. Its `WorkloadEntry` (name, help,
//! variants, `bytes_per_scale` for tuned profiles, `headline`, `figures`, `options`: its table,
//! `options::NONE` for none, checked by `options::parse` in its `new`; `run_asks`, `no_run_asks`
//! for none; `scale_follows_clients`: whether `duel`'s scale follows its clients) alone gives it
//! its flags in `prepare` and `run`, its options in `dbduel list` and plans, its runs in results,
//! reports and `compare`: SmallBank was added so, with no other source file changed.
//!
//! `Workload`: prepare, check, cleanup, attach, client, `open_session` (what each client session
//! needs first, again on a new connection); `metrics` and `settings` (its own figures
//! and options, NOPM, tpmC, isolation, which go into the result under `workload`); `operations` (a
//! count for the whole run, YCSB's operationcount, which run_plan.rs turns into each client's `-t`
//! when neither `-T` nor `-t` is given); `fixed_clients` (a workload that sets its clients and
//! their work, TPC-H's streams: run_plan.rs refuses `-c`, `-T`, `-t` and `-R` for it, and each
//! client ends at `Client::finished`); `finish` (after a run, on the admin session, even when the
//! run failed, on a new session when that one was lost; a failure becomes a warning of the result,
//! never its loss); `shards_refused` (why a run cannot be split over processes: YCSB's inserts,
//! whose keys come from one counter). `Client`: `next` draws a transaction, `execute` runs it
//! (again on retry); `rolled_back` (TPC-C's New-Order rolls back 1% on purpose: completed with a
//! rollback, per type, never an error); `pause` (a terminal's keying and think times, outside the
//! measured latency); `aborted` (a script's run-time error ends the client). `Counts`: the measured
//! seconds and each transaction type's completed transactions and rollbacks, filled by the metrics
//! so that a workload never sees the aggregator.
//!
//! The scale lives in the data (tpcb's branches, as pgbench reads it), so dbduel runs on databases
//! pgbench and sysbench made. dbduel_facts records only what the data cannot say (that tpcb's
//! simple-update ran, so `check` knows which invariant still holds) and whether `prepare` finished:
//! `prepare.<dataset>` (`Workload::dataset`: sysbench's scripts and probes share `sysbench`) is
//! `running` before the first table is dropped and `done` after the last step (`prepare_recorded`);
//! `run` and `check` refuse a dataset that is not `done` (`refuse_unfinished`) and take data
//! without the record (pgbench's, sysbench's) as it is.

pub(crate) mod calendar;
pub mod ch;
pub mod custom;
pub mod options;
pub(crate) mod random;
pub(crate) mod rows;
pub mod script;
pub mod smallbank;
pub mod sysbench;
pub mod tatp;
pub mod tpcb;
pub mod tpcc;
pub mod tpch;
pub mod ycsb;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::{DbError, DbResult, Engine, ErrorClass, Load, RowSource, Session, Value};
use crate::error::Error;
use crate::sql::SqlSet;

/// What `prepare` and `run` tell a workload.
#[derive(Debug, Clone, Default)]
pub struct WorkloadOptions {
    pub scale: u32,
    pub fillfactor: Option<u32>,
    /// A built-in variant of the workload (tpcb: tpcb-like, simple-update, select-only).
    pub variant: Option<String>,
    /// Workload-specific options (sysbench's --tables, --table-size...), by name with `_`.
    pub params: std::collections::BTreeMap<String, String>,
    /// Clients of the run (0 outside a run).
    pub clients: u32,
    /// Seconds the run lasts, warm-up included (None: a count of transactions, or no run).
    pub run_s: Option<u64>,
    /// The parsed pgbench-format scripts of `dbduel run FILE.sql` (the `script` workload).
    pub scripts: Option<std::sync::Arc<script::Program>>,
    /// A sharded run's (`--shard`) seed that every shard shares: its `--start-at` instant in
    /// milliseconds since the epoch, else its `--seed`, else 0; None outside a sharded run.
    /// What the whole run draws once (TPC-C's NURand run constants) is drawn from it.
    pub shared_seed: Option<u64>,
    /// The run's seed (`--seed`, pgbench's `--random-seed`): tpcb and scripts draw from it as
    /// pgbench does (`script::rand::Seeds`), so one seed gives pgbench's values.
    pub seed: u64,
}

/// What a workload's own figures are computed from (`Workload::metrics`): the measured
/// seconds and, per transaction type in the order of `transaction_types`, its completed
/// transactions and the rollbacks among them. The metrics fill it, so a workload never sees
/// the aggregator.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub duration_s: f64,
    pub types: Vec<TypeCounts>,
}

/// One transaction type's counts in `Counts`.
#[derive(Debug, Clone)]
pub struct TypeCounts {
    pub name: String,
    pub transactions: u64,
    pub rollbacks: u64,
}

/// One entry of the workload registry.
#[derive(Clone, Copy)]
pub struct WorkloadEntry {
    pub name: &'static str,
    pub about: &'static str,
    pub variants: &'static [&'static str],
    /// Rough size of the loaded data per unit of scale, for sizing tuned profiles.
    pub bytes_per_scale: u64,
    /// The workload's own figures that rank its points, in order of preference (the first
    /// that every compared point has); none: transactions per second.
    pub headline: &'static [&'static str],
    /// What each of its own figures means (`Workload::metrics`), as the summary and the
    /// reports explain them.
    pub figures: &'static [(&'static str, &'static str)],
    /// Its own options (`options::NONE`: none): the flags `prepare` and `run` show for them,
    /// and what `options::parse` checks a value against.
    pub options: &'static options::Table,
    /// What its own options say about the run itself, taken out of them (YCSB's
    /// `threadcount` and `target`, its names for -c and -R); `no_run_asks` for none.
    pub run_asks: fn(&mut BTreeMap<String, String>) -> Result<RunAsks, Error>,
    /// Whether the duel's scale follows its most clients (tpcb: a branch per client, as
    /// pgbench advises); else scale 1.
    pub scale_follows_clients: bool,
    pub new: fn(&WorkloadOptions) -> Result<Box<dyn Workload>, Error>,
}

/// A workload's own names for the run's clients and rate, as given (`RunAsks::clients`:
/// the number and how the user wrote it, "YCSB property threadcount=8", for messages).
#[derive(Debug, Default)]
pub struct RunAsks {
    pub clients: Option<(u32, String)>,
    pub rate: Option<(f64, String)>,
}

/// The `run_asks` of a workload whose options say nothing about the run itself.
pub fn no_run_asks(_: &mut BTreeMap<String, String>) -> Result<RunAsks, Error> {
    Ok(RunAsks::default())
}

/// Every workload dbduel knows. Adding a workload adds one folder and one line here.
pub const WORKLOADS: &[&[WorkloadEntry]] = &[
    &[tpcb::ENTRY],
    &sysbench::ENTRIES,
    &sysbench::PROBES,
    &[script::ENTRY],
    &[tpcc::ENTRY],
    &[ycsb::ENTRY],
    &[tpch::ENTRY],
    &[smallbank::ENTRY],
    &[tatp::ENTRY],
    &[ch::ENTRY],
];

/// The figures that rank a workload's points (see `WorkloadEntry::headline`); none for a
/// workload dbduel does not know by that name.
pub fn headline(name: &str) -> &'static [&'static str] {
    all().find(|w| w.name == name).map_or(&[], |w| w.headline)
}

/// The warning of `attach` when an option given to a run on prepared data (`--scale 5`)
/// disagrees with the data, which wins: "--scale 5 ignored: the database holds scale 1".
pub fn ignored(given: impl std::fmt::Display, holds: impl std::fmt::Display) -> String {
    format!("{given} ignored: the database holds {holds}")
}

/// An `attach` takes the scale the data holds (`held`) over the one given (`given`, 0 when
/// none was); a different one given comes back as the warning that `flag` is ignored, the
/// database holding `holds` ("scale 1", "4 warehouses").
pub fn take_held(given: &mut u32, held: u32, flag: &str, holds: String) -> Option<String> {
    let warning =
        (*given != 0 && *given != held).then(|| ignored(format!("{flag} {given}"), holds));
    *given = held;
    warning
}

/// What a workload's own figure means (by the registry's `figures`); "" when none says.
pub fn figure_meaning(name: &str) -> &'static str {
    all()
        .flat_map(|w| w.figures)
        .find(|(n, _)| *n == name)
        .map_or("", |(_, m)| m)
}

/// Every workload, in registry order.
pub fn all() -> impl Iterator<Item = &'static WorkloadEntry> {
    WORKLOADS.iter().flat_map(|group| group.iter())
}

/// A workload by name, or a workload file (`*.toml`), which is read and checked here.
pub fn find(name: &str) -> Result<&'static WorkloadEntry, Error> {
    if custom::is_file(name) {
        return custom::load(name);
    }
    all().find(|w| w.name == name).ok_or_else(|| {
        let known: Vec<_> = all().map(|w| w.name).collect();
        Error::Usage(format!(
            "unknown workload '{name}': use one of {} (see `dbduel list`)",
            known.join(", ")
        ))
    })
}

/// One result line of `check`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CheckItem {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

impl CheckItem {
    pub fn new(name: &str, ok: bool, detail: String) -> CheckItem {
        CheckItem {
            name: name.to_string(),
            ok,
            detail,
        }
    }
}

/// The first row of a query of whole numbers (a check's counts and sums); 0 for a NULL.
pub fn numbers(s: &mut dyn Session, sql: &str, doing: &str) -> Result<Vec<i64>, Error> {
    let rows = s.query_text(sql).map_err(|e| db_error(e, doing))?;
    let row = rows.into_iter().next().unwrap_or_default();
    Ok(row.iter().map(|v| v.as_i64().unwrap_or(0)).collect())
}

/// The runs' ledgers a workload records in dbduel_facts (`query` reads their names and
/// texts), added up: each text is three numbers (what the run's committed transactions did,
/// and what is in doubt), summed column by column; and the number of runs.
pub fn sum_ledgers(
    s: &mut dyn Session,
    query: &str,
    workload: &str,
) -> Result<([i64; 3], usize), Error> {
    let rows = s
        .query_text(query)
        .map_err(|e| db_error(e, &format!("reading the {workload} ledgers")))?;
    let mut sum = [0; 3];
    let mut runs = 0;
    for row in rows {
        let text = row.get(1).map(|v| v.to_string()).unwrap_or_default();
        let parts: Vec<i64> = text
            .split_whitespace()
            .map(|p| p.parse().unwrap_or(0))
            .collect();
        let [a, b, c] = parts[..] else {
            let name = row.first().map(|v| v.to_string()).unwrap_or_default();
            return Err(Error::Database(format!(
                "dbduel_facts {name} holds '{text}', not a {workload} ledger: `dbduel prepare {workload}` anew"
            )));
        };
        sum = [sum[0] + a, sum[1] + b, sum[2] + c];
        runs += 1;
    }
    Ok((sum, runs))
}

/// A benchmark: its schema and data, its transactions, and its consistency checks.
pub trait Workload: Send + Sync {
    fn name(&self) -> &'static str;
    /// The variant that runs, as shown in results.
    fn variant(&self) -> &'static str;
    /// The scale in effect (after `attach`, as read from the database); None for a workload
    /// whose size is told by its own options (sysbench: tables and table_size, in `settings`).
    fn scale(&self) -> Option<u32>;
    /// Create the tables, load the data, add keys, analyze.
    fn prepare(
        &self,
        engine: &dyn Engine,
        session: &mut dyn Session,
        loader: &Loader,
    ) -> Result<(), Error>;
    /// Drop everything `prepare` created.
    fn cleanup(&self, engine: &dyn Engine, session: &mut dyn Session) -> Result<(), Error>;
    /// Verify the workload's invariants.
    fn check(
        &self,
        engine: &dyn Engine,
        session: &mut dyn Session,
    ) -> Result<Vec<CheckItem>, Error>;
    /// Read what the database holds before a run (scale...); fails when it was not prepared.
    /// Returns warnings for the user.
    fn attach(
        &mut self,
        engine: &dyn Engine,
        session: &mut dyn Session,
    ) -> Result<Vec<String>, Error>;
    /// Names of the transaction types a client may report, indexed as `Client::next` returns.
    fn transaction_types(&self) -> Vec<&'static str>;
    /// Whether its clients take a mix of their transaction types from a phase of the run
    /// (`Client::weigh`); false for a workload of one type, or one whose mix is its definition.
    fn weighable(&self) -> bool {
        false
    }
    /// Make one client's state (prepared statements, random generator) on its own session.
    fn client(
        &self,
        engine: &dyn Engine,
        session: &mut dyn Session,
        client_id: u32,
        seed: u64,
    ) -> DbResult<Box<dyn Client>>;
    /// What every client session needs before its statements (TPC-C's and SmallBank's
    /// serializable isolation, TPC-H's statement timeout): `client` calls it on a client's
    /// first session, the runner on each new one the client is bound to (`-C`, a
    /// connection's end of life, a lost connection).
    fn open_session(&self, _engine: &dyn Engine, _session: &mut dyn Session) -> DbResult<()> {
        Ok(())
    }
    /// Tries of a transaction when `--max-tries` is not given (1: no retry).
    fn default_max_tries(&self) -> u32 {
        1
    }
    /// How long a run of `-t` waits on a transaction while none finishes before it is called
    /// stalled and ended (`--stall-timeout`'s default; `runner::Running::watch`).
    fn stall_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(60)
    }
    /// False when its clients wait on each other through a lock or a condition (TPC-H's
    /// streams wait for the power test): each then needs a thread of its own
    /// (`runner::threads`).
    fn multiplexed(&self) -> bool {
        true
    }
    /// The workload's own options in effect (TPC-C: warehouses, isolation...), for results.
    fn settings(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    /// The workload's own figures, computed from the counts of a measurement (TPC-C: NOPM
    /// and tpmC).
    fn metrics(&self, _counts: &Counts) -> BTreeMap<String, f64> {
        BTreeMap::new()
    }
    /// The data `prepare` makes, shared by every workload that runs on it (sysbench's scripts
    /// and probes share the sbtest tables): the name its completion is recorded under in
    /// dbduel_facts. None: the workload prepares nothing and runs on whatever data is there.
    fn dataset(&self) -> Option<String> {
        Some(self.name().to_string())
    }
    /// The statements its clients send that the user wrote (a script's, a workload file's),
    /// each with where it is (`file:line`), so that a setting one of them changes counts in
    /// the run's durability (`engine::durability::of_run`); none for a built-in workload.
    fn user_statements(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The operations a run makes in all when neither `-T` nor `-t` is given (YCSB's
    /// operationcount); None: the default duration.
    fn operations(&self) -> Option<u64> {
        None
    }
    /// Clients whose work the workload fixes (TPC-H's streams), as the transactions each
    /// runs before it ends (`Client::finished`); None: as many as `--clients`, for as long
    /// as `--time` or `--transactions` say.
    fn fixed_clients(&self) -> Option<Vec<u64>> {
        None
    }
    /// The clients the run starts when the workload runs only some of `--clients` (CH's side
    /// alone: the mix's terminals or its streams), as the first client's id and their count, so
    /// that each is the very client it is in the whole (its id, its seed); its options keep the
    /// number asked. None: all of them.
    fn clients_run(&self) -> Option<(u32, u32)> {
        None
    }
    /// Why this run cannot be split over processes (`run --shard`), in a sentence that says
    /// what to change; None: its clients can run in separate processes.
    fn shards_refused(&self) -> Option<String> {
        None
    }
    /// After the measured run, on the admin session: record what the run changed that
    /// `check` needs to know (YCSB: the inserts acknowledged).
    fn finish(&self, _session: &mut dyn Session) -> Result<(), Error> {
        Ok(())
    }
}

/// One client's side of a workload.
pub trait Client: Send {
    /// Choose the next transaction and draw its parameters; returns its type index.
    fn next(&mut self) -> usize;
    /// Draw the transaction types by `weights` (one per `Workload::transaction_types`, not all
    /// zero) from the next `next` on, as a phase of the run asks; None: by the workload's own
    /// mix again. Called only where `Workload::weighable`.
    fn weigh(&mut self, _weights: Option<&[f64]>) {}
    /// Execute the drawn transaction; called again after a retryable error. Returns how many
    /// statements it sent (for queries per second).
    fn execute(&mut self, session: &mut dyn Session) -> DbResult<u32>;
    /// Whether an error of this class is worth another try (by default: the engine's
    /// retryable classes).
    fn retryable(&self, class: &ErrorClass) -> bool {
        class.is_retryable()
    }
    /// Set when the client met an error it cannot go on after (a script's undefined variable):
    /// the runner then ends this client, as pgbench aborts one.
    fn aborted(&self) -> Option<String> {
        None
    }
    /// After a failed `execute`: pgbench's number (from 0) of the script's command that failed,
    /// for `--verbose-errors`' "got an error in command N (SQL) of script S"; None for a
    /// workload that runs no pgbench script.
    fn failed_command(&self) -> Option<usize> {
        None
    }
    /// After a successful `execute`: whether the transaction ended in a rollback the workload
    /// asked for (TPC-C's New-Order with an unused item), counted apart from errors.
    fn rolled_back(&self) -> bool {
        false
    }
    /// After `next`: how long the terminal waits before the drawn transaction starts (TPC-C's
    /// think and keying times), outside its latency. Zero by default.
    fn pause(&mut self) -> Duration {
        Duration::ZERO
    }
    /// After a transaction: whether the client has done all its work and ends (a TPC-H
    /// stream after its last query). False by default: the run's limit ends it.
    fn finished(&self) -> bool {
        false
    }
    /// When the run ends, told before the client's first transaction: a client that waits
    /// inside a transaction (a script's `\sleep`) stops waiting there.
    fn end_at(&mut self, _end: RunEnd) {}
}

/// When a run ends: the end of `-T` (None for a run counted in transactions), or Ctrl-C.
#[derive(Clone, Default)]
pub struct RunEnd {
    deadline: Option<Instant>,
    stop: Arc<AtomicBool>,
}

impl RunEnd {
    pub fn new(deadline: Option<Instant>, stop: Arc<AtomicBool>) -> RunEnd {
        RunEnd { deadline, stop }
    }

    /// Sleep for `d`, or until the run ends; false when it ended first.
    pub fn sleep(&self, d: Duration) -> bool {
        let wake = Instant::now() + d;
        loop {
            let now = Instant::now();
            if now >= wake {
                return true;
            }
            if self.stop.load(Ordering::Relaxed) || self.deadline.is_some_and(|e| now >= e) {
                return false;
            }
            let until = self.deadline.map_or(wake, |e| e.min(wake));
            crate::coop::sleep((until - now).min(Duration::from_millis(100)));
        }
    }
}

/// Loads tables with a progress bar, stopping when the user interrupts.
pub struct Loader<'a> {
    pub stop: &'a AtomicBool,
    pub quiet: bool,
}

impl Loader<'_> {
    /// Replace `table`'s contents with `rows` through the engine's bulk path.
    pub fn load(
        &self,
        session: &mut dyn Session,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
    ) -> Result<u64, Error> {
        let bar = self.bar(rows.total(), table);
        let started = Instant::now();
        let mut progress = |n: u64| {
            bar.inc(n);
            !self.stop.load(Ordering::Relaxed)
        };
        let result = session.bulk_load(table, columns, rows, &mut progress, Load::Replace);
        bar.finish_and_clear();
        let n = result.map_err(|e| db_error(e, &format!("loading {table}")))?;
        let secs = started.elapsed().as_secs_f64();
        if !self.quiet {
            errln!(
                "{table:>18}: {n} rows in {secs:.2} s ({:.0} rows/s)",
                n as f64 / secs.max(1e-9)
            );
        }
        Ok(n)
    }
}

impl Loader<'_> {
    /// A progress bar for a load (hidden when quiet); `load` makes its own, a load made of
    /// several appends shares one.
    pub fn bar(&self, total: u64, what: &str) -> indicatif::ProgressBar {
        let bar = if self.quiet {
            indicatif::ProgressBar::hidden()
        } else {
            indicatif::ProgressBar::new(total)
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg:>18} [{bar:30}] {human_pos}/{human_len} rows, {per_sec}, eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_message(what.to_string());
        bar
    }

    /// Add `rows` to `table` through the engine's bulk path, counting them on `bar`; several
    /// sessions may append to the same table at once.
    pub fn append(
        &self,
        session: &mut dyn Session,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        bar: &indicatif::ProgressBar,
    ) -> Result<u64, Error> {
        let mut progress = |n: u64| {
            bar.inc(n);
            !self.stop.load(Ordering::Relaxed)
        };
        session
            .bulk_load(table, columns, rows, &mut progress, Load::Append)
            .map_err(|e| db_error(e, &format!("loading {table}")))
    }
}

/// Run `jobs` numbered jobs on `workers` sessions (the first is `first`, the others opened
/// here), each session taking the next job until none is left; the first error stops the
/// others and is returned. A session that cannot connect leaves its jobs to the others.
pub fn in_parallel(
    engine: &dyn Engine,
    first: &mut dyn Session,
    workers: usize,
    jobs: usize,
    job: &(dyn Fn(&mut dyn Session, usize) -> Result<(), Error> + Sync),
) -> Result<(), Error> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let error: std::sync::Mutex<Option<Error>> = std::sync::Mutex::new(None);
    let work = |s: &mut dyn Session| {
        while !failed.load(Ordering::Relaxed) {
            let n = next.fetch_add(1, Ordering::Relaxed);
            if n >= jobs {
                break;
            }
            if let Err(e) = job(s, n) {
                failed.store(true, Ordering::Relaxed);
                error.lock().expect("error lock").get_or_insert(e);
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..workers.min(jobs) {
            scope.spawn(|| match engine.connect() {
                Ok(mut s) => work(s.as_mut()),
                Err(e) => errln!("a loading session could not connect: {}", e.message),
            });
        }
        work(first);
    });
    match error.into_inner().expect("error lock") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// An UPDATE of a row that must exist changed `updated` rows: one that matched none would let
/// the transaction commit in part (Firebird 3 has been seen to skip a row that way,
/// docs/connecting.md), so it fails as `missed_row`, retryable, and the transaction is rolled
/// back.
pub fn one_row(updated: u64, table: &str) -> DbResult<()> {
    rows_changed(updated, 1, table)
}

/// As `one_row`, for an UPDATE of `want` rows that must all exist.
pub fn rows_changed(updated: u64, want: u64, table: &str) -> DbResult<()> {
    if updated == want {
        return Ok(());
    }
    Err(DbError::new(
        ErrorClass::MissedRow,
        format!(
            "UPDATE {table} matched {updated} rows instead of {want}; the transaction is rolled back"
        ),
    ))
}

/// Turn a database error met outside the measured run into a user-facing error.
pub fn db_error(e: DbError, doing: &str) -> Error {
    match e.class {
        ErrorClass::Interrupted => Error::Interrupted,
        _ => Error::Database(format!("{doing} failed: {}", e.message)),
    }
}

/// Run every statement of a list, naming the step in errors.
pub fn run_all(session: &mut dyn Session, statements: &[String], doing: &str) -> Result<(), Error> {
    for sql in statements {
        session.batch(sql).map_err(|e| db_error(e, doing))?;
    }
    Ok(())
}

/// Put a session at serializable isolation with the dialect's `isolation_serializable`
/// statements: the workloads that run at serializable set it on each client's session and on
/// the run's own (from which every result reads the level in effect).
pub fn set_serializable(sql: &SqlSet, session: &mut dyn Session) -> DbResult<()> {
    for stmt in sql.statements("isolation_serializable", &[]) {
        session.batch(&stmt)?;
    }
    Ok(())
}

/// The opening of every `prepare`: drop what an earlier `prepare` made, forget the facts it
/// recorded (those named with the prefix `facts`), and create the tables anew; `what` names
/// the tables in errors ("the tpcb tables").
pub fn start_over(
    session: &mut dyn Session,
    facts: &str,
    drop: &[String],
    create: &[String],
    what: &str,
) -> Result<(), Error> {
    clear_out(session, facts, drop, what)?;
    run_all(session, create, &format!("creating {what}"))
}

/// The whole `prepare` of a workload whose SQL has `drop`, `create`, `keys` and `analyze`
/// sections (`{plain}` the engine's table options): start over, load the rows (`load`, whose
/// outcome is returned), add the keys, analyze. `name` is the workload's, its facts' prefix.
pub fn prepare_sections<T>(
    engine: &dyn Engine,
    s: &mut dyn Session,
    sql: &crate::sql::SqlSet,
    name: &str,
    load: impl FnOnce(&mut dyn Session) -> Result<T, Error>,
) -> Result<T, Error> {
    let plain = engine.table_options(None);
    let vars = [("plain", plain.as_str())];
    let tables = format!("the {name} tables");
    start_over(
        s,
        &format!("{name}."),
        &sql.statements("drop", &vars),
        &sql.statements("create", &vars),
        &tables,
    )?;
    let loaded = load(s)?;
    run_all(
        s,
        &sql.statements("keys", &vars),
        &format!("adding the {name} keys"),
    )?;
    run_all(
        s,
        &sql.statements("analyze", &vars),
        &format!("analyzing {tables}"),
    )?;
    Ok(loaded)
}

/// A run's ledger (`text`), recorded under a name of its own made from `prefix`, the process
/// and the time: the shards of one run each add theirs.
pub fn record_ledger(s: &mut dyn Session, prefix: &str, text: &str) -> Result<(), Error> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{prefix}{}.{nanos}", std::process::id());
    record_fact(s, &name, text)
}

/// The end of every `cleanup` (and the opening of `start_over`): drop what `prepare` made and
/// forget the facts it recorded (those named with the prefix `facts`); `what` names what is
/// dropped in errors ("the tpcb tables").
pub fn clear_out(
    session: &mut dyn Session,
    facts: &str,
    drop: &[String],
    what: &str,
) -> Result<(), Error> {
    run_all(session, drop, &format!("dropping {what}"))?;
    meta_clear(session, facts).map_err(|e| db_error(e, "clearing dbduel_facts"))
}

/// The facts table, in SQL every engine takes (no IF NOT EXISTS, no reserved word as a column).
const META_CREATE: &str =
    "CREATE TABLE dbduel_facts (name varchar(100) NOT NULL PRIMARY KEY, fact varchar(1000))";

/// `meta_set` outside a measured run, its error named by step.
pub fn record_fact(session: &mut dyn Session, name: &str, value: &str) -> Result<(), Error> {
    meta_set(session, name, value).map_err(|e| db_error(e, "writing dbduel_facts"))
}

/// Record a fact about the prepared data (kept in the dbduel_facts table).
pub fn meta_set(session: &mut dyn Session, name: &str, value: &str) -> DbResult<()> {
    match session.query_text("SELECT count(*) FROM dbduel_facts") {
        Err(e) if e.class == ErrorClass::UndefinedTable => session.batch(META_CREATE)?,
        other => drop(other?),
    }
    session.batch(&format!("DELETE FROM dbduel_facts WHERE name = '{name}'"))?;
    session.batch(&format!(
        "INSERT INTO dbduel_facts (name, fact) VALUES ('{name}', '{value}')"
    ))
}

/// Read a fact recorded by `meta_set`; None when absent (or when the table does not exist).
pub fn meta_get(session: &mut dyn Session, name: &str) -> Option<String> {
    let rows = session
        .query_text(&format!(
            "SELECT fact FROM dbduel_facts WHERE name = '{name}'"
        ))
        .ok()?;
    rows.first().and_then(|r| r.first()).map(Value::to_string)
}

/// Forget the facts recorded under a prefix (on cleanup and re-prepare).
/// The table is dropped when nothing is left in it; a missing table is not an error.
pub fn meta_clear(session: &mut dyn Session, prefix: &str) -> DbResult<()> {
    let cleared = session.batch(&format!(
        "DELETE FROM dbduel_facts WHERE name LIKE '{prefix}%'"
    ));
    match cleared {
        Err(e) if e.class == ErrorClass::UndefinedTable => return Ok(()),
        other => other?,
    }
    drop_facts_if_empty(session)
}

fn drop_facts_if_empty(session: &mut dyn Session) -> DbResult<()> {
    let left = session.query_text("SELECT count(*) FROM dbduel_facts")?;
    if left.first().and_then(|r| r[0].as_i64()) == Some(0) {
        session.batch("DROP TABLE dbduel_facts")?;
    }
    Ok(())
}

/// The fact that says how `prepare` of a dataset went: "running" is written before its first
/// table is dropped, "done" after its last step, so an interrupted prepare (Ctrl-C, a lost
/// connection, a killed process) leaves "running" behind.
fn prepare_fact(dataset: &str) -> String {
    format!("prepare.{dataset}")
}

const PREPARE_RUNNING: &str = "running";
const PREPARE_DONE: &str = "done";

/// Run a workload's `prepare` between the two records of its dataset's completion.
pub fn prepare_recorded(
    workload: &dyn Workload,
    engine: &dyn Engine,
    session: &mut dyn Session,
    loader: &Loader,
) -> Result<(), Error> {
    let Some(dataset) = workload.dataset() else {
        return workload.prepare(engine, session, loader);
    };
    let fact = prepare_fact(&dataset);
    record_fact(session, &fact, PREPARE_RUNNING)?;
    workload.prepare(engine, session, loader)?;
    record_fact(session, &fact, PREPARE_DONE)
}

/// Refuse to run or check on data whose `prepare` did not finish. Data without the record
/// (prepared by pgbench or sysbench themselves, or by an older dbduel) is taken as it is. A
/// workload without a dataset of its own (a script) is refused when any dataset is unfinished.
pub fn refuse_unfinished(workload: &dyn Workload, session: &mut dyn Session) -> Result<(), Error> {
    let Ok(rows) = session.query_text(&format!(
        "SELECT name, fact FROM dbduel_facts WHERE name LIKE '{}%'",
        prepare_fact("")
    )) else {
        return Ok(());
    };
    let wanted = workload.dataset().map(|d| prepare_fact(&d));
    for row in rows {
        let (name, fact) = (row[0].to_string(), row[1].to_string());
        let ours = wanted.as_ref().is_none_or(|w| *w == name);
        if ours && fact != PREPARE_DONE {
            let dataset = name.trim_start_matches(&prepare_fact(""));
            return Err(Error::Usage(format!(
                "prepare did not finish: run it again (the {dataset} data in this database is incomplete; `dbduel prepare` it with the same --dsn)"
            )));
        }
    }
    Ok(())
}

/// Forget a dataset's completion record (on cleanup); the table goes when nothing is left.
pub fn prepare_forget(workload: &dyn Workload, session: &mut dyn Session) -> Result<(), Error> {
    let Some(dataset) = workload.dataset() else {
        return Ok(());
    };
    let fact = prepare_fact(&dataset);
    let forgot = session.batch(&format!("DELETE FROM dbduel_facts WHERE name = '{fact}'"));
    match forgot {
        Err(e) if e.class == ErrorClass::UndefinedTable => return Ok(()),
        other => other.map_err(|e| db_error(e, "clearing dbduel_facts"))?,
    }
    drop_facts_if_empty(session).map_err(|e| db_error(e, "clearing dbduel_facts"))
}

/// The index `u` (uniform in [0, 1)) falls on among `weights` (not all zero): a phase's mix.
pub fn weighted(weights: &[f64], u: f64) -> usize {
    let total: f64 = weights.iter().sum();
    let mut at = u * total;
    for (i, w) in weights.iter().enumerate() {
        if at < *w {
            return i;
        }
        at -= w;
    }
    weights.iter().rposition(|w| *w > 0.0).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::take_held;

    #[test]
    fn the_held_scale_wins_and_a_different_one_given_is_named() {
        let mut given = 5;
        let warning = take_held(&mut given, 1, "--scale", "scale 1".into());
        assert_eq!(given, 1);
        assert_eq!(
            warning.as_deref(),
            Some("--scale 5 ignored: the database holds scale 1")
        );
        let mut none_given = 0;
        assert_eq!(
            take_held(&mut none_given, 3, "--scale", "scale 3".into()),
            None
        );
        assert_eq!(none_given, 3);
        let mut same = 3;
        assert_eq!(take_held(&mut same, 3, "--scale", "scale 3".into()), None);
    }
}
