//! What limited a run, from the server's own evidence: a thread samples what the run's
//! sessions are doing (`Session::activity`: PostgreSQL's pg_stat_activity, MariaDB's
//! processlist and InnoDB transactions, Firebird's MON$ tables at the lower rate it asks for,
//! `rate`) ten times a second on a connection of its own, as
//! Active Session History does; the samples become average active sessions by wait class,
//! per second and over the measured run, with the events that took the most time; and one
//! stated rule (`verdict`) names the limiter: the client, round trips, or the class of wait
//! that took at least half of the sessions' time. The same thread and connection reads the
//! statements' figures at the measured part's start and end (`metrics::statements`).
//! The same loop reads the server's counters once a second (`counters::CounterReader`), also
//! where the engine cannot tell its sessions' waits.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::statements::{StatementWatch, Statements};
use crate::engine::activity::WaitClass;
use crate::engine::{Engine, Session};

use super::counters::{CounterReader, ServerCounters};

/// Samples a second, by default.
pub const DEFAULT_HZ: u32 = 10;

/// Sessions a second the sampler reads at most, many clients or few: a sample's cost grows
/// with the sessions the server walks, and 128 sessions a second already give a run of 10 s
/// over a thousand observations (Active Session History samples once a second). At 320, five
/// samples a second at 64 clients took 0.4-0.6% of PostgreSQL's point selects' CPU, a third of
/// observation's whole cost there (BENCHMARKS.md). An engine whose sessions cost more to read
/// asks for fewer (`Engine::activity_sessions_per_second`: MariaDB's processlist, 64).
pub const SESSIONS_PER_SECOND: u32 = 128;
/// The fewest samples a second, however many clients.
const MIN_HZ: u32 = 1;

/// Samples a timed run gets at least, where the sessions' budget alone would give it fewer
/// (twice `MIN_SAMPLES`): MariaDB's one sample a second at 64 clients left an 8 s run 8
/// samples and no verdict.
const ENOUGH_SAMPLES: u32 = 2 * MIN_SAMPLES as u32;

/// The rate to sample `engine`'s sessions at, for `clients` of them over `measured` seconds
/// (None: not known before, a count of transactions): the default (10 a second) or the lower
/// one the engine asks for where reading its monitoring is heavy (`Engine::activity_hz`), and
/// lower again as clients grow so that a second reads at most `SESSIONS_PER_SECOND` sessions,
/// or the engine's own budget (at least 1 sample a second), but never so low that a timed run
/// gets fewer than `ENOUGH_SAMPLES` (within the engine's own rate), unless the engine's budget
/// is firm (`Engine::activity_rate_floor`: Firebird's).
pub fn rate(engine: &dyn Engine, clients: u32, measured: Option<Duration>) -> u32 {
    rate_for(
        engine.activity_hz(),
        engine.activity_sessions_per_second(),
        clients,
        measured.filter(|_| engine.activity_rate_floor()),
    )
}

fn rate_for(
    asked: Option<u32>,
    budget: Option<u32>,
    clients: u32,
    measured: Option<Duration>,
) -> u32 {
    let asked = asked.map_or(DEFAULT_HZ, |hz| hz.clamp(1, DEFAULT_HZ));
    let budget = budget.unwrap_or(SESSIONS_PER_SECOND);
    let by_sessions = (budget / clients.max(1)).max(MIN_HZ);
    let enough = measured.map_or(MIN_HZ, |m| {
        (f64::from(ENOUGH_SAMPLES) / m.as_secs_f64().max(1e-3)).ceil() as u32
    });
    asked.min(by_sessions.max(enough))
}
/// How long one sample may take before the sampler gives its session up (a stalled server).
const SAMPLE_DEADLINE: Duration = Duration::from_secs(2);
/// How many of the events that took the most time a result keeps.
const TOP_EVENTS: usize = 8;

/// The sessions' time over a run, as sampled.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Waits {
    /// Samples taken in the measured part of the run, and the rate asked for.
    pub samples: u64,
    pub hz: u32,
    /// Samples that were due while the previous one was still being read (a slow server):
    /// the rate achieved was lower than asked, and said so.
    pub missed: u64,
    /// Average active sessions over the measured run, by wait class (`WaitClass::name`):
    /// sessions in the server or idle inside a transaction, per sample, averaged.
    pub by_class: BTreeMap<String, f64>,
    /// The events that took the most session time, most first.
    pub top_events: Vec<EventShare>,
    /// What the sessions holding the locks the run's sessions waited on were doing, as the
    /// average sessions waiting behind each (PostgreSQL and MariaDB; a lock released before
    /// it was asked about has none), most first: holders idle in their transaction point at
    /// the clients' round trips inside a transaction, committing ones at the log's flushes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lock_holders: Vec<EventShare>,
    /// Average active sessions by class in each second of the run (t as the windows': the
    /// end of the second, warm-up included).
    pub seconds: Vec<SecondWaits>,
    /// Why sampling stopped before the run's end, if it did.
    pub stopped: Option<String>,
    /// What the samples could not see, and why (`Session::activity_unseen`): the verdict
    /// says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unseen: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EventShare {
    pub event: String,
    pub class: String,
    /// Average active sessions in this event.
    pub sessions: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SecondWaits {
    pub t: u32,
    pub by_class: BTreeMap<String, f64>,
}

impl Waits {
    /// Average sessions busy (in the server or in a transaction) over the measured run.
    pub fn busy(&self) -> f64 {
        self.by_class.values().sum()
    }
}

/// Samples the run's sessions on its own thread until stopped.
pub struct WaitSampler {
    stop: Sender<()>,
    thread: JoinHandle<Sampled>,
}

/// What the sampler's thread gives back: the sessions' waits, the server's counters, the
/// statements' figures.
type Sampled = (Option<Waits>, Option<ServerCounters>, Statements);

impl WaitSampler {
    /// Sample `hz` times a second through `session` (a connection of its own, to the run's
    /// database); samples before `measured_from` (the warm-up) after the clients' release
    /// (`released`, set once they have connected) count in the seconds only.
    pub fn start(
        mut session: Box<dyn Session>,
        start: Instant,
        measured_from: Duration,
        hz: u32,
        released: Arc<OnceLock<Instant>>,
    ) -> WaitSampler {
        let (stop, stopped) = mpsc::channel();
        session.set_timeout(Some(SAMPLE_DEADLINE));
        let thread = std::thread::Builder::new()
            .name("waits".into())
            .spawn(move || {
                let mut watch = StatementWatch::default();
                let s = session.as_mut();
                let from = MeasuredStart(released, measured_from);
                let (waits, counters) = sample(s, start, &from, hz.max(1), &stopped, &mut watch);
                let broken = waits.as_ref().and_then(|w| w.stopped.clone());
                (waits, counters, watch.finish(s, broken.as_deref()))
            })
            .expect("a thread for the wait sampler");
        WaitSampler { stop, thread }
    }

    /// Stop and return what was sampled: the waits (None where the engine cannot tell its
    /// sessions' waits), the counters (None where it keeps none), and the statements' figures
    /// over the measured run (`metrics::statements`).
    pub fn stop(self) -> Sampled {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_else(|_| {
            (
                None,
                None,
                Statements::absent("the sampler's thread failed"),
            )
        })
    }
}

/// When the measured part begins: the warm-up after the clients' release (not yet known while
/// they connect, which may take long: a debug build's SCRAM, many clients).
struct MeasuredStart(Arc<OnceLock<Instant>>, Duration);

impl MeasuredStart {
    /// When it begins, once the clients are released.
    fn at(&self) -> Option<Instant> {
        self.0.get().map(|r| *r + self.1)
    }
    fn began(&self) -> bool {
        self.at().is_some_and(|at| Instant::now() >= at)
    }
}

/// Counts of one second: samples taken, and sessions seen per class over them.
#[derive(Default)]
struct Second {
    samples: u32,
    sessions: [u32; WaitClass::ALL.len()],
}

fn sample(
    s: &mut dyn Session,
    start: Instant,
    measured_from: &MeasuredStart,
    hz: u32,
    stop: &Receiver<()>,
    watch: &mut StatementWatch,
) -> (Option<Waits>, Option<ServerCounters>) {
    // The counters' measured part is known once the clients are released.
    let mut counters = CounterReader::new(Duration::MAX);
    let mut waits_known = true;
    let period = Duration::from_secs(1) / hz;
    let mut seconds: BTreeMap<u32, Second> = BTreeMap::new();
    let mut events: HashMap<String, (WaitClass, u64)> = HashMap::new();
    let mut holders: HashMap<String, (WaitClass, u64)> = HashMap::new();
    let mut out = Waits {
        hz,
        ..Waits::default()
    };
    let mut due = start;
    // The statements and the counters are read when the measured part begins, between two
    // samples if need be (or at the first sample in it, when it began during a sample).
    let mut begun = false;
    loop {
        let begins = measured_from.at().filter(|m| !begun && *m < due);
        let wait = begins
            .unwrap_or(due)
            .saturating_duration_since(Instant::now());
        if !matches!(stop.recv_timeout(wait), Err(RecvTimeoutError::Timeout)) {
            break;
        }
        let at = start.elapsed();
        // The windows' clock starts at the clients' release, after the sampler's own.
        let released = measured_from
            .0
            .get()
            .map(|r| r.saturating_duration_since(start));
        if let Some(r) = released {
            counters.released(r);
        }
        if begins.is_some() || (!begun && measured_from.began()) {
            begun = true;
            watch.tick(s, true);
            counters.begin(s, at);
            if begins.is_some() {
                continue;
            }
        }
        counters.tick(s, at);
        let seen = match s.activity() {
            Ok(Some(seen)) if waits_known => seen,
            Ok(_) => {
                waits_known = false;
                Vec::new()
            }
            Err(e) => {
                out.stopped = Some(format!(
                    "sampling stopped at {:.1} s: {}",
                    at.as_secs_f64(),
                    e.message
                ));
                break;
            }
        };
        // A sample before the release shows in no second: no window holds it.
        let mut second = released.and_then(|r| at.checked_sub(r)).map(|after| {
            let t = u32::try_from(after.as_secs() + 1).unwrap_or(u32::MAX);
            seconds.entry(t).or_default()
        });
        if let Some(second) = second.as_mut() {
            second.samples += 1;
        }
        let measured = measured_from.began();
        if measured {
            out.samples += 1;
        }
        watch.tick(s, measured);
        for a in seen {
            if let Some(second) = second.as_mut() {
                second.sessions[a.class as usize] += 1;
            }
            if measured {
                events.entry(a.event).or_insert((a.class, 0)).1 += 1;
                if let Some(h) = a.holder {
                    holders.entry(h.event).or_insert((h.class, 0)).1 += 1;
                }
            }
        }
        due += period;
        let now = Instant::now();
        while due < now {
            due += period;
            out.missed += 1;
        }
    }
    counters.last(s, start.elapsed());
    out.unseen = s.activity_unseen();
    for (&t, sec) in &seconds {
        out.seconds.push(SecondWaits {
            t,
            by_class: averages(&sec.sessions.map(u64::from), u64::from(sec.samples)),
        });
    }
    // The run's averages from the events, which count exactly the measured samples.
    let mut by_class = [0u64; WaitClass::ALL.len()];
    for (class, n) in events.values() {
        by_class[*class as usize] += n;
    }
    out.by_class = averages(&by_class, out.samples);
    out.top_events = most(events, out.samples);
    out.lock_holders = most(holders, out.samples);
    (waits_known.then_some(out), counters.finish())
}

/// Events counted over `samples` as average sessions, the `TOP_EVENTS` largest first.
fn most(events: HashMap<String, (WaitClass, u64)>, samples: u64) -> Vec<EventShare> {
    let mut top: Vec<EventShare> = events
        .into_iter()
        .map(|(event, (class, n))| EventShare {
            event,
            class: class.name().into(),
            sessions: n as f64 / samples.max(1) as f64,
        })
        .collect();
    top.sort_by(|a, b| {
        b.sessions
            .total_cmp(&a.sessions)
            .then(a.event.cmp(&b.event))
    });
    top.truncate(TOP_EVENTS);
    top
}

/// Sessions per class over `samples`, the classes seen only.
fn averages(sessions: &[u64; WaitClass::ALL.len()], samples: u64) -> BTreeMap<String, f64> {
    WaitClass::ALL
        .iter()
        .zip(sessions)
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| (c.name().to_string(), *n as f64 / samples.max(1) as f64))
        .collect()
}

/// What limited a run: a key results and tests read (`client`, `round_trips`, the name of a
/// class of time in the server, `mixed`, `not_determined`) and the sentence the summary
/// prints.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    pub limiter: String,
    pub says: String,
}

/// What the locks' holders were doing, for a verdict of locks: their two largest events, each
/// as a share of the lock waits whose holder was seen (empty where none was).
fn holders_said(w: &Waits) -> String {
    let seen: f64 = w.lock_holders.iter().map(|h| h.sessions).sum();
    if seen <= 0.0 {
        return String::new();
    }
    let named: Vec<String> = w
        .lock_holders
        .iter()
        .take(2)
        .map(|h| format!("{} {:.0}%", h.event, 100.0 * h.sessions / seen))
        .collect();
    format!(
        "; the sessions at the head of the lock queues were in {}",
        named.join(", ")
    )
}

/// A class's limiter as the verdict names it.
fn limiter_words(class: &str) -> &'static str {
    match class {
        "cpu" => "server CPU",
        "running" => "the server's work (CPU or I/O: the processlist does not tell them apart)",
        "data_read" => "data reads (I/O)",
        "commit" => "commit flushes (the log's writes and syncs)",
        "lock" => "locks",
        "latch" => "the server's internal latches",
        "client" => {
            "round trips inside transactions (sessions idle in a transaction, waiting for the client)"
        }
        _ => "other waits",
    }
}

/// What the verdict weighs besides the samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct Judged {
    /// The run's clients (a shard's: the whole run's).
    pub clients: u32,
    /// `metrics::client_bound`'s finding.
    pub client_bound: bool,
    /// An open loop (`-R`, rate phases): a session may wait for its schedule.
    pub paced: bool,
    /// The share of the machine dbduel runs on busy over the measured window (None: not read).
    pub host_busy: Option<f64>,
    /// The share of their time the client threads waited for a core (`ClientThreads::queued`).
    pub clients_queued: Option<f64>,
    /// Whether the server runs on that machine too (a loopback address or a socket).
    pub server_here: bool,
    /// The measured run's seconds, which the samples should cover.
    pub measured_s: f64,
    /// Clients left stuck in a transaction at the run's end whose cancel got no answer
    /// (`runner::NO_ANSWER`): the server stopped answering.
    pub unanswered: u32,
}

/// Fewer measured samples than this judge nothing: a verdict on a handful of instants (a
/// short run, a slow sampling rate with many clients) would be chance.
pub const MIN_SAMPLES: u64 = 10;

/// At or above this share of the machine busy, with the client threads waiting for a core at
/// least `QUEUED` of their time, it had no headroom: sessions waiting on the clients were
/// waiting for a core, not for a round trip (a machine busy with other work while the
/// clients got their cores leaves the round trips the limiter).
pub const NO_HEADROOM: f64 = 0.9;
pub const QUEUED: f64 = 0.25;

/// The rule, in this order: (0) clients stuck in a transaction at the run's end whose cancel
/// got no answer (`Judged::unanswered`) say the server stopped answering: `stalled`, the
/// samples' own verdict on what they cover said after it; (1) a client-bound run is limited
/// by the client; (2) when fewer
/// than half of the clients' sessions were in the server on average (the rest on the
/// client's side of the wire: idle inside a transaction, waiting for its next statement, or
/// idle between transactions): in an open loop, the offered rate (the sessions waited for
/// their schedule); else, with the machine dbduel runs on at least `NO_HEADROOM` busy and
/// the client threads waiting for a core at least `QUEUED` of their time, its CPU (cpu when
/// the server shares it, else the client); else round trips; (3) the wait class that took at least half of
/// the time sessions spent in the server; (4) else mixed, the largest classes named. Without
/// samples: not determined, with `absent` saying why. The server's counters then add their
/// evidence (`evidence::refine`): (5) a clause for each background event (checkpoint,
/// autovacuum, InnoDB flushing) whose covered seconds' mean tps is away from the other
/// measured seconds' median by more than twice their spread (scaled median absolute
/// deviation), or, for a stall of at most three seconds, its lowest second below it by more
/// than three times it, and 5%, against at least six other seconds; (6) a `running`
/// verdict becomes data reads when data-file waits took at least half of the running
/// sessions' time, or, without them, when at least 1% of page requests missed the buffer
/// pool, and server CPU when fewer than 0.1% missed.
///
/// Samples that stopped before the run's end (`Waits::stopped`: the server stopped answering
/// them) judge it only when they cover at least half of the measured time, and the verdict
/// then says how much they cover; less, and it is not determined. A verdict drawn from
/// samples that could not see some waits (`Waits::unseen`: a view refused) says so after it.
pub fn verdict(waits: Option<&Waits>, run: Judged, absent: &str) -> Verdict {
    let mut v = covered(waits, run, absent);
    if let Some(unseen) = waits.and_then(|w| w.unseen.as_deref())
        && !matches!(v.limiter.as_str(), "client" | "not_determined")
    {
        v.says += &format!("; {unseen}");
    }
    if run.unanswered == 0 {
        return v;
    }
    let stopped = waits
        .and_then(|w| w.stopped.as_deref())
        .map(|why| format!("; {why}"))
        .unwrap_or_default();
    let before = match v.limiter.as_str() {
        "not_determined" => String::new(),
        _ => format!("; before it: {}", v.says),
    };
    Verdict {
        limiter: "stalled".into(),
        says: format!(
            "the server stopped answering: {} of {} clients stuck in a transaction at the run's end, their cancel unanswered{stopped}{before}",
            run.unanswered, run.clients
        ),
    }
}

/// `verdict`'s rule (1) to (4) on the samples, with what they cover.
fn covered(waits: Option<&Waits>, run: Judged, absent: &str) -> Verdict {
    let mut v = from_samples(waits, run, absent);
    let Some((w, why)) = waits.and_then(|w| Some((w, w.stopped.as_deref()?))) else {
        return v;
    };
    if matches!(v.limiter.as_str(), "client" | "not_determined") {
        return v;
    }
    let covered = w.samples as f64 / f64::from(w.hz.max(1));
    let measured = run.measured_s;
    if covered < 0.5 * measured {
        return Verdict {
            limiter: "not_determined".into(),
            says: format!(
                "not determined: {why}: the samples cover {covered:.1} s of the {measured:.1} s measured, less than half"
            ),
        };
    }
    v.says +=
        &format!("; the samples cover {covered:.1} s of the {measured:.1} s measured ({why})");
    v
}

/// `verdict`'s rule on the samples as they are.
fn from_samples(waits: Option<&Waits>, run: Judged, absent: &str) -> Verdict {
    let make = |limiter: &str, says: String| Verdict {
        limiter: limiter.into(),
        says,
    };
    let clients = run.clients;
    if run.client_bound {
        return make(
            "client",
            "the client (dbduel's own threads were the bottleneck: see client CPU)".into(),
        );
    }
    let Some(w) = waits.filter(|w| w.samples > 0) else {
        // A sampler that stopped before its first measured sample says why.
        let why = waits.and_then(|w| w.stopped.as_deref()).unwrap_or(absent);
        return make("not_determined", format!("not determined: {why}"));
    };
    if w.samples < MIN_SAMPLES {
        return make(
            "not_determined",
            format!(
                "not determined: {} samples ({} a second{}), fewer than {MIN_SAMPLES}: run longer (-T)",
                w.samples,
                w.hz,
                if w.missed > 0 {
                    format!(
                        "; {} more missed, the server answering slower than that",
                        w.missed
                    )
                } else {
                    String::new()
                }
            ),
        );
    }
    let client = WaitClass::Client.name();
    let in_transaction = w.by_class.get(client).copied().unwrap_or(0.0);
    let mut classes: Vec<(&String, f64)> = w
        .by_class
        .iter()
        .filter(|(c, _)| *c != client)
        .map(|(c, a)| (c, *a))
        .collect();
    classes.sort_by(|a, b| b.1.total_cmp(&a.1));
    // Plus 0.0: a sum of no classes is -0.0, which would print as "-0.0 of N sessions".
    let inside: f64 = classes.iter().map(|(_, a)| a).sum::<f64>() + 0.0;
    let sessions = format!(
        "{inside:.1} of {clients} sessions in the server on average, {in_transaction:.1} idle inside a transaction; {} samples",
        w.samples
    );
    if inside < 0.5 * f64::from(clients) {
        let busy = run.host_busy;
        let queued = run.clients_queued.unwrap_or(0.0);
        let pct = |b: f64| format!("{:.0}%", 100.0 * b);
        return match busy.filter(|&b| b >= NO_HEADROOM && queued >= QUEUED) {
            _ if run.paced => make(
                "offered_rate",
                format!(
                    "the offered rate: the sessions waited for their next scheduled transaction most of the time ({sessions})"
                ),
            ),
            Some(b) if run.server_here => make(
                "cpu",
                format!(
                    "the machine's CPU (the server's too): {} busy, the sessions waiting on clients that waited for a core {} of their time ({sessions})",
                    pct(b),
                    pct(queued)
                ),
            ),
            Some(b) => make(
                "client",
                format!(
                    "the client's machine: its CPU {} busy, the sessions waiting on clients that waited for a core {} of their time ({sessions})",
                    pct(b),
                    pct(queued)
                ),
            ),
            None => make(
                "round_trips",
                format!(
                    "round trips: the sessions waited on the clients most of the time ({sessions}; {})",
                    busy.map_or("the machine's CPU not read".into(), |b| format!(
                        "the machine {} busy",
                        pct(b)
                    ))
                ),
            ),
        };
    }
    let share = |aas: f64| 100.0 * aas / inside.max(f64::MIN_POSITIVE);
    let events = |class: &str| {
        let named: Vec<String> = w
            .top_events
            .iter()
            .filter(|e| e.class == class)
            .take(2)
            .map(|e| format!("{} {:.0}%", e.event, share(e.sessions)))
            .collect();
        named.join(", ")
    };
    match classes.first() {
        Some((class, aas)) if share(*aas) >= 50.0 => make(
            class,
            format!(
                "{}: {} of the sessions' time in the server ({sessions}){}",
                limiter_words(class),
                events(class),
                if class.as_str() == WaitClass::Lock.name() {
                    holders_said(w)
                } else {
                    String::new()
                }
            ),
        ),
        _ => {
            let named: Vec<String> = classes
                .iter()
                .take(3)
                .map(|(c, a)| format!("{c} {:.0}%", share(*a)))
                .collect();
            make(
                "mixed",
                format!("no one limiter: {} ({sessions})", named.join(", ")),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waits(classes: &[(&str, f64)], events: &[(&str, &str, f64)]) -> Waits {
        Waits {
            samples: 100,
            hz: 10,
            by_class: classes.iter().map(|(c, a)| (c.to_string(), *a)).collect(),
            top_events: events
                .iter()
                .map(|(e, c, a)| EventShare {
                    event: e.to_string(),
                    class: c.to_string(),
                    sessions: *a,
                })
                .collect(),
            ..Waits::default()
        }
    }

    /// A closed loop of `clients` on a machine with headroom (half busy), the server elsewhere.
    fn at(clients: u32, client_bound: bool) -> Judged {
        Judged {
            clients,
            client_bound,
            host_busy: Some(0.5),
            clients_queued: Some(0.5),
            ..Judged::default()
        }
    }

    #[test]
    fn sessions_waiting_on_the_clients_by_their_reason() {
        let turns = waits(&[("client", 3.0), ("lock", 1.0)], &[]);
        let v = |run: Judged| verdict(Some(&turns), run, "");
        let v1 = v(at(8, false));
        assert_eq!(v1.limiter, "round_trips");
        assert!(v1.says.contains("the machine 50% busy"), "{}", v1.says);
        let paced = Judged {
            paced: true,
            ..at(8, false)
        };
        assert_eq!(v(paced).limiter, "offered_rate");
        // No headroom: a core, not a round trip, is what the sessions waited for.
        let busy = Judged {
            host_busy: Some(0.95),
            ..at(8, false)
        };
        let here = v(Judged {
            server_here: true,
            ..busy
        });
        assert_eq!(here.limiter, "cpu");
        assert!(
            here.says.contains("the machine's CPU (the server's too)")
                && here.says.contains("95% busy")
                && here.says.contains("core 50% of their time"),
            "{}",
            here.says
        );
        assert_eq!(v(busy).limiter, "client");
        // A machine busy with other work while the clients got their cores, or just under
        // the bound: round trips.
        let here_busy = Judged {
            server_here: true,
            ..busy
        };
        for headroom in [
            Judged {
                clients_queued: Some(0.2),
                ..here_busy
            },
            Judged {
                clients_queued: None,
                ..here_busy
            },
            Judged {
                host_busy: Some(0.89),
                ..here_busy
            },
        ] {
            assert_eq!(v(headroom).limiter, "round_trips", "{headroom:?}");
        }
        let unread = v(Judged {
            host_busy: None,
            ..busy
        });
        assert!(
            unread.limiter == "round_trips" && unread.says.contains("CPU not read"),
            "{}",
            unread.says
        );
        // Sessions in the server: the bound plays no part.
        let locks = waits(&[("lock", 7.0), ("client", 0.5)], &[]);
        assert_eq!(
            verdict(
                Some(&locks),
                Judged {
                    server_here: true,
                    ..busy
                },
                ""
            )
            .limiter,
            "lock"
        );
    }

    #[test]
    fn clients_unanswered_at_the_end_say_the_server_stalled() {
        let mut locks = waits(&[("lock", 7.0), ("client", 0.5)], &[]);
        locks.stopped = Some("sampling stopped at 3.0 s: no answer".into());
        let run = |unanswered| Judged {
            measured_s: 15.0,
            unanswered,
            ..at(8, false)
        };
        assert_eq!(verdict(Some(&locks), run(0), "").limiter, "lock");
        let v = verdict(Some(&locks), run(2), "");
        assert_eq!(v.limiter, "stalled");
        assert!(
            v.says.starts_with("the server stopped answering: 2 of 8 clients stuck in a transaction at the run's end, their cancel unanswered; sampling stopped at 3.0 s: no answer; before it: locks:"),
            "{}",
            v.says
        );
        // Even a client-bound run, or one not sampled: the clients' own evidence is enough.
        let bound = Judged {
            unanswered: 1,
            ..at(8, true)
        };
        assert_eq!(verdict(Some(&locks), bound, "").limiter, "stalled");
        let v = verdict(None, run(1), "off");
        assert_eq!(
            (v.limiter.as_str(), v.says.as_str()),
            (
                "stalled",
                "the server stopped answering: 1 of 8 clients stuck in a transaction at the run's end, their cancel unanswered"
            )
        );
    }

    #[test]
    fn what_the_samples_could_not_see_is_said_beside_the_claim() {
        let mut running = waits(&[("running", 7.0), ("client", 0.5)], &[]);
        running.unseen = Some("row lock waits not seen (refused)".into());
        let v = verdict(Some(&running), at(8, false), "");
        assert_eq!(v.limiter, "running");
        assert!(
            v.says.ends_with("; row lock waits not seen (refused)"),
            "{}",
            v.says
        );
        // A client-bound run claims nothing of the server's.
        let v = verdict(Some(&running), at(8, true), "");
        assert!(!v.says.contains("not seen"), "{}", v.says);
    }

    #[test]
    fn samples_that_stopped_judge_only_what_they_cover() {
        let mut locks = waits(&[("lock", 7.0), ("client", 0.5)], &[]);
        locks.stopped = Some("sampling stopped at 3.0 s: timed out".into());
        // 100 samples at 10 a second: 10 s.
        let run = |measured_s: f64| Judged {
            measured_s,
            ..at(8, false)
        };
        let v = verdict(Some(&locks), run(15.0), "");
        assert_eq!(v.limiter, "lock");
        assert!(v.says.ends_with("the samples cover 10.0 s of the 15.0 s measured (sampling stopped at 3.0 s: timed out)"), "{}", v.says);
        let v = verdict(Some(&locks), run(30.0), "");
        assert_eq!(v.limiter, "not_determined");
        assert!(v.says.contains("sampling stopped at 3.0 s: timed out: the samples cover 10.0 s of the 30.0 s measured, less than half"), "{}", v.says);
        // Stopped before its first measured sample: the verdict says why, not "not sampled".
        let none = Waits {
            samples: 0,
            ..locks.clone()
        };
        let v = verdict(Some(&none), run(30.0), "not sampled by this version");
        assert_eq!(
            v.says,
            "not determined: sampling stopped at 3.0 s: timed out"
        );
        // Too few samples judge nothing.
        let few = Waits {
            samples: MIN_SAMPLES - 1,
            ..waits(&[("lock", 7.0)], &[])
        };
        let v = verdict(Some(&few), at(8, false), "");
        assert_eq!(v.limiter, "not_determined");
        assert!(
            v.says.contains("9 samples (10 a second), fewer than 10"),
            "{}",
            v.says
        );
        // A sampler that could not keep its rate says how many it missed.
        let slow = Waits {
            missed: 16,
            hz: 3,
            ..few
        };
        let v = verdict(Some(&slow), at(8, false), "");
        assert!(
            v.says.contains("9 samples (3 a second; 16 more missed, the server answering slower than that), fewer than 10"),
            "{}",
            v.says
        );
        // The client's finding stands on the client's own clocks.
        assert_eq!(
            verdict(
                Some(&locks),
                Judged {
                    client_bound: true,
                    ..run(30.0)
                },
                ""
            )
            .limiter,
            "client"
        );
    }

    #[test]
    fn the_rule_in_its_order() {
        let locks = waits(
            &[("lock", 5.0), ("cpu", 2.0), ("client", 0.5)],
            &[("Lock:transactionid", "lock", 4.0), ("CPU", "cpu", 2.0)],
        );
        let v = verdict(Some(&locks), at(8, false), "");
        assert_eq!(v.limiter, "lock");
        assert!(
            v.says.starts_with("locks: Lock:transactionid 57%"),
            "{}",
            v.says
        );
        // The client comes first.
        assert_eq!(verdict(Some(&locks), at(8, true), "").limiter, "client");
        // Fewer than half of the sessions in the server: round trips, whatever they waited on.
        assert_eq!(
            verdict(Some(&locks), at(16, false), "").limiter,
            "round_trips"
        );
        // Sessions idle inside a transaction are on the client's side, not in the server.
        let turns = waits(&[("client", 3.0), ("lock", 2.0), ("cpu", 1.0)], &[]);
        let v = verdict(Some(&turns), at(8, false), "");
        assert_eq!(v.limiter, "round_trips", "{}", v.says);
        assert!(
            v.says.contains("3.0 idle inside a transaction"),
            "{}",
            v.says
        );
        // No class at half of the time in the server: mixed, the largest named.
        let mixed = waits(&[("lock", 3.0), ("cpu", 2.5), ("commit", 2.5)], &[]);
        let v = verdict(Some(&mixed), at(8, false), "");
        assert_eq!(v.limiter, "mixed");
        assert!(v.says.contains("lock 38%"), "{}", v.says);
        // Exactly half is enough.
        let half = waits(&[("commit", 2.0), ("cpu", 2.0)], &[]);
        assert_eq!(verdict(Some(&half), at(4, false), "").limiter, "commit");
        // No session ever in the server (clients idle in their own turn): none, not "-0.0".
        let idle = waits(&[("client", 0.0)], &[]);
        let v = verdict(Some(&idle), at(2, false), "");
        assert_eq!(v.limiter, "round_trips");
        assert!(v.says.contains("(0.0 of 2 sessions"), "{}", v.says);
    }

    #[test]
    fn a_lock_verdict_names_what_the_holders_were_doing() {
        let mut locks = waits(
            &[("lock", 5.0), ("cpu", 2.0)],
            &[("Lock:transactionid", "lock", 5.0), ("CPU", "cpu", 2.0)],
        );
        let v = verdict(Some(&locks), at(8, false), "");
        assert!(!v.says.contains("holding"), "{}", v.says);
        let holder = |event: &str, class: &str, sessions| EventShare {
            event: event.into(),
            class: class.into(),
            sessions,
        };
        locks.lock_holders = vec![
            holder("Client:idle in transaction", "client", 3.0),
            holder("IO:WALSync", "commit", 1.0),
            holder("CPU", "cpu", 0.5),
            holder("Lock:transactionid", "lock", 0.5),
        ];
        let v = verdict(Some(&locks), at(8, false), "");
        assert_eq!(v.limiter, "lock");
        assert!(
            v.says.ends_with(
                "; the sessions at the head of the lock queues were in Client:idle in transaction 60%, IO:WALSync 20%"
            ),
            "{}",
            v.says
        );
        // Another limiter says nothing of holders.
        locks.by_class = [("cpu".to_string(), 6.0), ("lock".to_string(), 1.0)].into();
        let v = verdict(Some(&locks), at(8, false), "");
        assert_eq!(v.limiter, "cpu");
        assert!(!v.says.contains("holding"), "{}", v.says);
    }

    #[test]
    fn firebirds_budget_is_firm_and_mariadbs_is_not() {
        let engine = |dsn: &str| {
            let dsn = crate::dsn::Dsn::parse(dsn).unwrap();
            crate::engine::open(
                &dsn,
                &crate::engine::EngineOptions::default(),
                crate::engine::Protocol::Simple,
            )
            .unwrap()
        };
        let eight = Some(Duration::from_secs(8));
        // 64 clients over 8 s: Firebird keeps its two a second; MariaDB rises to three.
        let firebird = engine("firebird://SYSDBA@127.0.0.1:3050/db");
        assert_eq!(rate(&*firebird, 64, eight), 2);
        let mariadb = engine("mysql://root@127.0.0.1:3306/db");
        assert_eq!(rate(&*mariadb, 64, eight), 3);
    }

    #[test]
    fn a_timed_run_gets_enough_samples_within_the_engines_rate() {
        let secs = |s| Some(Duration::from_secs(s));
        // MariaDB's budget at 64 clients: 1 a second over a long run, more over a short one.
        assert_eq!(rate_for(None, Some(64), 64, secs(60)), 1);
        assert_eq!(rate_for(None, Some(64), 64, secs(10)), 2);
        assert_eq!(rate_for(None, Some(64), 64, secs(8)), 3);
        assert_eq!(rate_for(None, Some(64), 64, None), 1);
        // Never above what the engine asks for, nor the default.
        assert_eq!(rate_for(Some(4), Some(128), 64, secs(2)), 4);
        assert_eq!(rate_for(None, None, 1000, secs(1)), 10);
        // Few clients: the budget's rate already gives enough.
        assert_eq!(rate_for(None, None, 2, secs(5)), 10);
    }

    #[test]
    fn the_rate_falls_past_12_clients_and_never_below_one() {
        assert_eq!(rate_for(None, None, 2, None), 10);
        assert_eq!(rate_for(None, None, 12, None), 10);
        assert_eq!(rate_for(None, None, 13, None), 9);
        assert_eq!(rate_for(None, None, 32, None), 4);
        assert_eq!(rate_for(None, None, 64, None), 2);
        assert_eq!(rate_for(None, None, 160, None), 1);
        assert_eq!(rate_for(None, None, 1000, None), 1);
        // An engine's own lower rate holds while it is the lower one.
        assert_eq!(rate_for(Some(4), None, 8, None), 4);
        assert_eq!(rate_for(Some(4), None, 64, None), 2);
        assert_eq!(rate_for(Some(40), None, 1, None), 10);
        // An engine's own budget of sessions (MariaDB's 64): 1 a second at 64 clients.
        assert_eq!(rate_for(None, Some(64), 2, None), 10);
        assert_eq!(rate_for(None, Some(64), 8, None), 8);
        assert_eq!(rate_for(None, Some(64), 32, None), 2);
        assert_eq!(rate_for(None, Some(64), 64, None), 1);
        // Firebird's 4 a second and 128 sessions: 4 up to 32 clients, 2 at 64.
        assert_eq!(rate_for(Some(4), Some(128), 32, None), 4);
        assert_eq!(rate_for(Some(4), Some(128), 64, None), 2);
        assert_eq!(rate_for(None, Some(64), 400, None), 1);
    }

    #[test]
    fn no_samples_is_not_determined_and_says_why() {
        let v = verdict(None, at(4, false), "SQLite is embedded");
        assert_eq!(v.limiter, "not_determined");
        assert!(v.says.contains("SQLite is embedded"));
        let empty = Waits::default();
        assert_eq!(
            verdict(Some(&empty), at(4, false), "x").limiter,
            "not_determined"
        );
    }
}
