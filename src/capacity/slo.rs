//! `capacity --slo`: the objectives every step of the search must meet, parsed before anything
//! connects ('p99<10ms', 'p99.9<=250us', 'mean<2ms', 'errors<0.1%', in any case), and judged on a
//! run or on one phase of a run in phases (`tune --slo`'s staircase).

use crate::error::Error;
use crate::metrics::Latency;
use crate::result::RunResult;

/// What an objective limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    /// A latency figure of all transactions together: the quantile (None: the mean; 1.0: max).
    Latency(Option<f64>),
    /// Failed transactions over all that ended, in percent.
    Errors,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    /// As the user wrote it, for messages.
    pub text: String,
    pub figure: Figure,
    /// The latency in milliseconds, or the error share in percent.
    pub limit: f64,
    /// `<=` rather than `<`.
    pub inclusive: bool,
}

const LATENCIES: &[(&str, Option<f64>)] = &[
    ("mean", None),
    ("p50", Some(0.50)),
    ("p90", Some(0.90)),
    ("p95", Some(0.95)),
    ("p99", Some(0.99)),
    ("p99.9", Some(0.999)),
    ("max", Some(1.0)),
];

fn refuse<T>(text: &str, why: &str) -> Result<T, Error> {
    Err(Error::Usage(format!(
        "--slo '{text}': {why} (e.g. --slo 'p99<10ms' --slo 'errors<0.1%'; figures mean, p50, p90, p95, p99, p99.9, max, errors)"
    )))
}

impl Objective {
    pub fn parse(text: &str) -> Result<Objective, Error> {
        // Figures and units in any case, as compare's --fail-if takes them: P99<10MS.
        let compact: String = text
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_lowercase();
        let Some(at) = compact.find('<') else {
            return refuse(
                text,
                "an objective is FIGURE<LIMIT, the figure kept below the limit",
            );
        };
        let name = &compact[..at];
        let (inclusive, value) = match compact[at + 1..].strip_prefix('=') {
            Some(v) => (true, v),
            None => (false, &compact[at + 1..]),
        };
        let number = |digits: &str| {
            digits
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
        };
        let (figure, limit) = if name == "errors" {
            let Some(limit) = value.strip_suffix('%').and_then(number) else {
                return refuse(
                    text,
                    "the errors' limit is a percentage above 0, such as 0.1%",
                );
            };
            if limit > 100.0 {
                return refuse(
                    text,
                    "the errors' limit is a share of the transactions, at most 100%",
                );
            }
            (Figure::Errors, limit)
        } else if let Some((_, q)) = LATENCIES.iter().find(|(n, _)| *n == name) {
            let units = [("us", 0.001), ("µs", 0.001), ("ms", 1.0), ("s", 1000.0)];
            let Some((digits, scale)) = units
                .iter()
                .find_map(|(u, scale)| value.strip_suffix(u).map(|d| (d, *scale)))
            else {
                return refuse(text, "give the latency with its unit: us, ms or s");
            };
            let Some(limit) = number(digits) else {
                return refuse(text, "the limit is a number above 0");
            };
            (Figure::Latency(*q), limit * scale)
        } else {
            return refuse(text, &format!("unknown figure '{name}'"));
        };
        Ok(Objective {
            text: text.trim().to_string(),
            figure,
            limit,
            inclusive,
        })
    }

    /// The figure's name as written in lower case: p99, mean, errors.
    pub fn figure_name(&self) -> &'static str {
        match self.figure {
            Figure::Errors => "errors",
            Figure::Latency(q) => LATENCIES
                .iter()
                .find(|(_, l)| *l == q)
                .map_or("max", |(name, _)| name),
        }
    }

    /// The run's value of the figure: milliseconds, or percent.
    pub fn value(&self, r: &RunResult) -> f64 {
        let m = &r.measurement;
        self.value_of(&m.latency_ms, m.transactions, m.errors)
    }

    /// The value of the figure over transactions of these latencies, `transactions` of them
    /// successful and `errors` failed (a run's, or a phase's of a run in phases).
    pub fn value_of(&self, l: &Latency, transactions: u64, errors: u64) -> f64 {
        match self.figure {
            Figure::Errors => {
                let ended = transactions + errors;
                if ended == 0 {
                    0.0
                } else {
                    errors as f64 * 100.0 / ended as f64
                }
            }
            Figure::Latency(None) => l.mean,
            Figure::Latency(Some(q)) => match q {
                0.5 => l.p50,
                0.9 => l.p90,
                0.95 => l.p95,
                0.99 => l.p99,
                0.999 => l.p99_9,
                _ => l.max,
            },
        }
    }

    pub fn met(&self, value: f64) -> bool {
        if self.inclusive {
            value <= self.limit
        } else {
            value < self.limit
        }
    }

    /// Transactions a step needs for this figure to mean something: ten beyond the quantile
    /// (1,000 for a p99), ten beyond the error share (10,000 for 0.1%), 100 for a mean.
    pub fn transactions_needed(&self) -> f64 {
        match self.figure {
            Figure::Latency(None) => 100.0,
            Figure::Latency(Some(q)) if q >= 1.0 => 100.0,
            Figure::Latency(Some(q)) => 10.0 / (1.0 - q),
            Figure::Errors => 10.0 * 100.0 / self.limit,
        }
    }

    /// The value in the figure's unit, for tables.
    pub fn show(&self, value: f64) -> String {
        match self.figure {
            Figure::Errors => format!("{value:.3}%"),
            Figure::Latency(_) => format!("{value:.3} ms"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_in_their_units() {
        let p99 = Objective::parse("p99<10ms").unwrap();
        assert_eq!(
            (p99.figure, p99.limit, p99.inclusive),
            (Figure::Latency(Some(0.99)), 10.0, false)
        );
        assert_eq!(p99.transactions_needed().round(), 1000.0);
        let us = Objective::parse("p99.9 <= 250us").unwrap();
        assert_eq!((us.limit, us.inclusive), (0.25, true));
        assert_eq!(Objective::parse("mean<2s").unwrap().limit, 2000.0);
        let e = Objective::parse("errors<0.1%").unwrap();
        assert_eq!((e.figure, e.limit), (Figure::Errors, 0.1));
        assert!(e.met(0.05) && !e.met(0.1));
        let upper = Objective::parse("P99<10MS").unwrap();
        assert_eq!(
            (upper.figure, upper.limit, upper.text.as_str()),
            (Figure::Latency(Some(0.99)), 10.0, "P99<10MS")
        );
        assert_eq!(Objective::parse("Errors<100%").unwrap().limit, 100.0);
        assert_eq!(us.figure_name(), "p99.9");
        assert_eq!(Objective::parse("MEAN<2ms").unwrap().figure_name(), "mean");
    }

    #[test]
    fn bad_objectives_say_what_to_write() {
        for (text, needle) in [
            ("p99>10ms", "FIGURE<LIMIT"),
            ("p98<10ms", "unknown figure 'p98'"),
            ("p99<10", "with its unit"),
            ("p99<0ms", "above 0"),
            ("errors<1", "percentage"),
            ("errors<200%", "at most 100%"),
        ] {
            match Objective::parse(text) {
                Err(Error::Usage(m)) => assert!(m.contains(needle), "{text}: {m}"),
                other => panic!("{text} was not refused: {other:?}"),
            }
        }
    }
}
