//! TPC-C's consistency conditions 1 to 4 (clause 3.3.2), per warehouse and district, and the
//! fixed cardinalities of the population (clause 4.3.3.1: what no transaction changes).

use std::collections::BTreeMap;

use super::txn::num;
use super::{CUSTOMERS, DISTRICTS, ITEMS};
use crate::engine::{Session, Value};
use crate::error::Error;
use crate::sql::SqlSet;
use crate::workload::{CheckItem, db_error};

fn item(name: &str, failures: Vec<String>, ok_detail: String) -> CheckItem {
    let ok = failures.is_empty();
    let detail = if ok {
        ok_detail
    } else {
        let shown: Vec<_> = failures.iter().take(3).cloned().collect();
        format!(
            "{} failing: {}{}",
            failures.len(),
            shown.join("; "),
            if failures.len() > 3 { "; ..." } else { "" }
        )
    };
    CheckItem {
        name: name.to_string(),
        ok,
        detail,
    }
}

fn rows(s: &mut dyn Session, sql: &SqlSet, name: &str) -> Result<Vec<Vec<Value>>, Error> {
    s.query_text(sql.get(name))
        .map_err(|e| db_error(e, &format!("checking tpcc ({name})")))
}

fn int(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| match v {
        Value::Text(t) => t.trim().parse::<f64>().ok().map(|f| f as i64),
        _ => None,
    })
}

/// Money compares to the cent: SQLite keeps decimals as floating point.
fn same_money(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.005
}

pub fn run(sql: &SqlSet, s: &mut dyn Session, warehouses: u32) -> Result<Vec<CheckItem>, Error> {
    let w = i64::from(warehouses);
    let mut items = vec![cardinalities(sql, s, w)?, condition_1(sql, s, w)?];
    let (second, districts) = condition_2(sql, s)?;
    items.push(second);
    items.push(condition_3(sql, s, districts)?);
    items.push(condition_4(sql, s)?);
    Ok(items)
}

/// The row counts no transaction changes, for `w` warehouses.
fn cardinalities(sql: &SqlSet, s: &mut dyn Session, w: i64) -> Result<CheckItem, Error> {
    let counts: Vec<i64> = rows(s, sql, "cardinalities")?
        .first()
        .map(|r| r.iter().map(|v| int(v).unwrap_or(-1)).collect())
        .unwrap_or_default();
    let expected = [
        w,
        w * DISTRICTS,
        w * DISTRICTS * CUSTOMERS,
        ITEMS,
        w * ITEMS,
    ];
    let names = ["warehouse", "district", "customer", "item", "stock"];
    let wrong: Vec<String> = names
        .iter()
        .zip(expected.iter().zip(&counts))
        .filter(|(_, (e, c))| e != c)
        .map(|(n, (e, c))| format!("{n} has {c} rows, expected {e}"))
        .collect();
    Ok(item(
        "cardinalities",
        wrong,
        format!(
            "{w} warehouses, {} districts, {} customers, {ITEMS} items",
            w * DISTRICTS,
            w * DISTRICTS * CUSTOMERS
        ),
    ))
}

fn condition_1(sql: &SqlSet, s: &mut dyn Session, w: i64) -> Result<CheckItem, Error> {
    // Condition 1: W_YTD = sum(D_YTD).
    let mut failures = Vec::new();
    for r in rows(s, sql, "condition_1")? {
        let (ytd, sum) = (num(&r[1]), num(&r[2]));
        if !same_money(ytd, sum) {
            failures.push(format!(
                "warehouse {}: W_YTD {ytd:.2} <> sum(D_YTD) {sum:.2}",
                r[0]
            ));
        }
    }
    Ok(item(
        "1: W_YTD = sum(D_YTD)",
        failures,
        format!("{w} warehouses"),
    ))
}

/// The item, and how many districts there are.
fn condition_2(sql: &SqlSet, s: &mut dyn Session) -> Result<(CheckItem, usize), Error> {
    // Condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID). A district whose orders were
    // all delivered has no NEW-ORDER rows; then only the first equality applies.
    let mut failures = Vec::new();
    let districts = rows(s, sql, "condition_2")?;
    for r in &districts {
        let (next, max_o, max_no) = (int(&r[2]), int(&r[3]), int(&r[4]));
        if next != max_o || (max_no.is_some() && max_no != next) {
            failures.push(format!(
                "district {}/{}: D_NEXT_O_ID - 1 = {}, max(O_ID) = {}, max(NO_O_ID) = {}",
                r[0], r[1], r[2], r[3], r[4]
            ));
        }
    }
    let item2 = item(
        "2: D_NEXT_O_ID-1 = max(O_ID) = max(NO_O_ID)",
        failures,
        format!("{} districts", districts.len()),
    );
    Ok((item2, districts.len()))
}

fn condition_3(sql: &SqlSet, s: &mut dyn Session, districts: usize) -> Result<CheckItem, Error> {
    // Condition 3: max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER.
    let mut failures = Vec::new();
    for r in rows(s, sql, "condition_3")? {
        if int(&r[2]) != int(&r[3]) {
            failures.push(format!(
                "district {}/{}: max - min + 1 = {}, rows = {}",
                r[0], r[1], r[2], r[3]
            ));
        }
    }
    Ok(item(
        "3: NEW-ORDER has no gaps",
        failures,
        format!("{districts} districts"),
    ))
}

fn condition_4(sql: &SqlSet, s: &mut dyn Session) -> Result<CheckItem, Error> {
    // Condition 4: sum(O_OL_CNT) = rows in ORDER-LINE.
    let key = |r: &Vec<Value>| (int(&r[0]).unwrap_or(0), int(&r[1]).unwrap_or(0));
    let lines: BTreeMap<(i64, i64), i64> = rows(s, sql, "condition_4_lines")?
        .iter()
        .map(|r| (key(r), int(&r[2]).unwrap_or(-1)))
        .collect();
    let orders: BTreeMap<(i64, i64), i64> = rows(s, sql, "condition_4_orders")?
        .iter()
        .map(|r| (key(r), int(&r[2]).unwrap_or(-1)))
        .collect();
    let mut failures = Vec::new();
    for k in orders.keys().chain(lines.keys()) {
        let (o, l) = (
            orders.get(k).copied().unwrap_or(0),
            lines.get(k).copied().unwrap_or(0),
        );
        if o != l
            && !failures
                .iter()
                .any(|f: &String| f.starts_with(&format!("district {}/{}:", k.0, k.1)))
        {
            failures.push(format!(
                "district {}/{}: sum(O_OL_CNT) = {o}, order lines = {l}",
                k.0, k.1
            ));
        }
    }
    Ok(item(
        "4: sum(O_OL_CNT) = ORDER-LINE rows",
        failures,
        format!("{} order lines", lines.values().sum::<i64>()),
    ))
}
