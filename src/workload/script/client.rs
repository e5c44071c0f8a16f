//! One client running the scripts: picks a script by weight (as pgbench -f FILE@WEIGHT), evaluates
//! meta-commands, sends SQL as text with values substituted (simple protocol) or prepared once with
//! parameters (prepared protocol), stores \gset/\aset results, translates only transaction control
//! (BEGIN, COMMIT, ROLLBACK through the `Session`), and ends itself, as pgbench aborts a client, on
//! a script error met while running or a script that ends inside its transaction
//! (`Client::aborted`); the file and line come before every error's message. Each command is
//! marked on the session as it starts (`Session::command`), so that the statement clock times the
//! script command by command, as pgbench's -r does. In a pipeline (`\startpipeline`) the
//! statements are queued on the session and their replies read at `\endpipeline`, which is
//! where their time and their errors show, as in pgbench.

use std::sync::Arc;
use std::time::Duration;

use super::eval::{self, Ctx};
use super::expr::{Expr, Val};
use super::parse::{Control, Kind, Part, Pipe, SleepArg, Statement, Store};
use super::rand::{Prng, Seeds};
use super::{Program, Script};
use crate::engine::{DbError, DbResult, ErrorClass, Protocol, Session, StmtId, Value};
use crate::workload::{Client, RunEnd};

/// Why a script stopped: a database error (counted, maybe retried) or a script error that
/// ends the client.
enum Fail {
    Db(DbError),
    Abort(String),
}

impl From<DbError> for Fail {
    fn from(e: DbError) -> Fail {
        Fail::Db(e)
    }
}

pub struct ScriptClient {
    program: Arc<Program>,
    id: u32,
    vars: Vec<Val>,
    rng: Prng,
    choose: Prng,
    total_weight: u64,
    /// A phase's mix of the scripts (`Client::weigh`), in place of their `@WEIGHT`s.
    mix: Option<Vec<f64>>,
    current: usize,
    /// pgbench's number (from 0) of the command running, or that failed.
    command: usize,
    /// Variables and generator as the transaction began: a retry starts from them again.
    saved: (Vec<Val>, Prng),
    first_try: bool,
    /// Prepared statements by script, command and statement (prepared protocol).
    prepared: Vec<Vec<Vec<Option<StmtId>>>>,
    sql: String,
    params: Vec<Value>,
    aborted: Option<String>,
    /// The line of the BEGIN whose transaction the running script has open.
    open: Option<usize>,
    /// Inside \startpipeline ... \endpipeline: whether the engine pipelines (true) or runs
    /// the statements as they come (false).
    pipe: Option<bool>,
    /// When the run ends: a `\sleep` stops there.
    end: RunEnd,
}

impl ScriptClient {
    pub fn new(program: Arc<Program>, id: u32, seeds: Seeds, scale: u32) -> ScriptClient {
        let mut vars = vec![Val::Undefined; program.names.list.len()];
        let slot = |n: &str| program.names.find(n).expect("built-in variable");
        let default_seed = seeds.default_seed();
        vars[slot("scale")] = Val::Int(i64::from(scale));
        vars[slot("random_seed")] = Val::Int(program.random_seed as i64);
        vars[slot("default_seed")] = Val::Int(default_seed);
        for (s, text) in &program.defines {
            vars[*s] = Val::Text(text.clone());
        }
        vars[slot("client_id")] = Val::Int(i64::from(id));
        let prepared = program
            .scripts
            .iter()
            .map(|s| {
                s.commands
                    .iter()
                    .map(|c| match &c.kind {
                        Kind::Sql { statements, .. } => vec![None; statements.len()],
                        _ => Vec::new(),
                    })
                    .collect()
            })
            .collect();
        let rng = seeds.client(id);
        ScriptClient {
            total_weight: program.scripts.iter().map(|s| u64::from(s.weight)).sum(),
            mix: None,
            saved: (vars.clone(), rng.clone()),
            vars,
            rng,
            choose: seeds.choose(id),
            current: 0,
            command: 0,
            first_try: true,
            prepared,
            sql: String::new(),
            params: Vec::new(),
            aborted: None,
            open: None,
            pipe: None,
            end: RunEnd::default(),
            program,
            id,
        }
    }

    /// A weighted choice among the scripts (pgbench: uniform in [0, total weight)).
    fn choose_script(&mut self) -> usize {
        let scripts = &self.program.scripts;
        if scripts.len() == 1 {
            return 0;
        }
        if let Some(mix) = &self.mix {
            const STEPS: u64 = 1 << 53;
            let u = self.choose.range_u64(0, STEPS - 1) as f64 / STEPS as f64;
            return crate::workload::weighted(mix, u);
        }
        let mut w = self.choose.range_u64(0, self.total_weight - 1);
        for (i, s) in scripts.iter().enumerate() {
            if w < u64::from(s.weight) {
                return i;
            }
            w -= u64::from(s.weight);
        }
        scripts.len() - 1
    }

    fn run(&mut self, s: &mut dyn Session) -> Result<u32, Fail> {
        let program = self.program.clone();
        let script = &program.scripts[self.current];
        let mut queries = 0;
        let mut pc = 0;
        // The line of the BEGIN whose transaction is open (none at a script's start: the
        // previous run of a script ended outside one, or its client ended).
        self.open = None;
        self.pipe = None;
        while let Some(cmd) = script.commands.get(pc) {
            let at = |e: String| Fail::Abort(format!("{}:{}: {e}", script.name, cmd.line));
            pc += 1;
            self.command = cmd.number - 1;
            s.command(cmd.number, &cmd.first_line);
            match &cmd.kind {
                Kind::Set { var, expr } => {
                    let v = self.eval(expr, cmd.number).map_err(at)?;
                    self.vars[*var] = v;
                }
                Kind::If { cond, otherwise } => {
                    if !eval::truth(&self.eval(cond, cmd.number).map_err(at)?) {
                        pc = *otherwise;
                    }
                }
                Kind::Jump(to) => pc = *to,
                Kind::Sleep(arg) => {
                    let wait = self.sleep_time(arg).map_err(at)?;
                    if !self.end.sleep(wait) {
                        return Err(Fail::Db(DbError::new(
                            ErrorClass::Interrupted,
                            format!(
                                "{}:{}: \\sleep cut short: the run ended",
                                script.name, cmd.line
                            ),
                        )));
                    }
                }
                Kind::Sql { statements, store } => {
                    if let (Some(_), Some(store)) = (self.pipe, store) {
                        let name = if store.all { "aset" } else { "gset" };
                        return Err(at(format!("\\{name} is not allowed in pipeline mode")));
                    }
                    queries += self.sql(s, script, pc - 1, statements, store.as_ref())?;
                }
                Kind::Pipeline(pipe) => {
                    self.pipeline(s, script, pc, *pipe).map_err(|f| match f {
                        Fail::Abort(m) => at(m),
                        Fail::Db(mut e) => {
                            e.message = format!("{}:{}: {}", script.name, cmd.line, e.message);
                            Fail::Db(e)
                        }
                    })?
                }
            }
        }
        // pgbench aborts a client whose script ends inside a pipeline, in these words.
        if self.pipe.is_some() {
            return Err(Fail::Abort(format!(
                "{}: end of script reached with pipeline open",
                script.name
            )));
        }
        // pgbench aborts a client whose script ends inside a transaction, in these words.
        if let Some(line) = self.open {
            return Err(Fail::Abort(format!(
                "{}: end of script reached without completing the last transaction (BEGIN at line {line})",
                script.name
            )));
        }
        Ok(queries)
    }

    /// \startpipeline, \syncpipeline, \endpipeline at command `next - 1`, with pgbench's
    /// checks and words. Under the prepared protocol the statements up to the pipeline's end
    /// are prepared before it starts, as pgbench prepares them (a prepare cannot wait for its
    /// reply inside a pipeline).
    fn pipeline(
        &mut self,
        s: &mut dyn Session,
        script: &Script,
        next: usize,
        pipe: Pipe,
    ) -> Result<(), Fail> {
        match (pipe, self.pipe) {
            (Pipe::Start, Some(_)) => Err(Fail::Abort("already in pipeline mode".into())),
            (Pipe::Sync | Pipe::End, None) => Err(Fail::Abort("not in pipeline mode".into())),
            (Pipe::Start, None) => {
                if self.program.protocol != Protocol::Simple {
                    for (c, cmd) in script.commands.iter().enumerate().skip(next) {
                        match &cmd.kind {
                            Kind::Pipeline(Pipe::End) => break,
                            Kind::Sql { statements, .. } => {
                                for (i, st) in statements.iter().enumerate() {
                                    if st.control.is_none()
                                        && self.prepared[self.current][c][i].is_none()
                                    {
                                        let id = s.prepare(&placeholders(st))?;
                                        self.prepared[self.current][c][i] = Some(id);
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
                self.pipe = Some(s.start_pipeline()?);
                Ok(())
            }
            (Pipe::Sync, Some(piped)) => {
                if piped {
                    s.sync_pipeline()?;
                }
                Ok(())
            }
            (Pipe::End, Some(piped)) => {
                self.pipe = None;
                if piped {
                    s.end_pipeline()?;
                }
                Ok(())
            }
        }
    }

    fn eval(&mut self, e: &Expr, number: usize) -> Result<Val, String> {
        let mut cx = Ctx {
            vars: &self.vars,
            names: &self.program.names.list,
            rng: &mut self.rng,
            script: self.current,
            command: number,
        };
        eval::eval(e, &mut cx)
    }

    /// How long a `\sleep` waits.
    fn sleep_time(&self, arg: &SleepArg) -> Result<Duration, String> {
        let micros = match arg {
            SleepArg::Micros(n) => *n,
            SleepArg::Var(slot, unit) => {
                let name = &self.program.names.list[*slot];
                let v = match &self.vars[*slot] {
                    Val::Undefined => return Err(format!("sleep: undefined variable \"{name}\"")),
                    v => v.typed(name)?,
                };
                eval::to_int(&v)?.saturating_mul(*unit)
            }
        };
        Ok(Duration::from_micros(micros.max(0) as u64))
    }

    /// One SQL command (its `\;`-separated statements, one after another); returns how many
    /// statements were sent.
    fn sql(
        &mut self,
        s: &mut dyn Session,
        script: &Script,
        command: usize,
        statements: &[Statement],
        store: Option<&Store>,
    ) -> Result<u32, Fail> {
        let last = statements.len() - 1;
        for (i, st) in statements.iter().enumerate() {
            let wanted = store.filter(|st| st.all || i == last);
            // A database error names the file and line it came from; its class, which the
            // engine gave it, and the server's words stay as they are.
            let at = |mut e: DbError| {
                e.message = format!("{}:{}: {}", script.name, st.line, e.message);
                Fail::Db(e)
            };
            let rows = match st.control {
                Some(Control::Begin) => {
                    s.begin(script.writes).map_err(at)?;
                    self.open = Some(st.line);
                    Vec::new()
                }
                Some(Control::Commit) => {
                    self.open = None;
                    s.commit().map_err(at)?;
                    Vec::new()
                }
                Some(Control::Rollback) => {
                    self.open = None;
                    s.rollback().map_err(at)?;
                    Vec::new()
                }
                None => self
                    .send(s, (self.current, command, i), st, wanted.is_some())
                    .map_err(|f| match f {
                        Fail::Db(e) => at(e),
                        Fail::Abort(m) => Fail::Abort(format!("{}:{}: {m}", script.name, st.line)),
                    })?,
            };
            if let Some(store) = wanted {
                self.store(st, store, rows)
                    .map_err(|e| Fail::Abort(format!("{}:{}: {e}", script.name, st.line)))?;
            }
        }
        Ok(statements.len() as u32)
    }

    fn send(
        &mut self,
        s: &mut dyn Session,
        key: (usize, usize, usize),
        st: &Statement,
        rows: bool,
    ) -> Result<Vec<Vec<Value>>, Fail> {
        if self.program.protocol == Protocol::Simple {
            self.sql.clear();
            for p in &st.parts {
                match p {
                    Part::Text(t) => self.sql.push_str(t),
                    Part::Var { slot, raw, .. } => match &self.vars[*slot] {
                        Val::Undefined => self.sql.push_str(raw),
                        v => v.render(&mut self.sql),
                    },
                }
            }
            return Ok(s.query_text(&self.sql)?);
        }
        let id = match self.prepared[key.0][key.1][key.2] {
            Some(id) => id,
            None => {
                let id = s.prepare(&placeholders(st))?;
                self.prepared[key.0][key.1][key.2] = Some(id);
                id
            }
        };
        self.params.clear();
        for p in &st.parts {
            if let Part::Var {
                slot,
                quoted: false,
                ..
            } = p
            {
                let name = &self.program.names.list[*slot];
                let value = match &self.vars[*slot] {
                    Val::Undefined => {
                        return Err(Fail::Abort(format!("undefined variable \"{name}\" in SQL")));
                    }
                    v => parameter(v),
                };
                self.params.push(value);
            }
        }
        if rows {
            Ok(s.query(id, &self.params)?)
        } else {
            s.exec(id, &self.params)?;
            Ok(Vec::new())
        }
    }

    /// \gset: exactly one row into the named variables; \aset: every row, the last one kept.
    fn store(
        &mut self,
        st: &Statement,
        store: &Store,
        rows: Vec<Vec<Value>>,
    ) -> Result<(), String> {
        let Some(names) = &st.names else {
            return Ok(());
        };
        if !store.all && rows.len() != 1 {
            return Err(format!("\\gset expected one row, got {}", rows.len()));
        }
        for row in rows {
            if row.len() != names.len() {
                return Err(format!(
                    "the query returned {} columns where its select list names {} ({})",
                    row.len(),
                    names.len(),
                    names.join(", ")
                ));
            }
            for (name, value) in names.iter().zip(row) {
                if let Some(slot) = self.program.names.find(name) {
                    self.vars[slot] = match value {
                        Value::Null => Val::Null,
                        Value::Int(i) => Val::Int(i),
                        Value::Float(f) => Val::Double(f),
                        Value::Text(t) => Val::Text(t),
                    };
                }
            }
        }
        Ok(())
    }
}

/// The statement with `?` for each variable outside quotes (variables inside quotes stay as
/// written: a parameter cannot stand inside a literal).
fn placeholders(st: &Statement) -> String {
    let mut sql = String::new();
    for p in &st.parts {
        match p {
            Part::Text(t) => sql.push_str(t),
            Part::Var { quoted: false, .. } => sql.push('?'),
            Part::Var { raw, .. } => sql.push_str(raw),
        }
    }
    sql
}

/// A variable as a statement parameter.
fn parameter(v: &Val) -> Value {
    match v {
        Val::Null | Val::Undefined => Value::Null,
        Val::Bool(b) => Value::Text(if *b { "true" } else { "false" }.into()),
        Val::Int(i) => Value::Int(*i),
        Val::Double(d) => Value::Float(*d),
        Val::Text(t) => Value::Text(t.clone()),
    }
}

impl Client for ScriptClient {
    fn weigh(&mut self, weights: Option<&[f64]>) {
        self.mix = weights.map(<[f64]>::to_vec);
    }

    fn next(&mut self) -> usize {
        self.current = self.choose_script();
        self.saved.0.clone_from(&self.vars);
        self.saved.1 = self.rng.clone();
        self.first_try = true;
        self.current
    }

    fn execute(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        if !self.first_try {
            self.vars.clone_from(&self.saved.0);
            self.rng = self.saved.1.clone();
        }
        self.first_try = false;
        let done = self.run(s);
        // A script stopped inside a pipeline (an error, the end of the run) leaves nothing
        // queued on the session: its replies are read and dropped.
        if done.is_err() && self.pipe.take() == Some(true) {
            let _ = s.end_pipeline();
        }
        match done {
            Ok(n) => Ok(n),
            Err(Fail::Db(e)) => Err(e),
            Err(Fail::Abort(msg)) => {
                errln!("dbduel: client {} aborted: {msg}", self.id);
                self.aborted = Some(msg.clone());
                Err(DbError::new(ErrorClass::Other("script".into()), msg))
            }
        }
    }

    fn aborted(&self) -> Option<String> {
        self.aborted.clone()
    }

    fn failed_command(&self) -> Option<usize> {
        Some(self.command)
    }

    fn end_at(&mut self, end: RunEnd) {
        self.end = end;
    }
}
