//! The engines' bulk paths hold every value as it was given: text with the characters each
//! path escapes (tab, newline, carriage return, backslash, quotes, `\N`), NULLs, numbers; on
//! MariaDB also text in latin1 and utf8mb4 columns, a character a column cannot hold refused
//! by name, and the multi-row INSERT path taken when the server refuses local loads.

use std::sync::Arc;

use dbduel::engine::{Load, RowSource, Session, Value};
use libtest_mimic::Trial;

use crate::env::{Env, TARGETS, Target, ensure, session, with_env};

/// Rows given as a list.
struct Given<I>(I, u64);

impl<I: Iterator<Item = Vec<Value>>> RowSource for Given<I> {
    fn next_row(&mut self, row: &mut Vec<Value>) -> bool {
        match self.0.next() {
            Some(r) => {
                *row = r;
                true
            }
            None => false,
        }
    }
    fn total(&self) -> u64 {
        self.1
    }
}

fn load(
    s: &mut dyn Session,
    table: &str,
    columns: &[&str],
    rows: &[Vec<Value>],
) -> Result<u64, String> {
    let mut given = Given(rows.iter().cloned(), rows.len() as u64);
    s.bulk_load(table, columns, &mut given, &mut |_| true, Load::Replace)
        .map_err(|e| e.message)
}

/// Text that each bulk path has to escape, in some way.
const TRICKY: &[&str] = &[
    "tab\there",
    "line\nbreak",
    "carriage\rreturn",
    "back\\slash",
    "\\N",
    "\\",
    "it's \"quoted\"",
    "",
    "a,b;c|d",
    " padded ",
];

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out = Vec::new();
    for &target in TARGETS {
        out.push(with_env(
            env,
            format!("load::values_round_trip::{}", target.label()),
            move |env| round_trip(env, target),
        ));
    }
    out.push(with_env(
        env,
        "load::mariadb_character_sets_and_refused_local_loads",
        mariadb_character_sets,
    ));
    out
}

fn round_trip(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "round_trip");
    let mut s = session(&dsn);
    let engine_clause = match target {
        Target::MariaDb(e) => format!(" ENGINE={e}"),
        _ => String::new(),
    };
    s.batch(&format!(
        "CREATE TABLE tricky (id INT NOT NULL PRIMARY KEY, t VARCHAR(100), f DOUBLE PRECISION){engine_clause}"
    ))
    .map_err(|e| e.message)?;
    let mut rows: Vec<Vec<Value>> = TRICKY
        .iter()
        .enumerate()
        .map(|(i, t)| {
            vec![
                Value::Int(i as i64),
                Value::Text(t.to_string()),
                Value::Float(i as f64 + 0.25),
            ]
        })
        .collect();
    rows.push(vec![Value::Int(100), Value::Null, Value::Null]);
    rows.push(vec![
        Value::Int(-5),
        Value::Text("negative".into()),
        Value::Float(-1.5e-7),
    ]);
    let n = load(s.as_mut(), "tricky", &["id", "t", "f"], &rows)?;
    ensure(n == rows.len() as u64, || {
        format!("loaded {n} of {}", rows.len())
    })?;
    // Firebird's text reads back without trailing blanks (for CHAR's padding): lengths too.
    let length = if matches!(target, Target::Sqlite) {
        "length"
    } else {
        "char_length"
    };
    let back = s
        .query_text(&format!(
            "SELECT id, t, f, {length}(t) FROM tricky ORDER BY id"
        ))
        .map_err(|e| e.message)?;
    let mut want = rows.clone();
    want.sort_by_key(|r| r[0].as_i64());
    ensure(back.len() == want.len(), || {
        format!("{} rows read back", back.len())
    })?;
    for (got, want) in back.iter().zip(&want) {
        let text = |v: &Value| match v {
            Value::Null => None,
            v => Some(v.to_string().trim_end().to_string()),
        };
        let chars = |v: &Value| match v {
            Value::Null => None,
            v => Some(v.to_string().chars().count() as i64),
        };
        let float = |v: &Value| match v {
            Value::Null => None,
            v => v.to_string().parse::<f64>().ok(),
        };
        ensure(
            got[0].as_i64() == want[0].as_i64()
                && text(&got[1]) == text(&want[1])
                && got[3].as_i64() == chars(&want[1])
                && float(&got[2]) == float(&want[2]),
            || format!("row {want:?} read back as {got:?}"),
        )?;
    }
    Ok(())
}

fn mariadb_character_sets(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::MariaDb("InnoDB"), "charsets");
    let mut s = session(&dsn);
    s.batch(
        "CREATE TABLE cs (id INT PRIMARY KEY, l VARCHAR(20) CHARACTER SET latin1, \
         u VARCHAR(20) CHARACTER SET utf8mb4, a VARCHAR(20) CHARACTER SET ascii)",
    )
    .map_err(|e| e.message)?;
    let row = |id: i64, l: &str, u: &str| {
        vec![
            Value::Int(id),
            Value::Text(l.into()),
            Value::Text(u.into()),
            Value::Text("plain".into()),
        ]
    };
    let rows = vec![row(1, "café\tü", "😀 €"), row(2, "ÿ", "日本")];
    let columns = ["id", "l", "u", "a"];
    load(s.as_mut(), "cs", &columns, &rows)?;
    let read = |s: &mut dyn Session| -> Result<Vec<Vec<String>>, String> {
        Ok(s.query_text("SELECT l, u, a FROM cs ORDER BY id")
            .map_err(|e| e.message)?
            .iter()
            .map(|r| r.iter().map(Value::to_string).collect())
            .collect())
    };
    let want = vec![
        vec!["café\tü".to_string(), "😀 €".into(), "plain".into()],
        vec!["ÿ".to_string(), "日本".into(), "plain".into()],
    ];
    let got = read(s.as_mut())?;
    ensure(got == want, || format!("read back {got:?}"))?;
    // A character latin1 does not hold: refused, naming the column; nothing is kept.
    let refused = load(s.as_mut(), "cs", &columns, &[row(3, "日", "x")]);
    ensure(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("column l") && e.contains("latin1")),
        || format!("a Japanese character into latin1: {refused:?}"),
    )?;
    // The server refuses local loads: the rows go in through INSERTs.
    let mut admin = env.admin(Target::MariaDb("InnoDB"));
    admin
        .batch("SET GLOBAL local_infile = 0")
        .map_err(|e| e.message)?;
    let mut fresh = session(&dsn);
    let loaded = load(fresh.as_mut(), "cs", &columns, &rows);
    admin
        .batch("SET GLOBAL local_infile = 1")
        .map_err(|e| e.message)?;
    ensure(loaded == Ok(2), || {
        format!("with local_infile off: {loaded:?}")
    })?;
    let got = read(fresh.as_mut())?;
    ensure(got == want, || format!("read back after INSERTs {got:?}"))
}
