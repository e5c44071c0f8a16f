//! A toy engine, compiled for tests only: SQLite under another name and scheme (`toylite`),
//! added the way a contributor adds an engine (this file and one line in `ENGINES`), so that
//! a test can show every workload running on an engine the shared code has never heard of.
//! A test-only line in the one constant registry is the simplest honest shape: the toy goes
//! through the same lookup, DSN parsing, plans and workloads as a real engine, and the
//! registry needs no way to take entries at run time that only a test would use.

use super::{DbResult, Engine, EngineEntry, EngineOptions, Protocol, Session};
use crate::dsn::Dsn;
use crate::error::Error;

pub const ENTRY: EngineEntry = EngineEntry {
    name: "toylite",
    schemes: &["toylite"],
    about: "SQLite under another name (tests only)",
    open,
    file: true,
    durability: super::sqlite::ENTRY.durability,
};

/// SQLite's engine under the toy's name; it speaks SQLite's dialect.
struct Toy(Box<dyn Engine>);

fn open(dsn: &Dsn, opts: &EngineOptions, protocol: Protocol) -> Result<Box<dyn Engine>, Error> {
    super::no_extended(protocol, "the toy engine")?;
    Ok(Box::new(Toy((super::sqlite::ENTRY.open)(
        dsn, opts, protocol,
    )?)))
}

impl Engine for Toy {
    fn name(&self) -> &'static str {
        ENTRY.name
    }
    fn dialect(&self) -> &'static str {
        self.0.dialect()
    }
    fn embedded(&self) -> bool {
        self.0.embedded()
    }
    fn connect(&self) -> DbResult<Box<dyn Session>> {
        self.0.connect()
    }
    fn table_options(&self, fillfactor: Option<u32>) -> String {
        self.0.table_options(fillfactor)
    }
}
