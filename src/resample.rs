//! Resampling for `compare`, seeded so that the same input always gives the same interval: the
//! percentile bootstrap over repeats (each repeat drawn whole) and the circular block bootstrap
//! over a series of seconds (blocks of consecutive seconds, so that their autocorrelation survives
//! the resampling), with a block length chosen from the series' lag-1 autocorrelation
//! (Politis-White for AR(1)). Resampled means are spread to the mean's variance (unbiased, times
//! the AR(1) factor for seconds); the interval of a ratio of means is widened by Student's t
//! (Welch-Satterthwaite degrees of freedom over effective sizes); normal and t quantiles.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// Resamples of each side: enough for the 0.5% tails of a 99% interval to hold 50 each.
pub const RESAMPLES: usize = 10_000;
/// The seed of every comparison: the same values always give the same interval.
pub const SEED: u64 = 16;

/// How one side's values are drawn again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scheme {
    /// Independent values (repeats): each draw takes any of them.
    Independent,
    /// A series with memory (per-second windows): blocks of `block` consecutive values, the
    /// series read as a circle so that the last values are drawn as often as the first.
    Blocks { block: usize },
}

/// One side of a comparison: its values and how they are resampled.
#[derive(Debug, Clone)]
pub struct Sample<'a> {
    pub values: &'a [f64],
    pub scheme: Scheme,
}

pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// The lag-1 autocorrelation of a series (0 for a series too short or constant).
pub fn lag1_autocorrelation(v: &[f64]) -> f64 {
    if v.len() < 3 {
        return 0.0;
    }
    let m = mean(v);
    let var: f64 = v.iter().map(|x| (x - m).powi(2)).sum();
    if var <= 0.0 {
        return 0.0;
    }
    let cov: f64 = v.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum();
    cov / var
}

/// The block length for the circular block bootstrap of a series' mean: Politis and White's
/// (2004) optimal length for an AR(1) process with the series' lag-1 autocorrelation rho,
/// (6 rho² / (1 - rho²)²)^(1/3) n^(1/3), rounded up; 1 when the seconds do not remember each
/// other, at most a third of the series.
pub fn block_length(v: &[f64]) -> usize {
    let n = v.len();
    let rho = lag1_autocorrelation(v).clamp(0.0, 0.95);
    if n < 3 || rho <= 0.0 {
        return 1;
    }
    let g = 6.0 * rho * rho / (1.0 - rho * rho).powi(2);
    let b = (g * n as f64).cbrt().ceil() as usize;
    b.clamp(1, (n / 3).max(1))
}

/// One resample of a side, into `out` (same length as the side).
fn draw(s: &Sample, rng: &mut SmallRng, out: &mut Vec<f64>) {
    out.clear();
    let n = s.values.len();
    match s.scheme {
        Scheme::Independent => {
            out.extend((0..n).map(|_| s.values[rng.random_range(0..n)]));
        }
        Scheme::Blocks { block } => {
            let block = block.clamp(1, n);
            while out.len() < n {
                let start = rng.random_range(0..n);
                let take = block.min(n - out.len());
                out.extend((0..take).map(|k| s.values[(start + k) % n]));
            }
        }
    }
}

/// The lag-1 autocorrelation with its small-sample bias taken off (Kendall: the estimate
/// falls short by about (1 + 3 rho) / n), between 0 and 0.95.
fn corrected_rho(v: &[f64]) -> f64 {
    let rho = lag1_autocorrelation(v);
    if rho <= 0.0 {
        return 0.0;
    }
    (rho + (1.0 + 3.0 * rho) / v.len() as f64).min(0.95)
}

/// The variance of a side's mean as its values say, relative to s² / n (s² the unbiased
/// variance): 1 for repeats; for seconds, an AR(1) series' (1 + rho) / (1 - rho), which holds
/// the autocorrelation at every lag.
fn variance_factor(s: &Sample) -> f64 {
    match s.scheme {
        Scheme::Independent => 1.0,
        Scheme::Blocks { .. } => {
            let rho = corrected_rho(s.values);
            (1.0 + rho) / (1.0 - rho)
        }
    }
}

/// A side's resampled means, `resamples` of them, spread around the side's mean so that
/// their variance is at least what `variance_factor` says the mean's is. The plain bootstrap
/// falls short of it: a few repeats look steadier than they are (by (n - 1) / n), and blocks
/// of a short series keep only part of its autocorrelation. The spreading is done on a log
/// scale, so that a mean stays positive however wide its noise.
fn resampled_means(s: &Sample, resamples: usize, rng: &mut SmallRng) -> Vec<f64> {
    let mut buf = Vec::new();
    let means: Vec<f64> = (0..resamples)
        .map(|_| {
            draw(s, rng, &mut buf);
            mean(&buf).ln()
        })
        .collect();
    let n = s.values.len() as f64;
    let m = mean(s.values);
    let lm = m.ln();
    if n < 2.0 || !lm.is_finite() {
        return means.iter().map(|x| x.exp()).collect();
    }
    let var = |v: &[f64], c: f64| {
        v.iter()
            .filter(|x| x.is_finite())
            .map(|x| (x - c).powi(2))
            .sum::<f64>()
    };
    // The variance of the mean, relative to the mean squared: the variance of its log.
    let target = var(s.values, m) / (n - 1.0) / n * variance_factor(s) / (m * m);
    let got = var(&means, lm) / resamples as f64;
    let k = if got > 0.0 {
        (target / got).sqrt().max(1.0)
    } else {
        1.0
    };
    means.iter().map(|x| (lm + (x - lm) * k).exp()).collect()
}

/// The bootstrap distribution of mean(b) / mean(a) over its value in the data: both sides
/// resampled `resamples` times (seeded, see `resampled_means`); the sorted ratios r* / r.
/// Empty when a side has no values or a mean of zero.
pub fn ratio_distribution(a: &Sample, b: &Sample, resamples: usize, seed: u64) -> Vec<f64> {
    let observed = mean(b.values) / mean(a.values);
    if !observed.is_finite() || observed == 0.0 {
        return Vec::new();
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let ma = resampled_means(a, resamples, &mut rng);
    let mb = resampled_means(b, resamples, &mut rng);
    let mut out: Vec<f64> = ma
        .iter()
        .zip(&mb)
        .map(|(xa, xb)| xb / xa / observed)
        .filter(|r| r.is_finite())
        .collect();
    out.sort_by(f64::total_cmp);
    out
}

/// The two-sided percentile interval at `level` (0.95: the 2.5% and 97.5% quantiles) of a
/// sorted distribution.
pub fn percentile_interval(sorted: &[f64], level: f64) -> Option<(f64, f64)> {
    if sorted.is_empty() {
        return None;
    }
    let tail = (1.0 - level) / 2.0;
    let at = |q: f64| {
        let i = (q * (sorted.len() - 1) as f64).round() as usize;
        sorted[i.min(sorted.len() - 1)]
    };
    Some((at(tail), at(1.0 - tail)))
}

/// The interval of mean(b) / mean(a) at `level`: the percentile interval of the bootstrap
/// distribution, its distance from the observed ratio (on a log scale) widened by
/// t(df) / z, the Student quantile over the normal one. The bootstrap's tails are as thin as
/// the normal's, but a side's noise is itself estimated from a few repeats or a few
/// effectively independent seconds: without it, equal sides are called different several
/// times more often than the level says. df is Welch-Satterthwaite's over each side's
/// effective size (n, or n (1 - rho) / (1 + rho) for seconds).
pub fn ratio_interval(
    a: &Sample,
    b: &Sample,
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    let dist = ratio_distribution(a, b, resamples, seed);
    let (lo, hi) = percentile_interval(&dist, level)?;
    let q = 1.0 - (1.0 - level) / 2.0;
    let widen = t_quantile(q, degrees_of_freedom(a, b, true)) / normal_quantile(q);
    let observed = mean(b.values) / mean(a.values);
    let scale = |x: f64| observed * x.powf(widen);
    Some((scale(lo), scale(hi)))
}

/// The interval of mean(b) - mean(a) at `level`, by the same resampling as `ratio_interval`
/// (each side's resampled means, spread to its mean's variance), its distance from the
/// observed difference widened by t(df) / z. For values that may be zero on a side (a class
/// of time one side never saw), where a ratio has no meaning. None when a side is empty.
pub fn difference_interval(
    a: &Sample,
    b: &Sample,
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if a.values.is_empty() || b.values.is_empty() {
        return None;
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let ma = resampled_means(a, resamples, &mut rng);
    let mb = resampled_means(b, resamples, &mut rng);
    let mut dist: Vec<f64> = ma
        .iter()
        .zip(&mb)
        .map(|(xa, xb)| xb - xa)
        .filter(|d| d.is_finite())
        .collect();
    dist.sort_by(f64::total_cmp);
    let (lo, hi) = percentile_interval(&dist, level)?;
    let q = 1.0 - (1.0 - level) / 2.0;
    let widen = t_quantile(q, degrees_of_freedom(a, b, false)) / normal_quantile(q);
    let observed = mean(b.values) - mean(a.values);
    Some((
        observed + (lo - observed) * widen,
        observed + (hi - observed) * widen,
    ))
}

/// How many independent values a side's values are worth: n for repeats, n (1 - rho) /
/// (1 + rho) for seconds that remember each other.
pub fn effective_size(s: &Sample) -> f64 {
    s.values.len() as f64 / variance_factor(s)
}

/// Welch-Satterthwaite's degrees of freedom of the difference of two means, each side
/// counted by its effective size; at least 2. Each side's variance is taken relative to its
/// level when `relative` (a ratio is scale-free), on the values' own scale otherwise (a
/// difference, where a side's mean may be zero).
fn degrees_of_freedom(a: &Sample, b: &Sample, relative: bool) -> f64 {
    let side = |s: &Sample| {
        let n = s.values.len() as f64;
        let m = mean(s.values);
        let var = s.values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        let n_eff = effective_size(s).max(2.0);
        let scale = if relative { m * m } else { 1.0 };
        (var * variance_factor(s) / n / scale, n_eff - 1.0)
    };
    let ((va, da), (vb, db)) = (side(a), side(b));
    let df = (va + vb).powi(2) / (va * va / da + vb * vb / db);
    if df.is_finite() { df.max(2.0) } else { 2.0 }
}

/// The standard normal distribution function (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.3275911 * z);
    let poly = t
        * (0.254829592
            + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let erf = 1.0 - poly * (-z * z).exp();
    if x >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// The normal quantile of p (0.5 < p < 1), by bisection.
fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 10.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Student's t quantile of p with `df` degrees of freedom, from the normal one by the
/// Cornish-Fisher expansion (within 2% from 3 degrees of freedom up at the levels used).
fn t_quantile(p: f64, df: f64) -> f64 {
    let z = normal_quantile(p);
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * df)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * df * df)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * df.powi(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A series around `level` whose seconds remember the one before (AR(1) with `rho`),
    /// seeded.
    fn ar1(n: usize, level: f64, rho: f64, rng: &mut SmallRng) -> Vec<f64> {
        let mut x = 0.0;
        (0..n)
            .map(|_| {
                // Uniform noise with the variance that keeps the series' variance at 100.
                let e: f64 = rng.random_range(-1.0..1.0) * (300.0 * (1.0 - rho * rho)).sqrt();
                x = rho * x + e;
                level + x
            })
            .collect()
    }

    /// Whether the interval of b against a at `level` excludes "no difference".
    fn differs(a: &Sample, b: &Sample, level: f64, seed: u64) -> bool {
        let (lo, hi) = ratio_interval(a, b, level, 2000, seed).unwrap();
        lo > 1.0 || hi < 1.0
    }

    fn blocks(v: &[f64]) -> Sample<'_> {
        Sample {
            values: v,
            scheme: Scheme::Blocks {
                block: block_length(v),
            },
        }
    }

    #[test]
    fn quantiles() {
        assert!((normal_quantile(0.975) - 1.95996).abs() < 1e-3);
        assert!((t_quantile(0.975, 10.0) - 2.228).abs() < 0.01);
        assert!((t_quantile(0.995, 4.0) - 4.604).abs() < 0.1);
        assert!((t_quantile(0.995, 1000.0) - 2.576).abs() < 0.01);
    }

    #[test]
    fn block_length_follows_the_autocorrelation() {
        let mut rng = SmallRng::seed_from_u64(1);
        let white = ar1(60, 1000.0, 0.0, &mut rng);
        let sticky = ar1(60, 1000.0, 0.8, &mut rng);
        assert!(block_length(&white) <= 2, "{}", block_length(&white));
        assert!(block_length(&sticky) >= 4, "{}", block_length(&sticky));
        assert!(lag1_autocorrelation(&sticky) > 0.5);
        assert_eq!(block_length(&[5.0; 30]), 1);
    }

    #[test]
    fn identical_samples_show_no_difference() {
        let v = [100.0, 103.0, 98.0, 101.0];
        let s = Sample {
            values: &v,
            scheme: Scheme::Independent,
        };
        let d = ratio_distribution(&s, &s, 2000, 7);
        let (lo, hi) = percentile_interval(&d, 0.95).unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
        assert!(!differs(&s, &s, 0.95, 7));
    }

    #[test]
    fn a_known_difference_is_found() {
        let a = [100.0, 102.0, 98.0, 101.0, 99.0];
        let b = [110.0, 112.0, 108.0, 111.0, 109.0];
        let ind = |v| Sample {
            values: v,
            scheme: Scheme::Independent,
        };
        assert!(differs(&ind(&a), &ind(&b), 0.99, 3));
        let mut rng = SmallRng::seed_from_u64(2);
        let slow = ar1(40, 1000.0, 0.5, &mut rng);
        let fast = ar1(40, 1100.0, 0.5, &mut rng);
        assert!(differs(&blocks(&slow), &blocks(&fast), 0.95, 3));
    }

    #[test]
    fn seeded_resampling_is_deterministic() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let s = blocks(&v);
        assert_eq!(
            ratio_distribution(&s, &s, 100, 9),
            ratio_distribution(&s, &s, 100, 9)
        );
    }

    /// Two runs of the same configuration whose seconds remember each other (AR(1), rho 0.6
    /// and 0.8, 30 and 60 seconds): called different in few more trials than the level
    /// allows (at 95%: at most 10% of 200 trials; at 99%: at most 3%).
    #[test]
    fn autocorrelated_seconds_give_no_false_difference() {
        let trials = 200;
        for (n, rho) in [(30, 0.6), (60, 0.8)] {
            let mut rng = SmallRng::seed_from_u64(42);
            let (mut at95, mut at99) = (0, 0);
            for t in 0..trials {
                let a = ar1(n, 1000.0, rho, &mut rng);
                let b = ar1(n, 1000.0, rho, &mut rng);
                at95 += usize::from(differs(&blocks(&a), &blocks(&b), 0.95, t as u64));
                at99 += usize::from(differs(&blocks(&a), &blocks(&b), 0.99, t as u64));
            }
            errln!("n {n} rho {rho}: false differences {at95} at 95%, {at99} at 99%");
            assert!(at95 * 100 <= trials * 10, "{at95} of {trials} at 95%");
            assert!(at99 * 100 <= trials * 3, "{at99} of {trials} at 99%");
        }
    }

    /// Repeats of one configuration (independent, 3 a side) are called different at most
    /// about as often as the level allows.
    #[test]
    fn repeats_of_one_configuration_rarely_differ() {
        let mut rng = SmallRng::seed_from_u64(5);
        let trials = 200;
        let mut false_calls = 0;
        for t in 0..trials {
            let a = ar1(3, 1000.0, 0.0, &mut rng);
            let b = ar1(3, 1000.0, 0.0, &mut rng);
            let ind = |v| Sample {
                values: v,
                scheme: Scheme::Independent,
            };
            false_calls += usize::from(differs(&ind(&a), &ind(&b), 0.99, t as u64));
        }
        errln!("false differences among repeats: {false_calls} of {trials}");
        assert!(false_calls * 100 <= trials * 5, "{false_calls} of {trials}");
    }
}
