//! SmallBank's six transactions, each as the paper defines it (Cahill et al., TODS 2009,
//! section 6.1.1; SendPayment from H-Store's SmallBank, as BenchBase runs it), with
//! BenchBase's amounts and mix (TransactSavings withdraws 20.20, as BenchBase's does; the
//! paper lets V be of either sign). Where BenchBase departs from the paper, the paper wins:
//! BenchBase's Amalgamate zeroes only the source's checking and takes the total from the
//! destination's savings, and its WriteCheck charges the amount minus 1 on an overdraft, so
//! money is neither conserved nor accounted for there.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::{Ledger, Pick, WEIGHTS, name_of};
use crate::engine::{DbError, DbResult, ErrorClass, Session, StmtId, Value};
use crate::sql::SqlSet;
use crate::workload::Client;

/// BenchBase's amounts, in cents: DepositChecking 1.30, TransactSavings 20.20 (a
/// withdrawal), WriteCheck and SendPayment 5.00.
const DEPOSIT: i64 = 130;
const WITHDRAW: i64 = -2020;
const CHECK: i64 = 500;
const PAYMENT: i64 = 500;
/// The penalty of a check written for more than the customer holds (the paper: V + 1).
const OVERDRAFT_PENALTY: i64 = 100;

const NAMES: [&str; 8] = [
    "account_by_name",
    "account_by_id",
    "savings_balance",
    "checking_balance",
    "savings_add",
    "checking_add",
    "savings_zero",
    "checking_zero",
];

struct Stmts {
    by_name: StmtId,
    by_id: StmtId,
    savings: StmtId,
    checking: StmtId,
    savings_add: StmtId,
    checking_add: StmtId,
    savings_zero: StmtId,
    checking_zero: StmtId,
}

pub struct SmallBankClient {
    rng: SmallRng,
    /// A phase's mix of the six transactions (`Client::weigh`), in place of `WEIGHTS`.
    mix: Option<Vec<f64>>,
    pick: Pick,
    stmts: Stmts,
    ledger: Arc<Ledger>,
    kind: usize,
    first: i64,
    second: i64,
    rolled_back: bool,
}

impl SmallBankClient {
    pub fn new(
        sql: &SqlSet,
        s: &mut dyn Session,
        pick: Pick,
        ledger: Arc<Ledger>,
        seed: u64,
    ) -> DbResult<SmallBankClient> {
        let mut ids = [StmtId(0); 8];
        for (slot, name) in ids.iter_mut().zip(NAMES) {
            *slot = s.prepare(sql.get(name))?;
        }
        let [
            by_name,
            by_id,
            savings,
            checking,
            savings_add,
            checking_add,
            savings_zero,
            checking_zero,
        ] = ids;
        Ok(SmallBankClient {
            rng: SmallRng::seed_from_u64(seed),
            mix: None,
            pick,
            stmts: Stmts {
                by_name,
                by_id,
                savings,
                checking,
                savings_add,
                checking_add,
                savings_zero,
                checking_zero,
            },
            ledger,
            kind: 0,
            first: 0,
            second: 0,
            rolled_back: false,
        })
    }

    /// One customer: from the hot set `hot_percent` of the time when there is one, else from
    /// the others (H-Store's SmallBank), else from every customer alike (BenchBase).
    fn customer(&mut self) -> i64 {
        let p = self.pick;
        if p.hotspot == 0 {
            return self.rng.random_range(0..p.accounts);
        }
        if self.rng.random_range(0..100) < p.hot_percent {
            self.rng.random_range(0..p.hotspot)
        } else {
            self.rng.random_range(p.hotspot..p.accounts)
        }
    }

    /// The id of the customer named `name`; a missing one is an error (the data is broken).
    fn id_by_name(&mut self, s: &mut dyn Session, custid: i64) -> DbResult<i64> {
        let rows = s.query(self.stmts.by_name, &[Value::Text(name_of(custid))])?;
        rows.first()
            .and_then(|r| r[0].as_i64())
            .ok_or_else(|| missing("accounts", custid))
    }

    fn exists(&mut self, s: &mut dyn Session, custid: i64) -> DbResult<()> {
        let rows = s.query(self.stmts.by_id, &[Value::Int(custid)])?;
        if rows.is_empty() {
            return Err(missing("accounts", custid));
        }
        Ok(())
    }

    /// The balance `stmt` reads from `table`.
    fn balance(
        &mut self,
        s: &mut dyn Session,
        stmt: StmtId,
        table: &str,
        custid: i64,
    ) -> DbResult<i64> {
        let rows = s.query(stmt, &[Value::Int(custid)])?;
        rows.first()
            .and_then(|r| r[0].as_i64())
            .ok_or_else(|| missing(table, custid))
    }

    fn update(&mut self, s: &mut dyn Session, stmt: StmtId, params: &[Value]) -> DbResult<()> {
        match s.exec(stmt, params)? {
            1 => Ok(()),
            n => Err(DbError::new(
                ErrorClass::MissedRow,
                format!(
                    "an UPDATE of one balance matched {n} rows; the transaction is rolled back"
                ),
            )),
        }
    }

    /// COMMIT, then the transaction's money in the ledger; a COMMIT whose outcome is unknown
    /// (the connection went) leaves its money in doubt.
    fn commit(&mut self, s: &mut dyn Session, cents: i64) -> DbResult<()> {
        match s.commit() {
            Ok(()) => {
                self.ledger.committed(cents);
                Ok(())
            }
            Err(e) => {
                if !e.class.is_retryable() {
                    self.ledger.doubt(cents);
                }
                Err(e)
            }
        }
    }

    /// The rollback the transaction asks for (insufficient funds), counted apart from errors.
    fn refuse(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        s.rollback()?;
        self.rolled_back = true;
        Ok(0)
    }

    /// Amalgamate(N1, N2): all of N1's money into N2's checking; N1's balances to zero.
    fn amalgamate(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let (a, b) = (self.first, self.second);
        let st = &self.stmts;
        let (savings, checking, zero_s, zero_c, add_c) = (
            st.savings,
            st.checking,
            st.savings_zero,
            st.checking_zero,
            st.checking_add,
        );
        s.begin(true)?;
        self.exists(s, a)?;
        self.exists(s, b)?;
        let total =
            self.balance(s, savings, "savings", a)? + self.balance(s, checking, "checking", a)?;
        self.update(s, zero_s, &[Value::Int(a)])?;
        self.update(s, zero_c, &[Value::Int(a)])?;
        self.update(s, add_c, &[Value::Int(total), Value::Int(b)])?;
        self.commit(s, 0)?;
        Ok(9)
    }

    /// Balance(N): N's savings plus checking.
    fn balance_of(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let (savings, checking) = (self.stmts.savings, self.stmts.checking);
        s.begin(false)?;
        let id = self.id_by_name(s, self.first)?;
        self.balance(s, savings, "savings", id)?;
        self.balance(s, checking, "checking", id)?;
        self.commit(s, 0)?;
        Ok(5)
    }

    /// DepositChecking(N, V): V into N's checking.
    fn deposit_checking(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let add = self.stmts.checking_add;
        s.begin(true)?;
        let id = self.id_by_name(s, self.first)?;
        self.update(s, add, &[Value::Int(DEPOSIT), Value::Int(id)])?;
        self.commit(s, DEPOSIT)?;
        Ok(4)
    }

    /// SendPayment(N1, N2, V): V from N1's checking to N2's, refused when N1 holds less.
    fn send_payment(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let (a, b) = (self.first, self.second);
        let (checking, add) = (self.stmts.checking, self.stmts.checking_add);
        s.begin(true)?;
        self.exists(s, a)?;
        self.exists(s, b)?;
        if self.balance(s, checking, "checking", a)? < PAYMENT {
            return self.refuse(s);
        }
        self.update(s, add, &[Value::Int(-PAYMENT), Value::Int(a)])?;
        self.update(s, add, &[Value::Int(PAYMENT), Value::Int(b)])?;
        self.commit(s, 0)?;
        Ok(7)
    }

    /// TransactSavings(N, V): V into (or, negative, out of) N's savings, refused when the
    /// balance would fall below zero.
    fn transact_savings(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let (savings, add) = (self.stmts.savings, self.stmts.savings_add);
        s.begin(true)?;
        let id = self.id_by_name(s, self.first)?;
        if self.balance(s, savings, "savings", id)? + WITHDRAW < 0 {
            return self.refuse(s);
        }
        self.update(s, add, &[Value::Int(WITHDRAW), Value::Int(id)])?;
        self.commit(s, WITHDRAW)?;
        Ok(5)
    }

    /// WriteCheck(N, V): V from N's checking, plus a penalty when N's savings and checking
    /// together hold less than V.
    fn write_check(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let (savings, checking, add) = (
            self.stmts.savings,
            self.stmts.checking,
            self.stmts.checking_add,
        );
        s.begin(true)?;
        let id = self.id_by_name(s, self.first)?;
        let total =
            self.balance(s, savings, "savings", id)? + self.balance(s, checking, "checking", id)?;
        let charge = if total < CHECK {
            CHECK + OVERDRAFT_PENALTY
        } else {
            CHECK
        };
        self.update(s, add, &[Value::Int(-charge), Value::Int(id)])?;
        self.commit(s, -charge)?;
        Ok(6)
    }
}

fn missing(what: &str, custid: i64) -> DbError {
    DbError::new(
        ErrorClass::Other("smallbank data".into()),
        format!("customer {custid} has no row in {what}: the smallbank data is damaged"),
    )
}

impl Client for SmallBankClient {
    fn weigh(&mut self, weights: Option<&[f64]>) {
        self.mix = weights.map(<[f64]>::to_vec);
    }

    fn next(&mut self) -> usize {
        self.kind = match &self.mix {
            Some(mix) => crate::workload::weighted(mix, self.rng.random()),
            None => {
                let mut roll = self.rng.random_range(0..WEIGHTS.iter().sum::<u32>());
                WEIGHTS
                    .iter()
                    .position(|&w| {
                        let hit = roll < w;
                        roll = roll.saturating_sub(w);
                        hit
                    })
                    .unwrap_or(0)
            }
        };
        self.first = self.customer();
        // Amalgamate and SendPayment take two different customers.
        self.second = self.first;
        while self.second == self.first {
            self.second = self.customer();
        }
        self.kind
    }

    fn execute(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        self.rolled_back = false;
        match self.kind {
            0 => self.amalgamate(s),
            1 => self.balance_of(s),
            2 => self.deposit_checking(s),
            3 => self.send_payment(s),
            4 => self.transact_savings(s),
            _ => self.write_check(s),
        }
    }

    fn rolled_back(&self) -> bool {
        self.rolled_back
    }
}
