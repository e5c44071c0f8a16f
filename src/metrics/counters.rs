//! The server's counters over a run (`Session::stats`), read once a second on the wait
//! sampler's connection (metrics/waits.rs calls `CounterReader::tick` at each of its samples,
//! under the same read deadline): per-second deltas of what moved (gauges as read), the
//! totals over the measured part (from the first reading at or after the warm-up's end to the
//! last), per second and per transaction, the headline counters second by second, and the
//! seconds each background event (a checkpoint, autovacuum, InnoDB's flushing) covered. Then
//! the rules that read them: the counters that moved most (`moved_most`), and the evidence
//! they add to the verdict (`refine`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::Session;
use crate::engine::stats::{Kind, Role, Stat};

use super::Window;
use super::waits::{Verdict, Waits};
use crate::engine::activity::WaitClass;

/// The time between two readings.
const PERIOD: Duration = Duration::from_secs(1);
/// How many counters "the counters that moved most" names.
pub const MOVED_MOST: usize = 8;

/// The counters of a run, as the result keeps them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerCounters {
    /// Readings taken (one a second, warm-up included).
    pub readings: u32,
    /// Seconds between the first reading at or after the warm-up's end and the last: what
    /// the totals cover.
    pub measured_s: f64,
    /// Over the measured run, by the engine's name: each cumulative counter that moved, each
    /// gauge read.
    pub counters: BTreeMap<String, CounterTotal>,
    /// The headline counters in each second (t as the windows': the end of the second,
    /// warm-up included): deltas, gauges as read.
    pub seconds: Vec<CounterSecond>,
    /// The background events and the seconds they covered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<BackgroundEvent>,
    /// Views the server would not let dbduel read, each said once with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
    /// Why reading stopped before the run's end, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// One counter over the measured run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CounterTotal {
    /// "cumulative" or "gauge".
    pub kind: String,
    /// The parts it plays in the rules: headline, background:<event>, pages_read,
    /// page_requests, data_read_wait.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// Cumulative: its value at the first measured reading, its change over the measured
    /// run (the sum of its rises, so that a reset of the statistics loses one second only),
    /// per second, and per transaction (over the run's measured transactions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_transaction: Option<f64>,
    /// Gauge: the mean and the largest of its measured readings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

impl CounterTotal {
    pub fn has(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CounterSecond {
    pub t: u32,
    pub values: BTreeMap<String, f64>,
}

/// A background event: the seconds its counters moved in, and which counters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BackgroundEvent {
    pub event: String,
    pub counters: Vec<String>,
    pub seconds: Vec<u32>,
    /// The measured seconds' throughput in the seconds it covered and in the others, and
    /// whether they differ beyond the noise (`background_differs`); None where there are too
    /// few of either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps_in: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps_out: Option<f64>,
    #[serde(default)]
    pub differs: bool,
}

fn role_name(role: Role) -> String {
    match role {
        Role::Headline => "headline".into(),
        Role::Background(event) => format!("background:{event}"),
        Role::PagesRead => "pages_read".into(),
        Role::PageRequests => "page_requests".into(),
        Role::DataReadWait => "data_read_wait".into(),
    }
}

/// One reading: when, and the values by name.
struct Read {
    at: Duration,
    stats: BTreeMap<String, Stat>,
}

/// Reads the counters once a second from the sampler's loop and keeps what the result needs.
pub struct CounterReader {
    measured_from: Duration,
    due: Duration,
    /// False once the engine said it has no counters, or a reading failed.
    on: bool,
    last: Option<Read>,
    /// Per counter over the measured intervals: the sum of rises (cumulative) or of readings
    /// (gauges), the largest reading, the readings counted.
    sums: BTreeMap<String, (f64, f64, u32)>,
    from: BTreeMap<String, f64>,
    kinds: BTreeMap<String, (Kind, Vec<Role>)>,
    first_measured: Option<Duration>,
    last_at: Option<Duration>,
    seconds: BTreeMap<u32, BTreeMap<String, f64>>,
    background: BTreeMap<&'static str, (Vec<String>, Vec<u32>)>,
    out: ServerCounters,
}

impl CounterReader {
    pub fn new(measured_from: Duration) -> CounterReader {
        CounterReader {
            measured_from,
            due: Duration::ZERO,
            on: true,
            last: None,
            sums: BTreeMap::new(),
            from: BTreeMap::new(),
            kinds: BTreeMap::new(),
            first_measured: None,
            last_at: None,
            seconds: BTreeMap::new(),
            background: BTreeMap::new(),
            out: ServerCounters::default(),
        }
    }

    /// Read the counters when a second has passed since the last reading (`at`: since the
    /// run's start); a failing reading is said once and ends the reading, never the run.
    pub fn tick(&mut self, session: &mut dyn Session, at: Duration) {
        if !self.on || at < self.due {
            return;
        }
        while self.due <= at {
            self.due += PERIOD;
        }
        self.read(session, at);
    }

    /// The last reading, when the run has ended: the totals then hold its last second too.
    pub fn last(&mut self, session: &mut dyn Session, at: Duration) {
        if self.on {
            self.read(session, at);
        }
    }

    fn read(&mut self, session: &mut dyn Session, at: Duration) {
        match session.stats() {
            Ok(Some(reading)) => {
                self.out.unread.extend(reading.unread);
                self.add(at, reading.stats);
            }
            Ok(None) => self.on = false,
            Err(e) => {
                self.on = false;
                self.out.stopped = Some(format!(
                    "reading the server's counters stopped at {:.1} s: {}",
                    at.as_secs_f64(),
                    e.message
                ));
            }
        }
    }

    fn add(&mut self, at: Duration, stats: Vec<Stat>) {
        self.out.readings += 1;
        let now = Read {
            at,
            stats: stats.into_iter().map(|s| (s.name.clone(), s)).collect(),
        };
        for s in now.stats.values() {
            self.kinds
                .entry(s.name.clone())
                .or_insert_with(|| (s.kind, s.roles.clone()));
        }
        if let Some(before) = self.last.take() {
            self.interval(&before, &now);
        }
        self.last = Some(now);
    }

    /// What moved between two readings: the second's deltas, the measured sums, the
    /// background events' seconds.
    fn interval(&mut self, before: &Read, now: &Read) {
        let t = u32::try_from(now.at.as_secs()).unwrap_or(u32::MAX).max(1);
        let measured = before.at >= self.measured_from;
        if measured && self.first_measured.is_none() {
            self.first_measured = Some(before.at);
            for (name, s) in &before.stats {
                if s.kind == Kind::Cumulative {
                    self.from.insert(name.clone(), s.value);
                }
            }
        }
        if measured {
            self.last_at = Some(now.at);
        }
        for (name, s) in &now.stats {
            let value = match s.kind {
                // A counter absent from the earlier reading had not moved yet (views that
                // list only the rows that moved); one that fell was reset.
                Kind::Cumulative => {
                    let was = before.stats.get(name).map_or(0.0, |b| b.value);
                    (s.value - was).max(0.0)
                }
                Kind::Gauge => s.value,
            };
            if measured {
                let sum = self.sums.entry(name.clone()).or_insert((0.0, 0.0, 0));
                sum.0 += value;
                sum.1 = sum.1.max(value);
                sum.2 += 1;
            }
            if s.roles.contains(&Role::Headline) {
                *self
                    .seconds
                    .entry(t)
                    .or_default()
                    .entry(name.clone())
                    .or_default() += value;
            }
            for role in &s.roles {
                if let (Role::Background(event), true) = (role, value > 0.0) {
                    let (names, secs) = self.background.entry(event).or_default();
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                    if secs.last() != Some(&t) {
                        secs.push(t);
                    }
                }
            }
        }
    }

    /// What was read, None where the engine keeps no counters.
    pub fn finish(mut self) -> Option<ServerCounters> {
        if self.out.readings == 0 && self.out.stopped.is_none() {
            return None;
        }
        let span = match (self.first_measured, self.last_at) {
            (Some(a), Some(b)) => b.saturating_sub(a).as_secs_f64(),
            _ => 0.0,
        };
        self.out.measured_s = span;
        for (name, (sum, max, n)) in &self.sums {
            let Some((kind, roles)) = self.kinds.get(name) else {
                continue;
            };
            let mut c = CounterTotal {
                roles: roles.iter().map(|r| role_name(*r)).collect(),
                ..CounterTotal::default()
            };
            match kind {
                Kind::Cumulative if *sum > 0.0 => {
                    c.kind = "cumulative".into();
                    c.from = Some(self.from.get(name).copied().unwrap_or(0.0));
                    c.total = Some(*sum);
                    c.per_s = (span > 0.0).then(|| sum / span);
                }
                Kind::Cumulative => continue,
                Kind::Gauge => {
                    c.kind = "gauge".into();
                    c.mean = Some(sum / f64::from((*n).max(1)));
                    c.max = Some(*max);
                }
            }
            self.out.counters.insert(name.clone(), c);
        }
        self.out.seconds = std::mem::take(&mut self.seconds)
            .into_iter()
            .map(|(t, values)| CounterSecond { t, values })
            .collect();
        self.out.background = std::mem::take(&mut self.background)
            .into_iter()
            .map(|(event, (counters, seconds))| BackgroundEvent {
                event: event.into(),
                counters,
                seconds,
                tps_in: None,
                tps_out: None,
                differs: false,
            })
            .collect();
        Some(self.out)
    }
}

impl ServerCounters {
    /// Each cumulative counter per transaction: its total over the run's measured
    /// transactions. The readings span the run from before its clients connect (when the
    /// warm-up is 0) to after they end, so the work counted is the run's (and the sampler's
    /// own few statements).
    pub fn per_transaction(&mut self, transactions: u64) {
        for c in self.counters.values_mut() {
            c.per_transaction = c
                .total
                .filter(|_| transactions > 0)
                .map(|t| t / transactions as f64);
        }
    }

    fn with_role(&self, role: &str) -> Option<&CounterTotal> {
        self.counters.values().find(|c| c.has(role))
    }
}

/// The counters that moved most, by this rule: the headline counters first (those that
/// moved, gauges seen above zero), in name order; then the other cumulative counters by the
/// share of their count that the measured run made (its change over its value at the end:
/// 1 for a counter that started at zero), largest first, names breaking ties; `MOVED_MOST` in
/// all.
pub fn moved_most(c: &ServerCounters) -> Vec<(&String, &CounterTotal)> {
    let headline = c
        .counters
        .iter()
        .filter(|(_, t)| t.has("headline") && t.max.is_none_or(|m| m > 0.0));
    let share = |t: &CounterTotal| {
        let total = t.total.unwrap_or(0.0);
        total / (t.from.unwrap_or(0.0) + total).max(f64::MIN_POSITIVE)
    };
    let mut others: Vec<(&String, &CounterTotal)> = c
        .counters
        .iter()
        .filter(|(_, t)| !t.has("headline") && t.total.is_some())
        .collect();
    others.sort_by(|a, b| share(b.1).total_cmp(&share(a.1)).then(a.0.cmp(b.0)));
    headline.chain(others).take(MOVED_MOST).collect()
}

/// A counter's figure as the summary and the reports print it: per transaction where there
/// is one, per second otherwise, a gauge's mean and largest.
pub fn figure(t: &CounterTotal) -> String {
    match (t.per_transaction, t.per_s, t.mean) {
        (Some(x), _, _) => format!("{} /tx", short(x)),
        (None, Some(x), _) => format!("{} /s", short(x)),
        (_, _, Some(mean)) => format!("mean {} max {}", short(mean), short(t.max.unwrap_or(0.0))),
        _ => "-".into(),
    }
}

/// Three significant figures, without an exponent.
pub fn short(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Whether the throughput in the seconds a background event covered differs from the other
/// seconds' beyond the noise: at least one covered measured second and three others, and the
/// covered seconds' mean tps outside the others' mean by more than twice their standard
/// deviation and by more than 5% of it. Returns (covered mean, others' mean, differs).
pub fn background_differs(windows: &[Window], seconds: &[u32]) -> Option<(f64, f64, bool)> {
    let measured = windows.iter().filter(|w| !w.warmup);
    let (inside, outside): (Vec<&Window>, Vec<&Window>) =
        measured.partition(|w| seconds.contains(&w.t));
    if inside.is_empty() || outside.len() < 3 {
        return None;
    }
    let tps = |ws: &[&Window]| ws.iter().map(|w| w.transactions as f64).collect::<Vec<_>>();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (tin, tout) = (tps(&inside), tps(&outside));
    let (m_in, m_out) = (mean(&tin), mean(&tout));
    let var = tout.iter().map(|x| (x - m_out).powi(2)).sum::<f64>() / (tout.len() - 1) as f64;
    let gap = (m_in - m_out).abs();
    Some((m_in, m_out, gap > 2.0 * var.sqrt() && gap > 0.05 * m_out))
}

/// A result's counters made per transaction (over the run's measured `transactions`) and
/// their evidence added to its verdict (`refine`), the running sessions read from its waits.
pub fn judge(
    verdict: Option<&mut Verdict>,
    counters: Option<&mut ServerCounters>,
    waits: Option<&Waits>,
    windows: &[Window],
    transactions: u64,
) {
    let Some(c) = counters else { return };
    c.per_transaction(transactions);
    let running = waits.and_then(|w| w.by_class.get(WaitClass::Running.name()).copied());
    if let Some(v) = verdict {
        refine(v, Some(c), windows, running);
    }
}

/// The server's counters' evidence added to a verdict, by two stated rules.
///
/// Background events: each event's covered seconds are compared by `background_differs`;
/// where they differ, the verdict's words get a clause naming the event, its seconds and the
/// two throughputs (the limiter stays: it is the run's as a whole).
///
/// Data reads where the sessions' states cannot tell them from CPU (a verdict of `running`,
/// MariaDB's processlist): with the data-file wait time (performance_schema on), data reads
/// when those waits are at least half of the running sessions' time (wait seconds per second
/// over the running sessions' average); otherwise, from the buffer pool, data reads when at
/// least 1% of page requests missed it; server CPU when fewer than 0.1% missed (and the
/// data-file waits, when read, were under half); else `running` stays, the figures said.
pub fn refine(
    v: &mut Verdict,
    c: Option<&mut ServerCounters>,
    windows: &[Window],
    running_sessions: Option<f64>,
) {
    let Some(c) = c else { return };
    for b in &mut c.background {
        let Some((tin, tout, differs)) = background_differs(windows, &b.seconds) else {
            continue;
        };
        (b.tps_in, b.tps_out, b.differs) = (Some(tin), Some(tout), differs);
        if differs {
            let _ = write!(
                v.says,
                "; {} covered {} s, {:.0} tps in them against {:.0} in the others ({:+.0}%)",
                b.event,
                b.seconds.len(),
                tin,
                tout,
                100.0 * (tin - tout) / tout.max(f64::MIN_POSITIVE)
            );
        }
    }
    if v.limiter == "running" {
        data_reads_or_cpu(v, c, running_sessions.unwrap_or(0.0));
    }
}

fn data_reads_or_cpu(v: &mut Verdict, c: &ServerCounters, running: f64) {
    let misses = c.with_role("pages_read").and_then(|t| t.total);
    let requests = c.with_role("page_requests").and_then(|t| t.total);
    let wait = c.with_role("data_read_wait").and_then(|t| t.per_s);
    let ratio = match (misses, requests) {
        (m, Some(r)) if r > 0.0 => Some(m.unwrap_or(0.0) / r),
        _ => None,
    };
    let wait_share = wait.map(|w| w / running.max(f64::MIN_POSITIVE));
    let evidence = {
        let mut e = Vec::new();
        if let Some(r) = ratio {
            e.push(format!(
                "{:.2}% of page requests missed the cache",
                100.0 * r
            ));
        }
        match wait_share {
            Some(s) => e.push(format!(
                "data-file waits {:.0}% of the running sessions' time",
                100.0 * s
            )),
            None => e.push("no data-file wait times (performance_schema off)".into()),
        }
        e.join(", ")
    };
    let (limiter, words) = match (wait_share, ratio) {
        (Some(s), _) if s >= 0.5 => ("data_read", "data reads (I/O)"),
        (None, Some(r)) if r >= 0.01 => ("data_read", "data reads (I/O)"),
        (_, Some(r)) if r < 0.001 => ("cpu", "server CPU"),
        _ => {
            let _ = write!(v.says, "; {evidence}");
            return;
        }
    };
    v.limiter = limiter.into();
    v.says = format!(
        "{words}, told from the running sessions by the server's counters ({evidence}); {}",
        v.says
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(name: &str, value: f64, kind: Kind, roles: &[Role]) -> Stat {
        let mut s = Stat::new(name, value, kind);
        s.roles = roles.to_vec();
        s
    }

    fn read(reader: &mut CounterReader, at_s: f64, stats: Vec<Stat>) {
        reader.add(Duration::from_secs_f64(at_s), stats);
    }

    #[test]
    fn deltas_totals_and_background_seconds() {
        let mut r = CounterReader::new(Duration::from_secs(1));
        let reading = |commits: f64, ckpt: f64, waiting: f64| {
            vec![
                stat("v.commits", commits, Kind::Cumulative, &[Role::Headline]),
                stat(
                    "v.ckpt_buffers",
                    ckpt,
                    Kind::Cumulative,
                    &[Role::Background("checkpoint")],
                ),
                stat("v.waiting", waiting, Kind::Gauge, &[Role::Headline]),
                stat("v.still", 5.0, Kind::Cumulative, &[]),
            ]
        };
        read(&mut r, 0.0, reading(100.0, 0.0, 0.0));
        read(&mut r, 1.0, reading(150.0, 0.0, 1.0)); // warm-up second
        read(&mut r, 2.0, reading(250.0, 40.0, 3.0));
        read(&mut r, 3.0, reading(10.0, 40.0, 1.0)); // statistics reset
        read(&mut r, 4.0, reading(110.0, 40.0, 2.0));
        let c = r.finish().expect("counters");
        assert_eq!(c.readings, 5);
        assert_eq!(c.measured_s, 3.0);
        let commits = &c.counters["v.commits"];
        assert_eq!(
            commits.total,
            Some(200.0),
            "the reset loses its second only"
        );
        assert_eq!(commits.from, Some(150.0));
        assert_eq!(commits.per_s, Some(200.0 / 3.0));
        let waiting = &c.counters["v.waiting"];
        assert_eq!((waiting.mean, waiting.max), (Some(2.0), Some(3.0)));
        assert!(!c.counters.contains_key("v.still"), "what did not move");
        assert_eq!(c.seconds.len(), 4);
        assert_eq!(c.seconds[0].t, 1);
        assert_eq!(c.seconds[0].values["v.commits"], 50.0);
        assert_eq!(c.background.len(), 1);
        assert_eq!(c.background[0].event, "checkpoint");
        assert_eq!(c.background[0].seconds, vec![2]);
    }

    fn windows(tps: &[u64]) -> Vec<Window> {
        tps.iter()
            .enumerate()
            .map(|(i, n)| {
                let mut w = Window::empty(i as u32 + 1, false);
                w.transactions = *n;
                w
            })
            .collect()
    }

    fn verdict(limiter: &str) -> Verdict {
        Verdict {
            limiter: limiter.into(),
            says: "x".into(),
        }
    }

    fn counters(background: &[u32], totals: &[(&str, &str, f64)]) -> ServerCounters {
        ServerCounters {
            background: vec![BackgroundEvent {
                event: "checkpoint".into(),
                counters: vec!["v.ckpt".into()],
                seconds: background.to_vec(),
                tps_in: None,
                tps_out: None,
                differs: false,
            }],
            counters: totals
                .iter()
                .map(|(name, role, total)| {
                    let t = CounterTotal {
                        kind: "cumulative".into(),
                        roles: vec![role.to_string()],
                        total: Some(*total),
                        per_s: Some(*total / 10.0),
                        ..CounterTotal::default()
                    };
                    (name.to_string(), t)
                })
                .collect(),
            ..ServerCounters::default()
        }
    }

    #[test]
    fn a_background_event_is_said_when_its_seconds_differ() {
        let w = windows(&[100, 102, 98, 60, 101, 99]);
        let mut c = counters(&[4], &[]);
        let mut v = verdict("cpu");
        refine(&mut v, Some(&mut c), &w, None);
        assert!(
            v.says.contains("checkpoint covered 1 s, 60 tps"),
            "{}",
            v.says
        );
        assert_eq!(v.limiter, "cpu");
        assert!(c.background[0].differs);
        // Within the noise: no clause.
        let w = windows(&[100, 140, 60, 95, 101, 99]);
        let mut c = counters(&[4], &[]);
        let mut v = verdict("cpu");
        refine(&mut v, Some(&mut c), &w, None);
        assert_eq!(v.says, "x");
        assert!(!c.background[0].differs);
        // Too few other seconds to tell.
        assert_eq!(background_differs(&windows(&[1, 2, 3]), &[1]), None);
        // Warm-up seconds are not compared.
        let mut w = windows(&[100, 102, 98, 60, 101, 99]);
        w.iter_mut().take(3).for_each(|w| w.warmup = true);
        assert_eq!(background_differs(&w, &[4]), None);
    }

    #[test]
    fn buffer_pool_misses_tell_data_reads_from_cpu() {
        let w = windows(&[10; 6]);
        let misses = |m: f64, wait: Option<f64>| {
            let mut t = vec![
                ("s.reads", "pages_read", m),
                ("s.requests", "page_requests", 1000.0),
            ];
            if let Some(x) = wait {
                t.push(("s.wait", "data_read_wait", x));
            }
            counters(&[], &t)
        };
        let judge = |mut c: ServerCounters, limiter: &str| {
            let mut v = verdict(limiter);
            refine(&mut v, Some(&mut c), &w, Some(4.0));
            v
        };
        let v = judge(misses(50.0, None), "running");
        assert_eq!(v.limiter, "data_read", "{}", v.says);
        assert!(
            v.says.contains("5.00% of page requests missed"),
            "{}",
            v.says
        );
        assert_eq!(judge(misses(0.5, None), "running").limiter, "cpu");
        // Between the two thresholds: running stays, its figures said.
        let v = judge(misses(5.0, None), "running");
        assert_eq!(v.limiter, "running");
        assert!(v.says.contains("0.50% of page requests"), "{}", v.says);
        // Data-file waits decide where they were read: 30 s over 10 s is 3 of 4 sessions.
        assert_eq!(
            judge(misses(5.0, Some(30.0)), "running").limiter,
            "data_read"
        );
        assert_eq!(judge(misses(50.0, Some(5.0)), "running").limiter, "running");
        // Another limiter is left as it is.
        assert_eq!(judge(misses(50.0, None), "lock").limiter, "lock");
    }

    #[test]
    fn headlines_first_then_by_share_of_their_count() {
        let mut c = counters(&[], &[("z.head", "headline", 5.0), ("a.other", "", 5.0)]);
        c.counters.get_mut("a.other").unwrap().from = Some(995.0);
        c.counters.insert(
            "b.new".into(),
            CounterTotal {
                kind: "cumulative".into(),
                from: Some(0.0),
                total: Some(1.0),
                ..CounterTotal::default()
            },
        );
        let names: Vec<&str> = moved_most(&c).iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["z.head", "b.new", "a.other"]);
    }
}
