//! The streams of a TPC-H run (clause 5.3): the power test's stream (refresh function 1, the
//! queries in stream 0's order, refresh function 2), the throughput test's query streams, which
//! wait for the power test's end, and its refresh stream; queries prepared with their parameters as
//! literals, RF1 and RF2 in one transaction each, `Client::finished` after a stream's last job;
//! each query's and refresh function's time and rows, kept for the workload's metrics (clause 5.4).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::engine::{DbResult, Session, StmtId, Value};
use crate::sql::SqlSet;
use crate::workload::Client;

use super::load::refresh_rows;
use super::params::{self, Param, Source};

/// Appendix A's ordering of the 22 queries in streams 0 to 10 (clause 5.3.5.4); stream S
/// takes row S modulo 11.
pub const ORDER: [[u8; 22]; 11] = [
    [
        14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12,
    ],
    [
        21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4,
    ],
    [
        6, 17, 14, 16, 19, 10, 9, 2, 15, 8, 5, 22, 12, 7, 13, 18, 1, 4, 20, 3, 11, 21,
    ],
    [
        8, 5, 4, 6, 17, 7, 1, 18, 22, 14, 9, 10, 15, 11, 20, 2, 21, 19, 13, 16, 12, 3,
    ],
    [
        5, 21, 14, 19, 15, 17, 12, 6, 4, 9, 8, 16, 11, 2, 10, 18, 1, 13, 7, 22, 3, 20,
    ],
    [
        21, 15, 4, 6, 7, 16, 19, 18, 14, 22, 11, 13, 3, 1, 2, 5, 8, 20, 12, 17, 10, 9,
    ],
    [
        10, 3, 15, 13, 6, 8, 9, 7, 4, 11, 22, 18, 12, 1, 5, 16, 2, 14, 19, 20, 17, 21,
    ],
    [
        18, 8, 20, 21, 2, 4, 22, 17, 1, 11, 9, 19, 3, 13, 5, 7, 10, 16, 6, 14, 15, 12,
    ],
    [
        19, 1, 15, 17, 5, 8, 9, 12, 14, 7, 4, 3, 20, 16, 6, 22, 10, 13, 2, 21, 18, 11,
    ],
    [
        8, 13, 2, 20, 17, 3, 6, 21, 18, 11, 19, 10, 15, 4, 22, 1, 7, 12, 9, 14, 5, 16,
    ],
    [
        6, 15, 18, 17, 12, 1, 7, 2, 22, 13, 21, 10, 14, 9, 3, 16, 20, 19, 11, 4, 8, 5,
    ],
];

/// The transaction types a run reports: Q1..Q22, then the two refresh functions.
pub const TYPES: [&str; 24] = [
    "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9", "Q10", "Q11", "Q12", "Q13", "Q14", "Q15",
    "Q16", "Q17", "Q18", "Q19", "Q20", "Q21", "Q22", "RF1", "RF2",
];

/// One unit of a stream's work: a query, or a refresh function of a numbered pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    Query(u8),
    Rf1(usize),
    Rf2(usize),
}

impl Job {
    fn type_index(self) -> usize {
        match self {
            Job::Query(q) => usize::from(q) - 1,
            Job::Rf1(_) => 22,
            Job::Rf2(_) => 23,
        }
    }
}

/// A finished job's interval and rows (the rows a query returned, those a refresh changed).
#[derive(Debug, Clone)]
pub struct Timing {
    pub stream: u32,
    pub job: Job,
    pub start: Instant,
    pub end: Instant,
    pub rows: u64,
}

impl Timing {
    pub fn secs(&self) -> f64 {
        (self.end - self.start).as_secs_f64()
    }
}

/// What the clients of a run share: the timings, each stream's parameters, and whether the
/// power test is over (the throughput test starts after it, clause 5.3.3).
#[derive(Default)]
pub struct Shared {
    pub timings: Mutex<Vec<Timing>>,
    pub params: Mutex<Vec<(u32, String)>>,
    /// Each stream's next job, so that a client made anew after a lost connection goes on
    /// where its stream was.
    progress: Mutex<Vec<(u32, usize)>>,
    power_over: Mutex<bool>,
    power_cv: Condvar,
}

impl Shared {
    fn progress(&self, stream: u32) -> usize {
        let progress = self.progress.lock().expect("progress lock");
        progress
            .iter()
            .find(|(s, _)| *s == stream)
            .map_or(0, |(_, n)| *n)
    }

    fn advance(&self, stream: u32, next: usize) {
        let mut progress = self.progress.lock().expect("progress lock");
        match progress.iter_mut().find(|(s, _)| *s == stream) {
            Some(entry) => entry.1 = next,
            None => progress.push((stream, next)),
        }
    }

    fn end_power(&self) {
        *self.power_over.lock().expect("power lock") = true;
        self.power_cv.notify_all();
    }

    fn wait_power(&self) {
        let mut over = self.power_over.lock().expect("power lock");
        while !*over {
            over = self.power_cv.wait(over).expect("power lock");
        }
    }
}

/// What one stream does, as `TpchClient::new` takes it.
pub struct Stream {
    pub number: u32,
    pub jobs: Vec<Job>,
    /// The power test's stream: the others wait for its end.
    pub power: bool,
    pub sf: f64,
    pub seed: u64,
    /// `--query-timeout`, set on the session: lifted while a failed RF2's pair is undone.
    pub limit: Option<std::time::Duration>,
}

/// Rows of ORDERS or LINEITEM, as a refresh inserts them.
type Rows = Vec<Vec<Value>>;

/// The SQL of a refresh pair: the prepared statements and the rows.
struct Refresh {
    insert_order: StmtId,
    insert_line: StmtId,
    delete_lines: StmtId,
    delete_order: StmtId,
    /// A pair's lines and orders by their key range (None: the engine refused them).
    leftovers: Option<(StmtId, StmtId)>,
    pairs: Vec<(usize, Rows, Rows)>,
}

pub struct TpchClient {
    stream: Stream,
    next: usize,
    current: Job,
    queries: Vec<(u8, StmtId)>,
    refresh: Option<Refresh>,
    shared: Arc<Shared>,
    waited: bool,
}

/// A query's text with its parameters: dates through the dialect's `date` section.
pub fn query_text(sql: &SqlSet, q: u8, params: &params::Params) -> String {
    let vars: Vec<(&str, String)> = params
        .iter()
        .map(|(k, v)| match v {
            Param::Text(t) => (*k, t.clone()),
            Param::Date(d) => (
                *k,
                sql.statements("date", &[("value", &d.to_string())])
                    .join(""),
            ),
        })
        .collect();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    sql.statements(&format!("q{q}"), &vars).join("\n")
}

impl TpchClient {
    pub fn new(
        sql: &SqlSet,
        s: &mut dyn Session,
        stream: Stream,
        shared: Arc<Shared>,
    ) -> DbResult<TpchClient> {
        let mut rng = params::stream_rng(stream.seed, stream.number);
        let mut queries = Vec::new();
        let mut recorded = Vec::new();
        for job in &stream.jobs {
            let Job::Query(q) = *job else { continue };
            if queries.iter().any(|(n, _)| *n == q) {
                continue;
            }
            let p = params::params(q, stream.sf, Source::Random(&mut rng));
            let shown: Vec<String> = p.iter().map(|(k, v)| format!("{k}={v}")).collect();
            recorded.push(format!("Q{q} {}", shown.join(" ")));
            queries.push((q, s.prepare(&query_text(sql, q, &p))?));
        }
        shared
            .params
            .lock()
            .expect("params lock")
            .push((stream.number, recorded.join("; ")));
        let refresh = refresh(sql, s, &stream)?;
        let first = stream.jobs.first().copied().unwrap_or(Job::Query(1));
        let next = shared.progress(stream.number);
        Ok(TpchClient {
            waited: stream.power,
            stream,
            next,
            current: first,
            queries,
            refresh,
            shared,
        })
    }

    fn query(&mut self, s: &mut dyn Session, q: u8) -> DbResult<(u64, u32)> {
        let stmt = self
            .queries
            .iter()
            .find(|(n, _)| *n == q)
            .map(|(_, st)| *st);
        let stmt = stmt.expect("every query of the stream is prepared");
        Ok((s.exec(stmt, &[])?, 1))
    }

    /// Refresh function 1 (clause 2.5.2): the pair's orders and their lines, in one
    /// transaction.
    fn rf1(&mut self, s: &mut dyn Session, pair: usize) -> DbResult<(u64, u32)> {
        let r = self
            .refresh
            .as_ref()
            .expect("a refresh stream has its statements");
        let (_, orders, lines) = r
            .pairs
            .iter()
            .find(|p| p.0 == pair)
            .expect("the pair's rows");
        s.begin(true)?;
        for o in orders {
            s.exec(r.insert_order, o)?;
        }
        for l in lines {
            s.exec(r.insert_line, l)?;
        }
        s.commit()?;
        let n = (orders.len() + lines.len()) as u64;
        Ok((n, n as u32))
    }

    /// Refresh function 2 (clause 2.5.3): the orders of the pair's refresh function 1 and
    /// their lines deleted, in one transaction. (The specification deletes old orders;
    /// deleting the new ones leaves the data as loaded after every pair, so `check`'s answers
    /// hold after any run.) One that fails (a `--query-timeout`, an error) is rolled back and
    /// its pair's rows deleted again without the time limit, so that the data stays as loaded;
    /// its error is still the run's.
    fn rf2(&mut self, s: &mut dyn Session, pair: usize) -> DbResult<(u64, u32)> {
        let r = self
            .refresh
            .as_ref()
            .expect("a refresh stream has its statements");
        let (_, orders, _) = r
            .pairs
            .iter()
            .find(|p| p.0 == pair)
            .expect("the pair's rows");
        let mut delete = || {
            s.begin(true)?;
            let mut n = 0;
            for o in orders {
                n += s.exec(r.delete_lines, &o[..1])?;
                n += s.exec(r.delete_order, &o[..1])?;
            }
            s.commit()?;
            Ok(n)
        };
        match delete() {
            Ok(n) => Ok((n, 2 * orders.len() as u32)),
            Err(e) => {
                let _ = s.rollback();
                if let Some(leftovers) = r.leftovers {
                    let limit = self.stream.limit;
                    if limit.is_none() || s.set_statement_timeout(None).is_ok() {
                        clear_leftovers(s, leftovers, &[orders]);
                        let _ = s.set_statement_timeout(limit);
                    }
                }
                Err(e)
            }
        }
    }
}

/// The refresh statements and rows of a stream's pairs (None: a stream of queries only).
fn refresh(sql: &SqlSet, s: &mut dyn Session, stream: &Stream) -> DbResult<Option<Refresh>> {
    let pairs: Vec<usize> = stream
        .jobs
        .iter()
        .filter_map(|j| match j {
            Job::Rf1(p) => Some(*p),
            _ => None,
        })
        .collect();
    if pairs.is_empty() {
        return Ok(None);
    }
    let one = |name: &str| sql.statements(name, &[]).join("\n");
    let pairs: Vec<(usize, Rows, Rows)> = pairs
        .into_iter()
        .map(|p| {
            let (o, l) = refresh_rows(stream.sf, p);
            (p, o, l)
        })
        .collect();
    let leftovers = s
        .prepare(&one("rf_leftover_lines"))
        .and_then(|lines| Ok((lines, s.prepare(&one("rf_leftover_orders"))?)))
        .ok();
    if let Some(leftovers) = leftovers {
        let orders: Vec<&Rows> = pairs.iter().map(|p| &p.1).collect();
        clear_leftovers(s, leftovers, &orders);
    }
    Ok(Some(Refresh {
        insert_order: s.prepare(&one("rf1_order"))?,
        insert_line: s.prepare(&one("rf1_lineitem"))?,
        delete_lines: s.prepare(&one("rf2_lineitem"))?,
        delete_order: s.prepare(&one("rf2_order"))?,
        leftovers,
        pairs,
    }))
}

/// Remove what refresh function 1 left of these pairs' orders where refresh function 2 did
/// not run (an interrupted run: before the next one) or failed (at once). A failure here is not
/// the run's: a leftover order then makes refresh function 1 fail on its key, which the run
/// reports.
fn clear_leftovers(s: &mut dyn Session, (lines, orders): (StmtId, StmtId), pairs: &[&Rows]) {
    for o in pairs {
        let keys: Vec<i64> = o.iter().filter_map(|r| r[0].as_i64()).collect();
        let (Some(low), Some(high)) = (keys.iter().min(), keys.iter().max()) else {
            continue;
        };
        let range = [Value::Int(*low), Value::Int(*high)];
        let _ = s.exec(lines, &range);
        let _ = s.exec(orders, &range);
    }
}

impl Client for TpchClient {
    fn next(&mut self) -> usize {
        self.current = self.stream.jobs[self.next.min(self.stream.jobs.len() - 1)];
        self.next += 1;
        self.shared.advance(self.stream.number, self.next);
        self.current.type_index()
    }

    fn execute(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let start = Instant::now();
        let (rows, statements) = match self.current {
            Job::Query(q) => self.query(s, q)?,
            Job::Rf1(p) => self.rf1(s, p)?,
            Job::Rf2(p) => self.rf2(s, p)?,
        };
        self.shared
            .timings
            .lock()
            .expect("timings lock")
            .push(Timing {
                stream: self.stream.number,
                job: self.current,
                start,
                end: Instant::now(),
                rows,
            });
        Ok(statements)
    }

    /// A throughput stream waits for the end of the power test before its first job; the
    /// moment's pause after it lets the runner see a Ctrl-C that ended the power test.
    fn pause(&mut self) -> std::time::Duration {
        if self.waited {
            return std::time::Duration::ZERO;
        }
        self.shared.wait_power();
        self.waited = true;
        std::time::Duration::from_micros(1)
    }

    fn finished(&self) -> bool {
        self.next >= self.stream.jobs.len()
    }
}

impl Drop for TpchClient {
    /// The power test is over when its stream's client ends, however it ended (done,
    /// interrupted, lost), so that no throughput stream waits for it forever.
    fn drop(&mut self) {
        if self.stream.power {
            self.shared.end_power();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_made_anew_goes_on_where_it_was() {
        let shared = Shared::default();
        assert_eq!(shared.progress(2), 0);
        shared.advance(2, 5);
        shared.advance(3, 1);
        shared.advance(2, 6);
        assert_eq!((shared.progress(2), shared.progress(3)), (6, 1));
    }
}
