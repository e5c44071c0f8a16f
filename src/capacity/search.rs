//! The capacity search's decisions: which rate to try next (open-loop steps at rising rates from
//! the closed loop's ceiling, narrowing in by halves, the boundary step confirmed, stepping down
//! when it fails), given whether each step met its objectives, and what the steps found (a
//! capacity, none met, unconfirmed, or a database whose speed changed midway). No database here:
//! the caller runs the steps; the tests walk it step by step against synthetic databases.

use crate::error::Error;

/// The first rising step, as a share of the closed loop's rate; and how far above that
/// rate the rising steps go.
pub const FIRST_SHARE: f64 = 0.125;
pub const CEILING_SHARE: f64 = 1.2;
/// Steps spent narrowing in, and tries to confirm the boundary, at most.
const NARROWING_STEPS: usize = 10;
pub const CONFIRM_TRIES: usize = 3;
/// Below this share of the closed loop's rate, a first failing step stops halving.
const FLOOR_SHARE: f64 = 1.0 / 256.0;

/// How one step went.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Judged {
    Met,
    Failed,
    /// Ctrl-C: the step's figures are partial and the search stops.
    Interrupted,
}

/// What the search found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Found {
    /// `tps` met every objective twice; `failing` is the lowest rate that failed above it
    /// (None: every rate up to CEILING_SHARE times the closed loop's met them).
    Capacity {
        tps: f64,
        failing: Option<f64>,
    },
    /// No rate met every objective, down to `down_to`.
    NoneMet {
        down_to: f64,
        failing: Option<f64>,
    },
    /// The boundary near `near` passed and failed in turn CONFIRM_TRIES times.
    Unconfirmed {
        near: f64,
        failing: Option<f64>,
    },
    /// Rates down to `lowest` failed after higher ones had passed: the database's speed
    /// changed during the search.
    Unsteady {
        lowest: f64,
        failing: Option<f64>,
    },
    Interrupted,
}

/// Search from the closed loop's rate `ceiling`, narrowing to within `precision` (a share),
/// `judge(phase, rate)` running each step.
pub fn search(
    ceiling: f64,
    precision: f64,
    mut judge: impl FnMut(&'static str, f64) -> Result<Judged, Error>,
) -> Result<Found, Error> {
    // One step; returns from `search` when it was interrupted.
    macro_rules! met {
        ($phase:expr, $rate:expr) => {
            match judge($phase, $rate)? {
                Judged::Interrupted => return Ok(Found::Interrupted),
                j => j == Judged::Met,
            }
        };
    }
    let (mut pass, mut fail) = (None::<f64>, None::<f64>);
    // Rising: from an eighth of the closed loop's rate, doubling, up to 1.2 times it.
    let mut rate = ceiling * FIRST_SHARE;
    loop {
        if !met!("rising", rate) {
            fail = Some(rate);
            break;
        }
        pass = Some(rate);
        if rate >= ceiling * CEILING_SHARE {
            break;
        }
        rate = (rate * 2.0).min(ceiling * CEILING_SHARE);
    }
    // Falling: the first step failed; halve until one passes.
    while pass.is_none() && rate > ceiling * FLOOR_SHARE {
        rate /= 2.0;
        if met!("falling", rate) {
            pass = Some(rate);
        } else {
            fail = Some(rate);
        }
    }
    let Some(mut low) = pass else {
        return Ok(Found::NoneMet {
            down_to: rate,
            failing: fail,
        });
    };
    // Narrowing, then confirming: the boundary's passing step run again.
    for _ in 0..CONFIRM_TRIES {
        for _ in 0..NARROWING_STEPS {
            let Some(high) = fail.filter(|h| *h > low * (1.0 + precision)) else {
                break;
            };
            let mid = (low + high) / 2.0;
            if met!("narrowing", mid) {
                low = mid;
            } else {
                fail = Some(mid);
            }
        }
        if met!("confirming", low) {
            return Ok(Found::Capacity {
                tps: low,
                failing: fail,
            });
        }
        // It failed the second time: the boundary lies below. Step down until a rate
        // passes, then narrow in again.
        fail = Some(low);
        let mut found = false;
        for _ in 0..CONFIRM_TRIES {
            low *= 1.0 - 2.0 * precision;
            if met!("falling", low) {
                found = true;
                break;
            }
            fail = Some(low);
        }
        if !found {
            return Ok(Found::Unsteady {
                lowest: low,
                failing: fail,
            });
        }
    }
    Ok(Found::Unconfirmed {
        near: low,
        failing: fail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search against a database that meets the objectives up to `capacity(step)` tps,
    /// `step` counting from 0; the phases and rates it tried, and what it found.
    fn against(ceiling: f64, capacity: impl Fn(usize) -> f64) -> (Vec<(&'static str, f64)>, Found) {
        let mut tried = Vec::new();
        let found = search(ceiling, 0.05, |phase, rate| {
            let met = rate <= capacity(tried.len());
            tried.push((phase, rate));
            Ok(if met { Judged::Met } else { Judged::Failed })
        })
        .unwrap();
        (tried, found)
    }

    #[test]
    fn a_steady_database_is_found_within_the_precision_and_confirmed() {
        let (tried, found) = against(1000.0, |_| 700.0);
        let Found::Capacity {
            tps,
            failing: Some(failing),
        } = found
        else {
            panic!("{found:?} after {tried:?}");
        };
        assert!(tps <= 700.0 && tps > 700.0 / 1.05, "{tps}");
        assert!(failing > 700.0 && failing <= tps * 1.05, "{failing}");
        let phases: Vec<_> = tried.iter().map(|t| t.0).collect();
        assert_eq!(phases[..4], ["rising"; 4], "125, 250, 500 pass; 1000 fails");
        assert_eq!(tried.last(), Some(&("confirming", tps)));
    }

    #[test]
    fn every_rate_met_up_to_the_top_is_a_capacity_of_at_least_that() {
        let (tried, found) = against(1000.0, |_| f64::INFINITY);
        let top = 1000.0 * CEILING_SHARE;
        assert_eq!(
            found,
            Found::Capacity {
                tps: top,
                failing: None
            }
        );
        assert_eq!(tried.last(), Some(&("confirming", top)));
    }

    #[test]
    fn a_first_failing_step_halves_the_rate_until_one_passes() {
        let (tried, found) = against(1000.0, |_| 30.0);
        assert!(matches!(found, Found::Capacity { tps, .. } if tps <= 30.0 && tps > 30.0 / 1.05));
        assert_eq!(tried[1], ("falling", 62.5));
        assert_eq!(tried[2], ("falling", 31.25));
        assert_eq!(tried[3], ("falling", 15.625));
    }

    #[test]
    fn nothing_met_down_to_the_floor() {
        let (_, found) = against(1000.0, |_| 0.0);
        assert!(
            matches!(found, Found::NoneMet { down_to, failing: Some(_) } if down_to <= 1000.0 * FLOOR_SHARE)
        );
    }

    #[test]
    fn a_database_that_slows_down_midway_is_unsteady_not_a_capacity() {
        // 700 tps for the first 8 steps, then almost nothing: the confirming step fails and
        // so does every rate below it.
        let (tried, found) = against(1000.0, |step| if step < 8 { 700.0 } else { 1.0 });
        assert!(
            matches!(found, Found::Unsteady { lowest, .. } if lowest < 700.0),
            "{found:?} after {tried:?}"
        );
        let falling = tried.iter().rev().take_while(|t| t.0 == "falling").count();
        assert_eq!(falling, CONFIRM_TRIES);
    }

    #[test]
    fn a_boundary_that_fails_each_time_it_is_repeated_is_unconfirmed() {
        // Each confirming step fails; every other step passes below 700.
        let mut tried = Vec::new();
        let found = search(1000.0, 0.05, |phase, rate| {
            tried.push((phase, rate));
            Ok(if phase != "confirming" && rate <= 700.0 {
                Judged::Met
            } else {
                Judged::Failed
            })
        })
        .unwrap();
        assert!(matches!(found, Found::Unconfirmed { .. }), "{found:?}");
        let confirming = tried.iter().filter(|t| t.0 == "confirming").count();
        assert_eq!(confirming, CONFIRM_TRIES);
    }

    #[test]
    fn an_interrupted_step_ends_the_search_there() {
        let mut steps = 0;
        let found = search(1000.0, 0.05, |_, _| {
            steps += 1;
            Ok(if steps == 3 {
                Judged::Interrupted
            } else {
                Judged::Met
            })
        })
        .unwrap();
        assert_eq!((found, steps), (Found::Interrupted, 3));
    }
}
