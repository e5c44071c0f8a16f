//! pgbench-format custom scripts on any engine (`dbduel run FILE.sql`, `-f FILE[@WEIGHT]`): loading
//! and checking the scripts before anything connects (a variable must be set, defined, built in or
//! named by a `\gset`/`\aset` select list), the built-in variables (`:scale`, `:client_id`,
//! `:random_seed`, `:default_seed`) and `-D NAME=VALUE`, and the `script` workload that runs them,
//! each script a transaction type (run_plan.rs resolves `run FILE.sql` to it, the parsed scripts
//! in `WorkloadOptions::scripts`). The syntax follows the "Custom Scripts" section of the pgbench
//! documentation (PostgreSQL 15), pipeline mode (`\startpipeline`, `\syncpipeline` of pgbench 17,
//! `\endpipeline`) included: PostgreSQL pipelines, the other engines run a pipeline's statements
//! as they come.

mod client;
mod eval;
pub(crate) mod expr;
mod parse;
pub mod rand;

use std::sync::Arc;

use crate::engine::{DbResult, Engine, Protocol, Session, Value};
use crate::error::Error;

pub use expr::{Names, Val};
pub use parse::ScriptError;
use parse::{Command, Kind, Part};

use super::{CheckItem, Client, Loader, Workload, WorkloadEntry, WorkloadOptions};

pub const ENTRY: WorkloadEntry = WorkloadEntry {
    name: "script",
    about: "pgbench-format custom scripts: dbduel run FILE.sql, or -f FILE[@WEIGHT] (repeatable)",
    // No built-in variant: the conformance suite has nothing to prepare for it.
    variants: &[],
    bytes_per_scale: 16 << 20,
    headline: &[],
    figures: &[],
    options: &super::options::NONE,
    run_asks: super::no_run_asks,
    scale_follows_clients: false,
    new,
};

/// Names pgbench defines for every client.
const BUILTINS: [&str; 4] = ["scale", "client_id", "random_seed", "default_seed"];

/// One script file, parsed.
#[derive(Debug)]
pub struct Script {
    /// Its transaction type name (the file name, made unique).
    pub name: &'static str,
    pub weight: u32,
    pub commands: Vec<Command>,
    /// Whether it may write (SQLite then takes the write lock at BEGIN).
    pub writes: bool,
    /// The first 12 hex digits of its text's SHA-256: two scripts of one file name that
    /// differ are told apart in results (`compare`'s "what differs").
    pub digest: String,
}

/// How a run's script list names one of tpcb's built-in scripts run as a script
/// (`builtin:select-only`), beside files or weighted among others.
pub const BUILTIN: &str = "builtin:";

/// A built-in script's text by its name (`workload::tpcb::SCRIPTS`).
fn builtin_text(name: &str) -> Result<&'static str, Error> {
    crate::workload::tpcb::SCRIPTS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, text)| *text)
        .ok_or_else(|| Error::Usage(format!("unknown built-in script {name}")))
}

/// Every script of a run, checked, with the variables they use.
#[derive(Debug)]
pub struct Program {
    pub scripts: Vec<Script>,
    pub names: Names,
    /// -D definitions: slot and text.
    pub defines: Vec<(usize, String)>,
    pub protocol: Protocol,
    pub random_seed: u64,
    /// --scale, when given (otherwise read from pgbench_branches).
    pub scale: Option<u32>,
}

/// Read, parse and check the scripts named by `specs` (`FILE[@WEIGHT]`) with the `-D`
/// definitions, before any connection is made.
pub fn load(
    specs: &[String],
    defines: &[String],
    protocol: Protocol,
    random_seed: u64,
    scale: Option<u32>,
) -> Result<Program, Error> {
    let mut names = Names::default();
    for b in BUILTINS {
        names.slot(b);
    }
    let mut scripts = Vec::new();
    let mut uses = Vec::new();
    for spec in specs {
        let (path, weight) = split_weight(spec)?;
        let src = match path.strip_prefix(BUILTIN) {
            Some(name) => builtin_text(name)?.to_string(),
            None => std::fs::read_to_string(path)
                .map_err(|e| Error::Usage(format!("cannot read script {path}: {e}")))?,
        };
        let parsed =
            parse::parse(path, &src, &mut names).map_err(|e| Error::Usage(e.to_string()))?;
        let base = match path.strip_prefix(BUILTIN) {
            Some(_) => path.to_string(),
            None => std::path::Path::new(path)
                .file_name()
                .map_or(path.to_string(), |f| f.to_string_lossy().into_owned()),
        };
        let taken = |n: &str| scripts.iter().any(|s: &Script| s.name == n);
        let mut name = base.clone();
        let mut k = 2;
        while taken(&name) {
            name = format!("{base}#{k}");
            k += 1;
        }
        let digest = {
            use sha2::Digest;
            let sum = sha2::Sha256::digest(src.as_bytes());
            sum.iter().take(6).map(|b| format!("{b:02x}")).collect()
        };
        scripts.push(Script {
            name: Box::leak(name.into_boxed_str()),
            digest,
            weight,
            writes: writes(&parsed.commands),
            commands: parsed.commands,
        });
        uses.push((path.to_string(), parsed.uses));
    }
    if protocol == Protocol::Simple {
        // pgbench aborts each client that reaches the pipeline, in these words; dbduel
        // refuses the run before it starts.
        for script in &scripts {
            if let Some(c) = script
                .commands
                .iter()
                .find(|c| matches!(c.kind, Kind::Pipeline(_)))
            {
                return Err(Error::Usage(format!(
                    "{}:{}: cannot use pipeline mode with the simple query protocol: run with -M prepared",
                    script.name, c.line
                )));
            }
        }
    }
    if scripts.iter().all(|s| s.weight == 0) {
        return Err(Error::Usage(
            "the scripts' weights add up to zero: give at least one a weight above 0".into(),
        ));
    }
    let defines = defines
        .iter()
        .map(|d| {
            let (name, value) = d
                .split_once('=')
                .filter(|(n, _)| expr::valid_name(n))
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "-D {d}: write -D NAME=VALUE with a variable name of letters, digits and _"
                    ))
                })?;
            Ok((names.slot(name), value.to_string()))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    check_defined(&names, &defines, &uses)?;
    Ok(Program {
        scripts,
        names,
        defines,
        protocol,
        random_seed,
        scale,
    })
}

/// `FILE@WEIGHT` -> (FILE, WEIGHT); a file whose own name holds `@` is taken whole.
fn split_weight(spec: &str) -> Result<(&str, u32), Error> {
    match spec.rsplit_once('@') {
        Some((path, w)) if !std::path::Path::new(spec).is_file() => w.parse().map(|w| (path, w)).map_err(|_| {
            Error::Usage(format!(
                "invalid weight specification '@{w}' in -f {spec}: use FILE@WEIGHT with a whole number from 0"
            ))
        }),
        _ => Ok((spec, 1)),
    }
}

/// A script may write unless every statement reads (SELECT, VALUES, SHOW...).
fn writes(commands: &[Command]) -> bool {
    commands.iter().any(|c| match &c.kind {
        Kind::Sql { statements, .. } => statements.iter().any(|st| {
            let first = match st.parts.first() {
                Some(Part::Text(t)) => t
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_uppercase(),
                _ => String::new(),
            };
            st.control.is_none()
                && !matches!(
                    first.as_str(),
                    "SELECT" | "VALUES" | "SHOW" | "EXPLAIN" | "TABLE"
                )
        }),
        _ => false,
    })
}

/// Refuse a variable that nothing can define: no \set, no -D, no built-in, and no \gset or
/// \aset whose select list names it. pgbench itself checks nothing before the run; dbduel
/// can, because every column a \gset or \aset stores is named in the script (a column
/// without a name it can read, `SELECT *` among them, is refused when the script is parsed),
/// so a \gset without a prefix defines its select list's names, not every name.
fn check_defined(
    names: &Names,
    defines: &[(usize, String)],
    uses: &[(String, parse::Uses)],
) -> Result<(), Error> {
    let set: Vec<usize> = uses
        .iter()
        .flat_map(|(_, u)| u.sets.iter().copied())
        .collect();
    let stored: Vec<&str> = uses
        .iter()
        .flat_map(|(_, u)| u.stored.iter().map(String::as_str))
        .collect();
    for (file, u) in uses {
        for &(slot, line, col) in &u.reads {
            let name = &names.list[slot];
            let known = BUILTINS.contains(&name.as_str())
                || set.contains(&slot)
                || defines.iter().any(|(s, _)| *s == slot)
                || stored.contains(&name.as_str());
            if !known {
                return Err(Error::Usage(format!(
                    "{file}:{line}:{col}: undefined variable \"{name}\": no \\set, \\gset, \\aset or -D defines it"
                )));
            }
        }
    }
    Ok(())
}

pub struct ScriptWorkload {
    program: Arc<Program>,
    /// The run's seed and clients, whose draws the clients' generators are (pgbench's).
    seeds: rand::Seeds,
    scale: u32,
    variant: &'static str,
}

fn new(opts: &WorkloadOptions) -> Result<Box<dyn Workload>, Error> {
    let Some(program) = opts.scripts.clone() else {
        return Err(Error::Usage(
            "the script workload runs pgbench-format scripts: `dbduel run FILE.sql --dsn ...` or `-f FILE[@WEIGHT]`; \
             it prepares, checks and cleans up nothing (prepare the data a script needs, e.g. `dbduel prepare tpcb`)"
                .into(),
        ));
    };
    super::options::parse(&super::options::NONE, "scripts", &opts.params)?;
    let variant = program
        .scripts
        .iter()
        .map(|s| format!("{}@{}", s.name, s.weight))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Box::new(ScriptWorkload {
        seeds: rand::Seeds {
            seed: program.random_seed,
            clients: opts.clients,
        },
        scale: program.scale.unwrap_or(1),
        program,
        variant: Box::leak(variant.into_boxed_str()),
    }))
}

fn nothing_to_do(what: &str) -> Error {
    Error::Usage(format!(
        "a script has nothing to {what}: it runs on data you prepare yourself (e.g. `dbduel prepare tpcb`)"
    ))
}

impl Workload for ScriptWorkload {
    fn weighable(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        ENTRY.name
    }
    fn variant(&self) -> &'static str {
        self.variant
    }
    fn scale(&self) -> Option<u32> {
        Some(self.scale)
    }
    fn prepare(&self, _: &dyn Engine, _: &mut dyn Session, _: &Loader) -> Result<(), Error> {
        Err(nothing_to_do("prepare"))
    }
    /// A script runs on whatever data is there: none of its own.
    fn dataset(&self) -> Option<String> {
        None
    }
    /// Each script's text by its digest, so that a result tells two scripts of one name apart.
    fn settings(&self) -> std::collections::BTreeMap<String, String> {
        self.program
            .scripts
            .iter()
            .map(|s| (format!("sha256 of {}", s.name), s.digest.clone()))
            .collect()
    }
    fn user_statements(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for script in &self.program.scripts {
            for command in &script.commands {
                let parse::Kind::Sql { statements, .. } = &command.kind else {
                    continue;
                };
                for st in statements {
                    let text: String = st
                        .parts
                        .iter()
                        .map(|p| match p {
                            parse::Part::Text(t) => t.clone(),
                            parse::Part::Var { raw, .. } => format!(":{raw}"),
                        })
                        .collect();
                    out.push((format!("{}:{}", script.name, st.line), text));
                }
            }
        }
        out
    }
    fn cleanup(&self, _: &dyn Engine, _: &mut dyn Session) -> Result<(), Error> {
        Err(nothing_to_do("clean up"))
    }
    fn check(&self, _: &dyn Engine, _: &mut dyn Session) -> Result<Vec<CheckItem>, Error> {
        Err(nothing_to_do("check"))
    }

    /// `:scale` is -D scale=N, else the number of pgbench_branches rows (as pgbench reads it
    /// for its built-in scripts, and as `run tpcb` does), else --scale, else 1.
    fn attach(&mut self, _: &dyn Engine, s: &mut dyn Session) -> Result<Vec<String>, Error> {
        let scale_slot = self.program.names.find("scale").expect("built-in");
        let defined = self
            .program
            .defines
            .iter()
            .find(|(slot, _)| *slot == scale_slot);
        if let Some((_, v)) = defined {
            self.scale = v.trim().parse().unwrap_or(0);
            return Ok(vec![]);
        }
        let counted = s
            .query_text("SELECT count(*) FROM pgbench_branches")
            .ok()
            .and_then(|rows| rows.first().and_then(|r| r.first()).and_then(Value::as_i64))
            .filter(|&n| n > 0);
        let (scale, warning) = match (counted, self.program.scale) {
            (Some(n), Some(given)) if n != i64::from(given) => (
                n as u32,
                Some(format!(
                    "--scale {given} ignored: pgbench_branches holds scale {n} (-D scale={given} sets :scale anyway)"
                )),
            ),
            (Some(n), _) => (n as u32, None),
            (None, Some(given)) => (given, None),
            (None, None) => (
                1,
                Some(
                    ":scale is 1: no pgbench_branches rows to count (give --scale or -D scale=N)"
                        .into(),
                ),
            ),
        };
        self.scale = scale;
        Ok(warning.into_iter().collect())
    }

    fn transaction_types(&self) -> Vec<&'static str> {
        self.program.scripts.iter().map(|s| s.name).collect()
    }

    fn client(
        &self,
        _: &dyn Engine,
        _: &mut dyn Session,
        client_id: u32,
        _: u64,
    ) -> DbResult<Box<dyn Client>> {
        Ok(Box::new(client::ScriptClient::new(
            self.program.clone(),
            client_id,
            self.seeds,
            self.scale,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::eval::{Ctx, describe, eval};
    use super::parse::{Kind, parse};
    use super::rand::Prng;
    use super::*;

    /// Run a script's \set lines with -D definitions; returns what each one computed.
    fn evaluate(src: &str, defines: &[(&str, &str)]) -> Vec<String> {
        let mut names = Names::default();
        let parsed = parse("t.sql", src, &mut names).unwrap_or_else(|e| panic!("{e}"));
        let mut vars = vec![Val::Undefined; names.list.len()];
        for (n, v) in defines {
            vars[names.find(n).expect("used")] = Val::Text(v.to_string());
        }
        let mut rng = Prng::seed(1);
        let mut out = Vec::new();
        for c in &parsed.commands {
            let Kind::Set { var, expr } = &c.kind else {
                continue;
            };
            let mut cx = Ctx {
                vars: &vars,
                names: &names.list,
                rng: &mut rng,
                script: 0,
                command: c.number,
            };
            let v = eval(expr, &mut cx).unwrap_or_else(|e| panic!("line {}: {e}", c.line));
            out.push(describe(&v));
            vars[*var] = v;
        }
        out
    }

    /// Expressions and the values pgbench 15.18 printed for them with debug() (run with
    /// -D foo=-10.1 -D nul=null -D bt=t -D bf=of -D dd=1.5).
    const PGBENCH_COMPUTED: &[(&str, &str)] = &[
        ("17 / (4|1) + ( 4 + (7 >> 2))", "int 8"),
        ("- (3 * 4 - (-(~ 1) + -(~ 0))) / -1 + 3 % -1", "int 9"),
        (
            "64 % (((2 + 1 * 2 + (1 # 2) | 4 * (2 & 11)) - (1 << 2)) + 2)",
            "int 12",
        ),
        ("sqrt(+1.5 * 2.0) * abs(-0.8E1)", "double 13.856406460551"),
        ("double(1 + 1) * (-75.0 / :foo)", "double 14.8514851485149"),
        ("pi() * 4.9", "double 15.39380400259"),
        ("greatest(4, 2, -1.17) * 4.0 * Ln(Exp(1.0))", "double 16"),
        ("least(-5.18, .0E0, 1.0/0) * -3.3", "double 17.094"),
        ("int(7.5) + int(8.5) + int(-2.5)", "int 14"),
        ("pow(-2,-3)", "double -0.125"),
        ("pow(10,30)", "double 1e+30"),
        ("1.0 = 0.0 and 1.0 != 0.0", "boolean false"),
        (
            "case when false THEN -1 when 1 = 1 then 13 + 19 + 2.0 end",
            "double 34",
        ),
        (
            "10 + mod(13 * 7 + 12, 13) - mod(-19 * 11 - 17, 19)",
            "int 39",
        ),
        ("NULL + NULL * exp(NULL)", "null"),
        (":nul IS NULL AND NOT :bf AND :bt", "boolean true"),
        ("hash(10, 5432)", "int -5817877081768721676"),
        ("hash_fnv1a(10, 5432)", "int -7793829335365542153"),
        ("hash_fnv1a(-1234567890123, 0)", "int 7619490931894420147"),
        ("hash_murmur2(0, 0)", "int 8217090173679840641"),
        ("hash_murmur2(-77, 123456789)", "int 8881865499634177672"),
        ("permute(12345, 1000000, -3)", "int 340448"),
        ("permute(7, 100, 12345)", "int 62"),
        ("-9223372036854775808", "int -9223372036854775808"),
        ("1e300 * 1e300", "double Infinity"),
        ("123456789.123456789", "double 123456789.123457"),
        ("0.000012345678901234567", "double 1.23456789012346e-05"),
        ("2 = 2.0 and 3 > 2.5 and not 1 >= 2", "boolean true"),
        ("~5 + 1", "int -7"),
        ("NOT true IS false", "boolean true"),
        (
            "case when 0 then 1 when 0.0 then 2 when :nul then 3 else 4 end",
            "int 4",
        ),
        (":dd + 1", "double 2.5"),
        ("abs(-2.5) + greatest(1) + least(2, 3.5)", "double 5.5"),
        ("1 << 65", "int 2"),
        ("-7 / 2 + -7 % 2", "int -4"),
        ("5 / 2.0", "double 2.5"),
        (":bt OR :nul", "boolean true"),
        (":nul OR true", "null"),
        (
            "random(5, 5) + random_zipfian(3, 3, 2.0) + random_gaussian(7, 7, 2.5) + random_exponential(9, 9, 1.5)",
            "int 24",
        ),
        ("1.0e15", "double 1e+15"),
        ("1.0e14 + 0.5", "double 100000000000000"),
        ("-0.0001", "double -0.0001"),
    ];

    #[test]
    fn expressions_compute_what_pgbench_computes() {
        let src: String = PGBENCH_COMPUTED
            .iter()
            .enumerate()
            .map(|(i, (e, _))| format!("\\set v{i} {e}\n"))
            .collect();
        let defines = [
            ("foo", "-10.1"),
            ("nul", "null"),
            ("bt", "t"),
            ("bf", "of"),
            ("dd", "1.5"),
        ];
        let got = evaluate(&src, &defines);
        for ((e, want), got) in PGBENCH_COMPUTED.iter().zip(&got) {
            assert_eq!(got, want, "{e}");
        }
    }

    #[test]
    fn runtime_errors_as_pgbench_words_them() {
        let fails = |e: &str| {
            let mut names = Names::default();
            let (expr, _) =
                super::expr::parse(e, &mut names).unwrap_or_else(|x| panic!("{}", x.message));
            let vars = vec![Val::Undefined; names.list.len()];
            let mut rng = Prng::seed(1);
            let mut cx = Ctx {
                vars: &vars,
                names: &names.list,
                rng: &mut rng,
                script: 0,
                command: 1,
            };
            eval(&expr, &mut cx).expect_err(e)
        };
        assert_eq!(fails("1/0"), "division by zero");
        assert_eq!(fails("mod(1, 0)"), "division by zero");
        assert_eq!(fails(":nosuch + 1"), "undefined variable \"nosuch\"");
        assert_eq!(fails("random(5, 3)"), "empty range given to random");
        assert_eq!(
            fails("random(-9223372036854775808, 9223372036854775807)"),
            "random range is too large"
        );
        assert!(
            fails("random_gaussian(0, 10, 1.0)")
                .starts_with("gaussian parameter must be at least 2")
        );
        assert!(
            fails("random_exponential(0, 10, 0.0)")
                .starts_with("exponential parameter must be greater than zero")
        );
        assert!(
            fails("random_zipfian(0, 10, 1)")
                .starts_with("zipfian parameter must be in range [1.001, 1000]")
        );
        assert!(
            fails("random_zipfian(0, 10, 1000000)")
                .starts_with("zipfian parameter must be in range")
        );
        assert_eq!(fails("NOT 0.0"), "cannot coerce double to boolean");
        assert_eq!(fails("TRUE + 2"), "cannot coerce boolean to int");
        assert_eq!(fails("ln(TRUE)"), "cannot coerce boolean to double");
        assert!(fails("int(1E32)").starts_with("double to int overflow for 1000000000000000"));
        assert_eq!(fails("(1<<62) + (1<<62)"), "bigint add out of range");
        assert_eq!(
            fails("0 - (1<<62) - (1<<62) - (1<<62)"),
            "bigint sub out of range"
        );
        assert_eq!(fails("2 * (1<<62)"), "bigint mul out of range");
        assert_eq!(
            fails("-9223372036854775808 / -1"),
            "bigint div out of range"
        );
        assert_eq!(
            fails("permute(0, 0, 1)"),
            "permute size parameter must be greater than zero"
        );
    }

    #[test]
    fn no_expression_makes_evaluation_panic() {
        let atoms = [
            "0",
            "-1",
            "9223372036854775807",
            "-9223372036854775808",
            "1.5",
            "1e308",
            "-0.0",
            "true",
            "null",
            ":v",
            "pi()",
            "abs(:v)",
            "int(:v)",
            "random(:v, 3)",
            "random_zipfian(-9223372036854775808, -9223372036854775800, 1.5)",
            "random_gaussian(:v, 7, 2)",
            "random_exponential(:v, 9, 0.5)",
            "permute(:v, 5)",
            "hash(:v)",
            "greatest(:v, 1.5)",
            "least(:v)",
            "ln(:v)",
            "sqrt(:v)",
            "pow(:v, 2)",
        ];
        let ops = [
            "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "#", "=", "<>", "<", ">=", " and ",
            " or ",
        ];
        let mut rng = Prng::seed(11);
        let mut pick = |n: usize| rng.range_u64(0, n as u64 - 1) as usize;
        for i in 0..20_000 {
            let mut e = atoms[pick(atoms.len())].to_string();
            for _ in 0..pick(4) {
                e = format!(
                    "({e}) {} {}",
                    ops[pick(ops.len())],
                    atoms[pick(atoms.len())]
                );
            }
            let src = format!("\\set v {}\n\\set w {e}\n", atoms[pick(5)]);
            let mut names = Names::default();
            let parsed = parse("f.sql", &src, &mut names).unwrap_or_else(|x| panic!("{x}"));
            let mut vars = vec![Val::Undefined; names.list.len()];
            vars[names.find("default_seed").unwrap_or(0)] = Val::Int(i);
            let mut r = Prng::seed(i as u64);
            for c in &parsed.commands {
                if let Kind::Set { var, expr } = &c.kind {
                    let mut cx = Ctx {
                        vars: &vars,
                        names: &names.list,
                        rng: &mut r,
                        script: 0,
                        command: 1,
                    };
                    if let Ok(v) = eval(expr, &mut cx) {
                        vars[*var] = v;
                    }
                }
            }
        }
    }

    #[test]
    fn weights_follow_the_last_at_sign() {
        assert_eq!(split_weight("a.sql@5").unwrap(), ("a.sql", 5));
        assert_eq!(split_weight("dir@x/a.sql@0").unwrap(), ("dir@x/a.sql", 0));
        assert_eq!(split_weight("a.sql").unwrap(), ("a.sql", 1));
        let e = split_weight("a.sql@-1").unwrap_err().to_string();
        assert!(e.contains("invalid weight specification '@-1'"), "{e}");
    }

    #[test]
    fn scripts_of_one_name_and_other_texts_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let settings_of = |sub: &str, text: &str| {
            let d = dir.path().join(sub);
            std::fs::create_dir_all(&d).unwrap();
            let path = d.join("q.sql");
            std::fs::write(&path, text).unwrap();
            let program = load(
                &[path.display().to_string()],
                &[],
                Protocol::Simple,
                1,
                None,
            )
            .unwrap();
            let w = ScriptWorkload {
                program: Arc::new(program),
                seeds: rand::Seeds {
                    seed: 1,
                    clients: 1,
                },
                scale: 1,
                variant: "q.sql@1",
            };
            w.settings()
        };
        let a = settings_of("a", "SELECT 1;\n");
        let b = settings_of("b", "SELECT 2;\n");
        assert_eq!(a.keys().collect::<Vec<_>>(), ["sha256 of q.sql"]);
        assert_ne!(a, b);
        assert_eq!(a, settings_of("c", "SELECT 1;\n"));
    }

    #[test]
    fn undefined_variables_are_refused_with_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("u.sql");
        std::fs::write(&path, "\\set a 1\nSELECT :a, :scale;\n\\set b :a + :c\n").unwrap();
        let spec = [path.display().to_string()];
        let e = load(&spec, &[], Protocol::Simple, 1, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "u.sql:3:13: undefined variable \"c\": no \\set, \\gset, \\aset or -D defines it"
            ),
            "{e}"
        );
        assert!(load(&spec, &["c=2".into()], Protocol::Simple, 1, None).is_ok());
        let gset = dir.path().join("g.sql");
        std::fs::write(&gset, "SELECT 1 AS c \\gset p_\n\\set b :p_c\n").unwrap();
        let load_one = |src: &str| {
            std::fs::write(&gset, src).unwrap();
            load(
                &[gset.display().to_string()],
                &[],
                Protocol::Simple,
                1,
                None,
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
        };
        assert_eq!(load_one("SELECT 1 AS c \\gset p_\n\\set b :p_c\n"), Ok(()));
        // A \gset without a prefix defines the names of its select list, nothing else.
        assert_eq!(
            load_one("SELECT 1 AS c, d \\gset\n\\set b :c + :d\n"),
            Ok(())
        );
        assert_eq!(load_one("SELECT 1 AS c \\aset\n\\set b :c\n"), Ok(()));
        let e = load_one("SELECT 1 AS c \\gset\n\\set b :c + :e\n").unwrap_err();
        assert!(
            e.ends_with(
                "g.sql:2:13: undefined variable \"e\": no \\set, \\gset, \\aset or -D defines it"
            ),
            "{e}"
        );
        let e = load_one("SELECT 1 AS c \\gset p_\nSELECT :c;\n").unwrap_err();
        assert!(
            e.ends_with(
                "g.sql:2:8: undefined variable \"c\": no \\set, \\gset, \\aset or -D defines it"
            ),
            "{e}"
        );
    }

    #[test]
    fn defined_doubles_out_of_range_are_malformed() {
        let v = Val::Text("1e309".into()).typed("x").unwrap_err();
        assert_eq!(v, "malformed variable \"x\" value: \"1e309\"");
        assert!(matches!(
            Val::Text("1e308".into()).typed("x"),
            Ok(Val::Double(_))
        ));
        assert!(
            matches!(Val::Text("inf".into()).typed("x"), Ok(Val::Double(d)) if d.is_infinite())
        );
    }

    #[test]
    fn variables_read_as_pgbench_reads_them() {
        let got = evaluate(
            "\\set a :s + 1\n\\set b NOT :y\n\\set c :n IS NULL\n\\set d :e * 2\n",
            &[("s", " 41"), ("y", "ye"), ("n", "NULL"), ("e", "1e3")],
        );
        assert_eq!(
            got,
            ["int 42", "boolean false", "boolean true", "double 2000"]
        );
    }
}
