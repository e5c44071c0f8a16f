//! `check tpch`: the table cardinalities of clause 4.2.5.1, and the 22 queries run with their
//! validation parameters, each answer compared with the reference answers (answers/sf*.tbl.gz,
//! compiled in compressed, from an independent engine: scripts/tpch-answers.py) under clause
//! 2.1.3.5's rules.

use std::io::Read as _;

use crate::engine::{Session, Value};
use crate::error::Error;
use crate::sql::SqlSet;
use crate::workload::{CheckItem, db_error};

use super::client::query_text;
use super::load::{TABLES, rows_at};
use super::params::{Source, params};

/// The reference answers compiled in, gzip-compressed (SF 1's are 789 KB as text, 87 KB
/// packed), by scale factor, with the file each comes from.
const ANSWERS: [(f64, &str, &[u8]); 2] = [
    (
        0.01,
        "answers/sf0.01.tbl.gz",
        include_bytes!("answers/sf0.01.tbl.gz"),
    ),
    (
        1.0,
        "answers/sf1.tbl.gz",
        include_bytes!("answers/sf1.tbl.gz"),
    ),
];

/// The reference answers at scale factor `sf`, unpacked: one `Qn|cell|cell...` line per row;
/// None when none are compiled in for it.
fn answers(sf: f64) -> Option<Result<String, Error>> {
    let (_, name, packed) = ANSWERS.iter().find(|(at, _, _)| (at - sf).abs() < 1e-9)?;
    let mut text = String::new();
    let unpacked = flate2::read::GzDecoder::new(*packed).read_to_string(&mut text);
    Some(unpacked.map(|_| text).map_err(|source| Error::Io {
        doing: "unpack the compiled-in TPC-H answers",
        path: name.into(),
        source,
    }))
}

/// Each query's columns, as clause 2.4 names them; a `%` marks an average or a ratio, which
/// clause 2.1.3.5 lets differ by 1%.
const COLUMNS: [&[&str]; 22] = [
    &[
        "l_returnflag",
        "l_linestatus",
        "sum_qty",
        "sum_base_price",
        "sum_disc_price",
        "sum_charge",
        "%avg_qty",
        "%avg_price",
        "%avg_disc",
        "count_order",
    ],
    &[
        "s_acctbal",
        "s_name",
        "n_name",
        "p_partkey",
        "p_mfgr",
        "s_address",
        "s_phone",
        "s_comment",
    ],
    &["l_orderkey", "revenue", "o_orderdate", "o_shippriority"],
    &["o_orderpriority", "order_count"],
    &["n_name", "revenue"],
    &["revenue"],
    &["supp_nation", "cust_nation", "l_year", "revenue"],
    &["o_year", "%mkt_share"],
    &["nation", "o_year", "sum_profit"],
    &[
        "c_custkey",
        "c_name",
        "revenue",
        "c_acctbal",
        "n_name",
        "c_address",
        "c_phone",
        "c_comment",
    ],
    &["ps_partkey", "value"],
    &["l_shipmode", "high_line_count", "low_line_count"],
    &["c_count", "custdist"],
    &["%promo_revenue"],
    &[
        "s_suppkey",
        "s_name",
        "s_address",
        "s_phone",
        "total_revenue",
    ],
    &["p_brand", "p_type", "p_size", "supplier_cnt"],
    &["avg_yearly"],
    &[
        "c_name",
        "c_custkey",
        "o_orderkey",
        "o_orderdate",
        "o_totalprice",
        "sum(l_quantity)",
    ],
    &["revenue"],
    &["s_name", "s_address"],
    &["s_name", "numwait"],
    &["cntrycode", "numcust", "totacctbal"],
];

/// The answers of query `q` in a reference file: one row of text cells per line.
fn expected(file: &str, q: u8) -> Vec<Vec<&str>> {
    let tag = format!("Q{q}");
    file.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('|').collect::<Vec<_>>())
        .filter(|cells| cells.first() == Some(&tag.as_str()))
        .map(|cells| cells[1..].to_vec())
        .collect()
}

/// Whether a returned cell is the expected one under clause 2.1.3.5: integers exactly, other
/// numbers to the cent (rounded to the nearest 1/100th), averages and ratios within 1%,
/// text without its padding, a date whatever time of day the engine adds to it.
pub fn cell_matches(expected: &str, got: &Value, ratio: bool) -> bool {
    let text = got.to_string();
    let got_text = text.trim_end();
    if got_text == expected {
        return true;
    }
    if let (Ok(e), Ok(g)) = (expected.parse::<f64>(), got_text.parse::<f64>()) {
        let cents = ((e * 100.0).round() - (g * 100.0).round()).abs() <= 1.0;
        let integral = !expected.contains('.');
        return match (integral, ratio) {
            (true, _) => (e - g).abs() < 1e-6,
            (_, true) => cents || (e - g).abs() <= 0.01 * e.abs(),
            _ => cents,
        };
    }
    let is_date = expected.len() == 10 && expected.as_bytes().get(4) == Some(&b'-');
    is_date && got_text.starts_with(expected) && got_text[10..].chars().all(|c| " T0:.".contains(c))
}

/// The first difference between a query's rows and the reference, named by row and column.
pub fn difference(q: u8, expected: &[Vec<&str>], got: &[Vec<Value>]) -> Option<String> {
    if expected.len() != got.len() {
        return Some(format!("{} rows, expected {}", got.len(), expected.len()));
    }
    let columns = COLUMNS[usize::from(q) - 1];
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        for (c, name) in columns.iter().enumerate() {
            let (Some(want), Some(have)) = (e.get(c), g.get(c)) else {
                return Some(format!(
                    "row {}: {} columns, expected {}",
                    i + 1,
                    g.len(),
                    e.len()
                ));
            };
            if !cell_matches(want, have, name.starts_with('%')) {
                return Some(format!(
                    "row {}, column {} ({}): got {have}, expected {want}",
                    i + 1,
                    c + 1,
                    name.trim_start_matches('%')
                ));
            }
        }
    }
    None
}

/// Clause 4.2.5.1's cardinalities of the seven tables whose size the scale factor fixes.
fn cardinalities(sql: &SqlSet, s: &mut dyn Session, sf: f64) -> Result<CheckItem, Error> {
    let text = sql.statements("count", &[]).join("\n");
    let rows = s
        .query_text(&text)
        .map_err(|e| db_error(e, "counting the tpch tables"))?;
    let counts: Vec<i64> = rows
        .first()
        .map(|r| r.iter().map(|v| v.as_i64().unwrap_or(-1)).collect())
        .unwrap_or_default();
    let mut wrong = Vec::new();
    for (t, table) in TABLES.iter().enumerate().take(7) {
        let have = counts.get(t).copied().unwrap_or(-1);
        if have != rows_at(t, sf) as i64 {
            wrong.push(format!(
                "{} has {have} rows, expected {}",
                table.name,
                rows_at(t, sf)
            ));
        }
    }
    let lines = counts.get(7).copied().unwrap_or(0);
    Ok(CheckItem {
        name: "cardinalities".into(),
        ok: wrong.is_empty() && lines > 0,
        detail: if wrong.is_empty() {
            format!("as clause 4.2.5.1 sets them at SF {sf}; lineitem {lines} rows")
        } else {
            wrong.join("; ")
        },
    })
}

/// Every check: the cardinalities, then each query's answer (or a note that no reference
/// answers are compiled in for this scale factor).
pub fn check(sql: &SqlSet, s: &mut dyn Session, sf: f64) -> Result<Vec<CheckItem>, Error> {
    let mut items = vec![cardinalities(sql, s, sf)?];
    let Some(file) = answers(sf).transpose()? else {
        items.push(CheckItem {
            name: "answers".into(),
            ok: true,
            detail: format!(
                "no reference answers at SF {sf} (they are compiled in for SF 0.01 and 1): answers not compared"
            ),
        });
        return Ok(items);
    };
    for q in 1..=22u8 {
        let text = query_text(sql, q, &params(q, sf, Source::Validation));
        let got = s
            .query_text(&text)
            .map_err(|e| db_error(e, &format!("running Q{q}")))?;
        let want = expected(&file, q);
        let diff = difference(q, &want, &got);
        items.push(CheckItem {
            name: format!("Q{q}"),
            ok: diff.is_none(),
            detail: diff.unwrap_or_else(|| format!("{} rows as the reference answers", got.len())),
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_follow_the_rounding_rules() {
        assert!(cell_matches("14876", &Value::Int(14876), false));
        assert!(!cell_matches("14876", &Value::Int(14877), false));
        assert!(cell_matches(
            "505822441.4861",
            &Value::Float(505822441.49),
            false
        ));
        assert!(!cell_matches(
            "505822441.4861",
            &Value::Float(505822441.52),
            false
        ));
        assert!(cell_matches(
            "25.575154611454693",
            &Value::Text("25.57".into()),
            true
        ));
        assert!(cell_matches(
            "1995-03-15",
            &Value::Text("1995-03-15 00:00:00".into()),
            false
        ));
        assert!(cell_matches(
            "BUILDING",
            &Value::Text("BUILDING  ".into()),
            false
        ));
        assert!(!cell_matches(
            "BUILDING",
            &Value::Text("MACHINERY".into()),
            false
        ));
    }

    #[test]
    fn a_wrong_cell_is_named_by_row_and_column() {
        let want = vec![vec!["A", "1"], vec!["N", "2"]];
        let got = vec![
            vec![Value::Text("A".into()), Value::Int(1)],
            vec![Value::Text("N".into()), Value::Int(3)],
        ];
        let diff = difference(4, &want, &got).expect("a difference");
        assert_eq!(diff, "row 2, column 2 (order_count): got 3, expected 2");
    }

    #[test]
    fn every_query_has_reference_answers() {
        for (sf, _, _) in ANSWERS {
            let file = answers(sf).expect("compiled in").expect("unpacks");
            for q in 1..=22 {
                let rows = expected(&file, q);
                assert!(!rows.is_empty(), "Q{q}");
                assert_eq!(rows[0].len(), COLUMNS[usize::from(q) - 1].len(), "Q{q}");
            }
        }
    }
}
