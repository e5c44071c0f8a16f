//! Evaluating pgbench expressions: its coercions (int from double rounds to even, booleans
//! only from booleans), integer overflow checks, division by zero as an error, NULL in gives
//! NULL out (but for IS and debug), lazy AND/OR/CASE, and the functions.

use super::expr::{Expr, Func, Val, format_g15};
use super::rand::{self, Prng};

/// What an expression reads and draws from while it is evaluated.
pub struct Ctx<'a> {
    pub vars: &'a [Val],
    pub names: &'a [String],
    pub rng: &'a mut Prng,
    /// Shown by debug(): pgbench's script and command numbers.
    pub script: usize,
    pub command: usize,
}

type EvalResult = Result<Val, String>;

/// pgbench's truth of a value in CASE and \if: NULL and zero are false.
pub fn truth(v: &Val) -> bool {
    match v {
        Val::Bool(b) => *b,
        Val::Int(i) => *i != 0,
        Val::Double(d) => *d != 0.0,
        _ => false,
    }
}

fn to_bool(v: &Val) -> Result<bool, String> {
    match v {
        Val::Bool(b) => Ok(*b),
        other => Err(format!("cannot coerce {} to boolean", other.type_name())),
    }
}

pub fn to_int(v: &Val) -> Result<i64, String> {
    match v {
        Val::Int(i) => Ok(*i),
        Val::Double(d) => {
            let r = d.round_ties_even();
            if r.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r) {
                Err(format!("double to int overflow for {r:.6}"))
            } else {
                Ok(r as i64)
            }
        }
        other => Err(format!("cannot coerce {} to int", other.type_name())),
    }
}

fn to_double(v: &Val) -> Result<f64, String> {
    match v {
        Val::Double(d) => Ok(*d),
        Val::Int(i) => Ok(*i as f64),
        other => Err(format!("cannot coerce {} to double", other.type_name())),
    }
}

pub fn eval(e: &Expr, cx: &mut Ctx) -> EvalResult {
    match e {
        Expr::Const(v) => Ok(v.clone()),
        Expr::Var(slot) => {
            let name = &cx.names[*slot];
            match &cx.vars[*slot] {
                Val::Undefined => Err(format!("undefined variable \"{name}\"")),
                v => v.typed(name),
            }
        }
        Expr::And(a, b) => logic(a, b, cx, false),
        Expr::Or(a, b) => logic(a, b, cx, true),
        Expr::Case(arms, otherwise) => {
            for (cond, then) in arms {
                if truth(&eval(cond, cx)?) {
                    return eval(then, cx);
                }
            }
            eval(otherwise, cx)
        }
        Expr::Call(f, args) => {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(eval(a, cx)?);
            }
            if !matches!(f, Func::Is | Func::Debug) && vals.contains(&Val::Null) {
                return Ok(Val::Null);
            }
            apply(*f, &vals, cx)
        }
    }
}

/// AND and OR, lazily, with NULL from a NULL operand.
fn logic(a: &Expr, b: &Expr, cx: &mut Ctx, or: bool) -> EvalResult {
    let first = eval(a, cx)?;
    if first == Val::Null {
        return Ok(Val::Null);
    }
    if to_bool(&first)? == or {
        return Ok(Val::Bool(or));
    }
    match eval(b, cx)? {
        Val::Null => Ok(Val::Null),
        second => Ok(Val::Bool(to_bool(&second)?)),
    }
}

fn apply(f: Func, v: &[Val], cx: &mut Ctx) -> EvalResult {
    use Func::*;
    match f {
        Add | Sub | Mul | Div | Eq | Ne | Le | Lt
            if matches!(v[0], Val::Double(_)) || matches!(v[1], Val::Double(_)) =>
        {
            double_op(f, to_double(&v[0])?, to_double(&v[1])?)
        }
        Add | Sub | Mul | Div | Mod | Eq | Ne | Le | Lt => {
            int_op(f, to_int(&v[0])?, to_int(&v[1])?)
        }
        BitAnd | BitOr | BitXor | Shl | Shr => {
            let (a, b) = (to_int(&v[0])?, to_int(&v[1])?);
            Ok(Val::Int(match f {
                BitAnd => a & b,
                BitOr => a | b,
                BitXor => a ^ b,
                Shl => a.wrapping_shl(b as u32),
                _ => a.wrapping_shr(b as u32),
            }))
        }
        Not => Ok(Val::Bool(!to_bool(&v[0])?)),
        Is => Ok(Val::Bool(v[0] == v[1])),
        Pi => Ok(Val::Double(std::f64::consts::PI)),
        Abs => match &v[0] {
            Val::Int(i) => Ok(Val::Int(i.wrapping_abs())),
            other => Ok(Val::Double(to_double(other)?.abs())),
        },
        Debug => {
            errln!(
                "debug(script={},command={}): {}",
                cx.script,
                cx.command,
                describe(&v[0])
            );
            Ok(v[0].clone())
        }
        Double | Sqrt | Ln | Exp => {
            let d = to_double(&v[0])?;
            Ok(Val::Double(match f {
                Sqrt => d.sqrt(),
                Ln => d.ln(),
                Exp => d.exp(),
                _ => d,
            }))
        }
        Int => Ok(Val::Int(to_int(&v[0])?)),
        Least | Greatest => extremum(f == Greatest, v),
        Random | RandomExponential | RandomGaussian | RandomZipfian => random(f, v, cx.rng),
        Pow => Ok(Val::Double(to_double(&v[0])?.powf(to_double(&v[1])?))),
        HashFnv1a => Ok(Val::Int(rand::hash_fnv1a(to_int(&v[0])?, to_int(&v[1])?))),
        HashMurmur2 => Ok(Val::Int(rand::hash_murmur2(to_int(&v[0])?, to_int(&v[1])?))),
        Permute => {
            let (i, size, seed) = (to_int(&v[0])?, to_int(&v[1])?, to_int(&v[2])?);
            if size <= 0 {
                return Err("permute size parameter must be greater than zero".into());
            }
            Ok(Val::Int(rand::permute(i, size, seed)))
        }
    }
}

/// How debug() shows a value, as pgbench does.
pub fn describe(v: &Val) -> String {
    match v {
        Val::Null => "null".into(),
        Val::Bool(b) => format!("boolean {b}"),
        Val::Int(i) => format!("int {i}"),
        Val::Double(d) => format!("double {}", format_g15(*d)),
        other => format!("{} {other:?}", other.type_name()),
    }
}

fn double_op(f: Func, a: f64, b: f64) -> EvalResult {
    Ok(match f {
        Func::Add => Val::Double(a + b),
        Func::Sub => Val::Double(a - b),
        Func::Mul => Val::Double(a * b),
        Func::Div => Val::Double(a / b),
        Func::Eq => Val::Bool(a == b),
        Func::Ne => Val::Bool(a != b),
        Func::Le => Val::Bool(a <= b),
        _ => Val::Bool(a < b),
    })
}

fn int_op(f: Func, a: i64, b: i64) -> EvalResult {
    let out_of_range = |what: &str| format!("bigint {what} out of range");
    Ok(match f {
        Func::Add => Val::Int(a.checked_add(b).ok_or_else(|| out_of_range("add"))?),
        Func::Sub => Val::Int(a.checked_sub(b).ok_or_else(|| out_of_range("sub"))?),
        Func::Mul => Val::Int(a.checked_mul(b).ok_or_else(|| out_of_range("mul"))?),
        Func::Div | Func::Mod if b == 0 => return Err("division by zero".into()),
        Func::Div => Val::Int(a.checked_div(b).ok_or_else(|| out_of_range("div"))?),
        // x % -1 is 0, INT64_MIN included.
        Func::Mod => Val::Int(a.checked_rem(b).unwrap_or(0)),
        Func::Eq => Val::Bool(a == b),
        Func::Ne => Val::Bool(a != b),
        Func::Le => Val::Bool(a <= b),
        _ => Val::Bool(a < b),
    })
}

fn extremum(greatest: bool, v: &[Val]) -> EvalResult {
    if v.iter().any(|x| matches!(x, Val::Double(_))) {
        let mut best = to_double(&v[0])?;
        for x in &v[1..] {
            let d = to_double(x)?;
            best = if greatest { best.max(d) } else { best.min(d) };
        }
        Ok(Val::Double(best))
    } else {
        let mut best = to_int(&v[0])?;
        for x in &v[1..] {
            let i = to_int(x)?;
            best = if greatest { best.max(i) } else { best.min(i) };
        }
        Ok(Val::Int(best))
    }
}

/// Gaussian parameter floor and zipfian parameter range (pgbench's limits).
const MIN_GAUSSIAN: f64 = 2.0;
const ZIPFIAN_RANGE: std::ops::RangeInclusive<f64> = 1.001..=1000.0;

fn random(f: Func, v: &[Val], rng: &mut Prng) -> EvalResult {
    let (lo, hi) = (to_int(&v[0])?, to_int(&v[1])?);
    if lo > hi {
        return Err("empty range given to random".into());
    }
    if hi.checked_sub(lo).and_then(|d| d.checked_add(1)).is_none() {
        return Err("random range is too large".into());
    }
    let n = match f {
        Func::Random => rng.uniform(lo, hi),
        Func::RandomGaussian => {
            let p = to_double(&v[2])?;
            if p < MIN_GAUSSIAN {
                return Err(format!(
                    "gaussian parameter must be at least {MIN_GAUSSIAN:.6} (not {p:.6})"
                ));
            }
            rng.gaussian(lo, hi, p)
        }
        Func::RandomZipfian => {
            let p = to_double(&v[2])?;
            if !ZIPFIAN_RANGE.contains(&p) {
                return Err(format!(
                    "zipfian parameter must be in range [1.001, 1000] (not {p:.6})"
                ));
            }
            rng.zipfian(lo, hi, p)
        }
        _ => {
            let p = to_double(&v[2])?;
            if p <= 0.0 {
                return Err(format!(
                    "exponential parameter must be greater than zero (not {p:.6})"
                ));
            }
            rng.exponential(lo, hi, p)
        }
    };
    Ok(Val::Int(n))
}
