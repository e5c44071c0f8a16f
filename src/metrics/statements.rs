//! Where the server's time went over the measured run, statement by statement: the wait
//! sampler's connection reads the server's cumulative figures per statement
//! (`Session::statements`) when the measured part begins (the warm-up's end after the clients'
//! release; with no warm-up, its first sample after the release) and once more when it is
//! stopped (each read bounded by the sampler's deadline), and keeps the difference: the
//! statements by the server's time in them, the first `TOP` with their share of all the
//! statements' time and the rest summed, or the note saying why there are none.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

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
}

impl Statements {
    /// The figures absent, and why.
    pub fn absent(why: impl Into<String>) -> Statements {
        Statements {
            note: Some(why.into()),
            ..Statements::default()
        }
    }

    /// Set each statement's calls per committed transaction of the run.
    pub fn per_transaction(&mut self, transactions: u64) {
        let each = |s: &mut StatementTime| {
            s.calls_per_transaction =
                (transactions > 0).then(|| s.figures.calls as f64 / transactions as f64);
        };
        self.top.iter_mut().for_each(each);
        self.rest.iter_mut().for_each(each);
    }
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
        s.per_transaction(200);
        assert_eq!(s.top[1].calls_per_transaction, Some(1.0));
    }
}
