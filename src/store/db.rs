//! The store's connection: a session of any engine whose dialect has `sql/store/<dialect>.sql`,
//! the store's SQL sections in that dialect's words, statements run with parameters,
//! transactions under the store's lock, and the migrations (by the version the dialect keeps).
//! Nothing here knows which engine it talks to. A new dialect's file is checked by the unit test
//! `every_store_dialect_gives_its_sections_and_words`: every section of `DIALECT_SECTIONS` and
//! every word the generic statements use.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use crate::engine::{DbError, DbResult, Engine, ErrorClass, Session, Value};
use crate::sql::SqlSet;

pub(super) type Rows = Vec<Vec<Value>>;

/// The sections every dialect file gives (the generic file leaves them to it).
#[cfg(test)]
const DIALECT_SECTIONS: &[&str] = &[
    "words",
    "session",
    "version",
    "version table",
    "set version",
    "lock",
    "unlock",
    "last id",
];

/// How long the store's server has to answer one statement (a migration waiting for another
/// process's lock included) before the store is given up as stalled; also how long an opener
/// waits for a busy database (another opener making the same new store).
const DEADLINE: Duration = Duration::from_secs(60);

/// The dialects that can hold a store: those with a file in `sql/store/`.
pub(super) fn dialects() -> Vec<&'static str> {
    let mut found: Vec<&str> = crate::sql::files("store")
        .into_iter()
        .map(|(dialect, _)| dialect)
        .filter(|d| *d != "generic")
        .collect();
    found.sort();
    found
}

pub(super) struct Db {
    /// Behind a RefCell: a session needs `&mut` even to read, and readers hold `&Store`.
    session: RefCell<Box<dyn Session>>,
    sql: SqlSet,
    /// The dialect's `words`, put in for `{name}` in every statement.
    words: Vec<(String, String)>,
}

impl Db {
    /// Connect and bring the store to the newest version. A database that is busy (another
    /// process making the same new store) is tried again for up to `DEADLINE`.
    pub fn open(engine: &dyn Engine) -> DbResult<Db> {
        let since = Instant::now();
        loop {
            match Db::connect(engine).and_then(|db| db.migrate().map(|_| db)) {
                Err(e) if e.class == ErrorClass::Busy && since.elapsed() < DEADLINE => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                done => return done,
            }
        }
    }

    pub fn connect(engine: &dyn Engine) -> DbResult<Db> {
        let sql = SqlSet::load(&crate::sql::files("store"), engine.dialect());
        let words = sql
            .get("words")
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let mut session = engine.connect()?;
        // A stalled store must not hold a sweep: every statement has this long to answer.
        session.set_timeout(Some(DEADLINE));
        let db = Db {
            session: RefCell::new(session),
            sql,
            words,
        };
        db.exec("session", &[])?;
        Ok(db)
    }

    /// The statements of a section in the dialect's words, with `vars` put in too.
    fn statements(&self, section: &str, vars: &[(&str, &str)]) -> Vec<String> {
        let mut all: Vec<(&str, &str)> = self
            .words
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        all.extend_from_slice(vars);
        self.sql.statements(section, &all)
    }

    /// Run every statement of a section (no parameters, no rows).
    pub fn exec(&self, section: &str, vars: &[(&str, &str)]) -> DbResult<()> {
        let mut session = self.session.borrow_mut();
        for sql in self.statements(section, vars) {
            session.batch(&sql)?;
        }
        Ok(())
    }

    /// Run a section of one statement with `params`, and return its rows.
    pub fn query(&self, section: &str, params: &[Value]) -> DbResult<Rows> {
        self.query_where(section, "", params)
    }

    /// `query` with `{where}` put in: empty, or a condition with its parameters.
    pub fn query_where(&self, section: &str, cond: &str, params: &[Value]) -> DbResult<Rows> {
        let mut rows = Vec::new();
        let mut session = self.session.borrow_mut();
        for sql in self.statements(section, &[("where", cond)]) {
            let stmt = session.prepare(&sql)?;
            rows = session.query(stmt, params)?;
        }
        Ok(rows)
    }

    /// Insert a row, and return the id the database gave it.
    pub fn insert(&self, section: &str, params: &[Value]) -> DbResult<i64> {
        self.query(section, params)?;
        let rows = self.query("last id", &[])?;
        rows.first()
            .and_then(|r| r.first())
            .and_then(Value::as_i64)
            .ok_or_else(|| {
                let message = format!("the database gave no id to the row of '{section}'");
                DbError::new(ErrorClass::Other("store_id".into()), message)
            })
    }

    /// Run `f` in one write transaction (under the store's lock when `locked`): committed when
    /// it succeeds, rolled back when it fails; the lock is released after either.
    pub fn transaction<T>(&self, locked: bool, f: impl FnOnce(&Db) -> DbResult<T>) -> DbResult<T> {
        self.session.borrow_mut().begin(true)?;
        let lock = if locked { self.lock() } else { Ok(()) };
        let out = lock.and_then(|_| f(self));
        let out = match out {
            Ok(v) => self.session.borrow_mut().commit().map(|_| v),
            Err(e) => {
                let _ = self.session.borrow_mut().rollback();
                Err(e)
            }
        };
        if locked {
            let released = self.exec("unlock", &[]);
            return out.and_then(|v| released.map(|_| v));
        }
        out
    }

    /// Take the store's lock; a lock statement that answers 0 did not get it in time.
    fn lock(&self) -> DbResult<()> {
        let mut session = self.session.borrow_mut();
        for sql in self.statements("lock", &[]) {
            let rows = session.query_text(&sql)?;
            if rows.first().and_then(|r| r.first()).and_then(Value::as_i64) == Some(0) {
                return Err(DbError::new(
                    ErrorClass::LockTimeout,
                    "another dbduel held the store's lock too long: try again",
                ));
            }
        }
        Ok(())
    }

    /// The number of migrations: the sections `migration 1`, `migration 2`...
    pub fn newest(&self) -> i64 {
        (1..)
            .take_while(|n| self.sql.has(&format!("migration {n}")))
            .count() as i64
    }

    /// The store's version; 0 for a new store (or one whose version cannot be read yet).
    pub fn version(&self) -> i64 {
        let mut session = self.session.borrow_mut();
        let Some(sql) = self.statements("version", &[]).pop() else {
            return 0;
        };
        session
            .query_text(&sql)
            .ok()
            .and_then(|rows| rows.first().and_then(|r| r.first()).and_then(Value::as_i64))
            .unwrap_or(0)
    }

    /// Bring the store to the newest version. A store that is current is only read (so a
    /// read-only store still gives reports); otherwise the migrations run in one write
    /// transaction under the store's lock, so that several processes opening a new store at
    /// once apply them once: the others wait, then find the store current.
    fn migrate(&self) -> DbResult<()> {
        self.migrate_to(self.newest())
    }

    /// Bring the store to version `to` (tests make older stores with it).
    pub fn migrate_to(&self, to: i64) -> DbResult<()> {
        if self.version() >= to {
            return self.newer_than_this_dbduel(self.version());
        }
        self.transaction(true, |db| {
            db.exec("version table", &[])?;
            let from = db.version();
            db.newer_than_this_dbduel(from)?;
            for n in from + 1..=to {
                db.exec(&format!("migration {n}"), &[])?;
                let older = format!("migration {n} older runs");
                if db.sql.has(&older) {
                    db.exec(&older, &[])?;
                }
            }
            if from < to {
                db.exec("set version", &[("version", &to.to_string())])?;
            }
            Ok(())
        })
    }

    fn newer_than_this_dbduel(&self, version: i64) -> DbResult<()> {
        let newest = self.newest();
        if version > newest {
            return Err(DbError::new(
                ErrorClass::Other("store_version".into()),
                format!(
                    "the store is at version {version}, newer than this dbduel's {newest}: use a newer dbduel"
                ),
            ));
        }
        Ok(())
    }
}

/// A value as text (NULL as empty).
pub(super) fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

pub(super) fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

pub(super) fn float(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        Value::Int(i) => *i as f64,
        Value::Text(s) => s.trim().parse().unwrap_or(0.0),
        Value::Null => 0.0,
    }
}

pub(super) fn flag(b: bool) -> Value {
    Value::Int(i64::from(b))
}

pub(super) fn opt_float(v: Option<f64>) -> Value {
    v.map_or(Value::Null, Value::Float)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every dialect that can hold a store gives every section the generic SQL leaves to it,
    /// and every word its statements use.
    #[test]
    fn every_store_dialect_gives_its_sections_and_words() {
        let files = crate::sql::files("store");
        assert!(dialects().len() >= 3, "{:?}", dialects());
        for dialect in dialects() {
            let set = SqlSet::load(&files, dialect);
            for section in DIALECT_SECTIONS {
                assert!(
                    files.iter().any(|(d, text)| *d == dialect
                        && text.contains(&format!("-- name: {section}\n"))),
                    "sql/store/{dialect}.sql has no section '{section}'"
                );
            }
            let words = set.get("words");
            for word in [
                "id",
                "text",
                "key",
                "bytes",
                "table",
                "unhex",
                "reconnects",
                "restarts",
                "limiter",
            ] {
                assert!(
                    words
                        .lines()
                        .any(|l| l.split('=').next().map(str::trim) == Some(word)),
                    "sql/store/{dialect}.sql says no '{word}'"
                );
            }
        }
    }
}
