//! TPC-H's population (clause 4.2): the eight tables' rows as dbgen makes them, from the `tpchgen`
//! crate (LINEITEM, ORDERS and PARTSUPP put from the generated fields into reused values, the small
//! tables through their `.tbl` line), streamed through each engine's bulk path
//! (`Session::bulk_load` in `Load::Append` mode) by parallel sessions taking jobs (a table, or one
//! part of a large one) until none is left. The session that loads a table's last part then runs
//! that table's statements of the dialect's `table keys` section (`by_table` in mod.rs; MariaDB's
//! indexes) while the others go on loading; the `keys` section runs once all are loaded. And the
//! new orders of refresh function 1 (clause 2.5.2), keyed in dbgen's unused sparse range.

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use tpchgen::generators::{
    CustomerGenerator, LineItem, LineItemGenerator, NationGenerator, Order, OrderGenerator,
    PartGenerator, PartSupp, PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

use crate::engine::{Engine, RowSource, Session, Value};
use crate::error::Error;
use crate::workload::{Loader, in_parallel};

/// One table: its columns in dbgen's order, and which of them hold integers (the others go
/// as text: decimals, dates and strings, which every engine converts to the column's type).
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [&'static str],
    pub ints: &'static [usize],
}

pub const TABLES: [Table; 8] = [
    Table {
        name: "region",
        columns: &["r_regionkey", "r_name", "r_comment"],
        ints: &[0],
    },
    Table {
        name: "nation",
        columns: &["n_nationkey", "n_name", "n_regionkey", "n_comment"],
        ints: &[0, 2],
    },
    Table {
        name: "part",
        columns: &[
            "p_partkey",
            "p_name",
            "p_mfgr",
            "p_brand",
            "p_type",
            "p_size",
            "p_container",
            "p_retailprice",
            "p_comment",
        ],
        ints: &[0, 5],
    },
    Table {
        name: "supplier",
        columns: &[
            "s_suppkey",
            "s_name",
            "s_address",
            "s_nationkey",
            "s_phone",
            "s_acctbal",
            "s_comment",
        ],
        ints: &[0, 3],
    },
    Table {
        name: "partsupp",
        columns: &[
            "ps_partkey",
            "ps_suppkey",
            "ps_availqty",
            "ps_supplycost",
            "ps_comment",
        ],
        ints: &[0, 1, 2],
    },
    Table {
        name: "customer",
        columns: &[
            "c_custkey",
            "c_name",
            "c_address",
            "c_nationkey",
            "c_phone",
            "c_acctbal",
            "c_mktsegment",
            "c_comment",
        ],
        ints: &[0, 3],
    },
    Table {
        name: "orders",
        columns: &[
            "o_orderkey",
            "o_custkey",
            "o_orderstatus",
            "o_totalprice",
            "o_orderdate",
            "o_orderpriority",
            "o_clerk",
            "o_shippriority",
            "o_comment",
        ],
        ints: &[0, 1, 7],
    },
    Table {
        name: "lineitem",
        columns: &[
            "l_orderkey",
            "l_partkey",
            "l_suppkey",
            "l_linenumber",
            "l_quantity",
            "l_extendedprice",
            "l_discount",
            "l_tax",
            "l_returnflag",
            "l_linestatus",
            "l_shipdate",
            "l_commitdate",
            "l_receiptdate",
            "l_shipinstruct",
            "l_shipmode",
            "l_comment",
        ],
        ints: &[0, 1, 2, 3],
    },
];

pub const ORDERS: usize = 6;
pub const LINEITEM: usize = 7;

/// Rows per job of the large tables: a part of dbgen's output (tpchgen's `part` of `parts`).
const JOB_ROWS: f64 = 100_000.0;

/// Clause 4.2.5.1's cardinalities per scale factor (LINEITEM: about four lines an order).
pub fn rows_at(table: usize, sf: f64) -> u64 {
    let per_sf = [
        0.0,
        0.0,
        200_000.0,
        10_000.0,
        800_000.0,
        150_000.0,
        1_500_000.0,
        6_000_000.0,
    ];
    match table {
        0 => 5,
        1 => 25,
        t => (per_sf[t] * sf).round() as u64,
    }
}

/// One small table part's rows: dbgen's `.tbl` line of each ("v1|v2|...|"), written into one
/// reused line and split into the row's reused values (nothing is allocated per row or per
/// field once the first row is made).
struct TblRows<I> {
    items: I,
    table: &'static Table,
    line: String,
}

impl<T: std::fmt::Display, I: Iterator<Item = T>> RowSource for TblRows<I> {
    fn next_row(&mut self, row: &mut Vec<Value>) -> bool {
        let Some(item) = self.items.next() else {
            return false;
        };
        self.line.clear();
        // Writing into a String cannot fail.
        let _ = write!(self.line, "{item}");
        values(self.table, &self.line, row);
        true
    }
    fn total(&self) -> u64 {
        0
    }
}

/// A large table's generated row put straight into a row's reused values, as `values` would
/// make them from its `.tbl` line (the same integers and texts), without writing the line and
/// splitting it again: LINEITEM, ORDERS and PARTSUPP are 95% of the rows, and formatting
/// their lines was a third of the client's CPU in a load.
trait Fields {
    fn put(&self, row: &mut Vec<Value>);
}

fn int(row: &mut Vec<Value>, i: usize, v: i64) {
    set(row, i, Value::Int(v));
}

/// A text value, reusing the text the row held there.
fn text(row: &mut Vec<Value>, i: usize, v: &str) {
    match row.get_mut(i) {
        Some(Value::Text(t)) => {
            t.clear();
            t.push_str(v);
        }
        _ => set(row, i, Value::Text(v.to_string())),
    }
}

/// A value written as its `.tbl` text (a decimal, a date, a status), reusing the row's text.
fn shown(row: &mut Vec<Value>, i: usize, v: impl std::fmt::Display) {
    match row.get_mut(i) {
        Some(Value::Text(t)) => {
            t.clear();
            // Writing into a String cannot fail.
            let _ = write!(t, "{v}");
        }
        _ => set(row, i, Value::Text(v.to_string())),
    }
}

impl Fields for LineItem<'_> {
    fn put(&self, row: &mut Vec<Value>) {
        int(row, 0, self.l_orderkey);
        int(row, 1, self.l_partkey);
        int(row, 2, self.l_suppkey);
        int(row, 3, self.l_linenumber.into());
        shown(row, 4, self.l_quantity);
        shown(row, 5, self.l_extendedprice);
        shown(row, 6, self.l_discount);
        shown(row, 7, self.l_tax);
        text(row, 8, self.l_returnflag);
        text(row, 9, self.l_linestatus);
        shown(row, 10, self.l_shipdate);
        shown(row, 11, self.l_commitdate);
        shown(row, 12, self.l_receiptdate);
        text(row, 13, self.l_shipinstruct);
        text(row, 14, self.l_shipmode);
        text(row, 15, self.l_comment);
        row.truncate(16);
    }
}

impl Fields for Order<'_> {
    fn put(&self, row: &mut Vec<Value>) {
        int(row, 0, self.o_orderkey);
        int(row, 1, self.o_custkey);
        shown(row, 2, self.o_orderstatus);
        shown(row, 3, self.o_totalprice);
        shown(row, 4, self.o_orderdate);
        text(row, 5, self.o_orderpriority);
        shown(row, 6, self.o_clerk);
        int(row, 7, self.o_shippriority.into());
        text(row, 8, self.o_comment);
        row.truncate(9);
    }
}

impl Fields for PartSupp<'_> {
    fn put(&self, row: &mut Vec<Value>) {
        int(row, 0, self.ps_partkey);
        int(row, 1, self.ps_suppkey);
        int(row, 2, self.ps_availqty.into());
        shown(row, 3, self.ps_supplycost);
        text(row, 4, self.ps_comment);
        row.truncate(5);
    }
}

/// One part of a large table, its rows put straight into the values (`Fields`).
struct FieldRows<I>(I);

impl<T: Fields, I: Iterator<Item = T>> RowSource for FieldRows<I> {
    fn next_row(&mut self, row: &mut Vec<Value>) -> bool {
        match self.0.next() {
            Some(item) => {
                item.put(row);
                true
            }
            None => false,
        }
    }
    fn total(&self) -> u64 {
        0
    }
}

/// The rows of part `part` of `parts` of a table, from tpchgen's generator of it.
fn rows(table: usize, sf: f64, part: i32, parts: i32) -> Box<dyn RowSource> {
    fn of<T: std::fmt::Display, I: Iterator<Item = T> + 'static>(
        table: usize,
        items: I,
    ) -> Box<dyn RowSource> {
        Box::new(TblRows {
            items,
            table: &TABLES[table],
            line: String::new(),
        })
    }
    match table {
        0 => of(table, RegionGenerator::new(sf, part, parts).into_iter()),
        1 => of(table, NationGenerator::new(sf, part, parts).into_iter()),
        2 => of(table, PartGenerator::new(sf, part, parts).into_iter()),
        3 => of(table, SupplierGenerator::new(sf, part, parts).into_iter()),
        4 => Box::new(FieldRows(
            PartSuppGenerator::new(sf, part, parts).into_iter(),
        )),
        5 => of(table, CustomerGenerator::new(sf, part, parts).into_iter()),
        6 => Box::new(FieldRows(OrderGenerator::new(sf, part, parts).into_iter())),
        _ => Box::new(FieldRows(
            LineItemGenerator::new(sf, part, parts).into_iter(),
        )),
    }
}

/// The values of one `.tbl` line into `row`, whose text values are reused: integers in the
/// table's integer columns, text in the others.
pub fn values(table: &Table, line: &str, row: &mut Vec<Value>) {
    let mut n = 0;
    for (i, field) in line.split('|').take(table.columns.len()).enumerate() {
        n = i + 1;
        if table.ints.contains(&i)
            && let Ok(v) = field.parse::<i64>()
        {
            int(row, i, v);
            continue;
        }
        text(row, i, field);
    }
    row.truncate(n);
}

fn set(row: &mut Vec<Value>, i: usize, value: Value) {
    if i < row.len() {
        row[i] = value;
    } else {
        row.push(value);
    }
}

/// The loading jobs: (table, part, parts), the largest first.
fn jobs(sf: f64) -> Vec<(usize, i32, i32)> {
    let mut out = Vec::new();
    for table in (0..TABLES.len()).rev() {
        // LINEITEM is split as ORDERS is (its rows follow the orders').
        let rows = rows_at(if table == LINEITEM { ORDERS } else { table }, sf) as f64;
        let parts = if table < 2 {
            1
        } else {
            (rows / (JOB_ROWS / 4.0)).ceil().max(1.0) as i32
        };
        out.extend((1..=parts).map(|p| (table, p, parts)));
    }
    out
}

/// What `load` did: the rows, and how long they took to load (the table steps that ran while
/// other tables were still loading are in this time; those after the last row are not).
pub struct Loaded {
    pub rows: u64,
    pub rows_secs: f64,
}

/// Load the eight tables on `workers` sessions (the first is `first`), each taking the next
/// job until none is left. The session that loads a table's last part then runs `then` for
/// that table (its index in `TABLES`), while the other sessions go on loading: a table's own
/// keys and indexes are built as soon as its rows are in, next to the other tables' loads.
pub fn load(
    engine: &dyn Engine,
    first: &mut dyn Session,
    loader: &Loader,
    sf: f64,
    workers: usize,
    then: &(dyn Fn(&mut dyn Session, usize) -> Result<(), Error> + Sync),
) -> Result<Loaded, Error> {
    let jobs = jobs(sf);
    let total: u64 = (0..TABLES.len()).map(|t| rows_at(t, sf)).sum();
    let bar = loader.bar(total, "tpch");
    let started = Instant::now();
    let loaded = AtomicU64::new(0);
    let left: Vec<AtomicUsize> = (0..TABLES.len())
        .map(|t| AtomicUsize::new(jobs.iter().filter(|j| j.0 == t).count()))
        .collect();
    let jobs_left = AtomicUsize::new(jobs.len());
    let rows_done: Mutex<Option<Instant>> = Mutex::new(None);
    let job = |s: &mut dyn Session, n: usize| {
        let (table, part, parts) = jobs[n];
        let t = &TABLES[table];
        let n = loader.append(
            s,
            t.name,
            t.columns,
            rows(table, sf, part, parts).as_mut(),
            &bar,
        )?;
        loaded.fetch_add(n, Ordering::Relaxed);
        if jobs_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            *rows_done.lock().expect("time lock") = Some(Instant::now());
            bar.set_message("tpch: keys");
        }
        if left[table].fetch_sub(1, Ordering::AcqRel) == 1 {
            then(s, table)?;
        }
        Ok(())
    };
    let done = in_parallel(engine, first, workers, jobs.len(), &job);
    bar.finish_and_clear();
    done?;
    let ended = rows_done.into_inner().expect("time lock");
    Ok(Loaded {
        rows: loaded.into_inner(),
        rows_secs: ended
            .unwrap_or_else(Instant::now)
            .duration_since(started)
            .as_secs_f64(),
    })
}

/// Orders per refresh function: 0.1% of ORDERS (clause 2.5.2.1: SF * 1,500).
pub fn refresh_orders(sf: f64) -> usize {
    ((sf * 1500.0).round() as usize).max(1)
}

/// dbgen uses the first 8 keys of every 32 (clause 4.2.3's sparse keys); a refresh pair's new
/// orders take the next 8, so that they never meet a loaded order.
pub const REFRESH_KEY_OFFSET: i64 = 8;

/// The orders and line items refresh function 1 of pair `pair` inserts: dbgen's orders
/// `pair * n .. (pair + 1) * n` (n = `refresh_orders`), their keys moved into the unused
/// sparse range, with their lines.
pub fn refresh_rows(sf: f64, pair: usize) -> (Vec<Vec<Value>>, Vec<Vec<Value>>) {
    let n = refresh_orders(sf);
    let skip = pair * n;
    let orders: Vec<Vec<Value>> = OrderGenerator::new(sf, 1, 1)
        .into_iter()
        .skip(skip)
        .take(n)
        .map(|o| moved(&TABLES[ORDERS], &o.to_string()))
        .collect();
    let (Some(low), Some(high)) = (orders.first(), orders.last()) else {
        return (orders, Vec::new());
    };
    let key = |row: &Vec<Value>| row[0].as_i64().unwrap_or(0) - REFRESH_KEY_OFFSET;
    let (low, high) = (key(low), key(high));
    let lines = LineItemGenerator::new(sf, 1, 1)
        .into_iter()
        .skip_while(|l| l.l_orderkey < low)
        .take_while(|l| l.l_orderkey <= high)
        .map(|l| moved(&TABLES[LINEITEM], &l.to_string()))
        .collect();
    (orders, lines)
}

/// A row of ORDERS or LINEITEM with its order key moved by REFRESH_KEY_OFFSET.
fn moved(table: &Table, line: &str) -> Vec<Value> {
    let mut row = Vec::new();
    values(table, line, &mut row);
    if let Some(k) = row[0].as_i64() {
        row[0] = Value::Int(k + REFRESH_KEY_OFFSET);
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_orders_take_keys_no_loaded_order_has() {
        let (orders, lines) = refresh_rows(0.01, 1);
        assert_eq!(orders.len(), 15);
        assert!(lines.len() >= 15, "{} lines", lines.len());
        for row in orders.iter().chain(&lines) {
            let key = row[0].as_i64().expect("an order key");
            assert!((8..16).contains(&(key % 32)), "{key}");
        }
        let keys: Vec<i64> = orders.iter().filter_map(|r| r[0].as_i64()).collect();
        assert!(
            lines
                .iter()
                .all(|l| keys.contains(&l[0].as_i64().unwrap_or(0)))
        );
    }

    #[test]
    fn a_reused_row_holds_the_new_line_only() {
        let fresh = |table: usize, line: &str| {
            let mut row = Vec::new();
            values(&TABLES[table], line, &mut row);
            row
        };
        let mut row = fresh(
            LINEITEM,
            "1|2|3|4|17|21168.23|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|egular courts above the|",
        );
        values(&TABLES[1], "7|GERMANY|3|l platelets|", &mut row);
        assert_eq!(row, fresh(1, "7|GERMANY|3|l platelets|"));
        // An integer column that does not hold an integer keeps its text.
        values(&TABLES[1], "x|PERU|1|c|", &mut row);
        assert_eq!(row[0], Value::Text("x".into()));
        assert_eq!(row.len(), 4);
    }

    #[test]
    fn a_large_tables_values_are_those_of_its_tbl_line() {
        fn same<T: Fields + std::fmt::Display>(table: usize, items: impl Iterator<Item = T>) {
            let (mut direct, mut split) = (Vec::new(), Vec::new());
            let mut n = 0;
            for item in items.take(3000) {
                item.put(&mut direct);
                values(&TABLES[table], &item.to_string(), &mut split);
                assert_eq!(direct, split, "{} row {n}", TABLES[table].name);
                n += 1;
            }
            assert_eq!(n, 3000);
        }
        // 3000 rows of the last part at SF 1 hold every kind of date, status and comment.
        same(LINEITEM, LineItemGenerator::new(1.0, 60, 60).into_iter());
        same(ORDERS, OrderGenerator::new(1.0, 60, 60).into_iter());
        same(4, PartSuppGenerator::new(1.0, 16, 16).into_iter());
    }

    #[test]
    fn every_part_of_every_table_is_a_job() {
        let jobs = jobs(1.0);
        assert_eq!(jobs.iter().filter(|j| j.0 == LINEITEM).count(), 60);
        assert_eq!(jobs.iter().filter(|j| j.0 == 0).count(), 1);
    }
}
