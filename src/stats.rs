//! Statistics that say when a result is noise: median and spread of repeats, and instability
//! (repeats whose spread is over 10%, throughput that collapses for seconds). Whether two sides
//! differ beyond their noise is `compare`'s one rule (report/compare), used by every report's
//! profile comparisons too.

/// Repeats that differ by more than this share of their median make a point unstable.
pub const UNSTABLE_SPREAD: f64 = 0.10;
/// A second below this share of the run's median throughput counts as a collapse...
pub const COLLAPSE_SHARE: f64 = 0.5;
/// ...when it lasts at least this many seconds in a row.
pub const COLLAPSE_SECONDS: usize = 2;

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Spread {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Coefficient of variation: standard deviation over mean (0 for one value).
    pub cv: f64,
}

pub fn spread(values: &[f64]) -> Spread {
    if values.is_empty() {
        return Spread::default();
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let mean = v.iter().sum::<f64>() / n as f64;
    let var = if n > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    let cv = if mean > 0.0 { var.sqrt() / mean } else { 0.0 };
    Spread {
        n,
        median,
        min: v[0],
        max: v[n - 1],
        mean,
        cv,
    }
}

/// Why a point is unstable: its repeats' throughputs, and each repeat's per-second throughput
/// (warm-up excluded). Empty when it is stable.
pub fn unstable_reasons(repeats: &[f64], seconds: &[Vec<f64>]) -> Vec<String> {
    let mut reasons = Vec::new();
    let s = spread(repeats);
    if s.n >= 2 && s.median > 0.0 && (s.max - s.min) / s.median > UNSTABLE_SPREAD {
        reasons.push(format!(
            "repeats differ by {:.0}% of their median (over {:.0}%)",
            (s.max - s.min) / s.median * 100.0,
            UNSTABLE_SPREAD * 100.0
        ));
    }
    for (i, run) in seconds.iter().enumerate() {
        if let Some((at, len)) = longest_collapse(run) {
            reasons.push(format!(
                "repeat {}: throughput under {:.0}% of its median for {len} s from second {}",
                i + 1,
                COLLAPSE_SHARE * 100.0,
                at + 1
            ));
        }
    }
    reasons
}

/// The longest run of seconds under COLLAPSE_SHARE of the median, if it lasts long enough.
/// The last second is left out: it is usually partial.
fn longest_collapse(tps: &[f64]) -> Option<(usize, usize)> {
    let whole = &tps[..tps.len().saturating_sub(1)];
    let threshold = spread(whole).median * COLLAPSE_SHARE;
    let (mut best, mut start, mut len) = (None, 0, 0);
    for (i, &x) in whole.iter().enumerate() {
        if x < threshold {
            if len == 0 {
                start = i;
            }
            len += 1;
            if len >= COLLAPSE_SECONDS && best.is_none_or(|(_, l)| len > l) {
                best = Some((start, len));
            }
        } else {
            len = 0;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_repeats() {
        let s = spread(&[100.0, 90.0, 110.0]);
        assert_eq!((s.median, s.min, s.max), (100.0, 90.0, 110.0));
        assert!((s.cv - 0.1).abs() < 1e-9);
        assert_eq!(spread(&[1.0, 3.0]).median, 2.0);
    }

    #[test]
    fn unstable_when_repeats_disagree_or_throughput_collapses() {
        assert!(unstable_reasons(&[100.0, 105.0, 98.0], &[]).is_empty());
        assert_eq!(unstable_reasons(&[100.0, 120.0], &[]).len(), 1);
        let steady = vec![100.0; 10];
        assert!(unstable_reasons(&[100.0], &[steady]).is_empty());
        let checkpoint = vec![
            100.0, 100.0, 100.0, 20.0, 10.0, 30.0, 100.0, 100.0, 100.0, 50.0,
        ];
        let r = unstable_reasons(&[100.0], &[checkpoint]);
        assert!(r[0].contains("for 3 s from second 4"), "{r:?}");
    }
}
