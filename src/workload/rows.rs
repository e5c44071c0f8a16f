//! What the generated workloads share about their rows: `generated`, a table's rows made on demand
//! from their index (the loader's `RowSource`), and `held_count`/`held_scale`, the size a prepared
//! database holds, read back from its rows (tpcb's branches, tpcc's warehouses, sysbench's and a
//! workload file's rows); a missing table says which prepare to run.

use crate::engine::{ErrorClass, RowSource, Session, Value};
use crate::error::Error;

use super::db_error;

/// `total` rows, row i (from 0) made by `make(i, row)` when the loader asks for it.
pub struct Generated<F: FnMut(i64, &mut Vec<Value>)> {
    next: i64,
    total: i64,
    make: F,
}

/// The rows 0..total, each made by `make` into an emptied row.
pub fn generated<F: FnMut(i64, &mut Vec<Value>)>(total: i64, make: F) -> Generated<F> {
    Generated {
        next: 0,
        total,
        make,
    }
}

impl<F: FnMut(i64, &mut Vec<Value>)> RowSource for Generated<F> {
    fn next_row(&mut self, row: &mut Vec<Value>) -> bool {
        if self.next >= self.total {
            return false;
        }
        row.clear();
        (self.make)(self.next, row);
        self.next += 1;
        true
    }
    fn total(&self) -> u64 {
        self.total as u64
    }
}

/// The count a prepared workload's size is read from: the first column of `query`'s first
/// row (0 without one). A missing table is the usage error `not_prepared` (which names the
/// prepare to run); another failure says what was `doing`.
pub fn held_count(
    s: &mut dyn Session,
    query: &str,
    doing: &str,
    not_prepared: &str,
) -> Result<i64, Error> {
    let rows = s.query_text(query).map_err(|e| match e.class {
        ErrorClass::UndefinedTable => Error::Usage(not_prepared.into()),
        _ => db_error(e, doing),
    })?;
    Ok(rows.first().and_then(|r| r[0].as_i64()).unwrap_or(0))
}

/// The scale the database holds: the rows `held_count` reads over the rows of one scale, at
/// least 1; `not_prepared` when it holds none.
pub fn held_scale(
    s: &mut dyn Session,
    query: &str,
    rows_per_scale: i64,
    doing: &str,
    not_prepared: &str,
) -> Result<u32, Error> {
    match held_count(s, query, doing, not_prepared)? {
        n if n > 0 => Ok((n / rows_per_scale).max(1) as u32),
        _ => Err(Error::Usage(not_prepared.into())),
    }
}
