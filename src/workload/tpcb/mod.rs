//! pgbench's TPC-B (sort of): schema, data and scale exactly as `pgbench -i` makes them, and
//! its three built-in scripts. The SQL lives in sql/tpcb/; the scripts in txn.rs; the
//! invariants in check.rs.

mod check;
mod txn;

use crate::engine::{DbResult, Engine, Session, Value};
use crate::error::Error;
use crate::sql::SqlSet;

use super::options::{Kind, Opt, Phase, Table};
use super::rows::{Generated, generated, held_scale};
use super::script::rand::Seeds;
use super::{
    CheckItem, Client, Loader, Workload, WorkloadEntry, WorkloadOptions, clear_out, record_fact,
    run_all, take_held,
};

pub const ENTRY: WorkloadEntry = WorkloadEntry {
    name: "tpcb",
    about: "pgbench's TPC-B (sort of); scale 1 = 1 branch, 10 tellers, 100,000 accounts",
    variants: &["tpcb-like", "simple-update", "select-only"],
    // pgbench: scale 1 is about 15 MiB in PostgreSQL with its indexes.
    bytes_per_scale: 16 << 20,
    headline: &[],
    figures: &[],
    options: &OPTIONS,
    run_asks: super::no_run_asks,
    scale_follows_clients: true,
    new,
};

/// pgbench's initialization options that change the schema.
pub const OPTIONS: Table = Table {
    heading: "pgbench (tpcb) options",
    who: "tpcb",
    opts: &[
        Opt {
            name: "foreign_keys",
            short: None,
            help: "Foreign keys between the four tables, after the primary keys (pgbench -i --foreign-keys); not on SQLite",
            kind: Kind::Flag,
            phase: Phase::Data,
            default: "",
            value_name: "",
        },
        Opt {
            name: "init_steps",
            short: Some('I'),
            help: "pgbench -I's steps, run in the order given: d drop, t create, g rows made here, G rows made by the server, v vacuum and analyze, p primary keys, f foreign keys [dtgvp]",
            kind: Kind::Text,
            phase: Phase::Data,
            default: "",
            value_name: "STEPS",
        },
        Opt {
            name: "partitions",
            short: None,
            help: "Partitions of pgbench_accounts, of nearly equal size (pgbench -i --partitions; PostgreSQL, MariaDB/MySQL) [0: none]",
            kind: Kind::Number,
            phase: Phase::Data,
            default: "",
            value_name: "N",
        },
        Opt {
            name: "partition_method",
            short: None,
            help: "How --partitions splits the accounts: range or hash (pgbench -i --partition-method)",
            kind: Kind::Choice(&["range", "hash"]),
            phase: Phase::Data,
            default: "range",
            value_name: "METHOD",
        },
        Opt {
            name: "unlogged_tables",
            short: None,
            help: "Unlogged tables (pgbench -i --unlogged-tables; PostgreSQL): not crash-safe, no WAL",
            kind: Kind::Flag,
            phase: Phase::Data,
            default: "",
            value_name: "",
        },
        Opt {
            name: "tablespace",
            short: None,
            help: "The tables in this tablespace (pgbench -i --tablespace; PostgreSQL)",
            kind: Kind::Text,
            phase: Phase::Data,
            default: "",
            value_name: "TABLESPACE",
        },
        Opt {
            name: "index_tablespace",
            short: None,
            help: "The primary keys' indexes in this tablespace (pgbench -i --index-tablespace; PostgreSQL)",
            kind: Kind::Text,
            phase: Phase::Data,
            default: "",
            value_name: "TABLESPACE",
        },
    ],
};

/// Rows per unit of scale (pgbench.c: nbranches, ntellers, naccounts).
const BRANCHES: i64 = 1;
const TELLERS: i64 = 10;
const ACCOUNTS: i64 = 100_000;
/// From this scale on, account ids need 64 bits (pgbench.c: SCALE_32BIT_THRESHOLD).
const SCALE_32BIT_THRESHOLD: u32 = 20_000;
/// Set in dbduel_facts while simple-update has run: it moves accounts but not tellers or branches.
const META_PARTIAL: &str = "tpcb.simple_update_ran";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    TpcbLike,
    SimpleUpdate,
    SelectOnly,
}

impl Variant {
    fn name(self) -> &'static str {
        ENTRY.variants[self as usize]
    }
}

pub struct Tpcb {
    variant: Variant,
    scale: u32,
    fillfactor: u32,
    /// `--unlogged-tables`.
    unlogged: bool,
    /// `--tablespace`, `--index-tablespace`.
    tablespace: Option<String>,
    index_tablespace: Option<String>,
    /// `--partitions N --partition-method range|hash` (0: none).
    partitions: u32,
    hash: bool,
    /// `-I`'s steps (pgbench's `dtgvp` by default; `f` added by `--foreign-keys`).
    steps: String,
    /// The run's seed and clients: each client draws as pgbench's does.
    seeds: Seeds,
}

/// tpcb's built-in scripts as pgbench writes them (`pgbench --show-script`): each variant's
/// name, pgbench's description and its text. The tpcb workload runs them natively; a run that
/// mixes them with script files, or weights several (`-b NAME@W -f FILE`), runs these texts as
/// it runs a file.
pub const SCRIPTS: [(&str, &str, &str); 3] = [
    ("tpcb-like", "<builtin: TPC-B (sort of)>", TPCB_LIKE),
    ("simple-update", "<builtin: simple update>", SIMPLE_UPDATE),
    ("select-only", "<builtin: select only>", SELECT_ONLY),
];

const TPCB_LIKE: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";

const SIMPLE_UPDATE: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";

const SELECT_ONLY: &str = "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
";

/// A built-in script's name from what -b was given: the name or its unique prefix, as pgbench
/// takes them (`-b si`, `-b se`; `tpcb` is tpcb-like).
pub fn builtin(asked: &str) -> Result<&'static str, Error> {
    let matching: Vec<&str> = ENTRY
        .variants
        .iter()
        .copied()
        .filter(|v| v.starts_with(asked))
        .collect();
    match matching.as_slice() {
        _ if asked == "tpcb" => Ok("tpcb-like"),
        [one] => Ok(one),
        [_, _, ..] => Err(Error::Usage(format!(
            "ambiguous builtin name: {} builtin scripts found for prefix \"{asked}\" ({}): give more of the name",
            matching.len(),
            matching.join(", ")
        ))),
        [] => Err(Error::Usage(format!(
            "unknown tpcb script '{asked}': use --builtin with one of {} (or `-b list`)",
            ENTRY.variants.join(", ")
        ))),
    }
}

fn new(opts: &WorkloadOptions) -> Result<Box<dyn Workload>, Error> {
    let given = super::options::parse(&OPTIONS, "tpcb", &opts.params)?;
    let asked = builtin(opts.variant.as_deref().unwrap_or("tpcb-like"))?;
    let variant = match asked {
        "tpcb-like" | "tpcb" => Variant::TpcbLike,
        "simple-update" => Variant::SimpleUpdate,
        "select-only" => Variant::SelectOnly,
        other => {
            return Err(Error::Usage(format!(
                "unknown tpcb script '{other}': use --builtin with one of {}",
                ENTRY.variants.join(", ")
            )));
        }
    };
    let partitions = given
        .text("partitions")
        .map_or(Ok(0), str::parse::<u32>)
        .map_err(|e| Error::Usage(format!("--partitions: {e}")))?;
    if partitions == 0
        && opts
            .params
            .keys()
            .any(|k| k.replace('-', "_") == "partition_method")
    {
        return Err(Error::Usage(
            "--partition-method needs --partitions of 1 or more (as pgbench): give both, or drop it"
                .into(),
        ));
    }
    let fillfactor = opts.fillfactor.unwrap_or(100);
    if !(10..=100).contains(&fillfactor) {
        return Err(Error::Usage(format!(
            "--fillfactor {fillfactor} is out of range: use 10 to 100"
        )));
    }
    Ok(Box::new(Tpcb {
        variant,
        scale: opts.scale,
        fillfactor,
        unlogged: given.has("unlogged_tables"),
        tablespace: given.text("tablespace").map(str::to_string),
        index_tablespace: given.text("index_tablespace").map(str::to_string),
        steps: init_steps(given.text("init_steps"), given.has("foreign_keys"))?,
        partitions,
        hash: given.text("partition_method") == Some("hash"),
        seeds: Seeds {
            seed: opts.seed,
            clients: opts.clients,
        },
    }))
}

/// `-I STEPS` checked: pgbench's step letters, run in the order given, spaces ignored, as
/// pgbench runs them; `g` or `G`, not both (rows made twice); `--foreign-keys` adds `f`, as
/// pgbench does.
fn init_steps(given: Option<&str>, foreign_keys: bool) -> Result<String, Error> {
    const STEPS: &str = "dtgGvpf";
    let mut steps: String = given.unwrap_or("dtgvp").replace(' ', "");
    let bad = |why: String| {
        Err(Error::Usage(format!(
            "-I {steps}: {why} (d drop, t create, g rows made here, G rows made by the server, v vacuum, p primary keys, f foreign keys)"
        )))
    };
    if let Some(c) = steps.chars().find(|c| !STEPS.contains(*c)) {
        return bad(format!("'{c}' is not a step"));
    }
    if steps.contains('g') && steps.contains('G') {
        return bad("give g or G, not both".into());
    }
    if foreign_keys && !steps.contains('f') {
        steps.push('f');
    }
    Ok(steps)
}

fn sql(engine: &dyn Engine) -> SqlSet {
    SqlSet::load(&crate::sql::files("tpcb"), engine.dialect())
}

/// One table's rows as pgbench's client-side generation makes them: `per_scale` rows per
/// unit of scale.
fn rows<F: FnMut(i64, &mut Vec<Value>)>(per_scale: i64, scale: u32, make: F) -> Generated<F> {
    generated(per_scale * scale as i64, make)
}

impl Tpcb {
    /// `-I g`: the rows made here and loaded through the engine's bulk path; pgbench's
    /// fillers: NULL for branches and tellers, a blank-padded empty one for accounts.
    fn load_here(&self, s: &mut dyn Session, loader: &Loader) -> Result<(), Error> {
        loader.load(
            s,
            "pgbench_branches",
            &["bid", "bbalance", "filler"],
            &mut rows(BRANCHES, self.scale, |i, r| {
                r.extend([Value::Int(i + 1), Value::Int(0), Value::Null])
            }),
        )?;
        loader.load(
            s,
            "pgbench_tellers",
            &["tid", "bid", "tbalance", "filler"],
            &mut rows(TELLERS, self.scale, |i, r| {
                r.extend([
                    Value::Int(i + 1),
                    Value::Int(i / TELLERS + 1),
                    Value::Int(0),
                    Value::Null,
                ])
            }),
        )?;
        loader.load(
            s,
            "pgbench_accounts",
            &["aid", "bid", "abalance", "filler"],
            &mut rows(ACCOUNTS, self.scale, |i, r| {
                r.extend([
                    Value::Int(i + 1),
                    Value::Int(i / ACCOUNTS + 1),
                    Value::Int(0),
                    Value::Text(String::new()),
                ])
            }),
        )?;
        Ok(())
    }

    /// pgbench_accounts, or with `--partitions` the partitioned table and its partitions as
    /// pgbench makes them (pgbench.c, createPartitions): range partitions of `ceil(accounts /
    /// N)` aids each, open-ended at both ends; hash partitions by modulus N.
    fn create_accounts(&self, sql: &SqlSet, vars: &[(&str, &str)]) -> Result<Vec<String>, Error> {
        if self.partitions == 0 {
            return Ok(sql.statements("create_accounts", vars));
        }
        let accounts = ACCOUNTS * i64::from(self.scale);
        let n = i64::from(self.partitions);
        if n > accounts {
            return Err(Error::Usage(format!(
                "--partitions {n}: more than the {accounts} accounts of scale {}: give at most {accounts}",
                self.scale
            )));
        }
        let method = if self.hash { "hash" } else { "range" };
        let size = (accounts + n - 1) / n;
        let count = n.to_string();
        let parts: Vec<String> = (1..=n)
            .map(|p| {
                let from = if p == 1 {
                    "MINVALUE".to_string()
                } else {
                    ((p - 1) * size + 1).to_string()
                };
                let to = if p < n {
                    (p * size + 1).to_string()
                } else {
                    "MAXVALUE".to_string()
                };
                let upto = if p < n { format!("({to})") } else { to.clone() };
                let (p, rem) = (p.to_string(), (p - 1).to_string());
                let mut all: Vec<(&str, &str)> = vars.to_vec();
                all.extend([
                    ("n", p.as_str()),
                    ("from", from.as_str()),
                    ("to", to.as_str()),
                    ("upto", upto.as_str()),
                    ("count", count.as_str()),
                    ("rem", rem.as_str()),
                ]);
                sql.statements(&format!("accounts_part_{method}"), &all)
                    .join(";\n")
            })
            .filter(|p| !p.is_empty())
            .collect();
        let parent = sql.get(&format!("accounts_partitioned_{method}"));
        let inline = parent.contains("{parts}");
        let joined = parts.join(", ");
        let mut all: Vec<(&str, &str)> = vars.to_vec();
        all.extend([("count", count.as_str()), ("parts", joined.as_str())]);
        let mut out = sql.statements(&format!("accounts_partitioned_{method}"), &all);
        if !inline {
            out.extend(parts);
        }
        Ok(out)
    }
}

impl Workload for Tpcb {
    fn name(&self) -> &'static str {
        "tpcb"
    }
    fn variant(&self) -> &'static str {
        self.variant.name()
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
        let aid_type = if self.scale >= SCALE_32BIT_THRESHOLD {
            "bigint"
        } else {
            "int"
        };
        // What the dialect cannot do is refused before anything is dropped.
        for (asked, refused) in [
            (self.steps.contains('f'), "foreign_keys_refused"),
            (self.unlogged, "unlogged_refused"),
            (self.partitions > 0, "partitions_refused"),
            (
                self.tablespace.is_some() || self.index_tablespace.is_some(),
                "tablespaces_refused",
            ),
        ] {
            let why = sql.get(refused).trim();
            if asked && !why.is_empty() {
                return Err(Error::Usage(why.to_string()));
            }
        }
        let fill = engine.table_options(Some(self.fillfactor));
        let plain = engine.table_options(None);
        let unlogged = if self.unlogged { "UNLOGGED " } else { "" };
        // pgbench quotes the names as identifiers (PQescapeIdentifier).
        let quoted = |t: &Option<String>| {
            t.as_ref()
                .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        };
        let tablespace = quoted(&self.tablespace)
            .map(|t| format!(" TABLESPACE {t}"))
            .unwrap_or_default();
        let index_tablespace = quoted(&self.index_tablespace)
            .map(|t| format!(" USING INDEX TABLESPACE {t}"))
            .unwrap_or_default();
        let scaled = |n: i64| (n * i64::from(self.scale)).to_string();
        let (branches, tellers, accounts) = (scaled(BRANCHES), scaled(TELLERS), scaled(ACCOUNTS));
        let vars = [
            ("aid_type", aid_type),
            ("fill", fill.as_str()),
            ("plain", plain.as_str()),
            ("unlogged", unlogged),
            ("tablespace", tablespace.as_str()),
            ("index_tablespace", index_tablespace.as_str()),
            ("branches", branches.as_str()),
            ("tellers", tellers.as_str()),
            ("accounts", accounts.as_str()),
        ];
        let mut create = sql.statements("create", &vars);
        create.extend(self.create_accounts(&sql, &vars)?);
        for c in self.steps.chars() {
            let (section, what) = match c {
                'd' => {
                    let drop = sql.statements("drop", &vars);
                    clear_out(s, "tpcb.", &drop, "the tpcb tables")?;
                    continue;
                }
                't' => {
                    run_all(s, &create, "creating the tpcb tables")?;
                    continue;
                }
                'g' => {
                    self.load_here(s, loader)?;
                    continue;
                }
                'G' => ("generate", "generating the tpcb rows on the server"),
                'v' => ("analyze", "analyzing the tpcb tables"),
                'p' => ("primary_keys", "adding the tpcb primary keys"),
                _ => ("foreign_keys", "adding the tpcb foreign keys"),
            };
            run_all(s, &sql.statements(section, &vars), what)?;
        }
        Ok(())
    }

    fn cleanup(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<(), Error> {
        let drop = sql(engine).statements("drop", &[]);
        clear_out(s, "tpcb.", &drop, "the tpcb tables")
    }

    fn check(&self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
        check::run(&sql(engine), s)
    }

    fn attach(&mut self, engine: &dyn Engine, s: &mut dyn Session) -> Result<Vec<String>, Error> {
        let scale = read_scale(&sql(engine), s)?;
        let warnings = Vec::from_iter(take_held(
            &mut self.scale,
            scale,
            "--scale",
            format!("scale {scale}"),
        ));
        if self.variant == Variant::SimpleUpdate {
            record_fact(s, META_PARTIAL, "1")?;
        }
        Ok(warnings)
    }

    fn transaction_types(&self) -> Vec<&'static str> {
        vec![self.variant.name()]
    }

    fn client(
        &self,
        engine: &dyn Engine,
        s: &mut dyn Session,
        client_id: u32,
        _: u64,
    ) -> DbResult<Box<dyn Client>> {
        let rng = self.seeds.client(client_id);
        txn::TpcbClient::new(&sql(engine), s, self.variant, self.scale, rng)
            .map(|c| Box::new(c) as Box<dyn Client>)
    }
}

/// pgbench's `-v`, before a run: its four tables vacuumed and analyzed, each engine's way
/// (prepare's `v` step). pgbench also truncates pgbench_history; dbduel keeps it, so that
/// `check` still finds the accounts' balances in the history's deltas.
pub fn vacuum(engine: &dyn Engine, s: &mut dyn Session) -> Result<(), Error> {
    let started = std::time::Instant::now();
    run_all(
        s,
        &sql(engine).statements("analyze", &[]),
        "vacuuming pgbench's tables before the run (-v)",
    )?;
    errln!(
        "vacuumed pgbench's tables before the run (-v) in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The scale is the number of branches, as pgbench reads it.
pub(super) fn read_scale(sql: &SqlSet, s: &mut dyn Session) -> Result<u32, Error> {
    held_scale(
        s,
        sql.get("count_branches"),
        1,
        "reading the tpcb scale",
        "the database holds no tpcb data: run `dbduel prepare tpcb --dsn ...` first",
    )
}
