//! TPC-H (TPC Benchmark H, standard specification revision 3.0.1): the registry entry, its options
//! (`--scale-factor`, `--queries`, `--repeat`, `--streams`, `--query-timeout`), the streams of a
//! run (the power test, and with `--streams` the throughput test after it, clause 5.3) as the jobs
//! of each client (`Workload::fixed_clients`: client 0 the power test's stream, 1..S the throughput
//! test's query streams, S+1 its refresh stream), and the metrics of clause 5.4 from the streams'
//! own timings: Power@Size, Throughput@Size and QphH@Size. The data in load.rs, the substitution
//! parameters in params.rs, the streams in client.rs, the answers' check in check.rs; the SQL in
//! sql/tpch/.

mod check;
mod client;
mod load;
mod params;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine::{DbResult, Engine, Session};
use crate::error::Error;
use crate::sql::SqlSet;

use super::options::{self, Kind, Opt, Phase, Table};
use super::{
    CheckItem, Client, Counts, Loader, Workload, WorkloadEntry, WorkloadOptions, clear_out,
    meta_get, record_fact, run_all, start_over,
};
use client::{Job, ORDER, Shared, Stream, TYPES, TpchClient};

pub const ENTRY: WorkloadEntry = WorkloadEntry {
    name: "tpch",
    about: "TPC-H: dbgen's data (--scale-factor), the power test (RF1, 22 queries, RF2), --streams, --queries, check against reference answers",
    variants: &[],
    // SF 1: about 1.4 GB with its keys and indexes.
    bytes_per_scale: 1_400_000_000,
    headline: &["qphh_at_size", "power_at_size", "throughput_at_size"],
    figures: &[
        (
            "power_at_size",
            "TPC-H Power@Size: 3600 x SF / geometric mean of the power test's 24 intervals (clause 5.4.1)",
        ),
        (
            "throughput_at_size",
            "TPC-H Throughput@Size: streams x 22 x 3600 / throughput test seconds x SF (clause 5.4.2)",
        ),
        (
            "qphh_at_size",
            "TPC-H QphH@Size: sqrt(Power@Size x Throughput@Size) (clause 5.4.3)",
        ),
        (
            "unanswered",
            "TPC-H queries and refresh functions without an answer (errors, timeouts): no metric",
        ),
    ],
    options: &OPTIONS,
    run_asks: super::no_run_asks,
    scale_follows_clients: false,
    new,
};

/// The fact that records the scale factor the data was loaded at.
const FACT_SF: &str = "tpch.scale_factor";

/// What a run was asked for (`--queries`, `--repeat`, `--streams`).
#[derive(Debug, Clone)]
struct Options {
    /// The scale factor to load at (`prepare`), or the one read from the data (`attach`).
    sf: f64,
    /// `--queries`: the queries to run, in this order; None: all 22 in each stream's order,
    /// with the refresh functions.
    queries: Option<Vec<u8>>,
    repeat: u32,
    streams: u32,
    /// `--query-timeout`, in seconds.
    timeout: Option<f64>,
}

fn usage<T>(msg: String) -> Result<T, Error> {
    Err(Error::Usage(msg))
}

/// `--queries 1,6,14`: query numbers from 1 to 22, each once.
fn queries(text: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let q = match part.trim().parse::<u8>() {
            Ok(q) if (1..=22).contains(&q) => q,
            _ => {
                return usage(format!(
                    "--queries {text}: '{}' is not a TPC-H query; give numbers from 1 to 22, comma-separated (1,6,14)",
                    part.trim()
                ));
            }
        };
        if out.contains(&q) {
            return usage(format!("--queries {text}: query {q} is named twice"));
        }
        out.push(q);
    }
    Ok(out)
}

/// TPC-H's options.
pub const OPTIONS: Table = Table {
    heading: "TPC-H options",
    who: "tpch",
    opts: &[
        Opt {
            name: "scale_factor",
            short: None,
            help: "TPC-H's scale factor, 0.01 and up (1: six million line items) [1; with `run --dsn`, read from the database]",
            kind: Kind::Decimal,
            phase: Phase::Data,
            default: "",
            value_name: "SF",
        },
        Opt {
            name: "queries",
            short: None,
            help: "Only these queries, in this order (1,6,14), without the refresh functions",
            kind: Kind::Text,
            phase: Phase::Run,
            default: "",
            value_name: "LIST",
        },
        Opt {
            name: "repeat",
            short: None,
            help: "Runs of each query in each stream: the latency table gives their median and spread",
            kind: Kind::Number,
            phase: Phase::Run,
            default: "1",
            value_name: "N",
        },
        Opt {
            name: "streams",
            short: None,
            help: "After the power test, the throughput test: N query streams and one refresh stream in parallel (Throughput@Size and QphH@Size)",
            kind: Kind::Number,
            phase: Phase::Run,
            default: "",
            value_name: "N",
        },
        Opt {
            name: "query_timeout",
            short: None,
            help: "The engine's own limit on each query and refresh function of the streams, in seconds (PostgreSQL statement_timeout, MariaDB max_statement_time); one past it is reported as a timeout and the stream goes on (a refresh function 2 past it has its pair's rows deleted without the limit, so the data stays as loaded)",
            kind: Kind::Decimal,
            phase: Phase::Run,
            default: "",
            value_name: "SECONDS",
        },
    ],
};

/// `--query-timeout` (TPC-H's, CH-benCHmark's): seconds above 0, at most a day.
pub(crate) fn query_timeout(g: &options::Given) -> Result<Option<f64>, Error> {
    let timeout = g.decimal("query_timeout");
    match timeout.filter(|t| !(*t > 0.0 && *t <= 86_400.0)) {
        Some(t) => usage(format!(
            "--query-timeout {t}: give seconds above 0 and at most 86400"
        )),
        None => Ok(timeout),
    }
}

fn options(opts: &WorkloadOptions) -> Result<Options, Error> {
    let g = options::parse(&OPTIONS, OPTIONS.who, &opts.params)?;
    let sf = g
        .decimal("scale_factor")
        .unwrap_or(f64::from(opts.scale.max(1)));
    if !(0.01..=100_000.0).contains(&sf) {
        return usage(format!(
            "--scale-factor {sf}: TPC-H's scale factor goes from 0.01 to 100000"
        ));
    }
    let repeat = g.number("repeat").unwrap_or(1);
    if repeat == 0 || repeat > 10_000 {
        return usage(format!(
            "--repeat {repeat}: give 1 to 10000 runs of each query"
        ));
    }
    let streams = g.number("streams").unwrap_or(0);
    if streams > 1000 {
        return usage(format!("--streams {streams}: at most 1000 query streams"));
    }
    let (repeat, streams) = (repeat as u32, streams as u32);
    let queries = g.text("queries").map(queries).transpose()?;
    let timeout = query_timeout(&g)?;
    Ok(Options {
        sf,
        queries,
        repeat,
        streams,
        timeout,
    })
}

fn new(opts: &WorkloadOptions) -> Result<Box<dyn Workload>, Error> {
    Ok(Box::new(Tpch {
        options: options(opts)?,
        sf_given: opts.params.contains_key("scale_factor"),
        shared: Arc::new(Shared::default()),
    }))
}

pub struct Tpch {
    options: Options,
    sf_given: bool,
    shared: Arc<Shared>,
}

fn sql(engine: &dyn Engine) -> SqlSet {
    SqlSet::load(&crate::sql::files("tpch"), engine.dialect())
}

fn statements(sql: &SqlSet, name: &str, engine: &dyn Engine) -> Vec<String> {
    sql.statements(name, &[("plain", &engine.table_options(None))])
}

/// The `table keys` section by table, in `load::TABLES`' order: each statement changes the
/// table it names (`ALTER TABLE t ...`, `CREATE [UNIQUE] INDEX i ON t ...`) and runs as soon
/// as that table is loaded, next to the other tables' loads. A statement that names no TPC-H
/// table is returned apart, to run once every table is loaded.
fn by_table(statements: &[String]) -> (Vec<Vec<String>>, Vec<String>) {
    let mut own = vec![Vec::new(); load::TABLES.len()];
    let mut apart = Vec::new();
    for statement in statements {
        let words: Vec<String> = statement
            .split(|c: char| c.is_whitespace() || c == '(')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let target = match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["alter", "table", t, ..] => Some(t),
            ["create", "index", _, "on", t, ..] | ["create", "unique", "index", _, "on", t, ..] => {
                Some(t)
            }
            _ => None,
        };
        match target.and_then(|t| load::TABLES.iter().position(|x| x.name == t)) {
            Some(i) => own[i].push(statement.clone()),
            None => apart.push(statement.clone()),
        }
    }
    (own, apart)
}

impl Tpch {
    /// The queries of stream `s` (0: the power test's), in its order.
    fn queries_of(&self, s: u32) -> Vec<u8> {
        match &self.options.queries {
            Some(q) => q.clone(),
            None => ORDER[s as usize % ORDER.len()].to_vec(),
        }
    }

    /// What client `id` runs: 0 the power test's stream, 1 to S the throughput test's query
    /// streams, S + 1 its refresh stream (clause 5.3.4). The refresh functions run only with
    /// all 22 queries: a run of chosen queries compares them, it is not a power test.
    fn jobs(&self, id: u32) -> Vec<Job> {
        let full = self.options.queries.is_none();
        let s = self.options.streams;
        if id == s + 1 {
            return (1..=s as usize)
                .flat_map(|p| [Job::Rf1(p), Job::Rf2(p)])
                .collect();
        }
        let mut jobs = Vec::new();
        for _ in 0..self.options.repeat {
            jobs.extend(self.queries_of(id).into_iter().map(Job::Query));
        }
        if id == 0 && full {
            jobs.insert(0, Job::Rf1(0));
            jobs.push(Job::Rf2(0));
        }
        jobs
    }

    fn read_sf(s: &mut dyn Session) -> Result<f64, Error> {
        let Some(sf) = meta_get(s, FACT_SF) else {
            return usage(
                "the database holds no tpch data: run `dbduel prepare tpch --scale-factor SF --dsn ...` first".into(),
            );
        };
        sf.trim().parse().map_err(|_| {
            Error::Database(format!(
                "dbduel_facts: {FACT_SF} is '{sf}', not a scale factor"
            ))
        })
    }
}

impl Workload for Tpch {
    fn name(&self) -> &'static str {
        "tpch"
    }
    fn multiplexed(&self) -> bool {
        false
    }
    /// A query of the analytical set may run for many minutes at a large scale.
    fn stall_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(3600)
    }
    fn variant(&self) -> &'static str {
        if self.options.streams > 0 {
            "throughput"
        } else if self.options.queries.is_some() {
            "queries"
        } else {
            "power"
        }
    }
    fn scale(&self) -> Option<u32> {
        None
    }

    fn prepare(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        loader: &Loader,
    ) -> Result<(), Error> {
        let sql = sql(engine);
        start_over(
            s,
            "tpch.",
            &statements(&sql, "drop", engine),
            &statements(&sql, "create", engine),
            "the tpch tables",
        )?;
        let sf = self.options.sf;
        let started = std::time::Instant::now();
        let workers = if engine.embedded() { 1 } else { 4 };
        let (own, apart) = by_table(&statements(&sql, "table keys", engine));
        let keys = |s: &mut dyn Session, table: usize| {
            run_all(
                s,
                &own[table],
                &format!(
                    "adding the keys and indexes of {}",
                    load::TABLES[table].name
                ),
            )
        };
        let loaded = load::load(engine, s, loader, sf, workers, &keys)?;
        if !loader.quiet {
            let (rows, secs) = (loaded.rows, loaded.rows_secs);
            let tables_keys = if own.iter().any(|k| !k.is_empty()) {
                let done = started.elapsed().as_secs_f64();
                format!("; the tables' own keys built alongside, the last done after {done:.2} s")
            } else {
                String::new()
            };
            errln!(
                "{:>18}: {rows} rows at SF {sf} in {secs:.2} s ({:.0} rows/s){tables_keys}",
                "tpch",
                rows as f64 / secs.max(1e-9),
            );
        }
        run_all(s, &apart, "adding the tpch keys and indexes")?;
        for section in ["keys", "indexes"] {
            run_all(
                s,
                &statements(&sql, section, engine),
                "adding the tpch keys and indexes",
            )?;
        }
        run_all(
            s,
            &statements(&sql, "analyze", engine),
            "analyzing the tpch tables",
        )?;
        record_fact(s, FACT_SF, &sf.to_string())
    }

    fn cleanup(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<(), Error> {
        let sql = sql(engine);
        clear_out(
            s,
            "tpch.",
            &statements(&sql, "drop", engine),
            "the tpch tables",
        )
    }

    fn check(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
        let sf = Self::read_sf(s)?;
        check::check(&sql(engine), s, sf)
    }

    fn attach(&mut self, _engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<String>, Error> {
        let sf = Self::read_sf(s)?;
        let mut warnings = Vec::new();
        if self.sf_given && (sf - self.options.sf).abs() > 1e-9 {
            warnings.push(super::ignored(
                format!("--scale-factor {}", self.options.sf),
                format!("SF {sf} as loaded"),
            ));
        }
        self.options.sf = sf;
        Ok(warnings)
    }

    fn transaction_types(&self) -> Vec<&'static str> {
        TYPES.to_vec()
    }

    fn open_session(&self, _engine: &dyn Engine, s: &mut dyn Session) -> DbResult<()> {
        if let Some(t) = self.options.timeout {
            // The engine's own limit where it has one, a cancel from the client otherwise.
            s.set_statement_timeout(Some(std::time::Duration::from_secs_f64(t)))?;
        }
        Ok(())
    }

    fn client(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        id: u32,
        seed: u64,
    ) -> DbResult<Box<dyn Client>> {
        let stream = Stream {
            number: id,
            jobs: self.jobs(id),
            power: id == 0,
            sf: self.options.sf,
            seed,
            limit: self.options.timeout.map(std::time::Duration::from_secs_f64),
        };
        let sql = sql(engine);
        self.open_session(engine, s)?;
        let client = TpchClient::new(&sql, s, stream, self.shared.clone())?;
        Ok(Box::new(client))
    }

    fn fixed_clients(&self) -> Option<Vec<u64>> {
        let s = self.options.streams;
        let refresh = u32::from(s > 0 && self.options.queries.is_none());
        Some(
            (0..1 + s + refresh)
                .map(|id| self.jobs(id).len() as u64)
                .collect(),
        )
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let o = &self.options;
        let mut out = BTreeMap::from([
            ("scale_factor".to_string(), o.sf.to_string()),
            ("streams".to_string(), o.streams.to_string()),
            ("repeat".to_string(), o.repeat.to_string()),
        ]);
        if let Some(t) = o.timeout {
            out.insert("query_timeout_s".into(), t.to_string());
        }
        if let Some(q) = &o.queries {
            let q: Vec<String> = q.iter().map(u8::to_string).collect();
            out.insert("queries".into(), q.join(","));
        }
        for (stream, params) in self.shared.params.lock().expect("params lock").iter() {
            if !params.is_empty() {
                out.insert(format!("params.stream{stream}"), params.clone());
            }
        }
        out
    }

    fn metrics(&self, _counts: &Counts) -> BTreeMap<String, f64> {
        let timings = self.shared.timings.lock().expect("timings lock").clone();
        metrics(
            &timings,
            &self.options,
            &self.fixed_clients().unwrap_or_default(),
        )
    }
}

/// `--repeat`: each query's median time and its spread (the fastest and slowest run), in ms.
fn repeats(power: &[&client::Timing], out: &mut BTreeMap<String, f64>) {
    for q in 1..=22u8 {
        let ms: Vec<f64> = power
            .iter()
            .filter(|t| t.job == Job::Query(q))
            .map(|t| t.secs() * 1000.0)
            .collect();
        if ms.is_empty() {
            continue;
        }
        let s = crate::stats::spread(&ms);
        out.insert(format!("Q{q:02} median ms"), s.median);
        out.insert(format!("Q{q:02} min ms"), s.min);
        out.insert(format!("Q{q:02} max ms"), s.max);
    }
}

/// Clause 5.4.1.4: a timing interval under 1/1000 of the longest counts as 1/1000 of it.
fn floored(times: &[f64]) -> Vec<f64> {
    let longest = times.iter().copied().fold(0.0, f64::max);
    times.iter().map(|t| t.max(longest / 1000.0)).collect()
}

fn geometric_mean(times: &[f64]) -> f64 {
    let logs: f64 = times.iter().map(|t| t.max(1e-9).ln()).sum();
    (logs / times.len().max(1) as f64).exp()
}

/// The workload's figures: each query's rows in the power test's stream, the jobs that gave
/// no answer (an error, a timeout, an interruption: the figures are then incomplete), and,
/// when the tests ran whole, Power@Size (clause 5.4.1), Throughput@Size (5.4.2) and QphH@Size
/// (5.4.3). `planned` is each client's count of jobs.
fn metrics(timings: &[client::Timing], o: &Options, planned: &[u64]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let power: Vec<&client::Timing> = timings.iter().filter(|t| t.stream == 0).collect();
    for t in &power {
        if let Job::Query(q) = t.job {
            out.insert(format!("Q{q:02} rows"), t.rows as f64);
        }
    }
    if o.repeat > 1 {
        repeats(&power, &mut out);
    }
    let unanswered = planned
        .iter()
        .sum::<u64>()
        .saturating_sub(timings.len() as u64);
    if unanswered > 0 {
        out.insert("unanswered".into(), unanswered as f64);
        return out;
    }
    let whole = o.queries.is_none() && o.repeat == 1;
    if whole {
        let times: Vec<f64> = power.iter().map(|t| t.secs()).collect();
        let p = 3600.0 * o.sf / geometric_mean(&floored(&times));
        out.insert("power_at_size".into(), p);
        let streams: Vec<&client::Timing> = timings.iter().filter(|t| t.stream > 0).collect();
        let expected = o.streams as usize * 22;
        if o.streams > 0 {
            let start = streams.iter().map(|t| t.start).min();
            let end = streams.iter().map(|t| t.end).max();
            if let (Some(start), Some(end)) = (start, end) {
                let ts = (end - start).as_secs_f64().max(1e-9);
                let t = expected as f64 * 3600.0 / ts * o.sf;
                out.insert("throughput_at_size".into(), t);
                out.insert("qphh_at_size".into(), (p * t).sqrt());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_key_goes_with_the_table_it_names() {
        let keys: Vec<String> = [
            "ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber)",
            "create index orders_customer on orders(o_custkey)",
            "CREATE UNIQUE INDEX part_name ON part (p_name)",
            "CREATE INDEX lineitem_part ON lineitem (l_partkey, l_suppkey)",
            "CREATE INDEX other ON thetable (id)",
            "SET foreign_key_checks = 0",
        ]
        .map(String::from)
        .to_vec();
        let (own, apart) = by_table(&keys);
        let of = |name: &str| &own[load::TABLES.iter().position(|t| t.name == name).unwrap()];
        assert_eq!(of("lineitem"), &[keys[0].clone(), keys[3].clone()]);
        assert_eq!(of("orders"), &[keys[1].clone()]);
        assert_eq!(of("part"), &[keys[2].clone()]);
        assert!(of("region").is_empty());
        assert_eq!(apart, [keys[4].clone(), keys[5].clone()]);
    }

    fn tpch(params: &[(&str, &str)]) -> Result<Box<dyn Workload>, Error> {
        let opts = WorkloadOptions {
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..WorkloadOptions::default()
        };
        new(&opts)
    }

    #[test]
    fn streams_are_the_power_test_the_query_streams_and_the_refresh_stream() {
        let w = tpch(&[("streams", "2")]).expect("valid options");
        assert_eq!(w.fixed_clients(), Some(vec![24, 22, 22, 4]));
        let w = tpch(&[("queries", "1,6"), ("repeat", "3")]).expect("valid options");
        assert_eq!(w.fixed_clients(), Some(vec![6]));
    }

    #[test]
    fn bad_options_are_refused_with_the_flag() {
        for (k, v, flag) in [
            ("queries", "1,23", "--queries"),
            ("queries", "1,1", "--queries"),
            ("repeat", "0", "--repeat"),
            ("scale_factor", "0.001", "--scale-factor"),
        ] {
            let Err(Error::Usage(m)) = tpch(&[(k, v)]) else {
                panic!("{k}={v} accepted");
            };
            assert!(m.starts_with(flag), "{m}");
        }
    }

    #[test]
    fn small_intervals_count_as_a_thousandth_of_the_longest() {
        assert_eq!(floored(&[10.0, 0.001]), vec![10.0, 0.01]);
        assert!((geometric_mean(&[1.0, 4.0]) - 2.0).abs() < 1e-12);
    }
}
