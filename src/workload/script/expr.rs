//! pgbench's `\set` expressions: the values (NULL, boolean, integer, double, and text not yet read
//! as a number), the lexer and the precedence-climbing parser (its grammar and precedence: OR, AND,
//! NOT, IS, comparisons, bit operators, + -, * / %, unary) into an `Expr`. Evaluation is in
//! eval.rs.

use std::fmt::Write;

/// A variable's value. `Text` is what -D and \gset store; it is read as NULL, a boolean, an
/// integer or a double when an expression uses it, as pgbench does.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Undefined,
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    Text(String),
}

impl Val {
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Undefined => "none",
            Val::Null => "null",
            Val::Bool(_) => "boolean",
            Val::Int(_) => "int",
            Val::Double(_) => "double",
            Val::Text(_) => "text",
        }
    }

    /// The text pgbench substitutes for the variable in SQL sent as text.
    pub fn render(&self, out: &mut String) {
        match self {
            Val::Undefined => {}
            Val::Null => out.push_str("NULL"),
            Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Val::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Val::Double(d) => out.push_str(&format_g15(*d)),
            Val::Text(s) => out.push_str(s),
        }
    }

    /// Read text as pgbench reads a variable: null, a boolean word (or a prefix of one), an
    /// integer, or a double.
    pub fn typed(&self, name: &str) -> Result<Val, String> {
        let Val::Text(s) = self else {
            return Ok(self.clone());
        };
        let lower = s.to_ascii_lowercase();
        let prefix_of = |w: &str| !lower.is_empty() && w.starts_with(&lower);
        if lower.is_empty() {
            Err(format!("malformed variable \"{name}\" value: \"\""))
        } else if lower == "null" {
            Ok(Val::Null)
        } else if prefix_of("true") || prefix_of("yes") || lower == "on" {
            Ok(Val::Bool(true))
        } else if prefix_of("false") || prefix_of("no") || lower == "off" || lower == "of" {
            Ok(Val::Bool(false))
        } else if looks_integer(s) {
            s.trim()
                .trim_start_matches('+')
                .parse()
                .map(Val::Int)
                .map_err(|_| format!("value \"{s}\" is out of range for type bigint"))
        } else {
            s.parse()
                .ok()
                .filter(|&d| !out_of_range(s, d))
                .map(Val::Double)
                .ok_or_else(|| format!("malformed variable \"{name}\" value: \"{s}\""))
        }
    }
}

fn looks_integer(s: &str) -> bool {
    let t = s.trim_start();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

/// C's `%.15g`, as pgbench prints doubles (and substitutes them into SQL).
pub fn format_g15(d: f64) -> String {
    // PostgreSQL's own printf spells these out.
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{d:.14e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    if !(-4..15).contains(&exp) {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (14 - exp).max(0) as usize;
        strip_zeros(&format!("{d:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// The functions and operators of the expression language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Le,
    Lt,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Not,
    Is,
    Abs,
    Debug,
    Double,
    Exp,
    Greatest,
    Least,
    HashFnv1a,
    HashMurmur2,
    Int,
    Ln,
    Permute,
    Pi,
    Pow,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    Sqrt,
}

/// How many arguments a named function takes: exactly n, at least one, or n with an
/// optional seed (:default_seed when omitted).
#[derive(Clone, Copy)]
enum Arity {
    Exactly(usize),
    AtLeastOne,
    Seeded(usize),
}

const FUNCTIONS: &[(&str, Func, Arity)] = &[
    ("abs", Func::Abs, Arity::Exactly(1)),
    ("debug", Func::Debug, Arity::Exactly(1)),
    ("double", Func::Double, Arity::Exactly(1)),
    ("exp", Func::Exp, Arity::Exactly(1)),
    ("greatest", Func::Greatest, Arity::AtLeastOne),
    ("hash", Func::HashMurmur2, Arity::Seeded(1)),
    ("hash_fnv1a", Func::HashFnv1a, Arity::Seeded(1)),
    ("hash_murmur2", Func::HashMurmur2, Arity::Seeded(1)),
    ("int", Func::Int, Arity::Exactly(1)),
    ("least", Func::Least, Arity::AtLeastOne),
    ("ln", Func::Ln, Arity::Exactly(1)),
    ("mod", Func::Mod, Arity::Exactly(2)),
    ("permute", Func::Permute, Arity::Seeded(2)),
    ("pi", Func::Pi, Arity::Exactly(0)),
    ("pow", Func::Pow, Arity::Exactly(2)),
    ("power", Func::Pow, Arity::Exactly(2)),
    ("random", Func::Random, Arity::Exactly(2)),
    (
        "random_exponential",
        Func::RandomExponential,
        Arity::Exactly(3),
    ),
    ("random_gaussian", Func::RandomGaussian, Arity::Exactly(3)),
    ("random_zipfian", Func::RandomZipfian, Arity::Exactly(3)),
    ("sqrt", Func::Sqrt, Arity::Exactly(1)),
];

/// pgbench evaluates at most this many arguments of a function.
pub const MAX_ARGS: usize = 16;

#[derive(Debug, Clone)]
pub enum Expr {
    Const(Val),
    /// A variable, by its slot in the client's variable table.
    Var(usize),
    Call(Func, Vec<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// WHEN/THEN pairs and the ELSE branch (NULL when absent).
    Case(Vec<(Expr, Expr)>, Box<Expr>),
}

/// Variable names to slots, shared by every script of a run.
#[derive(Debug, Default, Clone)]
pub struct Names {
    pub list: Vec<String>,
}

impl Names {
    pub fn slot(&mut self, name: &str) -> usize {
        match self.find(name) {
            Some(i) => i,
            None => {
                self.list.push(name.to_string());
                self.list.len() - 1
            }
        }
    }
    pub fn find(&self, name: &str) -> Option<usize> {
        self.list.iter().position(|n| n == name)
    }
}

/// pgbench's variable-name rule: a letter, `_` or non-ASCII first, then also digits.
pub fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || !c.is_ascii()
}
pub fn is_name_char(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit()
}
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(is_name_start) && chars.all(is_name_char)
}

// ---------------------------------------------------------------- lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    /// 9223372036854775808: only valid right after a unary minus.
    MaxPlusOne,
    Double(f64),
    Var(String),
    Ident(String),
    Kw(&'static str),
    Op(&'static str),
    End,
}

const KEYWORDS: &[&str] = &[
    "and", "or", "not", "is", "isnull", "notnull", "null", "true", "false", "case", "when", "then",
    "else", "end",
];

/// A parse error at a byte offset of the expression text.
#[derive(Debug)]
pub struct SyntaxError {
    pub at: usize,
    pub message: String,
}

fn err<T>(at: usize, message: impl Into<String>) -> Result<T, SyntaxError> {
    Err(SyntaxError {
        at,
        message: message.into(),
    })
}

fn lex(text: &str) -> Result<Vec<(Tok, usize)>, SyntaxError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (tok, len) =
                lex_number(&text[i..]).map_err(|m| SyntaxError { at: i, message: m })?;
            out.push((tok, start));
            i += len;
            continue;
        }
        if c == b':' {
            let name: String = text[i + 1..]
                .chars()
                .take_while(|&c| is_name_char(c))
                .collect();
            if name.is_empty() || !name.chars().next().is_some_and(is_name_start) {
                return err(i, "unexpected character ':': a variable name must follow");
            }
            i += 1 + name.len();
            out.push((Tok::Var(name), start));
            continue;
        }
        let ch = text[i..].chars().next().expect("a character");
        if is_name_start(ch) {
            let word: String = text[i..].chars().take_while(|&c| is_name_char(c)).collect();
            i += word.len();
            let lower = word.to_ascii_lowercase();
            match KEYWORDS.iter().find(|k| **k == lower) {
                Some(k) => out.push((Tok::Kw(k), start)),
                None => out.push((Tok::Ident(lower), start)),
            }
            continue;
        }
        let two = text.get(i..i + 2).unwrap_or("");
        let op: &'static str = match two {
            "<=" => "<=",
            ">=" => ">=",
            "<>" | "!=" => "<>",
            "<<" => "<<",
            ">>" => ">>",
            _ => match c {
                b'+' => "+",
                b'-' => "-",
                b'*' => "*",
                b'/' => "/",
                b'%' => "%",
                b'<' => "<",
                b'>' => ">",
                b'=' => "=",
                b'&' => "&",
                b'|' => "|",
                b'#' => "#",
                b'~' => "~",
                b'(' => "(",
                b')' => ")",
                b',' => ",",
                _ => return err(i, format!("unexpected character '{ch}'")),
            },
        };
        i += op.len();
        out.push((Tok::Op(op), start));
    }
    out.push((Tok::End, text.len()));
    Ok(out)
}

/// An integer or double literal at the start of `s`; returns the token and its length.
fn lex_number(s: &str) -> Result<(Tok, usize), String> {
    let b = s.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut len = digits(0);
    let mut double = false;
    if b.get(len) == Some(&b'.') {
        double = true;
        len += 1 + digits(len + 1);
    }
    if matches!(b.get(len), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(len + 1), Some(b'+' | b'-')));
        let exp = digits(len + 1 + sign);
        if exp > 0 {
            double = true;
            len += 1 + sign + exp;
        }
    }
    let text = &s[..len];
    if double {
        return match text.parse::<f64>() {
            Ok(d) if out_of_range(text, d) => Err(format!("double constant overflow: {text}")),
            Ok(d) => Ok((Tok::Double(d), len)),
            Err(_) => Err(format!("invalid number \"{text}\"")),
        };
    }
    if text == "9223372036854775808" {
        return Ok((Tok::MaxPlusOne, len));
    }
    text.parse()
        .map(|i| (Tok::Int(i), len))
        .map_err(|_| format!("bigint constant overflow: {text}"))
}

/// Whether a double constant lies outside what a double holds: pgbench reads it with
/// `strtod` and refuses it when that reports a range error, which it does for an overflow
/// (1.0E309) and for an underflow to a subnormal or to zero (1e-310, 1e-400), not for 0.0.
/// Spelled infinities ("inf") are in range, as `strtod` reads them.
fn out_of_range(text: &str, d: f64) -> bool {
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    let nonzero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    let digits = text.bytes().any(|b| b.is_ascii_digit());
    digits && (d.is_infinite() || d.is_subnormal() || (d == 0.0 && nonzero))
}

// ---------------------------------------------------------------- parser

struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    names: &'a mut Names,
    /// Every variable read: slot and offset.
    refs: Vec<(usize, usize)>,
}

/// Parse one expression (the rest of a `\set` line); variables get slots in `names`.
/// Returns the expression and every variable it reads, with its offset.
pub fn parse(text: &str, names: &mut Names) -> Result<(Expr, Vec<(usize, usize)>), SyntaxError> {
    let mut p = Parser {
        toks: lex(text)?,
        pos: 0,
        names,
        refs: Vec::new(),
    };
    if p.peek() == &Tok::End {
        return err(text.len(), "syntax error: an expression is missing");
    }
    let e = p.expr(1)?;
    match p.peek() {
        Tok::End => Ok((e, p.refs)),
        _ => err(p.at(), "syntax error: unexpected text after the expression"),
    }
}

/// Binary operators: precedence (1 lowest) and whether operators of that level may chain.
fn binary(tok: &Tok) -> Option<(u8, bool)> {
    match tok {
        Tok::Kw("or") => Some((1, true)),
        Tok::Kw("and") => Some((2, true)),
        Tok::Kw("is" | "isnull" | "notnull") => Some((4, false)),
        Tok::Op("<" | ">" | "=" | "<=" | ">=" | "<>") => Some((5, false)),
        Tok::Op("|" | "#" | "&" | "<<" | ">>") => Some((6, true)),
        Tok::Op("+" | "-") => Some((7, true)),
        Tok::Op("*" | "/" | "%") => Some((8, true)),
        _ => None,
    }
}

fn call(f: Func, args: Vec<Expr>) -> Expr {
    Expr::Call(f, args)
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }
    fn at(&self) -> usize {
        self.toks[self.pos].1
    }
    fn bump(&mut self) -> Tok {
        let t = self.toks[self.pos].0.clone();
        if t != Tok::End {
            self.pos += 1;
        }
        t
    }
    fn expect(&mut self, want: Tok, what: &str) -> Result<(), SyntaxError> {
        if *self.peek() == want {
            self.bump();
            Ok(())
        } else {
            err(self.at(), format!("syntax error: {what} expected"))
        }
    }

    /// Precedence climbing over the binary operators of level `min` and above.
    fn expr(&mut self, min: u8) -> Result<Expr, SyntaxError> {
        let mut lhs = self.prefix()?;
        while let Some((prec, chains)) = binary(self.peek()) {
            if prec < min {
                break;
            }
            let op = self.bump();
            lhs = match op {
                Tok::Kw("isnull") => call(Func::Is, vec![lhs, Expr::Const(Val::Null)]),
                Tok::Kw("notnull") => not(call(Func::Is, vec![lhs, Expr::Const(Val::Null)])),
                Tok::Kw("is") => self.is_test(lhs)?,
                op => {
                    let rhs = self.expr(prec + 1)?;
                    binary_node(op, lhs, rhs)
                }
            };
            if !chains && binary(self.peek()).is_some_and(|(p, _)| p == prec) {
                return err(
                    self.at(),
                    "syntax error: comparisons and IS tests do not chain: add parentheses",
                );
            }
        }
        Ok(lhs)
    }

    fn is_test(&mut self, lhs: Expr) -> Result<Expr, SyntaxError> {
        let negate = *self.peek() == Tok::Kw("not");
        if negate {
            self.bump();
        }
        let rhs = match self.bump() {
            Tok::Kw("null") => Val::Null,
            Tok::Kw("true") => Val::Bool(true),
            Tok::Kw("false") => Val::Bool(false),
            _ => {
                return err(
                    self.toks[self.pos - 1].1,
                    "syntax error: IS [NOT] NULL, TRUE or FALSE expected",
                );
            }
        };
        let test = call(Func::Is, vec![lhs, Expr::Const(rhs)]);
        Ok(if negate { not(test) } else { test })
    }

    fn prefix(&mut self) -> Result<Expr, SyntaxError> {
        let at = self.at();
        match self.bump() {
            Tok::Int(i) => Ok(Expr::Const(Val::Int(i))),
            Tok::Double(d) => Ok(Expr::Const(Val::Double(d))),
            Tok::MaxPlusOne => err(at, "bigint constant overflow: 9223372036854775808"),
            Tok::Var(name) => {
                let slot = self.names.slot(&name);
                self.refs.push((slot, at));
                Ok(Expr::Var(slot))
            }
            Tok::Kw("null") => Ok(Expr::Const(Val::Null)),
            Tok::Kw("true") => Ok(Expr::Const(Val::Bool(true))),
            Tok::Kw("false") => Ok(Expr::Const(Val::Bool(false))),
            Tok::Kw("not") => Ok(not(self.expr(4)?)),
            Tok::Kw("case") => self.case(),
            Tok::Op("(") => {
                let e = self.expr(1)?;
                self.expect(Tok::Op(")"), "')'")?;
                Ok(e)
            }
            Tok::Op("+") => self.expr(9),
            Tok::Op("-") => {
                if *self.peek() == Tok::MaxPlusOne {
                    self.bump();
                    return Ok(Expr::Const(Val::Int(i64::MIN)));
                }
                let e = self.expr(9)?;
                Ok(call(Func::Sub, vec![Expr::Const(Val::Int(0)), e]))
            }
            Tok::Op("~") => {
                let e = self.expr(7)?;
                Ok(call(Func::BitXor, vec![Expr::Const(Val::Int(-1)), e]))
            }
            Tok::Ident(name) => self.function(name, at),
            Tok::End => err(at, "syntax error: the expression ends too early"),
            _ => err(at, "syntax error"),
        }
    }

    fn case(&mut self) -> Result<Expr, SyntaxError> {
        let mut arms = Vec::new();
        while *self.peek() == Tok::Kw("when") {
            self.bump();
            let cond = self.expr(1)?;
            self.expect(Tok::Kw("then"), "THEN")?;
            arms.push((cond, self.expr(1)?));
        }
        if arms.is_empty() {
            return err(self.at(), "syntax error: WHEN expected after CASE");
        }
        let otherwise = if *self.peek() == Tok::Kw("else") {
            self.bump();
            self.expr(1)?
        } else {
            Expr::Const(Val::Null)
        };
        self.expect(Tok::Kw("end"), "END")?;
        Ok(Expr::Case(arms, Box::new(otherwise)))
    }

    fn function(&mut self, name: String, at: usize) -> Result<Expr, SyntaxError> {
        let Some(&(_, f, arity)) = FUNCTIONS.iter().find(|(n, _, _)| *n == name) else {
            let known: Vec<&str> = FUNCTIONS.iter().map(|(n, _, _)| *n).collect();
            return err(
                at,
                format!(
                    "unexpected function name \"{name}\" (known: {})",
                    known.join(", ")
                ),
            );
        };
        self.expect(Tok::Op("("), &format!("'(' after {name}"))?;
        let mut args = Vec::new();
        if *self.peek() != Tok::Op(")") {
            loop {
                args.push(self.expr(1)?);
                if *self.peek() != Tok::Op(",") {
                    break;
                }
                self.bump();
            }
        }
        self.expect(Tok::Op(")"), "')' or ','")?;
        let n = args.len();
        match arity {
            Arity::Exactly(k) if n != k => {
                return err(
                    at,
                    format!("unexpected number of arguments ({name} takes {k}, not {n})"),
                );
            }
            Arity::AtLeastOne if n == 0 => {
                return err(at, format!("at least one argument expected ({name})"));
            }
            Arity::AtLeastOne if n > MAX_ARGS => {
                return err(
                    at,
                    format!("too many function arguments, maximum is {MAX_ARGS}"),
                );
            }
            Arity::Seeded(k) if n == k => {
                args.push(Expr::Var(self.names.slot("default_seed")));
            }
            Arity::Seeded(k) if n != k + 1 => {
                return err(
                    at,
                    format!(
                        "unexpected number of arguments ({name} takes {k} or {})",
                        k + 1
                    ),
                );
            }
            _ => {}
        }
        Ok(call(f, args))
    }
}

fn not(e: Expr) -> Expr {
    call(Func::Not, vec![e])
}

fn binary_node(op: Tok, l: Expr, r: Expr) -> Expr {
    let f = match op {
        Tok::Kw("or") => return Expr::Or(Box::new(l), Box::new(r)),
        Tok::Kw("and") => return Expr::And(Box::new(l), Box::new(r)),
        // a > b is b < a, a >= b is b <= a (as pgbench builds them).
        Tok::Op(">") => return call(Func::Lt, vec![r, l]),
        Tok::Op(">=") => return call(Func::Le, vec![r, l]),
        Tok::Op("<") => Func::Lt,
        Tok::Op("<=") => Func::Le,
        Tok::Op("=") => Func::Eq,
        Tok::Op("<>") => Func::Ne,
        Tok::Op("|") => Func::BitOr,
        Tok::Op("#") => Func::BitXor,
        Tok::Op("&") => Func::BitAnd,
        Tok::Op("<<") => Func::Shl,
        Tok::Op(">>") => Func::Shr,
        Tok::Op("+") => Func::Add,
        Tok::Op("-") => Func::Sub,
        Tok::Op("*") => Func::Mul,
        Tok::Op("/") => Func::Div,
        Tok::Op("%") => Func::Mod,
        other => unreachable!("not a binary operator: {other:?}"),
    };
    call(f, vec![l, r])
}
