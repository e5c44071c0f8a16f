//! CH-benCHmark (Cole et al., "The mixed workload CH-benCHmark", DBTest 2011; BenchBase's
//! `chbenchmark`, go-tpc's `ch`): TPC-C's transactions and 22 analytical queries derived from TPC-H's,
//! on the same data at the same time, the measure of hybrid (HTAP) load. The registry entry, its
//! options (TPC-C's warehouses, load workers and isolation; `--analytical-streams`,
//! `--query-timeout`, `--data-seed`), the data (TPC-C's, loaded by tpcc/, then SUPPLIER, NATION,
//! REGION and query 15's view: load.rs), the clients (the first `--analytical-streams` of them run
//! the queries, client.rs; the others are TPC-C terminals, tpcc/'s), `check` (TPC-C's conditions,
//! the added tables' rows and keys; `answer` gives a query's rows) and its figures: the terminals' NOPM and tpmC beside
//! the streams' analytical queries per hour (QphH, section 4 of the paper). The SQL is in sql/ch/.

mod client;
mod load;

use std::collections::BTreeMap;

use crate::engine::{DbResult, Engine, ErrorClass, Session, Value};
use crate::error::Error;
use crate::sql::SqlSet;

use super::options::{self, Kind, Opt, Phase, Table};
use super::tpcc::{self, Tpcc};
use super::{
    CheckItem, Client, Counts, Loader, Workload, WorkloadEntry, WorkloadOptions, clear_out,
    db_error, meta_get, record_fact, run_all,
};
pub use client::QUERIES;

pub const ENTRY: WorkloadEntry = WorkloadEntry {
    name: "ch",
    about: "CH-benCHmark: TPC-C's terminals and 22 analytical query streams on the same data at once (HTAP); scale = warehouses",
    // The mix, and each of its sides alone: the paper's comparison, one point each in a plan.
    variants: &["ch", "terminals-alone", "streams-alone"],
    // TPC-C's warehouses; the added tables are a few MiB.
    bytes_per_scale: tpcc::ENTRY.bytes_per_scale,
    headline: &["nopm", "qphh"],
    figures: &[(
        "qphh",
        "analytical queries completed per hour by the streams, all 22 counted (CH-benCHmark's QphH)",
    )],
    options: &OPTIONS,
    run_asks: super::no_run_asks,
    scale_follows_clients: false,
    new,
};

/// CH-benCHmark's options: TPC-C's for the data and the terminals, and the streams'.
pub const OPTIONS: Table = Table {
    heading: "CH-benCHmark options",
    who: "ch",
    opts: &[
        tpcc::WAREHOUSES,
        tpcc::LOAD_WORKERS,
        tpcc::ISOLATION,
        Opt {
            name: "analytical_streams",
            short: None,
            help: "Clients that run the 22 analytical queries, the first N of --clients; the others are TPC-C terminals (0: TPC-C alone; as many as --clients: the queries alone)",
            kind: Kind::Number,
            phase: Phase::Run,
            default: "1",
            value_name: "N",
        },
        Opt {
            name: "alone",
            short: None,
            help: "Run one side of the mix alone, to set beside the mix: its terminals (the --clients less the streams) or its --analytical-streams; the variants terminals-alone and streams-alone in a plan",
            kind: Kind::Choice(&["terminals", "streams"]),
            phase: Phase::Run,
            default: "",
            value_name: "SIDE",
        },
        Opt {
            name: "query_timeout",
            short: None,
            help: "The engine's own limit on each statement of the run, in seconds (PostgreSQL statement_timeout, MariaDB max_statement_time): a query past it is an error of the run and its stream goes on",
            kind: Kind::Decimal,
            phase: Phase::Run,
            default: "",
            value_name: "SECONDS",
        },
        Opt {
            name: "data_seed",
            short: None,
            help: "Generate the rows from this seed, dated 2025-01-01: the same data on every engine, so that the queries' answers compare [from the clock]",
            kind: Kind::Number,
            phase: Phase::Data,
            default: "",
            value_name: "N",
        },
    ],
};

pub struct Ch {
    tpcc: Tpcc,
    /// `--analytical-streams`: clients 0 to streams - 1 run the queries, the others are
    /// terminals (a side alone runs the ids of its side only: `clients_run`).
    streams: u32,
    /// The mix's terminals (`--clients` less the streams), whichever side runs.
    mix_terminals: u32,
    /// The mix, or which of its sides runs alone.
    side: Side,
    /// `--query-timeout`, in seconds.
    timeout: Option<f64>,
    /// `--data-seed` given to `prepare`; in a run, the seed the data was loaded from (its fact).
    data_seed: Option<u64>,
    /// The run's clients (0 outside a run, and in `merge`, whose figures follow the counts).
    clients: u32,
}

/// What a run of `ch` runs: the mix of terminals and streams, or one of its sides alone (the
/// mix's own terminals or streams, so that each side's figures set beside the mix's compare).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Side {
    Mix,
    TerminalsAlone,
    StreamsAlone,
}

impl Side {
    /// The side named by a variant or by `--alone`; both given must agree.
    fn of(variant: Option<&str>, alone: Option<&str>) -> Result<Side, Error> {
        let from_alone = match alone {
            Some("terminals") => Some(Side::TerminalsAlone),
            Some("streams") => Some(Side::StreamsAlone),
            _ => None,
        };
        let from_variant = match variant {
            None => None,
            Some("ch") => Some(Side::Mix),
            Some("terminals-alone") => Some(Side::TerminalsAlone),
            Some("streams-alone") => Some(Side::StreamsAlone),
            Some(other) => {
                return Err(Error::Usage(format!(
                    "'{other}' is not a variant of ch: use {}",
                    ENTRY.variants.join(", ")
                )));
            }
        };
        match (from_variant, from_alone) {
            (Some(v), Some(a)) if v != a => Err(Error::Usage(format!(
                "variant {} and --alone {} ask for different runs: give one of them",
                v.name(),
                alone.unwrap_or_default()
            ))),
            (v, a) => Ok(v.or(a).unwrap_or(Side::Mix)),
        }
    }

    pub fn name(self) -> &'static str {
        ENTRY.variants[self as usize]
    }
}

/// The fact that records the seed of a seeded load (`--data-seed`).
const FACT_SEED: &str = "ch.data_seed";

fn new(o: &WorkloadOptions) -> Result<Box<dyn Workload>, Error> {
    let g = options::parse(&OPTIONS, OPTIONS.who, &o.params)?;
    let streams = g.number("analytical_streams").unwrap_or(1);
    if o.clients > 0 && streams > u64::from(o.clients) {
        return Err(Error::Usage(format!(
            "--analytical-streams {streams} with --clients {}: the streams are some of the clients; give at most {} streams, or more clients",
            o.clients, o.clients
        )));
    }
    let timeout = super::tpch::query_timeout(&g)?;
    let side = Side::of(o.variant.as_deref(), g.text("alone"))?;
    let mix_streams = streams as u32;
    let mix_terminals = o.clients.saturating_sub(mix_streams);
    // A side alone runs the mix's own clients of that side: none of them is refused.
    if o.clients > 0 {
        let empty = match side {
            Side::TerminalsAlone if mix_terminals == 0 => Some(format!(
                "--clients {} with --analytical-streams {mix_streams} leaves no terminal to run alone; give more clients than streams",
                o.clients
            )),
            Side::StreamsAlone if mix_streams == 0 => Some(
                "--analytical-streams is 0: no stream to run alone; give --analytical-streams 1 or more".to_string(),
            ),
            _ => None,
        };
        if let Some(why) = empty {
            return Err(Error::Usage(format!("{}: {why}", side.name())));
        }
    }
    // The terminals' workload has the mix's terminals, none when the streams run alone.
    let terminal_count = match side {
        Side::StreamsAlone => 0,
        Side::Mix | Side::TerminalsAlone => mix_terminals,
    };
    // TPC-C's own options reach the terminals' workload; the run's other clients are streams.
    let terminals = WorkloadOptions {
        params: o
            .params
            .iter()
            .filter(|(k, _)| tpcc::OPTIONS.get(&k.replace('-', "_")).is_some())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        clients: terminal_count,
        variant: None,
        ..o.clone()
    };
    let data_seed = g.number("data_seed");
    Ok(Box::new(Ch {
        tpcc: Tpcc::from_options(&terminals)?.seeded(data_seed),
        streams: mix_streams,
        mix_terminals,
        side,
        timeout,
        data_seed,
        clients: o.clients,
    }))
}

fn sql(engine: &dyn Engine) -> SqlSet {
    SqlSet::load(&crate::sql::files("ch"), engine.dialect())
}

fn statements(sql: &SqlSet, name: &str, engine: &dyn Engine) -> Vec<String> {
    let supplier = sql.get("expr_supplier").trim().to_string();
    sql.statements(
        name,
        &[
            ("plain", &engine.table_options(None)),
            ("supplier", &supplier),
        ],
    )
}

/// What an analytical session runs before its queries (SQLite: LIKE made case-sensitive).
fn open_analytical(sql: &SqlSet, s: &mut dyn Session) -> DbResult<()> {
    for statement in sql.statements("session", &[]) {
        s.batch(&statement)?;
    }
    Ok(())
}

/// The answer of query `q` (1 to 22) on this session, as a stream runs it: for tests that
/// compare the answers of engines loaded with one `--data-seed`.
pub fn answer(engine: &dyn Engine, s: &mut dyn Session, q: u8) -> DbResult<Vec<Vec<Value>>> {
    let sql = sql(engine);
    open_analytical(&sql, s)?;
    s.query_text(&client::query_text(&sql, q))
}

impl Ch {
    /// The counts of the added tables: regions, nations, suppliers, suppliers without a nation,
    /// nations without a region.
    fn counts(sql: &SqlSet, s: &mut dyn Session) -> Result<Vec<i64>, Error> {
        let rows = s.query_text(sql.get("count").trim()).map_err(|e| match e.class {
            ErrorClass::UndefinedTable => Error::Usage(
                "the database holds no CH-benCHmark tables: run `dbduel prepare ch --warehouses N --dsn ...` first".into(),
            ),
            _ => db_error(e, "counting the CH-benCHmark tables"),
        })?;
        let row = rows.into_iter().next().unwrap_or_default();
        Ok(row.iter().map(|v| v.as_i64().unwrap_or(0)).collect())
    }
}

impl Workload for Ch {
    /// A query of the analytical set may run for many minutes at a large scale.
    fn stall_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(3600)
    }
    fn name(&self) -> &'static str {
        "ch"
    }
    fn variant(&self) -> &'static str {
        self.side.name()
    }
    fn scale(&self) -> Option<u32> {
        self.tpcc.scale()
    }

    fn prepare(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        loader: &Loader,
    ) -> Result<(), Error> {
        let sql = sql(engine);
        // The view reads TPC-C's tables: it goes before they do.
        let drop = statements(&sql, "drop", engine);
        clear_out(s, "ch.", &drop, "the CH-benCHmark tables")?;
        self.tpcc.prepare(engine, s, loader)?;
        let create = statements(&sql, "create", engine);
        run_all(s, &create, "creating the CH-benCHmark tables")?;
        let seed = self.data_seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
        load::load(s, loader, seed)?;
        let view = statements(&sql, "view", engine);
        run_all(s, &view, "creating query 15's view")?;
        let analyze = statements(&sql, "analyze", engine);
        run_all(s, &analyze, "analyzing the CH-benCHmark tables")?;
        match self.data_seed {
            Some(seed) => record_fact(s, FACT_SEED, &seed.to_string()),
            None => Ok(()),
        }
    }

    fn cleanup(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<(), Error> {
        let drop = statements(&sql(engine), "drop", engine);
        clear_out(s, "ch.", &drop, "the CH-benCHmark tables")?;
        self.tpcc.cleanup(engine, s)
    }

    /// TPC-C's consistency conditions and the added tables' rows and keys. The queries'
    /// answers are not checked here: they change with every run (the suite compares them on
    /// seeded data, where they are known), and the run reports a query that fails.
    fn check(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
        let sql = sql(engine);
        let mut items = self.tpcc.check(engine, s)?;
        let c = Ch::counts(&sql, s)?;
        let want = [5, 62, load::SUPPLIERS, 0, 0];
        items.push(CheckItem::new(
            "CH-benCHmark tables",
            c == want,
            format!(
                "{} regions, {} nations, {} suppliers (want 5, 62, {}); {} suppliers without a nation, {} nations without a region",
                c.first().unwrap_or(&0),
                c.get(1).unwrap_or(&0),
                c.get(2).unwrap_or(&0),
                load::SUPPLIERS,
                c.get(3).unwrap_or(&0),
                c.get(4).unwrap_or(&0),
            ),
        ));
        Ok(items)
    }

    fn attach(&mut self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<String>, Error> {
        let mut warnings = self.tpcc.attach(engine, s)?;
        if self.side == Side::Mix && self.streams > 0 && self.tpcc.terminals() == 0 {
            warnings.push(format!(
                "all {} client{} of this run are analytical streams: no TPC-C terminal runs (give --clients {} or more for both sides, --analytical-streams 0 for the terminals alone)",
                self.streams,
                if self.streams == 1 { "" } else { "s" },
                self.streams + 1
            ));
        }
        let c = Ch::counts(&sql(engine), s)?;
        if c.get(2).copied().unwrap_or(0) == 0 {
            return Err(Error::Usage(
                "the database holds no CH-benCHmark suppliers: run `dbduel prepare ch --warehouses N --dsn ...` first".into(),
            ));
        }
        // The data says how it was loaded: a seed given to the run changes nothing.
        let held = meta_get(s, FACT_SEED).and_then(|t| t.trim().parse().ok());
        if let Some(given) = self.data_seed.filter(|g| Some(*g) != held) {
            let holds = held.map_or("data loaded from the clock".into(), |h| {
                format!("data loaded from seed {h}")
            });
            warnings.push(super::ignored(format!("--data-seed {given}"), holds));
        }
        self.data_seed = held;
        Ok(warnings)
    }

    fn clients_run(&self) -> Option<(u32, u32)> {
        match self.side {
            Side::Mix => None,
            Side::TerminalsAlone => Some((self.streams, self.tpcc.terminals())),
            Side::StreamsAlone => Some((0, self.streams)),
        }
    }

    fn shards_refused(&self) -> Option<String> {
        (self.side != Side::Mix).then(|| {
            format!(
                "{} runs one side of the mix alone, from one process: drop --shard, or shard the mix",
                self.side.name()
            )
        })
    }

    fn transaction_types(&self) -> Vec<&'static str> {
        tpcc::TYPES.iter().chain(QUERIES.iter()).copied().collect()
    }

    fn default_max_tries(&self) -> u32 {
        self.tpcc.default_max_tries()
    }

    fn open_session(&self, engine: &dyn Engine, s: &mut dyn Session) -> DbResult<()> {
        self.tpcc.open_session(engine, s)?;
        open_analytical(&sql(engine), s)?;
        if let Some(t) = self.timeout {
            s.set_statement_timeout(Some(std::time::Duration::from_secs_f64(t)))?;
        }
        Ok(())
    }

    fn client(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        client_id: u32,
        seed: u64,
    ) -> DbResult<Box<dyn Client>> {
        if client_id >= self.streams {
            let terminal = self
                .tpcc
                .client(engine, s, client_id - self.streams, seed)?;
            if let Some(t) = self.timeout {
                s.set_statement_timeout(Some(std::time::Duration::from_secs_f64(t)))?;
            }
            return Ok(terminal);
        }
        self.open_session(engine, s)?;
        let stream = client::Stream::new(&sql(engine), s, client_id, tpcc::TYPES.len())?;
        Ok(Box::new(stream))
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let mut out = self.tpcc.settings();
        out.remove("procedures");
        out.remove("spec_timing");
        out.insert("analytical_streams".into(), self.streams.to_string());
        // The mix's split, whichever side ran (`alone` says which).
        out.insert("terminals".into(), self.mix_terminals.to_string());
        match self.side {
            Side::Mix => {}
            Side::TerminalsAlone => _ = out.insert("alone".into(), "terminals".into()),
            Side::StreamsAlone => _ = out.insert("alone".into(), "streams".into()),
        }
        if let Some(t) = self.timeout {
            out.insert("query_timeout_s".into(), t.to_string());
        }
        if let Some(seed) = self.data_seed {
            out.insert("data_seed".into(), seed.to_string());
        }
        out
    }

    /// The terminals' NOPM and tpmC (TPC-C's), and QphH: the streams' completed queries per
    /// hour of measured time. Each side's figures when it ran: when the run had clients of that
    /// side, or, in `merge` (which makes the workload without the run's clients and knows only
    /// the counts), when it completed anything.
    fn metrics(&self, counts: &Counts) -> BTreeMap<String, f64> {
        let done = |queries: bool| -> u64 {
            counts
                .types
                .iter()
                .filter(|t| QUERIES.contains(&t.name.as_str()) == queries)
                .map(|t| t.transactions)
                .sum()
        };
        let (terminals, streams) = match self.clients {
            0 => (done(false) > 0, done(true) > 0),
            _ => (
                self.side != Side::StreamsAlone && self.tpcc.terminals() > 0,
                self.side != Side::TerminalsAlone && self.streams > 0,
            ),
        };
        let mut out = BTreeMap::new();
        if terminals {
            out = self.tpcc.metrics(counts);
        }
        if streams {
            let hours = (counts.duration_s / 3600.0).max(1e-12);
            out.insert("qphh".into(), done(true) as f64 / hours);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transaction type's count in a run, none rolled back.
    fn count(name: &str, transactions: u64) -> super::super::TypeCounts {
        super::super::TypeCounts {
            name: name.into(),
            transactions,
            rollbacks: 0,
        }
    }

    fn ch(clients: u32, params: &[(&str, &str)]) -> Result<Box<dyn Workload>, Error> {
        new(&WorkloadOptions {
            clients,
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..WorkloadOptions::default()
        })
    }

    #[test]
    fn the_streams_are_some_of_the_clients() {
        let w = ch(4, &[("analytical_streams", "1")]).expect("valid");
        let s = w.settings();
        assert_eq!(s["analytical_streams"], "1");
        assert_eq!(s["terminals"], "3");
        let Err(Error::Usage(m)) = ch(2, &[("analytical_streams", "3")]) else {
            panic!("3 streams among 2 clients accepted");
        };
        assert!(
            m.starts_with("--analytical-streams 3 with --clients 2"),
            "{m}"
        );
        let Err(Error::Usage(m)) = ch(2, &[("procedures", "on")]) else {
            panic!("--procedures accepted");
        };
        assert!(m.starts_with("--procedures does not apply to ch"), "{m}");
    }

    #[test]
    fn a_side_alone_runs_the_mixs_own_clients_of_that_side() {
        let mix = ch(4, &[("analytical_streams", "1")]).expect("valid");
        assert_eq!((mix.variant(), mix.clients_run()), ("ch", None));
        let terminals = ch(4, &[("analytical_streams", "1"), ("alone", "terminals")]).unwrap();
        assert_eq!(terminals.variant(), "terminals-alone");
        // Clients 1 to 3, the mix's terminals, with their ids.
        assert_eq!(terminals.clients_run(), Some((1, 3)));
        let s = terminals.settings();
        assert_eq!(
            (s["terminals"].as_str(), s["analytical_streams"].as_str()),
            ("3", "1")
        );
        assert_eq!(s["alone"], "terminals");
        let streams = new(&WorkloadOptions {
            clients: 4,
            variant: Some("streams-alone".into()),
            params: [("analytical_streams".to_string(), "2".to_string())].into(),
            ..WorkloadOptions::default()
        })
        .unwrap();
        assert_eq!(streams.clients_run(), Some((0, 2)));
        assert_eq!(streams.settings()["terminals"], "2");
        // Each side's figure only.
        let counts = Counts {
            duration_s: 60.0,
            types: vec![count("new_order", 30), count("Q1", 4)],
        };
        let (t, q) = (terminals.metrics(&counts), streams.metrics(&counts));
        assert!(t.contains_key("nopm") && !t.contains_key("qphh"), "{t:?}");
        assert!(q.contains_key("qphh") && !q.contains_key("nopm"), "{q:?}");
        assert!(streams.shards_refused().is_some() && mix.shards_refused().is_none());
        // A side with no client of its own in the mix, or two names for different runs.
        for (clients, params, variant, want) in [
            (
                2,
                [("analytical_streams", "2"), ("alone", "terminals")],
                None,
                "terminals-alone: --clients 2 with --analytical-streams 2 leaves no terminal",
            ),
            (
                2,
                [("analytical_streams", "0"), ("alone", "streams")],
                None,
                "streams-alone: --analytical-streams is 0",
            ),
            (
                2,
                [("analytical_streams", "1"), ("alone", "streams")],
                Some("terminals-alone"),
                "variant terminals-alone and --alone streams ask for different runs",
            ),
        ] {
            let Err(Error::Usage(m)) = new(&WorkloadOptions {
                clients,
                variant: variant.map(String::from),
                params: params
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..WorkloadOptions::default()
            }) else {
                panic!("{params:?} {variant:?} accepted");
            };
            assert!(m.starts_with(want), "{m}");
        }
    }

    #[test]
    fn qphh_counts_the_queries_and_nopm_the_new_orders() {
        let w = ch(3, &[("analytical_streams", "1")]).expect("valid");
        let counts = Counts {
            duration_s: 60.0,
            types: vec![count("new_order", 30), count("Q1", 4), count("Q22", 6)],
        };
        let m = w.metrics(&counts);
        assert!((m["qphh"] - 600.0).abs() < 1e-9, "{m:?}");
        assert!((m["nopm"] - 30.0).abs() < 1e-9, "{m:?}");
        // The queries alone: no terminal, no NOPM.
        let alone = ch(2, &[("analytical_streams", "2")]).expect("valid");
        assert!(!alone.metrics(&counts).contains_key("nopm"));
        // `merge` makes the workload without the run's options: each side's figures follow
        // what the counts hold.
        let merged = ch(0, &[]).expect("valid");
        let m = merged.metrics(&counts);
        assert!(m.contains_key("nopm") && m.contains_key("qphh"), "{m:?}");
        let terminals_only = Counts {
            duration_s: 60.0,
            types: vec![count("new_order", 30), count("Q1", 0)],
        };
        assert!(!merged.metrics(&terminals_only).contains_key("qphh"));
    }

    #[test]
    fn every_query_has_its_dialects_expressions_in_place() {
        for dialect in ["postgres", "mysql", "sqlite", "firebird"] {
            let sql = SqlSet::load(&crate::sql::files("ch"), dialect);
            for q in 1..=22u8 {
                let text = client::query_text(&sql, q);
                assert!(!text.contains('{'), "{dialect} Q{q}: {text}");
                assert!(text.starts_with("SELECT"), "{dialect} Q{q}: {text}");
            }
        }
        let sqlite = SqlSet::load(&crate::sql::files("ch"), "sqlite");
        assert!(client::query_text(&sqlite, 5).contains("unicode(substr(c_state, 1, 1))"));
        let firebird = SqlSet::load(&crate::sql::files("ch"), "firebird");
        assert!(client::query_text(&firebird, 22).contains("substring(c_phone from 1 for 1)"));
    }
}
