//! An analytical stream of CH-benCHmark: the 22 queries, each prepared once, run one after another
//! in their order and round again until the run ends; stream n starts at query n mod 22 + 1, so
//! that streams started together do not all run the same query at the same time (go-tpc's `ch`
//! starts its workers so). The queries' text per dialect comes from `query_text`.

use crate::engine::{DbResult, Session, StmtId};
use crate::sql::SqlSet;
use crate::workload::Client;

/// The analytical queries, as transaction types (after TPC-C's five).
pub const QUERIES: [&str; 22] = [
    "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9", "Q10", "Q11", "Q12", "Q13", "Q14", "Q15",
    "Q16", "Q17", "Q18", "Q19", "Q20", "Q21", "Q22",
];

/// Query `q` (1 to 22) in the dialect of `sql`: its section with the dialect's expressions
/// (`expr_*`) in place of {supplier}, {customer_nation}, {state_initial}, {phone_initial},
/// {brand}, {entry_year}, {like} and the averages {avg_quantity}, {avg_amount}, {avg_balance}.
pub fn query_text(sql: &SqlSet, q: u8) -> String {
    let expr = |name: &str, vars: &[(&str, &str)]| {
        let mut text = sql.get(name).trim().to_string();
        for (k, v) in vars {
            text = text.replace(&format!("{{{k}}}"), v);
        }
        text
    };
    let prefix =
        |column: &str, length: &str| expr("expr_prefix", &[("text", column), ("length", length)]);
    let state_initial = prefix("c_state", "1");
    let vars = [
        ("supplier", expr("expr_supplier", &[])),
        (
            "customer_nation",
            expr("expr_code", &[("text", &state_initial)]),
        ),
        ("phone_initial", prefix("c_phone", "1")),
        ("brand", prefix("i_data", "3")),
        (
            "entry_year",
            expr("expr_year", &[("timestamp", "o_entry_d")]),
        ),
        ("like", expr("expr_like", &[])),
        (
            "avg_quantity",
            expr("expr_avg", &[("value", "ol_quantity")]),
        ),
        ("avg_amount", expr("expr_avg", &[("value", "ol_amount")])),
        ("avg_balance", expr("expr_avg", &[("value", "c_balance")])),
        ("state_initial", state_initial),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    sql.statements(&format!("q{q}"), &vars).join("\n")
}

/// One analytical stream.
pub struct Stream {
    /// The 22 prepared queries, in order.
    queries: Vec<StmtId>,
    /// How many queries the stream has drawn; the next is query `(next mod 22) + 1`.
    next: usize,
    current: usize,
    /// Where the queries' types start among the workload's transaction types.
    first_type: usize,
}

impl Stream {
    pub fn new(
        sql: &SqlSet,
        s: &mut dyn Session,
        number: u32,
        first_type: usize,
    ) -> DbResult<Stream> {
        let mut queries = Vec::with_capacity(QUERIES.len());
        for q in 1..=QUERIES.len() as u8 {
            queries.push(s.prepare(&query_text(sql, q))?);
        }
        Ok(Stream {
            queries,
            next: number as usize % QUERIES.len(),
            current: 0,
            first_type,
        })
    }
}

impl Client for Stream {
    fn next(&mut self) -> usize {
        self.current = self.next % QUERIES.len();
        self.next += 1;
        self.first_type + self.current
    }

    fn execute(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        s.exec(self.queries[self.current], &[])?;
        Ok(1)
    }
}
