//! TPC-C's random numbers and strings (clauses 2.1.5, 2.1.6, 4.3.2): uniform draws, NURand with its
//! C constants and the run-time delta rule (a sharded run's drawn from
//! `WorkloadOptions::shared_seed`, so that every shard has the same, recorded as the setting
//! `nurand_run_constants`), a-strings and n-strings, the customer last-name syllables, and the
//! "ORIGINAL" data strings.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// Clause 4.3.2.3: the syllables of C_LAST.
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// Characters of a-strings (clause 4.3.2.2 asks for at least 26 lower case, 26 upper case
/// letters and the 10 digits).
const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// The C constants of NURand (clause 2.1.6): one set for the load, one for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constants {
    pub c_last: u32,
    pub c_id: u32,
    pub ol_i_id: u32,
}

impl Constants {
    /// Random constants for a load: each uniform in [0, A] (clause 2.1.6).
    pub fn for_load(rng: &mut SmallRng) -> Constants {
        Constants {
            c_last: rng.random_range(0..=255),
            c_id: rng.random_range(0..=1023),
            ol_i_id: rng.random_range(0..=8191),
        }
    }

    /// Constants for a run against data loaded with `load` (clause 2.1.6.1): C_LAST's must
    /// differ from the load's by a delta in [65, 119] other than 96 and 112; the others may
    /// be drawn freely.
    pub fn for_run(load: Constants, seed: u64) -> Constants {
        let mut rng = SmallRng::seed_from_u64(seed);
        let valid: Vec<u32> = (0..=255).filter(|&c| valid_delta(c, load.c_last)).collect();
        Constants {
            c_last: valid[rng.random_range(0..valid.len())],
            c_id: rng.random_range(0..=1023),
            ol_i_id: rng.random_range(0..=8191),
        }
    }

    /// As a result records them: `C_LAST 151, C_ID 7, OL_I_ID 4021`.
    pub fn show(self) -> String {
        format!(
            "C_LAST {}, C_ID {}, OL_I_ID {}",
            self.c_last, self.c_id, self.ol_i_id
        )
    }

    pub fn encode(self) -> String {
        format!("{} {} {}", self.c_last, self.c_id, self.ol_i_id)
    }

    pub fn decode(text: &str) -> Option<Constants> {
        let mut it = text.split_whitespace().map(|v| v.parse::<u32>().ok());
        Some(Constants {
            c_last: it.next()??,
            c_id: it.next()??,
            ol_i_id: it.next()??,
        })
    }
}

/// Clause 2.1.6.1: the delta between C_LAST's run and load constants.
pub fn valid_delta(run: u32, load: u32) -> bool {
    let delta = run.abs_diff(load);
    (65..=119).contains(&delta) && delta != 96 && delta != 112
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x (clause 2.1.6).
pub fn nurand(rng: &mut SmallRng, a: i64, x: i64, y: i64, c: u32) -> i64 {
    (((rng.random_range(0..=a) | rng.random_range(x..=y)) + i64::from(c)) % (y - x + 1)) + x
}

/// C_LAST of a number in [0, 999]: its three digits as syllables (clause 4.3.2.3).
pub fn last_name(n: i64, out: &mut String) {
    out.clear();
    for digit in [n / 100, (n / 10) % 10, n % 10] {
        out.push_str(SYLLABLES[digit as usize]);
    }
}

/// A random a-string of a length in [min, max] (clause 4.3.2.2).
pub fn astring(rng: &mut SmallRng, min: usize, max: usize) -> String {
    let len = rng.random_range(min..=max);
    (0..len)
        .map(|_| ALNUM[rng.random_range(0..ALNUM.len())] as char)
        .collect()
}

/// A random n-string (digits) of a length in [min, max].
pub fn nstring(rng: &mut SmallRng, min: usize, max: usize) -> String {
    let len = rng.random_range(min..=max);
    (0..len)
        .map(|_| (b'0' + rng.random_range(0..10u8)) as char)
        .collect()
}

/// I_DATA and S_DATA (clause 4.3.3.1): an a-string of 26 to 50, 10% of them holding
/// "ORIGINAL" at a random position.
pub fn data_string(rng: &mut SmallRng) -> String {
    let mut s = astring(rng, 26, 50);
    if rng.random_range(0..10) == 0 {
        let at = rng.random_range(0..=s.len() - 8);
        s.replace_range(at..at + 8, "ORIGINAL");
    }
    s
}

/// A zip code: 4 random digits and "11111" (clause 4.3.2.7).
pub fn zip(rng: &mut SmallRng) -> String {
    nstring(rng, 4, 4) + "11111"
}

/// A state: two random letters.
pub fn state(rng: &mut SmallRng) -> String {
    (0..2)
        .map(|_| (b'A' + rng.random_range(0..26u8)) as char)
        .collect()
}

/// A uniform fixed-point number in [min, max] with `scale` decimals, as f64 (for money and
/// rates: clause 4.3.3.1 draws W_TAX, D_TAX, C_DISCOUNT, I_PRICE this way).
pub fn decimal(rng: &mut SmallRng, min: f64, max: f64, scale: i32) -> f64 {
    let unit = 10f64.powi(scale);
    let v = rng.random_range((min * unit).round() as i64..=(max * unit).round() as i64);
    v as f64 / unit
}

/// Round money to cents.
pub fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_follow_the_syllables() {
        let mut s = String::new();
        last_name(371, &mut s);
        assert_eq!(s, "PRICALLYOUGHT");
        last_name(0, &mut s);
        assert_eq!(s, "BARBARBAR");
        last_name(999, &mut s);
        assert_eq!(s, "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut hits = vec![0u32; 3001];
        for _ in 0..300_000 {
            let v = nurand(&mut rng, 1023, 1, 3000, 259);
            assert!((1..=3000).contains(&v));
            hits[v as usize] += 1;
        }
        let max = *hits.iter().max().unwrap();
        let min = *hits[1..].iter().min().unwrap();
        // Uniform would give about 100 each; NURand's OR makes some ids far more frequent.
        assert!(max > 3 * min.max(1), "max {max} min {min}");
    }

    #[test]
    fn run_constant_respects_the_delta_rule() {
        for load in 0..=255 {
            let l = Constants {
                c_last: load,
                c_id: 1,
                ol_i_id: 2,
            };
            for seed in 0..5 {
                let r = Constants::for_run(l, seed);
                assert!(valid_delta(r.c_last, load), "load {load} run {}", r.c_last);
                assert!(r.c_last <= 255 && r.c_id <= 1023 && r.ol_i_id <= 8191);
            }
        }
        assert!(!valid_delta(96, 0) && !valid_delta(0, 112) && valid_delta(65, 0));
        let c = Constants {
            c_last: 3,
            c_id: 4,
            ol_i_id: 5,
        };
        assert_eq!(Constants::decode(&c.encode()), Some(c));
    }

    #[test]
    fn about_a_tenth_of_the_data_strings_say_original() {
        let mut rng = SmallRng::seed_from_u64(1);
        let n = (0..20_000)
            .filter(|_| {
                let s = data_string(&mut rng);
                assert!((26..=50).contains(&s.len()));
                s.contains("ORIGINAL")
            })
            .count();
        assert!((1700..2300).contains(&n), "{n}");
    }
}
