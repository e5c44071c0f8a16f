//! Many clients on one thread: each client a stackful coroutine (`corosensei`) that parks,
//! instead of blocking its thread, when its socket has nothing to read or no room to write, when
//! it sleeps and at the runner's gates; one epoll per thread wakes the parked ones (by hand: the
//! `polling` crate spent four more system calls a wait on its timer and wake-up descriptors,
//! BENCHMARKS.md). Nothing above has to change for it: the engines' sockets go through `Coop` (a blocking
//! read or write outside a coroutine, a non-blocking one that parks inside), their TCP connects
//! through `connect_host` (the name looked up on a thread of its own), sleeps through
//! `sleep`, the runner's start through `gate`. A driver that owns its sockets (Firebird's crate)
//! or has none (SQLite) would block the whole thread: such an engine keeps a thread per client
//! (`Engine::multiplexed`).

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use socket2::{Domain, Protocol, Socket, Type};

/// A coroutine's stack: address space reserved, pages used only as deep as the client's calls
/// go (a few tens of KiB touched), so ten thousand of them fit in a small resident set.
const STACK: usize = 1024 * 1024;

/// Why a coroutine parks.
enum Park {
    /// Until its socket is readable (or writable), or the deadline; `watch`: (re)register
    /// the socket with the poller first: at its first wait on this thread (edge-triggered, for
    /// good: each later wait costs no system call), and at its first wait to write (readable
    /// only until then: a socket watched for room to write would wake its thread each time the
    /// server reads a request, for nothing).
    Io {
        fd: RawFd,
        write: bool,
        deadline: Option<Instant>,
        watch: bool,
    },
    Sleep(Instant),
    /// Until every coroutine of its thread is at the gate (`gate`).
    Gate,
}

/// What wakes a parked coroutine.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wake {
    Ready,
    TimedOut,
    /// The poller refused to watch the socket: try the operation, and register it next time.
    Unwatched,
}

type Parker = Yielder<Wake, Park>;

thread_local! {
    /// The running coroutine's yielder; null outside a coroutine.
    static CURRENT: Cell<*const Parker> = const { Cell::new(std::ptr::null()) };
    /// The number of the scheduler (`run`) running on this thread; 0 outside one.
    static SCHEDULER: Cell<u64> = const { Cell::new(0) };
}

/// Numbers schedulers, so that a socket knows whether this thread's poller watches it.
static SCHEDULERS: AtomicU64 = AtomicU64::new(1);

/// True inside a coroutine run by `run`.
pub fn active() -> bool {
    !CURRENT.with(Cell::get).is_null()
}

/// Park the running coroutine; what woke it.
fn park(why: Park) -> Wake {
    let me = CURRENT.with(Cell::get);
    assert!(!me.is_null(), "coop::park outside a coroutine");
    // SAFETY: `me` is the running coroutine's own yielder (set by it at its start and after each
    // wake), which lives on that coroutine's stack for as long as the coroutine runs.
    let woke = unsafe { &*me }.suspend(why);
    CURRENT.with(|c| c.set(me));
    woke
}

/// Sleep until `when`: the coroutine parks, or the thread sleeps outside one.
pub fn sleep_until(when: Instant) {
    if active() {
        if when > Instant::now() {
            park(Park::Sleep(when));
        }
    } else {
        std::thread::sleep(when.saturating_duration_since(Instant::now()));
    }
}

/// Sleep for `d` (`sleep_until`).
pub fn sleep(d: Duration) {
    sleep_until(Instant::now() + d);
}

/// Inside a coroutine: park until every coroutine of the thread has reached a gate, when the
/// thread passes its `run` gate (its `pass` callback) and releases them all. Outside one: `alone`.
pub fn gate(alone: impl FnOnce()) {
    if active() {
        park(Park::Gate);
    } else {
        alone();
    }
}

/// Connect to `host`:`port` within `timeout` (each address in turn): every address the name
/// has, tried in turn as libpq and the MariaDB client do (localhost may be ::1 first), each
/// through `connect`; the last address's error when none answers.
pub fn connect_host(host: &str, port: u16, timeout: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(
        io::ErrorKind::NotFound,
        format!("host {host} has no address"),
    );
    for addr in lookup(host, port, timeout)? {
        match connect(&addr, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The addresses of `host`:`port`, as `ToSocketAddrs` gives them. Inside a coroutine a name
/// (not an address) is looked up on a thread of its own while the coroutine parks: a slow
/// resolver holds up its own client only, not the others of its thread, and no longer than
/// `timeout` (outside a coroutine the system resolver's own timeouts bound it).
pub fn lookup(host: &str, port: u16, timeout: Duration) -> io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let resolve = move |host: &str| (host, port).to_socket_addrs().map(Iterator::collect);
    if !active() {
        return resolve(host);
    }
    aside(host, timeout, resolve)
}

/// `resolve(host)` on a thread of its own while the coroutine parks until it is done, or
/// `timeout` has passed (the thread is then left to end by itself).
fn aside<T: Send + 'static>(
    host: &str,
    timeout: Duration,
    resolve: impl FnOnce(&str) -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let deadline = Instant::now() + timeout;
    let (waker, done) = UnixStream::pair()?;
    done.set_nonblocking(true)?;
    let name = host.to_string();
    let worker = std::thread::Builder::new()
        .name("dbduel-lookup".into())
        .spawn(move || {
            let got = resolve(&name);
            let _ = (&waker).write_all(&[1]);
            got
        })?;
    loop {
        match (&done).read(&mut [0]) {
            // Written last: the thread is ending, its join waits no longer than that.
            Ok(_) => {
                return worker
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("the name lookup failed")));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("looking up {host} took longer than {timeout:?}"),
            ));
        }
        // Registered anew each time: the poller reports the pair's present state.
        park(Park::Io {
            fd: done.as_raw_fd(),
            write: false,
            deadline: Some(deadline),
            watch: true,
        });
    }
}

/// Connect to `addr` within `timeout`, as `TcpStream::connect_timeout` does (and with it,
/// outside a coroutine). Inside one the connect is started without waiting and the coroutine
/// parks until the handshake is done: a far, slow or silent server holds up its own client
/// only, not the others of its thread. The stream given back blocks, as a connected one does.
pub fn connect(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    if !active() {
        return TcpStream::connect_timeout(addr, timeout);
    }
    let socket = Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.set_nonblocking(true)?;
    let deadline = Instant::now() + timeout;
    let mut watch = true;
    match socket.connect(&(*addr).into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => loop {
            let why = Park::Io {
                fd: socket.as_raw_fd(),
                write: true,
                deadline: Some(deadline),
                watch,
            };
            let woke = park(why);
            if let Some(e) = socket.take_error()? {
                return Err(e);
            }
            match socket.peer_addr() {
                Ok(_) => break,
                Err(e) if e.raw_os_error() != Some(libc::ENOTCONN) => return Err(e),
                Err(_) if woke == Wake::TimedOut || Instant::now() >= deadline => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "connection timed out",
                    ));
                }
                // Not connected yet: a wake for an earlier edge, or the poller refused the
                // socket (then it is tried again after a pause, never spun on).
                Err(_) => {
                    if woke == Wake::Unwatched {
                        sleep(Duration::from_millis(1));
                    }
                    watch = woke == Wake::Unwatched;
                }
            }
        },
        Err(e) => return Err(e),
    }
    socket.set_nonblocking(false)?;
    Ok(socket.into())
}

/// A socket whose reads and writes park the coroutine instead of blocking its thread (and block
/// as before outside a coroutine). Its timeout bounds each read or write as the socket's own
/// read and write timeouts do, with the same error (`WouldBlock`) when it passes. It belongs to
/// the coroutine that first waits on it: the poller wakes that one for it.
///
/// A read right after a whole request was written parks before it tries: the answer cannot be
/// there yet, and its arrival is an edge the poller reports (one system call less a round trip).
pub struct Coop<S> {
    inner: S,
    timeout: Cell<Option<Duration>>,
    /// The scheduler whose poller watches the socket (0: none).
    watched: Cell<u64>,
    /// That poller watches it for room to write too.
    watched_out: Cell<bool>,
    /// The last operation was a write that did not wait.
    wrote: Cell<bool>,
}

impl<S: AsRawFd> Coop<S> {
    pub fn new(inner: S) -> Coop<S> {
        Coop {
            inner,
            timeout: Cell::new(None),
            watched: Cell::new(0),
            watched_out: Cell::new(false),
            wrote: Cell::new(false),
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Bound a coroutine's reads and writes; the caller sets the socket's own timeouts too,
    /// for reads outside a coroutine.
    pub fn set_timeout(&self, t: Option<Duration>) {
        self.timeout.set(t);
    }

    /// Park until the socket is ready for `write` (or reading); false at the deadline.
    fn wait(&self, write: bool, deadline: Option<Instant>) -> bool {
        let here = SCHEDULER.with(Cell::get);
        let new = self.watched.get() != here;
        let watch = new || (write && !self.watched_out.get());
        let why = Park::Io {
            fd: self.inner.as_raw_fd(),
            write,
            deadline,
            watch,
        };
        let woke = park(why);
        if woke != Wake::Unwatched && watch {
            self.watched.set(here);
            self.watched_out.set(write);
        }
        woke != Wake::TimedOut
    }

    /// `op` (a non-blocking recv or send) until it does not need to wait, parking first when
    /// `first` says so; the count, and whether it parked.
    fn retry(
        &self,
        write: bool,
        first: bool,
        mut op: impl FnMut(RawFd) -> isize,
    ) -> io::Result<(usize, bool)> {
        let fd = self.inner.as_raw_fd();
        let deadline = self.timeout.get().map(|t| Instant::now() + t);
        let mut parked = first;
        // After the deadline, one last try: what came with the timer is not lost.
        let mut last = first && !self.wait(write, deadline);
        loop {
            let n = op(fd);
            if n >= 0 {
                return Ok((n as usize, parked));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock if last => return Err(e),
                io::ErrorKind::WouldBlock => {
                    parked = true;
                    last = !self.wait(write, deadline);
                }
                io::ErrorKind::Interrupted => {}
                _ => return Err(e),
            }
        }
    }
}

impl<S: Read + AsRawFd> Read for Coop<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !active() {
            self.wrote.set(false);
            return self.inner.read(buf);
        }
        let first = self.wrote.replace(false);
        self.retry(false, first, |fd| {
            // SAFETY: `buf` is valid for writes of its length.
            unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) }
        })
        .map(|(n, _)| n)
    }
}

impl<S: Write + AsRawFd> Write for Coop<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !active() {
            self.wrote.set(false);
            return self.inner.write(buf);
        }
        // A write that waited may have let the poller pass over the socket's readable edge.
        let (n, parked) = self.retry(true, false, |fd| {
            let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
            // SAFETY: `buf` is valid for reads of its length.
            unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), flags) }
        })?;
        self.wrote.set(!parked && n == buf.len());
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A parked coroutine's state in its scheduler.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Waiting {
    No,
    /// On its socket, to write or read; the number tells this wait's timer from an earlier
    /// one's.
    Io(u64, bool),
    Sleep(u64),
    Gate,
}

struct Task {
    co: Coroutine<Wake, Park, (), DefaultStack>,
    waiting: Waiting,
    /// Edges the poller reported while the task was not waiting that way (readable,
    /// writable): an edge-triggered poller reports each once, so the task's next wait that way
    /// does not park for it.
    pending: (bool, bool),
}

/// Run `tasks` as coroutines on this thread until all have returned. When every live one is
/// parked at a gate, `pass(k)` is called for the k-th time (k = 0, 1, ...) and they are all
/// released; after the last task, `pass` is called for the gates not yet passed up to `gates`,
/// so that whoever waits on the other side of a gate is never left waiting. A task that panics
/// ends alone, its panic returned with the others' in task order.
pub fn run(
    tasks: Vec<Box<dyn FnOnce() + Send>>,
    gates: usize,
    mut pass: impl FnMut(usize),
) -> io::Result<Vec<Box<dyn std::any::Any + Send>>> {
    let mut poller = Epoll::new()?;
    let me = SCHEDULERS.fetch_add(1, Ordering::Relaxed);
    SCHEDULER.with(|s| s.set(me));
    let ran = schedule(&mut poller, tasks, gates, &mut pass);
    SCHEDULER.with(|s| s.set(0));
    ran
}

/// `run`'s loop, on its poller.
fn schedule(
    poller: &mut Epoll,
    tasks: Vec<Box<dyn FnOnce() + Send>>,
    gates: usize,
    pass: &mut impl FnMut(usize),
) -> io::Result<Vec<Box<dyn std::any::Any + Send>>> {
    let mut all: Vec<Option<Task>> = Vec::with_capacity(tasks.len());
    for body in tasks {
        let stack = DefaultStack::new(STACK)?;
        let co = Coroutine::with_stack(stack, move |me: &Parker, _: Wake| {
            CURRENT.with(|c| c.set(me as *const Parker));
            body();
        });
        all.push(Some(Task {
            co,
            waiting: Waiting::No,
            pending: (false, false),
        }));
    }
    let mut panics = Vec::new();
    let mut ready: VecDeque<(usize, Wake)> = (0..all.len()).map(|i| (i, Wake::Ready)).collect();
    let mut timers: BinaryHeap<Reverse<(Instant, usize, u64)>> = BinaryHeap::new();
    let (mut live, mut at_gate, mut passed, mut serial) = (all.len(), 0, 0, 0u64);
    loop {
        while let Some((i, wake)) = ready.pop_front() {
            let Some(task) = all[i].as_mut() else {
                continue;
            };
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.co.resume(wake)));
            CURRENT.with(|c| c.set(std::ptr::null()));
            match outcome {
                Err(p) => {
                    panics.push(p);
                    all[i] = None;
                    live -= 1;
                }
                Ok(CoroutineResult::Return(())) => {
                    all[i] = None;
                    live -= 1;
                }
                Ok(CoroutineResult::Yield(Park::Io {
                    fd,
                    write,
                    deadline,
                    watch,
                })) => {
                    let edge = if write {
                        &mut task.pending.1
                    } else {
                        &mut task.pending.0
                    };
                    if !watch && std::mem::take(edge) {
                        // Ready since before it parked: try again at once.
                        ready.push_back((i, Wake::Ready));
                        continue;
                    }
                    serial += 1;
                    task.waiting = Waiting::Io(serial, write);
                    if watch && !poller.watch(fd, i, write) {
                        // Cannot watch it: wake the task at once, and its socket's next wait
                        // tries again. (A new watch reports the socket's present state: no
                        // earlier edge counts.)
                        task.waiting = Waiting::No;
                        ready.push_back((i, Wake::Unwatched));
                        continue;
                    }
                    if let Some(d) = deadline {
                        timers.push(Reverse((d, i, serial)));
                    }
                }
                Ok(CoroutineResult::Yield(Park::Sleep(until))) => {
                    serial += 1;
                    task.waiting = Waiting::Sleep(serial);
                    timers.push(Reverse((until, i, serial)));
                }
                Ok(CoroutineResult::Yield(Park::Gate)) => {
                    task.waiting = Waiting::Gate;
                    at_gate += 1;
                }
            }
        }
        if live == 0 {
            break;
        }
        if at_gate == live {
            pass(passed);
            passed += 1;
            at_gate = 0;
            for (i, slot) in all.iter_mut().enumerate() {
                if let Some(task) = slot.as_mut().filter(|t| t.waiting == Waiting::Gate) {
                    task.waiting = Waiting::No;
                    ready.push_back((i, Wake::Ready));
                }
            }
            continue;
        }
        // Timers of waits already ended would only shorten the wait for nothing.
        while let Some(&Reverse((_, i, n))) = timers.peek()
            && timer_wakes(&all, i, n).is_none()
        {
            timers.pop();
        }
        let timeout = timers
            .peek()
            .map(|Reverse((at, _, _))| at.saturating_duration_since(Instant::now()));
        match poller.wait(timeout) {
            Ok(got) => {
                for &(key, readable, writable) in got {
                    let Some(task) = all.get_mut(key).and_then(Option::as_mut) else {
                        continue;
                    };
                    match task.waiting {
                        Waiting::Io(_, write) if (if write { writable } else { readable }) => {
                            task.waiting = Waiting::No;
                            ready.push_back((key, Wake::Ready));
                            // The other way's edge, if any, is kept for its next wait.
                            if write {
                                task.pending.0 |= readable;
                            } else {
                                task.pending.1 |= writable;
                            }
                        }
                        _ => {
                            task.pending.0 |= readable;
                            task.pending.1 |= writable;
                        }
                    }
                }
            }
            Err(_) => {
                // The poller failed (it should not): every socket's task tries again, after a
                // pause, so that nothing waits forever and nothing spins.
                std::thread::sleep(Duration::from_millis(1));
                for (i, slot) in all.iter_mut().enumerate() {
                    if let Some(task) = slot
                        .as_mut()
                        .filter(|t| matches!(t.waiting, Waiting::Io(..)))
                    {
                        task.waiting = Waiting::No;
                        ready.push_back((i, Wake::Ready));
                    }
                }
            }
        }
        let now = Instant::now();
        while let Some(&Reverse((at, i, n))) = timers.peek() {
            if at > now {
                break;
            }
            timers.pop();
            if let Some(wake) = timer_wakes(&all, i, n) {
                all[i].as_mut().expect("a timer's task is live").waiting = Waiting::No;
                ready.push_back((i, wake));
            }
        }
    }
    for k in passed..gates {
        pass(k);
    }
    Ok(panics)
}

/// What timer `n` of task `i` wakes it with, if that wait is still on.
fn timer_wakes(all: &[Option<Task>], i: usize, n: u64) -> Option<Wake> {
    match all[i].as_ref()?.waiting {
        Waiting::Io(m, _) if m == n => Some(Wake::TimedOut),
        Waiting::Sleep(m) if m == n => Some(Wake::Ready),
        _ => None,
    }
}

/// A thread's epoll: sockets registered once, edge-triggered, both ways; waits with a
/// nanosecond timeout (epoll_pwait2, Linux 5.11; epoll_wait's milliseconds, rounded up, before).
struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
    /// What the last wait reported: (key, readable, writable).
    got: Vec<(usize, bool, bool)>,
    /// Whether epoll_pwait2 works here: unknown until its first call; a kernel before 5.11
    /// (ENOSYS) or a sandbox that forbids it (EPERM, ...) falls back to epoll_wait for good.
    fine: Option<bool>,
}

impl Epoll {
    fn new() -> io::Result<Epoll> {
        // SAFETY: no pointer is passed; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll {
            // SAFETY: a new descriptor, owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 256],
            got: Vec::with_capacity(256),
            fine: None,
        })
    }

    /// Register socket `fd` for task `key`, readable (and writable, with `out`), for as long
    /// as the socket lives (closing its last handle removes it), or change what it is watched
    /// for; false when epoll refuses. Either reports the socket's present state. One still open
    /// through a duplicate (a cancel's handle) may wake its old task for nothing: that task
    /// then tries, finds nothing and parks again.
    fn watch(&self, fd: RawFd, key: usize, out: bool) -> bool {
        let mut flags = libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLET;
        if out {
            flags |= libc::EPOLLOUT;
        }
        let mut ev = libc::epoll_event {
            events: flags as u32,
            u64: key as u64,
        };
        let ctl = |op, ev: &mut libc::epoll_event| {
            // SAFETY: `ev` is a valid event for the call's duration.
            unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, ev) == 0 }
        };
        ctl(libc::EPOLL_CTL_ADD, &mut ev)
            || (io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST)
                && ctl(libc::EPOLL_CTL_MOD, &mut ev))
    }

    /// Wait for events until `timeout` (None: until one comes); a hang-up or an error is
    /// reported both ways.
    fn wait(&mut self, timeout: Option<Duration>) -> io::Result<&[(usize, bool, bool)]> {
        let n = self.wait_raw(timeout);
        self.got.clear();
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(&self.got)
            } else {
                Err(e)
            };
        }
        let hup = (libc::EPOLLHUP | libc::EPOLLERR) as u32;
        let readable = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32 | hup;
        let writable = libc::EPOLLOUT as u32 | hup;
        for ev in &self.events[..n as usize] {
            let flags = ev.events;
            self.got.push((
                ev.u64 as usize,
                flags & readable != 0,
                flags & writable != 0,
            ));
        }
        Ok(&self.got)
    }

    fn wait_raw(&mut self, timeout: Option<Duration>) -> i64 {
        let (epfd, events, max) = (
            self.fd.as_raw_fd(),
            self.events.as_mut_ptr(),
            self.events.len() as libc::c_int,
        );
        if self.fine != Some(false) {
            let ts = timeout.map(|t| libc::timespec {
                tv_sec: t.as_secs() as libc::time_t,
                tv_nsec: t.subsec_nanos() as libc::c_long,
            });
            let tsp = ts
                .as_ref()
                .map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: `events` holds `max` entries; `tsp` is null or points at `ts`, alive here.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_epoll_pwait2,
                    epfd,
                    events,
                    max,
                    tsp,
                    std::ptr::null::<libc::sigset_t>(),
                    0usize,
                )
            };
            if n >= 0 {
                self.fine = Some(true);
                return n;
            }
            let e = io::Error::last_os_error().raw_os_error();
            if self.fine == Some(true) || e == Some(libc::EINTR) {
                return n;
            }
            self.fine = Some(false);
        }
        // Milliseconds, rounded up: a sleep never ends early.
        let ms = timeout.map_or(-1, |t| {
            t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32
        });
        // SAFETY: `events` holds `max` entries.
        i64::from(unsafe { libc::epoll_wait(epfd, events, max, ms) })
    }
}

#[cfg(test)]
mod tests {
    //! Coroutines over real loopback sockets: many echo clients on one thread, their gates,
    //! sleeps and read timeouts, and a panicking one that ends alone.
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An echo server on a thread of its own: each connection answers every byte it reads.
    fn echo() -> std::net::SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                std::thread::spawn(move || {
                    let mut buf = [0u8; 64];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 || s.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    #[test]
    fn many_clients_on_one_thread_each_get_their_own_answers() {
        let addr = echo();
        let done = Arc::new(AtomicUsize::new(0));
        let gates_seen = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<Box<dyn FnOnce() + Send>> = (0..50u8)
            .map(|k| {
                let done = done.clone();
                let seen = gates_seen.clone();
                Box::new(move || {
                    let mut s = Coop::new(TcpStream::connect(addr).unwrap());
                    // Everyone is connected before anyone talks.
                    gate(|| unreachable!());
                    assert_eq!(seen.load(Ordering::SeqCst), 1);
                    for round in 0..20u8 {
                        s.write_all(&[k, round]).unwrap();
                        let mut back = [0u8; 2];
                        s.read_exact(&mut back).unwrap();
                        assert_eq!(back, [k, round]);
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                }) as Box<dyn FnOnce() + Send>
            })
            .collect();
        let panics = run(tasks, 1, |k| {
            assert_eq!(k, 0);
            gates_seen.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        assert!(panics.is_empty());
        assert_eq!(done.load(Ordering::SeqCst), 50);
        assert!(!active());
    }

    #[test]
    fn a_slow_name_lookup_holds_up_its_own_client_only() {
        let talked = Arc::new(AtomicUsize::new(0));
        let (t, began) = (talked.clone(), Instant::now());
        let tasks: Vec<Box<dyn FnOnce() + Send>> = vec![
            Box::new(move || {
                // A resolver that takes 600 ms, as a far DNS server would.
                let got = aside("far.example", Duration::from_secs(5), |host| {
                    std::thread::sleep(Duration::from_millis(600));
                    Ok(host.len())
                })
                .unwrap();
                assert_eq!(got, 11);
                assert!(began.elapsed() >= Duration::from_millis(550));
            }),
            Box::new(move || {
                for _ in 0..10 {
                    sleep(Duration::from_millis(10));
                }
                // Done while the other client still waits for its lookup.
                t.store(began.elapsed().as_millis() as usize + 1, Ordering::SeqCst);
            }),
        ];
        let panics = run(tasks, 0, |_| {}).unwrap();
        assert!(panics.is_empty());
        let ms = talked.load(Ordering::SeqCst);
        assert!(
            (1..450).contains(&ms),
            "the second client finished after {ms} ms"
        );
        // A real name, and an address that needs no lookup, inside a coroutine too.
        let found: Vec<Box<dyn FnOnce() + Send>> = vec![Box::new(|| {
            let local = lookup("localhost", 5432, Duration::from_secs(5)).unwrap();
            assert!(
                local
                    .iter()
                    .all(|a| a.port() == 5432 && a.ip().is_loopback())
            );
            assert!(!local.is_empty());
            let ip = lookup("127.0.0.1", 1, Duration::from_secs(5)).unwrap();
            // A lookup past its deadline gives up, naming the host.
            let e = aside("slow.example", Duration::from_millis(100), |_| {
                std::thread::sleep(Duration::from_millis(800));
                Ok(())
            })
            .unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
            assert!(e.to_string().contains("slow.example"), "{e}");
            assert_eq!(ip, vec!["127.0.0.1:1".parse::<SocketAddr>().unwrap()]);
        })];
        assert!(run(found, 0, |_| {}).unwrap().is_empty());
    }

    #[test]
    fn a_connect_that_hangs_holds_up_its_own_client_only() {
        // A listener whose queue of connections is full and never accepted: a new connect's
        // handshake is dropped by the kernel and hangs until its timeout.
        let full = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        full.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        full.listen(0).unwrap();
        let hanging = full.local_addr().unwrap().as_socket().unwrap();
        let queued: Vec<_> = (0..3)
            .filter_map(|_| TcpStream::connect_timeout(&hanging, Duration::from_millis(100)).ok())
            .collect();
        assert!(!queued.is_empty());
        let addr = echo();
        let talked = Arc::new(AtomicUsize::new(0));
        let (t, began) = (talked.clone(), Instant::now());
        let tasks: Vec<Box<dyn FnOnce() + Send>> = vec![
            Box::new(move || {
                let e = connect(&hanging, Duration::from_millis(1500)).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
                assert!(began.elapsed() >= Duration::from_millis(1400));
            }),
            Box::new(move || {
                let mut s = Coop::new(connect(&addr, Duration::from_secs(5)).unwrap());
                for round in 0..20u8 {
                    s.write_all(&[round]).unwrap();
                    let mut back = [0u8; 1];
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(back, [round]);
                }
                // Done while the other client still waits for its connection.
                t.store(began.elapsed().as_millis() as usize + 1, Ordering::SeqCst);
            }),
        ];
        let panics = run(tasks, 0, |_| {}).unwrap();
        assert!(panics.is_empty());
        let ms = talked.load(Ordering::SeqCst);
        assert!(
            (1..1000).contains(&ms),
            "the second client finished after {ms} ms"
        );
        drop(queued);
    }

    #[test]
    fn sleeps_overlap_and_a_read_times_out_as_a_socket_does() {
        // A listener that accepts and never answers.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let silent = TcpStream::connect(addr).unwrap();
        let timed_out = Arc::new(AtomicUsize::new(0));
        let t = timed_out.clone();
        let mut tasks: Vec<Box<dyn FnOnce() + Send>> = (0..20)
            .map(|_| Box::new(|| sleep(Duration::from_millis(100))) as Box<dyn FnOnce() + Send>)
            .collect();
        tasks.push(Box::new(move || {
            let mut s = Coop::new(silent);
            s.set_timeout(Some(Duration::from_millis(50)));
            let e = s.read(&mut [0u8; 4]).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
            t.fetch_add(1, Ordering::SeqCst);
        }));
        let began = Instant::now();
        let panics = run(tasks, 0, |_| {}).unwrap();
        let took = began.elapsed();
        assert!(panics.is_empty());
        assert_eq!(timed_out.load(Ordering::SeqCst), 1);
        // Twenty sleeps of 100 ms on one thread overlap: far less than 2 s in all.
        assert!(took >= Duration::from_millis(100) && took < Duration::from_millis(1000));
        drop(l);
    }

    #[test]
    fn an_answer_that_came_during_a_sleep_is_not_waited_for_again() {
        let addr = echo();
        let took = Arc::new(std::sync::Mutex::new(Duration::ZERO));
        let t = took.clone();
        let tasks: Vec<Box<dyn FnOnce() + Send>> = vec![Box::new(move || {
            let mut s = Coop::new(TcpStream::connect(addr).unwrap());
            s.set_timeout(Some(Duration::from_secs(5)));
            let mut back = [0u8; 1];
            // A first round trip: the poller watches the socket from here on.
            s.write_all(&[1]).unwrap();
            s.read_exact(&mut back).unwrap();
            // The answer arrives while the client sleeps: its edge comes then, once.
            s.write_all(&[2]).unwrap();
            sleep(Duration::from_millis(100));
            let began = Instant::now();
            s.read_exact(&mut back).unwrap();
            *t.lock().unwrap() = began.elapsed();
            assert_eq!(back, [2]);
        })];
        assert!(run(tasks, 0, |_| {}).unwrap().is_empty());
        // Read at once, not at the 5 s timeout's last try.
        assert!(*took.lock().unwrap() < Duration::from_secs(1));
    }

    #[test]
    fn a_write_bigger_than_the_socket_takes_waits_for_room() {
        // A sink that greets, reads slowly at first, then answers with the count it read.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        const SENT: usize = 8 << 20;
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            s.write_all(b"h").unwrap();
            std::thread::sleep(Duration::from_millis(200));
            let (mut buf, mut n) = (vec![0u8; 65536], 0usize);
            while n < SENT {
                n += s.read(&mut buf).unwrap();
            }
            s.write_all(&(n as u64).to_le_bytes()).unwrap();
        });
        let got = Arc::new(AtomicUsize::new(0));
        let g = got.clone();
        let tasks: Vec<Box<dyn FnOnce() + Send>> = vec![
            Box::new(move || {
                let mut s = Coop::new(TcpStream::connect(addr).unwrap());
                s.set_timeout(Some(Duration::from_secs(10)));
                // The greeting is waited for: the socket is watched for reads only, until the
                // big write waits for room.
                let mut hello = [0u8; 1];
                s.read_exact(&mut hello).unwrap();
                s.write_all(&vec![7u8; SENT]).unwrap();
                let mut back = [0u8; 8];
                s.read_exact(&mut back).unwrap();
                g.store(u64::from_le_bytes(back) as usize, Ordering::SeqCst);
            }),
            // A neighbour sleeping on the same thread is not held up by the waiting write.
            Box::new(|| sleep(Duration::from_millis(20))),
        ];
        let began = Instant::now();
        assert!(run(tasks, 0, |_| {}).unwrap().is_empty());
        assert_eq!(got.load(Ordering::SeqCst), SENT);
        // Woken by the room to write, not by the 10 s timeout's last try.
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "{:?}",
            began.elapsed()
        );
    }

    #[test]
    fn a_panicking_task_ends_alone_and_gates_are_passed_for_the_rest() {
        let finished = Arc::new(AtomicUsize::new(0));
        let f = finished.clone();
        let tasks: Vec<Box<dyn FnOnce() + Send>> = vec![
            Box::new(|| panic!("boom")),
            Box::new(move || {
                gate(|| unreachable!());
                sleep(Duration::from_millis(5));
                f.fetch_add(1, Ordering::SeqCst);
            }),
        ];
        let mut passed = Vec::new();
        let panics = run(tasks, 3, |k| passed.push(k)).unwrap();
        assert_eq!(panics.len(), 1);
        assert_eq!(finished.load(Ordering::SeqCst), 1);
        // The gate passed once for the live task; the other two at the end.
        assert_eq!(passed, vec![0, 1, 2]);
    }
}
