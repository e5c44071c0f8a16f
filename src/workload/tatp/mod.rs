//! TATP, the Telecom Application Transaction Processing benchmark (IBM/Nokia, "TATP Benchmark
//! Description" v1.0, 2009): a mobile operator's home location register in four tables, seven
//! short transactions, 80% reads (txn.rs), the classic test of a database's lightest path;
//! the population (section 2, here, drawn from each subscriber's id so that `check` can count
//! what was loaded) and the checks after a run (check.rs). The SQL lives in sql/tatp/.
//!
//! Scale 1 is 100,000 subscribers (the spec's smallest population; BenchBase's scale factor
//! 1). Where BenchBase departs from the spec, the spec wins: keys drawn non-uniformly
//! (section 3, NURand; `--keys uniform` draws them as BenchBase does), every subscriber its own
//! set of access types, 85% of facilities active, call forwardings starting at 0, 8 or 16,
//! subscribers loaded in random order, and UPDATE_SUBSCRIBER_DATA rolled back when the
//! facility it updates is missing (BenchBase's test is inverted). Every run records the call
//! forwardings its committed transactions inserted and deleted (its ledger, in dbduel_facts),
//! so that `check` finds a lost or doubled one.

mod check;
mod txn;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::{DbResult, Engine, RowSource, Session, Value};
use crate::error::Error;
use crate::sql::SqlSet;

use super::options::{self, Kind, Opt, Phase, Table};
use super::{
    CheckItem, Client, Counts, Loader, Workload, WorkloadEntry, WorkloadOptions, clear_out,
    db_error, prepare_sections, record_fact, record_ledger, set_serializable, take_held,
};

pub const ENTRY: WorkloadEntry = WorkloadEntry {
    name: "tatp",
    about: "TATP: seven short telecom transactions, 80% reads; scale 1 = 100,000 subscribers",
    variants: &["tatp"],
    // A subscriber with its 2.5 access rows, 2.5 facilities, 3.75 forwardings and indexes:
    // about 600 bytes (PostgreSQL).
    bytes_per_scale: 60 << 20,
    headline: &["mqth"],
    figures: &[(
        "mqth",
        "Mean qualified throughput: transactions a second that committed, those that ended in one of the spec's acceptable failures left out (TATP 4)",
    )],
    options: &OPTIONS,
    run_asks: super::no_run_asks,
    scale_follows_clients: false,
    new,
};

/// Subscribers per unit of scale.
const SUBSCRIBERS: i64 = 100_000;
/// Where `prepare` records the rows it loaded: "access_info special_facility call_forwarding".
const FACT_LOADED: &str = "tatp.loaded";
/// The prefix of each run's ledger: "inserted deleted in_doubt_commits".
const FACT_LEDGER: &str = "tatp.ledger.";

pub const OPTIONS: Table = Table {
    heading: "TATP options",
    who: "tatp",
    opts: &[
        Opt {
            name: "keys",
            short: None,
            help: "How subscribers are picked: nurand (the spec's non-uniform keys, its default) or uniform (as BenchBase)",
            kind: Kind::Choice(&["nurand", "uniform"]),
            phase: Phase::Run,
            default: "nurand",
            value_name: "DIST",
        },
        Opt {
            name: "isolation",
            short: None,
            help: "Transaction isolation: default (the engine's own; the spec recommends read committed) or serializable (as BenchBase runs it)",
            kind: Kind::Choice(&["default", "serializable"]),
            phase: Phase::Run,
            default: "default",
            value_name: "LEVEL",
        },
    ],
};

/// The transaction types, in the order of their index, and the spec's mix (section 3).
pub const TYPES: [&str; 7] = [
    "get_subscriber_data",
    "get_new_destination",
    "get_access_data",
    "update_subscriber_data",
    "update_location",
    "insert_call_forwarding",
    "delete_call_forwarding",
];
pub const WEIGHTS: [f64; 7] = [35.0, 10.0, 35.0, 2.0, 14.0, 2.0, 2.0];

/// The call forwardings the run's committed transactions inserted and deleted.
#[derive(Default)]
pub struct Ledger {
    inserted: AtomicI64,
    deleted: AtomicI64,
    /// Commits of an insert or a delete whose outcome is unknown (the connection went).
    in_doubt: AtomicI64,
}

impl Ledger {
    fn committed(&self, inserted: i64, deleted: i64) {
        self.inserted.fetch_add(inserted, Ordering::Relaxed);
        self.deleted.fetch_add(deleted, Ordering::Relaxed);
    }
    fn doubt(&self) {
        self.in_doubt.fetch_add(1, Ordering::Relaxed);
    }
}

/// How subscribers are picked: the spec's NURand(A, 1, N) or uniform over 1..=N.
#[derive(Debug, Clone, Copy)]
pub struct Keys {
    pub subscribers: i64,
    pub uniform: bool,
}

impl Keys {
    /// The spec's A for NURand: 65535 up to a million subscribers, 1048575 up to ten
    /// million, 2097151 above.
    pub fn a(&self) -> i64 {
        match self.subscribers {
            n if n <= 1_000_000 => 65_535,
            n if n <= 10_000_000 => 1_048_575,
            _ => 2_097_151,
        }
    }

    /// A subscriber id in 1..=N: NURand(A, 1, N) = ((random(0, A) | random(1, N)) % N) + 1.
    pub fn draw(&self, rng: &mut SmallRng) -> i64 {
        let n = self.subscribers;
        if self.uniform {
            return rng.random_range(1..=n);
        }
        ((rng.random_range(0..=self.a()) | rng.random_range(1..=n)) % n) + 1
    }
}

pub struct Tatp {
    scale: u32,
    uniform: bool,
    serializable: bool,
    ledger: Arc<Ledger>,
}

fn new(o: &WorkloadOptions) -> Result<Box<dyn Workload>, Error> {
    let g = options::parse(&OPTIONS, OPTIONS.who, &o.params)?;
    if o.fillfactor.is_some() {
        return Err(Error::Usage("--fillfactor applies to tpcb only".into()));
    }
    Ok(Box::new(Tatp {
        scale: o.scale,
        uniform: g.text("keys").unwrap_or("nurand") == "uniform",
        serializable: g.text("isolation").unwrap_or("default") == "serializable",
        ledger: Arc::new(Ledger::default()),
    }))
}

fn sql(engine: &dyn Engine) -> SqlSet {
    SqlSet::load(&crate::sql::files("tatp"), engine.dialect())
}

/// A subscriber's number: its id as 15 digits, zero-padded (section 2).
pub fn number_of(s_id: i64) -> String {
    format!("{s_id:015}")
}

/// SplitMix64 of a subscriber's id and a salt: the draws of its population, the same at
/// every load.
fn mix(s_id: i64, salt: u64) -> u64 {
    let mut z = (s_id as u64 ^ salt.rotate_left(32)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const ACCESS_SALT: u64 = 0xa1;
const FACILITY_SALT: u64 = 0xf5;
const FORWARD_SALT: u64 = 0xcf;
const VALUES_SALT: u64 = 0x5b;

/// `k` distinct values of `all` drawn by the bits of `h` (a shuffle), in ascending order.
fn some_of<const N: usize>(mut all: [i64; N], k: usize, h: u64) -> Vec<i64> {
    let mut bits = h;
    for i in (1..N).rev() {
        let j = (bits % (i as u64 + 1)) as usize;
        bits /= i as u64 + 1;
        all.swap(i, j);
    }
    let mut out = all[..k].to_vec();
    out.sort_unstable();
    out
}

/// 1 to 4 distinct types from 1..=4, each count equally likely (section 2: ACCESS_INFO's
/// ai_type, SPECIAL_FACILITY's sf_type).
fn types_of(h: u64) -> Vec<i64> {
    some_of([1, 2, 3, 4], 1 + (h % 4) as usize, h >> 2)
}

/// A subscriber's access types.
pub fn access_types(s_id: i64) -> Vec<i64> {
    types_of(mix(s_id, ACCESS_SALT))
}

/// A subscriber's special facility types.
pub fn facility_types(s_id: i64) -> Vec<i64> {
    types_of(mix(s_id, FACILITY_SALT))
}

/// The start times of a facility's call forwardings: 0 to 3 of 0, 8 and 16, each count
/// equally likely (section 2).
pub fn forwarding_starts(s_id: i64, sf_type: i64) -> Vec<i64> {
    let h = mix(s_id * 8 + sf_type, FORWARD_SALT);
    some_of([0, 8, 16], (h % 4) as usize, h >> 2)
}

/// `len` capital letters (section 2: data3, data4, data_b).
fn letters(rng: &mut SmallRng, len: usize) -> String {
    (0..len)
        .map(|_| char::from(b'A' + rng.random_range(0..26u8)))
        .collect()
}

/// Every row a subscriber brings, table by table: its SUBSCRIBER row, its ACCESS_INFO,
/// SPECIAL_FACILITY and CALL_FORWARDING rows.
#[derive(Default)]
pub struct Population {
    pub subscriber: Vec<Value>,
    pub access: Vec<Vec<Value>>,
    pub facility: Vec<Vec<Value>>,
    pub forwarding: Vec<Vec<Value>>,
}

/// The rows of subscriber `s_id`, as section 2 draws them: bits 0-1, hex digits 0-15, bytes
/// 0-255, locations 1 to 2^31-1 (the spec's 2^32-1 does not fit a signed INTEGER, as in
/// BenchBase); 85% of facilities active; a forwarding ends 1 to 8 hours after it starts, its
/// number a subscriber's.
pub fn population(s_id: i64, subscribers: i64) -> Population {
    let mut rng = SmallRng::seed_from_u64(mix(s_id, VALUES_SALT));
    let mut p = Population::default();
    p.subscriber.push(Value::Int(s_id));
    p.subscriber.push(Value::Text(number_of(s_id)));
    for range in [1, 15, 255] {
        for _ in 0..10 {
            p.subscriber.push(Value::Int(rng.random_range(0..=range)));
        }
    }
    for _ in 0..2 {
        p.subscriber
            .push(Value::Int(rng.random_range(1..=i64::from(i32::MAX))));
    }
    for ai_type in access_types(s_id) {
        p.access.push(vec![
            Value::Int(s_id),
            Value::Int(ai_type),
            Value::Int(rng.random_range(0..=255)),
            Value::Int(rng.random_range(0..=255)),
            Value::Text(letters(&mut rng, 3)),
            Value::Text(letters(&mut rng, 5)),
        ]);
    }
    for sf_type in facility_types(s_id) {
        let active = i64::from(rng.random_range(0..100) < 85);
        p.facility.push(vec![
            Value::Int(s_id),
            Value::Int(sf_type),
            Value::Int(active),
            Value::Int(rng.random_range(0..=255)),
            Value::Int(rng.random_range(0..=255)),
            Value::Text(letters(&mut rng, 5)),
        ]);
        for start in forwarding_starts(s_id, sf_type) {
            p.forwarding.push(vec![
                Value::Int(s_id),
                Value::Int(sf_type),
                Value::Int(start),
                Value::Int(start + rng.random_range(1..=8)),
                Value::Text(number_of(rng.random_range(1..=subscribers))),
            ]);
        }
    }
    p
}

/// The rows of ACCESS_INFO, SPECIAL_FACILITY and CALL_FORWARDING the population of
/// `subscribers` holds.
pub fn loaded_counts(subscribers: i64) -> [i64; 3] {
    let mut out = [0; 3];
    for s_id in 1..=subscribers {
        out[0] += access_types(s_id).len() as i64;
        let facilities = facility_types(s_id);
        out[1] += facilities.len() as i64;
        out[2] += facilities
            .iter()
            .map(|&t| forwarding_starts(s_id, t).len() as i64)
            .sum::<i64>();
    }
    out
}

/// The order subscribers are loaded in: section 2 picks them at random; row i is subscriber
/// (i x P mod N) + 1, P a prime that does not divide N, each id once.
pub fn load_order(i: i64, subscribers: i64) -> i64 {
    const P: i64 = 1_000_003;
    let p = if subscribers % P == 0 { 999_983 } else { P };
    ((i as i128 * p as i128) % subscribers as i128) as i64 + 1
}

/// One table's rows, subscriber by subscriber in the load order.
struct Rows {
    next: i64,
    subscribers: i64,
    total: u64,
    table: fn(Population) -> Vec<Vec<Value>>,
    pending: Vec<Vec<Value>>,
}

impl RowSource for Rows {
    fn next_row(&mut self, row: &mut Vec<Value>) -> bool {
        while self.pending.is_empty() {
            if self.next >= self.subscribers {
                return false;
            }
            let s_id = load_order(self.next, self.subscribers);
            self.next += 1;
            self.pending = (self.table)(population(s_id, self.subscribers));
            self.pending.reverse();
        }
        *row = self.pending.pop().unwrap_or_default();
        true
    }
    fn total(&self) -> u64 {
        self.total
    }
}

impl Tatp {
    fn subscribers(&self) -> i64 {
        SUBSCRIBERS * self.scale.max(1) as i64
    }

    fn load(&self, s: &mut dyn Session, loader: &Loader) -> Result<[i64; 3], Error> {
        let n = self.subscribers();
        let counts = loaded_counts(n);
        let rows = |total: i64, table: fn(Population) -> Vec<Vec<Value>>| Rows {
            next: 0,
            subscribers: n,
            total: total as u64,
            table,
            pending: Vec::new(),
        };
        let mut columns: Vec<String> = vec!["s_id".into(), "sub_nbr".into()];
        for prefix in ["bit", "hex", "byte2"] {
            columns.extend((1..=10).map(|i| format!("{prefix}_{i}")));
        }
        columns.extend(["msc_location".into(), "vlr_location".into()]);
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        loader.load(
            s,
            "subscriber",
            &columns,
            &mut rows(n, |p| vec![p.subscriber]),
        )?;
        loader.load(
            s,
            "access_info",
            &["s_id", "ai_type", "data1", "data2", "data3", "data4"],
            &mut rows(counts[0], |p| p.access),
        )?;
        loader.load(
            s,
            "special_facility",
            &[
                "s_id",
                "sf_type",
                "is_active",
                "error_cntrl",
                "data_a",
                "data_b",
            ],
            &mut rows(counts[1], |p| p.facility),
        )?;
        loader.load(
            s,
            "call_forwarding",
            &["s_id", "sf_type", "start_time", "end_time", "numberx"],
            &mut rows(counts[2], |p| p.forwarding),
        )?;
        Ok(counts)
    }
}

impl Workload for Tatp {
    fn weighable(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "tatp"
    }
    fn variant(&self) -> &'static str {
        "tatp"
    }
    fn scale(&self) -> Option<u32> {
        Some(self.scale)
    }

    fn prepare(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        loader: &Loader,
    ) -> Result<(), Error> {
        let [access, facility, forwarding] =
            prepare_sections(engine, s, &sql(engine), "tatp", |s| self.load(s, loader))?;
        record_fact(s, FACT_LOADED, &format!("{access} {facility} {forwarding}"))
    }

    fn cleanup(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<(), Error> {
        let drop = sql(engine).statements("drop", &[]);
        clear_out(s, "tatp.", &drop, "the tatp tables")
    }

    fn check(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
        check::run(&sql(engine), s)
    }

    fn attach(&mut self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<String>, Error> {
        let sql = sql(engine);
        let scale = read_scale(&sql, s)?;
        let warnings = Vec::from_iter(take_held(
            &mut self.scale,
            scale,
            "--scale",
            format!("scale {scale}"),
        ));
        // The run's own session takes the clients' level too: the level every result records
        // (engine.isolation) is read from it.
        if self.serializable {
            set_serializable(&sql, s).map_err(|e| db_error(e, "setting the isolation level"))?;
        }
        Ok(warnings)
    }

    /// Serialization failures and deadlocks (serializable, or hot subscribers under NURand)
    /// are retried, counted.
    fn default_max_tries(&self) -> u32 {
        100
    }

    fn transaction_types(&self) -> Vec<&'static str> {
        TYPES.to_vec()
    }

    fn open_session(&self, engine: &dyn Engine, s: &mut dyn Session) -> DbResult<()> {
        if self.serializable {
            set_serializable(&sql(engine), s)?;
        }
        Ok(())
    }

    fn client(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        _client_id: u32,
        seed: u64,
    ) -> DbResult<Box<dyn Client>> {
        let sql = sql(engine);
        self.open_session(engine, s)?;
        let keys = Keys {
            subscribers: self.subscribers(),
            uniform: self.uniform,
        };
        txn::TatpClient::new(&sql, s, keys, self.ledger.clone(), seed)
            .map(|c| Box::new(c) as Box<dyn Client>)
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        out.insert("subscribers".into(), self.subscribers().to_string());
        out.insert(
            "keys".into(),
            if self.uniform { "uniform" } else { "nurand" }.into(),
        );
        out.insert(
            "isolation".into(),
            if self.serializable {
                "serializable"
            } else {
                "default"
            }
            .into(),
        );
        out
    }

    /// MQTh: the transactions that committed (those rolled back for one of the spec's
    /// acceptable failures left out), a second.
    fn metrics(&self, counts: &Counts) -> BTreeMap<String, f64> {
        let qualified: u64 = counts
            .types
            .iter()
            .map(|t| t.transactions - t.rollbacks)
            .sum();
        BTreeMap::from([(
            "mqth".to_string(),
            qualified as f64 / counts.duration_s.max(1e-9),
        )])
    }

    /// The run's ledger, under a name of its own: shards of one run each add theirs.
    fn finish(&self, s: &mut dyn Session) -> Result<(), Error> {
        let l = &self.ledger;
        let (inserted, deleted, doubt) = (
            l.inserted.load(Ordering::SeqCst),
            l.deleted.load(Ordering::SeqCst),
            l.in_doubt.load(Ordering::SeqCst),
        );
        if inserted == 0 && deleted == 0 && doubt == 0 {
            return Ok(());
        }
        record_ledger(s, FACT_LEDGER, &format!("{inserted} {deleted} {doubt}"))
    }
}

/// The scale: the subscribers (ids 1 to N) over 100,000.
fn read_scale(sql: &SqlSet, s: &mut dyn Session) -> Result<u32, Error> {
    super::rows::held_scale(
        s,
        sql.get("subscribers"),
        SUBSCRIBERS,
        "reading the tatp scale",
        "the database holds no tatp data: run `dbduel prepare tatp --dsn ...` first",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Section 2's shares, on the population of scale 1: ACCESS_INFO and SPECIAL_FACILITY
    /// 2.5 rows a subscriber, CALL_FORWARDING 1.5 a facility, 85% of facilities active; every
    /// id loaded once.
    #[test]
    fn the_population_follows_section_2() {
        let n = SUBSCRIBERS;
        let [access, facility, forwarding] = loaded_counts(n);
        let near = |got: f64, want: f64| (got - want).abs() / want < 0.01;
        assert!(near(access as f64 / n as f64, 2.5), "{access}");
        assert!(near(facility as f64 / n as f64, 2.5), "{facility}");
        assert!(
            near(forwarding as f64 / facility as f64, 1.5),
            "{forwarding}"
        );
        let mut active = 0;
        for s_id in 1..=n {
            let p = population(s_id, n);
            assert_eq!(p.subscriber.len(), 34);
            assert_eq!(p.subscriber[1], Value::Text(number_of(s_id)));
            active += p.facility.iter().filter(|r| r[2] == Value::Int(1)).count();
            for f in &p.forwarding {
                let (start, end) = (f[2].as_i64().unwrap(), f[3].as_i64().unwrap());
                assert!([0, 8, 16].contains(&start) && (1..=8).contains(&(end - start)));
            }
        }
        assert!(near(active as f64 / facility as f64, 0.85), "{active}");
        let mut seen = vec![false; n as usize + 1];
        for i in 0..n {
            let id = load_order(i, n);
            assert!(!seen[id as usize], "{id} twice");
            seen[id as usize] = true;
        }
        assert_eq!(number_of(123), "000000000000123");
    }

    #[test]
    fn types_are_distinct_and_every_count_comes_up() {
        let mut sizes = [0; 5];
        for s_id in 1..4000 {
            let t = access_types(s_id);
            sizes[t.len()] += 1;
            assert!(t.windows(2).all(|w| w[0] < w[1]) && t.iter().all(|x| (1..=4).contains(x)));
            let starts = forwarding_starts(s_id, 2);
            assert!(starts.len() <= 3 && starts.windows(2).all(|w| w[0] < w[1]));
        }
        assert!(
            sizes[1..].iter().all(|&c| (900..1100).contains(&c)),
            "{sizes:?}"
        );
    }

    /// NURand(A, 1, N) stays in range and is skewed: the most drawn 10% of the ids take far
    /// more than 10% of the draws; uniform keys do not.
    #[test]
    fn nurand_keys_are_skewed_and_in_range() {
        let keys = |uniform| Keys {
            subscribers: 100_000,
            uniform,
        };
        assert_eq!(keys(false).a(), 65_535);
        let share_of_top_tenth = |k: Keys| {
            let mut rng = SmallRng::seed_from_u64(9);
            let mut hits = vec![0u32; k.subscribers as usize + 1];
            for _ in 0..400_000 {
                let id = k.draw(&mut rng);
                assert!((1..=k.subscribers).contains(&id));
                hits[id as usize] += 1;
            }
            hits.sort_unstable_by(|a, b| b.cmp(a));
            let top: u32 = hits[..hits.len() / 10].iter().sum();
            top as f64 / 400_000.0
        };
        assert!(share_of_top_tenth(keys(false)) > 0.25);
        assert!(share_of_top_tenth(keys(true)) < 0.2);
        let big = Keys {
            subscribers: 5_000_000,
            uniform: false,
        };
        assert_eq!(big.a(), 1_048_575);
    }
}
