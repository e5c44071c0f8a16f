//! Where the server's time went over the measured run, statement by statement: the wait
//! sampler's connection reads the server's cumulative figures per statement
//! (`Session::statements`) when the measured part begins (the warm-up's end after the clients'
//! release; with no warm-up, its first sample after the release) and once more when it is
//! stopped (each read bounded by the sampler's deadline), and keeps the difference: the
//! statements by the server's time in them, the first `TOP` with their share of all the
//! statements' time and the rest summed, or the note saying why there are none.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::statement_latencies::Statement as ClientLine;
use crate::engine::statements::{Figures, Reading, Statement};
use crate::engine::{Engine, Session};

/// How many statements a result names; the others are summed.
pub const TOP: usize = 10;

/// The run's statements by the server's time in them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Statements {
    /// All the statements that ran in the measured run, counted together.
    pub all: Figures,
    /// How many distinct (normalised) statements ran.
    pub distinct: u64,
    /// The statements that took the most time, most first.
    pub top: Vec<StatementTime>,
    /// The others, summed (None when there are no others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest: Option<StatementTime>,
    /// Why there are no figures (then `top` is empty), or what limits them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One statement (or the rest) over the measured run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StatementTime {
    /// Its text as the server normalised it (constants as placeholders).
    pub text: String,
    #[serde(flatten)]
    pub figures: Figures,
    /// Its mean time per call, milliseconds.
    pub mean_ms: f64,
    /// Its share of all the statements' time, 0 to 1.
    pub share: f64,
    /// Calls per committed transaction of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_transaction: Option<f64>,
    /// The same statement as the clients timed it (`relate`), where its text matches one of
    /// the run's client-side lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientSide>,
}

/// A statement's time on the clients' side, joined to the server's line by text (`key`): the
/// client's clock runs from sending the statement to its last reply, so the difference from
/// the server's mean is the time per call outside the server's own accounting (the network,
/// the client, the wait before execution starts).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ClientSide {
    /// How many client-side lines were joined (a statement several transaction types run has
    /// a line in each).
    pub lines: u32,
    pub calls: u64,
    /// The mean per call over the joined lines (weighted by their calls), milliseconds.
    pub mean_ms: f64,
    /// The highest p99 of the joined lines, milliseconds.
    pub p99_ms: f64,
    /// The client's mean less the server's, milliseconds.
    pub outside_ms: f64,
}

impl Statements {
    /// The figures absent, and why.
    pub fn absent(why: impl Into<String>) -> Statements {
        Statements {
            note: Some(why.into()),
            ..Statements::default()
        }
    }

    /// Set each statement's calls per committed transaction of the run, and join each named
    /// statement to the client-side lines whose text has the same `key` (`ClientSide`), unless
    /// their mean is below the server's.
    pub fn relate(&mut self, transactions: u64, client: &[ClientLine]) {
        let each = |s: &mut StatementTime| {
            s.calls_per_transaction =
                (transactions > 0).then(|| s.figures.calls as f64 / transactions as f64);
        };
        self.top.iter_mut().for_each(each);
        self.rest.iter_mut().for_each(each);
        let mut by_key: HashMap<String, Vec<&ClientLine>> = HashMap::new();
        for line in client.iter().filter(|l| l.calls > 0) {
            by_key.entry(key(&line.text)).or_default().push(line);
        }
        for s in &mut self.top {
            s.client = by_key.get(&key(&s.text)).and_then(|lines| {
                let calls: u64 = lines.iter().map(|l| l.calls).sum();
                let total: f64 = lines.iter().map(|l| l.mean_ms * l.calls as f64).sum();
                let mean_ms = total / calls.max(1) as f64;
                // A round trip holds the server's time: a client time below it was not one
                // (a statement queued in a pipeline is timed until it is queued).
                (mean_ms >= s.mean_ms).then(|| ClientSide {
                    lines: lines.len() as u32,
                    calls,
                    mean_ms,
                    p99_ms: lines.iter().map(|l| l.p99_ms).fold(0.0, f64::max),
                    outside_ms: mean_ms - s.mean_ms,
                })
            });
        }
    }
}

/// A statement text as a join key: the same for the text a client sent and the text the
/// server normalised. Case folded; identifiers' quotes (`"` and `` ` ``) and comments dropped;
/// every placeholder (`$1`, `?`, a script's `:name`) and every constant (a string, a number
/// with its sign) made `?`; a parenthesised list of nothing but those (MySQL's digests write
/// an IN list as `(...)`) made `(...)`; whitespace and a last `;` dropped.
pub fn key(text: &str) -> String {
    let chars: Vec<char> = text.trim().trim_end_matches(';').chars().collect();
    let mut out = String::with_capacity(chars.len());
    let mut i = 0;
    let word = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\'' => {
                i += 1;
                while i < chars.len() {
                    if chars[i] == '\'' && chars.get(i + 1) == Some(&'\'') {
                        i += 2;
                    } else if chars[i] == '\'' {
                        break;
                    } else {
                        i += 1;
                    }
                }
                out.push('?');
            }
            '/' if next == Some('*') => {
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 1;
            }
            '`' | '"' => {}
            ':' if next == Some(':') => {
                out.push_str("::");
                i += 1;
            }
            ':' if next.is_some_and(|n| n.is_alphabetic() || n == '_') => {
                while chars.get(i + 1).is_some_and(|&n| word(n)) {
                    i += 1;
                }
                out.push('?');
            }
            '$' if next.is_some_and(|n| n.is_ascii_digit()) => {
                while chars.get(i + 1).is_some_and(char::is_ascii_digit) {
                    i += 1;
                }
                out.push('?');
            }
            d if d.is_ascii_digit() && (i == 0 || !word(chars[i - 1])) => {
                while chars
                    .get(i + 1)
                    .is_some_and(|&n| n.is_ascii_alphanumeric() || n == '.')
                {
                    i += 1;
                }
                // A sign after an operator, a comma or a parenthesis is the constant's.
                let mut t = out.chars().rev();
                if t.next() == Some('-') && t.next().is_none_or(|p| "=(,<>+-*/".contains(p)) {
                    out.pop();
                }
                out.push('?');
            }
            c if c.is_whitespace() => {}
            c => out.extend(c.to_lowercase()),
        }
        i += 1;
    }
    lists(&out)
}

/// `key`'s last step: each `(` ... `)` holding only `?`, `,` and `...` made `(...)`.
fn lists(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('(') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find(')') {
            Some(close)
                if close > 0 && after[..close].chars().all(|c| matches!(c, '?' | ',' | '.')) =>
            {
                out.push_str("(...)");
                rest = &after[close + 1..];
            }
            _ => {
                out.push('(');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The sampler's part: the reading at the measured part's start, then the difference at the
/// end.
#[derive(Default)]
pub struct StatementWatch {
    /// The statements by key at the measured part's start, or why they could not be read.
    start: Option<Result<HashMap<String, Statement>, String>>,
}

impl StatementWatch {
    /// Whether the figures at the measured part's start were read (or tried).
    pub fn started(&self) -> bool {
        self.start.is_some()
    }

    /// At each sample: the first one in the measured part reads the figures (the sampler
    /// also wakes for it when the measured part begins between two samples).
    pub fn tick(&mut self, s: &mut dyn Session, measured: bool) {
        if measured && self.start.is_none() {
            self.start = Some(read(s));
        }
    }

    /// At the end: read again and keep the difference. `broken` says why the session can no
    /// longer be read (sampling stopped on an error), so that a stalled server is not asked
    /// again.
    pub fn finish(self, s: &mut dyn Session, broken: Option<&str>) -> Statements {
        if let Some(why) = broken {
            return Statements::absent(format!("not read at the run's end: {why}"));
        }
        let end = match read(s) {
            Ok(end) => end,
            Err(why) => return Statements::absent(why),
        };
        match self.start {
            Some(Ok(start)) => summarise(differences(&start, end)),
            Some(Err(why)) => Statements::absent(why),
            None => Statements::absent(
                "not read at the measured part's start (sampling ended before it began)",
            ),
        }
    }
}

/// The note of a run whose sampler did not start (`why`): an embedded engine's own reason
/// (from a session of its own, which costs it no server), `why` otherwise.
pub fn unread(engine: &dyn Engine, why: &str) -> Statements {
    let own = engine.embedded().then(|| engine.connect().ok()).flatten();
    match own.map(|mut s| s.statements()) {
        Some(Ok(Reading::Unavailable(reason))) => Statements::absent(reason),
        _ => Statements::absent(format!("not read: {why}")),
    }
}

/// One reading by statement key (a key the server lists twice, as PostgreSQL does for a
/// statement run at top level and nested, summed).
fn read(s: &mut dyn Session) -> Result<HashMap<String, Statement>, String> {
    let list = match s.statements() {
        Ok(Reading::Statements(list)) => list,
        Ok(Reading::Unavailable(why)) => return Err(why),
        Err(e) => {
            return Err(format!(
                "reading the server's statements failed: {}",
                e.message
            ));
        }
    };
    let mut by_key: HashMap<String, Statement> = HashMap::new();
    for st in list {
        match by_key.get_mut(&st.key) {
            Some(seen) => seen.figures.add(&st.figures),
            None => {
                by_key.insert(st.key.clone(), st);
            }
        }
    }
    Ok(by_key)
}

/// What each statement did between the readings, those that ran only.
fn differences(
    start: &HashMap<String, Statement>,
    end: HashMap<String, Statement>,
) -> Vec<StatementTime> {
    end.into_values()
        .filter_map(|st| {
            let figures = match start.get(&st.key) {
                Some(before) => st.figures.since(&before.figures),
                None => st.figures,
            };
            (figures.calls > 0).then(|| StatementTime {
                text: st.text,
                figures,
                ..StatementTime::default()
            })
        })
        .collect()
}

/// The statements by time, the first `TOP` named and the rest summed, with shares and means.
fn summarise(mut list: Vec<StatementTime>) -> Statements {
    list.sort_by(|a, b| {
        b.figures
            .total_ms
            .total_cmp(&a.figures.total_ms)
            .then(b.figures.calls.cmp(&a.figures.calls))
            .then(a.text.cmp(&b.text))
    });
    let mut all = Figures::default();
    list.iter().for_each(|s| all.add(&s.figures));
    let distinct = list.len() as u64;
    let rest: Vec<StatementTime> = list.split_off(list.len().min(TOP));
    let rest = (!rest.is_empty()).then(|| {
        let mut sum = Figures::default();
        rest.iter().for_each(|s| sum.add(&s.figures));
        StatementTime {
            text: format!("{} other statements", rest.len()),
            figures: sum,
            ..StatementTime::default()
        }
    });
    let total = all.total_ms;
    let shaped = |mut s: StatementTime| {
        s.mean_ms = s.figures.total_ms / s.figures.calls.max(1) as f64;
        s.share = if total > 0.0 {
            s.figures.total_ms / total
        } else {
            0.0
        };
        s
    };
    Statements {
        all,
        distinct,
        top: list.into_iter().map(shaped).collect(),
        rest: rest.map(shaped),
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(key: &str, calls: u64, total_ms: f64) -> Statement {
        Statement {
            key: key.into(),
            text: format!("statement {key}"),
            figures: Figures {
                calls,
                total_ms,
                ..Figures::default()
            },
        }
    }

    fn by_key(list: Vec<Statement>) -> HashMap<String, Statement> {
        list.into_iter().map(|s| (s.key.clone(), s)).collect()
    }

    #[test]
    fn a_client_text_and_the_server_normalised_one_have_one_key() {
        let pairs = [
            (
                "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?",
                "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
            ),
            (
                "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
                "UPDATE `pgbench_accounts` SET `abalance` = `abalance` + ? WHERE `aid` = ?",
            ),
            (
                "SELECT c FROM sbtest1 WHERE id IN (?, ?, ?) LIMIT 10",
                "SELECT `c` FROM `sbtest1` WHERE `id` IN (...) LIMIT ?",
            ),
            (
                "select x::int from \"T\" where s = 'it''s' and v = -1",
                "SELECT x::int FROM t WHERE s = $1 AND v = $2 /* note */",
            ),
        ];
        for (client, server) in pairs {
            assert_eq!(key(client), key(server), "{client} | {server}");
        }
        // What differs stays apart: a table's digit, a subtraction, another column.
        assert_ne!(key("SELECT a FROM t1"), key("SELECT a FROM t2"));
        assert_ne!(key("SELECT a - 1 FROM t"), key("SELECT a, 1 FROM t"));
        assert_ne!(
            key("SELECT a FROM t WHERE k = ?"),
            key("SELECT b FROM t WHERE k = ?")
        );
    }

    #[test]
    fn the_server_line_gets_the_client_lines_of_its_text() {
        let line = |transaction: &str, text: &str, calls, mean_ms, p99_ms| ClientLine {
            transaction: transaction.into(),
            order: 0,
            text: text.into(),
            as_written: false,
            calls,
            calls_per_transaction: 1.0,
            failures: 0,
            retries: 0,
            mean_ms,
            p50_ms: mean_ms,
            p95_ms: p99_ms,
            p99_ms,
            max_ms: p99_ms,
            total_s: 0.0,
            share: 0.0,
            histogram: Vec::new(),
        };
        let server = |text: &str, calls, total_ms| StatementTime {
            text: text.into(),
            figures: Figures {
                calls,
                total_ms,
                ..Figures::default()
            },
            mean_ms: total_ms / calls as f64,
            ..StatementTime::default()
        };
        let mut st = Statements {
            top: vec![
                server("SELECT v FROM kv WHERE k = $1", 400, 40.0),
                server("UPDATE kv SET v = $1 WHERE k = $2", 100, 30.0),
            ],
            ..Statements::default()
        };
        let client = [
            line("read", "SELECT v FROM kv WHERE k = ?", 300, 0.2, 0.5),
            line("write", "SELECT v FROM kv WHERE k = ?", 100, 0.6, 0.9),
            line("write", "DELETE FROM kv WHERE k = ?", 100, 0.6, 0.9),
        ];
        st.relate(200, &client);
        let read = st.top[0].client.as_ref().expect("the SELECT is joined");
        assert_eq!((read.lines, read.calls), (2, 400));
        assert!((read.mean_ms - 0.3).abs() < 1e-9, "{read:?}");
        assert!((read.outside_ms - 0.2).abs() < 1e-9, "{read:?}");
        assert_eq!(read.p99_ms, 0.9);
        assert_eq!(st.top[0].calls_per_transaction, Some(2.0));
        assert_eq!(
            st.top[1].client, None,
            "no client line has the UPDATE's text"
        );
        // Timed until queued (a pipeline): below the server's mean, not joined.
        let queued = [line(
            "read",
            "SELECT v FROM kv WHERE k = ?",
            400,
            0.01,
            0.02,
        )];
        st.relate(200, &queued);
        assert_eq!(st.top[0].client, None);
    }

    #[test]
    fn the_difference_ranked_by_time_with_the_rest_summed() {
        let start = by_key(vec![
            st("a", 100, 50.0),
            st("b", 10, 1.0),
            st("idle", 5, 5.0),
        ]);
        let mut end = vec![st("a", 300, 150.0), st("b", 30, 301.0), st("idle", 5, 5.0)];
        end.extend((0..12).map(|i| st(&format!("n{i:02}"), 1, 0.5)));
        let mut s = summarise(differences(&start, by_key(end)));
        // "idle" did not run between the readings; "n.." are new ones.
        assert_eq!(s.distinct, 14);
        assert_eq!(s.top.len(), TOP);
        assert_eq!(s.top[0].text, "statement b");
        assert_eq!((s.top[0].figures.calls, s.top[1].figures.calls), (20, 200));
        assert!((s.top[1].mean_ms - 0.5).abs() < 1e-9);
        let rest = s.rest.as_ref().expect("4 more than the top");
        assert_eq!(
            (rest.text.as_str(), rest.figures.calls),
            ("4 other statements", 4)
        );
        let shares: f64 = s.top.iter().chain(&s.rest).map(|t| t.share).sum();
        assert!((shares - 1.0).abs() < 1e-9, "{shares}");
        assert!((s.all.total_ms - 406.0).abs() < 1e-9);
        s.relate(200, &[]);
        assert_eq!(s.top[1].calls_per_transaction, Some(1.0));
    }
}
