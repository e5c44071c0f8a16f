//! The declarative workload file (TOML): tables with typed columns and a generator each (as
//! written, a serde enum tagged by `kind`, each kind taking only its own keys), a primary key and
//! indexes, row counts, and weighted parameterised queries. Reading validates everything and names
//! the file and line of the first mistake.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::generate::{GenSpec, Kind, parse_timestamp};
use crate::engine::Value;
use crate::error::Error;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    name: Option<String>,
    about: Option<String>,
    #[serde(default)]
    table: Vec<Spanned<TableSpec>>,
    #[serde(default)]
    query: Vec<Spanned<QuerySpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableSpec {
    name: String,
    rows: i64,
    #[serde(default)]
    primary_key: Vec<String>,
    columns: Vec<Spanned<ColumnSpec>>,
    #[serde(default)]
    indexes: Vec<Spanned<IndexSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ColumnSpec {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    /// Read into `GenFields` where the column is checked, so that errors name the column.
    #[serde(rename = "gen")]
    generator: Spanned<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexSpec {
    name: String,
    columns: Vec<String>,
    #[serde(default)]
    unique: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuerySpec {
    name: String,
    #[serde(default = "one")]
    weight: f64,
    sql: Spanned<String>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<toml::Value>>,
}

fn one() -> f64 {
    1.0
}

/// A generator as written: `kind` names the variant, and each kind takes its own keys only
/// (`deny_unknown_fields`). What the keys must hold is checked by `generator`.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum GenFields {
    Sequence {
        start: Option<i64>,
        step: Option<i64>,
    },
    Uniform {
        min: Option<i64>,
        max: Option<i64>,
    },
    Zipfian {
        min: Option<i64>,
        max: Option<i64>,
        s: Option<f64>,
    },
    Float {
        min: Option<f64>,
        max: Option<f64>,
    },
    #[serde(rename = "string")]
    Str {
        min: Option<i64>,
        max: Option<i64>,
    },
    Choice {
        values: Option<Vec<toml::Value>>,
        weights: Option<Vec<f64>>,
    },
    Timestamp {
        from: Option<String>,
        to: Option<String>,
    },
    Foreign {
        table: Option<String>,
        column: Option<String>,
    },
    /// A kind not listed above, named in the error.
    #[serde(other)]
    Unknown,
}

/// A column type, written the same way on every engine and mapped by the dialect files.
#[derive(Debug, Clone, PartialEq)]
pub enum ColType {
    Int,
    BigInt,
    Double,
    Text,
    Timestamp,
    Varchar(u32),
    Char(u32),
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: ColType,
    pub generator: GenSpec,
}

#[derive(Debug, Clone)]
pub struct Index {
    pub name: String,
    pub columns: Vec<String>,
    pub unique: bool,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    /// Rows per unit of scale.
    pub rows: i64,
    pub primary_key: Vec<String>,
    pub columns: Vec<Column>,
    pub indexes: Vec<Index>,
}

#[derive(Debug, Clone)]
pub struct Query {
    pub name: String,
    pub weight: f64,
    /// The SQL with `?` in place of each `:param`.
    pub sql: String,
    /// The generator of each `?`, in order.
    pub params: Vec<GenSpec>,
    /// Whether the statement reads only (SELECT or WITH).
    pub reads: bool,
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub about: String,
    pub tables: Vec<Table>,
    pub queries: Vec<Query>,
}

impl Spec {
    pub fn read(path: &Path) -> Result<Spec, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Usage(format!("cannot read workload file {}: {e}", path.display()))
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "custom".into());
        Spec::parse(&text, &path.display().to_string(), &stem)
    }

    /// Parse and validate; errors read `FILE:LINE: what to change`.
    pub fn parse(text: &str, file: &str, stem: &str) -> Result<Spec, Error> {
        let place = Place { text, file };
        let raw: FileSpec = toml::from_str(text).map_err(|e| match e.span() {
            Some(span) => place.at(span, e.message().to_string()),
            None => Error::Usage(format!("{file}: {}", e.message())),
        })?;
        if raw.table.is_empty() {
            return Err(Error::Usage(format!(
                "{file}: no [[table]]: a workload file declares at least one table"
            )));
        }
        if raw.query.is_empty() {
            return Err(Error::Usage(format!(
                "{file}: no [[query]]: a workload file declares at least one query"
            )));
        }
        let mut tables: Vec<Table> = Vec::new();
        for t in &raw.table {
            let table = place.table(t, &tables)?;
            tables.push(table);
        }
        let mut queries: Vec<Query> = Vec::new();
        for q in &raw.query {
            let query = place.query(q, &tables, &queries)?;
            queries.push(query);
        }
        Ok(Spec {
            name: raw.name.unwrap_or_else(|| stem.to_string()),
            about: raw.about.unwrap_or_default(),
            tables,
            queries,
        })
    }
}

/// The file being read, to put the file and line before a message.
struct Place<'a> {
    text: &'a str,
    file: &'a str,
}

impl Place<'_> {
    fn at(&self, span: Range<usize>, msg: String) -> Error {
        let line = self.text[..span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        Error::Usage(format!("{}:{line}: {msg}", self.file))
    }

    /// A table, after the `tables` declared before it.
    fn table(&self, t: &Spanned<TableSpec>, tables: &[Table]) -> Result<Table, Error> {
        let span = t.span();
        let t = t.get_ref();
        ident(&t.name).map_err(|m| self.at(span.clone(), format!("table name {m}")))?;
        if tables.iter().any(|o| o.name.eq_ignore_ascii_case(&t.name)) {
            return Err(self.at(span, format!("table {} is declared twice", t.name)));
        }
        if t.rows < 1 {
            return Err(self.at(span, format!("table {}: rows must be at least 1", t.name)));
        }
        if t.rows > MAX_ROWS {
            return Err(self.at(
                span,
                format!(
                    "table {}: rows = {} is more than a load can make: at most {MAX_ROWS} (ten billion, about a terabyte at 100 bytes a row)",
                    t.name, t.rows
                ),
            ));
        }
        if t.columns.is_empty() {
            return Err(self.at(span, format!("table {} has no columns", t.name)));
        }
        let mut columns: Vec<Column> = Vec::new();
        for c in &t.columns {
            let column = self.column(&t.name, c, &columns, tables)?;
            columns.push(column);
        }
        for c in &columns {
            if let Kind::Sequence { start, step } = c.generator.kind
                && step
                    .checked_mul(t.rows - 1)
                    .and_then(|d| start.checked_add(d))
                    .is_none()
            {
                return Err(self.at(
                    span,
                    format!(
                        "column {}.{}: a sequence from {start} by {step} over {} rows goes past the 64-bit integers: start lower or load fewer rows",
                        t.name, c.name, t.rows
                    ),
                ));
            }
        }
        let known = |name: &str| columns.iter().any(|c| c.name.eq_ignore_ascii_case(name));
        if let Some(k) = t.primary_key.iter().find(|k| !known(k)) {
            return Err(self.at(
                span,
                format!("table {}: primary key column {k} is not declared", t.name),
            ));
        }
        let indexes = t
            .indexes
            .iter()
            .map(|i| self.index(&t.name, i, &known))
            .collect::<Result<_, _>>()?;
        Ok(Table {
            name: t.name.clone(),
            rows: t.rows,
            primary_key: t.primary_key.clone(),
            columns,
            indexes,
        })
    }

    /// A column of `table`, after the `columns` declared before it.
    fn column(
        &self,
        table: &str,
        c: &Spanned<ColumnSpec>,
        columns: &[Column],
        tables: &[Table],
    ) -> Result<Column, Error> {
        let span = c.span();
        let c = c.get_ref();
        let here = |m: String| self.at(span.clone(), format!("column {table}.{}: {m}", c.name));
        ident(&c.name).map_err(|m| here(format!("name {m}")))?;
        if columns.iter().any(|o| o.name.eq_ignore_ascii_case(&c.name)) {
            return Err(here("declared twice".into()));
        }
        let ty = col_type(&c.ty).map_err(here)?;
        let generator = generator(c.generator.get_ref(), tables).map_err(here)?;
        fits(&ty, &generator).map_err(here)?;
        Ok(Column {
            name: c.name.clone(),
            ty,
            generator,
        })
    }

    /// An index of `table`, whose columns `known` says.
    fn index(
        &self,
        table: &str,
        i: &Spanned<IndexSpec>,
        known: &dyn Fn(&str) -> bool,
    ) -> Result<Index, Error> {
        let span = i.span();
        let i = i.get_ref();
        ident(&i.name).map_err(|m| self.at(span.clone(), format!("index name {m}")))?;
        if i.columns.is_empty() {
            return Err(self.at(span, format!("index {} names no column", i.name)));
        }
        if let Some(c) = i.columns.iter().find(|c| !known(c)) {
            return Err(self.at(
                span,
                format!("index {}: column {c} is not in table {table}", i.name),
            ));
        }
        Ok(Index {
            name: i.name.clone(),
            columns: i.columns.clone(),
            unique: i.unique,
        })
    }

    /// A query on the `tables`, after the `queries` declared before it.
    fn query(
        &self,
        q: &Spanned<QuerySpec>,
        tables: &[Table],
        queries: &[Query],
    ) -> Result<Query, Error> {
        let span = q.span();
        let q = q.get_ref();
        let here = |m: String| self.at(span.clone(), format!("query {}: {m}", q.name));
        if q.name.is_empty() || q.name.len() > 40 || queries.iter().any(|o| o.name == q.name) {
            return Err(here(
                "give each query a distinct name of 1-40 characters".into(),
            ));
        }
        if !(q.weight > 0.0 && q.weight.is_finite()) {
            return Err(here("weight must be a positive number".into()));
        }
        let (sql, names) = placeholders(q.sql.get_ref());
        let at_sql = |m: String| self.at(q.sql.span(), format!("query {}: {m}", q.name));
        if sql.trim().is_empty() {
            return Err(at_sql("sql is empty".into()));
        }
        if let Some(n) = names.iter().find(|n| !q.params.contains_key(*n)) {
            return Err(at_sql(format!(
                "the sql uses :{n}, which params does not define"
            )));
        }
        if let Some(n) = q.params.keys().find(|n| !names.contains(n)) {
            return Err(here(format!(
                "parameter {n} is not used in the sql (write :{n})"
            )));
        }
        let mut params = Vec::new();
        for n in &names {
            let value = &q.params[n];
            let generator = generator(value.get_ref(), tables).map_err(|m| {
                let msg = format!("query {}: parameter {n}: {m}", q.name);
                self.at(value.span(), msg)
            })?;
            params.push(generator);
        }
        let head = sql
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        Ok(Query {
            name: q.name.clone(),
            weight: q.weight,
            sql,
            params,
            reads: head == "select" || head == "with",
        })
    }
}

/// Names that go into SQL unquoted on every engine.
fn ident(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 31
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{name}' must be 1-31 letters, digits or _ and start with a letter or _"
        ))
    }
}

fn col_type(text: &str) -> Result<ColType, String> {
    let t = text.trim().to_ascii_lowercase();
    let sized = |prefix: &str| -> Option<Result<u32, String>> {
        let n = t
            .strip_prefix(prefix)?
            .strip_prefix('(')?
            .strip_suffix(')')?;
        Some(match n.trim().parse::<u32>() {
            Ok(n) if (1..=8000).contains(&n) => Ok(n),
            _ => Err(format!("{text}: the length must be 1-8000")),
        })
    };
    Ok(match t.as_str() {
        "int" | "integer" => ColType::Int,
        "bigint" => ColType::BigInt,
        "double" | "float" => ColType::Double,
        "text" => ColType::Text,
        "timestamp" => ColType::Timestamp,
        _ => match (sized("varchar"), sized("char")) {
            (Some(n), _) => ColType::Varchar(n?),
            (_, Some(n)) => ColType::Char(n?),
            _ => {
                return Err(format!(
                    "unknown type '{text}': use int, bigint, double, text, timestamp, varchar(N) or char(N)"
                ));
            }
        },
    })
}

/// The most rows a table of a workload file may ask for.
const MAX_ROWS: i64 = 10_000_000_000;

const KINDS: &str = "sequence, uniform, zipfian, float, string, choice, timestamp, foreign";

/// A generator as written (its TOML value), validated; a foreign key refers to one of `tables`.
fn generator(value: &toml::Value, tables: &[Table]) -> Result<GenSpec, String> {
    let fields = value
        .clone()
        .try_into::<GenFields>()
        .map_err(|e| e.message().to_string())?;
    let kind = match fields {
        GenFields::Sequence { start, step } => {
            let step = step.unwrap_or(1);
            if step == 0 {
                return Err("step must not be 0".into());
            }
            Kind::Sequence {
                start: start.unwrap_or(1),
                step,
            }
        }
        GenFields::Uniform { min, max } => {
            let (min, max) = range("uniform", min, max)?;
            Kind::Uniform { min, max }
        }
        GenFields::Zipfian { min, max, s } => {
            let (min, max) = range("zipfian", min, max)?;
            let s = s.unwrap_or(0.8);
            if !(s > 0.0 && s.is_finite()) {
                return Err("s (the exponent) must be positive".into());
            }
            Kind::Zipfian { min, max, s }
        }
        GenFields::Float { min, max } => match (min, max) {
            (Some(min), Some(max)) if min <= max => Kind::Float { min, max },
            _ => return Err("a float generator needs min <= max".into()),
        },
        GenFields::Str { min, max } => {
            let (min, max) = range("string", min, max)?;
            if min < 0 || max > 100_000 {
                return Err("string lengths must be 0-100000".into());
            }
            Kind::Str {
                min: min as usize,
                max: max as usize,
            }
        }
        GenFields::Choice { values, weights } => choice(values, weights)?,
        GenFields::Timestamp { from, to } => timestamp(from, to)?,
        GenFields::Foreign { table, column } => match (table, column) {
            (Some(table), Some(column)) => foreign(&table, &column, tables)?,
            _ => return Err("a foreign generator needs table and column".into()),
        },
        GenFields::Unknown => {
            let kind = value.get("kind").and_then(toml::Value::as_str);
            return Err(format!(
                "unknown generator kind '{}': use one of {KINDS}",
                kind.unwrap_or_default()
            ));
        }
    };
    Ok(GenSpec { kind })
}

/// The integer range of a uniform, zipfian or string generator.
fn range(kind: &str, lo: Option<i64>, hi: Option<i64>) -> Result<(i64, i64), String> {
    match (lo, hi) {
        (Some(a), Some(b)) if a <= b => Ok((a, b)),
        (Some(_), Some(_)) => Err("min must not exceed max".into()),
        _ => Err(format!("a {kind} generator needs min and max")),
    }
}

fn choice(values: Option<Vec<toml::Value>>, weights: Option<Vec<f64>>) -> Result<Kind, String> {
    let values = values
        .filter(|v| !v.is_empty())
        .ok_or("a choice generator needs a non-empty values list")?;
    let values = values
        .into_iter()
        .map(|v| match v {
            toml::Value::String(s) => Ok(Value::Text(s)),
            toml::Value::Integer(i) => Ok(Value::Int(i)),
            toml::Value::Float(f) => Ok(Value::Float(f)),
            other => Err(format!("choice values are strings or numbers, not {other}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(w) = &weights
        && (w.len() != values.len()
            || w.iter().any(|x| !(*x >= 0.0 && x.is_finite()))
            || w.iter().sum::<f64>() <= 0.0)
    {
        return Err("weights: one non-negative number per value, not all zero".into());
    }
    Ok(Kind::Choice { values, weights })
}

fn timestamp(from: Option<String>, to: Option<String>) -> Result<Kind, String> {
    let parse = |t: Option<String>, what: &str| {
        t.as_deref().and_then(parse_timestamp).ok_or_else(|| {
            format!("a timestamp generator needs {what} = \"YYYY-MM-DD[ HH:MM:SS]\"")
        })
    };
    let (from, to) = (parse(from, "from")?, parse(to, "to")?);
    if from > to {
        return Err("from must not be after to".into());
    }
    Ok(Kind::Timestamp { from, to })
}

/// A foreign key: uniform over an earlier table's sequence column of step 1.
fn foreign(table: &str, column: &str, tables: &[Table]) -> Result<Kind, String> {
    let t = tables
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(table))
        .ok_or_else(|| format!("foreign table {table} is not declared before this one"))?;
    let c = t
        .columns
        .iter()
        .find(|c| c.name.eq_ignore_ascii_case(column))
        .ok_or_else(|| format!("table {table} has no column {column}"))?;
    match c.generator.kind {
        Kind::Sequence { start, step: 1 } => Ok(Kind::Foreign {
            table: t.name.clone(),
            column: c.name.clone(),
            start,
        }),
        _ => Err(format!(
            "{table}.{column} must be a sequence with step 1 to be referenced"
        )),
    }
}

/// Whether a generator's values fit the column's type.
fn fits(ty: &ColType, generator: &GenSpec) -> Result<(), String> {
    let numeric = matches!(
        generator.kind,
        Kind::Sequence { .. } | Kind::Uniform { .. } | Kind::Zipfian { .. } | Kind::Foreign { .. }
    );
    let ok = match ty {
        ColType::Int | ColType::BigInt => {
            numeric
                || matches!(&generator.kind, Kind::Choice { values, .. } if values.iter().all(|v| matches!(v, Value::Int(_))))
        }
        ColType::Double => {
            numeric || matches!(generator.kind, Kind::Float { .. } | Kind::Choice { .. })
        }
        ColType::Timestamp => matches!(generator.kind, Kind::Timestamp { .. }),
        ColType::Varchar(n) | ColType::Char(n) => match &generator.kind {
            Kind::Str { max, .. } => *max <= *n as usize,
            _ => true,
        },
        ColType::Text => true,
    };
    if ok {
        Ok(())
    } else {
        Err("the generator's values do not fit the column's type (or are longer than it)".into())
    }
}

/// Replace each `:name` (outside quotes, not `::`) with `?`; returns the names in order.
pub fn placeholders(sql: &str) -> (String, Vec<String>) {
    let (mut out, mut names) = (String::with_capacity(sql.len()), Vec::new());
    let mut chars = sql.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' | '`' => {
                quote = Some(c);
                out.push(c);
            }
            ':' if chars.peek() == Some(&':') => {
                out.push_str("::");
                chars.next();
            }
            ':' if chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_') =>
            {
                let mut name = String::new();
                while let Some(&n) = chars.peek() {
                    if n.is_ascii_alphanumeric() || n == '_' {
                        name.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                names.push(name);
                out.push('?');
            }
            _ => out.push(c),
        }
    }
    (out, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[table]]
name = "parent"
rows = 10
primary_key = ["id"]
columns = [
  { name = "id", type = "int", gen = { kind = "sequence" } },
  { name = "label", type = "varchar(20)", gen = { kind = "string", min = 1, max = 20 } },
]

[[table]]
name = "child"
rows = 100
columns = [
  { name = "pid", type = "int", gen = { kind = "foreign", table = "parent", column = "id" } },
  { name = "at", type = "timestamp", gen = { kind = "timestamp", from = "2020-01-01", to = "2021-01-01" } },
]
indexes = [{ name = "child_pid", columns = ["pid"] }]

[[query]]
name = "by_parent"
sql = "SELECT count(*) FROM child WHERE pid = :p AND at > '2020-06-01'::date"
params = { p = { kind = "uniform", min = 1, max = 10 } }
"#;

    #[test]
    fn a_good_file_parses() {
        let s = Spec::parse(GOOD, "w.toml", "w").unwrap();
        assert_eq!(
            (s.name.as_str(), s.tables.len(), s.queries.len()),
            ("w", 2, 1)
        );
        assert_eq!(
            s.queries[0].sql,
            "SELECT count(*) FROM child WHERE pid = ? AND at > '2020-06-01'::date"
        );
        assert!(s.queries[0].reads);
        assert!(matches!(
            s.tables[1].columns[0].generator.kind,
            Kind::Foreign { start: 1, .. }
        ));
    }

    fn error(text: &str) -> String {
        match Spec::parse(text, "w.toml", "w") {
            Err(Error::Usage(m)) => m,
            other => panic!("expected a usage error, got {:?}", other.map(|s| s.name)),
        }
    }

    #[test]
    fn mistakes_name_the_line() {
        let bad_kind = GOOD.replace("kind = \"string\"", "kind = \"strng\"");
        let m = error(&bad_kind);
        assert!(
            m.starts_with("w.toml:8:") && m.contains("unknown generator kind 'strng'"),
            "{m}"
        );
        let bad_param = GOOD.replace("pid = :p", "pid = :q");
        let m = error(&bad_param);
        assert!(m.starts_with("w.toml:22:") && m.contains(":q"), "{m}");
        let bad_type = GOOD.replace("varchar(20)", "varchar(10)");
        assert!(error(&bad_type).contains("longer than it"));
        let huge = GOOD.replace("rows = 10\n", "rows = 99999999999999999\n");
        assert!(
            error(&huge).contains("at most 10000000000"),
            "{}",
            error(&huge)
        );
        let wraps = GOOD.replace(
            "kind = \"sequence\" }",
            "kind = \"sequence\", start = 9223372036854775807 }",
        );
        assert!(
            error(&wraps).contains("goes past the 64-bit integers"),
            "{}",
            error(&wraps)
        );
        let bad_key = GOOD.replace("rows = 100", "rows = 100\nrowz = 3");
        let m = error(&bad_key);
        assert!(m.starts_with("w.toml:") && m.contains("rowz"), "{m}");
        let other_kinds_key =
            GOOD.replace("kind = \"sequence\" }", "kind = \"sequence\", max = 5 }");
        let m = error(&other_kinds_key);
        assert!(
            m.starts_with("w.toml:7: column parent.id:") && m.contains("unknown field `max`"),
            "{m}"
        );
        let wrong_type = GOOD.replace("min = 1, max = 20", "min = 1.5, max = 20");
        let m = error(&wrong_type);
        assert!(m.starts_with("w.toml:8:") && m.contains("1.5"), "{m}");
        let half_range = GOOD.replace("min = 1, max = 10 }", "min = 1 }");
        let m = error(&half_range);
        assert!(
            m.starts_with("w.toml:23: query by_parent: parameter p:")
                && m.contains("a uniform generator needs min and max"),
            "{m}"
        );
        let syntax = GOOD.replace("rows = 10\n", "rows = \n");
        assert!(
            error(&syntax).starts_with("w.toml:4:"),
            "{}",
            error(&syntax)
        );
    }
}
