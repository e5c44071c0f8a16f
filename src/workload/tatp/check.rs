//! TATP's checks after runs: the subscribers are ids 1 to N, each with its 15-digit number;
//! ACCESS_INFO and SPECIAL_FACILITY hold the rows `prepare` loaded (no transaction inserts or
//! deletes them); every value a transaction writes is in its range; every call forwarding has
//! its special facility (a foreign key engines without one, MyISAM and Aria, do not keep); and
//! CALL_FORWARDING holds what was loaded plus what every run's committed transactions inserted,
//! minus what they deleted (their ledgers), so a lost or doubled insert or delete shows.

use super::{FACT_LOADED, SUBSCRIBERS};
use crate::engine::Session;
use crate::error::Error;
use crate::sql::SqlSet;
use crate::workload::{CheckItem, meta_get, numbers, sum_ledgers};

pub fn run(sql: &SqlSet, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
    let scale = super::read_scale(sql, s)?;
    let n = SUBSCRIBERS * i64::from(scale);
    let ids = numbers(s, sql.get("subscriber_ids"), "reading the tatp subscribers")?;
    let bad = numbers(s, sql.get("bad_numbers"), "reading the subscriber numbers")?[0];
    let mut items = vec![CheckItem::new(
        "subscribers",
        ids == [n, 1, n] && bad == 0,
        if bad == 0 {
            format!("{} subscribers, ids {} to {}", ids[0], ids[1], ids[2])
        } else {
            format!(
                "{} subscribers, ids {} to {}; {bad} whose number is not their id in 15 digits",
                ids[0], ids[1], ids[2]
            )
        },
    )];
    let counts = numbers(s, sql.get("counts"), "counting the tatp rows")?;
    let (access, facility, forwarding) = (counts[0], counts[1], counts[2]);
    let loaded: Option<Vec<i64>> = meta_get(s, FACT_LOADED).map(|t| {
        t.split_whitespace()
            .map(|x| x.parse().unwrap_or(-1))
            .collect()
    });
    let Some([l_access, l_facility, l_forwarding]) = loaded.as_deref().map(|l| match l {
        [a, b, c] => [*a, *b, *c],
        _ => [-1; 3],
    }) else {
        items.push(CheckItem::new(
            "rows as loaded",
            true,
            format!(
                "not comparable: the data was not loaded by dbduel ({access} access_info, {facility} special_facility, {forwarding} call_forwarding rows)"
            ),
        ));
        return Ok(items);
    };
    items.push(CheckItem::new(
        "rows as loaded",
        access == l_access && facility == l_facility,
        format!(
            "{access} access_info rows (loaded {l_access}), {facility} special_facility rows (loaded {l_facility}): no transaction inserts or deletes them"
        ),
    ));
    let out = numbers(s, sql.get("out_of_range"), "reading the tatp values")?[0];
    items.push(CheckItem::new(
        "values in range",
        out == 0,
        if out == 0 {
            "access and facility types 1 to 4, is_active 0 or 1, data_a 0 to 255, bit_1 0 or 1, start times 0, 8 or 16".into()
        } else {
            format!("{out} rows hold a type, flag, byte or start time out of its range")
        },
    ));
    let orphans = numbers(s, sql.get("orphans"), "reading the call forwardings")?[0];
    items.push(CheckItem::new(
        "call forwardings have their facility",
        orphans == 0,
        format!("{orphans} call forwardings without their special facility"),
    ));
    let ([inserted, deleted, doubt], runs) = sum_ledgers(s, sql.get("ledgers"), "tatp")?;
    let expected = l_forwarding + inserted - deleted;
    let off = forwarding - expected;
    let mut detail = format!(
        "{forwarding} call_forwarding rows = loaded {l_forwarding} + {inserted} inserted - {deleted} deleted by the committed transactions of {runs} run(s)"
    );
    if doubt > 0 {
        detail.push_str(&format!(
            "; {doubt} COMMIT(s) of unknown outcome (connections lost), each one row at most"
        ));
    }
    if off.abs() > doubt {
        detail = format!(
            "{forwarding} call_forwarding rows, expected {expected} (loaded {l_forwarding} + {inserted} inserted - {deleted} deleted): {} {}",
            off.abs(),
            if off < 0 {
                "missing: committed inserts lost, or rows deleted that no transaction deleted"
            } else {
                "too many: rows a committed delete removed came back, or rows no transaction inserted"
            }
        );
    }
    items.push(CheckItem::new(
        "call forwardings conserved",
        off.abs() <= doubt,
        detail,
    ));
    Ok(items)
}
