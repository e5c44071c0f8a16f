//! The server's counters over a run (`Session::stats`), read once a second on the wait
//! sampler's connection (metrics/waits.rs calls `CounterReader::tick` at each of its samples,
//! under the same read deadline): per-second deltas of what moved (gauges as read), the
//! totals over the measured part (from the first reading at or after the warm-up's end to the
//! last), per second and per transaction, the headline counters second by second, and the
//! seconds each background event (a checkpoint, autovacuum, InnoDB's flushing) covered; and
//! the rule for the counters that moved most (`moved_most`). The evidence they add to the
//! verdict is `evidence.rs`'s.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::Session;
use crate::engine::stats::{Kind, Role, Stat};

/// The time between two readings.
const PERIOD: Duration = Duration::from_secs(1);
/// How many counters "the counters that moved most" names.
pub const MOVED_MOST: usize = 8;

/// The counters of a run, as the result keeps them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerCounters {
    /// Readings taken (one a second, warm-up included).
    pub readings: u32,
    /// Readings that were due while an earlier one was still being read (a slow server): the
    /// seconds they would have told are merged into the next.
    #[serde(default)]
    pub missed: u32,
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
    /// page_requests, data_read_wait, wait_time.
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
    /// The measured seconds' throughput: the mean in the seconds it covered, the median in the
    /// others, and whether they differ beyond the noise (`background_differs`); None where
    /// there are too few of either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps_in: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps_out: Option<f64>,
    /// Where it covered more than one compared second: the lowest of their tps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps_lowest: Option<f64>,
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
        Role::WaitTime => "wait_time".into(),
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
    /// When the clients were released (the windows' origin), once known: the seconds are
    /// labelled on the windows' clock.
    origin: Option<Duration>,
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
            origin: None,
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
        let mut due = 0;
        while self.due <= at {
            self.due += PERIOD;
            due += 1;
        }
        // Seconds whose reading was due while an earlier one was still being read.
        self.out.missed += due - 1;
        self.read(session, at);
    }

    /// The clients were released at `at` (the windows' second 1 begins there): from then on,
    /// a reading's interval is labelled with the window holding its middle.
    pub fn released(&mut self, at: Duration) {
        self.origin.get_or_insert(at);
    }

    /// The measured part begins now, `at` after the sampler's start (known once the clients
    /// are released): a reading out of the seconds' turn, from which the totals count.
    pub fn begin(&mut self, session: &mut dyn Session, at: Duration) {
        self.measured_from = at;
        if self.on {
            self.read(session, at);
        }
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
        let t = self.origin.and_then(|o| window_of(before.at, now.at, o));
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
            let Some(t) = t else { continue };
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
                tps_lowest: None,
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

    pub fn with_role(&self, role: &str) -> Option<&CounterTotal> {
        self.counters.values().find(|c| c.has(role))
    }
}

/// The window (t as the windows': 1 for the first second after the clients' release at
/// `origin`) holding the middle of the interval between two readings; None for an interval
/// mostly before the release, which no window shows. Readings come once a second on the
/// sampler's own clock, which starts before the clients connect (many clients, a slow
/// login: a second or more), so an interval's end alone would label it a window early.
fn window_of(from: Duration, to: Duration, origin: Duration) -> Option<u32> {
    let middle = (from + to) / 2;
    let after = middle.checked_sub(origin)?;
    Some(u32::try_from(after.as_secs()).unwrap_or(u32::MAX - 1) + 1)
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
        r.released(Duration::ZERO);
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

    #[test]
    fn headlines_first_then_by_share_of_their_count() {
        let total = |role: &str, from: f64, total: f64| CounterTotal {
            kind: "cumulative".into(),
            roles: vec![role.to_string()],
            from: Some(from),
            total: Some(total),
            ..CounterTotal::default()
        };
        let mut c = ServerCounters::default();
        c.counters
            .insert("z.head".into(), total("headline", 0.0, 5.0));
        c.counters.insert("a.other".into(), total("", 995.0, 5.0));
        c.counters.insert("b.new".into(), total("", 0.0, 1.0));
        let names: Vec<&str> = moved_most(&c).iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["z.head", "b.new", "a.other"]);
    }
}
