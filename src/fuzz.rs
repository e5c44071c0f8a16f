//! Tests only: the parsers that take user text (DSN, plan, workload file, pgbench script and
//! expression, YCSB properties, `--slo`, `--fail-if`, result files for `compare`, shard files for
//! `merge`) fuzzed with proptest. Each parser's seeds are the files of `fuzz/corpus/<parser>/`
//! (valid inputs of every form it takes), mutated by random edits (tokens that parsers trip on
//! inserted, ranges deleted or repeated), beside random strings; every input must end in a value or
//! a one-line refusal within 5 s, never a panic or a hang. `DBDUEL_FUZZ_CASES` sets the cases per
//! parser (the suite's share by default); `scripts/fuzz` runs many more for a bounded time. Inputs
//! that failed are kept by proptest in `proptest-regressions/fuzz.txt` and tried first on every
//! later run.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::engine::{self, EngineOptions, Protocol};
use crate::error::Error;

/// How long one input may take before the parser is taken to hang.
const HANG: Duration = Duration::from_secs(5);

/// Cases per parser when `DBDUEL_FUZZ_CASES` is not set.
const SUITE_CASES: u32 = 96;

/// Text that parsers of this kind trip on: quotes, brackets, separators, escapes, extreme
/// numbers, control and non-ASCII characters, and the tokens of each language.
const TOKENS: &[&str] = &[
    "=",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    ":",
    "::",
    "\\",
    "\n",
    "\r\n",
    "\t",
    "%",
    "%zz",
    "@",
    "?",
    "&",
    "#",
    "-",
    "-1",
    "0",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "99999999999999999999",
    "9223372036854775807",
    "-9223372036854775808",
    "\u{0}",
    "\u{feff}",
    "é",
    "𝄞",
    ":scale",
    ":aid",
    "\\set",
    "\\if",
    "\\else",
    "\\endif",
    "\\sleep",
    "\\gset",
    "\\;",
    "BEGIN;",
    "END;",
    "/*",
    "*/",
    "--",
    "$$",
    ";",
    "(",
    ")",
    ",",
    "<",
    "<=",
    ">",
    "ms",
    "us",
    "s",
    "%",
    "true",
    "[profile.x]",
    "[dsn]",
    "[options]",
    "[[table]]",
    "kind = ",
    "rows = ",
    "gen = ",
    "postgres://",
    "sqlite://",
    "mysql://",
    "firebird://",
    "?password=",
    "&",
    "[::1]",
    "\"windows\": [",
    "\"tps\": ",
    "null",
    "{}",
    "[]",
    "p99",
    "tps",
    "errors",
];

/// The seeds of one parser.
fn seeds(parser: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(parser);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let seeds: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds
}

#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, String),
    Delete(usize, usize),
    Repeat(usize, usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let text = prop_oneof![
        3 => proptest::sample::select(TOKENS).prop_map(str::to_string),
        1 => "\\PC{0,12}",
        1 => proptest::collection::vec(any::<char>(), 0..6).prop_map(String::from_iter),
    ];
    prop_oneof![
        3 => (any::<usize>(), text).prop_map(|(at, t)| Edit::Insert(at, t)),
        2 => (any::<usize>(), 1..48usize).prop_map(|(at, n)| Edit::Delete(at, n)),
        1 => (any::<usize>(), 1..24usize, 2..6usize).prop_map(|(at, n, k)| Edit::Repeat(at, n, k)),
    ]
}

/// The char boundary at or before `at` (taken modulo the length).
fn boundary(s: &str, at: usize) -> usize {
    s.floor_char_boundary(at % (s.len() + 1))
}

fn apply(mut s: String, edits: &[Edit]) -> String {
    for e in edits {
        match e {
            Edit::Insert(at, t) => {
                let at = boundary(&s, *at);
                s.insert_str(at, t);
            }
            Edit::Delete(at, n) => {
                let a = boundary(&s, *at);
                let b = s.floor_char_boundary((a + n).min(s.len()));
                s.replace_range(a..b, "");
            }
            Edit::Repeat(at, n, k) => {
                let a = boundary(&s, *at);
                let b = s.floor_char_boundary((a + n).min(s.len()));
                let piece = s[a..b].repeat(*k - 1);
                s.insert_str(b, &piece);
            }
        }
    }
    s
}

/// A seed of `parser` under random edits, or a random string.
fn input(parser: &str) -> impl Strategy<Value = String> {
    let seeds = seeds(parser);
    prop_oneof![
        6 => (proptest::sample::select(seeds), proptest::collection::vec(edit(), 0..6))
            .prop_map(|(seed, edits)| apply(seed, &edits)),
        1 => "\\PC{0,80}",
    ]
}

fn config() -> ProptestConfig {
    let cases = std::env::var("DBDUEL_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(SUITE_CASES);
    ProptestConfig {
        cases,
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    }
}

/// A parser under test: a value (nothing kept) or its refusal.
type Parser = fn(&str) -> Result<(), Error>;

/// How a refusal may be shaped: a value given on the command line may come back quoted, its
/// own line breaks with it; a file's refusal names a line and is one line.
#[derive(Clone, Copy)]
enum Echo {
    Value,
    File,
}

/// Run `parse` on `text` on a thread of its own: a value or a one-line refusal within `HANG`,
/// never a panic or a hang.
fn judge(
    text: &str,
    echo: Echo,
    parse: fn(&str) -> Result<(), Error>,
) -> Result<(), TestCaseError> {
    let (tx, rx) = mpsc::channel();
    let owned = text.to_string();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(|| parse(&owned));
        let _ = tx.send(outcome);
    });
    let outcome = rx
        .recv_timeout(HANG)
        .map_err(|_| TestCaseError::fail(format!("no answer within {HANG:?}: it hangs")))?;
    let refused = match outcome {
        Err(_) => return Err(TestCaseError::fail("it panicked")),
        Ok(Ok(())) => return Ok(()),
        Ok(Err(e)) => e.to_string(),
    };
    // A value's own line breaks may come back with it, as often as it is quoted.
    let own_breaks = matches!(echo, Echo::Value) && text.contains('\n');
    prop_assert!(
        !refused.trim().is_empty() && (own_breaks || !refused.trim_end().contains('\n')),
        "not a one-line refusal: {refused:?}"
    );
    Ok(())
}

/// A file's text, written where the parser that reads files finds it.
fn file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write");
    (dir, path)
}

fn dsn(text: &str) -> Result<(), Error> {
    let dsn = engine::parse_dsn(text)?;
    engine::open(&dsn, &EngineOptions::default(), Protocol::Simple).map(drop)
}

fn plan(text: &str) -> Result<(), Error> {
    // Where the shipped plans are, so that a workload file they name is found.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/fuzz.toml");
    crate::sweep::plan_file::PlanFile::parse(text, &path).map(drop)
}

fn workload(text: &str) -> Result<(), Error> {
    crate::workload::custom::spec::Spec::parse(text, "fuzz.toml", "fuzz").map(drop)
}

fn script(text: &str) -> Result<(), Error> {
    let (_dir, path) = file("fuzz.sql", text);
    let spec = [path.display().to_string()];
    crate::workload::script::load(&spec, &[], Protocol::Simple, 0, None).map(drop)
}

fn expr(text: &str) -> Result<(), Error> {
    use crate::workload::script::expr::{Names, parse};
    parse(text, &mut Names::default())
        .map(drop)
        .map_err(|e| Error::Usage(format!("column {}: {}", e.at + 1, e.message)))
}

fn ycsb(text: &str) -> Result<(), Error> {
    use crate::workload::ycsb::props;
    let pairs = props::parse_file(text, "fuzz.properties")?;
    props::resolve(None, &pairs.into_iter().collect()).map(drop)
}

fn slo(text: &str) -> Result<(), Error> {
    crate::capacity::slo::Objective::parse(text).map(drop)
}

fn fail_if(text: &str) -> Result<(), Error> {
    crate::report::compare::fail_if::parse(text).map(drop)
}

fn result(text: &str) -> Result<(), Error> {
    let (_dir, path) = file("fuzz.json", text);
    crate::report::compare::load_file(&path).map(drop)
}

/// Shard 0's file mutated, merged with shard 1's as written (`fuzz/partner/`).
fn shard(text: &str) -> Result<(), Error> {
    let other = include_str!("../fuzz/partner/tpcb-shard-1-of-2.json");
    let (dir, mutated) = file("0.json", text);
    let kept = dir.path().join("1.json");
    std::fs::write(&kept, other).expect("write");
    let shards = crate::merge::read(&[mutated, kept])?;
    crate::merge::merge(shards).map(drop)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn dsn_parsed_or_refused(text in input("dsn")) {
        judge(&text, Echo::Value, dsn)?;
    }

    #[test]
    fn plan_parsed_or_refused(text in input("plan")) {
        judge(&text, Echo::File, plan)?;
    }

    #[test]
    fn workload_file_parsed_or_refused(text in input("workload")) {
        judge(&text, Echo::File, workload)?;
    }

    #[test]
    fn script_parsed_or_refused(text in input("script")) {
        judge(&text, Echo::File, script)?;
    }

    #[test]
    fn expression_parsed_or_refused(text in input("expr")) {
        judge(&text, Echo::Value, expr)?;
    }

    #[test]
    fn ycsb_properties_parsed_or_refused(text in input("ycsb")) {
        judge(&text, Echo::File, ycsb)?;
    }

    #[test]
    fn slo_parsed_or_refused(text in input("slo")) {
        judge(&text, Echo::Value, slo)?;
    }

    #[test]
    fn fail_if_parsed_or_refused(text in input("fail_if")) {
        judge(&text, Echo::Value, fail_if)?;
    }

    #[test]
    fn result_file_read_or_refused(text in input("result")) {
        judge(&text, Echo::File, result)?;
    }

    #[test]
    fn shard_merged_or_refused(text in input("shard")) {
        judge(&text, Echo::File, shard)?;
    }
}

#[test]
fn every_seed_is_accepted() {
    let parsers: [(&str, Parser); 10] = [
        ("dsn", dsn),
        ("plan", plan),
        ("workload", workload),
        ("script", script),
        ("expr", expr),
        ("ycsb", ycsb),
        ("slo", slo),
        ("fail_if", fail_if),
        ("result", result),
        ("shard", shard),
    ];
    for (name, parse) in parsers {
        for seed in seeds(name) {
            if let Err(e) = parse(&seed) {
                panic!("a {name} seed is refused: {e}\n{seed}");
            }
        }
    }
}
