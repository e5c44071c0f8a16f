//! The evidence the server's counters (counters.rs) add to a run's verdict (waits.rs), by two
//! stated rules (`refine`): a clause for a background event whose seconds' throughput differs
//! from the others' beyond the noise, and data reads or server CPU told apart where the
//! sessions' states say only "running" (MariaDB's processlist).

use std::fmt::Write as _;

use super::Window;
use super::counters::ServerCounters;
use super::waits::{Verdict, Waits};
use crate::engine::activity::WaitClass;

/// The throughput of the seconds a background event covered, set against the other seconds'
/// (`background_differs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Covered {
    /// The covered seconds' mean tps.
    pub mean: f64,
    /// The covered seconds' lowest tps.
    pub lowest: f64,
    /// The other seconds' median tps.
    pub others: f64,
    /// They differ beyond the noise.
    pub differs: bool,
    /// The covered seconds compared.
    pub seconds: usize,
}

/// A stall of a second or so is counted in at most this many seconds: the readings' intervals
/// it straddles (`background_differs`' one-second arm).
pub const STALL_SECONDS: usize = 3;
/// Other seconds a background event's are set against, at least: their spread is the
/// yardstick, and of three, one deviation is zero and the spread can be a few tps (2000, 2400
/// and 2410 tps: 14.8).
pub const MIN_OTHERS: usize = 6;

/// Whether the throughput in the seconds a background event covered differs from the other
/// seconds' beyond the noise: at least one covered measured second and `MIN_OTHERS` others,
/// and either the covered seconds' mean tps away from the others' median by more than twice
/// the others' spread, or, for an event of at most `STALL_SECONDS` compared seconds, its
/// lowest second below that median by more than three times the spread; either by more than
/// 5% of that median. The one-second arm is there because the server's counters are read
/// once a second: a stall of a second or so (an immediate checkpoint's sync on a fast disk)
/// is counted in the two or three seconds it straddles, and their mean dilutes its dip (on a
/// shared machine, a second at 44% of the others' median was averaged with its two
/// neighbours to 86%, within the noise). Its stricter bar, its few seconds and its one
/// direction (a stall is a dip) keep the noise of the seconds an event covers from passing
/// it as often as it would pass a bar of two spreads on any of them. The spread is
/// the median absolute deviation scaled to a standard deviation (x 1.4826): a burst or a dip
/// of some other cause in one of the other seconds (on a shared machine, a second at twice
/// the rest was seen) does not widen the yardstick as it widens their standard deviation,
/// which had a checkpoint's second at a third of the others' throughput called within the
/// noise. The run's last measured second is left out, as `compare` leaves it out of its
/// seconds: it is usually a part of a second (the run ends within it), and its few
/// transactions would count as a deep dip on either side.
pub fn background_differs(windows: &[Window], seconds: &[u32]) -> Option<Covered> {
    let measured: Vec<&Window> = windows.iter().filter(|w| !w.warmup).collect();
    let whole = &measured[..measured.len().saturating_sub(1)];
    let (inside, outside): (Vec<&Window>, Vec<&Window>) =
        whole.iter().partition(|w| seconds.contains(&w.t));
    if inside.is_empty() || outside.len() < MIN_OTHERS {
        return None;
    }
    let tps = |ws: &[&Window]| ws.iter().map(|w| w.transactions as f64).collect::<Vec<_>>();
    let tin = tps(&inside);
    let mean = tin.iter().sum::<f64>() / tin.len() as f64;
    let lowest = tin.iter().copied().fold(f64::INFINITY, f64::min);
    let tout = tps(&outside);
    let others = median(&tout);
    let deviations: Vec<f64> = tout.iter().map(|x| (x - others).abs()).collect();
    let spread = 1.4826 * median(&deviations);
    let beyond = |gap: f64, spreads: f64| gap > spreads * spread && gap > 0.05 * others;
    let stall = tin.len() <= STALL_SECONDS;
    Some(Covered {
        mean,
        lowest,
        others,
        differs: beyond((mean - others).abs(), 2.0) || (stall && beyond(others - lowest, 3.0)),
        seconds: inside.len(),
    })
}

/// The middle value (the mean of the two middle ones for an even count); 0 for none.
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
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
/// two throughputs, and its lowest second's where it covered more than one (the limiter
/// stays: it is the run's as a whole).
///
/// Data reads where the sessions' states cannot tell them from CPU (a verdict of `running`,
/// MariaDB's processlist): with the data-file wait time (performance_schema on), data reads
/// when those waits are at least half of the running sessions' time (wait seconds per second
/// over the running sessions' average); otherwise, from the buffer pool, data reads when at
/// least 1% of page requests missed it; server CPU when fewer than 0.1% missed (and the
/// data-file waits, when read, were under half); else `running` stays, the figures said. A
/// mixed verdict that names `running` among its classes keeps its limiter and is told, by the
/// same rule, what its running part was.
pub fn refine(
    v: &mut Verdict,
    c: Option<&mut ServerCounters>,
    windows: &[Window],
    running_sessions: Option<f64>,
) {
    let Some(c) = c else { return };
    for b in &mut c.background {
        let Some(k) = background_differs(windows, &b.seconds) else {
            // Too few seconds: nothing judged (a merged run's shard judged its own).
            (b.tps_in, b.tps_out, b.tps_lowest, b.differs) = (None, None, None, false);
            continue;
        };
        (b.tps_in, b.tps_out, b.differs) = (Some(k.mean), Some(k.others), k.differs);
        b.tps_lowest = (k.seconds > 1).then_some(k.lowest);
        if k.differs {
            // Against a median of none, a percentage says nothing.
            let pct = |tps: f64| {
                (k.others > 0.0).then(|| format!("{:+.0}%", 100.0 * (tps - k.others) / k.others))
            };
            // Its lowest second is a stall's figure: not said of a burst.
            let lowest = b
                .tps_lowest
                .filter(|l| *l < k.others)
                .map(|l| match pct(l) {
                    Some(p) => format!("its lowest second {l:.0}, {p}"),
                    None => format!("its lowest second {l:.0}"),
                });
            let said: Vec<String> = [pct(k.mean), lowest].into_iter().flatten().collect();
            let said = if said.is_empty() {
                String::new()
            } else {
                format!(" ({})", said.join("; "))
            };
            let _ = write!(
                v.says,
                "; {} covered {} s, {:.0} tps in them against {:.0} in the others{said}",
                b.event, k.seconds, k.mean, k.others,
            );
        }
    }
    let running = running_sessions.unwrap_or(0.0);
    if v.limiter == "running" {
        let (told, evidence) = data_reads_or_cpu(c, running);
        match told {
            Some((limiter, words)) => {
                v.limiter = limiter.into();
                v.says = format!(
                    "{words}, told from the running sessions by the server's counters ({evidence}); {}",
                    v.says
                );
            }
            None => {
                let _ = write!(v.says, "; {evidence}");
            }
        }
    } else if v.limiter == "mixed" && running > 0.0 && names_running(&v.says) {
        let (told, evidence) = data_reads_or_cpu(c, running);
        let _ = match told {
            Some((_, words)) => write!(
                v.says,
                "; its running part: {words}, told by the server's counters ({evidence})"
            ),
            None => write!(v.says, "; its running part not told apart ({evidence})"),
        };
    }
}

/// Whether a mixed verdict's classes (`no one limiter: lock 45%, running 30% (...)`) name
/// `running`.
fn names_running(says: &str) -> bool {
    let classes = says.split(" (").next().unwrap_or_default();
    classes
        .trim_start_matches("no one limiter: ")
        .split(", ")
        .any(|c| c.starts_with("running "))
}

/// What the running sessions were, by the rule above: (limiter, words) where told, and the
/// evidence in words either way.
fn data_reads_or_cpu(
    c: &ServerCounters,
    running: f64,
) -> (Option<(&'static str, &'static str)>, String) {
    let misses = c.with_role("pages_read").and_then(|t| t.total);
    let requests = c.with_role("page_requests").and_then(|t| t.total);
    // The server's wait times were read when any of their counters moved (`Role::WaitTime`):
    // then no data-file wait among them is none waited, not none known.
    let waits_read = c.counters.values().any(|t| t.has("wait_time"));
    let wait = c
        .with_role("data_read_wait")
        .and_then(|t| t.per_s)
        .or(waits_read.then_some(0.0));
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
            None => e.push("no data-file wait times (performance_schema off: a server dbduel manages has it with --server-statements)".into()),
        }
        e.join(", ")
    };
    let told = match (wait_share, ratio) {
        (Some(s), _) if s >= 0.5 => Some(("data_read", "data reads (I/O)")),
        (None, Some(r)) if r >= 0.01 => Some(("data_read", "data reads (I/O)")),
        (_, Some(r)) if r < 0.001 => Some(("cpu", "server CPU")),
        _ => None,
    };
    (told, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::counters::{BackgroundEvent, CounterTotal};

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
                tps_lowest: None,
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
        let w = windows(&[100, 102, 98, 60, 101, 99, 100, 103, 97]);
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
        let w = windows(&[100, 140, 60, 95, 120, 80, 110, 70, 130, 1]);
        let mut c = counters(&[4], &[]);
        let mut v = verdict("cpu");
        refine(&mut v, Some(&mut c), &w, None);
        assert_eq!(v.says, "x");
        assert!(!c.background[0].differs);
        // A burst in another second does not hide a dip: with the others' standard deviation
        // (382 tps about a mean of 1093) the checkpoint's second at 581 was within the noise.
        let w = windows(&[
            1003, 943, 937, 915, 945, 869, 293, 972, 1360, 2103, 839, 916, 1,
        ]);
        let mut c = counters(&[6, 7], &[]);
        let mut v = verdict("round trips");
        refine(&mut v, Some(&mut c), &w, None);
        assert!(c.background[0].differs, "{:?}", c.background);
        assert!(
            v.says
                .contains("checkpoint covered 2 s, 581 tps in them against 944 in the others"),
            "{}",
            v.says
        );
        // Too few other seconds to tell.
        assert_eq!(background_differs(&windows(&[1, 2, 3]), &[1]), None);
        // Warm-up seconds are not compared: not as others, not as covered ones.
        let mut w = windows(&[0, 0, 0, 60, 100, 102, 98, 101, 99, 100, 1]);
        w.iter_mut().take(3).for_each(|w| w.warmup = true);
        let k = background_differs(&w, &[4]).expect("six other seconds");
        assert_eq!((k.others, k.lowest), (100.0, 60.0));
        let k = background_differs(&w, &[1, 2, 4]).expect("six other seconds");
        assert_eq!((k.seconds, k.lowest), (1, 60.0));
        // Five other seconds are too few.
        let w = windows(&[60, 100, 102, 98, 101, 99, 1]);
        assert_eq!(background_differs(&w, &[1]), None);
    }

    #[test]
    fn the_runs_last_part_second_is_not_a_dip() {
        // Seconds shaped after a real run (PostgreSQL, a CHECKPOINT in one second): the run
        // ended 2 transactions into its last second, which would make the others' spread hide
        // the dip.
        let w = windows(&[5600, 5500, 5550, 3600, 5580, 5450, 5520, 2]);
        let k = background_differs(&w, &[4]).expect("enough seconds");
        assert_eq!(k.seconds, 1);
        assert_eq!((k.mean, k.lowest), (3600.0, 3600.0));
        // The others' median: 5450, 5500, 5520, 5550, 5580, 5600.
        assert_eq!(k.others, 5535.0);
        assert!(k.differs);
        // A covered last second is not compared either.
        assert_eq!(background_differs(&w, &[8]), None);
        let k = background_differs(&w, &[4, 8]).expect("one covered second");
        assert_eq!(k.seconds, 1);
    }

    #[test]
    fn a_dip_in_one_of_its_seconds_is_not_averaged_away() {
        // A real run's seconds (PostgreSQL on a shared machine, a CHECKPOINT whose sync
        // stalled one second): the checkpoint covered seconds 6 to 8, their mean 2027 is
        // within two spreads (348) of the others' 2365, but its second 7 is beyond three.
        let w = windows(&[
            1932, 2365, 1965, 2130, 2224, 2231, 1032, 2819, 2911, 2500, 2851, 2470, 4,
        ]);
        let k = background_differs(&w, &[6, 7, 8]).expect("enough seconds");
        assert_eq!((k.seconds, k.lowest, k.others), (3, 1032.0, 2365.0));
        assert!((k.mean - 2027.33).abs() < 0.01, "{k:?}");
        assert!(k.differs);
        let mut c = counters(&[6, 7, 8], &[]);
        let mut v = verdict("round trips");
        refine(&mut v, Some(&mut c), &w, None);
        assert_eq!(c.background[0].tps_lowest, Some(1032.0));
        assert!(
            v.says.contains(
                "checkpoint covered 3 s, 2027 tps in them against 2365 in the others \
                 (-14%; its lowest second 1032, -56%)"
            ),
            "{}",
            v.says
        );
    }

    #[test]
    fn one_second_must_clear_three_spreads() {
        // The others: median 100, spread 1.4826 x 2.5 = 3.7 tps, so two spreads are 7.4
        // tps and three are 11.1.
        let others = [100, 104, 96, 102, 98, 100, 103, 97];
        let seconds = |covered: &[u64]| {
            let mut tps = covered.to_vec();
            tps.extend(others);
            tps.push(1);
            windows(&tps)
        };
        let first = |n: u32| (1..=n).collect::<Vec<u32>>();
        // 90 is 2.7 spreads below and the mean, 95, 1.4: noise.
        let k = background_differs(&seconds(&[90, 100]), &first(2)).expect("enough seconds");
        assert_eq!(k.lowest, 90.0);
        assert!(!k.differs, "{k:?}");
        // 88 is 3.2 spreads below (the mean, 94, still 1.6): a stall.
        let k = background_differs(&seconds(&[88, 100]), &first(2)).expect("enough seconds");
        assert!(k.differs, "{k:?}");
        // A burst is no stall: 112 is 3.2 spreads above, the mean 1.6.
        let k = background_differs(&seconds(&[112, 100]), &first(2)).expect("enough seconds");
        assert!(!k.differs, "{k:?}");
        // Three seconds may hold a stall, four are an event of their own length: judged by
        // their mean alone.
        let k = background_differs(&seconds(&[88, 100, 100]), &first(3)).expect("enough");
        assert!(k.differs, "{k:?}");
        let k = background_differs(&seconds(&[88, 100, 100, 100]), &first(4)).expect("enough");
        assert!(!k.differs, "{k:?}");
        // One covered second has no lowest said apart from its mean.
        let mut c = counters(&[1], &[]);
        refine(
            &mut verdict("cpu"),
            Some(&mut c),
            &seconds(&[60, 100]),
            None,
        );
        assert_eq!(c.background[0].tps_lowest, None);
    }

    #[test]
    fn the_mean_must_clear_two_spreads_and_either_arm_five_percent() {
        // The others: median 100, spread 3.7 tps (two spreads 7.4, three 11.1).
        let others = [100u64, 104, 96, 102, 98, 100, 103, 97];
        let seconds = |covered: &[u64]| {
            let mut tps = covered.to_vec();
            tps.extend(others);
            tps.push(1);
            windows(&tps)
        };
        // Four seconds (no stall arm) at 91 are 2.4 spreads below; at 93, 1.9.
        let k = background_differs(&seconds(&[91; 4]), &[1, 2, 3, 4]).expect("enough");
        assert!(k.differs, "{k:?}");
        let k = background_differs(&seconds(&[93; 4]), &[1, 2, 3, 4]).expect("enough");
        assert!(!k.differs, "{k:?}");
        // Others of 1000 ± 1: a spread of 1.5 tps, and the 5% floor (50 tps) is the bar.
        let steady = [1000u64, 1001, 999, 1000, 1001, 999, 1000];
        let with = |covered: u64| {
            let mut tps = vec![covered];
            tps.extend(steady);
            tps.push(1);
            windows(&tps)
        };
        let k = background_differs(&with(970), &[1]).expect("enough");
        assert!(!k.differs, "{k:?}");
        let k = background_differs(&with(940), &[1]).expect("enough");
        assert!(k.differs, "{k:?}");
    }

    #[test]
    fn three_other_seconds_are_no_yardstick() {
        // Their spread is 14.8 tps: a mean 9% below would have been called beyond it.
        let w = windows(&[2000, 2400, 2410, 2200, 2150, 3]);
        assert_eq!(background_differs(&w, &[4, 5]), None);
    }

    #[test]
    fn a_median_of_none_says_no_percentage() {
        let w = windows(&[0, 0, 0, 50, 40, 0, 0, 0, 1]);
        let mut c = counters(&[4, 5], &[]);
        let mut v = verdict("cpu");
        refine(&mut v, Some(&mut c), &w, None);
        assert!(c.background[0].differs);
        assert!(
            v.says
                .ends_with("covered 2 s, 45 tps in them against 0 in the others"),
            "{}",
            v.says
        );
        // Judged again on too few seconds (a merge): nothing of the first judgment stays.
        refine(&mut v, Some(&mut c), &windows(&[1, 2, 3]), None);
        let b = &c.background[0];
        assert_eq!(
            (b.tps_in, b.tps_out, b.tps_lowest, b.differs),
            (None, None, None, false)
        );
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
        // Wait summaries read (a latch's waits moved) and no data-file wait among them: none
        // waited, said as such, not as performance_schema off.
        let mut read = misses(0.0, None);
        read.counters.insert(
            "events_waits.wait/synch/mutex/innodb/buf_pool_mutex.seconds".into(),
            CounterTotal {
                kind: "cumulative".into(),
                roles: vec!["wait_time".into()],
                total: Some(0.01),
                per_s: Some(0.001),
                ..CounterTotal::default()
            },
        );
        let v = judge(read.clone(), "running");
        assert_eq!(v.limiter, "cpu", "{}", v.says);
        assert!(
            v.says
                .contains("data-file waits 0% of the running sessions' time")
                && !v.says.contains("performance_schema off"),
            "{}",
            v.says
        );
        // Misses with none of them waited on (pages from the OS's cache, quickly): running
        // stays, as when the waits were read under half.
        let mut quick = misses(50.0, None);
        quick.counters.extend(
            read.counters
                .clone()
                .into_iter()
                .filter(|(n, _)| n.starts_with("events")),
        );
        let v = judge(quick, "running");
        assert_eq!(v.limiter, "running", "{}", v.says);
        assert!(v.says.contains("data-file waits 0%"), "{}", v.says);
        // Without them, it is said what would give them.
        let v = judge(misses(0.0, None), "running");
        assert!(v.says.contains("performance_schema off"), "{}", v.says);
    }

    #[test]
    fn a_mixed_verdicts_running_part_is_told_and_its_limiter_kept() {
        let w = windows(&[10; 6]);
        let c = |m: f64| {
            counters(
                &[],
                &[
                    ("s.reads", "pages_read", m),
                    ("s.requests", "page_requests", 1000.0),
                ],
            )
        };
        let judge = |m: f64, says: &str| {
            let mut v = Verdict {
                limiter: "mixed".into(),
                says: says.into(),
            };
            refine(&mut v, Some(&mut c(m)), &w, Some(2.0));
            v
        };
        let mixed = "no one limiter: lock 45%, running 40%, commit 10% (4.0 of 5 sessions)";
        let v = judge(50.0, mixed);
        assert_eq!(v.limiter, "mixed");
        assert!(
            v.says.ends_with(
                "; its running part: data reads (I/O), told by the server's counters (5.00% of page requests missed the cache, no data-file wait times (performance_schema off: a server dbduel manages has it with --server-statements))"
            ),
            "{}",
            v.says
        );
        assert!(
            judge(0.5, mixed)
                .says
                .contains("its running part: server CPU")
        );
        assert!(
            judge(5.0, mixed)
                .says
                .contains("its running part not told apart (0.50%")
        );
        // A mixed verdict without running is left as it is, whatever its words hold.
        let other = "no one limiter: lock 45%, commit 43%, cpu 8% (running 2 of 8)";
        assert_eq!(judge(50.0, other).says, other);
    }
}
