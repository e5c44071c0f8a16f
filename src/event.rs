//! What a run emits: one `Event` per finished transaction (a `Sample`) and per client happening (a
//! reconnection, its time offline, a lost client, the first error message of a kind, its schedule,
//! its CPU and its connection's own figures at its end). The runner sends them; the metrics consume them, so neither imports the
//! other.

use std::time::Duration;

use crate::engine::ErrorClass;
use crate::engine::figures::ConnectionFigures;

/// One finished transaction, as a client saw it. Times are microseconds since the run's start.
#[derive(Debug, Clone)]
pub struct Sample {
    pub txn: u16,
    pub end_us: u64,
    /// From the scheduled start (open loop) or the actual start (closed loop) to the end.
    pub latency_us: u64,
    /// Open loop: how late the transaction started against its schedule.
    pub lag_us: Option<u64>,
    pub tries: u32,
    pub error: Option<ErrorClass>,
    /// Statements the successful try sent.
    pub queries: u32,
    /// The successful try ended in a rollback the workload asked for (not an error).
    pub rolled_back: bool,
}

#[derive(Debug, Clone)]
pub enum Event {
    Txn(Sample),
    /// A client lost its connection and opened a new one.
    Reconnected,
    /// The time a client spent without a connection, from the failed transaction that lost it
    /// to its new connection (or to its end, when it never got one back).
    Offline(Duration),
    /// A client lost its connection and could not open a new one; it stopped.
    ClientLost(String),
    /// A transaction in flight at the end of the run was cancelled: neither done nor failed.
    Unfinished,
    /// The message of a client's first error of a kind (`ErrorClass::kind`).
    ErrorMessage(String, String),
    /// An open-loop client's end: transactions due within the run, and those it started.
    Schedule(u64, u64),
    /// A client's end: the CPU time its thread used in the measured window (from the end of
    /// the warm-up, connecting excluded, to its last transaction), the time it spent ready to
    /// run but waiting for a core (where the kernel tells), and the wall time of that stretch.
    ClientCpu {
        cpu: Duration,
        wait: Option<Duration>,
        wall: Duration,
    },
    /// A client's end, on an engine whose connections count their own time (embedded): what
    /// its connections counted over the measured window (`Session::connection_figures`).
    ConnectionFigures(ConnectionFigures),
}
