//! Reading a pgbench script file into commands: SQL commands (ended by `;`, split by `\;`,
//! possibly ended by `\gset`/`\aset`), with their `:variable` references, and the
//! meta-commands `\set`, `\sleep`, `\if`/`\elif`/`\else`/`\endif` (compiled into jumps),
//! `\gset` and `\aset`. Every error names the file, the line and the column.

use std::fmt;

use super::expr::{self, Expr, Names};

/// A mistake in a script, at a line and column (both from 1).
#[derive(Debug, Clone)]
pub struct ScriptError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

/// One piece of an SQL statement: text as written, or a `:variable` reference.
#[derive(Debug, Clone)]
pub enum Part {
    Text(String),
    /// `quoted`: inside a string literal or quoted identifier (substituted only as text).
    Var {
        slot: usize,
        raw: String,
        quoted: bool,
    },
}

/// Transaction control that goes through the engine's own begin/commit/rollback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Begin,
    Commit,
    Rollback,
}

#[derive(Debug, Clone)]
pub struct Statement {
    pub parts: Vec<Part>,
    pub control: Option<Control>,
    /// Column names of its select (or RETURNING) list, when \gset or \aset stores them.
    pub names: Option<Vec<String>>,
    pub line: usize,
    pub col: usize,
}

/// Where \gset (the last statement's one row) or \aset (every row of every statement) store.
#[derive(Debug, Clone)]
pub struct Store {
    pub prefix: String,
    pub all: bool,
}

#[derive(Debug, Clone)]
pub enum SleepArg {
    Micros(i64),
    /// A variable's value times the unit in microseconds.
    Var(usize, i64),
}

#[derive(Debug, Clone)]
pub enum Kind {
    Set {
        var: usize,
        expr: Expr,
    },
    Sleep(SleepArg),
    Sql {
        statements: Vec<Statement>,
        store: Option<Store>,
    },
    /// \if or \elif: when the condition is false, continue at `otherwise`.
    If {
        cond: Expr,
        otherwise: usize,
    },
    /// The end of a taken \if branch: continue after its \endif.
    Jump(usize),
    /// \startpipeline, \syncpipeline, \endpipeline (pgbench's pipeline mode).
    Pipeline(Pipe),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipe {
    Start,
    Sync,
    End,
}

impl Pipe {
    pub fn name(self) -> &'static str {
        match self {
            Pipe::Start => "startpipeline",
            Pipe::Sync => "syncpipeline",
            Pipe::End => "endpipeline",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Command {
    pub kind: Kind,
    pub line: usize,
    pub col: usize,
    /// pgbench's number of the command in its script (from 1), shown by debug().
    pub number: usize,
    /// The first line of the command as written (pgbench's -r lists commands by it).
    pub first_line: String,
}

/// Where variables are read and assigned, for the check before the run.
#[derive(Debug, Default, Clone)]
pub struct Uses {
    /// Slots read, with the position of the first read.
    pub reads: Vec<(usize, usize, usize)>,
    /// Slots assigned by \set.
    pub sets: Vec<usize>,
    /// Names \gset and \aset assign: their prefix and the column names of the select
    /// lists they store (read from the script, so known before the run).
    pub stored: Vec<String>,
}

pub struct Parsed {
    pub commands: Vec<Command>,
    pub uses: Uses,
}

/// Parse a whole script file.
pub fn parse(file: &str, src: &str, names: &mut Names) -> Result<Parsed, ScriptError> {
    let mut p = FileParser {
        file,
        src,
        pos: 0,
        lines: std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
        names,
        out: Vec::new(),
        ifs: Vec::new(),
        number: 0,
        uses: Uses::default(),
    };
    p.run()?;
    if let Some(open) = p.ifs.last() {
        return Err(p.error_at(open.at, "\\if without a matching \\endif"));
    }
    if p.number == 0 {
        return Err(p.error_at(
            src.len(),
            "empty script: it holds no SQL command and no meta-command",
        ));
    }
    Ok(Parsed {
        commands: p.out,
        uses: p.uses,
    })
}

struct IfFrame {
    at: usize,
    pending: Option<usize>,
    jumps: Vec<usize>,
    seen_else: bool,
}

struct FileParser<'a> {
    file: &'a str,
    src: &'a str,
    pos: usize,
    lines: Vec<usize>,
    names: &'a mut Names,
    out: Vec<Command>,
    ifs: Vec<IfFrame>,
    number: usize,
    uses: Uses,
}

const NOT_SET: usize = usize::MAX;

impl<'a> FileParser<'a> {
    fn line_col(&self, at: usize) -> (usize, usize) {
        let line = self.lines.partition_point(|&s| s <= at).max(1);
        let start = self.lines[line - 1];
        let col = self.src[start..at.min(self.src.len())].chars().count() + 1;
        (line, col)
    }

    fn error_at(&self, at: usize, message: impl Into<String>) -> ScriptError {
        let (line, col) = self.line_col(at);
        ScriptError {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn push(&mut self, kind: Kind, at: usize) -> usize {
        let (line, col) = self.line_col(at);
        let rest = &self.src[at.min(self.src.len())..];
        let first_line = rest.lines().next().unwrap_or("").trim_end().to_string();
        self.out.push(Command {
            kind,
            line,
            col,
            number: self.number,
            first_line,
        });
        self.out.len() - 1
    }

    fn run(&mut self) -> Result<(), ScriptError> {
        loop {
            self.skip_blank();
            match self.peek() {
                None => return Ok(()),
                Some('\\') if !self.rest().starts_with("\\;") => self.meta()?,
                Some(_) => self.sql()?,
            }
        }
    }

    /// Skip white space and comments between commands.
    fn skip_blank(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with("--") {
                self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
            } else if trimmed.starts_with("/*") {
                self.pos += trimmed.find("*/").map_or(trimmed.len(), |i| i + 2);
            } else {
                return;
            }
        }
    }

    /// The rest of a meta-command's line, continuation lines (a `\` at the end) included,
    /// with each continuation replaced by spaces so offsets stay those of the file.
    fn meta_line(&mut self) -> (usize, String) {
        let start = self.pos;
        let mut text = String::new();
        loop {
            let rest = self.rest();
            let end = rest.find('\n').unwrap_or(rest.len());
            let line = rest[..end].strip_suffix('\r').unwrap_or(&rest[..end]);
            let nl = end < rest.len();
            if let (Some(body), true) = (line.strip_suffix('\\'), nl) {
                text.push_str(body);
                text.push_str(&" ".repeat(end + 1 - body.len()));
                self.pos += end + 1;
            } else {
                text.push_str(line);
                self.pos += end + usize::from(nl);
                return (start, text);
            }
        }
    }

    fn meta(&mut self) -> Result<(), ScriptError> {
        let at = self.pos;
        self.pos += 1;
        let word: String = self
            .rest()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        self.pos += word.len();
        let (args_at, args) = self.meta_line();
        let cmd = word.to_ascii_lowercase();
        self.number += 1;
        match cmd.as_str() {
            "set" => self.set(at, args_at, &args),
            "sleep" => self.sleep(at, args_at, &args),
            "if" | "elif" => self.cond(&cmd, at, args_at, &args),
            "else" | "endif" => {
                if !args.trim().is_empty() {
                    return Err(self.error_at(args_at, format!("\\{cmd} takes no argument")));
                }
                if cmd == "else" { self.else_(at) } else { self.endif(at) }
            }
            "gset" | "aset" => Err(self.error_at(
                at,
                format!("\\{cmd} must follow an SQL command, in place of its ';'"),
            )),
            "shell" | "setshell" => Err(self.error_at(
                at,
                format!("\\{cmd} is not supported: dbduel runs no shell commands from a script"),
            )),
            "startpipeline" | "syncpipeline" | "endpipeline" => {
                // As pgbench, only the argument count is checked here; the order is checked
                // as the script runs (`ScriptClient`), in pgbench's words.
                if !args.trim().is_empty() {
                    return Err(self.error_at(
                        args_at,
                        format!("unexpected argument in command \"{cmd}\""),
                    ));
                }
                let pipe = match cmd.as_str() {
                    "startpipeline" => Pipe::Start,
                    "syncpipeline" => Pipe::Sync,
                    _ => Pipe::End,
                };
                self.push(Kind::Pipeline(pipe), at);
                Ok(())
            }
            _ => Err(self.error_at(
                at,
                format!("invalid command \\{word}: use \\set, \\sleep, \\if, \\elif, \\else, \\endif, \\gset, \\aset, \\startpipeline, \\syncpipeline or \\endpipeline"),
            )),
        }
    }

    fn set(&mut self, at: usize, args_at: usize, args: &str) -> Result<(), ScriptError> {
        let lead = args.len() - args.trim_start().len();
        let name: String = args[lead..]
            .chars()
            .take_while(|c| !c.is_whitespace())
            .collect();
        if name.is_empty() {
            return Err(self.error_at(
                at,
                "missing argument in command \\set: \\set NAME EXPRESSION",
            ));
        }
        if !expr::valid_name(&name) {
            return Err(self.error_at(args_at + lead, format!("invalid variable name: \"{name}\"")));
        }
        let expr_at = args_at + lead + name.len();
        let expr = self.expression(expr_at, &args[lead + name.len()..])?;
        let var = self.names.slot(&name);
        self.uses.sets.push(var);
        self.push(Kind::Set { var, expr }, at);
        Ok(())
    }

    fn expression(&mut self, at: usize, text: &str) -> Result<Expr, ScriptError> {
        let (e, refs) =
            expr::parse(text, self.names).map_err(|e| self.error_at(at + e.at, e.message))?;
        for (slot, off) in refs {
            let (line, col) = self.line_col(at + off);
            self.uses.reads.push((slot, line, col));
        }
        Ok(e)
    }

    fn sleep(&mut self, at: usize, args_at: usize, args: &str) -> Result<(), ScriptError> {
        let words: Vec<(usize, &str)> = words(args);
        let Some(&(off, first)) = words.first() else {
            return Err(self.error_at(
                at,
                "missing argument in command \\sleep: \\sleep N [us|ms|s]",
            ));
        };
        if words.len() > 2 {
            return Err(self.error_at(
                args_at + words[2].0,
                "too many arguments in command \\sleep",
            ));
        }
        let (amount, unit) = if let Some(name) = first.strip_prefix(':') {
            if !expr::valid_name(name) {
                return Err(
                    self.error_at(args_at + off, format!("invalid variable name: \"{name}\""))
                );
            }
            (None, words.get(1).map(|w| w.1))
        } else {
            let sign = usize::from(first.starts_with(['+', '-']));
            let digits = first[sign..].bytes().take_while(u8::is_ascii_digit).count();
            let (num, tail) = first.split_at(sign + digits);
            if digits == 0 || (!tail.is_empty() && words.len() == 2) {
                return Err(self.error_at(args_at + off, "invalid sleep time, must be an integer"));
            }
            let n: i64 = num
                .parse()
                .map_err(|_| self.error_at(args_at + off, "sleep time out of range"))?;
            (
                Some(n),
                if tail.is_empty() {
                    words.get(1).map(|w| w.1)
                } else {
                    Some(tail)
                },
            )
        };
        let micros = match unit.map(str::to_ascii_lowercase).as_deref() {
            None | Some("s") => 1_000_000,
            Some("ms") => 1_000,
            Some("us") => 1,
            Some(other) => {
                return Err(self.error_at(
                    args_at + words.last().map_or(0, |w| w.0),
                    format!("unrecognized time unit '{other}', must be us, ms or s"),
                ));
            }
        };
        let arg = match amount {
            Some(n) => SleepArg::Micros(n.saturating_mul(micros)),
            None => {
                let slot = self.names.slot(&first[1..]);
                let (line, col) = self.line_col(args_at + off);
                self.uses.reads.push((slot, line, col));
                SleepArg::Var(slot, micros)
            }
        };
        self.push(Kind::Sleep(arg), at);
        Ok(())
    }

    fn cond(
        &mut self,
        cmd: &str,
        at: usize,
        args_at: usize,
        args: &str,
    ) -> Result<(), ScriptError> {
        let cond = self.expression(args_at, args)?;
        if cmd == "if" {
            let idx = self.push(
                Kind::If {
                    cond,
                    otherwise: NOT_SET,
                },
                at,
            );
            self.ifs.push(IfFrame {
                at,
                pending: Some(idx),
                jumps: Vec::new(),
                seen_else: false,
            });
            return Ok(());
        }
        self.check_frame(at, "\\elif")?;
        let jump = self.push(Kind::Jump(NOT_SET), at);
        let idx = self.push(
            Kind::If {
                cond,
                otherwise: NOT_SET,
            },
            at,
        );
        let frame = self.ifs.last_mut().expect("checked");
        frame.jumps.push(jump);
        let pending = frame.pending.replace(idx);
        self.patch(pending, jump + 1);
        Ok(())
    }

    fn check_frame(&self, at: usize, what: &str) -> Result<(), ScriptError> {
        match self.ifs.last() {
            None => Err(self.error_at(at, format!("{what} without a matching \\if"))),
            Some(f) if f.seen_else => Err(self.error_at(at, format!("{what} after \\else"))),
            Some(_) => Ok(()),
        }
    }

    fn else_(&mut self, at: usize) -> Result<(), ScriptError> {
        self.check_frame(at, "\\else")?;
        let jump = self.push(Kind::Jump(NOT_SET), at);
        let frame = self.ifs.last_mut().expect("checked");
        frame.jumps.push(jump);
        frame.seen_else = true;
        let pending = frame.pending.take();
        self.patch(pending, jump + 1);
        Ok(())
    }

    fn endif(&mut self, at: usize) -> Result<(), ScriptError> {
        let Some(frame) = self.ifs.pop() else {
            return Err(self.error_at(at, "\\endif without a matching \\if"));
        };
        let end = self.out.len();
        self.patch(frame.pending, end);
        for j in frame.jumps {
            self.out[j].kind = Kind::Jump(end);
        }
        Ok(())
    }

    fn patch(&mut self, cond: Option<usize>, to: usize) {
        if let Some(Kind::If { otherwise, .. }) = cond.map(|i| &mut self.out[i].kind) {
            *otherwise = to;
        }
    }

    /// One SQL command: statements up to `;` (split at `\;`), or up to `\gset` / `\aset`.
    fn sql(&mut self) -> Result<(), ScriptError> {
        let at = self.pos;
        self.number += 1;
        let mut statements = Vec::new();
        let mut scan = SqlScan::new();
        let store = loop {
            match scan.next_stop(self)? {
                Stop::Semicolon | Stop::End => break None,
                Stop::Compound => statements.extend(scan.finish(self)),
                Stop::Store(all, prefix_at, prefix) => {
                    if !prefix.is_empty() && !expr::valid_name(&prefix) {
                        return Err(self
                            .error_at(prefix_at, format!("invalid variable prefix \"{prefix}\"")));
                    }
                    break Some(Store { prefix, all });
                }
            }
        };
        statements.extend(scan.finish(self));
        if statements.is_empty() {
            if store.is_some() {
                return Err(self.error_at(at, "\\gset must follow an SQL command"));
            }
            self.number -= 1;
            return Ok(());
        }
        if let Some(store) = &store {
            let last = statements.len() - 1;
            for (i, st) in statements.iter_mut().enumerate() {
                if store.all || i == last {
                    st.names = select_names(st, store, self.file)?;
                    self.uses.stored.extend(st.names.iter().flatten().cloned());
                }
            }
        }
        self.push(Kind::Sql { statements, store }, at);
        Ok(())
    }
}

fn words(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(st)) => {
                out.push((st, &s[st..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(st) = start {
        out.push((st, &s[st..]));
    }
    out
}

enum Stop {
    Semicolon,
    Compound,
    End,
    /// \gset (false) or \aset (true), the prefix's offset and the prefix.
    Store(bool, usize, String),
}

/// Scans one SQL command: quotes, dollar quotes, comments, parentheses, `:variables`.
struct SqlScan {
    parts: Vec<Part>,
    text: String,
    start: Option<usize>,
    depth: i32,
}

impl SqlScan {
    fn new() -> SqlScan {
        SqlScan {
            parts: Vec::new(),
            text: String::new(),
            start: None,
            depth: 0,
        }
    }

    fn push_text(&mut self, p: &FileParser, from: usize, to: usize) {
        let piece = &p.src[from..to];
        if self.start.is_none() && !piece.trim().is_empty() {
            self.start = Some(from + (piece.len() - piece.trim_start().len()));
        }
        self.text.push_str(piece);
    }

    fn flush_text(&mut self) {
        if !self.text.is_empty() {
            self.parts.push(Part::Text(std::mem::take(&mut self.text)));
        }
    }

    /// Advance to the next place where the statement or the command ends.
    fn next_stop(&mut self, p: &mut FileParser) -> Result<Stop, ScriptError> {
        loop {
            let rest = p.rest();
            let Some(c) = rest.chars().next() else {
                return Ok(Stop::End);
            };
            let at = p.pos;
            match c {
                '\'' | '"' | '`' => {
                    let len = quoted_len(rest, c)
                        .ok_or_else(|| p.error_at(at, format!("unterminated quoted text ({c})")))?;
                    self.quoted(p, at, len);
                }
                '$' if dollar_tag(rest).is_some() => {
                    let tag = dollar_tag(rest).expect("checked");
                    let close = rest[tag.len()..].find(tag).ok_or_else(|| {
                        p.error_at(at, format!("unterminated dollar-quoted text ({tag})"))
                    })?;
                    self.push_text(p, at, at + tag.len() * 2 + close);
                    p.pos += tag.len() * 2 + close;
                }
                '-' if rest.starts_with("--") => {
                    p.pos += rest.find('\n').unwrap_or(rest.len());
                    self.text.push(' ');
                }
                '/' if rest.starts_with("/*") => {
                    let len = rest
                        .find("*/")
                        .map(|i| i + 2)
                        .ok_or_else(|| p.error_at(at, "unterminated /* comment"))?;
                    p.pos += len;
                    self.text.push(' ');
                }
                '(' | ')' => {
                    self.depth += if c == '(' { 1 } else { -1 };
                    self.push_text(p, at, at + 1);
                    p.pos += 1;
                }
                ';' if self.depth <= 0 => {
                    p.pos += 1;
                    return Ok(Stop::Semicolon);
                }
                ':' => self.colon(p, at, false),
                '\\' => return self.backslash(p, at),
                _ => {
                    self.push_text(p, at, at + c.len_utf8());
                    p.pos += c.len_utf8();
                }
            }
        }
    }

    /// Quoted text, with the `:variables` inside it (substituted only when sent as text).
    fn quoted(&mut self, p: &mut FileParser, at: usize, len: usize) {
        let end = at + len;
        let mut i = at;
        while i < end {
            let colon = p.src[i..end].find(':').map(|k| i + k);
            let Some(k) = colon else {
                self.push_text(p, i, end);
                break;
            };
            self.push_text(p, i, k);
            p.pos = k;
            self.colon(p, k, true);
            i = p.pos.min(end);
            if p.pos > end {
                break;
            }
        }
        p.pos = end;
    }

    fn colon(&mut self, p: &mut FileParser, at: usize, quoted: bool) {
        let after = &p.src[at + 1..];
        let name: String = after
            .chars()
            .take_while(|&c| expr::is_name_char(c))
            .collect();
        if !name.chars().next().is_some_and(expr::is_name_start) {
            let colons = p.src[at..].chars().take_while(|&c| c == ':').count();
            self.push_text(p, at, at + colons);
            p.pos = at + colons;
            return;
        }
        if self.start.is_none() {
            self.start = Some(at);
        }
        self.flush_text();
        let slot = p.names.slot(&name);
        if !quoted {
            let (line, col) = p.line_col(at);
            p.uses.reads.push((slot, line, col));
        }
        self.parts.push(Part::Var {
            slot,
            raw: format!(":{name}"),
            quoted,
        });
        p.pos = at + 1 + name.len();
    }

    fn backslash(&mut self, p: &mut FileParser, at: usize) -> Result<Stop, ScriptError> {
        let rest = &p.src[at + 1..];
        if rest.starts_with(';') {
            p.pos = at + 2;
            return Ok(Stop::Compound);
        }
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let cmd = word.to_ascii_lowercase();
        if cmd != "gset" && cmd != "aset" {
            return Err(p.error_at(
                at,
                format!("\\{word} cannot end an SQL command: end it with ';' (only \\gset and \\aset may follow SQL)"),
            ));
        }
        p.pos = at + 1 + word.len();
        let (args_at, args) = p.meta_line();
        let w = words(&args);
        if w.len() > 1 {
            return Err(p.error_at(
                args_at + w[1].0,
                format!("too many arguments in command \\{cmd}: \\{cmd} [PREFIX]"),
            ));
        }
        let (off, prefix) = w.first().map_or((0, ""), |x| (x.0, x.1));
        Ok(Stop::Store(
            cmd == "aset",
            args_at + off,
            prefix.to_string(),
        ))
    }

    /// The statement scanned so far (None when it holds nothing but blanks).
    fn finish(&mut self, p: &FileParser) -> Option<Statement> {
        self.flush_text();
        let parts = std::mem::take(&mut self.parts);
        self.depth = 0;
        let start = self.start.take()?;
        let mut parts = parts;
        trim_parts(&mut parts);
        let control = match parts.as_slice() {
            [Part::Text(t)] => control(t),
            _ => None,
        };
        let (line, col) = p.line_col(start);
        Some(Statement {
            parts,
            control,
            names: None,
            line,
            col,
        })
    }
}

fn trim_parts(parts: &mut Vec<Part>) {
    if let Some(Part::Text(t)) = parts.first_mut() {
        *t = t.trim_start().to_string();
    }
    if let Some(Part::Text(t)) = parts.last_mut() {
        *t = t.trim_end().to_string();
    }
    parts.retain(|p| !matches!(p, Part::Text(t) if t.is_empty()));
}

/// Length of quoted text starting at `rest` (doubled quotes stay inside), or None.
fn quoted_len(rest: &str, q: char) -> Option<usize> {
    let mut i = 1;
    loop {
        let k = rest[i..].find(q)? + i;
        if rest[k + 1..].starts_with(q) {
            i = k + 2;
        } else {
            return Some(k + 1);
        }
    }
}

/// A PostgreSQL dollar-quote opening (`$$` or `$tag$`) at the start of `rest`.
fn dollar_tag(rest: &str) -> Option<&str> {
    let body = &rest[1..];
    let len = body
        .chars()
        .take_while(|&c| c.is_ascii_alphanumeric() || c == '_')
        .count();
    if body[..len].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    body[len..].starts_with('$').then(|| &rest[..len + 2])
}

/// Transaction control statements, whatever their case and spacing.
fn control(text: &str) -> Option<Control> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    match w.as_slice() {
        ["BEGIN"] | ["BEGIN", "WORK" | "TRANSACTION"] | ["START", "TRANSACTION"] => {
            Some(Control::Begin)
        }
        ["END" | "COMMIT"] | ["END" | "COMMIT", "WORK" | "TRANSACTION"] => Some(Control::Commit),
        ["ROLLBACK" | "ABORT"] | ["ROLLBACK" | "ABORT", "WORK" | "TRANSACTION"] => {
            Some(Control::Rollback)
        }
        _ => None,
    }
}

/// The column names a \gset or \aset stores, read from the statement's select list (or its
/// RETURNING list): `expr AS name`, or a plain column. Unquoted names are folded to lower case.
fn select_names(
    st: &Statement,
    store: &Store,
    file: &str,
) -> Result<Option<Vec<String>>, ScriptError> {
    let mut text = String::new();
    for p in &st.parts {
        match p {
            Part::Text(t) => text.push_str(t),
            Part::Var { .. } => text.push_str(" 0 "),
        }
    }
    let fail = |message: String| ScriptError {
        file: file.to_string(),
        line: st.line,
        col: st.col,
        message,
    };
    let toks = tokens(&text);
    let start = toks
        .iter()
        .position(|t| t.depth == 0 && matches!(t.lower.as_str(), "select" | "returning"));
    let Some(start) = start else {
        return if store.all {
            Ok(None)
        } else {
            Err(fail(
                "\\gset needs a SELECT (or RETURNING) list whose columns name the variables".into(),
            ))
        };
    };
    let items = select_items(&toks[start + 1..]);
    let mut names = Vec::new();
    if let [only] = items.as_slice()
        && only.is_empty()
    {
        return Ok(Some(names));
    }
    for (i, item) in items.iter().enumerate() {
        let name = item_name(item).ok_or_else(|| {
            fail(format!(
                "column {} of the \\{} query has no name dbduel can read: give it one with AS",
                i + 1,
                if store.all { "aset" } else { "gset" }
            ))
        })?;
        let full = format!("{}{name}", store.prefix);
        if !expr::valid_name(&full) {
            return Err(fail(format!(
                "error storing into variable {full}: not a valid variable name"
            )));
        }
        names.push(full);
    }
    Ok(Some(names))
}

/// The items of a select list, from the tokens after SELECT (or RETURNING) to the first
/// clause that ends it; a leading DISTINCT or ALL is left out.
fn select_items(toks: &[Token]) -> Vec<Vec<&Token>> {
    const ENDS: &[&str] = &[
        "from",
        "where",
        "group",
        "having",
        "order",
        "limit",
        "union",
        "intersect",
        "except",
        "into",
        "window",
        "offset",
        "fetch",
        "for",
    ];
    let mut items: Vec<Vec<&Token>> = vec![Vec::new()];
    for t in toks {
        if t.depth == 0 && ENDS.contains(&t.lower.as_str()) {
            break;
        }
        if t.depth == 0 && t.text == "," {
            items.push(Vec::new());
        } else if !(items.len() == 1
            && items[0].is_empty()
            && matches!(t.lower.as_str(), "distinct" | "all"))
        {
            items.last_mut().expect("one item").push(t);
        }
    }
    items
}

struct Token {
    text: String,
    lower: String,
    depth: i32,
    ident: bool,
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let len = if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
            continue;
        } else if c == '"' || c == '\'' || c == '`' {
            quoted_len(rest, c).unwrap_or(rest.len())
        } else if expr::is_name_char(c) {
            rest.chars()
                .take_while(|&c| expr::is_name_char(c) || c == '$')
                .map(char::len_utf8)
                .sum()
        } else {
            c.len_utf8()
        };
        let piece = &rest[..len];
        if piece == ")" {
            depth -= 1;
        }
        let ident = c == '"' || c == '`' || (expr::is_name_start(c));
        out.push(Token {
            text: piece.to_string(),
            lower: piece.to_ascii_lowercase(),
            depth,
            ident,
        });
        if piece == "(" {
            depth += 1;
        }
        rest = &rest[len..];
    }
    out
}

fn item_name(item: &[&Token]) -> Option<String> {
    let name_of = |t: &Token| -> String {
        if t.text.starts_with(['"', '`']) {
            t.text[1..t.text.len() - 1].to_string()
        } else {
            t.lower.clone()
        }
    };
    match item {
        [.., as_, name] if as_.lower == "as" && name.ident => Some(name_of(name)),
        [one] if one.ident => Some(name_of(one)),
        [.., a, dot, b] if a.ident && dot.text == "." && b.ident && item.len() == 3 => {
            Some(name_of(b))
        }
        // A function call alone: PostgreSQL names the column after the function, as pgbench
        // then stores it (`SELECT count(*) \gset` sets :count).
        [f, open, inner @ .., close]
            if f.ident
                && !f.text.starts_with(['"', '`'])
                && open.text == "("
                && close.text == ")"
                && inner.iter().all(|t| t.depth > f.depth) =>
        {
            Some(f.lower.clone())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(src: &str) -> (Vec<Command>, Names) {
        let mut names = Names::default();
        let p = parse("t.sql", src, &mut names).unwrap_or_else(|e| panic!("{e}"));
        (p.commands, names)
    }

    fn parse_err(src: &str) -> String {
        let mut names = Names::default();
        match parse("t.sql", src, &mut names) {
            Ok(_) => panic!("parsed: {src}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn statements_span_lines_and_compound() {
        let (cmds, _) = parse_ok("-- c\nSELECT 1\n  FROM t;\nSELECT 2 \\; SELECT 3;\nEND;");
        assert_eq!(cmds.len(), 3);
        let Kind::Sql { statements, .. } = &cmds[1].kind else {
            panic!()
        };
        assert_eq!(statements.len(), 2);
        assert_eq!((cmds[1].line, cmds[1].col), (4, 1));
        let Kind::Sql { statements, .. } = &cmds[2].kind else {
            panic!()
        };
        assert_eq!(statements[0].control, Some(Control::Commit));
    }

    #[test]
    fn compound_may_start_a_line_and_gset_may_name_nothing() {
        let (cmds, _) =
            parse_ok("\\; \\; SELECT 0 AS i5 \\; SELECT 5 AS i5 \\; \\; \\gset\nSELECT \\gset\n");
        let Kind::Sql { statements, .. } = &cmds[0].kind else {
            panic!()
        };
        assert_eq!(statements.len(), 2);
        assert_eq!(statements[1].names.as_deref().unwrap(), ["i5"]);
        let Kind::Sql { statements, .. } = &cmds[1].kind else {
            panic!()
        };
        assert_eq!(statements[0].names.as_deref().unwrap(), [] as [String; 0]);
    }

    #[test]
    fn variables_quotes_and_casts() {
        let (cmds, names) = parse_ok("SELECT :a::int, ':b', $$:c$$, x::text FROM t WHERE y = :a;");
        let Kind::Sql { statements, .. } = &cmds[0].kind else {
            panic!()
        };
        let vars: Vec<(String, bool)> = statements[0]
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Var { slot, quoted, .. } => Some((names.list[*slot].clone(), *quoted)),
                _ => None,
            })
            .collect();
        assert_eq!(
            vars,
            vec![("a".into(), false), ("b".into(), true), ("a".into(), false)]
        );
    }

    #[test]
    fn if_chains_compile_to_jumps() {
        let (cmds, _) = parse_ok(
            "\\if :a\n\\set x 1\n\\elif :b\n\\set x 2\n\\else\n\\set x 3\n\\endif\n\\set y 0",
        );
        // If(0) Set Jump If(3) Set Jump Set Set
        let kinds: Vec<String> = cmds
            .iter()
            .map(|c| match &c.kind {
                Kind::If { otherwise, .. } => format!("if->{otherwise}"),
                Kind::Jump(t) => format!("jump->{t}"),
                Kind::Set { .. } => "set".into(),
                _ => "other".into(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "if->3", "set", "jump->7", "if->6", "set", "jump->7", "set", "set"
            ]
        );
    }

    #[test]
    fn gset_names_from_the_select_list() {
        let (cmds, names) =
            parse_ok("SELECT abalance AS bal, t.tid, 1 as \"One\" FROM t \\gset p_\n");
        let Kind::Sql { statements, store } = &cmds[0].kind else {
            panic!()
        };
        assert_eq!(store.as_ref().unwrap().prefix, "p_");
        assert_eq!(
            statements[0].names.as_deref().unwrap(),
            ["p_bal", "p_tid", "p_One"]
        );
        assert!(names.list.is_empty());
        assert!(parse_err("SELECT 1 + 2 \\gset").contains("t.sql:1:1: column 1"));
        // A function call alone is named after the function, as PostgreSQL names it.
        let (cmds, _) = parse_ok("SELECT count(*), max(aid + 1) FROM t \\gset\n");
        let Kind::Sql { statements, .. } = &cmds[0].kind else {
            panic!()
        };
        assert_eq!(statements[0].names.as_deref().unwrap(), ["count", "max"]);
        assert!(parse_err("SELECT f(1) + g(2) \\gset").contains("column 1"));
        assert!(parse_err("SELECT 1;  SELECT 2, 3 AS x \\gset").contains("t.sql:1:12: column 1"));
    }

    #[test]
    fn errors_name_line_and_column() {
        assert_eq!(
            parse_err("SELECT 1;\n\\set x 1 +\n"),
            "t.sql:2:11: syntax error: the expression ends too early"
        );
        assert!(
            parse_err("\n\n  \\set x nosuch(1)")
                .starts_with("t.sql:3:10: unexpected function name \"nosuch\"")
        );
        assert!(parse_err("\\if 1\nSELECT 1;\n").starts_with("t.sql:1:1: \\if without"));
        assert!(parse_err("\\else\n").starts_with("t.sql:1:1: \\else without"));
        assert!(parse_err("\\sleep 1 week").contains("unrecognized time unit"));
        assert!(parse_err("\\sleep").contains("missing argument"));
        assert!(parse_err("\\shell ls").contains("not supported"));
        assert!(parse_err("\\gset").contains("must follow an SQL command"));
        assert!(parse_err("-- nothing\n").contains("empty script"));
        assert!(parse_err("\\set 1x 2").contains("invalid variable name"));
        assert!(parse_err("\\set i ;").starts_with("t.sql:1:8: unexpected character ';'"));
        assert!(parse_err("\\set d ln(1.0, 2.0))").contains("unexpected number of arguments"));
    }

    /// pgbench 15 refuses a double constant that `strtod` reports out of range, overflow
    /// or underflow, and takes the rest (checked by hand against pgbench 15.18).
    #[test]
    fn double_constants_out_of_range_are_refused() {
        for (src, at) in [
            ("\\set d 1.0E309", "t.sql:1:8"),
            ("\\set d 1 + .5e999", "t.sql:1:12"),
            ("\\set d 1e-400", "t.sql:1:8"),
            ("\\set d 2.2250738585072011e-308", "t.sql:1:8"),
        ] {
            let e = parse_err(src);
            let number = src.rsplit(' ').next().unwrap();
            assert_eq!(
                e,
                format!("{at}: double constant overflow: {number}"),
                "{src}"
            );
        }
        for src in [
            "\\set d 1e308",
            "\\set d 2.2250738585072014e-308",
            "\\set d 0e-999",
            "\\set d 0.0",
        ] {
            parse_ok(src);
        }
    }

    #[test]
    fn no_input_makes_it_panic() {
        let alphabet: Vec<char> = "\\;:'\"$`()-/*\n\r \tabsetgifelndpqurm0123456789.+<>=!~#&|,é_@"
            .chars()
            .collect();
        let mut rng = crate::workload::script::rand::Prng::seed(3);
        for _ in 0..20_000 {
            let len = rng.range_u64(0, 40) as usize;
            let src: String = (0..len)
                .map(|_| alphabet[rng.range_u64(0, alphabet.len() as u64 - 1) as usize])
                .collect();
            let _ = parse("f.sql", &src, &mut Names::default());
            let _ = parse("f.sql", &format!("\\set x {src}"), &mut Names::default());
            let _ = parse(
                "f.sql",
                &format!("SELECT {src} \\gset"),
                &mut Names::default(),
            );
        }
    }

    #[test]
    fn sleep_forms() {
        for (src, us) in [
            ("\\sleep 2ms", 2000),
            ("\\sleep 100 us", 100),
            ("\\sleep 3", 3_000_000),
        ] {
            let (cmds, _) = parse_ok(src);
            assert!(
                matches!(cmds[0].kind, Kind::Sleep(SleepArg::Micros(n)) if n == us),
                "{src}"
            );
        }
        let (cmds, _) = parse_ok("\\sleep :d ms");
        assert!(matches!(cmds[0].kind, Kind::Sleep(SleepArg::Var(_, 1000))));
    }

    #[test]
    fn continuation_lines() {
        let (cmds, _) = parse_ok("\\set x 1 + \\\n   2\nSELECT :x;");
        assert_eq!(cmds.len(), 2);
        assert_eq!(cmds[1].line, 3);
    }
}
