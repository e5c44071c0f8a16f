//! What a run emits: one `Event` per finished transaction (a `Sample`) and per client happening (a
//! reconnection, its time offline, a lost client, the first error message of a kind, its schedule,
//! its CPU, its connection's own figures and its statements' timings at its end), every
//! connection opened with its connect time, and the clients' connection storm. The runner
//! sends them; the metrics consume them, so neither imports the other.

use std::time::Duration;

use crate::engine::ErrorClass;
use crate::engine::figures::ConnectionFigures;

/// One finished transaction, as a client saw it. Times are microseconds since the run's start.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The client that ran it (its id in the whole run).
    pub client: u32,
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
    /// `-L` in an open loop: client's transaction of a type skipped, already later than the
    /// limit when its turn came (µs from the start, when it would have begun).
    Skipped(u32, usize, u64),
    /// The same by phase, in a run of phases (`--phase`): each phase's due and started.
    PhaseSchedule(Vec<u64>, Vec<u64>),
    /// A client's end: the CPU time its thread used in the measured window (from the end of
    /// the warm-up, connecting excluded, to its last transaction), the time it spent ready to
    /// run but waiting for a core (where the kernel tells), the wall time of that stretch, and
    /// the bytes the thread read from storage in it (where the kernel tells: an embedded
    /// engine's reads that its page cache missed and the operating system's did too).
    ClientCpu {
        cpu: Duration,
        wait: Option<Duration>,
        wall: Duration,
        read_bytes: Option<u64>,
    },
    /// A client's end, on an engine whose connections count their own time (embedded): what
    /// its connections counted over the measured window (`Session::connection_figures`).
    ConnectionFigures(ConnectionFigures),
    /// A connection the run opened (a client's or an idle one), why, and how long connecting
    /// took: the engine's connect, TLS handshake and authentication included.
    Connected(ConnectCause, Duration),
    /// A connection the run tried to open and could not have, and the engine's message (`-C`'s
    /// is also its transaction's error; a connection's end of life keeps the old one in use).
    ConnectFailed(ConnectCause, String),
    /// The clients' first connections, all opened at once: how many, and the time from the
    /// first client starting to connect until the last was connected.
    Storm(u32, Duration),
    /// `--idle-connections`: the time from the first starting to open until all were open.
    IdleOpened(Duration),
    /// A client's end: its statements timed one by one over the measured transactions
    /// (`runner::statements`), one entry per statement of each transaction type.
    Statements(Vec<StatementTimes>),
}

/// Why a connection was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectCause {
    /// A client's first connection, before the clients are released.
    Initial,
    /// `-C`: the connection of one transaction.
    Transaction,
    /// The old one had served `--reconnect-every` transactions.
    Count,
    /// The old one had lived `--reconnect-after` seconds.
    Age,
    /// The old one was lost.
    Lost,
    /// `--idle-connections`: held open, idle, beside the clients.
    Idle,
}

impl ConnectCause {
    /// Its name in the result (`connections`' count of it, and its key in `connect_s`).
    pub fn name(self) -> &'static str {
        match self {
            ConnectCause::Initial => "initial",
            ConnectCause::Transaction => "per_transaction",
            ConnectCause::Count => "by_count",
            ConnectCause::Age => "by_age",
            ConnectCause::Lost => "after_lost",
            ConnectCause::Idle => "idle",
        }
    }
}

/// One statement of one transaction type as one client timed it: its calls that returned, their
/// time, and the calls that failed. A statement is a prepared statement's text, BEGIN, COMMIT or
/// ROLLBACK, or a script's command as written (`as_written`).
#[derive(Debug, Clone)]
pub struct StatementTimes {
    /// The transaction type (its index among the workload's).
    pub txn: u16,
    /// Where it stands in its transaction type's listing (BEGIN first, COMMIT and ROLLBACK
    /// last, statements in the order they were prepared, a script's commands in its order).
    pub order: u32,
    /// Its text, whitespace runs made one space.
    pub text: String,
    /// A script's command as written, timed from its start to the next command's.
    pub as_written: bool,
    /// Calls that returned, and their time in nanoseconds (sum and longest).
    pub calls: u64,
    pub sum_ns: u64,
    pub max_ns: u64,
    /// Their latencies in microseconds (2 significant digits).
    pub hist: hdrhistogram::Histogram<u64>,
    /// Calls that failed and ended their transaction as failed; calls that failed and whose
    /// transaction was tried again.
    pub failures: u64,
    pub retries: u64,
}
