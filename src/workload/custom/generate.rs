//! Value generators of declarative workloads: a sequence, uniform or zipfian integers, uniform
//! floats, strings of a length range, a choice from a list, timestamps in a range, and foreign
//! keys into another table's sequence; each draws from its own seeded generator. `Kind` is a
//! validated generator as the workload file's reader (`spec.rs`) makes it.

use std::ops::RangeInclusive;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::Value;
use crate::workload::calendar::{civil_from_days, days_from_civil};
use crate::workload::random::{Dist, Rand};

/// A validated generator.
#[derive(Debug, Clone)]
pub struct GenSpec {
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Sequence {
        start: i64,
        step: i64,
    },
    Uniform {
        min: i64,
        max: i64,
    },
    Zipfian {
        min: i64,
        max: i64,
        s: f64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Str {
        min: usize,
        max: usize,
    },
    Choice {
        values: Vec<Value>,
        weights: Option<Vec<f64>>,
    },
    /// Seconds since 1970-01-01 UTC.
    Timestamp {
        from: i64,
        to: i64,
    },
    /// Uniform over the referenced table's sequence: start..start+rows-1.
    Foreign {
        table: String,
        column: String,
        start: i64,
    },
}

/// Characters of generated strings.
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ";

pub struct Generator {
    kind: Gen,
    rng: SmallRng,
}

/// A generator's state: the spec's bounds as ranges, with what a draw needs beside them.
enum Gen {
    /// The next value and the step.
    Sequence(i64, i64),
    Uniform(RangeInclusive<i64>),
    Zipfian(i64, i64, Box<Rand>),
    Float(f64, f64),
    Str(RangeInclusive<usize>),
    /// The values and their cumulative weights, the last 1.
    Choice(Vec<Value>, Vec<f64>),
    Timestamp(RangeInclusive<i64>),
}

impl Generator {
    /// A generator for `spec`; `rows_of` gives a referenced table's row count (foreign keys).
    pub fn new(spec: &GenSpec, seed: u64, rows_of: &dyn Fn(&str) -> i64) -> Generator {
        let kind = match &spec.kind {
            Kind::Sequence { start, step } => Gen::Sequence(*start, *step),
            Kind::Uniform { min, max } => Gen::Uniform(*min..=*max),
            Kind::Zipfian { min, max, s } => Gen::Zipfian(
                *min,
                *max,
                Box::new(Rand::new(seed ^ 0x5bd1_e995, Dist::Zipfian { exp: *s })),
            ),
            Kind::Float { min, max } => Gen::Float(*min, *max),
            Kind::Str { min, max } => Gen::Str(*min..=*max),
            Kind::Choice { values, weights } => {
                let mut total = 0.0;
                let cumulative = values
                    .iter()
                    .enumerate()
                    .map(|(i, _)| {
                        total += weights.as_ref().map_or(1.0, |w| w[i]);
                        total
                    })
                    .collect::<Vec<_>>();
                Gen::Choice(
                    values.clone(),
                    cumulative.iter().map(|c| c / total).collect(),
                )
            }
            Kind::Timestamp { from, to } => Gen::Timestamp(*from..=*to),
            Kind::Foreign { table, start, .. } => {
                Gen::Uniform(*start..=*start + rows_of(table) - 1)
            }
        };
        Generator {
            kind,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    pub fn next(&mut self) -> Value {
        match &mut self.kind {
            Gen::Sequence(next, step) => {
                let v = *next;
                *next += *step;
                Value::Int(v)
            }
            Gen::Uniform(range) => Value::Int(self.rng.random_range(range.clone())),
            Gen::Zipfian(min, max, rand) => Value::Int(rand.default(*min, *max)),
            Gen::Float(min, max) => Value::Float(*min + self.rng.random::<f64>() * (*max - *min)),
            Gen::Str(range) => {
                let n = self.rng.random_range(range.clone());
                let s = (0..n)
                    .map(|_| ALPHABET[self.rng.random_range(0..ALPHABET.len())] as char)
                    .collect();
                Value::Text(s)
            }
            Gen::Choice(values, cumulative) => {
                let u = self.rng.random::<f64>();
                let i = cumulative.partition_point(|c| *c < u).min(values.len() - 1);
                values[i].clone()
            }
            Gen::Timestamp(range) => {
                Value::Text(format_timestamp(self.rng.random_range(range.clone())))
            }
        }
    }
}

/// Seconds since 1970-01-01 00:00:00 UTC as `YYYY-MM-DD HH:MM:SS`.
pub fn format_timestamp(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// `YYYY-MM-DD[ HH:MM[:SS]]` as seconds since 1970-01-01 00:00:00 UTC.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let (date, time) = text
        .trim()
        .split_once([' ', 'T'])
        .unwrap_or((text.trim(), ""));
    let mut d = date.split('-').map(str::parse::<i64>);
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    if d.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let mut secs = 0;
    if !time.is_empty() {
        let parts: Vec<i64> = time
            .split(':')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        if parts.len() < 2 || parts.len() > 3 || parts[0] > 23 || parts[1] > 59 {
            return None;
        }
        secs = parts[0] * 3600 + parts[1] * 60 + parts.get(2).copied().unwrap_or(0);
    }
    Some(days_from_civil(y, m, day) * 86_400 + secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        for t in [
            "1970-01-01 00:00:00",
            "2000-02-29 23:59:59",
            "2026-11-22 08:30:05",
        ] {
            assert_eq!(format_timestamp(parse_timestamp(t).unwrap()), t);
        }
        assert_eq!(parse_timestamp("2026-01-01"), Some(1_767_225_600));
        assert_eq!(parse_timestamp("2026-13-01"), None);
    }
}
