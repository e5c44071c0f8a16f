//! SmallBank (Cahill, Röhm and Fekete, SIGMOD 2008; TODS 34(4) 2009, section 6.1): three
//! tables of a bank's customers, their savings and checking balances, six short transactions
//! (txn.rs), the standard test of what serializable isolation costs; and the checks that
//! make its anomalies visible (check.rs): money neither made nor lost, savings never below
//! zero. The SQL lives in sql/smallbank/.
//!
//! Scale 1 is 100,000 accounts (BenchBase's scale factor 1 is 1,000,000: dbduel's scale 10).
//! Every run records what its committed transactions added to or took from the bank (its
//! ledger, in dbduel_facts) so that `check` can tell money that vanished from money that was
//! deposited or withdrawn.

mod check;
mod txn;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::engine::{DbResult, Engine, Session, Value};
use crate::error::Error;
use crate::sql::SqlSet;

use super::options::{self, Kind, Opt, Phase, Table};
use super::{
    CheckItem, Client, Loader, Workload, WorkloadEntry, WorkloadOptions, clear_out, db_error,
    prepare_sections, record_fact, record_ledger, set_serializable, take_held,
};

pub const ENTRY: WorkloadEntry = WorkloadEntry {
    name: "smallbank",
    about: "SmallBank: six banking transactions over savings and checking; scale 1 = 100,000 customers",
    variants: &["smallbank"],
    // An account, its two balances and their indexes: about 330 bytes (PostgreSQL).
    bytes_per_scale: 32 << 20,
    headline: &[],
    figures: &[],
    options: &OPTIONS,
    run_asks: super::no_run_asks,
    scale_follows_clients: false,
    new,
};

/// Customers per unit of scale.
const ACCOUNTS: i64 = 100_000;
/// Where `prepare` records the total of every balance it loaded, in cents.
const FACT_LOADED: &str = "smallbank.loaded_total";
/// The prefix of each run's ledger: "delta in_doubt_cents in_doubt_commits".
const FACT_LEDGER: &str = "smallbank.ledger.";
/// Set once a run at the engine's default isolation has run on the data.
const FACT_WEAKER: &str = "smallbank.default_isolation_ran";

/// SmallBank's options.
pub const OPTIONS: Table = Table {
    heading: "SmallBank options",
    who: "smallbank",
    opts: &[
        Opt {
            name: "isolation",
            short: None,
            help: "Transaction isolation: serializable (as BenchBase's SmallBank runs), or default (the engine's own, where lost updates show in `check`)",
            kind: Kind::Choice(&["serializable", "default"]),
            phase: Phase::Run,
            default: "serializable",
            value_name: "LEVEL",
        },
        Opt {
            name: "hotspot",
            short: None,
            help: "Customers in a hot set that --hotspot-share of the transactions pick from (0: every customer alike, as BenchBase; Alomari et al.: 100)",
            kind: Kind::Number,
            phase: Phase::Run,
            default: "0",
            value_name: "N",
        },
        Opt {
            name: "hotspot_share",
            short: None,
            help: "Percent of the transactions whose customers come from the hot set",
            kind: Kind::Count,
            phase: Phase::Run,
            default: "90",
            value_name: "PERCENT",
        },
    ],
};

/// The transaction types, in the order of their index, and their weights (BenchBase's
/// SmallBank configuration: 15, 15, 15, 25, 15, 15).
pub const TYPES: [&str; 6] = [
    "amalgamate",
    "balance",
    "deposit_checking",
    "send_payment",
    "transact_savings",
    "write_check",
];
const WEIGHTS: [u32; 6] = [15, 15, 15, 25, 15, 15];

/// What the run's committed transactions did to the bank's money, shared by its clients.
#[derive(Default)]
pub struct Ledger {
    /// Cents deposited minus cents withdrawn, by committed transactions.
    delta: AtomicI64,
    /// Cents moved by transactions whose COMMIT failed in a way that leaves its outcome
    /// unknown (a lost connection): the total may be off by up to this much.
    in_doubt: AtomicI64,
    in_doubt_commits: AtomicU64,
}

impl Ledger {
    fn committed(&self, cents: i64) {
        self.delta.fetch_add(cents, Ordering::Relaxed);
    }
    fn doubt(&self, cents: i64) {
        self.in_doubt.fetch_add(cents.abs(), Ordering::Relaxed);
        self.in_doubt_commits.fetch_add(1, Ordering::Relaxed);
    }
}

/// Who picks the customers: everyone alike, or a hot set most of the time.
#[derive(Debug, Clone, Copy)]
pub struct Pick {
    pub accounts: i64,
    pub hotspot: i64,
    pub hot_percent: u32,
}

pub struct SmallBank {
    scale: u32,
    serializable: bool,
    hotspot: u64,
    hot_percent: u32,
    ledger: Arc<Ledger>,
}

fn new(o: &WorkloadOptions) -> Result<Box<dyn Workload>, Error> {
    let g = options::parse(&OPTIONS, OPTIONS.who, &o.params)?;
    if o.fillfactor.is_some() {
        return Err(Error::Usage("--fillfactor applies to tpcb only".into()));
    }
    let hot_percent = g.number("hotspot_share").unwrap_or(90);
    if hot_percent > 100 {
        return Err(Error::Usage(format!(
            "--hotspot-share {hot_percent} is out of range: use 1 to 100"
        )));
    }
    let hotspot = g.number("hotspot").unwrap_or(0);
    if hotspot == 1 {
        return Err(Error::Usage(
            "--hotspot 1: give 0 (no hot set) or at least 2 (Amalgamate and SendPayment take two customers)".into(),
        ));
    }
    Ok(Box::new(SmallBank {
        scale: o.scale,
        serializable: g.text("isolation").unwrap_or("serializable") == "serializable",
        hotspot,
        hot_percent: hot_percent as u32,
        ledger: Arc::new(Ledger::default()),
    }))
}

fn sql(engine: &dyn Engine) -> SqlSet {
    SqlSet::load(&crate::sql::files("smallbank"), engine.dialect())
}

/// A customer's name: their id, zero-padded to the column's 64 characters (as BenchBase).
pub fn name_of(custid: i64) -> String {
    format!("{custid:064}")
}

/// A balance drawn from the customer's id (SplitMix64), uniform in 10,000 to 50,000 dollars
/// (BenchBase's MIN_BALANCE and MAX_BALANCE), in cents; `salt` tells savings from checking.
fn opening_balance(custid: i64, salt: u64) -> i64 {
    let mut z = (custid as u64 ^ salt).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (10_000 + (z % 40_001) as i64) * 100
}

const SAVINGS_SALT: u64 = 0x5a;
const CHECKING_SALT: u64 = 0xc4;

impl SmallBank {
    fn accounts(&self) -> i64 {
        ACCOUNTS * self.scale.max(1) as i64
    }

    fn load(&self, s: &mut dyn Session, loader: &Loader) -> Result<i64, Error> {
        let total = self.accounts();
        let rows = |make: fn(i64, &mut Vec<Value>)| super::rows::generated(total, make);
        loader.load(
            s,
            "accounts",
            &["custid", "name"],
            &mut rows(|i, r| r.extend([Value::Int(i), Value::Text(name_of(i))])),
        )?;
        loader.load(
            s,
            "savings",
            &["custid", "bal"],
            &mut rows(|i, r| {
                r.extend([Value::Int(i), Value::Int(opening_balance(i, SAVINGS_SALT))])
            }),
        )?;
        loader.load(
            s,
            "checking",
            &["custid", "bal"],
            &mut rows(|i, r| {
                r.extend([Value::Int(i), Value::Int(opening_balance(i, CHECKING_SALT))])
            }),
        )?;
        Ok((0..total)
            .map(|i| opening_balance(i, SAVINGS_SALT) + opening_balance(i, CHECKING_SALT))
            .sum())
    }
}

impl Workload for SmallBank {
    fn weighable(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "smallbank"
    }
    fn variant(&self) -> &'static str {
        "smallbank"
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
        let loaded = prepare_sections(engine, s, &sql(engine), "smallbank", |s| {
            self.load(s, loader)
        })?;
        record_fact(s, FACT_LOADED, &loaded.to_string())
    }

    fn cleanup(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<(), Error> {
        let drop = sql(engine).statements("drop", &[]);
        clear_out(s, "smallbank.", &drop, "the smallbank tables")
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
        if self.hotspot as i64 >= self.accounts() {
            return Err(Error::Usage(format!(
                "--hotspot {} is not smaller than the {} customers: give fewer",
                self.hotspot,
                self.accounts()
            )));
        }
        // The run's own session takes the clients' level too: the level every result records
        // (engine.isolation) is read from it.
        if self.serializable {
            set_serializable(&sql, s).map_err(|e| db_error(e, "setting the isolation level"))?;
        } else {
            record_fact(s, FACT_WEAKER, "1")?;
        }
        Ok(warnings)
    }

    /// Serialization failures and deadlocks are SmallBank's point at serializable: retried,
    /// counted.
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
        let pick = Pick {
            accounts: self.accounts(),
            hotspot: self.hotspot as i64,
            hot_percent: self.hot_percent,
        };
        txn::SmallBankClient::new(&sql, s, pick, self.ledger.clone(), seed)
            .map(|c| Box::new(c) as Box<dyn Client>)
    }

    fn settings(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        out.insert("customers".into(), self.accounts().to_string());
        out.insert(
            "isolation".into(),
            if self.serializable {
                "serializable"
            } else {
                "default"
            }
            .into(),
        );
        out.insert("hotspot".into(), self.hotspot.to_string());
        if self.hotspot > 0 {
            out.insert("hotspot_share".into(), self.hot_percent.to_string());
        }
        out
    }

    /// The run's ledger, under a name of its own: shards of one run each add theirs.
    fn finish(&self, s: &mut dyn Session) -> Result<(), Error> {
        let l = &self.ledger;
        let (delta, doubt, commits) = (
            l.delta.load(Ordering::SeqCst),
            l.in_doubt.load(Ordering::SeqCst),
            l.in_doubt_commits.load(Ordering::SeqCst),
        );
        if delta == 0 && commits == 0 {
            return Ok(());
        }
        record_ledger(s, FACT_LEDGER, &format!("{delta} {doubt} {commits}"))
    }
}

/// The scale: the customers (ids 0 to n-1) over 100,000.
fn read_scale(sql: &SqlSet, s: &mut dyn Session) -> Result<u32, Error> {
    super::rows::held_scale(
        s,
        sql.get("customers"),
        ACCOUNTS,
        "reading the smallbank scale",
        "the database holds no smallbank data: run `dbduel prepare smallbank --dsn ...` first",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_balances_are_whole_dollars_in_range() {
        for i in 0..10_000 {
            for salt in [SAVINGS_SALT, CHECKING_SALT] {
                let b = opening_balance(i, salt);
                assert!((1_000_000..=5_000_000).contains(&b), "{b}");
                assert_eq!(b % 100, 0);
            }
        }
        assert_ne!(
            opening_balance(7, SAVINGS_SALT),
            opening_balance(7, CHECKING_SALT)
        );
    }

    #[test]
    fn names_fill_the_column() {
        assert_eq!(name_of(42).len(), 64);
        assert!(name_of(42).ends_with("00042"));
    }
}
