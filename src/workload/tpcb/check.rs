//! The TPC-B invariants: account, teller and branch balances and history deltas all sum to the same
//! total, and the row counts match the scale. Once simple-update has run (it moves accounts but not
//! tellers or branches, recorded in dbduel_facts), only the invariants that still hold are
//! compared.

use super::{ACCOUNTS, BRANCHES, META_PARTIAL, TELLERS};
use crate::engine::Session;
use crate::error::Error;
use crate::sql::SqlSet;
use crate::workload::{CheckItem, meta_get, numbers};

pub fn run(sql: &SqlSet, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
    super::read_scale(sql, s)?;
    let counts = numbers(s, sql.get("counts"), "counting the tpcb rows")?;
    let (branches, tellers, accounts) = (counts[0], counts[1], counts[2]);
    let scale = branches / BRANCHES;
    let mut items = vec![CheckItem::new(
        "row counts",
        scale > 0 && tellers == TELLERS * scale && accounts == ACCOUNTS * scale,
        format!("{branches} branches, {tellers} tellers, {accounts} accounts (scale {scale})"),
    )];
    let sums = numbers(s, sql.get("sums"), "summing the tpcb balances")?;
    let (a, t, b, h) = (sums[0], sums[1], sums[2], sums[3]);
    items.push(CheckItem::new(
        "accounts = history",
        a == h,
        format!("sum(abalance) = {a}, sum(delta) = {h}"),
    ));
    items.push(CheckItem::new(
        "tellers = branches",
        t == b,
        format!("sum(tbalance) = {t}, sum(bbalance) = {b}"),
    ));
    let partial = meta_get(s, META_PARTIAL).is_some();
    items.push(if partial {
        CheckItem::new(
            "tellers = history",
            true,
            format!(
                "not comparable: simple-update ran on this database (tellers {t}, history {h})"
            ),
        )
    } else {
        CheckItem::new(
            "tellers = history",
            t == h,
            format!("sum(tbalance) = {t}, sum(delta) = {h}"),
        )
    });
    Ok(items)
}
