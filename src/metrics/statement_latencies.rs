//! Per-statement latencies measured by the client (pgbench's -r): the clients' timings
//! (`Event::Statements`, one per client at its end) merged by transaction type and statement,
//! and made the result's `Statement` lines: calls, calls per transaction, mean and percentiles,
//! total time and its share of the transactions' time, failures and retries. A shard keeps each
//! line's histogram (HdrHistogram V2) so that `merge` can add them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::StatementTimes;

/// One statement of one transaction type, over the measured transactions of every client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Statement {
    /// The transaction type (a script's name for a script).
    pub transaction: String,
    /// Its place in the transaction type's listing.
    pub order: u32,
    /// The statement as prepared (whitespace runs made one space), BEGIN, COMMIT, ROLLBACK, or
    /// a script's command as written.
    pub text: String,
    /// A script's command as written, timed from its start to the next command's (pgbench's
    /// -r); false for a statement timed call by call.
    pub as_written: bool,
    /// Calls that returned; per transaction of its type (failed ones included).
    pub calls: u64,
    pub calls_per_transaction: f64,
    /// Calls that failed their transaction; calls that failed and were tried again.
    pub failures: u64,
    pub retries: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The calls' time together, in seconds.
    pub total_s: f64,
    /// `total_s` over the time its type's successful transactions took (their latencies
    /// summed).
    pub share: f64,
    /// Its latencies (µs), HdrHistogram V2-serialized, for `merge` (shards only).
    #[serde(skip)]
    pub histogram: Vec<u8>,
}

/// The clients' lines, merged as they arrive.
#[derive(Default)]
pub struct Statements {
    lines: BTreeMap<(u16, u32, String), StatementTimes>,
}

/// What a transaction type's lines are figured against: its name, the transactions that ran
/// it (successful and failed) and its successful transactions' time in seconds.
pub struct TypeTotals {
    pub name: String,
    pub transactions: u64,
    pub time_s: f64,
}

impl TypeTotals {
    pub fn of(t: &super::TypeSummary) -> TypeTotals {
        TypeTotals {
            name: t.name.clone(),
            transactions: t.transactions + t.errors,
            time_s: t.latency_ms.mean * t.transactions as f64 / 1000.0,
        }
    }
}

/// A result's line back as one client's timings, with its histogram read back (`merge`).
pub fn times_of(s: &Statement, txn: u16, hist: hdrhistogram::Histogram<u64>) -> StatementTimes {
    StatementTimes {
        txn,
        order: s.order,
        text: s.text.clone(),
        as_written: s.as_written,
        calls: s.calls,
        sum_ns: (s.total_s * 1e9).round() as u64,
        max_ns: (s.max_ms * 1e6).round() as u64,
        hist,
        failures: s.failures,
        retries: s.retries,
    }
}

impl Statements {
    pub fn add(&mut self, lines: Vec<StatementTimes>) {
        for l in lines {
            match self.lines.entry((l.txn, l.order, l.text.clone())) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    // One read back from a shard's file grows like the clients' do.
                    v.insert(l).hist.auto(true);
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    let into = o.get_mut();
                    into.calls += l.calls;
                    into.sum_ns += l.sum_ns;
                    into.max_ns = into.max_ns.max(l.max_ns);
                    into.failures += l.failures;
                    into.retries += l.retries;
                    // Growing, with one precision: adding cannot fail.
                    let _ = into.hist.add(&l.hist);
                }
            }
        }
    }

    /// The lines, in order of transaction type and place.
    pub fn finish(self, types: &[TypeTotals]) -> Vec<Statement> {
        self.lines
            .into_values()
            .filter_map(|l| {
                let t = types.get(l.txn as usize)?;
                Some(line(&l, t))
            })
            .collect()
    }
}

/// A merged line made a result's `Statement`.
pub fn line(l: &StatementTimes, t: &TypeTotals) -> Statement {
    let total_s = l.sum_ns as f64 / 1e9;
    let ms = |q: f64| {
        if l.hist.is_empty() {
            0.0
        } else {
            l.hist.value_at_quantile(q) as f64 / 1000.0
        }
    };
    Statement {
        transaction: t.name.clone(),
        order: l.order,
        text: l.text.clone(),
        as_written: l.as_written,
        calls: l.calls,
        calls_per_transaction: ratio(l.calls as f64, t.transactions as f64),
        failures: l.failures,
        retries: l.retries,
        mean_ms: ratio(l.sum_ns as f64 / 1e6, l.calls as f64),
        p50_ms: ms(0.50),
        p95_ms: ms(0.95),
        p99_ms: ms(0.99),
        max_ms: l.max_ns as f64 / 1e6,
        total_s,
        share: ratio(total_s, t.time_s),
        histogram: super::serialize(&l.hist),
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(txn: u16, text: &str, calls: &[u64]) -> StatementTimes {
        let mut hist = hdrhistogram::Histogram::new(2).unwrap();
        for &us in calls {
            hist.record(us).unwrap();
        }
        StatementTimes {
            txn,
            order: 1,
            text: text.into(),
            as_written: false,
            calls: calls.len() as u64,
            sum_ns: calls.iter().sum::<u64>() * 1000,
            max_ns: calls.iter().max().copied().unwrap_or(0) * 1000,
            hist,
            failures: 1,
            retries: 0,
        }
    }

    #[test]
    fn clients_lines_merge_by_type_and_text() {
        let mut all = Statements::default();
        all.add(vec![
            times(0, "SELECT 1", &[100, 100]),
            times(1, "SELECT 1", &[50]),
        ]);
        all.add(vec![times(0, "SELECT 1", &[100, 5000])]);
        let types = [
            TypeTotals {
                name: "a".into(),
                transactions: 4,
                time_s: 0.0106,
            },
            TypeTotals {
                name: "b".into(),
                transactions: 1,
                time_s: 0.0001,
            },
        ];
        let lines = all.finish(&types);
        assert_eq!(lines.len(), 2);
        let a = &lines[0];
        assert_eq!((a.transaction.as_str(), a.calls, a.failures), ("a", 4, 2));
        assert_eq!(a.calls_per_transaction, 1.0);
        assert!((a.mean_ms - 1.325).abs() < 1e-9, "{}", a.mean_ms);
        assert!((a.max_ms - 5.0).abs() < 1e-9);
        assert!((a.share - 0.5).abs() < 1e-9, "{}", a.share);
        assert!(
            a.p99_ms >= 4.9,
            "the long call in the merged histogram: {}",
            a.p99_ms
        );
        assert_eq!(lines[1].transaction, "b");
    }
}
