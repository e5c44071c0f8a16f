//! One YCSB client: CoreWorkload.doTransaction's operation chooser and key chooser, and the five
//! operations (doTransactionRead, Update, Insert, Scan, ReadModifyWrite) as the JDBC binding runs
//! them, one statement each, autocommitted. Also the checks of `check` (row count, keys, field
//! lengths).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::generate::{self, Exponential, Hotspot, ScrambledZipfian, SkewedLatest, Zipfian};
use super::props::{Distribution, Lengths, Props};
use super::{FieldLengths, Record, Shared, field_names, field_value, one};
use crate::engine::{DbError, DbResult, ErrorClass, Session, StmtId, Value};
use crate::error::Error;
use crate::sql::SqlSet;
use crate::workload::{CheckItem, Client, db_error};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

const OPS: [(&str, Op); 5] = [
    ("READ", Op::Read),
    ("UPDATE", Op::Update),
    ("INSERT", Op::Insert),
    ("SCAN", Op::Scan),
    ("READ-MODIFY-WRITE", Op::ReadModifyWrite),
];

/// The operations with a proportion above 0, in CoreWorkload.createOperationGenerator's
/// order, with their proportions: the transaction types of a run.
pub fn types(p: &Props) -> Vec<(&'static str, f64)> {
    OPS.iter()
        .zip(p.proportions)
        .filter(|(_, w)| *w > 0.0)
        .map(|((name, _), w)| (*name, w))
        .collect()
}

/// CoreWorkload's keychooser.
enum Chooser {
    Uniform(i64, i64),
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
    Hotspot(Hotspot),
    Sequential,
    Exponential(Exponential),
}

/// The statements of one kind: all fields, then one per field.
struct Stmts {
    all: StmtId,
    one: Vec<StmtId>,
}

pub struct YcsbClient {
    rng: SmallRng,
    p: Props,
    shared: Arc<Shared>,
    ops: Vec<(Op, f64)>,
    /// The proportions as the properties give them (a phase's mix replaces them in `ops`).
    own: Vec<f64>,
    chooser: Chooser,
    scan_zipfian: Option<Zipfian>,
    lengths: FieldLengths,
    read: Stmts,
    update: Stmts,
    scan: Stmts,
    insert: StmtId,
    /// The drawn operation and its key number.
    op: Op,
    keynum: i64,
}

fn prepare_set(
    s: &mut dyn Session,
    sql: &SqlSet,
    name: &str,
    vars: &[(&'static str, String)],
    fields: &[String],
) -> DbResult<Stmts> {
    let with = |set: &str, assign: &str| {
        let mut v = vars.to_vec();
        v.retain(|(k, _)| *k != "fields");
        v.push(("fields", set.to_string()));
        v.push(("assignments", assign.to_string()));
        one(sql, name, &v)
    };
    let assignments: Vec<String> = fields.iter().map(|f| format!("{f} = ?")).collect();
    let all = s.prepare(&with(&fields.join(", "), &assignments.join(", ")))?;
    let mut each = Vec::new();
    for f in fields {
        each.push(s.prepare(&with(f, &format!("{f} = ?")))?);
    }
    Ok(Stmts { all, one: each })
}

impl YcsbClient {
    pub fn new(
        sql: &SqlSet,
        vars: &[(&'static str, String)],
        p: &Props,
        shared: Arc<Shared>,
        s: &mut dyn Session,
        seed: u64,
    ) -> DbResult<YcsbClient> {
        let fields = field_names(p.fieldcount);
        let placeholders = vec!["?"; p.fieldcount].join(", ");
        let mut insert_vars = vars.to_vec();
        insert_vars.push(("placeholders", placeholders));
        let insert = s.prepare(&one(sql, "insert", &insert_vars))?;
        Ok(YcsbClient {
            rng: SmallRng::seed_from_u64(seed),
            chooser: chooser(p, &shared),
            scan_zipfian: p
                .scan_zipfian
                .then(|| Zipfian::new(p.minscanlength, p.maxscanlength)),
            lengths: FieldLengths::new(p),
            own: types(p).into_iter().map(|(_, w)| w).collect(),
            ops: types(p)
                .into_iter()
                .map(|(name, w)| {
                    (
                        OPS.iter()
                            .find(|(n, _)| *n == name)
                            .map(|(_, o)| *o)
                            .unwrap_or(Op::Read),
                        w,
                    )
                })
                .collect(),
            read: prepare_set(s, sql, "read", vars, &fields)?,
            update: prepare_set(s, sql, "update", vars, &fields)?,
            scan: prepare_set(s, sql, "scan", vars, &fields)?,
            insert,
            p: p.clone(),
            shared,
            op: Op::Read,
            keynum: 0,
        })
    }

    /// CoreWorkload.nextKeynum: a key already acknowledged, drawn by the request distribution.
    fn next_keynum(&mut self) -> i64 {
        let rng = &mut self.rng;
        loop {
            let last = self.shared.counter.last();
            let keynum = match &mut self.chooser {
                Chooser::Exponential(e) => last - e.next(rng),
                Chooser::Uniform(lo, hi) => rng.random_range(*lo..=*hi),
                Chooser::Zipfian(z) => z.next(rng),
                Chooser::Latest(l) => l.next(last, rng),
                Chooser::Hotspot(h) => h.next(rng),
                Chooser::Sequential => self.shared.sequential.next(),
            };
            if (0..=last).contains(&keynum) {
                return keynum;
            }
        }
    }

    fn key(&self, keynum: i64) -> Value {
        Value::Text(generate::key_name(
            keynum,
            self.p.zeropadding,
            self.p.ordered,
        ))
    }

    /// A read of all fields or of one (readallfields); a missing record is an error, as the
    /// JDBC binding's NOT_FOUND.
    fn read(&mut self, s: &mut dyn Session, key: &Value) -> DbResult<()> {
        let stmt = if self.p.readallfields {
            self.read.all
        } else {
            self.read.one[self.rng.random_range(0..self.p.fieldcount)]
        };
        match s.exec(stmt, std::slice::from_ref(key))? {
            1 => Ok(()),
            n => Err(missed(format!(
                "READ of {key} found {n} records instead of 1"
            ))),
        }
    }

    /// An update of all fields or of one (writeallfields), with new random values.
    fn update(&mut self, s: &mut dyn Session, key: Value) -> DbResult<()> {
        let mut params = Vec::with_capacity(self.p.fieldcount + 1);
        let stmt = if self.p.writeallfields {
            for _ in 0..self.p.fieldcount {
                params.push(self.value());
            }
            self.update.all
        } else {
            params.push(self.value());
            self.update.one[self.rng.random_range(0..self.p.fieldcount)]
        };
        params.push(key.clone());
        match s.exec(stmt, &params)? {
            1 => Ok(()),
            n => Err(missed(format!(
                "UPDATE of {key} matched {n} records instead of 1"
            ))),
        }
    }

    fn value(&mut self) -> Value {
        let len = self.lengths.next(&mut self.rng);
        Value::Text(field_value(&mut self.rng, len))
    }

    /// doTransactionInsert: the next key number of the shared counter, acknowledged whether
    /// the insert succeeded or not, so that the readers' limit moves on.
    fn insert(&mut self, s: &mut dyn Session) -> DbResult<()> {
        let keynum = self.shared.counter.next();
        self.shared.issued.fetch_add(1, Ordering::SeqCst);
        let mut params = vec![self.key(keynum)];
        for _ in 0..self.p.fieldcount {
            params.push(self.value());
        }
        let done = s.exec(self.insert, &params);
        if done.is_ok() {
            self.shared.inserted.fetch_add(1, Ordering::SeqCst);
        }
        self.shared
            .counter
            .acknowledge(keynum)
            .map_err(|m| DbError::new(ErrorClass::Other("ycsb".into()), m))?;
        done.map(drop)
    }

    /// doTransactionScan: from a drawn key, a drawn number of records in key order.
    fn scan(&mut self, s: &mut dyn Session, key: Value) -> DbResult<()> {
        let len = match self.scan_zipfian.as_mut() {
            Some(z) => z.next(&mut self.rng),
            None => self
                .rng
                .random_range(self.p.minscanlength..=self.p.maxscanlength),
        };
        let stmt = if self.p.readallfields {
            self.scan.all
        } else {
            self.scan.one[self.rng.random_range(0..self.p.fieldcount)]
        };
        s.exec(stmt, &[key, Value::Int(len)]).map(drop)
    }
}

fn missed(message: String) -> DbError {
    DbError::new(ErrorClass::MissedRow, message)
}

fn chooser(p: &Props, shared: &Shared) -> Chooser {
    let (start, count) = (p.insertstart, p.insertcount);
    match p.distribution {
        Distribution::Uniform => Chooser::Uniform(start, start + count - 1),
        Distribution::Exponential => Chooser::Exponential(Exponential::new(
            p.exponential_percentile,
            p.recordcount as f64 * p.exponential_frac,
        )),
        Distribution::Sequential => Chooser::Sequential,
        Distribution::Zipfian => {
            // CoreWorkload: room for the keys the run's inserts are expected to add ("2 is
            // fudge factor").
            let new_keys = (p.operationcount as f64 * p.proportions[2] * 2.0) as i64;
            Chooser::Zipfian(ScrambledZipfian::new(start, start + count + new_keys))
        }
        Distribution::Latest => Chooser::Latest(SkewedLatest::new(shared.counter.last())),
        Distribution::Hotspot => Chooser::Hotspot(Hotspot::new(
            start,
            start + count - 1,
            p.hotspotdatafraction,
            p.hotspotopnfraction,
        )),
    }
}

impl Client for YcsbClient {
    fn weigh(&mut self, weights: Option<&[f64]>) {
        let weights = weights.unwrap_or(&self.own);
        for ((_, w), new) in self.ops.iter_mut().zip(weights) {
            *w = *new;
        }
    }

    /// DiscreteGenerator over the proportions, then the key of a read, update, scan or
    /// read-modify-write.
    fn next(&mut self) -> usize {
        let total: f64 = self.ops.iter().map(|(_, w)| w).sum();
        let mut u = self.rng.random::<f64>();
        let mut index = self.ops.len() - 1;
        for (i, (_, w)) in self.ops.iter().enumerate() {
            if u < w / total {
                index = i;
                break;
            }
            u -= w / total;
        }
        self.op = self.ops[index].0;
        if self.op != Op::Insert {
            self.keynum = self.next_keynum();
        }
        index
    }

    fn execute(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let key = self.key(self.keynum);
        match self.op {
            Op::Read => self.read(s, &key).map(|_| 1),
            Op::Update => self.update(s, key).map(|_| 1),
            Op::Insert => self.insert(s).map(|_| 1),
            Op::Scan => self.scan(s, key).map(|_| 1),
            Op::ReadModifyWrite => {
                self.read(s, &key)?;
                self.update(s, key).map(|_| 2)
            }
        }
    }
}

fn count(s: &mut dyn Session, sql: &str, doing: &str) -> Result<i64, Error> {
    let rows = s.query_text(sql).map_err(|e| db_error(e, doing))?;
    Ok(rows.first().and_then(|r| r[0].as_i64()).unwrap_or(-1))
}

/// A key as CoreWorkload.buildKeyName makes it: "user", then at least `zeropadding` digits
/// (an ordered key's number at most the last one handed out).
fn well_formed(key: &str, p: &Props, last: i64) -> bool {
    let Some(digits) = key.strip_prefix("user") else {
        return false;
    };
    let number = digits.parse::<i64>();
    digits.len() >= p.zeropadding
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (!p.ordered || number.is_ok_and(|n| n <= last))
}

/// Rows = records loaded + inserts acknowledged, plus at most the inserts whose
/// acknowledgement a lost connection cut off; every key well-formed; every field of the length
/// the field length distribution allows.
pub fn check(
    sql: &SqlSet,
    vars: &[(&'static str, String)],
    p: &Props,
    record: Record,
    s: &mut dyn Session,
) -> Result<Vec<CheckItem>, Error> {
    let rows = count(s, &one(sql, "count", vars), "counting the ycsb records")?;
    let inserted = record.inserted;
    let expected = p.insertcount + inserted as i64;
    let in_doubt = record.issued - inserted;
    let mut items = vec![CheckItem::new(
        "row count",
        (expected..=expected + in_doubt as i64).contains(&rows),
        match in_doubt {
            0 => format!(
                "{rows} records; {} loaded + {inserted} inserted = {expected}",
                p.insertcount
            ),
            n => format!(
                "{rows} records; {} loaded + {inserted} inserted = {expected}, and up to {n} more inserts that failed or whose acknowledgement was cut off",
                p.insertcount
            ),
        },
    )];
    let keys = s
        .query_text(&one(sql, "keys", vars))
        .map_err(|e| db_error(e, "reading the ycsb keys"))?;
    let last = p.recordcount + record.issued as i64;
    let bad: Vec<String> = keys
        .iter()
        .map(|r| r[0].to_string())
        .filter(|k| !well_formed(k, p, last))
        .collect();
    items.push(CheckItem::new(
        "keys",
        bad.is_empty(),
        match bad.first() {
            None => format!("{} keys of the form user<digits>", keys.len()),
            Some(k) => format!("{} malformed keys, the first '{k}'", bad.len()),
        },
    ));
    let length = one(sql, "length_of", vars);
    let (min, max) = match p.lengths {
        Lengths::Constant => (p.fieldlength, p.fieldlength),
        _ => (p.minfieldlength, p.fieldlength),
    };
    let wrong: Vec<String> = field_names(p.fieldcount)
        .iter()
        .map(|f| format!("{f} IS NULL OR {length}({f}) < {min} OR {length}({f}) > {max}"))
        .collect();
    let query = format!("{} WHERE {}", one(sql, "count", vars), wrong.join(" OR "));
    let wrong = count(s, &query, "measuring the ycsb fields")?;
    items.push(CheckItem::new(
        "field lengths",
        wrong == 0,
        format!("{wrong} records with a field outside {min}..{max} characters"),
    ));
    Ok(items)
}
