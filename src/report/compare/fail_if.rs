//! `compare --fail-if`: conditions such as `tps<-5%` or `p99>+10%`, parsed before anything
//! is loaded, and judged on a comparison: a condition is met when its figure changed beyond
//! the noise (the interval excludes no change) and past the threshold, or when its figure
//! could not be judged (noise unknown), so that a CI gate never passes in silence.

use serde::Serialize;

use super::{FIGURES, FigureComparison, HEADLINES, MIN_REPEATS, Verdict};
use crate::error::Error;

/// A figure's change, in percent of side A, below (`tps<-5%`) or above (`p99>+10%`) a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub text: String,
    pub figure: &'static str,
    pub above: bool,
    pub threshold_pct: f64,
}

/// How a condition was judged.
#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    pub condition: String,
    pub failed: bool,
    pub reason: String,
}

pub fn parse(text: &str) -> Result<Condition, Error> {
    let names: Vec<&str> = FIGURES.iter().chain(HEADLINES).map(|f| f.name).collect();
    let bad = |why: &str| {
        Error::Usage(format!(
            "--fail-if '{text}': {why}; write FIGURE<CHANGE% or FIGURE>CHANGE% with FIGURE one of {} (e.g. --fail-if 'tps<-5%' --fail-if 'p99>+10%')",
            names.join(", ")
        ))
    };
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let at = compact.find(['<', '>']).ok_or_else(|| bad("no < or >"))?;
    let (name, rest) = compact.split_at(at);
    let above = rest.starts_with('>');
    let figure = FIGURES
        .iter()
        .chain(HEADLINES)
        .find(|f| f.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| bad(&format!("unknown figure '{name}'")))?
        .name;
    let number = rest[1..]
        .strip_suffix('%')
        .ok_or_else(|| bad("the change must be a percentage, ending in %"))?;
    let threshold_pct: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| bad(&format!("'{number}' is not a number")))?;
    Ok(Condition {
        text: text.to_string(),
        figure,
        above,
        threshold_pct,
    })
}

/// The condition's figure among those compared: a workload's own figure (`nopm`) the
/// compared workload does not have is refused, naming those it has.
pub fn check(c: &Condition, figures: &[FigureComparison]) -> Result<(), Error> {
    if figures.iter().any(|f| f.name == c.figure) {
        return Ok(());
    }
    let names: Vec<&str> = figures.iter().map(|f| f.name).collect();
    Err(Error::Usage(format!(
        "--fail-if '{}': these runs have no {}; their figures are {}",
        c.text,
        c.figure,
        names.join(", ")
    )))
}

/// Whether the comparison meets the condition, and why (`check` first).
pub fn judge(c: &Condition, figures: &[FigureComparison]) -> Judgement {
    let f = figures
        .iter()
        .find(|f| f.name == c.figure)
        .expect("the condition's figure was checked");
    let (sign, side) = if c.above {
        (">", "above")
    } else {
        ("<", "below")
    };
    let past = if c.above {
        f.difference_pct > c.threshold_pct
    } else {
        f.difference_pct < c.threshold_pct
    };
    let change = format!("{} changed {:+.1}%", f.name, f.difference_pct);
    let (failed, reason) = match f.verdict {
        // A gate that cannot judge must not pass in silence.
        Verdict::Unknown => (
            true,
            format!(
                "{change}, but it could not be judged, its noise unknown ({}): a gate does not pass on a figure it cannot judge; measure more, a longer -T on each side or {MIN_REPEATS} or more repeats a side (@ID of a sweep point)",
                f.note.as_deref().unwrap_or("no interval")
            ),
        ),
        Verdict::NoDifference => (false, format!("{change}, within the noise")),
        _ if past => (
            true,
            format!(
                "{change}, beyond the noise and {side} {:+}%",
                c.threshold_pct
            ),
        ),
        _ => (
            false,
            format!(
                "{change}, beyond the noise but not {sign} {:+}%",
                c.threshold_pct
            ),
        ),
    };
    Judgement {
        condition: c.text.clone(),
        failed,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(name: &'static str, pct: f64, verdict: Verdict) -> FigureComparison {
        FigureComparison {
            name,
            unit: "tps",
            higher_is_better: true,
            a: 100.0,
            b: 100.0 + pct,
            difference: pct,
            difference_pct: pct,
            ci: None,
            ci_pct: None,
            verdict,
            note: None,
        }
    }

    #[test]
    fn conditions_parse() {
        let c = parse("tps<-5%").unwrap();
        assert_eq!((c.figure, c.above, c.threshold_pct), ("tps", false, -5.0));
        let c = parse(" P99 > +10 % ").unwrap();
        assert_eq!((c.figure, c.above, c.threshold_pct), ("p99", true, 10.0));
        for (bad, why) in [
            ("tps=5%", "no < or >"),
            ("qps<5%", "unknown figure 'qps'"),
            ("tps<5", "ending in %"),
            ("tps<x%", "'x' is not a number"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--fail-if '{bad}'")), "{e}");
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn a_change_beyond_noise_and_threshold_or_no_judgement_fails() {
        let c = parse("tps<-5%").unwrap();
        assert!(judge(&c, &[figure("tps", -20.0, Verdict::Slower)]).failed);
        assert!(!judge(&c, &[figure("tps", -20.0, Verdict::NoDifference)]).failed);
        assert!(!judge(&c, &[figure("tps", -3.0, Verdict::Slower)]).failed);
        let unknown = judge(&c, &[figure("tps", 1.0, Verdict::Unknown)]);
        assert!(
            unknown.failed,
            "a figure that cannot be judged fails the gate"
        );
        assert!(
            unknown.reason.contains("could not be judged"),
            "{unknown:?}"
        );
        assert!(unknown.reason.contains("longer -T"), "{unknown:?}");
        let up = parse("tps>+5%").unwrap();
        assert!(judge(&up, &[figure("tps", 8.0, Verdict::Faster)]).failed);
    }
}
