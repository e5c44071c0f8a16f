//! The statement clock (pgbench's `-r`): `Timed`, the `Session` a client's workload talks to,
//! passes every call to the engine's session and times it, attributing it to its statement of
//! the running transaction type: a prepared statement (its text, known at `prepare`), BEGIN,
//! COMMIT, ROLLBACK, or the statements a workload sends as text. A script marks its commands
//! (`Session::command`): each is then timed from its start to the next one's, meta-commands
//! included, as pgbench times them. A failed call counts against its own statement.
//!
//! The hot path neither allocates nor hashes text, and touches as little memory as it can:
//! with many clients on a core, a client's state is out of the processor's cache by its next
//! transaction, so every cache line it touches is a memory read (BENCHMARKS.md). A call is two
//! clock reads (`Ticks`: the processor's time-stamp counter where the kernel keeps time by it,
//! else the monotonic clock's nanoseconds as one integer) and one entry in a reused buffer
//! naming its statement by transaction type and slot; the clock's own state a call touches lies
//! in one cache line (`Clock`'s first fields), besides that buffer, and a prepared statement's
//! index lies beside the engine's id for it. The timings of the transaction in flight wait in that buffer until the
//! runner settles it (`settle`): kept when the transaction is measured (past the warm-up, not
//! cut short by the end of the run), dropped otherwise. Kept calls stay in the buffer until a
//! batch of them is full, then go to their lines at once (`flush`), which is when a statement's
//! line is looked up (made on its first kept call) and the ticks become nanoseconds. Each
//! client keeps its own lines and histograms, across new connections
//! (`rebind` prepares its statements again under the same ids), and sends them once at its end
//! (`Event::Statements`); the metrics merge them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::engine::{
    Cancel, Counters, DbResult, Load, LoadProgress, RowSource, ServerInfo, Session, StmtId, Value,
    activity,
};
use crate::event::StatementTimes;

/// What a call is, before its transaction type is known.
#[derive(Clone, Copy)]
enum Key {
    Begin,
    Commit,
    Rollback,
    /// Statements sent as text outside a script's command (none of the built-ins do).
    Text,
    /// A prepared statement, by its index among the texts this client prepared.
    Stmt(usize),
}

impl Key {
    /// Its slot in a transaction type's table.
    fn slot(self) -> usize {
        match self {
            Key::Begin => 0,
            Key::Commit => 1,
            Key::Rollback => 2,
            Key::Text => 3,
            Key::Stmt(i) => 4 + i,
        }
    }
}

/// Where the transaction-control lines and text statements stand in a listing: BEGIN first,
/// the statements in the order they were prepared, then the rest.
const LAST: u32 = 1 << 30;

/// A call's timing: its line or its key (`KEYED`), and its time in ticks (`Ticks`) or, for a
/// call that failed, one of the marks below (a real time never comes near them: u64::MAX ns is
/// 584 years, and the counter ticks a few times a nanosecond at most).
type Pending = (u32, u64);

/// A pending call's first figure is a key when this bit is set: its transaction type (15 bits)
/// and its slot (`Key::slot`, 16 bits), looked up as a line when its batch is flushed. Else it
/// is a line (a script's command, or a call past the key's range).
const KEYED: u32 = 1 << 31;

/// The key of a call of transaction type `txn`, when it fits.
fn key_code(txn: usize, key: Key) -> Option<u32> {
    let slot = key.slot();
    (txn < 1 << 15 && slot < 1 << 16).then_some(KEYED | (txn as u32) << 16 | slot as u32)
}

/// The transaction type and key a `key_code` names.
fn from_code(code: u32) -> (usize, Key) {
    let txn = (code >> 16 & 0x7fff) as usize;
    let key = match (code & 0xffff) as usize {
        0 => Key::Begin,
        1 => Key::Commit,
        2 => Key::Rollback,
        3 => Key::Text,
        slot => Key::Stmt(slot - 4),
    };
    (txn, key)
}

/// A failed call of the transaction in flight, until the runner settles it as one of the two below.
const ERR: u64 = u64::MAX;
/// The failed call that failed its transaction.
const FAILED: u64 = u64::MAX - 1;
/// A failed call whose transaction was tried again.
const RETRIED: u64 = u64::MAX - 2;

/// No script command open (`Clock::open_line`).
const NONE: u32 = u32::MAX;

/// Kept calls wait in the buffer until there are this many, then go to their lines at once.
const BATCH: usize = 128;

/// One client's lines and the transaction in flight. The fields before `lines` are all that a
/// call touches, and they lie in one cache line: 53 bytes, `repr(C)` keeping their order and
/// the alignment keeping them on one line (a test checks the offset of the last). A call reads
/// them before the engine's call, and after it writes only its own entry in `pending`.
#[repr(C, align(64))]
struct Clock {
    txn: usize,
    /// The kept calls not yet on their lines (`..settled`), then the transaction in flight's.
    settled: usize,
    pending: Vec<Pending>,
    /// The script command timed now: when it began (ticks) and its line (`NONE`: no command
    /// open), as two fields: an `Option` of the pair takes 24 bytes.
    open_began: u64,
    open_line: u32,
    /// The clock read: the time-stamp counter (true) or the monotonic clock (`Ticks`).
    tsc: bool,
    lines: Vec<StatementTimes>,
    /// The texts this client prepared, and their index (read at `prepare` only).
    texts: Vec<String>,
    by_text: HashMap<String, usize>,
    /// Per transaction type: its line for each `Key::slot`, as index + 1 (0: none yet).
    calls: Vec<Vec<u32>>,
    /// Per transaction type: its line for each of a script's commands, as index + 1.
    commands: Vec<Vec<u32>>,
    /// A reading of both clocks when the client began: ticks become nanoseconds by the ratio of
    /// the time since then on each (`Ticks::ns_per_tick`).
    base: (u64, u64),
}

/// A line's slot in a table grown on first sight (the only allocation, once per line).
fn slot_of(table: &mut Vec<Vec<u32>>, txn: usize, slot: usize) -> &mut u32 {
    if table.len() <= txn {
        table.resize_with(txn + 1, Vec::new);
    }
    let row = &mut table[txn];
    if row.len() <= slot {
        row.resize(slot + 1, 0);
    }
    &mut row[slot]
}

impl Clock {
    /// A clock reading the time-stamp counter when `tsc`, else the monotonic clock.
    fn new(tsc: bool) -> Clock {
        Clock {
            txn: 0,
            settled: 0,
            pending: Vec::with_capacity(2 * BATCH),
            open_began: 0,
            open_line: NONE,
            tsc,
            lines: Vec::new(),
            texts: Vec::new(),
            by_text: HashMap::new(),
            calls: Vec::new(),
            commands: Vec::new(),
            base: paired(tsc),
        }
    }

    fn new_line(&mut self, txn: usize, order: u32, text: String, as_written: bool) -> u32 {
        self.lines.push(StatementTimes {
            txn: txn as u16,
            order,
            text,
            as_written,
            calls: 0,
            sum_ns: 0,
            max_ns: 0,
            hist: Histogram::new(2).expect("valid histogram precision"),
            failures: 0,
            retries: 0,
        });
        self.lines.len() as u32 - 1
    }

    /// The script command timed now: its line and when it began.
    fn open(&self) -> Option<(u32, u64)> {
        (self.open_line != NONE).then_some((self.open_line, self.open_began))
    }

    fn set_open(&mut self, open: Option<(u32, u64)>) {
        (self.open_line, self.open_began) = open.unwrap_or((NONE, 0));
    }

    /// The statement index of a prepared text.
    fn statement(&mut self, sql: &str) -> usize {
        let text = normalise(sql);
        if let Some(&i) = self.by_text.get(&text) {
            return i;
        }
        self.texts.push(text.clone());
        self.by_text.insert(text, self.texts.len() - 1);
        self.texts.len() - 1
    }

    /// The line of `key` in transaction type `txn`, made on first sight.
    fn line_at(&mut self, txn: usize, key: Key) -> u32 {
        if let Some(&at) = self.calls.get(txn).and_then(|row| row.get(key.slot()))
            && at != 0
        {
            return at - 1;
        }
        let (order, text) = match key {
            Key::Begin => (0, "BEGIN".to_string()),
            Key::Stmt(i) => (1 + i as u32, self.texts[i].clone()),
            Key::Text => (LAST, "(statements sent as text)".to_string()),
            Key::Commit => (LAST + 1, "COMMIT".to_string()),
            Key::Rollback => (LAST + 2, "ROLLBACK".to_string()),
        };
        let line = self.new_line(txn, order, text, false);
        *slot_of(&mut self.calls, txn, key.slot()) = line + 1;
        line
    }

    /// The line of `key` in the running transaction type.
    fn line(&mut self, key: Key) -> u32 {
        self.line_at(self.txn, key)
    }

    /// What a call of `key` is pending as: its key, looked up at the flush, or its line when
    /// the key does not fit.
    fn code(&mut self, key: Key) -> u32 {
        match key_code(self.txn, key) {
            Some(code) => code,
            None => self.line(key),
        }
    }

    /// A script's command `index` begins: the one before it ends.
    fn command(&mut self, index: usize, text: &str) {
        let now = ticks(self.tsc);
        let mut at = *slot_of(&mut self.commands, self.txn, index);
        // One command may be several steps (an \elif's jump and test): timed as one.
        if self
            .open()
            .is_some_and(|(line, _)| at != 0 && line == at - 1)
        {
            return;
        }
        self.close(now);
        if at == 0 {
            at = self.new_line(self.txn, index as u32, normalise(text), true) + 1;
            *slot_of(&mut self.commands, self.txn, index) = at;
        }
        self.set_open(Some((at - 1, now)));
    }

    fn close(&mut self, now: u64) {
        if let Some((line, began)) = self.open() {
            self.set_open(None);
            self.pending.push((line, timed(began, now)));
        }
    }

    /// The transaction of type `txn` starts.
    fn start_txn(&mut self, txn: usize) {
        self.txn = txn;
        self.drop_in_flight();
    }

    /// A new transaction, or a new connection: the calls of the one in flight are dropped,
    /// the kept ones stay.
    fn drop_in_flight(&mut self) {
        self.set_open(None);
        self.pending.truncate(self.settled);
    }

    /// The runner's verdict on the transaction in flight: its timings kept when `keep`. Of
    /// its failed calls, the last one failed the transaction when `failed`; the others were
    /// tried again.
    fn settle(&mut self, keep: bool, failed: bool) {
        // The clock is read only to end a script's command still open.
        if self.open_line != NONE {
            self.close(ticks(self.tsc));
        }
        if !keep {
            self.drop_in_flight();
            return;
        }
        let calls = &mut self.pending[self.settled..];
        let last_error = calls.iter().rposition(|p| p.1 == ERR);
        for (i, call) in calls.iter_mut().enumerate() {
            if call.1 == ERR {
                call.1 = if failed && Some(i) == last_error {
                    FAILED
                } else {
                    RETRIED
                };
            }
        }
        self.settled = self.pending.len();
        if self.settled >= BATCH {
            self.flush();
        }
    }

    /// Nanoseconds a tick, by both clocks' time since the client began (1 on the monotonic
    /// clock). A batch comes a few milliseconds after the start at the soonest, and each pair
    /// of readings (`paired`) is tens of nanoseconds apart unless the thread was interrupted
    /// between them: the ratio is then good to 1 in 10,000.
    fn ns_per_tick(&self) -> f64 {
        if !self.tsc {
            return 1.0;
        }
        let (t0, n0) = self.base;
        let (t1, n1) = paired(true);
        match t1.saturating_sub(t0) {
            0 => 1.0,
            dt => n1.saturating_sub(n0) as f64 / dt as f64,
        }
    }

    /// The kept calls onto their lines, their ticks made nanoseconds.
    fn flush(&mut self) {
        if self.settled == 0 {
            return;
        }
        let per_tick = self.ns_per_tick();
        for i in 0..self.settled {
            let (code, took) = self.pending[i];
            let line = if code & KEYED != 0 {
                let (txn, key) = from_code(code);
                self.line_at(txn, key)
            } else {
                code
            };
            let l = &mut self.lines[line as usize];
            match took {
                FAILED => l.failures += 1,
                RETRIED => l.retries += 1,
                t => {
                    let ns = if self.tsc {
                        (t as f64 * per_tick) as u64
                    } else {
                        t
                    };
                    l.calls += 1;
                    l.sum_ns += ns;
                    l.max_ns = l.max_ns.max(ns);
                    // It grows to hold the value (an allocation only then): never fails.
                    let _ = l.hist.record(ns / 1000);
                }
            }
        }
        self.pending.drain(..self.settled);
        self.settled = 0;
    }
}

/// A call's time from two clock readings, below the marks of a failed call.
fn timed(began: u64, now: u64) -> u64 {
    now.saturating_sub(began).min(RETRIED - 1)
}

/// Whether the statement clock reads the processor's time-stamp counter: on x86-64 where the
/// kernel keeps time by it (its clocksource is `tsc`: the kernel found the counter constant
/// and the same on every processor). Read once. A read is a third of the monotonic clock's
/// (8 against 17 ns here, BENCHMARKS.md), and a call takes two.
fn tsc_usable() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| {
        cfg!(target_arch = "x86_64")
            && std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .is_ok_and(|s| s.trim() == "tsc")
    })
}

/// A reading of both clocks at once (ticks, nanoseconds): the counter on either side of the
/// monotonic clock, averaged, so that the pair is as close as the reads allow.
fn paired(tsc: bool) -> (u64, u64) {
    let before = ticks(tsc);
    let ns = now_ns();
    let after = ticks(tsc);
    (before + after.saturating_sub(before) / 2, ns)
}

/// A clock reading in ticks: the time-stamp counter's when `tsc`, else nanoseconds.
#[inline]
fn ticks(tsc: bool) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if tsc {
        // SAFETY: RDTSC exists on every x86-64 processor and reads a counter; `tsc` is true
        // only where the kernel keeps time by it.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    let _ = tsc;
    now_ns()
}

/// The monotonic clock (`Instant`'s own, CLOCK_MONOTONIC) in nanoseconds, one integer: a
/// call's time is one subtraction.
fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec. CLOCK_MONOTONIC exists on every Linux, so
    // the call does not fail; were it to, `ts` would stay zero and the call timed from or to
    // it would be off by the machine's uptime, so that is checked in debug builds.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// A statement's text for display and matching: whitespace runs made one space.
fn normalise(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A client's session with the statement clock over it (`clock` None: timing is off, and
/// every call goes straight through).
pub struct Timed {
    inner: Box<dyn Session>,
    /// Each `StmtId` this session gave (its index): the text prepared; its id on the engine's
    /// session now (they differ once the session was bound to a new connection) and its
    /// statement index in the clock (u32::MAX: none), side by side so that a call reads one.
    texts: Vec<String>,
    ids: Vec<(StmtId, u32)>,
    clock: Option<Box<Clock>>,
}

impl Timed {
    pub fn new(inner: Box<dyn Session>, on: bool) -> Timed {
        Timed {
            inner,
            texts: Vec::new(),
            ids: Vec::new(),
            clock: on.then(|| Box::new(Clock::new(tsc_usable()))),
        }
    }

    /// The engine's session, for calls that are not the workload's (the runner's rollback
    /// after a failed try).
    pub fn untimed(&mut self) -> &mut dyn Session {
        self.inner.as_mut()
    }

    /// Bind this session to a new connection (`-C`, a connection's end of life, a lost one):
    /// every statement prepared so far is prepared again on `fresh`, in its order, under the
    /// same `StmtId`, so the workload's client keeps its statements, its random streams and
    /// the lines timed so far. The statements are prepared before the swap: a connection on
    /// which one fails is given back unused, with the error, and the session keeps the one it
    /// had. Else gives back the connection it replaces.
    pub fn rebind(&mut self, mut fresh: Box<dyn Session>) -> (Box<dyn Session>, DbResult<()>) {
        let mut ids = Vec::with_capacity(self.texts.len());
        for text in &self.texts {
            match fresh.prepare(text) {
                Ok(id) => ids.push(id),
                Err(e) => return (fresh, Err(e)),
            }
        }
        let old = std::mem::replace(&mut self.inner, fresh);
        for (id, fresh_id) in self.ids.iter_mut().zip(ids) {
            id.0 = fresh_id;
        }
        if let Some(c) = self.clock.as_mut() {
            c.drop_in_flight();
        }
        (old, Ok(()))
    }

    /// Replace the connection without preparing anything on the new one (`-C` between
    /// transactions: `connections::Unbound`); gives back the one it replaces.
    pub fn replace(&mut self, other: Box<dyn Session>) -> Box<dyn Session> {
        std::mem::replace(&mut self.inner, other)
    }

    /// The transaction of type `txn` starts.
    pub fn start(&mut self, txn: usize) {
        if let Some(c) = self.clock.as_mut() {
            c.start_txn(txn);
        }
    }

    /// The transaction ended: its timings are kept when `keep` (see `Clock::settle`).
    pub fn settle(&mut self, keep: bool, failed: bool) {
        if let Some(c) = self.clock.as_mut() {
            c.settle(keep, failed);
        }
    }

    /// The lines timed so far, for the client's last event (None when timing is off).
    pub fn take_lines(&mut self) -> Option<Vec<StatementTimes>> {
        let clock = self.clock.as_mut()?;
        clock.drop_in_flight();
        clock.flush();
        // A line seen only outside the measured transactions (the warm-up's) has nothing.
        let lines: Vec<StatementTimes> = std::mem::take(&mut clock.lines)
            .into_iter()
            .filter(|l| l.calls + l.failures + l.retries > 0)
            .collect();
        (!lines.is_empty()).then_some(lines)
    }

    /// Run `call` on the engine's session, timed as `key` unless a script's command is open.
    fn time<T>(
        &mut self,
        key: Key,
        call: impl FnOnce(&mut dyn Session) -> DbResult<T>,
    ) -> DbResult<T> {
        let Some(clock) = self.clock.as_mut() else {
            return call(self.inner.as_mut());
        };
        if let Some((line, _)) = clock.open() {
            let out = call(self.inner.as_mut());
            if out.is_err() {
                clock.set_open(None);
                clock.pending.push((line, ERR));
            }
            return out;
        }
        // The entry is made before the call (a failed call's, until it returns well), so that
        // after it, when the engine's work has pushed the clock out of the processor's cache,
        // only the entry is touched again.
        let tsc = clock.tsc;
        let code = clock.code(key);
        clock.pending.push((code, ERR));
        let entry = clock.pending.last_mut().expect("just pushed");
        let began = ticks(tsc);
        let out = call(self.inner.as_mut());
        let now = ticks(tsc);
        if out.is_ok() {
            entry.1 = timed(began, now);
        }
        out
    }
}

impl Session for Timed {
    fn prepare(&mut self, sql: &str) -> DbResult<StmtId> {
        let inner = self.inner.prepare(sql)?;
        let id = StmtId(self.ids.len());
        self.texts.push(sql.to_string());
        let index = self
            .clock
            .as_mut()
            .and_then(|c| u32::try_from(c.statement(sql)).ok())
            .unwrap_or(u32::MAX);
        self.ids.push((inner, index));
        Ok(id)
    }

    fn execute(
        &mut self,
        stmt: StmtId,
        params: &[Value],
        rows: Option<&mut Vec<Vec<Value>>>,
    ) -> DbResult<u64> {
        let (inner, key) = match self.ids.get(stmt.0) {
            Some(&(id, i)) if i != u32::MAX => (id, Key::Stmt(i as usize)),
            Some(&(id, _)) => (id, Key::Text),
            None => (stmt, Key::Text),
        };
        self.time(key, |s| s.execute(inner, params, rows))
    }

    fn batch(&mut self, sql: &str) -> DbResult<()> {
        self.time(Key::Text, |s| s.batch(sql))
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Value>>> {
        self.time(Key::Text, |s| s.query_text(sql))
    }

    fn begin(&mut self, write: bool) -> DbResult<()> {
        self.time(Key::Begin, |s| s.begin(write))
    }

    fn commit(&mut self) -> DbResult<()> {
        self.time(Key::Commit, |s| s.commit())
    }

    fn rollback(&mut self) -> DbResult<()> {
        self.time(Key::Rollback, |s| s.rollback())
    }

    fn command(&mut self, index: usize, text: &str) {
        if let Some(c) = self.clock.as_mut() {
            c.command(index, text);
        }
    }

    fn start_pipeline(&mut self) -> DbResult<bool> {
        self.inner.start_pipeline()
    }

    fn sync_pipeline(&mut self) -> DbResult<()> {
        self.inner.sync_pipeline()
    }

    fn end_pipeline(&mut self) -> DbResult<()> {
        self.inner.end_pipeline()
    }

    fn bulk_load(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        mode: Load,
    ) -> DbResult<u64> {
        self.inner.bulk_load(table, columns, rows, progress, mode)
    }

    fn server_info(&mut self) -> DbResult<ServerInfo> {
        self.inner.server_info()
    }

    fn database_size(&mut self) -> DbResult<u64> {
        self.inner.database_size()
    }

    fn canceller(&self) -> Option<Arc<dyn Cancel>> {
        self.inner.canceller()
    }

    fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.inner.set_timeout(timeout)
    }

    fn take_notices(&mut self) -> Vec<String> {
        self.inner.take_notices()
    }

    fn set_statement_timeout(&mut self, limit: Option<Duration>) -> DbResult<()> {
        self.inner.set_statement_timeout(limit)
    }

    fn counters(&mut self) -> DbResult<Counters> {
        self.inner.counters()
    }

    fn activity(&mut self) -> DbResult<Option<Vec<activity::Activity>>> {
        self.inner.activity()
    }

    fn activity_unseen(&self) -> Option<String> {
        self.inner.activity_unseen()
    }

    fn statements(&mut self) -> DbResult<crate::engine::statements::Reading> {
        self.inner.statements()
    }

    fn connection_figures(&mut self) -> Option<crate::engine::figures::ConnectionFigures> {
        self.inner.connection_figures()
    }
}

#[cfg(test)]
mod tests {
    //! The clock on a real SQLite file: lines by statement and transaction type, latencies that
    //! grow past the histogram's first size, failures and retries, warm-up dropped, and the lines
    //! kept across a new connection.
    use super::*;
    use crate::engine::{self, EngineOptions, Protocol};

    fn sqlite() -> (tempfile::TempDir, Box<dyn crate::engine::Engine>) {
        let dir = tempfile::tempdir().unwrap();
        let dsn = crate::dsn::Dsn::sqlite(&dir.path().join("t.db"));
        let engine = engine::open(&dsn, &EngineOptions::default(), Protocol::Prepared).unwrap();
        (dir, engine)
    }

    fn line<'a>(lines: &'a [StatementTimes], txn: u16, text: &str) -> &'a StatementTimes {
        lines
            .iter()
            .find(|l| l.txn == txn && l.text == text)
            .unwrap_or_else(|| panic!("no line {txn} {text}: {lines:?}"))
    }

    #[test]
    fn what_a_call_touches_lies_in_one_cache_line() {
        assert!(std::mem::offset_of!(Clock, tsc) < 64);
        assert!(std::mem::offset_of!(Clock, open_line) + 4 <= 64);
        assert_eq!(std::mem::align_of::<Clock>(), 64);
    }

    #[test]
    fn statements_are_timed_on_their_lines_per_transaction_type() {
        let (_dir, engine) = sqlite();
        let mut s = Timed::new(engine.connect().unwrap(), true);
        s.batch("CREATE TABLE t (k INTEGER PRIMARY KEY)").unwrap();
        let ins = s.prepare("INSERT INTO t\n   VALUES (?)").unwrap();
        let sel = s.prepare("SELECT count(*) FROM t").unwrap();
        for k in 0..3 {
            s.start(k % 2);
            s.begin(true).unwrap();
            s.exec(ins, &[Value::Int(k as i64)]).unwrap();
            s.query(sel, &[]).unwrap();
            s.commit().unwrap();
            s.settle(true, false);
        }
        // A duplicate key: its failure on the INSERT's line of type 1, then tried again, and
        // failing again: one retry, one failure.
        s.start(1);
        for _ in 0..2 {
            s.begin(true).unwrap();
            assert!(s.exec(ins, &[Value::Int(1)]).is_err());
            s.untimed().rollback().unwrap();
        }
        s.settle(true, true);
        // A transaction of the warm-up: dropped.
        s.start(0);
        s.begin(true).unwrap();
        s.commit().unwrap();
        s.settle(false, false);
        let lines = s.take_lines().unwrap();
        let insert = line(&lines, 1, "INSERT INTO t VALUES (?)");
        assert_eq!((insert.calls, insert.failures, insert.retries), (1, 1, 1));
        assert_eq!(line(&lines, 0, "INSERT INTO t VALUES (?)").calls, 2);
        assert_eq!(line(&lines, 0, "BEGIN").calls, 2, "the warm-up's left out");
        assert_eq!(line(&lines, 1, "BEGIN").calls, 3);
        assert_eq!(line(&lines, 1, "SELECT count(*) FROM t").calls, 1);
        assert!(
            lines.iter().all(|l| l.text != "ROLLBACK"),
            "the runner's own"
        );
        let order: Vec<&str> = lines
            .iter()
            .filter(|l| l.txn == 0)
            .map(|l| l.text.as_str())
            .collect();
        assert_eq!(order[0], "BEGIN");
        assert!(
            lines
                .iter()
                .all(|l| l.sum_ns >= l.max_ns && l.max_ns > 0 || l.calls == 0)
        );
    }

    #[test]
    fn long_calls_keep_their_percentiles() {
        let mut c = Clock::new(false);
        let l = c.line(Key::Commit);
        for _ in 0..99 {
            c.pending.push((l, 5_000_000));
        }
        c.pending.push((l, 300_000));
        c.settle(true, false);
        c.flush();
        let h = &c.lines[l as usize].hist;
        let p50 = h.value_at_quantile(0.5);
        assert!((4950..=5050).contains(&p50), "p50 {p50} µs");
        assert_eq!(c.lines[l as usize].calls, 100);
    }

    #[test]
    fn ticks_become_the_nanoseconds_that_passed() {
        // On this machine's clock (the time-stamp counter where the kernel keeps time by it):
        // a call's ticks, made nanoseconds at the flush, are the time that passed, as the
        // monotonic clock around it saw it.
        // The counter wherever there is one (its ticks are then made nanoseconds), whatever the
        // kernel keeps time by.
        let mut c = Clock::new(cfg!(target_arch = "x86_64"));
        c.start_txn(0);
        let outer = std::time::Instant::now();
        let began = ticks(c.tsc);
        std::thread::sleep(Duration::from_millis(20));
        let took = timed(began, ticks(c.tsc));
        let outer = outer.elapsed().as_nanos() as u64;
        c.pending.push((key_code(0, Key::Commit).unwrap(), took));
        c.settle(true, false);
        c.flush();
        let ns = c.lines[0].sum_ns;
        // The monotonic clock's reads lie outside the counter's: its time is the longer, by
        // microseconds, and the ratio is good to a few parts in 100,000.
        assert!(
            ns <= outer + 20_000 && ns + 1_000_000 >= outer,
            "{ns} ns from {took} ticks, {outer} ns around them"
        );
    }

    #[test]
    fn keys_become_their_lines_when_flushed() {
        // Calls named by key are looked up at the flush, each in its own transaction type; a
        // type past the keys' range gets its line at once; a statement met only in dropped
        // transactions gets no line.
        assert_eq!(from_code(key_code(7, Key::Stmt(3)).unwrap()).0, 7);
        assert!(matches!(
            from_code(key_code(32_767, Key::Stmt(65_531)).unwrap()).1,
            Key::Stmt(65_531)
        ));
        assert!(
            key_code(1 << 15, Key::Begin).is_none() && key_code(0, Key::Stmt(65_532)).is_none()
        );
        let mut c = Clock::new(false);
        c.statement("SELECT 1");
        c.statement("SELECT 2");
        for (txn, key, keep) in [
            (0, Key::Stmt(0), true),
            (1, Key::Stmt(0), true),
            (1, Key::Stmt(0), true),
            (2, Key::Stmt(1), false),
        ] {
            c.start_txn(txn);
            c.pending.push((key_code(txn, key).unwrap(), 10));
            c.settle(keep, false);
        }
        assert!(c.lines.is_empty(), "no line before the flush");
        // A transaction type past the keys' range: its call is pending as its line, made now.
        c.start_txn(1 << 15);
        let code = c.code(Key::Stmt(1));
        assert!(code & KEYED == 0 && c.lines.len() == 1, "{code:x}");
        c.pending.push((code, 10));
        c.settle(true, false);
        c.flush();
        let got: Vec<(u16, &str, u64)> = c
            .lines
            .iter()
            .map(|l| (l.txn, l.text.as_str(), l.calls))
            .collect();
        assert_eq!(
            got,
            [
                (32_768, "SELECT 2", 1),
                (0, "SELECT 1", 1),
                (1, "SELECT 1", 2)
            ]
        );
    }

    #[test]
    fn batches_keep_every_kept_call_and_no_other() {
        // Transactions of three calls, kept or dropped, failed or tried again (errors on one
        // line or two), across several batches and a new connection: every kept call on its
        // line, once; of a failed transaction's errors the last failed it, the others were
        // tried again.
        let mut c = Clock::new(false);
        c.statement("SELECT 1");
        let ids = [
            c.line(Key::Begin),
            c.line(Key::Stmt(0)),
            c.line(Key::Commit),
        ];
        // Expected by line: calls, failures, retries.
        let mut want = [[0u64; 3]; 3];
        for i in 0..1000u64 {
            c.txn = 0;
            c.drop_in_flight();
            // Which of the second and third calls failed, and whether the transaction did.
            let (errs, failed) = match i % 6 {
                0 => ([true, true], true),
                1 => ([true, false], false),
                2 => ([true, false], true),
                3 => ([false, true], true),
                4 => ([false, true], false),
                _ => ([false, false], false),
            };
            c.pending.push((ids[0], 1_000 + i));
            for (k, err) in errs.iter().enumerate() {
                c.pending.push((ids[k + 1], if *err { ERR } else { 2_000 }));
            }
            if i % 97 == 50 {
                // A lost connection in the middle of a transaction: its calls go.
                c.drop_in_flight();
                continue;
            }
            let keep = i % 7 != 3;
            c.settle(keep, failed);
            if keep {
                want[0][0] += 1;
                let last = errs.iter().rposition(|e| *e);
                for (k, err) in errs.iter().enumerate() {
                    let slot = match (err, failed && Some(k) == last) {
                        (false, _) => 0,
                        (true, true) => 1,
                        (true, false) => 2,
                    };
                    want[k + 1][slot] += 1;
                }
            }
            assert!(c.pending.len() <= BATCH + 3, "flushed as batches fill");
        }
        c.drop_in_flight();
        c.flush();
        for (k, &id) in ids.iter().enumerate() {
            let l = &c.lines[id as usize];
            assert_eq!([l.calls, l.failures, l.retries], want[k], "line {k}");
            assert_eq!(l.hist.len(), l.calls, "line {k}");
        }
        // Failures and retries on both erring lines, in unequal numbers (a swap would show).
        assert!(want[1][1] > 0 && want[1][2] > 0 && want[2][1] > 0 && want[2][2] > 0);
        assert!(want[1][1] != want[1][2] && want[0][0] > 2 * BATCH as u64);
        assert_eq!(c.lines[ids[1] as usize].max_ns, 2_000);
        assert_eq!(c.lines[ids[0] as usize].max_ns, 1_999);
    }

    #[test]
    fn a_scripts_commands_are_timed_from_one_to_the_next() {
        let (_dir, engine) = sqlite();
        let mut s = Timed::new(engine.connect().unwrap(), true);
        s.start(0);
        s.command(1, "\\set x 1");
        s.command(2, "BEGIN;");
        s.begin(false).unwrap();
        s.command(3, "SELECT   1;");
        std::thread::sleep(Duration::from_millis(3));
        s.query_text("SELECT 1").unwrap();
        s.command(3, "SELECT   1;");
        s.command(4, "END;");
        s.commit().unwrap();
        s.settle(true, false);
        let lines = s.take_lines().unwrap();
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["\\set x 1", "BEGIN;", "SELECT 1;", "END;"]);
        assert!(lines.iter().all(|l| l.calls == 1 && l.as_written));
        assert!(
            lines[2].sum_ns >= 3_000_000,
            "the command's time: {}",
            lines[2].sum_ns
        );
    }

    #[test]
    fn a_new_connection_keeps_the_statements_and_their_lines() {
        let (_dir, engine) = sqlite();
        let mut s = Timed::new(engine.connect().unwrap(), true);
        let a = s.prepare("SELECT 1").unwrap();
        let b = s.prepare("SELECT 2 + ?").unwrap();
        s.start(0);
        s.exec(a, &[]).unwrap();
        s.settle(true, false);
        // The new connection has a statement of its own first: its ids differ from the old's.
        let mut fresh = engine.connect().unwrap();
        fresh.prepare("SELECT 3").unwrap();
        let (old, again) = s.rebind(fresh);
        again.unwrap();
        drop(old);
        s.start(0);
        s.exec(a, &[]).unwrap();
        let rows = s.query(b, &[Value::Int(5)]).unwrap();
        assert_eq!(rows[0][0].as_i64(), Some(7), "{rows:?}");
        s.settle(true, false);
        let lines = s.take_lines().unwrap();
        assert_eq!(line(&lines, 0, "SELECT 1").calls, 2);
        assert_eq!(line(&lines, 0, "SELECT 2 + ?").calls, 1);
        assert_eq!(lines.len(), 2);
    }

    #[test]
    fn switched_off_it_only_passes_calls_on() {
        let (_dir, engine) = sqlite();
        let mut s = Timed::new(engine.connect().unwrap(), false);
        let a = s.prepare("SELECT 1").unwrap();
        s.start(0);
        s.exec(a, &[]).unwrap();
        s.settle(true, false);
        assert!(s.take_lines().is_none());
    }
}
