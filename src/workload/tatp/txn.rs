//! TATP's seven transactions as section 3 of the spec defines them (TATP Benchmark Description
//! v1.0): their statements, parameters and the failures the spec accepts. A read that finds no
//! row commits (it is no error, section 4); UPDATE_SUBSCRIBER_DATA whose facility is missing and
//! DELETE_CALL_FORWARDING that deletes nothing roll back, as the reference client does; so does
//! INSERT_CALL_FORWARDING on a duplicate key (the spec's acceptable unique-key failure) or for a
//! facility the subscriber does not have (its acceptable foreign-key failure: the facility types
//! it reads first say so, and no statement is sent that must fail, so that engines that keep no
//! foreign keys, MyISAM and Aria, behave as the others). Those rollbacks are counted apart from
//! errors and left out of MQTh.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::{Keys, Ledger, WEIGHTS, number_of};
use crate::engine::{DbError, DbResult, ErrorClass, Session, StmtId, Value};
use crate::sql::SqlSet;
use crate::workload::Client;

const NAMES: [&str; 10] = [
    "get_subscriber_data",
    "get_new_destination",
    "get_access_data",
    "update_subscriber_bit",
    "update_special_facility",
    "update_location",
    "subscriber_by_number",
    "facility_types",
    "insert_call_forwarding",
    "delete_call_forwarding",
];

/// INSERT_CALL_FORWARDING's index in `super::TYPES`.
const INSERT_CALL_FORWARDING_TYPE: usize = 5;

// Each statement's index in NAMES (and the client's prepared statements).
const GET_SUBSCRIBER_DATA: usize = 0;
const GET_NEW_DESTINATION: usize = 1;
const GET_ACCESS_DATA: usize = 2;
const UPDATE_SUBSCRIBER_BIT: usize = 3;
const UPDATE_SPECIAL_FACILITY: usize = 4;
const UPDATE_LOCATION: usize = 5;
const SUBSCRIBER_BY_NUMBER: usize = 6;
const FACILITY_TYPES: usize = 7;
const INSERT_CALL_FORWARDING: usize = 8;
const DELETE_CALL_FORWARDING: usize = 9;

/// The drawn transaction's parameters (section 3).
#[derive(Default)]
struct Params {
    s_id: i64,
    sf_type: i64,
    ai_type: i64,
    start_time: i64,
    end_time: i64,
    bit: i64,
    data_a: i64,
    vlr_location: i64,
    numberx: String,
}

pub struct TatpClient {
    rng: SmallRng,
    /// A phase's mix of the seven transactions (`Client::weigh`), in place of `WEIGHTS`.
    mix: Option<Vec<f64>>,
    keys: Keys,
    stmts: [StmtId; 10],
    ledger: Arc<Ledger>,
    kind: usize,
    p: Params,
    rolled_back: bool,
}

impl TatpClient {
    pub fn new(
        sql: &SqlSet,
        s: &mut dyn Session,
        keys: Keys,
        ledger: Arc<Ledger>,
        seed: u64,
    ) -> DbResult<TatpClient> {
        let mut stmts = [StmtId(0); 10];
        for (slot, name) in stmts.iter_mut().zip(NAMES) {
            *slot = s.prepare(sql.get(name))?;
        }
        Ok(TatpClient {
            rng: SmallRng::seed_from_u64(seed),
            mix: None,
            keys,
            stmts,
            ledger,
            kind: 0,
            p: Params::default(),
            rolled_back: false,
        })
    }

    /// The transaction ends in the rollback the spec accepts, counted apart from errors.
    fn refuse(&mut self, s: &mut dyn Session, statements: u32) -> DbResult<u32> {
        s.rollback()?;
        self.rolled_back = true;
        Ok(statements)
    }

    /// COMMIT, then what it inserted or deleted in the ledger; a COMMIT whose outcome is
    /// unknown (the connection went) is in doubt.
    fn commit(&mut self, s: &mut dyn Session, inserted: i64, deleted: i64) -> DbResult<()> {
        match s.commit() {
            Ok(()) => {
                self.ledger.committed(inserted, deleted);
                Ok(())
            }
            Err(e) => {
                if !e.class.is_retryable() && inserted + deleted > 0 {
                    self.ledger.doubt();
                }
                Err(e)
            }
        }
    }

    /// A read-only transaction of one statement: a row or none, committed (section 4: data
    /// not found is no error).
    fn read(&mut self, s: &mut dyn Session, stmt: usize, params: &[Value]) -> DbResult<u32> {
        let stmt = self.stmts[stmt];
        s.begin(false)?;
        s.query(stmt, params)?;
        self.commit(s, 0, 0)?;
        Ok(3)
    }

    /// An UPDATE of a row that exists (the subscriber's own): it must match one.
    fn update_one(&mut self, s: &mut dyn Session, stmt: usize, params: &[Value]) -> DbResult<()> {
        match s.exec(self.stmts[stmt], params)? {
            1 => Ok(()),
            n => Err(DbError::new(
                ErrorClass::MissedRow,
                format!(
                    "{} matched {n} subscribers, not one; the transaction is rolled back",
                    NAMES[stmt]
                ),
            )),
        }
    }

    /// The subscriber whose number is `sub_nbr`; a missing one is an error (the data is
    /// broken: every id has its number).
    fn by_number(&mut self, s: &mut dyn Session) -> DbResult<i64> {
        let number = number_of(self.p.s_id);
        let rows = s.query(self.stmts[SUBSCRIBER_BY_NUMBER], &[Value::Text(number)])?;
        rows.first().and_then(|r| r[0].as_i64()).ok_or_else(|| {
            DbError::new(
                ErrorClass::Other("tatp data".into()),
                format!(
                    "no subscriber has the number {}: the tatp data is damaged",
                    number_of(self.p.s_id)
                ),
            )
        })
    }

    /// GET_SUBSCRIBER_DATA: the subscriber's row, by its id.
    fn get_subscriber_data(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        self.read(s, GET_SUBSCRIBER_DATA, &[Value::Int(self.p.s_id)])
    }

    /// GET_NEW_DESTINATION: the number a call is forwarded to at a time, for an active
    /// facility.
    fn get_new_destination(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let p = &self.p;
        let params = [
            Value::Int(p.s_id),
            Value::Int(p.sf_type),
            Value::Int(p.start_time),
            Value::Int(p.end_time),
        ];
        self.read(s, GET_NEW_DESTINATION, &params)
    }

    /// GET_ACCESS_DATA: one access type's data.
    fn get_access_data(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let params = [Value::Int(self.p.s_id), Value::Int(self.p.ai_type)];
        self.read(s, GET_ACCESS_DATA, &params)
    }

    /// UPDATE_SUBSCRIBER_DATA: the subscriber's bit_1 and a facility's data_a; rolled back
    /// when the subscriber has no such facility.
    fn update_subscriber_data(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let p = &self.p;
        let (bit, data_a) = (
            [Value::Int(p.bit), Value::Int(p.s_id)],
            [
                Value::Int(p.data_a),
                Value::Int(p.s_id),
                Value::Int(p.sf_type),
            ],
        );
        s.begin(true)?;
        self.update_one(s, UPDATE_SUBSCRIBER_BIT, &bit)?;
        if s.exec(self.stmts[UPDATE_SPECIAL_FACILITY], &data_a)? == 0 {
            return self.refuse(s, 4);
        }
        self.commit(s, 0, 0)?;
        Ok(4)
    }

    /// UPDATE_LOCATION: the subscriber's visitor location, by its number.
    fn update_location(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let params = [
            Value::Int(self.p.vlr_location),
            Value::Text(number_of(self.p.s_id)),
        ];
        s.begin(true)?;
        self.update_one(s, UPDATE_LOCATION, &params)?;
        self.commit(s, 0, 0)?;
        Ok(3)
    }

    /// INSERT_CALL_FORWARDING: the subscriber by its number, its facility types, then the
    /// forwarding; rolled back for a facility it does not have or a start time already taken.
    fn insert_call_forwarding(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        s.begin(true)?;
        let s_id = self.by_number(s)?;
        let types = s.query(self.stmts[FACILITY_TYPES], &[Value::Int(s_id)])?;
        let p = &self.p;
        if !types.iter().any(|r| r[0].as_i64() == Some(p.sf_type)) {
            return self.refuse(s, 4);
        }
        let row = [
            Value::Int(s_id),
            Value::Int(p.sf_type),
            Value::Int(p.start_time),
            Value::Int(p.end_time),
            Value::Text(p.numberx.clone()),
        ];
        match s.exec(self.stmts[INSERT_CALL_FORWARDING], &row) {
            Ok(_) => {}
            Err(e) if e.class == ErrorClass::UniqueViolation => return self.refuse(s, 5),
            Err(e) => return Err(e),
        }
        self.commit(s, 1, 0)?;
        Ok(5)
    }

    /// DELETE_CALL_FORWARDING: the subscriber by its number, then one forwarding; rolled back
    /// when there is none.
    fn delete_call_forwarding(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        s.begin(true)?;
        let s_id = self.by_number(s)?;
        let key = [
            Value::Int(s_id),
            Value::Int(self.p.sf_type),
            Value::Int(self.p.start_time),
        ];
        let deleted = s.exec(self.stmts[DELETE_CALL_FORWARDING], &key)?;
        if deleted == 0 {
            return self.refuse(s, 4);
        }
        self.commit(s, 0, deleted as i64)?;
        Ok(4)
    }
}

impl Client for TatpClient {
    fn weigh(&mut self, weights: Option<&[f64]>) {
        self.mix = weights.map(<[f64]>::to_vec);
    }

    /// The transaction by the mix, and its parameters as section 3 draws them: the subscriber
    /// (NURand or uniform), a facility or access type 1 to 4, a start time of 0, 8 or 16, an
    /// end time 1 to 24, a bit, a byte, a location, a forwarding number (a subscriber's).
    fn next(&mut self) -> usize {
        let mix = self.mix.as_deref().unwrap_or(&WEIGHTS);
        self.kind = crate::workload::weighted(mix, self.rng.random());
        let rng = &mut self.rng;
        self.p = Params {
            s_id: self.keys.draw(rng),
            sf_type: rng.random_range(1..=4),
            ai_type: rng.random_range(1..=4),
            start_time: 8 * rng.random_range(0..=2),
            end_time: rng.random_range(1..=24),
            bit: rng.random_range(0..=1),
            data_a: rng.random_range(0..=255),
            vlr_location: rng.random_range(1..=i64::from(i32::MAX)),
            numberx: String::new(),
        };
        // Only the insert writes a forwarding number: no string made for the other six.
        if self.kind == INSERT_CALL_FORWARDING_TYPE {
            self.p.numberx = number_of(self.keys.draw(&mut self.rng));
        }
        self.kind
    }

    fn execute(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        self.rolled_back = false;
        match self.kind {
            0 => self.get_subscriber_data(s),
            1 => self.get_new_destination(s),
            2 => self.get_access_data(s),
            3 => self.update_subscriber_data(s),
            4 => self.update_location(s),
            INSERT_CALL_FORWARDING_TYPE => self.insert_call_forwarding(s),
            _ => self.delete_call_forwarding(s),
        }
    }

    fn rolled_back(&self) -> bool {
        self.rolled_back
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_insert_is_the_type_that_draws_a_number() {
        assert_eq!(
            super::super::TYPES[super::INSERT_CALL_FORWARDING_TYPE],
            "insert_call_forwarding"
        );
    }
}
