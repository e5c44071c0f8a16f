//! A guard on the sessions of a long operation outside the measured run (prepare, check, cleanup,
//! the checks before a run), whose statements may rightly take minutes, so that no read deadline
//! fits them: while it lasts, the server is asked for a new connection every 5 s; when none has
//! been answered for `STALL_LIMIT` (30 s), the server is taken as stalled and every session the
//! guard watches is given up (`Cancel::abandon`: its socket shut down), so the operation ends with
//! an error that names the stall instead of waiting forever.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{Cancel, DbResult, Engine, ErrorClass, Session};
use crate::error::Error;

/// How long a server may leave every new connection unanswered before it is taken as stalled.
pub const STALL_LIMIT: Duration = Duration::from_secs(30);
/// The pause between two probes.
const PROBE_EVERY: Duration = Duration::from_secs(5);

#[derive(Default)]
struct State {
    /// The sessions to give up on a stall.
    watched: Vec<Arc<dyn Cancel>>,
    /// Why the guard gave them up.
    stalled: Option<String>,
    quit: bool,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// Watches a server while it lives (nothing for an embedded engine, which cannot stall apart
/// from the process). Sessions are watched when given to `watch`, or opened through `engine`.
pub struct StallGuard {
    inner: Arc<dyn Engine>,
    shared: Shared,
}

impl StallGuard {
    pub fn new(engine: Arc<dyn Engine>) -> StallGuard {
        let shared: Shared = Arc::default();
        if !engine.embedded() {
            let (probed, watched) = (engine.clone(), shared.clone());
            // Detached: a probe under way when the guard ends finishes on its own.
            let _ = std::thread::Builder::new()
                .name("stall-guard".into())
                .spawn(move || probe(probed.as_ref(), &watched));
        }
        StallGuard {
            inner: engine,
            shared,
        }
    }

    /// Give this session up too if the server stalls.
    pub fn watch(&self, session: &dyn Session) {
        enlist(&self.shared, session);
    }

    /// The engine, whose every new session is watched.
    pub fn engine(&self) -> Arc<dyn Engine> {
        Arc::new(Watched {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        })
    }

    /// Why the watched sessions were given up, if they were: the reason to report in place
    /// of the error the operation met when its socket was shut down.
    pub fn stalled(&self) -> Option<String> {
        self.shared.0.lock().expect("stall guard").stalled.clone()
    }

    /// An operation's result, its error replaced by the stall when the guard caused it.
    pub fn judge<T>(&self, result: Result<T, Error>, doing: &str) -> Result<T, Error> {
        match (result, self.stalled()) {
            (Err(_), Some(why)) => Err(Error::Database(format!(
                "{doing} failed: {why}; run it again once the server answers"
            ))),
            (result, _) => result,
        }
    }
}

/// Watch `session`: given up at once if the server has already stalled.
fn enlist(shared: &Shared, session: &dyn Session) {
    if let Some(cancel) = session.canceller() {
        let mut state = shared.0.lock().expect("stall guard");
        if state.stalled.is_some() {
            cancel.abandon();
        }
        state.watched.push(cancel);
    }
}

impl Drop for StallGuard {
    fn drop(&mut self) {
        let (lock, wake) = &*self.shared;
        let mut state = lock.lock().expect("stall guard");
        state.quit = true;
        state.watched.clear();
        wake.notify_all();
    }
}

/// The probing loop: a connection answered (opened, or refused by the server with a reason:
/// a wrong password, too many clients) shows the server alive; a connection that times out or
/// is refused by the system does not.
fn probe(engine: &dyn Engine, shared: &Shared) {
    let (lock, wake) = &**shared;
    let mut answered = Instant::now();
    loop {
        {
            let state = lock.lock().expect("stall guard");
            let (state, _) = wake
                .wait_timeout_while(state, PROBE_EVERY, |s| !s.quit)
                .expect("stall guard");
            if state.quit {
                return;
            }
        }
        let alive = match engine.connect() {
            Ok(session) => {
                drop(session);
                true
            }
            Err(e) => !matches!(
                e.class,
                ErrorClass::Unreachable | ErrorClass::ConnectionLost
            ),
        };
        if alive {
            answered = Instant::now();
            continue;
        }
        let silent = answered.elapsed();
        if silent < STALL_LIMIT {
            continue;
        }
        let mut state = lock.lock().expect("stall guard");
        if state.quit {
            return;
        }
        state.stalled = Some(format!(
            "the server answered no new connection for {} s (stalled, or the network to it is down), so dbduel gave its sessions up",
            silent.as_secs()
        ));
        for cancel in &state.watched {
            cancel.abandon();
        }
        return;
    }
}

/// An engine whose new sessions a guard watches.
struct Watched {
    inner: Arc<dyn Engine>,
    shared: Shared,
}

impl Engine for Watched {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn dialect(&self) -> &'static str {
        self.inner.dialect()
    }
    fn embedded(&self) -> bool {
        self.inner.embedded()
    }
    fn multiplexed(&self) -> bool {
        self.inner.multiplexed()
    }
    fn shares_threads_unasked(&self) -> bool {
        self.inner.shares_threads_unasked()
    }
    fn connect(&self) -> DbResult<Box<dyn Session>> {
        let session = self.inner.connect()?;
        enlist(&self.shared, session.as_ref());
        Ok(session)
    }
    fn table_options(&self, fillfactor: Option<u32>) -> String {
        self.inner.table_options(fillfactor)
    }
}
