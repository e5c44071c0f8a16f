//! Value generators of declarative workloads: a sequence, uniform or zipfian integers, uniform
//! floats, strings of a length range, a choice from a list, timestamps in a range, and foreign
//! keys into another table's sequence; each draws from its own seeded generator. `Kind` is a
//! validated generator as the workload file's reader (`spec.rs`) makes it.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::Value;
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

enum Gen {
    Sequence {
        next: i64,
        step: i64,
    },
    Uniform {
        min: i64,
        max: i64,
    },
    Zipfian {
        min: i64,
        max: i64,
        rand: Box<Rand>,
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
        cumulative: Vec<f64>,
    },
    Timestamp {
        from: i64,
        to: i64,
    },
}

impl Generator {
    /// A generator for `spec`; `rows_of` gives a referenced table's row count (foreign keys).
    pub fn new(spec: &GenSpec, seed: u64, rows_of: &dyn Fn(&str) -> i64) -> Generator {
        let kind = match &spec.kind {
            Kind::Sequence { start, step } => Gen::Sequence {
                next: *start,
                step: *step,
            },
            Kind::Uniform { min, max } => Gen::Uniform {
                min: *min,
                max: *max,
            },
            Kind::Zipfian { min, max, s } => Gen::Zipfian {
                min: *min,
                max: *max,
                rand: Box::new(Rand::new(seed ^ 0x5bd1_e995, Dist::Zipfian { exp: *s })),
            },
            Kind::Float { min, max } => Gen::Float {
                min: *min,
                max: *max,
            },
            Kind::Str { min, max } => Gen::Str {
                min: *min,
                max: *max,
            },
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
                Gen::Choice {
                    values: values.clone(),
                    cumulative: cumulative.iter().map(|c| c / total).collect(),
                }
            }
            Kind::Timestamp { from, to } => Gen::Timestamp {
                from: *from,
                to: *to,
            },
            Kind::Foreign { table, start, .. } => Gen::Uniform {
                min: *start,
                max: *start + rows_of(table) - 1,
            },
        };
        Generator {
            kind,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    pub fn next(&mut self) -> Value {
        match &mut self.kind {
            Gen::Sequence { next, step } => {
                let v = *next;
                *next += *step;
                Value::Int(v)
            }
            Gen::Uniform { min, max } => Value::Int(self.rng.random_range(*min..=*max)),
            Gen::Zipfian { min, max, rand } => Value::Int(rand.default(*min, *max)),
            Gen::Float { min, max } => {
                Value::Float(*min + self.rng.random::<f64>() * (*max - *min))
            }
            Gen::Str { min, max } => {
                let n = self.rng.random_range(*min..=*max);
                let s = (0..n)
                    .map(|_| ALPHABET[self.rng.random_range(0..ALPHABET.len())] as char)
                    .collect();
                Value::Text(s)
            }
            Gen::Choice { values, cumulative } => {
                let u = self.rng.random::<f64>();
                let i = cumulative.partition_point(|c| *c < u).min(values.len() - 1);
                values[i].clone()
            }
            Gen::Timestamp { from, to } => {
                Value::Text(format_timestamp(self.rng.random_range(*from..=*to)))
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

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
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
