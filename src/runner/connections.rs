//! How the clients hold their connections, as applications do (`ConnectionPlan`): one for the
//! whole run (the default), a new one for every transaction (`-C`, pgbench's: connect, run one
//! transaction, disconnect, the latency starting once connected), a connection's end of
//! life as pools have it (`--reconnect-every N` transactions, `--reconnect-after S` seconds:
//! closed and opened again between transactions, never inside one), and idle connections held
//! open beside the clients (`--idle-connections N`: opened before the clients are released,
//! plain idle, no transaction open, closed at the end, never a client). Every connection opened
//! is timed (`open`: the engine's connect, TLS handshake and authentication included) and sent as
//! `Event::Connected` with its cause; one that cannot be had is `Event::ConnectFailed`.
//!
//! A client keeps its workload client across connections: its session (`statements::Timed`) is
//! bound to the new connection, its statements prepared again under the same ids and the
//! workload's session settings made again (`Workload::open_session`), so its random streams go on
//! and no key is drawn twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{ClientState, FiguresWindow, Outbox, Shared, slot};
use crate::engine::{
    DbError, DbResult, Engine, ErrorClass, Load, LoadProgress, RowSource, ServerInfo, Session,
    StmtId, Value,
};
use crate::event::{ConnectCause, Event};

/// How the clients hold their connections (checked by run_plan.rs: a count and an age of 1 or
/// more, `-C` alone).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionPlan {
    /// `-C`: a new connection for every transaction.
    pub per_transaction: bool,
    /// `--reconnect-every`: a connection's transactions before it is replaced.
    pub reconnect_every: Option<u64>,
    /// `--reconnect-after`: a connection's seconds of life before it is replaced.
    pub reconnect_after_s: Option<f64>,
    /// `--idle-connections`: connections held open and idle beside the clients.
    pub idle_connections: u32,
}

/// Open a connection on `engine`, timed.
pub(super) fn open(engine: &dyn Engine) -> DbResult<(Box<dyn Session>, Duration)> {
    let began = Instant::now();
    let session = engine.connect()?;
    Ok((session, began.elapsed()))
}

/// Bind client `id`'s session to the connection `fresh`: the workload's session settings made
/// on it and its statements prepared again, then swapped in and its cancel handle replaced.
/// Gives back the connection not in use (the one replaced; `fresh` itself when a setting or a
/// statement failed on it, the client keeping the connection it had), and whether the
/// binding succeeded.
pub(super) fn bind(
    shared: &Shared,
    id: u32,
    state: &mut ClientState,
    mut fresh: Box<dyn Session>,
) -> (Box<dyn Session>, DbResult<()>) {
    let engine = shared.engine.as_ref();
    if let Err(e) = shared.workload.open_session(engine, fresh.as_mut()) {
        return (fresh, Err(e));
    }
    let (unused, bound) = state.session.rebind(fresh);
    if bound.is_ok() {
        shared.doors.lock().expect("doors lock")[slot(shared, id)] = state.session.canceller();
    }
    (unused, bound)
}

/// Close a client's connection, leaving it without one (`-C`, between transactions). A lost
/// connection's teardown may wait on a socket the server no longer answers: it runs on a
/// thread of its own.
pub(super) fn unbind(shared: &Shared, id: u32, state: &mut ClientState, lost: bool) {
    let old = state.session.replace(Box::new(Unbound));
    shared.doors.lock().expect("doors lock")[slot(shared, id)] = None;
    if lost {
        let _ = std::thread::Builder::new()
            .name("teardown".into())
            .spawn(move || drop(old));
    } else {
        drop(old);
    }
}

/// One client's connection as the plan has it: when it was opened and the transactions it
/// served, and whether the client holds one (`-C` closes it after each transaction).
pub(super) struct Life {
    opened: Instant,
    served: u64,
    pub(super) bound: bool,
}

impl Life {
    pub(super) fn new() -> Life {
        Life {
            opened: Instant::now(),
            served: 0,
            bound: true,
        }
    }

    /// The connection was replaced (after a lost one too): its life starts again.
    pub(super) fn renewed(&mut self) {
        self.opened = Instant::now();
        self.served = 0;
        self.bound = true;
    }

    /// Whether the connection's life is over, and by what.
    fn ended(&self, plan: &ConnectionPlan) -> Option<ConnectCause> {
        if plan.reconnect_every.is_some_and(|n| self.served >= n) {
            return Some(ConnectCause::Count);
        }
        let age = self.opened.elapsed().as_secs_f64();
        plan.reconnect_after_s
            .is_some_and(|s| age >= s)
            .then_some(ConnectCause::Age)
    }
}

/// `-C`: the initial connection served to make the client and to prove the server takes it;
/// closed before the clients are released, each transaction opens its own.
pub(super) fn release_initial(shared: &Shared, id: u32, state: &mut ClientState) {
    if shared.cfg.connections.per_transaction {
        unbind(shared, id, state, false);
        state.life.bound = false;
    }
}

/// Before a transaction: a client without a connection (`-C`) opens one and binds its session
/// to it; when it opened one, the moment it was connected (where a closed loop's transaction
/// starts, as pgbench 14 and later start it: the connect is measured apart, the statements
/// prepared again on the new connection count in the transaction). Its failure is the
/// transaction's.
pub(super) fn before(
    shared: &Shared,
    id: u32,
    state: &mut ClientState,
    outbox: &mut Outbox,
) -> DbResult<Option<Instant>> {
    if state.life.bound {
        return Ok(None);
    }
    let cause = ConnectCause::Transaction;
    let (fresh, took) = open(shared.engine.as_ref()).inspect_err(|e| {
        outbox.push(
            Event::ConnectFailed(cause, e.message.clone()),
            Instant::now(),
        );
    })?;
    let connected = Instant::now();
    outbox.push(Event::Connected(cause, took), connected);
    let (unused, bound) = bind(shared, id, state, fresh);
    drop(unused);
    if bound.is_ok() {
        state.life.renewed();
    }
    bound.map(|()| Some(connected))
}

/// After a transaction, when the run goes on: `-C` closes its connection (on a thread of its
/// own when it was lost); a connection at the end of its life (`--reconnect-every`,
/// `--reconnect-after`) is replaced, between transactions, unless the run's time is up. A
/// replacement that cannot be had leaves the old connection in use, to be tried again after
/// the next transaction. A lost connection without `-C` is the runner's to replace
/// (`reconnected`), which renews its life.
pub(super) fn after(
    shared: &Shared,
    id: u32,
    state: &mut ClientState,
    outbox: &mut Outbox,
    figures: &mut FiguresWindow,
    lost: bool,
    deadline: Option<Instant>,
) {
    let plan = &shared.cfg.connections;
    if plan.per_transaction {
        figures.bank(state.session.untimed());
        unbind(shared, id, state, lost);
        state.life.bound = false;
        return;
    }
    state.life.served += 1;
    if lost || deadline.is_some_and(|d| Instant::now() >= d) {
        return;
    }
    let Some(cause) = state.life.ended(plan) else {
        return;
    };
    match open(shared.engine.as_ref()) {
        Ok((fresh, took)) => {
            outbox.push(Event::Connected(cause, took), Instant::now());
            let (mut unused, bound) = bind(shared, id, state, fresh);
            match bound {
                // The replaced connection's own figures, before it closes.
                Ok(()) => {
                    figures.bank(unused.as_mut());
                    state.life.renewed();
                }
                Err(e) => outbox.push(Event::ConnectFailed(cause, e.message), Instant::now()),
            }
            drop(unused);
        }
        Err(e) => outbox.push(Event::ConnectFailed(cause, e.message), Instant::now()),
    }
}

/// The idle connections of `--idle-connections`, held open until dropped at the end of the run.
pub struct Idle(Vec<Box<dyn Session>>);

/// A connection and the time it took to open.
type Opened = (Box<dyn Session>, Duration);

/// Threads that open the idle connections, side by side.
const IDLE_OPENERS: u32 = 8;

/// Open `n` idle connections (on up to `IDLE_OPENERS` threads), each timed; the first refusal
/// ends it.
pub(super) fn open_idle(
    engine: &Arc<dyn Engine>,
    n: u32,
) -> Result<(Idle, Vec<Duration>), DbError> {
    let openers = n.min(IDLE_OPENERS);
    let opened: Vec<DbResult<Vec<Opened>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..openers)
            .map(|i| {
                let share = n / openers + u32::from(i < n % openers);
                scope.spawn(move || (0..share).map(|_| open(engine.as_ref())).collect())
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    let why = "opening an idle connection panicked";
                    Err(DbError::new(ErrorClass::Other("panic".into()), why))
                })
            })
            .collect()
    });
    let mut idle = Vec::with_capacity(n as usize);
    let mut took = Vec::with_capacity(n as usize);
    for batch in opened {
        for (session, t) in batch? {
            idle.push(session);
            took.push(t);
        }
    }
    Ok((Idle(idle), took))
}

impl Idle {
    pub fn none() -> Idle {
        Idle(Vec::new())
    }

    /// Close them (at the end of the run), one by one.
    pub fn close(self) {
        for session in self.0 {
            drop(session);
        }
    }
}

/// A `-C` client's session between transactions: no connection. The runner opens one before
/// every transaction, so nothing reaches it; a call that did would fail as a lost connection.
struct Unbound;

fn none<T>() -> DbResult<T> {
    Err(DbError::new(
        ErrorClass::ConnectionLost,
        "no connection: -C opens one for each transaction",
    ))
}

impl Session for Unbound {
    fn prepare(&mut self, _: &str) -> DbResult<StmtId> {
        none()
    }
    fn execute(
        &mut self,
        _: StmtId,
        _: &[Value],
        _: Option<&mut Vec<Vec<Value>>>,
    ) -> DbResult<u64> {
        none()
    }
    fn batch(&mut self, _: &str) -> DbResult<()> {
        none()
    }
    fn query_text(&mut self, _: &str) -> DbResult<Vec<Vec<Value>>> {
        none()
    }
    fn begin(&mut self, _: bool) -> DbResult<()> {
        none()
    }
    fn commit(&mut self) -> DbResult<()> {
        none()
    }
    fn rollback(&mut self) -> DbResult<()> {
        none()
    }
    fn bulk_load(
        &mut self,
        _: &str,
        _: &[&str],
        _: &mut dyn RowSource,
        _: LoadProgress<'_>,
        _: Load,
    ) -> DbResult<u64> {
        none()
    }
    fn server_info(&mut self) -> DbResult<ServerInfo> {
        none()
    }
    fn database_size(&mut self) -> DbResult<u64> {
        none()
    }
}
