//! sysbench 1.0's random numbers (src/sb_rand.c), which sysbench and the declarative workloads
//! share: uniform, gaussian, special (1.0.20's default), pareto, and master's zipfian, over a
//! per-client xoshiro generator; and the `#` string templates of oltp_common.lua.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// `--rand-type` (sb_rand.c: rand_args). 1.0.20 defaults to special.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    Uniform,
    Gaussian,
    /// `--rand-spec-pct` (window width, % of the range) and `--rand-spec-res` (% of draws in it).
    Special {
        pct: f64,
        res: f64,
    },
    Pareto {
        h: f64,
    },
    /// Not in 1.0.20 (master only): exponent 0.8 by default.
    Zipfian {
        exp: f64,
    },
}

impl Dist {
    pub const NAMES: &'static [&'static str] =
        &["uniform", "gaussian", "special", "pareto", "zipfian"];

    pub fn parse(name: &str) -> Option<Dist> {
        Some(match name {
            "uniform" => Dist::Uniform,
            "gaussian" => Dist::Gaussian,
            "special" => Dist::Special {
                pct: 1.0,
                res: 75.0,
            },
            "pareto" => Dist::Pareto { h: 0.2 },
            "zipfian" => Dist::Zipfian { exp: 0.8 },
            _ => return None,
        })
    }

    /// The `--rand-type` name, with its parameters where they are not the default's.
    pub fn name(&self) -> String {
        match *self {
            Dist::Uniform => "uniform".into(),
            Dist::Gaussian => "gaussian".into(),
            Dist::Special { pct, res } if pct == 1.0 && res == 75.0 => "special".into(),
            Dist::Special { pct, res } => format!("special (pct {pct}, res {res})"),
            Dist::Pareto { h: 0.2 } => "pareto".into(),
            Dist::Pareto { h } => format!("pareto (h {h})"),
            Dist::Zipfian { exp: 0.8 } => "zipfian".into(),
            Dist::Zipfian { exp } => format!("zipfian (exp {exp})"),
        }
    }
}

/// Summed uniforms in gaussian and special (`--rand-spec-iter`).
const ITER: u32 = 12;

pub struct Rand {
    rng: SmallRng,
    dist: Dist,
}

impl Rand {
    pub fn new(seed: u64, dist: Dist) -> Rand {
        Rand {
            rng: SmallRng::seed_from_u64(seed),
            dist,
        }
    }

    fn u(&mut self) -> f64 {
        self.rng.random::<f64>()
    }

    /// sb_rand_uniform: a + (uint32)(U * (b - a + 1)).
    pub fn uniform(&mut self, a: i64, b: i64) -> i64 {
        a + (self.u() * (b - a + 1) as f64) as i64
    }

    /// sysbench.rand.default: the `--rand-type` distribution on [a, b].
    pub fn default(&mut self, a: i64, b: i64) -> i64 {
        match self.dist {
            Dist::Uniform => self.uniform(a, b),
            Dist::Gaussian => {
                let t = (b - a + 1) as f64;
                let sum: f64 = (0..ITER).map(|_| self.u() * t).sum();
                a + (sum / f64::from(ITER)) as i64
            }
            Dist::Special { pct, res } => self.special(a, b, pct, res),
            Dist::Pareto { h } => {
                let power = h.ln() / (1.0 - h).ln();
                a + ((b - a + 1) as f64 * self.u().powf(power)) as i64
            }
            Dist::Zipfian { exp } => a + self.zipf((b - a + 1) as f64, exp) - 1,
        }
    }

    /// sb_rand_special: `res`% of draws uniform in a window of `pct`% just above the middle,
    /// the rest gaussian over the range.
    fn special(&mut self, a: i64, b: i64, pct: f64, res: f64) -> i64 {
        let t = (b - a) as f64;
        let rnd = self.u();
        if rnd * t * 100.0 / (100.0 - res) < t {
            let sum: f64 = (0..ITER).map(|_| self.u()).sum();
            return a + (sum * t / f64::from(ITER)) as i64;
        }
        let d = t * pct / 100.0;
        a + (rnd * (d + 1.0) + t / 2.0 - t * pct / 200.0) as i64
    }

    /// Rejection-inversion zipfian (sysbench master): P(k) proportional to k^-exp, k in 1..=n.
    fn zipf(&mut self, n: f64, e: f64) -> i64 {
        let h_int = |x: f64| {
            if (e - 1.0).abs() < 1e-12 {
                x.ln()
            } else {
                (x.powf(1.0 - e) - 1.0) / (1.0 - e)
            }
        };
        let h = |x: f64| x.powf(-e);
        let h_inv = |y: f64| {
            if (e - 1.0).abs() < 1e-12 {
                y.exp()
            } else {
                (1.0 + y * (1.0 - e)).max(0.0).powf(1.0 / (1.0 - e))
            }
        };
        let s = 2.0 - h_inv(h_int(2.5) - h(2.0));
        let (hx1, hn) = (h_int(1.5) - 1.0, h_int(n + 0.5));
        loop {
            let u = hn + self.u() * (hx1 - hn);
            let x = h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, n);
            if k - x <= s || u >= h_int(k + 0.5) - h(k) {
                return k as i64;
            }
        }
    }

    /// sb_rand_str: every `#` becomes a random digit.
    pub fn string(&mut self, template: &str) -> String {
        template
            .chars()
            .map(|c| {
                if c == '#' {
                    char::from(b'0' + self.uniform(0, 9) as u8)
                } else {
                    c
                }
            })
            .collect()
    }
}

/// oltp_common.lua's c and pad templates: 10 and 5 groups of 11 digits.
pub const C_TEMPLATE: &str = "###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
pub const PAD_TEMPLATE: &str = "###########-###########-###########-###########-###########";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_puts_three_quarters_in_the_middle_window() {
        let mut r = Rand::new(7, Dist::parse("special").unwrap());
        let hits = (0..100_000)
            .filter(|_| (4975..=5051).contains(&r.default(1, 10_000)))
            .count();
        let share = hits as f64 / 100_000.0;
        assert!((0.73..0.79).contains(&share), "{share}");
    }

    #[test]
    fn every_distribution_stays_in_range() {
        for name in Dist::NAMES {
            let mut r = Rand::new(1, Dist::parse(name).unwrap());
            for _ in 0..20_000 {
                let v = r.default(1, 1000);
                assert!((1..=1000).contains(&v), "{name}: {v}");
            }
        }
    }

    #[test]
    fn templates_fill_digits() {
        let mut r = Rand::new(3, Dist::Uniform);
        let c = r.string(C_TEMPLATE);
        assert_eq!(c.len(), 119);
        assert!(
            c.split('-')
                .all(|g| g.len() == 11 && g.chars().all(|d| d.is_ascii_digit()))
        );
    }
}
