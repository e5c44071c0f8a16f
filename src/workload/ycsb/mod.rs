//! YCSB 0.17's CoreWorkload (site.ycsb.workloads.CoreWorkload): the registry entry with the six
//! core workloads as variants, `usertable` and its load (jobs of 50,000 records on parallel
//! sessions through `Loader::append`, in key order: the record numbers sorted by their keys, up to
//! 4,000,000 records), the record of the layout and the inserts in dbduel_facts (`Workload::finish`
//! after each run), the key space read back by `attach`, and the checks. Properties in props.rs,
//! generators in generate.rs, the operations in client.rs; the SQL in sql/ycsb/.

mod client;
mod generate;
pub(crate) mod props;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::{DbResult, Engine, RowSource, Session, Value};
use crate::error::Error;
use crate::sql::SqlSet;

use super::{
    CheckItem, Client, Loader, Workload, WorkloadEntry, WorkloadOptions, clear_out, in_parallel,
    meta_get, record_fact, run_all, start_over,
};
use generate::{AcknowledgedCounter, Sequential};
pub use props::FILE_OPTION;
use props::{Lengths, Props};

pub const ENTRY: WorkloadEntry = WorkloadEntry {
    name: "ycsb",
    about: "YCSB's core workloads A to F (-P workloada..workloadf or a property file, -p name=value)",
    variants: &[
        "workloada",
        "workloadb",
        "workloadc",
        "workloadd",
        "workloade",
        "workloadf",
    ],
    // 1,000 records (workloada's recordcount) of ten 100-byte fields, with the key index.
    bytes_per_scale: 1_300_000,
    headline: &[],
    figures: &[],
    options: &super::options::NONE,
    run_asks: ycsb_run_asks,
    scale_follows_clients: false,
    new,
};

/// YCSB's own names for dbduel's flags, given as properties (`-p threadcount=8`,
/// `-p target=500`) or by a property file: taken out of the options, for -c and -R.
fn ycsb_run_asks(params: &mut BTreeMap<String, String>) -> Result<super::RunAsks, Error> {
    // A property file's own threadcount and target count as if given with -p.
    for (name, value) in props::client_properties(params)? {
        params.entry(name).or_insert(value);
    }
    let mut asks = super::RunAsks::default();
    if let Some(v) = params.remove("threadcount") {
        let n: u32 = v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
            Error::Usage(format!(
                "YCSB property threadcount={v}: give a whole number of clients (or use -c)"
            ))
        })?;
        asks.clients = Some((n, format!("YCSB property threadcount={n}")));
    }
    if let Some(v) = params.remove("target") {
        let rate: f64 = v.parse().ok().filter(|r: &f64| *r > 0.0).ok_or_else(|| {
            Error::Usage(format!(
                "YCSB property target={v}: give operations per second (or use -R)"
            ))
        })?;
        asks.rate = Some((rate, format!("YCSB property target={v}")));
    }
    Ok(asks)
}

/// The facts a load leaves in dbduel_facts.
const FACT_LAYOUT: &str = "ycsb.layout";
const FACT_INSERTED: &str = "ycsb.inserted";
const FACT_ISSUED: &str = "ycsb.issued";
/// Records per loading job: the sessions of a load take jobs until none is left.
const LOAD_JOB: i64 = 50_000;

fn new(opts: &WorkloadOptions) -> Result<Box<dyn Workload>, Error> {
    let props = props::resolve(opts.variant.as_deref(), &opts.params)?;
    Ok(Box::new(Ycsb {
        variant: opts.variant.clone(),
        options: opts.params.clone(),
        props,
        before: Record::default(),
        shared: OnceLock::new(),
    }))
}

/// What the clients of a run share, as YCSB's threads share one CoreWorkload: the insert key
/// counter, the sequential key chooser, the key numbers handed out to inserts and the inserts
/// that succeeded.
pub(crate) struct Shared {
    pub counter: AcknowledgedCounter,
    pub sequential: Sequential,
    pub issued: AtomicU64,
    pub inserted: AtomicU64,
}

/// The inserts of the runs on this data, as dbduel_facts keeps them: every key number handed
/// out (the next run's inserts start after them, so no key is inserted twice) and the inserts
/// acknowledged. The records inserted lie between the two: an insert whose connection was lost
/// before its acknowledgement may or may not have committed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Record {
    pub issued: u64,
    pub inserted: u64,
}

pub struct Ycsb {
    variant: Option<String>,
    options: BTreeMap<String, String>,
    props: Props,
    /// Inserts of earlier runs on this data (dbduel_facts), read by `attach`.
    before: Record,
    shared: OnceLock<Arc<Shared>>,
}

fn sql(engine: &dyn Engine) -> SqlSet {
    SqlSet::load(&crate::sql::files("ycsb"), engine.dialect())
}

/// `{table}`, `{TABLE}`, `{fields}`, `{columns}`... for the SQL of sql/ycsb/.
fn vars(sql: &SqlSet, engine: &dyn Engine, p: &Props) -> Vec<(&'static str, String)> {
    let names = field_names(p.fieldcount);
    let typ = sql.statements("field_type", &[("fieldlength", &p.fieldlength.to_string())]);
    let typ = typ
        .first()
        .map(|t| t.trim().to_string())
        .unwrap_or_default();
    let columns: Vec<String> = names.iter().map(|f| format!("{f} {typ}")).collect();
    vec![
        ("table", p.table.clone()),
        ("TABLE", p.table.to_uppercase()),
        ("fields", names.join(", ")),
        ("columns", columns.join(", ")),
        ("plain", engine.table_options(None)),
    ]
}

fn statements(sql: &SqlSet, name: &str, vars: &[(&'static str, String)]) -> Vec<String> {
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    sql.statements(name, &vars)
}

/// One statement of a section, with its variables.
fn statement(sql: &SqlSet, name: &str, vars: &[(&'static str, String)]) -> String {
    statements(sql, name, vars).join("\n")
}

/// FIELD0..FIELDn, as the JDBC binding names YCSB's fields.
pub(crate) fn field_names(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("FIELD{i}")).collect()
}

/// A field's value: `len` random characters as YCSB's RandomByteIterator makes them, six from
/// each random 32-bit number (bits 0-4, 5-10, 10-16, 15-19, 20-25, 25-31 masked by 31, 63,
/// 95, 31, 63, 95, added to a space), with the quote and the backslash made an `x`.
pub(crate) fn field_value(rng: &mut SmallRng, len: i64) -> String {
    const SIX: [(u32, u32); 6] = [(0, 31), (5, 63), (10, 95), (15, 31), (20, 63), (25, 95)];
    let len = len.max(0) as usize;
    let mut bytes = Vec::with_capacity(len);
    while bytes.len() < len {
        let r: u32 = rng.random();
        for (shift, mask) in SIX.iter().take(len - bytes.len()) {
            let c = b' ' + ((r >> shift) & mask) as u8;
            bytes.push(if c == b'\'' || c == b'\\' { b'x' } else { c });
        }
    }
    String::from_utf8(bytes).expect("ASCII")
}

/// The length of each field value (CoreWorkload.getFieldLengthGenerator).
pub(crate) struct FieldLengths {
    lengths: Lengths,
    min: i64,
    max: i64,
    zipfian: Option<generate::Zipfian>,
}

impl FieldLengths {
    pub fn new(p: &Props) -> FieldLengths {
        FieldLengths {
            lengths: p.lengths,
            min: p.minfieldlength,
            max: p.fieldlength,
            zipfian: (p.lengths == Lengths::Zipfian)
                .then(|| generate::Zipfian::new(p.minfieldlength, p.fieldlength)),
        }
    }
    pub fn next(&mut self, rng: &mut SmallRng) -> i64 {
        match (self.lengths, self.zipfian.as_mut()) {
            (Lengths::Zipfian, Some(z)) => z.next(rng),
            (Lengths::Uniform, _) => rng.random_range(self.min..=self.max),
            _ => self.max,
        }
    }
}

/// The rows of one loading job: key numbers `from..to` of the load's key sequence
/// (CoreWorkload.doInsert with its CounterGenerator from insertstart).
struct Rows<'a> {
    next: i64,
    to: i64,
    p: &'a Props,
    /// The load's record numbers in key order (`key_order`); None: in their own order.
    order: Option<&'a [i64]>,
    rng: SmallRng,
    lengths: FieldLengths,
}

/// Loads up to this many records go in key order (the sort holds every key for a moment,
/// about 50 bytes each); larger ones in the records' own order.
const SORTED_LOAD_MAX: i64 = 4_000_000;

/// The load's record numbers sorted by their keys. YCSB fixes the set of keys, not the order of
/// the load: in key order, each session appends to its own stretch of the key index, where
/// hashed keys in their own order land on random pages of a table larger than the cache
/// (InnoDB took 2.4 times as long; BENCHMARKS.md).
fn key_order(p: &Props) -> Option<Vec<i64>> {
    if p.ordered || p.insertcount > SORTED_LOAD_MAX {
        return None;
    }
    let mut nums: Vec<i64> = (p.insertstart..p.insertstart + p.insertcount).collect();
    nums.sort_by_cached_key(|n| generate::key_name(*n, p.zeropadding, p.ordered));
    Some(nums)
}

impl RowSource for Rows<'_> {
    fn next_row(&mut self, row: &mut Vec<Value>) -> bool {
        if self.next >= self.to {
            return false;
        }
        row.clear();
        let keynum = match self.order {
            Some(order) => order[(self.next - self.p.insertstart) as usize],
            None => self.next,
        };
        row.push(Value::Text(generate::key_name(
            keynum,
            self.p.zeropadding,
            self.p.ordered,
        )));
        for _ in 0..self.p.fieldcount {
            let len = self.lengths.next(&mut self.rng);
            row.push(Value::Text(field_value(&mut self.rng, len)));
        }
        self.next += 1;
        true
    }
    fn total(&self) -> u64 {
        (self.to - self.next).max(0) as u64
    }
}

impl Ycsb {
    /// The properties with the layout recorded by `prepare` in place of the given ones.
    fn with_layout(&self, s: &mut dyn Session) -> Result<Props, Error> {
        let Some(layout) = meta_get(s, FACT_LAYOUT) else {
            return Err(Error::Usage(
                "the database holds no ycsb data: run `dbduel prepare ycsb --dsn ...` first".into(),
            ));
        };
        let mut options = self.options.clone();
        for (k, v) in props::parse_file(&layout.replace(';', "\n"), FACT_LAYOUT)? {
            options.insert(k, v);
        }
        props::resolve(self.variant.as_deref(), &options)
    }

    fn layout(&self) -> String {
        let p = &self.props;
        let lengths = match p.lengths {
            Lengths::Constant => "constant",
            Lengths::Uniform => "uniform",
            Lengths::Zipfian => "zipfian",
        };
        format!(
            "recordcount={};insertstart={};insertcount={};table={};fieldcount={};fieldlength={};minfieldlength={};fieldlengthdistribution={lengths};insertorder={};zeropadding={}",
            p.recordcount,
            p.insertstart,
            p.insertcount,
            p.table,
            p.fieldcount,
            p.fieldlength,
            p.minfieldlength,
            if p.ordered { "ordered" } else { "hashed" },
            p.zeropadding
        )
    }

    /// Load the records on `workers` sessions, each taking the next job of LOAD_JOB keys (in
    /// key order, `key_order`).
    fn load(
        &self,
        engine: &dyn Engine,
        first: &mut dyn Session,
        loader: &Loader,
    ) -> Result<(), Error> {
        let p = &self.props;
        let bar = loader.bar(p.insertcount as u64, &p.table);
        let jobs = (p.insertcount + LOAD_JOB - 1) / LOAD_JOB;
        let columns: Vec<String> = std::iter::once("YCSB_KEY".to_string())
            .chain(field_names(p.fieldcount))
            .collect();
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        let order = key_order(p);
        let job = |s: &mut dyn Session, job: usize| {
            let from = p.insertstart + job as i64 * LOAD_JOB;
            let mut rows = Rows {
                next: from,
                to: (from + LOAD_JOB).min(p.insertstart + p.insertcount),
                p,
                order: order.as_deref(),
                rng: SmallRng::seed_from_u64(from as u64 ^ 0x5943_5342),
                lengths: FieldLengths::new(p),
            };
            loader
                .append(s, &p.table, &columns, &mut rows, &bar)
                .map(drop)
        };
        let workers = if engine.embedded() { 1 } else { 4 };
        let done = in_parallel(engine, first, workers, jobs as usize, &job);
        bar.finish_and_clear();
        done
    }
}

impl Workload for Ycsb {
    fn weighable(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "ycsb"
    }
    fn variant(&self) -> &'static str {
        self.props.base
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
        if self.props.insertcount == 0 {
            return Err(Error::Usage(
                "YCSB property recordcount=0: give the records to load (-p recordcount=N)".into(),
            ));
        }
        let sql = sql(engine);
        let vars = vars(&sql, engine, &self.props);
        start_over(
            s,
            "ycsb.",
            &statements(&sql, "drop", &vars),
            &statements(&sql, "create", &vars),
            "the ycsb table",
        )?;
        let started = std::time::Instant::now();
        self.load(engine, s, loader)?;
        if !loader.quiet {
            let secs = started.elapsed().as_secs_f64();
            errln!(
                "{:>18}: {} records in {secs:.2} s ({:.0} records/s)",
                self.props.table,
                self.props.insertcount,
                self.props.insertcount as f64 / secs.max(1e-9)
            );
        }
        run_all(
            s,
            &statements(&sql, "analyze", &vars),
            "analyzing the ycsb table",
        )?;
        record_fact(s, FACT_LAYOUT, &self.layout())?;
        record_fact(s, FACT_ISSUED, "0")?;
        record_fact(s, FACT_INSERTED, "0")
    }

    fn cleanup(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<(), Error> {
        let sql = sql(engine);
        let props = self.with_layout(s).unwrap_or_else(|_| self.props.clone());
        let vars = vars(&sql, engine, &props);
        clear_out(
            s,
            "ycsb.",
            &statements(&sql, "drop", &vars),
            "the ycsb table",
        )
    }

    fn check(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
        let props = self.with_layout(s)?;
        let record = read_record(s)?;
        client::check(
            &sql(engine),
            &vars(&sql(engine), engine, &props),
            &props,
            record,
            s,
        )
    }

    fn attach(&mut self, _engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<String>, Error> {
        let loaded = self.with_layout(s)?;
        let mut warnings = self.props.notes.clone();
        if self.options.contains_key("recordcount") && loaded.recordcount != self.props.recordcount
        {
            warnings.push(super::ignored(
                format!("recordcount={}", self.props.recordcount),
                format!("{} records as loaded", loaded.recordcount),
            ));
        }
        // The run's properties, over the key space and fields the data was loaded with.
        let mut props = self.props.clone();
        for (mine, theirs) in [
            (&mut props.recordcount, loaded.recordcount),
            (&mut props.insertstart, loaded.insertstart),
            (&mut props.insertcount, loaded.insertcount),
            (&mut props.fieldlength, loaded.fieldlength),
        ] {
            *mine = theirs;
        }
        props.fieldcount = loaded.fieldcount;
        props.table = loaded.table.clone();
        props.ordered = loaded.ordered;
        props.zeropadding = loaded.zeropadding;
        self.props = props;
        self.before = read_record(s)?;
        // Inserts go on after the keys of earlier runs, so that a second run inserts no key
        // twice (YCSB starts its counter at recordcount every time).
        let start = self.props.recordcount + self.before.issued as i64;
        let last = self.props.insertstart + self.props.insertcount - 1;
        let shared = Shared {
            counter: AcknowledgedCounter::new(start),
            sequential: Sequential::new(self.props.insertstart, last),
            issued: AtomicU64::new(0),
            inserted: AtomicU64::new(0),
        };
        let _ = self.shared.set(Arc::new(shared));
        Ok(warnings)
    }

    fn transaction_types(&self) -> Vec<&'static str> {
        client::types(&self.props)
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    fn client(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        _id: u32,
        seed: u64,
    ) -> DbResult<Box<dyn Client>> {
        let shared = self.shared.get().cloned().unwrap_or_else(|| {
            Arc::new(Shared {
                counter: AcknowledgedCounter::new(self.props.recordcount),
                sequential: Sequential::new(
                    self.props.insertstart,
                    self.props.insertstart + self.props.insertcount - 1,
                ),
                issued: AtomicU64::new(0),
                inserted: AtomicU64::new(0),
            })
        });
        let sql = sql(engine);
        client::YcsbClient::new(
            &sql,
            &vars(&sql, engine, &self.props),
            &self.props,
            shared,
            s,
            seed,
        )
        .map(|c| Box::new(c) as Box<dyn Client>)
    }

    fn operations(&self) -> Option<u64> {
        (self.props.operationcount > 0).then_some(self.props.operationcount)
    }

    /// Inserts draw their keys from one acknowledged-insert counter the clients share: in
    /// separate processes, two shards would insert the same keys.
    fn shards_refused(&self) -> Option<String> {
        (self.props.proportions[2] > 0.0).then(|| {
            format!(
                "YCSB inserts (insertproportion {}) take their keys from one counter the clients share, which processes apart cannot: run inserts from one process, or give -p insertproportion=0",
                self.props.proportions[2]
            )
        })
    }

    fn finish(&self, s: &mut dyn Session) -> Result<(), Error> {
        let Some(shared) = self.shared.get() else {
            return Ok(());
        };
        let issued = self.before.issued + shared.issued.load(Ordering::SeqCst);
        let inserted = self.before.inserted + shared.inserted.load(Ordering::SeqCst);
        // The keys handed out first: a record cut off between the two still starts the next
        // run's inserts after every key used.
        record_fact(s, FACT_ISSUED, &issued.to_string())?;
        record_fact(s, FACT_INSERTED, &inserted.to_string())
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (k, v) in
            props::parse_file(&self.layout().replace(';', "\n"), "layout").unwrap_or_default()
        {
            out.insert(k, v);
        }
        let p = &self.props;
        let names = [
            "readproportion",
            "updateproportion",
            "insertproportion",
            "scanproportion",
            "readmodifywriteproportion",
        ];
        for (name, share) in names.iter().zip(p.proportions) {
            out.insert(name.to_string(), share.to_string());
        }
        out.insert(
            "requestdistribution".into(),
            format!("{:?}", p.distribution).to_lowercase(),
        );
        out.insert("readallfields".into(), p.readallfields.to_string());
        out.insert("writeallfields".into(), p.writeallfields.to_string());
        out.insert("operationcount".into(), p.operationcount.to_string());
        if let Some(file) = &p.file {
            out.insert("file".into(), file.clone());
        }
        out
    }
}

/// The record of earlier runs' inserts (data prepared before `ycsb.issued` was kept: as many
/// key numbers handed out as inserts acknowledged).
fn read_record(s: &mut dyn Session) -> Result<Record, Error> {
    let mut fact = |name: &str| -> Result<Option<u64>, Error> {
        let Some(v) = meta_get(s, name) else {
            return Ok(None);
        };
        v.trim()
            .parse()
            .map(Some)
            .map_err(|_| Error::Database(format!("dbduel_facts: {name} is '{v}', not a count")))
    };
    let inserted = fact(FACT_INSERTED)?.unwrap_or(0);
    let issued = fact(FACT_ISSUED)?.unwrap_or(inserted).max(inserted);
    Ok(Record { issued, inserted })
}

/// For client.rs: a statement of a section with its variables.
pub(crate) fn one(sql: &SqlSet, name: &str, vars: &[(&'static str, String)]) -> String {
    statement(sql, name, vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_values_are_made_six_characters_to_a_random_number_as_ycsb_makes_them() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut same = rng.clone();
        let value = field_value(&mut rng, 100);
        assert_eq!(value.len(), 100);
        assert!(
            value
                .bytes()
                .all(|b| (b' '..=0x7f).contains(&b) && b != b'\'' && b != b'\\')
        );
        // The first six from the first number: bits 0-4, 5-10, 10-16, 15-19, 20-25, 25-31.
        let r: u32 = same.random();
        let first: Vec<u8> = [(0, 31), (5, 63), (10, 95), (15, 31), (20, 63), (25, 95)]
            .iter()
            .map(|(shift, mask)| match b' ' + ((r >> shift) & mask) as u8 {
                b'\'' | b'\\' => b'x',
                c => c,
            })
            .collect();
        assert_eq!(&value.as_bytes()[..6], &first[..]);
        assert_eq!(field_value(&mut rng, 0), "");
        assert_eq!(field_value(&mut rng, 7).len(), 7);
    }
}
