//! SmallBank's checks: every customer has one savings and one checking balance; the bank's
//! money is what `prepare` loaded plus what every run's committed transactions deposited and
//! withdrew (its ledgers), so money lost to a lost update or made by a double apply shows;
//! no savings balance is below zero (TransactSavings refuses to overdraw it, so one below
//! zero is a write skew or a lost update that isolation let through).

use super::{ACCOUNTS, FACT_LOADED, FACT_WEAKER};
use crate::engine::Session;
use crate::error::Error;
use crate::sql::SqlSet;
use crate::workload::{CheckItem, meta_get, numbers, sum_ledgers};

/// Every run's ledger added up: (cents deposited minus withdrawn, cents in doubt, commits in
/// doubt, runs).
fn ledgers(sql: &SqlSet, s: &mut dyn Session) -> Result<(i64, i64, i64, usize), Error> {
    let (sum, runs) = sum_ledgers(s, sql.get("ledgers"), "smallbank")?;
    Ok((sum[0], sum[1], sum[2], runs))
}

pub fn run(sql: &SqlSet, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
    super::read_scale(sql, s)?;
    let counts = numbers(s, sql.get("counts"), "counting the smallbank rows")?;
    let (accounts, savings, checking) = (counts[0], counts[1], counts[2]);
    let mut items = vec![CheckItem::new(
        "row counts",
        accounts > 0 && accounts % ACCOUNTS == 0 && savings == accounts && checking == accounts,
        format!("{accounts} accounts, {savings} savings, {checking} checking"),
    )];
    let total = numbers(s, sql.get("total"), "summing the smallbank balances")?[0];
    items.push(money(sql, s, total)?);
    let negative = numbers(s, sql.get("negative_savings"), "reading the savings")?[0];
    items.push(CheckItem::new(
        "savings never below zero",
        negative == 0,
        if negative == 0 {
            "no savings balance is below zero".into()
        } else {
            format!(
                "{negative} savings balances below zero: TransactSavings refuses to overdraw, so concurrent transactions saw stale balances{}",
                weaker_note(s)
            )
        },
    ));
    Ok(items)
}

/// The total against what was loaded and what the runs' ledgers say they moved.
fn money(sql: &SqlSet, s: &mut dyn Session, total: i64) -> Result<CheckItem, Error> {
    let name = "money conserved";
    let Some(loaded) = meta_get(s, FACT_LOADED).and_then(|t| t.parse::<i64>().ok()) else {
        return Ok(CheckItem::new(
            name,
            true,
            format!(
                "not comparable: the data was not loaded by dbduel (balances total {})",
                cents(total)
            ),
        ));
    };
    let (delta, doubt, commits, runs) = ledgers(sql, s)?;
    let expected = loaded + delta;
    let off = total - expected;
    let mut detail = format!(
        "balances total {} = loaded {} {} {} by the committed transactions of {runs} run(s)",
        cents(total),
        cents(loaded),
        if delta < 0 { "-" } else { "+" },
        cents(delta.abs())
    );
    if commits > 0 {
        detail.push_str(&format!(
            "; {commits} COMMIT(s) of unknown outcome (connections lost) moved up to {}",
            cents(doubt)
        ));
    }
    if off.abs() > doubt {
        detail = format!(
            "balances total {}, expected {} (loaded {}, runs {}{}): {} {}{}",
            cents(total),
            cents(expected),
            cents(loaded),
            if delta < 0 { "-" } else { "+" },
            cents(delta.abs()),
            cents(off.abs()),
            if off < 0 {
                "vanished: lost updates (transactions wrote over changes they had not seen)"
            } else {
                "appeared: lost updates (transactions wrote over changes they had not seen)"
            },
            weaker_note(s)
        );
    }
    Ok(CheckItem::new(name, off.abs() <= doubt, detail))
}

/// What to say when runs at the engine's default isolation have run on the data.
fn weaker_note(s: &mut dyn Session) -> &'static str {
    if meta_get(s, FACT_WEAKER).is_some() {
        " (runs at the engine's default isolation ran on this data: `--isolation serializable` prevents it)"
    } else {
        ""
    }
}

/// Cents as dollars: 1234567 -> "12345.67".
fn cents(c: i64) -> String {
    let sign = if c < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", (c / 100).abs(), (c % 100).abs())
}

#[cfg(test)]
mod tests {
    #[test]
    fn cents_read_as_dollars() {
        assert_eq!(super::cents(1_234_567), "12345.67");
        assert_eq!(super::cents(5), "0.05");
        assert_eq!(super::cents(-5), "-0.05");
    }
}
