//! Runs the clients: one connection each and one OS thread each, or many on a thread as
//! coroutines (`threads`, `coop`) (ids `first_client..`, so that a shard
//! runs its part of the run's ids), started together after all have connected (at `--start-at`'s
//! wall-clock time when given), closed loop or paced by a Poisson schedule (open loop), retries of
//! retryable errors, reconnection after a lost connection (until the end of `-T`, the time without
//! a connection counted; the client's session bound to the new one, its workload's state kept),
//! how the clients hold their connections (`connections.rs`: `-C`, a connection's end of life, idle
//! connections beside them, every connect timed, the clients' storm), and the end of a timed run
//! (`Running::watch`): a client still inside a transaction a grace after the end is cancelled
//! through `Session::canceller`, then its socket is shut down and it is named as stuck; a client
//! still getting a new connection then is counted lost; a wait inside a transaction (a script's
//! `\sleep`) stops at the end through `workload::RunEnd`. A lost connection is torn down on a
//! thread of its own, so that every lost connection is counted, reconnected or its client lost. A
//! client whose workload reports `Client::aborted` (a script's run-time error: pgbench's aborted
//! client) is ended and counted under lost clients. At its end each client sends what its
//! connection counted of its own time over the measured window, on an engine that counts it
//! (`Session::connection_figures`: SQLite).
//!
//! Threads and blocking connections, not a runtime: a waiting client costs no CPU and no wake-ups
//! but its own, no scheduler sits between a client and its socket, and 256 clients peak at about
//! 20-27 MiB (BENCHMARKS.md). Past `CLIENTS_PER_CORE_ALONE` clients a core (or with `-j`), where
//! the engine's sockets can park a coroutine and it shares threads unasked
//! (`Engine::shares_threads_unasked`: PostgreSQL; MariaDB only with `-j`), the same client code
//! runs as coroutines, 8 clients a thread (one to four threads a core); the start's gates and the sleeps then park instead of blocking, and each
//! thread's clocks (`ThreadWindow`) cover all its clients.
//!
//! Each client's session is `statements::Timed`, the statement clock over the engine's (pgbench's
//! -r; `RunConfig::statements`): it keeps each statement's histogram per client and sends them
//! once, at the client's end.
//!
//! Emits one `Event` per transaction on a channel and nothing else (sent in batches: one channel
//! operation per 256 transactions or 50 ms, whichever comes first, over an unbounded channel that
//! point.rs drains every 100 ms): measuring is the consumers' business.

pub mod connections;
pub mod shape;
mod statements;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::figures::ConnectionFigures;
use crate::engine::{Cancel, DbError, Engine, ErrorClass, Session};
use crate::error::Error;
use crate::event::{ConnectCause, Event, Sample};
use crate::workload::{Client, RunEnd, Workload};

/// When the run ends.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    /// Measured seconds (after the warm-up).
    Time(Duration),
    /// Measured transactions per client (after the warm-up).
    Transactions(u64),
}

#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The clients this process runs, with ids `first_client..first_client + clients`.
    pub clients: u32,
    /// The first client's id: 0, or where this shard's part of the run's clients begins.
    pub first_client: u32,
    pub limit: Limit,
    pub warmup: Duration,
    /// Total transactions per second for the open loop; None for the closed loop.
    pub rate: Option<f64>,
    /// Tries per transaction; 0 until `bench::run_point` puts the workload's default in its place.
    pub max_tries: u32,
    pub seed: u64,
    /// Release the connected clients at this wall-clock time (`--start-at`), not at once.
    pub start_at: Option<std::time::SystemTime>,
    /// Time every statement on the client (`--no-statement-latencies`: not).
    pub statements: bool,
    /// The phases of a run whose load changes shape (`--phase`): then `rate` is None and the
    /// limit is the phases' time.
    pub shape: Option<Arc<shape::Shape>>,
    /// How the clients hold their connections (`-C`, lifetimes, idle ones beside them).
    pub connections: connections::ConnectionPlan,
    /// `-L`: transactions slower than this are late; in an open loop, one later than this
    /// when its turn comes is skipped (pgbench's latency limit).
    pub latency_limit: Option<Duration>,
    /// `-j`: the threads that run the clients, many on each (`coop`); None: chosen by
    /// `threads` from the clients and the cores.
    pub threads: Option<u32>,
    /// `--verbose-errors` (pgbench's): every error a client meets, and whether the
    /// transaction is tried again or ends failed, on stderr.
    pub verbose_errors: bool,
    /// `--stall-timeout`: a run of `-t` in which a client has been inside one transaction this
    /// long and no transaction has finished for as long is stalled, and ended as a timed run
    /// ends (`Running::watch`). None: the workload's (`Workload::stall_timeout`); zero: never.
    pub stall_timeout: Option<Duration>,
}

/// Why the clients cannot share threads on this engine and workload (None: they can).
pub fn alone_why(engine: &dyn Engine, workload: &dyn Workload) -> Option<String> {
    if !engine.multiplexed() {
        Some(format!(
            "{}'s clients keep a thread each (its driver would block a shared thread)",
            engine.name()
        ))
    } else if !workload.multiplexed() {
        Some(format!(
            "{}'s clients keep a thread each (they wait on each other)",
            workload.name()
        ))
    } else {
        None
    }
}

/// Clients per core past which clients share threads when `-j` is not given (`threads`).
pub const CLIENTS_PER_CORE_ALONE: u32 = 8;

/// Past that, a thread for every this many clients, at least a thread per core and at most
/// `THREADS_PER_CORE` a core: the kernel shares a core's time among the threads ready to run,
/// and a server runs a thread or a process per connection, so a client on a thread per core
/// waited for a core behind the server's many (measured: a thread per 8 clients made 4-25% more
/// tps at 32 to 400 clients than a thread per core, at the same or less CPU per transaction;
/// BENCHMARKS.md).
pub const CLIENTS_PER_THREAD: u32 = 8;
pub const THREADS_PER_CORE: u32 = 4;

/// How many threads run the clients: None for a thread per client, Some(t) for t threads
/// with many clients on each (`coop`). Only where every client's waits can park a coroutine:
/// an engine whose sockets go through `coop::Coop` and a workload whose clients never wait on
/// each other through a lock. `-j` asks for a number; without it clients share threads once
/// they are more than `CLIENTS_PER_CORE_ALONE` a core, `CLIENTS_PER_THREAD` a thread, on an
/// engine that shares them unasked (`Engine::shares_threads_unasked`: PostgreSQL).
pub fn threads(engine: &dyn Engine, workload: &dyn Workload, cfg: &RunConfig) -> Option<u32> {
    if alone_why(engine, workload).is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    match cfg.threads {
        None if !engine.shares_threads_unasked() => None,
        asked => threads_for(cfg.clients, asked, cores),
    }
}

/// `threads`' rule, where clients may share threads: `-j` as asked, else past
/// `CLIENTS_PER_CORE_ALONE` clients a core a thread per `CLIENTS_PER_THREAD` clients, between
/// one and `THREADS_PER_CORE` a core; None when that is a thread per client anyway.
fn threads_for(clients: u32, asked: Option<u32>, cores: u32) -> Option<u32> {
    let t = match asked {
        Some(j) => j.max(1),
        None if clients > CLIENTS_PER_CORE_ALONE * cores => {
            (clients / CLIENTS_PER_THREAD).clamp(cores, THREADS_PER_CORE * cores)
        }
        None => return None,
    };
    (t < clients).then_some(t)
}

/// How long a transaction may go on past the end of a timed run before it is cancelled; a
/// cancelled client gets twice as long to return before its connection is given up.
pub const GRACE: Duration = Duration::from_secs(1);

/// How a lost client's line ends when it was stuck in a transaction at the run's end and its
/// cancel got no answer: the server stopped answering (`unanswered` counts them).
pub const NO_ANSWER: &str = "cancelled, no answer, its connection given up";

/// The lost clients whose cancel got no answer (`NO_ANSWER`).
pub fn unanswered(lost_clients: &[String]) -> u32 {
    lost_clients
        .iter()
        .filter(|l| l.ends_with(NO_ANSWER))
        .count() as u32
}

/// How long after the cancel a client whose engine has no cancel (Firebird) may take: it may
/// be waiting on a lock, and Firebird settles deadlocks only after its DeadlockTimeout (10 s),
/// later still on a loaded machine.
const NO_CANCEL_WAIT: Duration = Duration::from_secs(60);

/// Where the end of a timed run stands.
#[derive(Clone, Copy, PartialEq)]
enum Ending {
    Running,
    Cancelled(Instant),
    Abandoned(Instant),
}

/// A run in progress: the clients' threads and the instant they started together.
pub struct Running {
    pub start: Instant,
    handles: Vec<JoinHandle<()>>,
    live: Arc<AtomicUsize>,
    shared: Arc<Shared>,
    ending: Ending,
    /// `--idle-connections`, closed when the run is joined.
    idle: connections::Idle,
    /// When the run was stopped short (Ctrl-C, a doomed run) or found stalled: its end from then.
    cut: Option<Instant>,
    /// Why a run of `-t` was ended as stalled (`--stall-timeout`).
    stalled: Option<String>,
}

impl Running {
    pub fn finished(&self) -> bool {
        self.live.load(Ordering::Acquire) == 0
    }

    /// Called by the measuring loop with the end of the last transaction it has seen (µs from
    /// the start): true once there is nothing more to wait for. Past the end of a timed run,
    /// of a run stopped short, or of a run of `-t` found stalled (`stalled_now`), clients still
    /// inside a transaction are cancelled (after `GRACE`), then their connections shut down
    /// and each named as stuck (after `2 * GRACE`); a client that returns from none of that is
    /// left behind (after another `GRACE`).
    pub fn watch(&mut self, last_done_us: u64) -> bool {
        if self.finished() {
            return true;
        }
        let now = Instant::now();
        if self.cut.is_none() && self.shared.stop.load(Ordering::Relaxed) {
            self.cut = Some(now);
        }
        if self.cut.is_none()
            && let Some(why) = self.stalled_now(last_done_us, now)
        {
            self.stalled = Some(why);
            self.cut = Some(now);
            self.shared.stop.store(true, Ordering::SeqCst);
        }
        let cfg = &self.shared.cfg;
        let timed = match cfg.limit {
            Limit::Time(t) => Some(self.start + cfg.warmup + t),
            Limit::Transactions(_) => None,
        };
        // A run stopped short ends then: its clients' graces count from there.
        let Some(end) = [timed, self.cut].into_iter().flatten().min() else {
            return false;
        };
        match self.ending {
            Ending::Running if now >= end + GRACE => {
                self.shared.ending.store(true, Ordering::SeqCst);
                for (_, door) in self.busy_clients() {
                    let Some(door) = door else { continue };
                    // Each on a thread of its own: a stalled server may not even answer this.
                    std::thread::spawn(move || {
                        let _ = door.cancel();
                    });
                }
                self.ending = Ending::Cancelled(now);
            }
            Ending::Cancelled(at) if now >= at + 2 * GRACE => {
                let busy = self.busy_clients();
                // Without a cancel, a client may only be waiting on a lock: wait that out.
                if busy.iter().any(|(_, door)| door.is_none()) && now < at + NO_CANCEL_WAIT {
                    return false;
                }
                let mut stuck = Vec::new();
                for (slot, door) in busy {
                    let id = slot as u32 + cfg.first_client;
                    let what = match door {
                        Some(door) => {
                            door.abandon();
                            NO_ANSWER
                        }
                        None => "its engine has no cancel: left behind",
                    };
                    let since = self.shared.busy[slot]
                        .load(Ordering::Acquire)
                        .saturating_sub(1);
                    let busy_s = (now - self.start).as_secs_f64() - since as f64 / 1e6;
                    stuck.push(Event::ClientLost(format!(
                        "client {id} was stuck in a transaction for {busy_s:.1} s at the end of the run: {what}"
                    )));
                }
                stuck.extend(self.still_reconnecting(now));
                let _ = self.shared.events.send(stuck);
                self.ending = Ending::Abandoned(now);
            }
            Ending::Abandoned(at) if now >= at + GRACE => return true,
            _ => {}
        }
        false
    }

    /// Why a run of `-t` is stalled now: a client has been inside one transaction for
    /// `--stall-timeout` and no transaction has finished for as long (a timed run ends anyway;
    /// a paced client waiting its turn is not stalled).
    fn stalled_now(&self, last_done_us: u64, now: Instant) -> Option<String> {
        let cfg = &self.shared.cfg;
        if !matches!(cfg.limit, Limit::Transactions(_)) {
            return None;
        }
        let after = cfg
            .stall_timeout
            .unwrap_or_else(|| self.shared.workload.stall_timeout());
        if after.is_zero() {
            return None;
        }
        let since_start = |us: u64| self.start + Duration::from_micros(us);
        if now < since_start(last_done_us) + after {
            return None;
        }
        let oldest = self
            .shared
            .busy
            .iter()
            .map(|b| b.load(Ordering::Acquire))
            .filter(|&since| since != 0)
            .min()?;
        (now >= since_start(oldest - 1) + after).then(|| {
            format!(
                "no transaction finished for {} s while a client waited inside one (a stalled server?): the run was stopped there; --stall-timeout SECONDS waits longer, 0 never stops",
                after.as_secs_f64()
            )
        })
    }

    /// Why the run was ended as stalled, if it was.
    pub fn stalled(&self) -> Option<&str> {
        self.stalled.as_deref()
    }

    /// The clients still getting a new connection at the end of the run, each lost: its
    /// thread is not waited for (a connection attempt may block for its whole timeout), so
    /// every connection lost is accounted for, reconnected or its client lost.
    fn still_reconnecting(&self, now: Instant) -> Vec<Event> {
        let cfg = &self.shared.cfg;
        (0..self.shared.reconnecting.len())
            .filter_map(|slot| {
                let since = self.shared.reconnecting[slot].swap(0, Ordering::AcqRel);
                (since != 0).then(|| {
                    let id = slot as u32 + cfg.first_client;
                    let lost_s = (now - self.start).as_secs_f64() - (since - 1) as f64 / 1e6;
                    Event::ClientLost(format!(
                        "client {id} was still getting a new connection at the end of the run, {lost_s:.1} s after it lost its own"
                    ))
                })
            })
            .collect()
    }

    /// The clients inside a transaction now (by slot: id less `first_client`), with their
    /// cancel handles (if their engine has one).
    fn busy_clients(&self) -> Vec<(usize, Option<Arc<dyn Cancel>>)> {
        let doors = self.shared.doors.lock().expect("doors lock");
        (0..doors.len())
            .filter(|&slot| self.shared.busy[slot].load(Ordering::Acquire) != 0)
            .map(|slot| (slot, doors[slot].clone()))
            .collect()
    }

    /// Wait for the clients' threads; one left behind by `watch` is not waited for.
    pub fn join(self) {
        let gave_up = matches!(self.ending, Ending::Abandoned(_)) && !self.finished();
        self.idle.close();
        for h in self.handles {
            if !gave_up || h.is_finished() {
                let _ = h.join();
            }
        }
    }
}

struct Shared {
    engine: Arc<dyn Engine>,
    workload: Arc<dyn Workload>,
    cfg: RunConfig,
    stop: Arc<AtomicBool>,
    events: Sender<Vec<Event>>,
    start: Mutex<Option<Instant>>,
    failed: Mutex<Option<String>>,
    /// Passed when every client has connected (or failed to).
    connected: Barrier,
    /// Passed when the start instant is fixed.
    go: Barrier,
    live: Arc<AtomicUsize>,
    /// Per client: 0 when idle, else 1 + the microsecond (since the start) its transaction began.
    busy: Vec<AtomicU64>,
    /// Per client: 0 unless it is getting a new connection, else 1 + the microsecond (since
    /// the start) it lost the old one. Whoever swaps it back to 0 reports the outcome: the
    /// client (reconnected, or lost), or the end of the run (lost, when it is still trying).
    reconnecting: Vec<AtomicU64>,
    /// Per client: how to cancel its statement, once connected.
    doors: Mutex<Vec<Option<Arc<dyn Cancel>>>>,
    /// The end of the run has come and clients are being cancelled: no retry, no new work.
    ending: AtomicBool,
    /// The server's notices printed so far: each text once, whichever client it came to.
    notices: Mutex<std::collections::HashSet<String>>,
}

impl Shared {
    /// Print the server's notices to a client's statements (a script's `RAISE NOTICE`, a
    /// `COMMIT` outside a transaction's WARNING) as its own client prints them, each text
    /// the first time only: pgbench prints every one, thousands a second in a run.
    fn notices(&self, notices: Vec<String>) {
        let mut seen = self.notices.lock().expect("notices lock");
        for n in notices {
            if seen.len() < 1000 && !seen.contains(&n) {
                errln!("{n}");
                seen.insert(n);
            }
        }
    }
}

/// Connect every client, then release them all at once. A client that cannot connect fails
/// the whole run before anything is measured.
pub fn start(
    engine: Arc<dyn Engine>,
    workload: Arc<dyn Workload>,
    cfg: RunConfig,
    stop: Arc<AtomicBool>,
    events: Sender<Vec<Event>>,
) -> Result<Running, Error> {
    let n = cfg.clients as usize;
    let threads = threads(engine.as_ref(), workload.as_ref(), &cfg);
    // The gates' parties: each client's thread, or each thread running many, and this one.
    let parties = threads.map_or(n, |t| t as usize) + 1;
    let live = Arc::new(AtomicUsize::new(n));
    let shared = Arc::new(Shared {
        engine,
        workload,
        cfg,
        stop,
        events,
        start: Mutex::new(None),
        failed: Mutex::new(None),
        connected: Barrier::new(parties),
        go: Barrier::new(parties),
        live: live.clone(),
        busy: (0..n).map(|_| AtomicU64::new(0)).collect(),
        reconnecting: (0..n).map(|_| AtomicU64::new(0)).collect(),
        doors: Mutex::new(vec![None; n]),
        ending: AtomicBool::new(false),
        notices: Mutex::new(std::collections::HashSet::new()),
    });
    let mut handles = Vec::with_capacity(parties - 1);
    let storm = Instant::now();
    let first = shared.cfg.first_client;
    let ids = first..first + shared.cfg.clients;
    match threads {
        None => {
            for id in ids {
                let shared = shared.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("client-{id}"))
                    .stack_size(512 * 1024)
                    .spawn(move || client_thread(&shared, id))
                    .map_err(|source| Error::Thread { id, source })?;
                handles.push(handle);
            }
        }
        Some(t) => {
            for k in 0..t {
                // Clients dealt round the threads: each thread gets every t-th id.
                let mine: Vec<u32> = ids.clone().skip(k as usize).step_by(t as usize).collect();
                let shared = shared.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("clients-{k}"))
                    .spawn(move || clients_thread(&shared, mine))
                    .map_err(|source| Error::Thread {
                        id: first + k,
                        source,
                    })?;
                handles.push(handle);
            }
        }
    }
    shared.connected.wait();
    let _ = shared
        .events
        .send(vec![Event::Storm(shared.cfg.clients, storm.elapsed())]);
    let idle = open_idle(&shared);
    if let Some(at) = shared.cfg.start_at {
        wait_until(at, &shared.stop);
    }
    *shared.start.lock().expect("start lock") = Some(Instant::now());
    shared.go.wait();
    // The guard must be gone before joining: the clients read `failed` on their way out.
    let failed = shared.failed.lock().expect("failed lock").clone();
    if let Some(msg) = failed {
        for h in handles {
            let _ = h.join();
        }
        return Err(Error::Connect(msg));
    }
    let start = shared.start.lock().expect("start lock").expect("start set");
    Ok(Running {
        start,
        handles,
        live,
        shared,
        ending: Ending::Running,
        idle,
        cut: None,
        stalled: None,
    })
}

/// `--idle-connections`, opened once the clients are connected and before they are released;
/// a refusal fails the run as a client's would.
fn open_idle(shared: &Shared) -> connections::Idle {
    let n = shared.cfg.connections.idle_connections;
    if n == 0 || shared.failed.lock().expect("failed lock").is_some() {
        return connections::Idle::none();
    }
    let began = Instant::now();
    match connections::open_idle(&shared.engine, n) {
        Ok((idle, took)) => {
            let mut opened: Vec<Event> = took
                .into_iter()
                .map(|t| Event::Connected(ConnectCause::Idle, t))
                .collect();
            opened.push(Event::IdleOpened(began.elapsed()));
            let _ = shared.events.send(opened);
            idle
        }
        Err(e) => {
            let why = format!("an idle connection ({n} idle asked): {}", e.message);
            shared
                .failed
                .lock()
                .expect("failed lock")
                .get_or_insert(why);
            connections::Idle::none()
        }
    }
}

/// Sleep until the wall clock reaches `at` (`--start-at`), or until Ctrl-C.
fn wait_until(at: std::time::SystemTime, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        let Ok(left) = at.duration_since(std::time::SystemTime::now()) else {
            return;
        };
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

struct ClientState {
    session: statements::Timed,
    client: Box<dyn Client>,
    /// Draws the pauses between retries, apart from the workload's own streams.
    backoff: SmallRng,
    /// Its connection's life (`connections`).
    life: connections::Life,
}

fn connect(shared: &Shared, id: u32) -> Result<ClientState, DbError> {
    let (first, took) = connections::open(shared.engine.as_ref())?;
    let _ = shared
        .events
        .send(vec![Event::Connected(ConnectCause::Initial, took)]);
    let mut session = statements::Timed::new(first, shared.cfg.statements);
    let seed = shared
        .cfg
        .seed
        .wrapping_add(u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let client = shared
        .workload
        .client(shared.engine.as_ref(), &mut session, id, seed)?;
    shared.doors.lock().expect("doors lock")[slot(shared, id)] = session.canceller();
    let backoff = SmallRng::seed_from_u64(seed ^ 0xB5AD_4ECE_DA1C_E2A9);
    Ok(ClientState {
        session,
        client,
        backoff,
        life: connections::Life::new(),
    })
}

impl ClientState {
    /// Its connection, unless it has none (-C between transactions).
    fn connected(&mut self) -> Option<&mut dyn Session> {
        self.life.bound.then(|| self.session.untimed())
    }
}

/// Where client `id` keeps its state in this process's arrays.
fn slot(shared: &Shared, id: u32) -> usize {
    (id - shared.cfg.first_client) as usize
}

/// Counts a client out when its thread ends, however it ends.
struct Alive<'a>(&'a AtomicUsize);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A panic's message, as the panic hook shows it.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// A thread of its own for client `id`.
fn client_thread(shared: &Shared, id: u32) {
    client(shared, id);
    thread_window_close(shared);
}

/// A thread running many clients, each a coroutine (`coop`): it passes the run's gates for them
/// all, once every one of them has reached the gate.
fn clients_thread(shared: &Arc<Shared>, ids: Vec<u32>) {
    let count = ids.len();
    let tasks: Vec<Box<dyn FnOnce() + Send>> = ids
        .into_iter()
        .map(|id| {
            let shared = shared.clone();
            Box::new(move || client(&shared, id)) as Box<dyn FnOnce() + Send>
        })
        .collect();
    let gates = |k: usize| {
        if k == 0 {
            shared.connected.wait();
        } else {
            shared.go.wait();
        }
    };
    match crate::coop::run(tasks, 2, gates) {
        Ok(panics) => {
            // A client catches its own panics; one that escaped is lost all the same.
            let lost = panics
                .iter()
                .map(|p| Event::ClientLost(format!("a client panicked: {}", panic_message(&**p))));
            let _ = shared.events.send(lost.collect());
        }
        Err(e) => {
            // Nothing ran: fail the run as a refused connection would, and pass the gates.
            shared
                .failed
                .lock()
                .expect("failed lock")
                .get_or_insert_with(|| format!("cannot run {count} clients on a thread: {e}"));
            shared.live.fetch_sub(count, Ordering::AcqRel);
            shared.connected.wait();
            shared.go.wait();
        }
    }
    thread_window_close(shared);
}

/// One client, from its connection to its end, on a thread of its own or as a coroutine.
fn client(shared: &Shared, id: u32) {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let _alive = Alive(&shared.live);
    // A panic while connecting fails the run like a refused connection, and never leaves the
    // other threads waiting at the barrier.
    let mut state = catch_unwind(AssertUnwindSafe(|| connect(shared, id))).unwrap_or_else(|p| {
        Err(DbError::new(
            ErrorClass::Other("panic".into()),
            format!(
                "client {id} panicked while connecting: {}",
                panic_message(&*p)
            ),
        ))
    });
    if let Err(e) = &state {
        let mut failed = shared.failed.lock().expect("failed lock");
        failed.get_or_insert_with(|| e.message.clone());
    }
    crate::coop::gate(|| {
        shared.connected.wait();
    });
    if let Ok(state) = &mut state {
        connections::release_initial(shared, id, state);
    }
    crate::coop::gate(|| {
        shared.go.wait();
    });
    // Read both under short-lived locks: a guard held across the run would serialise the clients.
    let any_failed = shared.failed.lock().expect("failed lock").is_some();
    let start = *shared.start.lock().expect("start lock");
    if let (Ok(state), false, Some(start)) = (state, any_failed, start) {
        // A client that panics is lost, with its message, and the run exits 1.
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| run_client(shared, id, state, start))) {
            let lost = format!("client {id} panicked: {}", panic_message(&*p));
            let _ = shared.events.send(vec![Event::ClientLost(lost)]);
        }
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// A transaction's end from the run's start and its latency from `planned`, in microseconds, on
/// one clock: the start the figures read back (end - latency) is `planned`'s own microsecond,
/// so a transaction a phase started just before its end stays in it (rounding end and latency
/// apart could move it a microsecond later, into the next phase).
fn end_and_latency_us(start: Instant, planned: Instant, end: Instant) -> (u64, u64) {
    let end_us = micros(end - start);
    let start_us = micros(planned.saturating_duration_since(start));
    (end_us, end_us.saturating_sub(start_us))
}

fn run_client(shared: &Shared, id: u32, mut state: ClientState, start: Instant) {
    let cfg = &shared.cfg;
    let warmup_end = start + cfg.warmup;
    let deadline = match cfg.limit {
        Limit::Time(t) => Some(warmup_end + t),
        Limit::Transactions(_) => None,
    };
    let per_client_rate = cfg.rate.map(|r| r / f64::from(cfg.clients));
    let mut schedule =
        per_client_rate.map(|rate| Schedule::new(client_rng(cfg.seed, id), rate, start));
    let mut pace = cfg
        .shape
        .as_ref()
        .map(|s| shape::Pace::new(s, warmup_end, id, client_rng(cfg.seed, id).random()));
    let mut weighed: Option<usize> = None;
    // A transaction drawn and skipped (-L): the next one to run.
    let mut drawn: Option<usize> = None;
    let mut counted = 0u64;
    let mut outbox = Outbox::new(&shared.events, start);
    let mut seen = HashSet::new();
    let mut figures = FiguresWindow::default();
    let stop = &shared.stop;
    let run_end = RunEnd::new(deadline, stop.clone());
    state.client.end_at(run_end);
    loop {
        thread_window_open(warmup_end);
        figures.open_at(warmup_end, state.connected());
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let next = match pace.as_mut() {
            Some(pace) => paced_start(pace, stop),
            None => plan_start(schedule.as_mut(), deadline, stop)
                .map(|(planned, began)| (planned, began, schedule.is_some())),
        };
        let Some((mut planned, mut began, open_loop)) = next else {
            break;
        };
        if let (Some(pace), Some(shape)) = (&pace, cfg.shape.as_ref().filter(|s| s.mixed())) {
            // A phase with a mix of its own: the client draws its types by it from now on.
            let i = pace.phase();
            if weighed != Some(i) {
                state.client.weigh(shape.phases[i].weights.as_deref());
                weighed = Some(i);
            }
        }
        // Drawn before the latency limit's check, as pgbench chooses its script first: a
        // skipped transaction counts against its type, which then runs next.
        let txn = drawn.take().unwrap_or_else(|| state.client.next());
        if open_loop
            && cfg
                .latency_limit
                .is_some_and(|l| began.saturating_duration_since(planned) > l)
        {
            // -L: no hope of meeting the limit; skipped, not sent (as pgbench). It counts
            // among -t's transactions, as pgbench's do.
            outbox.push(Event::Skipped(id, txn, micros(began - start)), began);
            drawn = Some(txn);
            if let Limit::Transactions(n) = cfg.limit {
                counted += u64::from(began >= warmup_end);
                if counted >= n {
                    break;
                }
            }
            continue;
        }
        let client = state.client.as_mut();
        if !pause(client, deadline, stop, open_loop, &mut planned, &mut began) {
            break;
        }
        // -C: the transaction's own connection. A closed loop's transaction starts once it is
        // connected (as pgbench 14 and later); an open loop's latency runs from its schedule.
        let bound = connections::before(shared, id, &mut state, &mut outbox).map(|connected| {
            if let Some(at) = connected.filter(|_| !open_loop) {
                (planned, began) = (at, at);
            }
        });
        // Again here: an open-loop or pausing client may have slept past the warm-up's end.
        thread_window_open(warmup_end);
        figures.open_at(warmup_end, state.connected());
        let busy = &shared.busy[slot(shared, id)];
        busy.store(micros(Instant::now() - start) + 1, Ordering::Release);
        state.session.start(txn);
        let (tries, outcome) = match bound {
            Ok(()) => attempt(&mut state, id, txn, planned, shared),
            Err(e) => (1, Err(e)),
        };
        busy.store(0, Ordering::Release);
        let end = Instant::now();
        // A wait inside the transaction (a script's \sleep) cut short by the run's end.
        let cut_short = matches!(&outcome, Err(e) if e.class == ErrorClass::Interrupted)
            && (deadline.is_some_and(|d| end >= d) || stop.load(Ordering::Relaxed));
        let unfinished = outcome.is_err() && (shared.ending.load(Ordering::SeqCst) || cut_short);
        let aborted = outcome.is_err() && state.client.aborted().is_some();
        // The statements count with their transaction: measured, and neither of those.
        let kept = end >= warmup_end && !unfinished && !aborted;
        state.session.settle(kept, outcome.is_err());
        if unfinished {
            outbox.push(Event::Unfinished, end);
            break;
        }
        if let (Err(_), Some(why)) = (&outcome, state.client.aborted()) {
            let lost = format!("client {id} aborted: {why}");
            outbox.push(Event::ClientLost(lost), end);
            break;
        }
        let lost = matches!(&outcome, Err(e) if e.class == ErrorClass::ConnectionLost);
        let outcome = outcome.map_err(|e| first_of_kind(e, &mut seen, &mut outbox, end));
        let (end_us, latency_us) = end_and_latency_us(start, planned, end);
        let sample = Sample {
            client: id,
            txn: txn as u16,
            end_us,
            latency_us,
            lag_us: open_loop.then(|| micros(began.saturating_duration_since(planned))),
            tries,
            queries: *outcome.as_ref().unwrap_or(&0),
            rolled_back: outcome.is_ok() && state.client.rolled_back(),
            error: outcome.err(),
        };
        outbox.push(Event::Txn(sample), end);
        if lost && !cfg.connections.per_transaction {
            let claim = &shared.reconnecting[slot(shared, id)];
            claim.store(micros(end - start) + 1, Ordering::Release);
            figures.bank(state.session.untimed());
            if !reconnected(shared, id, deadline, end, claim, &mut state, &mut outbox) {
                break;
            }
        }
        if let Limit::Transactions(n) = cfg.limit {
            counted += u64::from(end >= warmup_end);
            if counted >= n {
                break;
            }
        }
        if state.client.finished() {
            break;
        }
        connections::after(
            shared,
            id,
            &mut state,
            &mut outbox,
            &mut figures,
            lost,
            deadline,
        );
    }
    if let Some(s) = schedule {
        outbox.push(Event::Schedule(s.due, s.started), Instant::now());
    }
    if let Some(mut p) = pace.filter(|_| cfg.shape.as_ref().is_some_and(|s| s.open_loop())) {
        p.close();
        outbox.push(Event::Schedule(p.due, p.started), Instant::now());
        outbox.push(
            Event::PhaseSchedule(p.phase_due, p.phase_started),
            Instant::now(),
        );
    }
    if let Some(lines) = state.session.take_lines() {
        outbox.push(Event::Statements(lines), Instant::now());
    }
    if let Some(own) = figures.close(state.session.untimed()) {
        outbox.push(own, Instant::now());
    }
}

/// A client's connection's own figures over the measured window (`Session::connection_figures`,
/// embedded engines): read when the window opens and at the client's end; a connection replaced
/// on the way has its part banked first.
#[derive(Default)]
struct FiguresWindow {
    tried: bool,
    /// The connection's figures when the window opened (or when it replaced a lost one), and
    /// the instant.
    opened: Option<(Instant, ConnectionFigures)>,
    banked: ConnectionFigures,
}

impl FiguresWindow {
    /// `session`: None while a -C client has no connection (tried again at the next look).
    fn open_at(&mut self, warmup_end: Instant, session: Option<&mut dyn Session>) {
        let Some(session) = session else { return };
        if !self.tried && Instant::now() >= warmup_end {
            self.tried = true;
            self.opened = session.connection_figures().map(|f| (Instant::now(), f));
        }
    }

    /// The connection is about to be replaced: keep what it counted since the window opened,
    /// and count the next one from zero.
    fn bank(&mut self, session: &mut dyn Session) {
        if let (Some((_, base)), Some(now)) = (&mut self.opened, session.connection_figures()) {
            self.banked.add(&now.since(base));
            *base = ConnectionFigures::default();
        }
    }

    fn close(mut self, session: &mut dyn Session) -> Option<Event> {
        let (since, base) = self.opened?;
        // A -C client has closed its last connection, its figures banked.
        if let Some(now) = session.connection_figures() {
            self.banked.add(&now.since(&base));
        }
        self.banked.wall_s = since.elapsed().as_secs_f64();
        Some(Event::ConnectionFigures(self.banked))
    }
}

/// A client's own generator (its open-loop schedule), from the run's seed.
fn client_rng(seed: u64, id: u32) -> SmallRng {
    SmallRng::seed_from_u64(
        seed ^ u64::from(id)
            .wrapping_add(1)
            .wrapping_mul(0xD1B5_4A32_D192_ED03),
    )
}

/// When the next transaction is planned to start (the schedule's next instant in the open
/// loop, now in the closed loop) and when it begins; None when the run is over.
fn plan_start(
    schedule: Option<&mut Schedule>,
    deadline: Option<Instant>,
    stop: &AtomicBool,
) -> Option<(Instant, Instant)> {
    let open_loop = schedule.is_some();
    let planned = match schedule {
        Some(s) => s.next_start(deadline, stop)?,
        None => Instant::now(),
    };
    if deadline.is_some_and(|d| planned >= d) {
        return None;
    }
    let began = if open_loop { Instant::now() } else { planned };
    Some((planned, began))
}

/// The next start through a run's phases: (scheduled start, actual start, open loop), None at
/// the end.
fn paced_start(pace: &mut shape::Pace, stop: &AtomicBool) -> Option<(Instant, Instant, bool)> {
    match pace.next(stop) {
        shape::Next::End => None,
        shape::Next::Now(at) => Some((at, at, false)),
        shape::Next::Scheduled(at) => Some((at, Instant::now(), true)),
    }
}

/// Think and keying times (TPC-C --spec-timing): the terminal waits outside the latency, and
/// never past the end of the run (a keying time may be longer than what is left). The start
/// moves past the pause, in the closed loop the planned start too. False when the run ended
/// meanwhile.
fn pause(
    client: &mut dyn Client,
    deadline: Option<Instant>,
    stop: &AtomicBool,
    open_loop: bool,
    planned: &mut Instant,
    began: &mut Instant,
) -> bool {
    let pause = client.pause();
    if pause.is_zero() {
        return true;
    }
    let wake = deadline.map_or(Instant::now() + pause, |d| d.min(Instant::now() + pause));
    if !sleep_until(wake, stop) || deadline.is_some_and(|d| Instant::now() >= d) {
        return false;
    }
    *began = Instant::now();
    if !open_loop {
        *planned = *began;
    }
    true
}

/// A failed transaction's class. The first message of each kind, as the server said it, goes
/// to the summary.
fn first_of_kind(
    e: DbError,
    seen: &mut HashSet<String>,
    outbox: &mut Outbox,
    end: Instant,
) -> ErrorClass {
    let kind = e.class.kind();
    if !seen.contains(&kind) {
        outbox.push(Event::ErrorMessage(kind.clone(), e.message), end);
        seen.insert(kind);
    }
    e.class
}

/// After a lost connection: a new one, the time without one counted; false when there is
/// none to be had and the client is lost.
fn reconnected(
    shared: &Shared,
    id: u32,
    deadline: Option<Instant>,
    end: Instant,
    claim: &AtomicU64,
    state: &mut ClientState,
    outbox: &mut Outbox,
) -> bool {
    // The lost transaction is counted now, whatever the reconnection meets.
    outbox.flush(Instant::now());
    let fresh = reconnect(shared, id, deadline, state, outbox);
    outbox.push(Event::Offline(end.elapsed()), Instant::now());
    // The end of the run already counted this client lost while it was trying.
    if claim.swap(0, Ordering::AcqRel) == 0 {
        return false;
    }
    match fresh {
        Ok(()) => {
            outbox.push(Event::Reconnected, Instant::now());
            true
        }
        Err(why) => {
            let lost = format!("client {id} could not reconnect: {why}");
            outbox.push(Event::ClientLost(lost), Instant::now());
            false
        }
    }
}

/// CPU time (user + system) the calling thread has used so far.
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes into the struct we pass.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
    ok.then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Time the calling thread has spent ready to run but waiting for a core, from the kernel's
/// scheduler statistics (the second figure of /proc/thread-self/schedstat, in ns); None where
/// the kernel does not keep them.
fn thread_run_queue_wait() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Bytes the calling thread has read from storage so far (`read_bytes` of
/// /proc/thread-self/io: what reached the block layer, not what the operating system's cache
/// served); None where the kernel does not count them.
fn thread_storage_reads() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))?
        .trim()
        .parse()
        .ok()
}

thread_local! {
    /// This thread's clocks over the measured window, whether it runs one client or many.
    static WINDOW: std::cell::RefCell<ThreadWindow> = const {
        std::cell::RefCell::new(ThreadWindow { opened: None, tried: false })
    };
}

/// Open this thread's window (`ThreadWindow::open_at`), at a client's look.
fn thread_window_open(warmup_end: Instant) {
    WINDOW.with(|w| w.borrow_mut().open_at(warmup_end));
}

/// Close this thread's window and send its clocks, once its clients have all ended.
fn thread_window_close(shared: &Shared) {
    let closed = WINDOW.with(|w| w.replace(ThreadWindow::new()).close());
    if let Some(cpu) = closed {
        let _ = shared.events.send(vec![cpu]);
    }
}

/// A client thread's own clocks over its clients' part of the measured window: opened at the
/// first look of one of its clients at or after the end of the warm-up (at once without one;
/// connecting is over by then), closed when its last client stops. The wall clock is read outside the thread's clocks at both
/// ends, so that they are judged against a wall time that holds them.
struct ThreadWindow {
    /// Wall, CPU, run-queue wait and storage reads at the opening.
    opened: Option<(Instant, Duration, Option<Duration>, Option<u64>)>,
    tried: bool,
}

impl ThreadWindow {
    fn new() -> ThreadWindow {
        ThreadWindow {
            opened: None,
            tried: false,
        }
    }

    fn open_at(&mut self, warmup_end: Instant) {
        if self.opened.is_none() && !self.tried {
            let now = Instant::now();
            if now >= warmup_end {
                self.tried = true;
                // A thread whose clock cannot be read reports nothing rather than zero.
                self.opened = thread_cpu_time()
                    .map(|cpu| (now, cpu, thread_run_queue_wait(), thread_storage_reads()));
            }
        }
    }

    /// The event to send; None when the window never opened (the client stopped during the
    /// warm-up).
    fn close(self) -> Option<Event> {
        let (wall0, cpu0, wait0, read0) = self.opened?;
        let wait = thread_run_queue_wait()
            .zip(wait0)
            .map(|(w1, w0)| w1.saturating_sub(w0));
        let read_bytes = thread_storage_reads()
            .zip(read0)
            .map(|(r1, r0)| r1.saturating_sub(r0));
        let cpu = thread_cpu_time()?.saturating_sub(cpu0);
        Some(Event::ClientCpu {
            cpu,
            wait,
            wall: wall0.elapsed(),
            read_bytes,
        })
    }
}

/// An open-loop client's schedule: Poisson arrivals (exponential gaps with mean 1/rate, as
/// pgbench --rate), counting what was due within the run and what could start.
struct Schedule {
    rng: SmallRng,
    rate: f64,
    next: Instant,
    due: u64,
    started: u64,
}

impl Schedule {
    fn new(rng: SmallRng, rate: f64, start: Instant) -> Schedule {
        Schedule {
            rng,
            rate,
            next: start,
            due: 0,
            started: 0,
        }
    }

    fn advance(&mut self) {
        let u: f64 = self.rng.random();
        self.next += Duration::from_secs_f64(-(1.0 - u).ln() / self.rate);
    }

    /// Wait for the next scheduled start and return it; None at the end of the run. Nothing
    /// starts after the end: a client that fell behind counts the rest of its schedule as due
    /// and not started (pgbench does not start them either), from the rate (the expected
    /// arrivals until the end), not arrival by arrival: a schedule far behind at a high rate
    /// would take longer to walk than the run, or never end where the gaps round to 0 ns.
    fn next_start(&mut self, end: Option<Instant>, stop: &AtomicBool) -> Option<Instant> {
        self.advance();
        let inside = |s: &Self| end.is_none_or(|d| s.next < d);
        if !inside(self) {
            return None;
        }
        self.due += 1;
        if let Some(d) = end.filter(|d| Instant::now() >= *d) {
            let rest = d.saturating_duration_since(self.next).as_secs_f64() * self.rate;
            self.due += rest.round() as u64;
            return None;
        }
        if !sleep_until(self.next, stop) {
            return None;
        }
        self.started += 1;
        Some(self.next)
    }
}

/// A client's events, sent in batches: one channel operation per 256 transactions or 50 ms,
/// whichever comes first, instead of one per transaction.
struct Outbox<'a> {
    events: Vec<Event>,
    sent_at: Instant,
    channel: &'a Sender<Vec<Event>>,
}

impl<'a> Outbox<'a> {
    const BATCH: usize = 256;
    const EVERY: Duration = Duration::from_millis(50);

    fn new(channel: &'a Sender<Vec<Event>>, now: Instant) -> Self {
        Outbox {
            events: Vec::with_capacity(Self::BATCH),
            sent_at: now,
            channel,
        }
    }

    fn push(&mut self, event: Event, now: Instant) {
        self.events.push(event);
        if self.events.len() >= Self::BATCH || now.duration_since(self.sent_at) >= Self::EVERY {
            self.flush(now);
        }
    }

    fn flush(&mut self, now: Instant) {
        if !self.events.is_empty() {
            // The next batch is sized like this one: slow clients keep small buffers.
            let size = self.events.len();
            let batch = std::mem::replace(&mut self.events, Vec::with_capacity(size));
            let _ = self.channel.send(batch);
        }
        self.sent_at = now;
    }
}

impl Drop for Outbox<'_> {
    fn drop(&mut self) {
        self.flush(Instant::now());
    }
}

/// `--max-tries 0`, pgbench's unlimited tries: until the run ends, or with `-L` until the
/// transaction has taken longer than the limit.
pub const UNLIMITED_TRIES: u32 = u32::MAX;

/// Execute the drawn transaction (planned to start at `planned`), retrying retryable errors
/// up to `max_tries` in all. The first retry follows at once, as pgbench's; later ones after
/// `retry_pause`.
fn attempt(
    state: &mut ClientState,
    id: u32,
    txn: usize,
    planned: Instant,
    shared: &Shared,
) -> (u32, Result<u32, DbError>) {
    let max_tries = shared.cfg.max_tries;
    let halt = || shared.stop.load(Ordering::Relaxed) || shared.ending.load(Ordering::Relaxed);
    // --verbose-errors: pgbench's lines, in its words.
    let say = |line: String| {
        if shared.cfg.verbose_errors {
            errln!("dbduel: {line}");
        }
    };
    // The end of the run cancels what is in flight: not an error the client met.
    let cancelled = |e: &DbError| e.class == ErrorClass::Interrupted;
    // As pgbench's, from the transaction's schedule.
    let over_limit = || {
        max_tries == UNLIMITED_TRIES
            && shared
                .cfg
                .latency_limit
                .is_some_and(|l| planned.elapsed() > l)
    };
    let mut tries = 0;
    loop {
        tries += 1;
        let done = state.client.execute(&mut state.session);
        let notices = state.session.take_notices();
        if !notices.is_empty() {
            shared.notices(notices);
        }
        match done {
            Ok(queries) => return (tries, Ok(queries)),
            Err(e) if cancelled(&e) => return (tries, Err(e)),
            Err(e) => {
                if shared.cfg.verbose_errors {
                    let at = match state.client.failed_command() {
                        Some(c) => format!("command {c} (SQL) of script {txn}"),
                        None => shared.workload.transaction_types()[txn].to_string(),
                    };
                    say(format!("client {id} got an error in {at}; {}", e.message));
                }
                if e.class == ErrorClass::ConnectionLost {
                    return (tries, Err(e));
                }
                let _ = state.session.untimed().rollback();
                let again = state.client.retryable(&e.class) && tries < max_tries && !over_limit();
                let tried = || tries_used(tries, max_tries, shared.cfg.latency_limit, planned);
                if !again || halt() {
                    say(format!(
                        "client {id} ends the failed transaction {}",
                        tried()
                    ));
                    return (tries, Err(e));
                }
                say(format!(
                    "client {id} repeats the transaction after the error {}",
                    tried()
                ));
                let pause = retry_pause(tries, &mut state.backoff);
                if !pause.is_zero() && !sleep_while_running(pause, shared) {
                    return (tries, Err(e));
                }
            }
        }
    }
}

/// pgbench's `(try N/MAX, P% of the maximum time of tries was used)` of --verbose-errors:
/// no `/MAX` when tries are unlimited, the share of `-L` taken since the transaction was
/// planned when there is one.
fn tries_used(tries: u32, max_tries: u32, limit: Option<Duration>, planned: Instant) -> String {
    let mut s = format!("(try {tries}");
    if max_tries != UNLIMITED_TRIES {
        s += &format!("/{max_tries}");
    }
    if let Some(limit) = limit {
        let used = 100.0 * planned.elapsed().as_secs_f64() / limit.as_secs_f64();
        s += &format!(", {used:.3}% of the maximum time of tries was used");
    }
    s + ")"
}

/// The longest pause before a retry: immediate retries of one transaction can lose to the
/// same long concurrent transaction every time (PostgreSQL's serializable keeps a committed
/// transaction's predicate locks until every overlapping one ends), so a transaction that
/// failed twice waits a random time below a bound that doubles from 100 us up to this.
pub const RETRY_PAUSE_MAX: Duration = Duration::from_millis(20);

/// The pause before try `tries + 1`: none after the first failure, then uniform in
/// [0, min(100 us x 2^(tries-2), RETRY_PAUSE_MAX)) (exponential backoff with full jitter).
fn retry_pause(tries: u32, rng: &mut SmallRng) -> Duration {
    if tries < 2 {
        return Duration::ZERO;
    }
    let bound = (100u64 << (tries - 2).min(20)).min(RETRY_PAUSE_MAX.as_micros() as u64);
    Duration::from_micros(rng.random_range(0..bound))
}

/// Sleep `pause` unless the run stops or ends first; false when it did.
fn sleep_while_running(pause: Duration, shared: &Shared) -> bool {
    let until = Instant::now() + pause;
    while Instant::now() < until {
        if shared.stop.load(Ordering::Relaxed) || shared.ending.load(Ordering::Relaxed) {
            return false;
        }
        crate::coop::sleep((until - Instant::now()).min(Duration::from_millis(5)));
    }
    true
}

/// How long a client of a run without an end in time (`-t`) keeps trying to reconnect.
pub const RECONNECT_FOR: Duration = Duration::from_secs(60);

/// Reconnect with growing pauses (50 ms, doubling up to 1 s) until it works: a new connection,
/// the client's session bound to it (`connections::bind`: the workload's client, its random
/// streams and statements kept). A server that restarts (a crash, a failover) is waited for as
/// long as the run lasts: a timed run keeps trying until its end, the time without a connection
/// counted as lost (`Event::Offline`); a run of `-t` transactions keeps trying for
/// `RECONNECT_FOR`. Ctrl-C and the end of the run stop it. The error says how long it tried and
/// the last refusal. The connections it replaces (the lost one, a new one that could not be
/// bound) are torn down on threads of their own: a goodbye may wait on a socket the server no
/// longer answers.
fn reconnect(
    shared: &Shared,
    id: u32,
    deadline: Option<Instant>,
    state: &mut ClientState,
    outbox: &mut Outbox,
) -> Result<(), String> {
    let began = Instant::now();
    let until = deadline.unwrap_or(began + RECONNECT_FOR);
    let mut pause = Duration::from_millis(50);
    let mut last = String::from("the run ended before a try");
    loop {
        let halted = shared.stop.load(Ordering::Relaxed) || shared.ending.load(Ordering::Relaxed);
        if halted || Instant::now() >= until {
            let when = if deadline.is_some() {
                "until the end of the run"
            } else {
                "for the longest outage a run of -t waits out"
            };
            return Err(format!(
                "tried for {:.1} s ({when}); last error: {last}",
                began.elapsed().as_secs_f64()
            ));
        }
        let tried = connections::open(shared.engine.as_ref()).and_then(|(fresh, took)| {
            outbox.push(Event::Connected(ConnectCause::Lost, took), Instant::now());
            let (old, bound) = connections::bind(shared, id, state, fresh);
            let _ = std::thread::Builder::new()
                .name("teardown".into())
                .spawn(move || drop(old));
            bound
        });
        match tried {
            Ok(()) => {
                state.life.renewed();
                return Ok(());
            }
            Err(e) => {
                outbox.push(
                    Event::ConnectFailed(ConnectCause::Lost, e.message.clone()),
                    Instant::now(),
                );
                last = e.message;
            }
        }
        let left = until.saturating_duration_since(Instant::now());
        if !sleep_until(Instant::now() + pause.min(left), &shared.stop) {
            continue;
        }
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// Sleep until `when`, waking to notice a stop request; false when stopped.
fn sleep_until(when: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= when {
            return true;
        }
        crate::coop::sleep((when - now).min(Duration::from_millis(100)));
    }
}

#[cfg(test)]
mod tests {
    //! The runner on a real SQLite file, with a workload whose client panics: the panic must
    //! reach the events as a lost client with its message, and the other clients go on.
    use super::*;
    use crate::engine::{self, EngineOptions, Protocol};
    use crate::workload::{CheckItem, Loader};

    struct Panicky;
    struct PanickyClient(u32, u32);

    impl Client for PanickyClient {
        fn next(&mut self) -> usize {
            0
        }
        fn execute(&mut self, s: &mut dyn Session) -> crate::engine::DbResult<u32> {
            self.1 += 1;
            if self.0 == 1 && self.1 == 3 {
                panic!("the third transaction of client 1");
            }
            s.batch("SELECT 1")?;
            Ok(1)
        }
    }

    impl Workload for Panicky {
        fn name(&self) -> &'static str {
            "panicky"
        }
        fn variant(&self) -> &'static str {
            "panicky"
        }
        fn scale(&self) -> Option<u32> {
            None
        }
        fn prepare(&self, _: &dyn Engine, _: &mut dyn Session, _: &Loader) -> Result<(), Error> {
            Ok(())
        }
        fn cleanup(&self, _: &dyn Engine, _: &mut dyn Session) -> Result<(), Error> {
            Ok(())
        }
        fn check(&self, _: &dyn Engine, _: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
            Ok(vec![])
        }
        fn attach(&mut self, _: &dyn Engine, _: &mut dyn Session) -> Result<Vec<String>, Error> {
            Ok(vec![])
        }
        fn transaction_types(&self) -> Vec<&'static str> {
            vec!["t"]
        }
        fn client(
            &self,
            _: &dyn Engine,
            _: &mut dyn Session,
            id: u32,
            _: u64,
        ) -> crate::engine::DbResult<Box<dyn Client>> {
            Ok(Box::new(PanickyClient(id, 0)))
        }
    }

    #[test]
    fn a_schedule_far_behind_at_the_end_counts_its_rest_from_the_rate() {
        // 4e9 a second: gaps that round to 0 ns, 1 s behind at the end.
        let now = Instant::now();
        let mut s = Schedule::new(
            SmallRng::seed_from_u64(1),
            4e9,
            now - Duration::from_secs(1),
        );
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        assert_eq!(s.next_start(Some(now), &stop), None);
        assert!(started.elapsed() < Duration::from_millis(100));
        assert!((3.9e9..4.1e9).contains(&(s.due as f64)), "{}", s.due);
        assert_eq!(s.started, 0);
    }

    #[test]
    fn a_panicking_client_is_lost_with_its_message() {
        let dir = tempfile::tempdir().unwrap();
        let dsn = crate::dsn::Dsn::sqlite(&dir.path().join("p.db"));
        let engine: Arc<dyn Engine> =
            engine::open(&dsn, &EngineOptions::default(), Protocol::Simple)
                .unwrap()
                .into();
        // The file and its WAL mode made first, so that both clients connect without a race.
        drop(engine.connect().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        let cfg = RunConfig {
            clients: 2,
            limit: Limit::Transactions(10),
            warmup: Duration::ZERO,
            rate: None,
            max_tries: 1,
            seed: 1,
            first_client: 0,
            start_at: None,
            statements: true,
            shape: None,
            connections: Default::default(),
            latency_limit: None,
            threads: None,
            verbose_errors: false,
            stall_timeout: None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let running = start(engine, Arc::new(Panicky), cfg, stop, tx).unwrap();
        running.join();
        let events: Vec<Event> = rx.try_iter().flatten().collect();
        let lost: Vec<&String> = events
            .iter()
            .filter_map(|e| match e {
                Event::ClientLost(m) => Some(m),
                _ => None,
            })
            .collect();
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert!(
            lost[0].contains("client 1 panicked: the third transaction"),
            "{}",
            lost[0]
        );
        // Each client's thread reports its clocks, within its wall time, the one whose client
        // ended in a panic too (its CPU was spent all the same).
        let cpu: Vec<(Duration, Duration)> = events
            .iter()
            .filter_map(|e| match e {
                Event::ClientCpu { cpu, wall, .. } => Some((*cpu, *wall)),
                _ => None,
            })
            .collect();
        assert_eq!(cpu.len(), 2, "{cpu:?}");
        assert!(
            cpu.iter().all(|c| c.0 > Duration::ZERO && c.0 <= c.1),
            "{cpu:?}"
        );
        let done = events.iter().filter(|e| matches!(e, Event::Txn(_))).count();
        assert_eq!(
            done,
            10 + 2,
            "client 0 ran its 10, client 1 two before the panic"
        );
    }

    #[test]
    fn a_start_just_before_a_boundary_reads_back_before_it() {
        // Planned 0.3 us before the 1 s boundary, ended 2.5 us later: the end rounds down to
        // 1,000,002 us, and the latency taken apart (2.5 us) to 2, so end - latency would be
        // the boundary itself.
        let start = Instant::now();
        let planned = start + Duration::from_nanos(999_999_700);
        let end = planned + Duration::from_nanos(2_500);
        let (end_us, latency_us) = end_and_latency_us(start, planned, end);
        assert_eq!(end_us, 1_000_002);
        assert_eq!(end_us - latency_us, 999_999);
    }

    #[test]
    fn clients_share_threads_past_eight_a_core_or_as_asked() {
        // Up to 8 clients a core: a thread each; past that, a thread per 8 clients, at least
        // one and at most 4 a core.
        assert_eq!(threads_for(16, None, 2), None);
        assert_eq!(threads_for(17, None, 2), Some(2));
        assert_eq!(threads_for(32, None, 2), Some(4));
        assert_eq!(threads_for(100, None, 2), Some(8));
        assert_eq!(threads_for(400, None, 4), Some(16));
        assert_eq!(threads_for(10_000, None, 2), Some(8));
        // -j as asked, but never more threads than clients (then a thread each).
        assert_eq!(threads_for(8, Some(2), 2), Some(2));
        assert_eq!(threads_for(1000, Some(3), 2), Some(3));
        assert_eq!(threads_for(8, Some(8), 2), None);
        assert_eq!(threads_for(8, Some(50), 2), None);
    }

    #[test]
    fn retry_pauses_start_after_the_first_retry_and_double_up_to_the_bound() {
        let mut rng = SmallRng::seed_from_u64(7);
        assert_eq!(
            retry_pause(1, &mut rng),
            Duration::ZERO,
            "first retry at once"
        );
        for (tries, bound_us) in [(2, 100), (3, 200), (5, 800), (9, 12_800), (10, 20_000)] {
            let pauses: Vec<_> = (0..2000).map(|_| retry_pause(tries, &mut rng)).collect();
            let longest = pauses.iter().max().unwrap().as_micros() as u64;
            assert!(
                longest < bound_us,
                "try {tries}: {longest} us, bound {bound_us}"
            );
            assert!(
                longest > bound_us * 9 / 10,
                "try {tries}: spread to {longest} us only"
            );
        }
        assert!(retry_pause(99, &mut rng) < RETRY_PAUSE_MAX);
    }
}
