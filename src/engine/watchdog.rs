//! A statement timeout kept by the client for an engine whose server has none (Firebird 3): a
//! thread per session that cancels the running statement through the session's `Cancel` once
//! it has run past the limit, and the error that follows told apart as a timeout. The session is
//! told when a cancel was sent for its last statement: if the statement ended before the cancel
//! arrived, its server may keep the cancel for the next call (Firebird does).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Cancel, DbError, DbResult, ErrorClass};

/// Watches one session's statements, one at a time.
pub struct Watchdog {
    limit: Duration,
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    /// The running statement's number and when it passes the limit.
    armed: Option<(u64, Instant)>,
    /// Statements watched so far.
    count: u64,
    /// The last statement the watchdog cancelled.
    fired: Option<u64>,
    /// A cancel is on its way: the next statement waits until it has been sent.
    cancelling: bool,
    /// Why the last cancel could not be sent (the statement then ran on past the limit).
    refused: Option<String>,
    /// A cancel was sent for the last statement run (and not refused).
    sent: bool,
    quit: bool,
}

impl Watchdog {
    pub fn new(limit: Duration, cancel: Arc<dyn Cancel>) -> Watchdog {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let watched = shared.clone();
        let thread = std::thread::Builder::new()
            .name("statement-watchdog".into())
            .spawn(move || watch(&watched, cancel.as_ref()))
            .expect("spawn the statement watchdog");
        Watchdog {
            limit,
            shared,
            thread: Some(thread),
        }
    }

    /// Run one statement under the limit. An error after the watchdog cancelled the
    /// statement is a `StatementTimeout`, with the engine's own words kept.
    pub fn run<T>(&self, statement: impl FnOnce() -> DbResult<T>) -> DbResult<T> {
        let (lock, wake) = &*self.shared;
        let number = {
            let mut s = lock.lock().expect("watchdog lock");
            while s.cancelling {
                s = wake.wait(s).expect("watchdog lock");
            }
            s.count += 1;
            s.armed = Some((s.count, Instant::now() + self.limit));
            s.count
        };
        wake.notify_all();
        let outcome = statement();
        let (fired, refused) = {
            let mut s = lock.lock().expect("watchdog lock");
            s.armed = None;
            while s.cancelling {
                s = wake.wait(s).expect("watchdog lock");
            }
            s.sent = s.fired == Some(number) && s.refused.is_none();
            (
                s.fired == Some(number),
                s.refused.take().filter(|_| s.fired == Some(number)),
            )
        };
        let limit = self.limit.as_secs_f64();
        match (outcome, refused) {
            // The cancel failed: the statement ran on past the limit, which must not pass for
            // a success.
            (_, Some(why)) => Err(DbError::new(
                ErrorClass::StatementTimeout,
                format!(
                    "statement ran past the statement timeout ({limit} s); dbduel's cancel failed: {why}"
                ),
            )),
            (Err(e), None) if fired => Err(DbError::new(
                ErrorClass::StatementTimeout,
                format!(
                    "statement cancelled by dbduel after the statement timeout ({limit} s): {}",
                    e.message
                ),
            )),
            (other, None) => other,
        }
    }

    /// The limit it keeps.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// Whether the watchdog sent a cancel for the last statement run. When the statement's
    /// outcome is not that cancel (it succeeded, or failed otherwise, between the limit and the
    /// cancel's arrival), a server that keeps a cancel for its connection's next call would fail
    /// that call: the session must take it.
    pub fn cancel_sent(&self) -> bool {
        self.shared.0.lock().expect("watchdog lock").sent
    }
}

/// The watchdog's thread: sleeps until the armed statement's limit, then cancels it.
fn watch(shared: &(Mutex<State>, Condvar), cancel: &dyn Cancel) {
    let (lock, wake) = shared;
    let mut s = lock.lock().expect("watchdog lock");
    loop {
        if s.quit {
            return;
        }
        match s.armed {
            None => s = wake.wait(s).expect("watchdog lock"),
            Some((number, due)) => {
                let now = Instant::now();
                if now < due {
                    s = wake.wait_timeout(s, due - now).expect("watchdog lock").0;
                    continue;
                }
                s.armed = None;
                s.fired = Some(number);
                s.cancelling = true;
                drop(s);
                let refused = cancel.cancel().err();
                if refused.is_some() {
                    // The server could not be asked: free the client at least, where it can.
                    cancel.abandon();
                }
                s = lock.lock().expect("watchdog lock");
                s.refused = refused;
                s.cancelling = false;
                wake.notify_all();
            }
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (lock, wake) = &*self.shared;
        lock.lock().expect("watchdog lock").quit = true;
        wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    //! The watchdog with a `Cancel` that ends a sleeping "statement" the way a server does.
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    #[derive(Default)]
    struct Sleeper {
        cancelled: AtomicBool,
        cancels: AtomicUsize,
    }

    impl Cancel for Sleeper {
        fn cancel(&self) -> Result<(), String> {
            self.cancels.fetch_add(1, Ordering::SeqCst);
            self.cancelled.store(true, Ordering::SeqCst);
            Ok(())
        }
        fn abandon(&self) {}
    }

    /// A statement that takes `length` unless cancelled first.
    fn statement(door: &Sleeper, length: Duration) -> DbResult<()> {
        let end = Instant::now() + length;
        while Instant::now() < end {
            if door.cancelled.swap(false, Ordering::SeqCst) {
                return Err(DbError::new(ErrorClass::Other("x".into()), "cancelled"));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    #[test]
    fn a_statement_past_the_limit_is_cancelled_and_named_a_timeout() {
        let door = Arc::new(Sleeper::default());
        let dog = Watchdog::new(Duration::from_millis(50), door.clone());
        let began = Instant::now();
        let e = dog
            .run(|| statement(&door, Duration::from_secs(5)))
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::StatementTimeout);
        assert!(e.message.contains("0.05 s") && e.message.contains("cancelled"));
        assert!(began.elapsed() < Duration::from_secs(2));
        // Short statements after it run untouched, and no cancel reaches them.
        for _ in 0..20 {
            dog.run(|| statement(&door, Duration::from_millis(2)))
                .unwrap();
        }
        assert_eq!(door.cancels.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn an_error_of_a_statement_within_the_limit_keeps_its_class() {
        let door = Arc::new(Sleeper::default());
        let dog = Watchdog::new(Duration::from_secs(5), door.clone());
        let e = dog
            .run(|| -> DbResult<()> { Err(DbError::new(ErrorClass::Deadlock, "deadlock")) })
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::Deadlock);
        assert_eq!(door.cancels.load(Ordering::SeqCst), 0);
    }

    /// A server that cannot be asked to cancel: the statement runs to its end, and it is
    /// still reported as past the limit, with the reason, not as a success.
    struct Deaf;

    impl Cancel for Deaf {
        fn cancel(&self) -> Result<(), String> {
            Err("connection refused".into())
        }
        fn abandon(&self) {}
    }

    #[test]
    fn a_failed_cancel_is_not_a_success() {
        let dog = Watchdog::new(Duration::from_millis(20), Arc::new(Deaf));
        let e = dog
            .run(|| -> DbResult<()> {
                std::thread::sleep(Duration::from_millis(200));
                Ok(())
            })
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::StatementTimeout);
        assert!(
            e.message.contains("cancel failed: connection refused"),
            "{}",
            e.message
        );
        // The next statement, within the limit, is untouched.
        dog.run(|| -> DbResult<()> { Ok(()) }).unwrap();
        assert!(!dog.cancel_sent());
    }

    /// A statement that ends after the limit but before the cancel lands keeps its success,
    /// and the watchdog says a cancel was sent; the next statement within the limit clears it.
    #[test]
    fn a_cancel_after_the_statement_ended_is_told() {
        let door = Arc::new(Sleeper::default());
        let dog = Watchdog::new(Duration::from_millis(10), door.clone());
        dog.run(|| -> DbResult<()> {
            std::thread::sleep(Duration::from_millis(100));
            Ok(())
        })
        .unwrap();
        assert_eq!(door.cancels.load(Ordering::SeqCst), 1);
        assert!(dog.cancel_sent());
        // The session takes the cancel its server kept (here, the sleeper's flag).
        assert!(door.cancelled.swap(false, Ordering::SeqCst));
        dog.run(|| -> DbResult<()> { Ok(()) }).unwrap();
        assert!(!dog.cancel_sent());
        // A statement the cancel ended is a timeout, its cancel sent too (the session tells
        // the cancel's own error from another).
        let e = dog
            .run(|| statement(&door, Duration::from_secs(5)))
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::StatementTimeout);
        assert!(dog.cancel_sent());
    }
}
