//! sysbench 1.0.20's OLTP workloads (src/lua/oltp_*.lua, select_random_*.lua) and the probes: the
//! sbtestN schema and data, its options and defaults, one registry entry per script, and the checks
//! (row counts, unique ids, k set). The statement sequences are in txn.rs, the random numbers in
//! ../random.rs; the SQL (DDL, every statement and probe; per-dialect ids, sequences and index
//! checks) in sql/sysbench/.

mod txn;

use std::collections::BTreeMap;

use crate::engine::{DbResult, Engine, Session, Value};
use crate::error::Error;
use crate::sql::SqlSet;

use super::options::{self, Kind, Opt, Phase, Table};
use super::{
    CheckItem, Client, Loader, Workload, WorkloadEntry, WorkloadOptions, clear_out, db_error,
    meta_get, record_fact, run_all, start_over,
};
use crate::workload::random::{C_TEMPLATE, Dist, PAD_TEMPLATE, Rand};
use crate::workload::rows::{Generated, generated, held_count};

/// The sysbench scripts, in the order of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    PointSelect,
    ReadOnly,
    ReadWrite,
    WriteOnly,
    UpdateIndex,
    UpdateNonIndex,
    Insert,
    Delete,
    RandomPoints,
    RandomRanges,
    /// The seeds' probes: each one statement (or one round trip), see sql/sysbench.
    Probe(Probe),
}

/// Seed 004's and seed 001's micro-benchmarks, on sbtest1 and sbtest2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Select1,
    Select1x10,
    Point,
    In10,
    Range,
    Scan,
    Join,
    Correlated,
    InSubquery,
    Sequence,
}

const PROBE_NAMES: [&str; 10] = [
    "probe_select1",
    "probe_select1_x10",
    "probe_point",
    "probe_in10",
    "probe_range",
    "probe_scan",
    "probe_join",
    "probe_correlated",
    "probe_in_subquery",
    "probe_sequence",
];

impl Script {
    fn name(self) -> &'static str {
        match self {
            Script::Probe(p) => PROBE_NAMES[p as usize],
            other => ENTRIES_NAMES[other.index()],
        }
    }
    fn index(self) -> usize {
        [
            Script::PointSelect,
            Script::ReadOnly,
            Script::ReadWrite,
            Script::WriteOnly,
            Script::UpdateIndex,
            Script::UpdateNonIndex,
            Script::Insert,
            Script::Delete,
            Script::RandomPoints,
            Script::RandomRanges,
        ]
        .iter()
        .position(|s| *s == self)
        .unwrap_or(0)
    }
    /// Scripts whose rows do not stay table_size per table.
    fn changes_row_count(self) -> bool {
        matches!(self, Script::Insert | Script::Delete)
    }
}

const ENTRIES_NAMES: [&str; 10] = [
    "oltp_point_select",
    "oltp_read_only",
    "oltp_read_write",
    "oltp_write_only",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
];

/// About 250 bytes per row; "scale" 1 stands for sysbench's default 10,000 rows.
const BYTES_PER_SCALE: u64 = 2_500_000;

/// A registry entry named `$name` (its one variant) that runs `$script`.
macro_rules! sysbench_entry {
    ($name:expr, $script:expr, $about:expr) => {
        WorkloadEntry {
            name: $name,
            about: $about,
            variants: &[$name],
            bytes_per_scale: BYTES_PER_SCALE,
            headline: &[],
            figures: &[],
            options: &OPTIONS,
            run_asks: super::no_run_asks,
            scale_follows_clients: false,
            new: |o| new($script, o),
        }
    };
}

macro_rules! entry {
    ($index:expr, $script:ident, $about:expr) => {
        sysbench_entry!(ENTRIES_NAMES[$index], Script::$script, $about)
    };
}

macro_rules! probe {
    ($probe:ident, $about:expr) => {
        sysbench_entry!(
            PROBE_NAMES[Probe::$probe as usize],
            Script::Probe(Probe::$probe),
            $about
        )
    };
}

pub const PROBES: [WorkloadEntry; 10] = [
    probe!(Select1, "probe: SELECT 1, the round trip alone"),
    probe!(Select1x10, "probe: ten SELECT 1 in one round trip"),
    probe!(Point, "probe: a primary-key lookup"),
    probe!(In10, "probe: WHERE id IN (10 ids)"),
    probe!(Range, "probe: a range scan of range_size rows"),
    probe!(
        Scan,
        "probe: a full-table scan (LIKE with a leading wildcard)"
    ),
    probe!(Join, "probe: a join of sbtest1 and sbtest2 over a range"),
    probe!(Correlated, "probe: a correlated subquery"),
    probe!(InSubquery, "probe: WHERE id IN (subquery)"),
    probe!(Sequence, "probe: a new sequence value"),
];

pub const ENTRIES: [WorkloadEntry; 10] = [
    entry!(0, PointSelect, "sysbench: one primary-key SELECT"),
    entry!(
        1,
        ReadOnly,
        "sysbench: 10 point selects and 4 range selects in a transaction"
    ),
    entry!(
        2,
        ReadWrite,
        "sysbench: read_only plus 2 updates and a delete+insert pair"
    ),
    entry!(
        3,
        WriteOnly,
        "sysbench: 2 updates and a delete+insert pair in a transaction"
    ),
    entry!(4, UpdateIndex, "sysbench: UPDATE of the indexed column k"),
    entry!(
        5,
        UpdateNonIndex,
        "sysbench: UPDATE of the non-indexed column c"
    ),
    entry!(6, Insert, "sysbench: INSERT of a new row"),
    entry!(7, Delete, "sysbench: DELETE of a row"),
    entry!(
        8,
        RandomPoints,
        "sysbench: SELECT ... WHERE k IN (10 values)"
    ),
    entry!(
        9,
        RandomRanges,
        "sysbench: SELECT count(k) over 10 OR-ed k ranges"
    ),
];

/// sysbench's options, with its defaults (oltp_common.lua: sysbench.cmdline.options).
#[derive(Debug, Clone)]
pub struct Options {
    pub tables: u32,
    pub table_size: i64,
    pub range_size: i64,
    pub point_selects: u32,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    pub range_selects: bool,
    pub skip_trx: bool,
    pub create_secondary: bool,
    pub dist: Dist,
    pub random_points: u32,
    pub number_of_ranges: u32,
    pub delta: i64,
    pub clients: u32,
}

macro_rules! opt {
    ($name:expr, $kind:expr, $phase:ident, $default:expr, $value:expr, $help:expr) => {
        Opt {
            name: $name,
            short: None,
            help: $help,
            kind: $kind,
            phase: Phase::$phase,
            default: $default,
            value_name: $value,
        }
    };
}

/// sysbench's options, by its names (`_` works as well as `-` on the command line).
pub const OPTIONS: Table = Table {
    heading: "sysbench options",
    who: "the sysbench workloads",
    opts: &[
        opt!(
            "tables",
            Kind::Count,
            Data,
            "1",
            "N",
            "Number of sbtest tables"
        ),
        opt!(
            "table_size",
            Kind::Count,
            Data,
            "10000",
            "N",
            "Rows per table"
        ),
        opt!(
            "create_secondary",
            Kind::OnOff,
            Data,
            "on",
            "on|off",
            "The k index after loading"
        ),
        opt!(
            "rand_type",
            Kind::Choice(Dist::NAMES),
            Data,
            "special",
            "TYPE",
            "uniform, gaussian, special (sysbench 1.0's default), pareto, zipfian: the rows drawn by `run`, and the k values `prepare` loads"
        ),
        opt!(
            "range_size",
            Kind::Count,
            Run,
            "100",
            "N",
            "Rows per range select"
        ),
        opt!(
            "point_selects",
            Kind::Number,
            Run,
            "10",
            "N",
            "Point selects per transaction"
        ),
        opt!(
            "simple_ranges",
            Kind::Number,
            Run,
            "1",
            "N",
            "Simple range selects (BETWEEN) per transaction"
        ),
        opt!(
            "sum_ranges",
            Kind::Number,
            Run,
            "1",
            "N",
            "SUM() range selects per transaction"
        ),
        opt!(
            "order_ranges",
            Kind::Number,
            Run,
            "1",
            "N",
            "ORDER BY range selects per transaction"
        ),
        opt!(
            "distinct_ranges",
            Kind::Number,
            Run,
            "1",
            "N",
            "DISTINCT range selects per transaction"
        ),
        opt!(
            "index_updates",
            Kind::Number,
            Run,
            "1",
            "N",
            "UPDATEs of the indexed column k per transaction"
        ),
        opt!(
            "non_index_updates",
            Kind::Number,
            Run,
            "1",
            "N",
            "UPDATEs of the non-indexed column c per transaction"
        ),
        opt!(
            "delete_inserts",
            Kind::Number,
            Run,
            "1",
            "N",
            "DELETE + INSERT pairs per transaction"
        ),
        opt!(
            "range_selects",
            Kind::OnOff,
            Run,
            "on",
            "on|off",
            "The four range selects"
        ),
        opt!(
            "skip_trx",
            Kind::OnOff,
            Run,
            "off",
            "on|off",
            "No BEGIN/COMMIT"
        ),
        opt!(
            "random_points",
            Kind::Count,
            Run,
            "10",
            "N",
            "select_random_points: values per IN list"
        ),
        opt!(
            "number_of_ranges",
            Kind::Count,
            Run,
            "10",
            "N",
            "select_random_ranges: ranges per query"
        ),
        opt!(
            "delta",
            Kind::Count,
            Run,
            "5",
            "N",
            "select_random_ranges: width of each range"
        ),
    ],
};

fn options(o: &WorkloadOptions) -> Result<Options, Error> {
    let g = options::parse(&OPTIONS, OPTIONS.who, &o.params)?;
    let n = |k: &str| -> u64 {
        g.number(k)
            .or_else(|| OPTIONS.get(k).and_then(|opt| opt.default.parse().ok()))
            .unwrap_or(0)
    };
    let small = |k: &str| u32::try_from(n(k)).unwrap_or(u32::MAX);
    let dist = Dist::parse(g.text("rand_type").unwrap_or("special")).expect("a checked choice");
    Ok(Options {
        tables: small("tables"),
        table_size: i64::try_from(n("table_size")).unwrap_or(i64::MAX),
        range_size: i64::try_from(n("range_size")).unwrap_or(i64::MAX),
        point_selects: small("point_selects"),
        simple_ranges: small("simple_ranges"),
        sum_ranges: small("sum_ranges"),
        order_ranges: small("order_ranges"),
        distinct_ranges: small("distinct_ranges"),
        index_updates: small("index_updates"),
        non_index_updates: small("non_index_updates"),
        delete_inserts: small("delete_inserts"),
        range_selects: g.on("range_selects", true),
        skip_trx: g.on("skip_trx", false),
        create_secondary: g.on("create_secondary", true),
        dist,
        random_points: small("random_points"),
        number_of_ranges: small("number_of_ranges"),
        delta: i64::try_from(n("delta")).unwrap_or(i64::MAX),
        clients: o.clients.max(1),
    })
}

pub struct Sysbench {
    script: Script,
    opts: Options,
    /// What the command line said, to compare with what the database holds.
    given: (bool, bool),
}

fn new(script: Script, o: &WorkloadOptions) -> Result<Box<dyn Workload>, Error> {
    if o.fillfactor.is_some() {
        return Err(Error::Usage("--fillfactor applies to tpcb only".into()));
    }
    let given = (
        o.params.contains_key("tables"),
        o.params.contains_key("table_size"),
    );
    let mut opts = options(o)?;
    if o.scale > 0 && !given.1 {
        opts.table_size = 10_000 * i64::from(o.scale);
    }
    if matches!(script, Script::Probe(_)) {
        // The join and subquery probes read sbtest2 too.
        opts.tables = opts.tables.max(2);
    }
    Ok(Box::new(Sysbench {
        script,
        opts,
        given,
    }))
}

fn sql(engine: &dyn Engine) -> SqlSet {
    SqlSet::load(&crate::sql::files("sysbench"), engine.dialect())
}

/// sbtestN's rows as cmd_prepare makes them: ids 1..table_size, k from the default
/// distribution, c and pad from their templates.
fn rows(total: i64, mut rand: Rand) -> Generated<impl FnMut(i64, &mut Vec<Value>)> {
    generated(total, move |i, row| {
        let k = rand.default(1, total);
        let (c, pad) = (rand.string(C_TEMPLATE), rand.string(PAD_TEMPLATE));
        row.extend([
            Value::Int(i + 1),
            Value::Int(k),
            Value::Text(c),
            Value::Text(pad),
        ]);
    })
}

const META_TABLES: &str = "sysbench.tables";
const META_SIZE: &str = "sysbench.table_size";
const META_CHANGED: &str = "sysbench.row_count_changed";

impl Workload for Sysbench {
    fn name(&self) -> &'static str {
        self.script.name()
    }
    fn variant(&self) -> &'static str {
        self.script.name()
    }
    /// sysbench's size is its tables and rows, recorded with the other options in `settings`.
    fn scale(&self) -> Option<u32> {
        None
    }

    /// Every option in effect, as sysbench names them; tables and table_size as the database
    /// holds them (after `attach`).
    fn settings(&self) -> BTreeMap<String, String> {
        let o = &self.opts;
        let mut out: BTreeMap<String, String> = [
            ("tables", o.tables.to_string()),
            ("table_size", o.table_size.to_string()),
            ("rand_type", o.dist.name()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let script: &[(&str, String)] = match self.script {
            Script::Probe(_) => &[],
            _ => &[
                ("range_size", o.range_size.to_string()),
                ("point_selects", o.point_selects.to_string()),
                ("simple_ranges", o.simple_ranges.to_string()),
                ("sum_ranges", o.sum_ranges.to_string()),
                ("order_ranges", o.order_ranges.to_string()),
                ("distinct_ranges", o.distinct_ranges.to_string()),
                ("index_updates", o.index_updates.to_string()),
                ("non_index_updates", o.non_index_updates.to_string()),
                ("delete_inserts", o.delete_inserts.to_string()),
                ("range_selects", o.range_selects.to_string()),
                ("skip_trx", o.skip_trx.to_string()),
                ("random_points", o.random_points.to_string()),
                ("number_of_ranges", o.number_of_ranges.to_string()),
                ("delta", o.delta.to_string()),
            ],
        };
        out.extend(script.iter().map(|(k, v)| (k.to_string(), v.clone())));
        out
    }
    /// Every script and probe runs on the same sbtest tables.
    fn dataset(&self) -> Option<String> {
        Some("sysbench".into())
    }

    fn prepare(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        loader: &Loader,
    ) -> Result<(), Error> {
        fn table_vars<'a>(
            n: &'a str,
            options: &'a str,
            id_def: &'a str,
        ) -> [(&'a str, &'a str); 3] {
            [("n", n), ("options", options), ("id_def", id_def)]
        }
        let sql = sql(engine);
        let options = engine.table_options(None);
        let id_def = sql.get("id_def").to_string();
        let tables: Vec<String> = (1..=self.opts.tables).map(|n| n.to_string()).collect();
        let (mut drop, mut create) = (Vec::new(), Vec::new());
        if matches!(self.script, Script::Probe(_)) {
            drop = sql.statements("drop_sequence", &[]);
            create = sql.statements("create_sequence", &[]);
        }
        for n in &tables {
            drop.extend(sql.statements("drop", &table_vars(n, &options, &id_def)));
            create.extend(sql.statements("create", &table_vars(n, &options, &id_def)));
        }
        start_over(s, "sysbench.", &drop, &create, "the sbtest tables")?;
        for n in &tables {
            let vars = table_vars(n, &options, &id_def);
            let mut rows = rows(
                self.opts.table_size,
                Rand::new(n.parse::<u64>().unwrap_or(1), self.opts.dist),
            );
            loader.load(
                s,
                &format!("sbtest{n}"),
                &["id", "k", "c", "pad"],
                &mut rows,
            )?;
            for q in sql.statements("after_load", &vars) {
                s.query_text(&q)
                    .map_err(|e| db_error(e, "moving the id sequence"))?;
            }
            if self.opts.create_secondary {
                run_all(
                    s,
                    &sql.statements("secondary_index", &vars),
                    "creating the k index",
                )?;
            }
        }
        record_fact(s, META_TABLES, &self.opts.tables.to_string())?;
        record_fact(s, META_SIZE, &self.opts.table_size.to_string())
    }

    fn cleanup(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<(), Error> {
        let sql = sql(engine);
        let tables = held(s, &sql).map_or(self.opts.tables, |(t, _)| t);
        for n in 1..=tables {
            run_all(
                s,
                &sql.statements("drop", &[("n", &n.to_string())]),
                "dropping an sbtest table",
            )?;
        }
        let drop = sql.statements("drop_sequence", &[]);
        clear_out(s, "sysbench.", &drop, "the probe sequence")
    }

    fn check(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
        let (tables, size) = held(s, &sql(engine))?;
        let changed = meta_get(s, META_CHANGED).is_some();
        let mut items = Vec::new();
        for n in 1..=tables {
            let rows = s
                .query_text(&sql(engine).statements("shape", &[("n", &n.to_string())])[0])
                .map_err(|e| db_error(e, "reading an sbtest table"))?;
            let v: Vec<i64> = rows
                .first()
                .map(|r| r.iter().map(|x| x.as_i64().unwrap_or(-1)).collect())
                .unwrap_or_default();
            let (count, distinct, null_k) = (v[0], v[1], v[2]);
            let count_ok = changed || count == size;
            let note = if changed {
                " (oltp_insert/oltp_delete ran: the count may differ)"
            } else {
                ""
            };
            items.push(CheckItem {
                name: format!("sbtest{n} shape"),
                ok: count_ok && distinct == count && null_k == 0,
                detail: format!(
                    "{count} rows of {size}{note}, {distinct} distinct ids, {null_k} rows without k"
                ),
            });
        }
        items.extend(index_checks(&sql(engine), s, tables));
        Ok(items)
    }

    fn attach(&mut self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<String>, Error> {
        let (tables, size) = held(s, &sql(engine))?;
        let mut warnings = Vec::new();
        if (self.given.0 && tables != self.opts.tables)
            || (self.given.1 && size != self.opts.table_size)
        {
            warnings.push(super::ignored(
                "--tables/--table-size",
                format!("{tables} tables of {size} rows"),
            ));
        }
        (self.opts.tables, self.opts.table_size) = (tables, size);
        if self.script.changes_row_count() {
            record_fact(s, META_CHANGED, "1")?;
        }
        Ok(warnings)
    }

    fn transaction_types(&self) -> Vec<&'static str> {
        vec![self.script.name()]
    }

    fn client(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        client_id: u32,
        seed: u64,
    ) -> DbResult<Box<dyn Client>> {
        txn::SysbenchClient::new(&sql(engine), s, self.script, &self.opts, client_id, seed)
            .map(|c| Box::new(c) as Box<dyn Client>)
    }
}

/// One item per table saying whether its indexes agree with its rows (the dialect's
/// `index_check`: amcheck, CHECK TABLE ... EXTENDED, PRAGMA integrity_check). When the check
/// cannot be set up (amcheck needs a privileged user), one item says it was skipped and why.
fn index_checks(sql: &SqlSet, s: &mut dyn Session, tables: u32) -> Vec<CheckItem> {
    for setup in sql.statements("index_check_setup", &[]) {
        if let Err(e) = s.batch(&setup) {
            return vec![CheckItem {
                name: "sbtest indexes".into(),
                ok: true,
                detail: format!("skipped: cannot set up the index check ({})", e.message),
            }];
        }
    }
    (1..=tables)
        .map(|n| {
            let verdict = sql
                .statements("index_check", &[("n", &n.to_string())])
                .iter()
                .try_fold(None, |_, stmt| {
                    s.query_text(stmt)
                        .map(|rows| rows.last().and_then(|r| r.last()).map(Value::to_string))
                });
            let (ok, detail) = match verdict {
                Ok(Some(v)) if v.eq_ignore_ascii_case("ok") => {
                    (true, "the indexes match the rows".to_string())
                }
                Ok(v) => (
                    false,
                    format!(
                        "the index check says: {}",
                        v.unwrap_or_else(|| "nothing".into())
                    ),
                ),
                Err(e) => (false, format!("the index check failed: {}", e.message)),
            };
            CheckItem {
                name: format!("sbtest{n} indexes"),
                ok,
                detail,
            }
        })
        .collect()
}

/// The tables and rows per table the database holds: as dbduel's prepare recorded them, or,
/// on tables sysbench made, as counted (sbtest1, sbtest2... while they exist).
fn held(s: &mut dyn Session, sql: &SqlSet) -> Result<(u32, i64), Error> {
    const NOT_PREPARED: &str = "the database holds no sysbench tables: run `dbduel prepare oltp_read_write --dsn ...` first";
    let shape = |n: u32| sql.statements("shape", &[("n", &n.to_string())]).remove(0);
    let counted = held_count(s, &shape(1), "reading sbtest1", NOT_PREPARED)?;
    let recorded =
        |s: &mut dyn Session, key: &str| meta_get(s, key).and_then(|t| t.parse::<i64>().ok());
    let tables = match recorded(s, META_TABLES) {
        Some(t) => t as u32,
        None => (2..)
            .take_while(|&n| s.query_text(&shape(n)).is_ok())
            .last()
            .unwrap_or(1),
    };
    let size = recorded(s, META_SIZE).unwrap_or(counted);
    if size < 1 {
        return Err(Error::Usage(NOT_PREPARED.into()));
    }
    Ok((tables, size))
}
