//! TPC-C's five transactions called as server-side code (`--procedures`): one statement, one round
//! trip per transaction, with the inputs the terminal drew (txn.rs) as arguments (arrays as text).
//! The code itself lives in sql/tpcc/ (section `procedures`, refused with the dialect's
//! `procedures_refused` where it has none); the call statements are `call_*`. The fingerprint of
//! the installed code is recorded in dbduel_facts and compared before a run.

use super::input::{CustomerKey, Input, Terminal};
use crate::engine::{DbResult, Session, StmtId, Value};
use crate::sql::SqlSet;

/// The call statements, in the order of the transaction types.
const CALLS: [&str; 5] = [
    "call_new_order",
    "call_payment",
    "call_order_status",
    "call_delivery",
    "call_stock_level",
];

pub struct Calls {
    stmts: Vec<StmtId>,
}

impl Calls {
    pub fn prepare(sql: &SqlSet, s: &mut dyn Session) -> DbResult<Calls> {
        let stmts = CALLS
            .iter()
            .map(|name| s.prepare(sql.get(name)))
            .collect::<DbResult<Vec<_>>>()?;
        Ok(Calls { stmts })
    }

    /// Calls the drawn transaction in autocommit (the call is the transaction); returns
    /// whether it was New-Order's rollback on an unused item (clause 2.4.2.3), which the
    /// function reports as order number 0 after reading the items and writing nothing, as
    /// the client-side path rolls back before any write.
    pub fn execute(&self, s: &mut dyn Session, home: Terminal, input: &Input) -> DbResult<bool> {
        let w = Value::Int(home.w_id);
        match input {
            Input::NewOrder {
                d_id, c_id, lines, ..
            } => {
                let array = |f: &dyn Fn(usize) -> i64| {
                    let items: Vec<String> = (0..lines.len()).map(|i| f(i).to_string()).collect();
                    Value::Text(format!("{{{}}}", items.join(",")))
                };
                let params = [
                    w,
                    Value::Int(*d_id),
                    Value::Int(*c_id),
                    array(&|i| lines[i].i_id),
                    array(&|i| lines[i].supply_w),
                    array(&|i| lines[i].quantity),
                ];
                let rows = s.query(self.stmts[0], &params)?;
                Ok(rows.first().and_then(|r| r[0].as_i64()) == Some(0))
            }
            Input::Payment {
                d_id,
                c_w_id,
                c_d_id,
                customer,
                amount,
            } => {
                let (c_id, last) = key(customer);
                let params = [
                    w,
                    Value::Int(*d_id),
                    Value::Int(*c_w_id),
                    Value::Int(*c_d_id),
                    c_id,
                    last,
                    Value::Float(*amount),
                ];
                s.query(self.stmts[1], &params).map(|_| false)
            }
            Input::OrderStatus { d_id, customer } => {
                let (c_id, last) = key(customer);
                let params = [w, Value::Int(*d_id), c_id, last];
                s.query(self.stmts[2], &params).map(|_| false)
            }
            Input::Delivery { carrier } => s
                .query(self.stmts[3], &[w, Value::Int(*carrier)])
                .map(|_| false),
            Input::StockLevel { threshold } => s
                .query(
                    self.stmts[4],
                    &[w, Value::Int(home.d_id), Value::Int(*threshold)],
                )
                .map(|_| false),
        }
    }
}

/// The customer as the functions take it: a number, or 0 and a last name.
fn key(customer: &CustomerKey) -> (Value, Value) {
    match customer {
        CustomerKey::Id(c_id) => (Value::Int(*c_id), Value::Text(String::new())),
        CustomerKey::LastName(last) => (Value::Int(0), Value::Text(last.clone())),
    }
}

/// A fingerprint of the installed code, recorded at prepare and compared before a run, so
/// that a database prepared by a dbduel with other procedures is refused (FNV-1a, 64 bits).
pub fn fingerprint(code: &str) -> String {
    let hash = code.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_changes_with_the_code() {
        assert_eq!(fingerprint("a"), fingerprint("a"));
        assert_ne!(
            fingerprint("CREATE FUNCTION f()"),
            fingerprint("CREATE FUNCTION g()")
        );
    }
}
