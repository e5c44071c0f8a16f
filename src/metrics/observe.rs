//! The server observer: once a second during a run, a thread reads the server's process tree from
//! /proc (CPU, memory as PSS, storage I/O) and its background events through a dedicated session
//! (`Session::counters`: checkpoints, autovacuums, database size), and keeps one `ResourceSample`
//! per second. Each reading is bounded (2 s: a lost or stalled session is given up), and `stop` is
//! never held by a stalled server (it returns the samples taken so far).

use std::collections::HashMap;
use std::io::Read;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::engine::{Counters, ErrorClass, Session};

/// What the server did in one second of the run.
#[derive(Debug, Clone, Serialize)]
pub struct ResourceSample {
    /// Seconds since the clients' release at the end of this second (as `Window::t`); 0 before
    /// it.
    pub t: u32,
    /// User + system CPU seconds of the server's process tree since the observer started.
    pub server_cpu_s: f64,
    /// Resident memory of the tree, shared pages counted once: every process's private pages
    /// plus the shared memory and the file-backed pages that the most any one process has.
    pub server_rss_bytes: Option<u64>,
    /// Bytes the tree read from and wrote to storage since the observer started.
    pub read_bytes: Option<u64>,
    pub written_bytes: Option<u64>,
    /// Checkpoints and autovacuum (or autoanalyze) runs completed during this second; 0 also
    /// where the engine cannot tell, or when reading failed (the next reading then has them).
    pub checkpoints: u32,
    pub autovacuums: u32,
    pub database_size_bytes: Option<u64>,
}

/// Samples the server once a second on its own thread, until stopped.
pub struct Observer {
    stop: Sender<()>,
    samples: Arc<Mutex<Vec<ResourceSample>>>,
    thread: Option<JoinHandle<()>>,
}

/// How long the server has to answer one reading of its counters; past it, the observer's
/// session is given up and later samples have no counters (a stalled server).
const COUNTER_DEADLINE: Duration = Duration::from_secs(2);

/// How long `stop` waits for a sample under way before it returns the samples taken so far
/// (an engine whose connection cannot be bounded by `COUNTER_DEADLINE`, blocked on a stalled
/// server, is left to its thread).
const STOP_WAIT: Duration = Duration::from_secs(3);

impl Observer {
    /// Sample once a second the process tree rooted at `pid` (the server's main process; None
    /// for a server dbduel did not start or an embedded engine) and the engine counters through
    /// `session` (a dedicated connection; None to skip). The seconds are the runner's windows':
    /// t counts from the clients' release, `released` once set (the observer starts before the
    /// clients connect, which can take seconds); samples before it are t = 0.
    pub fn start(
        pid: Option<u32>,
        session: Option<Box<dyn Session>>,
        released: Arc<OnceLock<Instant>>,
    ) -> Observer {
        let (stop, stopped) = mpsc::channel();
        let sampler = Sampler {
            tree: pid.map(ProcTree::new),
            counters: session.map(CounterReader::new),
        };
        let samples = Arc::new(Mutex::new(Vec::new()));
        let kept = samples.clone();
        let thread = std::thread::Builder::new()
            .name("observer".into())
            .spawn(move || sampler.run(&released, &stopped, &kept))
            .ok();
        Observer {
            stop,
            samples,
            thread,
        }
    }

    /// Stop sampling and return one sample per second: never held by a server that stopped
    /// answering (the sample under way is waited for `STOP_WAIT` at most).
    pub fn stop(self) -> Vec<ResourceSample> {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread {
            let deadline = Instant::now() + STOP_WAIT;
            while !thread.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

struct Sampler {
    tree: Option<ProcTree>,
    counters: Option<CounterReader>,
}

impl Sampler {
    /// Sample at the start (t = 0), once a second until the clients' release (t = 0, asking
    /// every `RELEASE_STEP` whether it came), at each whole second since the release (t = 1 at
    /// its first), and when told to stop (t = the second under way, however short): a point
    /// shorter than a second still has its server memory. A second whose tick came while the
    /// previous sample was still being read (a stalled counter query) is skipped.
    fn run(
        mut self,
        released: &OnceLock<Instant>,
        stop: &Receiver<()>,
        samples: &Mutex<Vec<ResourceSample>>,
    ) {
        let keep = |s: ResourceSample| samples.lock().unwrap_or_else(|p| p.into_inner()).push(s);
        keep(self.sample(0));
        let (mut t, mut last) = (0, Instant::now());
        loop {
            let (due, next) = match released.get() {
                Some(&origin) => {
                    let next = (t + 1).max(next_second(origin));
                    (origin + Duration::from_secs(u64::from(next)), next)
                }
                None => (
                    (Instant::now() + RELEASE_STEP).min(last + Duration::from_secs(1)),
                    0,
                ),
            };
            let wait = due.saturating_duration_since(Instant::now());
            let stopping = !matches!(stop.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
            if next == 0 && !stopping && last.elapsed() < Duration::from_secs(1) {
                continue;
            }
            keep(self.sample(next));
            (t, last) = (next, Instant::now());
            if stopping {
                return;
            }
        }
    }

    fn sample(&mut self, t: u32) -> ResourceSample {
        let tree = self.tree.as_mut().map(ProcTree::read).unwrap_or_default();
        let events = self
            .counters
            .as_mut()
            .map(CounterReader::read)
            .unwrap_or_default();
        ResourceSample {
            t,
            server_cpu_s: tree.cpu_s,
            server_rss_bytes: tree.memory,
            read_bytes: tree.read,
            written_bytes: tree.written,
            checkpoints: events.checkpoints,
            autovacuums: events.autovacuums,
            database_size_bytes: events.size,
        }
    }
}

/// How often the observer asks whether the clients were released, before they were.
const RELEASE_STEP: Duration = Duration::from_millis(50);

/// The first whole second since `start` still ahead.
fn next_second(start: Instant) -> u32 {
    u32::try_from(start.elapsed().as_secs() + 1).unwrap_or(u32::MAX)
}

/// A process, told apart from a later one with the same pid by its start time.
type Key = (u32, u64);

/// One reading of the process tree.
#[derive(Default)]
struct TreeReading {
    cpu_s: f64,
    memory: Option<u64>,
    read: Option<u64>,
    written: Option<u64>,
}

/// The server's process tree, read from /proc, with its cumulative counters.
struct ProcTree {
    root: u32,
    /// Clock ticks per second, the unit of /proc's CPU times.
    ticks_per_s: f64,
    cpu: TreeSum,
    read: TreeSum,
    written: TreeSum,
    buf: String,
}

impl ProcTree {
    /// Start observing the tree at `root`; this first reading is the baseline.
    fn new(root: u32) -> ProcTree {
        // SAFETY: sysconf only reads a configuration value.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let mut tree = ProcTree {
            root,
            ticks_per_s: if ticks > 0 { ticks as f64 } else { 100.0 },
            cpu: TreeSum::default(),
            read: TreeSum::default(),
            written: TreeSum::default(),
            buf: String::new(),
        };
        tree.read();
        tree
    }

    /// One pass over /proc: the tree's CPU, memory and I/O.
    fn read(&mut self) -> TreeReading {
        let procs = scan_proc(&mut self.buf);
        let members = descendants(self.root, &procs);
        let cpu = self
            .cpu
            .update(members.iter().map(|p| (p.key, Some(p.ticks))));
        let io: Vec<(Key, Option<(u64, u64)>)> =
            members.iter().map(|p| (p.key, read_io(p.key.0))).collect();
        // Storage I/O is known when the root's is readable (the same account's processes).
        let io_known = io.first().is_some_and(|(_, v)| v.is_some());
        let read = self
            .read
            .update(io.iter().map(|(k, v)| (*k, v.map(|v| v.0))));
        let written = self
            .written
            .update(io.iter().map(|(k, v)| (*k, v.map(|v| v.1))));
        let memory = tree_memory(members.iter().filter_map(|p| read_memory(p.key.0)));
        TreeReading {
            cpu_s: cpu as f64 / self.ticks_per_s,
            memory,
            read: io_known.then_some(read),
            written: io_known.then_some(written),
        }
    }
}

/// A counter summed over a changing set of processes that never goes backwards: a process
/// that exits keeps the last value read from it (what it did after that reading is not seen).
#[derive(Default)]
struct TreeSum {
    last: HashMap<Key, u64>,
    gone: u64,
    base: Option<u64>,
}

impl TreeSum {
    /// Take this pass's value of each live process (None: alive but unreadable this time) and
    /// return the total since the first pass.
    fn update(&mut self, live: impl Iterator<Item = (Key, Option<u64>)>) -> u64 {
        let mut now = HashMap::new();
        for (key, value) in live {
            let last = self.last.remove(&key);
            if let Some(v) = value.max(last) {
                now.insert(key, v);
            }
        }
        self.gone += self.last.values().sum::<u64>();
        self.last = now;
        let total = self.gone + self.last.values().sum::<u64>();
        total.saturating_sub(*self.base.get_or_insert(total))
    }
}

/// A process as /proc/<pid>/stat tells it.
#[derive(Debug)]
struct Proc {
    key: Key,
    ppid: u32,
    /// User + system CPU time, in clock ticks.
    ticks: u64,
}

/// One pass over /proc: every process's parent, start time and CPU ticks.
fn scan_proc(buf: &mut String) -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            read_into(&format!("/proc/{pid}/stat"), buf)?;
            parse_stat(pid, buf)
        })
        .collect()
}

fn read_into(path: &str, buf: &mut String) -> Option<()> {
    buf.clear();
    std::fs::File::open(path).ok()?.read_to_string(buf).ok()?;
    Some(())
}

/// Fields 4 (ppid), 14 and 15 (utime, stime) and 22 (starttime) of proc(5)'s stat; the
/// command name (field 2) may hold spaces and parentheses, so fields count from its last ')'.
fn parse_stat(pid: u32, stat: &str) -> Option<Proc> {
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Proc {
        key: (pid, field(22)?),
        ppid: u32::try_from(field(4)?).ok()?,
        ticks: field(14)? + field(15)?,
    })
}

/// `root` and every process below it, the root first (empty when the root is gone).
fn descendants(root: u32, procs: &[Proc]) -> Vec<&Proc> {
    let mut children: HashMap<u32, Vec<&Proc>> = HashMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut members: Vec<&Proc> = procs.iter().filter(|p| p.key.0 == root).collect();
    let mut i = 0;
    while i < members.len() {
        if let Some(c) = children.get(&members[i].key.0) {
            members.extend(c.iter().filter(|p| p.key.0 != root));
        }
        i += 1;
    }
    members
}

/// Bytes read from and written to storage (read_bytes, write_bytes of /proc/<pid>/io).
fn read_io(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    Some((kv(&text, "read_bytes:")?, kv(&text, "write_bytes:")?))
}

/// One process's resident memory, in bytes, by kind (from /proc/<pid>/status).
#[derive(Debug, Default, Clone, Copy)]
struct Memory {
    /// Anonymous pages: the process's own heap and stacks.
    private: u64,
    /// Pages of mapped files: the server's binary and libraries, shared by the whole tree.
    file: u64,
    /// Shared memory (PostgreSQL's shared_buffers, mapped by every backend), huge pages too.
    shared: u64,
}

/// Read from /proc/<pid>/status, which any user may read and which costs no page-table walk
/// (PSS from smaps_rollup does: about 20 ms per resident GiB per process, with every backend
/// mapping shared_buffers, too much to pay each second during a benchmark).
fn read_memory(pid: u32) -> Option<Memory> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let bytes = |key| kv(&text, key).map(|kb| kb * 1024);
    Some(Memory {
        private: bytes("RssAnon:")?,
        file: bytes("RssFile:")?,
        shared: bytes("RssShmem:")? + bytes("HugetlbPages:").unwrap_or(0),
    })
}

/// The tree's memory with shared pages counted once: every process's private pages plus the
/// largest shared and file-backed residency of any one process (a lower bound of their union,
/// close to it once a busy process such as the checkpointer has touched the buffers).
fn tree_memory(processes: impl Iterator<Item = Memory>) -> Option<u64> {
    let total = processes.reduce(|a, b| Memory {
        private: a.private + b.private,
        file: a.file.max(b.file),
        shared: a.shared.max(b.shared),
    })?;
    Some(total.private + total.file + total.shared)
}

/// The number after `key` on the line that starts with it.
fn kv(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix(key))?;
    line.split_whitespace().next()?.parse().ok()
}

/// What the engine's counters say about one second.
#[derive(Default)]
struct Events {
    checkpoints: u32,
    autovacuums: u32,
    size: Option<u64>,
}

/// The engine's cumulative counters, read through the observer's own session.
struct CounterReader {
    /// None once the connection was lost or the server stopped answering.
    session: Option<Box<dyn Session>>,
    last: Counters,
}

impl CounterReader {
    /// Start reading, every reading bounded by `COUNTER_DEADLINE`; this first reading is the
    /// baseline.
    fn new(mut session: Box<dyn Session>) -> CounterReader {
        session.set_timeout(Some(COUNTER_DEADLINE));
        let mut reader = CounterReader {
            session: Some(session),
            last: Counters::default(),
        };
        reader.last = reader.counters().unwrap_or_default();
        reader
    }

    /// The counters now; a lost or stalled connection is given up (a later read would only
    /// wait for it again), any other error is one second without counters.
    fn counters(&mut self) -> Option<Counters> {
        match self.session.as_mut()?.counters() {
            Ok(now) => Some(now),
            Err(e) => {
                if matches!(
                    e.class,
                    ErrorClass::ConnectionLost | ErrorClass::Unreachable
                ) {
                    self.session = None;
                }
                None
            }
        }
    }

    fn read(&mut self) -> Events {
        let Some(now) = self.counters() else {
            return Events::default();
        };
        Events {
            checkpoints: increase(now.checkpoints, &mut self.last.checkpoints),
            autovacuums: increase(now.autovacuums, &mut self.last.autovacuums),
            size: now.database_size_bytes,
        }
    }
}

/// How much a cumulative counter grew since its last reading (0 when either is unknown, or
/// when the counter was reset); the reading becomes the new last one.
fn increase(now: Option<u64>, last: &mut Option<u64>) -> u32 {
    let grown = match (now, *last) {
        (Some(n), Some(l)) => n.saturating_sub(l),
        _ => 0,
    };
    if now.is_some() {
        *last = now;
    }
    u32::try_from(grown).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};

    /// A child process killed when the test ends, however it ends.
    struct Spawned(Child);

    impl Drop for Spawned {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn spawn(script: &str) -> Spawned {
        let mut sh = Command::new("sh");
        // A killed job's "Terminated" would land in the test output.
        sh.args(["-c", script]).stderr(std::process::Stdio::null());
        Spawned(sh.spawn().expect("sh"))
    }

    fn observe(
        pid: Option<u32>,
        session: Option<Box<dyn Session>>,
        secs: f64,
    ) -> Vec<ResourceSample> {
        let released = Arc::new(OnceLock::new());
        let _ = released.set(Instant::now());
        let observer = Observer::start(pid, session, released);
        std::thread::sleep(Duration::from_secs_f64(secs));
        observer.stop()
    }

    #[test]
    fn seconds_count_from_the_clients_release() {
        let released = Arc::new(OnceLock::new());
        let observer = Observer::start(None, None, released.clone());
        std::thread::sleep(Duration::from_millis(1500));
        let _ = released.set(Instant::now());
        std::thread::sleep(Duration::from_millis(1500));
        let t: Vec<u32> = observer.stop().iter().map(|s| s.t).collect();
        // The start and a second later before the release, then its first whole second, and
        // the stop half-way through its second.
        assert_eq!(t, [0, 0, 1, 2]);
    }

    #[test]
    fn a_busy_process_cpu_grows_each_second() {
        let child = spawn("while :; do :; done");
        let samples = observe(Some(child.0.id()), None, 2.5);
        let t: Vec<u32> = samples.iter().map(|s| s.t).collect();
        // At the start, at each whole second, and at the stop (t = 3, half a second).
        assert_eq!(t, [0, 1, 2, 3], "{samples:?}");
        assert!(samples[1].server_cpu_s > 0.2, "{samples:?}");
        assert!(
            samples[2].server_cpu_s > samples[1].server_cpu_s + 0.2,
            "{samples:?}"
        );
        assert!(
            samples.iter().all(|s| s.server_rss_bytes > Some(0)),
            "{samples:?}"
        );
        assert!(
            samples
                .iter()
                .all(|s| s.read_bytes.is_some() && s.checkpoints == 0)
        );
    }

    #[test]
    fn a_vanished_child_keeps_its_cpu() {
        // The busy grandchild runs for 1.4 s, is killed and reaped; its parent sleeps on.
        let child =
            spawn("sh -c 'while :; do :; done' & p=$!; sleep 1.4; kill $p; wait $p; sleep 30");
        let samples = observe(Some(child.0.id()), None, 3.5);
        let cpu: Vec<f64> = samples.iter().map(|s| s.server_cpu_s).collect();
        assert_eq!(samples.len(), 5, "{samples:?}");
        assert!(cpu[1] > 0.2, "the child's CPU is counted: {cpu:?}");
        assert!(
            cpu.windows(2).all(|w| w[1] >= w[0]),
            "went backwards: {cpu:?}"
        );
        assert!(
            cpu[3] < cpu[2] + 0.05,
            "nothing runs after the child is gone: {cpu:?}"
        );
    }

    #[test]
    fn a_point_shorter_than_a_second_is_sampled_at_start_and_end() {
        let child = spawn("sleep 30");
        let samples = observe(Some(child.0.id()), None, 0.3);
        let t: Vec<u32> = samples.iter().map(|s| s.t).collect();
        assert_eq!(t, [0, 1], "{samples:?}");
        assert!(
            samples.iter().all(|s| s.server_rss_bytes > Some(0)),
            "{samples:?}"
        );
    }

    #[test]
    fn counters_through_a_session_and_no_process() {
        let dir = tempfile::tempdir().unwrap();
        let dsn = crate::engine::parse_dsn(&format!("sqlite://{}/o.db", dir.path().display()));
        let engine = crate::engine::open(
            &dsn.unwrap(),
            &crate::engine::EngineOptions::default(),
            crate::engine::Protocol::Simple,
        )
        .unwrap();
        let mut session = engine.connect().unwrap();
        session.batch("CREATE TABLE t (x INTEGER)").unwrap();
        let samples = observe(None, Some(session), 1.2);
        assert_eq!(samples.len(), 3, "{samples:?}");
        let s = &samples[1];
        assert!(s.database_size_bytes > Some(0), "{s:?}");
        assert!(s.server_cpu_s == 0.0 && s.server_rss_bytes.is_none() && s.read_bytes.is_none());
    }

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let stat = "42 (a (b) c) S 7 1 1 0 -1 4194560 1 0 0 0 150 25 0 0 20 0 1 0 9876 1 1";
        let p = parse_stat(42, stat).unwrap();
        assert_eq!((p.key, p.ppid, p.ticks), ((42, 9876), 7, 175));
        assert!(parse_stat(1, "1 (x").is_none());
    }

    #[test]
    fn the_tree_holds_grandchildren_only_below_the_root() {
        let p = |pid, ppid| Proc {
            key: (pid, 0),
            ppid,
            ticks: 0,
        };
        let procs = [p(1, 0), p(10, 1), p(11, 10), p(12, 11), p(20, 1), p(13, 10)];
        let pids: Vec<u32> = descendants(10, &procs).iter().map(|p| p.key.0).collect();
        assert_eq!(pids, [10, 11, 13, 12]);
        assert!(descendants(99, &procs).is_empty());
    }

    #[test]
    fn a_tree_sum_never_goes_backwards() {
        let mut sum = TreeSum::default();
        assert_eq!(
            sum.update([((1, 0), Some(100)), ((2, 0), Some(50))].into_iter()),
            0
        );
        assert_eq!(
            sum.update([((1, 0), Some(110)), ((2, 0), Some(70))].into_iter()),
            30
        );
        // 2 exits, 1 is unreadable this time, 3 is new: 2's 70 stays, 1's 110 is kept.
        assert_eq!(
            sum.update([((1, 0), None), ((3, 0), Some(5))].into_iter()),
            35
        );
        // pid 3 reused by a later process: the old one's value stays, the new one adds.
        assert_eq!(
            sum.update([((1, 0), Some(120)), ((3, 9), Some(1))].into_iter()),
            46
        );
    }

    #[test]
    fn shared_memory_counts_once_in_a_tree() {
        let m = |private, file, shared| Memory {
            private,
            file,
            shared,
        };
        let tree = [m(10, 5, 100), m(3, 4, 80), m(2, 5, 120)];
        assert_eq!(tree_memory(tree.into_iter()), Some(15 + 5 + 120));
        assert_eq!(tree_memory(std::iter::empty()), None);
        assert!(read_memory(std::process::id()).is_some_and(|m| m.private > 0));
    }

    #[test]
    fn increases_count_from_a_known_reading() {
        let mut last = None;
        assert_eq!(increase(Some(5), &mut last), 0);
        assert_eq!(increase(Some(7), &mut last), 2);
        assert_eq!(increase(None, &mut last), 0);
        assert_eq!(increase(Some(8), &mut last), 1);
        assert_eq!(increase(Some(1), &mut last), 0, "a reset counts nothing");
        assert_eq!(last, Some(1));
    }
}
