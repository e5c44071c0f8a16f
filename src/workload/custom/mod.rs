//! Declarative workloads from a TOML file (`dbduel run my-workload.toml`): tables, their generated
//! data and indexes, foreign-key and row-count checks, and a weighted mix of parameterised queries,
//! on every engine; the column types and DDL per dialect live in sql/custom/. `spec.rs` reads and
//! validates the file, `generate.rs` draws the values. `workload::find` reads a `*.toml` name into
//! the `custom` entry before anything connects, which keeps the one file a command works on; its
//! name, not `custom`, is the workload's name in results and plans.

mod generate;
pub mod spec;

use std::path::Path;
use std::sync::{Arc, Mutex};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::{DbResult, Engine, Session, StmtId, Value};
use crate::error::Error;
use crate::sql::SqlSet;

use super::rows::{generated, held_count};
use super::{
    CheckItem, Client, Loader, Workload, WorkloadEntry, WorkloadOptions, clear_out, db_error,
    meta_get, record_fact, run_all, start_over, take_held,
};
use generate::{Generator, Kind};
use spec::{ColType, Spec};

/// The registry entry behind every workload file; `find` loads the file first.
pub const ENTRY: WorkloadEntry = WorkloadEntry {
    name: "custom",
    about: "a declarative workload from a TOML file: `dbduel run FILE.toml` (see docs/workloads/declarative.md)",
    variants: &["mix"],
    bytes_per_scale: 16 << 20,
    headline: &[],
    figures: &[],
    options: &super::options::NONE,
    run_asks: super::no_run_asks,
    scale_follows_clients: false,
    new,
};

/// The file `find` loaded: one workload per command.
static LOADED: Mutex<Option<Arc<Spec>>> = Mutex::new(None);

/// Whether a workload name names a workload file.
pub fn is_file(name: &str) -> bool {
    name.ends_with(".toml")
}

/// Read and validate a workload file; later `new` builds the workload from it.
pub fn load(path: &str) -> Result<&'static WorkloadEntry, Error> {
    let spec = Spec::read(Path::new(path))?;
    *LOADED.lock().expect("lock") = Some(Arc::new(spec));
    Ok(&ENTRY)
}

fn sql(engine: &dyn Engine) -> SqlSet {
    SqlSet::load(&crate::sql::files("custom"), engine.dialect())
}

fn new(opts: &WorkloadOptions) -> Result<Box<dyn Workload>, Error> {
    super::options::parse(&super::options::NONE, "workload files", &opts.params)?;
    let spec = LOADED.lock().expect("lock").clone().ok_or_else(|| {
        Error::Usage("no workload file loaded: give FILE.toml as the workload".into())
    })?;
    let name: &'static str = Box::leak(spec.name.clone().into_boxed_str());
    let types = spec
        .queries
        .iter()
        .map(|q| &*Box::leak(q.name.clone().into_boxed_str()))
        .collect();
    Ok(Box::new(Custom {
        spec,
        name,
        types,
        scale: opts.scale,
    }))
}

struct Custom {
    spec: Arc<Spec>,
    name: &'static str,
    types: Vec<&'static str>,
    scale: u32,
}

impl Custom {
    fn meta_scale(&self) -> String {
        format!("custom.{}.scale", self.spec.name)
    }

    fn rows(&self, table: &str) -> i64 {
        self.spec
            .tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(table))
            .map_or(0, |t| t.rows * self.scale.max(1) as i64)
    }

    fn count(&self, engine: &dyn Engine, s: &mut dyn Session, table: &str) -> DbResult<i64> {
        let q = &sql(engine).statements("count_rows", &[("table", table)])[0];
        let rows = s.query_text(q)?;
        Ok(rows.first().and_then(|r| r[0].as_i64()).unwrap_or(0))
    }
}

fn type_sql(sql: &SqlSet, ty: &ColType) -> String {
    let (section, n) = match ty {
        ColType::Int => ("type_int", 0),
        ColType::BigInt => ("type_bigint", 0),
        ColType::Double => ("type_double", 0),
        ColType::Text => ("type_text", 0),
        ColType::Timestamp => ("type_timestamp", 0),
        ColType::Varchar(n) => ("type_varchar", *n),
        ColType::Char(n) => ("type_char", *n),
    };
    sql.get(section).trim().replace("{n}", &n.to_string())
}

impl Workload for Custom {
    fn weighable(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        self.name
    }
    fn variant(&self) -> &'static str {
        ENTRY.variants[0]
    }
    fn user_statements(&self) -> Vec<(String, String)> {
        let spec = &self.spec;
        spec.queries
            .iter()
            .map(|q| (format!("{} query {}", spec.name, q.name), q.sql.clone()))
            .collect()
    }
    fn scale(&self) -> Option<u32> {
        Some(self.scale)
    }

    fn prepare(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        loader: &Loader,
    ) -> Result<(), Error> {
        let sql = sql(engine);
        let create: Vec<String> = self
            .spec
            .tables
            .iter()
            .map(|t| create_table(&sql, engine, t))
            .collect();
        let what = format!("the tables of {}", self.spec.name);
        start_over(
            s,
            &self.meta_scale(),
            &drop_tables(&sql, &self.spec),
            &create,
            &what,
        )?;
        for (ti, t) in self.spec.tables.iter().enumerate() {
            let total = self.rows(&t.name);
            let mut gens: Vec<Generator> = t
                .columns
                .iter()
                .enumerate()
                .map(|(ci, c)| {
                    Generator::new(&c.generator, (ti as u64) << 32 | ci as u64, &|table| {
                        self.rows(table)
                    })
                })
                .collect();
            let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
            loader.load(
                s,
                &t.name,
                &names,
                // Each row drawn column by column.
                &mut generated(total, |_, row| {
                    row.extend(gens.iter_mut().map(Generator::next));
                }),
            )?;
            for i in &t.indexes {
                let vars = [
                    ("index", i.name.as_str()),
                    ("table", t.name.as_str()),
                    ("columns", &i.columns.join(", ")),
                    ("unique", if i.unique { "UNIQUE " } else { "" }),
                ];
                run_all(
                    s,
                    &sql.statements("create_index", &vars),
                    &format!("creating index {}", i.name),
                )?;
            }
            let upper = t.name.to_ascii_uppercase();
            let vars = [("table", t.name.as_str()), ("TABLE", upper.as_str())];
            run_all(
                s,
                &sql.statements("analyze", &vars),
                &format!("analyzing {}", t.name),
            )?;
        }
        record_fact(s, &self.meta_scale(), &self.scale.max(1).to_string())
    }

    fn cleanup(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<(), Error> {
        let drop = drop_tables(&sql(engine), &self.spec);
        let what = format!("the tables of {}", self.spec.name);
        clear_out(s, &self.meta_scale(), &drop, &what)
    }

    /// Row counts as loaded (unless a query writes), and every foreign key found in its table.
    fn check(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
        let writes = self.spec.queries.iter().any(|q| !q.reads);
        let mut items = Vec::new();
        for t in &self.spec.tables {
            let n = self
                .count(engine, s, &t.name)
                .map_err(|e| db_error(e, "counting rows"))?;
            let want = self.rows(&t.name);
            items.push(CheckItem {
                name: format!("{} rows", t.name),
                ok: writes || n == want,
                detail: if writes {
                    format!("{n} rows ({want} loaded; a query writes, so the count may differ)")
                } else {
                    format!("{n} rows of {want}")
                },
            });
            for c in &t.columns {
                if let Kind::Foreign { table, column, .. } = &c.generator.kind {
                    let vars = [
                        ("table", t.name.as_str()),
                        ("column", c.name.as_str()),
                        ("ref_table", table.as_str()),
                        ("ref_column", column.as_str()),
                    ];
                    let q = &sql(engine).statements("orphans", &vars)[0];
                    let rows = s
                        .query_text(q)
                        .map_err(|e| db_error(e, "checking a foreign key"))?;
                    let orphans = rows.first().and_then(|r| r[0].as_i64()).unwrap_or(-1);
                    items.push(CheckItem {
                        name: format!("{}.{} -> {table}.{column}", t.name, c.name),
                        ok: orphans == 0,
                        detail: format!("{orphans} rows point to no {table}"),
                    });
                }
            }
        }
        Ok(items)
    }

    fn attach(&mut self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<String>, Error> {
        let first = &self.spec.tables[0].name;
        let counted = held_count(
            s,
            &sql(engine).statements("count_rows", &[("table", first)])[0],
            "reading the tables",
            &format!(
                "the database holds no table {first}: run `dbduel prepare FILE.toml --dsn ...` with this workload file first"
            ),
        )?;
        let scale = meta_get(s, &self.meta_scale())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| (counted / self.spec.tables[0].rows).max(1) as u32);
        Ok(Vec::from_iter(take_held(
            &mut self.scale,
            scale,
            "--scale",
            format!("scale {scale}"),
        )))
    }

    fn transaction_types(&self) -> Vec<&'static str> {
        self.types.clone()
    }

    fn client(
        &self,
        _engine: &dyn Engine,
        s: &mut dyn Session,
        client_id: u32,
        seed: u64,
    ) -> DbResult<Box<dyn Client>> {
        let mut queries = Vec::new();
        let mut total = 0.0;
        for (qi, q) in self.spec.queries.iter().enumerate() {
            total += q.weight;
            let params = q
                .params
                .iter()
                .enumerate()
                .map(|(pi, g)| {
                    let seed = seed ^ ((client_id as u64) << 40) ^ ((qi as u64) << 20) ^ pi as u64;
                    Generator::new(g, seed, &|table| self.rows(table))
                })
                .collect();
            queries.push((s.prepare(&q.sql)?, params, total));
        }
        Ok(Box::new(CustomClient {
            queries,
            total,
            mix: None,
            rng: SmallRng::seed_from_u64(seed ^ client_id as u64),
            current: 0,
            values: Vec::new(),
        }))
    }
}

struct CustomClient {
    /// Statement, parameter generators, cumulative weight.
    queries: Vec<(StmtId, Vec<Generator>, f64)>,
    total: f64,
    /// A phase's mix of the queries (`Client::weigh`), in place of their own weights.
    mix: Option<Vec<f64>>,
    rng: SmallRng,
    current: usize,
    values: Vec<Value>,
}

impl Client for CustomClient {
    fn weigh(&mut self, weights: Option<&[f64]>) {
        self.mix = weights.map(<[f64]>::to_vec);
    }

    fn next(&mut self) -> usize {
        let u = self.rng.random::<f64>();
        self.current = match &self.mix {
            Some(mix) => crate::workload::weighted(mix, u),
            None => self
                .queries
                .partition_point(|q| q.2 <= u * self.total)
                .min(self.queries.len() - 1),
        };
        let (_, gens, _) = &mut self.queries[self.current];
        self.values.clear();
        self.values.extend(gens.iter_mut().map(Generator::next));
        self.current
    }

    fn execute(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        s.exec(self.queries[self.current].0, &self.values)?;
        Ok(1)
    }
}

/// The statements that drop the workload's tables, the last declared first.
fn drop_tables(sql: &SqlSet, spec: &Spec) -> Vec<String> {
    let mut drop = Vec::new();
    for t in spec.tables.iter().rev() {
        let upper = t.name.to_ascii_uppercase();
        let vars = [("table", t.name.as_str()), ("TABLE", upper.as_str())];
        drop.extend(sql.statements("drop_table", &vars));
    }
    drop
}

/// A table's CREATE TABLE statement: its columns in the dialect's types, NOT NULL on the
/// primary key's columns, the primary key, the engine's table options.
fn create_table(sql: &SqlSet, engine: &dyn Engine, t: &spec::Table) -> String {
    let mut cols: Vec<String> = t
        .columns
        .iter()
        .map(|c| {
            let mut def = format!("{} {}", c.name, type_sql(sql, &c.ty));
            if t.primary_key
                .iter()
                .any(|k| k.eq_ignore_ascii_case(&c.name))
            {
                def.push_str(" NOT NULL");
            }
            def
        })
        .collect();
    if !t.primary_key.is_empty() {
        cols.push(format!("PRIMARY KEY ({})", t.primary_key.join(", ")));
    }
    format!(
        "CREATE TABLE {} ({}){}",
        t.name,
        cols.join(", "),
        engine.table_options(None)
    )
}
