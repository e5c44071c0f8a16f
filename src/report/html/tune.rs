//! The page of `tune --html`, drawn from a `TuneView`: every trial's figure in the order the
//! search measured them, round by round, with the best so far; the final comparison (each
//! side's runs and mean) and the winner's difference from each baseline with its 95% interval,
//! coloured by its verdict; and what mattered (the figure without each of the winner's knobs
//! against the worse end of the 95% prediction interval of the winner's runs), with the
//! winner's knobs as a table.

use std::fmt::Write;

use super::svg::{
    Axis, Frame, SHAPES, Style, compact, esc, line_svg, marker, nice_ticks, ticks_of, w,
};
use super::{PALETTE, SCRIPT};

/// What the page shows of a search.
pub struct TuneView {
    pub title: String,
    /// The summary's conclusions: the winner, each verdict, what mattered.
    pub conclusions: Vec<String>,
    /// The figure the search ranked by ("tps", "nopm", "p99 ms at 2000 tps").
    pub ranked: String,
    /// The figure the final comparison and the ablation judge, with its unit ("tps", "ms p99").
    pub judged: String,
    pub higher_is_better: bool,
    /// Every trial, in the order measured.
    pub trials: Vec<TrialView>,
    pub winner: String,
    /// The winner's knobs as set.
    pub knobs: Vec<(String, String)>,
    /// Each side of the final comparison: its name and its runs' judged figure.
    pub sides: Vec<(String, Vec<f64>)>,
    /// The winner against each baseline.
    pub against: Vec<AgainstView>,
    /// Each of the winner's knobs put back to its shipped value (empty: no gain to credit).
    pub ablation: Vec<AblationView>,
    /// The line a knob's run must pass to have mattered: the worse end of the 95% prediction
    /// interval of the winner's runs (`tune::worse_bound`).
    pub bound: Option<f64>,
}

pub struct TrialView {
    pub round: u32,
    pub candidate: String,
    /// The knobs it sets, as `k=v` words (empty for default).
    pub knobs: String,
    pub seconds: u64,
    /// The ranked figure, or why there is none.
    pub value: Result<f64, String>,
}

pub struct AgainstView {
    pub baseline: String,
    /// The winner's figure against the baseline's, in percent, and its 95% interval.
    pub difference_pct: f64,
    pub ci_pct: Option<[f64; 2]>,
    /// `faster`, `slower`, `no_difference` or `unknown` (compare's verdicts; for a latency,
    /// faster is lower).
    pub verdict: String,
}

pub struct AblationView {
    pub knob: String,
    pub value: String,
    /// The judged figure without the knob, or why there is none.
    pub without: Result<f64, String>,
    pub mattered: Option<bool>,
}

const BETTER: &str = "#009E73";
const WORSE: &str = "#D55E00";
const NEUTRAL: &str = "#777777";

fn style(i: usize) -> Style {
    Style {
        color: PALETTE[i % PALETTE.len()],
        dash: "",
        shape: SHAPES[i % SHAPES.len()],
    }
}

fn frame(h: f64, left: f64, x: Axis, y: Axis) -> Frame {
    Frame {
        w: 760.0,
        h,
        left,
        right: 16.0,
        top: 14.0,
        bottom: 46.0,
        pad: 12.0,
        x,
        y,
    }
}

fn linear(min: f64, max: f64) -> Axis {
    Axis {
        min,
        max,
        log: false,
    }
}

/// Ticks from -m to m around zero, m a round number at or above the largest magnitude.
fn symmetric_ticks(largest: f64) -> Vec<f64> {
    let up = nice_ticks(largest.abs().max(1.0));
    let mut out: Vec<f64> = up.iter().rev().filter(|v| **v != 0.0).map(|v| -v).collect();
    out.extend(up);
    out
}

fn percent_ticks(values: &[f64]) -> Vec<(f64, String)> {
    values
        .iter()
        .map(|v| (*v, format!("{}%", compact(*v))))
        .collect()
}

/// The best value so far at each trial (failed trials keep the best before them).
pub fn best_so_far(trials: &[TrialView], higher_is_better: bool) -> Vec<Option<f64>> {
    let mut best: Option<f64> = None;
    trials
        .iter()
        .map(|t| {
            if let Ok(v) = t.value {
                best = Some(match best {
                    Some(b) if higher_is_better => b.max(v),
                    Some(b) => b.min(v),
                    None => v,
                });
            }
            best
        })
        .collect()
}

/// Every trial's figure by the order measured: a series a round (filled markers; a failed
/// trial hollow on the axis), the best so far as a step line.
fn trials_chart(v: &TuneView) -> String {
    let n = v.trials.len().max(2) as f64;
    let top = v
        .trials
        .iter()
        .filter_map(|t| t.value.as_ref().ok().copied())
        .fold(0.0, f64::max);
    let yt = nice_ticks(top);
    let xt: Vec<f64> = nice_ticks(n)
        .into_iter()
        .filter(|x| *x >= 1.0 && x.fract() == 0.0)
        .collect();
    let f = frame(
        340.0,
        62.0,
        linear(1.0, n),
        linear(0.0, *yt.last().unwrap_or(&1.0)),
    );
    let mut out = f.open(
        &ticks_of(&xt),
        &ticks_of(&yt),
        "trial, in the order measured",
        &v.ranked,
    );
    let best = best_so_far(&v.trials, v.higher_is_better);
    let mut step: Vec<(f64, f64)> = Vec::new();
    for (i, b) in best.iter().enumerate() {
        if let Some(b) = b {
            let (x, y) = (f.px(i as f64 + 1.0), f.py(*b));
            if let Some(&(_, last)) = step.last() {
                step.push((x, last));
            }
            step.push((x, y));
        }
    }
    w!(out, "<g class=\"series\" data-series=\"best so far\">");
    out += &line_svg(
        &step,
        &Style {
            color: "#555555",
            dash: "5 3",
            shape: SHAPES[0],
        },
    );
    out += "</g>";
    let rounds: Vec<u32> = {
        let mut r: Vec<u32> = v.trials.iter().map(|t| t.round).collect();
        r.dedup();
        r
    };
    for (k, round) in rounds.iter().enumerate() {
        let st = style(k);
        w!(out, "<g class=\"series\" data-series=\"round {round}\">");
        for (i, t) in v
            .trials
            .iter()
            .enumerate()
            .filter(|(_, t)| t.round == *round)
        {
            let x = f.px(i as f64 + 1.0);
            match &t.value {
                Ok(value) => {
                    w!(
                        out,
                        "<g class=\"point\"><title>round {round}, {}: {} {} ({} s)</title>",
                        esc(&t.candidate),
                        compact(*value),
                        esc(&v.ranked),
                        t.seconds
                    );
                    out += &marker(&st, x, f.py(*value), false);
                }
                Err(why) => {
                    w!(
                        out,
                        "<g class=\"point\"><title>round {round}, {}: not measured: {}</title>",
                        esc(&t.candidate),
                        esc(why.lines().rfind(|l| !l.trim().is_empty()).unwrap_or(why))
                    );
                    out += &marker(&st, x, f.py(0.0), true);
                }
            }
            out += "</g>";
        }
        out += "</g>";
    }
    out += "</svg>";
    let mut legend = String::from("<ul class=\"legend\">");
    for (k, round) in rounds.iter().enumerate() {
        let st = style(k);
        let seconds = v
            .trials
            .iter()
            .find(|t| t.round == *round)
            .map_or(0, |t| t.seconds);
        w!(
            legend,
            "<li data-legend=\"round {round}\" role=\"button\" tabindex=\"0\" title=\"click to hide or show\"><svg width=\"38\" height=\"16\" aria-hidden=\"true\">{}</svg>round {round} ({seconds} s trials)</li>",
            marker(&st, 19.0, 8.0, false)
        );
    }
    w!(
        legend,
        "<li data-legend=\"best so far\" role=\"button\" tabindex=\"0\" title=\"click to hide or show\"><svg width=\"38\" height=\"16\" aria-hidden=\"true\"><path d=\"M2 8H36\" stroke=\"#555\" stroke-width=\"2.2\" stroke-dasharray=\"5 3\"/></svg>best so far</li></ul>"
    );
    legend + &out
}

/// The final comparison's runs: a column a side, each run a marker, its mean a bar.
fn sides_chart(v: &TuneView) -> String {
    let n = v.sides.len().max(1);
    let top = v
        .sides
        .iter()
        .flat_map(|(_, r)| r.iter().copied())
        .fold(0.0, f64::max);
    let yt = nice_ticks(top);
    let xticks: Vec<(f64, String)> = v
        .sides
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (i as f64, name.clone()))
        .collect();
    let mut f = frame(
        300.0,
        62.0,
        linear(-0.5, n as f64 - 0.5),
        linear(0.0, *yt.last().unwrap_or(&1.0)),
    );
    f.pad = 0.0;
    let mut out = f.open(&xticks, &ticks_of(&yt), "configuration", &v.judged);
    let mut legend = String::from("<ul class=\"legend\">");
    for (i, (name, runs)) in v.sides.iter().enumerate() {
        let st = style(i);
        let x = f.px(i as f64);
        w!(out, "<g class=\"series\" data-series=\"{}\">", esc(name));
        if !runs.is_empty() {
            let mean = runs.iter().sum::<f64>() / runs.len() as f64;
            let y = f.py(mean);
            w!(
                out,
                "<g class=\"point\"><title>{}: mean {} {} of {} runs</title><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{}\" stroke-width=\"3\"/></g>",
                esc(name),
                compact(mean),
                esc(&v.judged),
                runs.len(),
                x - 26.0,
                x + 26.0,
                st.color
            );
        }
        for (k, r) in runs.iter().enumerate() {
            // Side by side within the column, so that equal runs do not hide each other.
            let dx = (k as f64 - (runs.len() as f64 - 1.0) / 2.0) * 9.0;
            w!(
                out,
                "<g class=\"point\"><title>{}, run {}: {} {}</title>",
                esc(name),
                k + 1,
                compact(*r),
                esc(&v.judged)
            );
            out += &marker(&st, x + dx, f.py(*r), false);
            out += "</g>";
        }
        out += "</g>";
        w!(
            legend,
            "<li data-legend=\"{}\" role=\"button\" tabindex=\"0\" title=\"click to hide or show\"><svg width=\"38\" height=\"16\" aria-hidden=\"true\">{}</svg>{}{}</li>",
            esc(name),
            marker(&st, 19.0, 8.0, false),
            esc(name),
            if *name == v.winner { " (winner)" } else { "" }
        );
    }
    legend + "</ul>" + &out + "</svg>"
}

fn verdict_color(verdict: &str) -> &'static str {
    match verdict {
        "faster" => BETTER,
        "slower" => WORSE,
        _ => NEUTRAL,
    }
}

/// Horizontal rows on a percent axis around zero: one row a label.
fn rows_frame(labels: &[String], largest: f64) -> (Frame, Vec<f64>) {
    let xt = symmetric_ticks(largest);
    let lo = *xt.first().unwrap_or(&-1.0);
    let hi = *xt.last().unwrap_or(&1.0);
    let n = labels.len().max(1) as f64;
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(6) as f64;
    let mut f = frame(
        70.0 + 34.0 * n,
        (longest * 7.0 + 18.0).clamp(70.0, 300.0),
        linear(lo, hi),
        linear(-0.5, n - 0.5),
    );
    f.pad = 0.0;
    (f, xt)
}

/// The first row on top.
fn row(i: usize, rows: usize) -> f64 {
    rows.saturating_sub(1 + i) as f64
}

fn row_ticks(labels: &[String]) -> Vec<(f64, String)> {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| (row(i, labels.len()), l.clone()))
        .collect()
}

/// The zero line of a percent axis.
fn zero_line(f: &Frame) -> String {
    let x = f.px(0.0);
    format!(
        "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#333\" stroke-width=\"1.2\"/>",
        f.top,
        f.h - f.bottom
    )
}

/// The winner against each baseline: the difference in percent, its 95% interval as a bar,
/// coloured by the verdict.
fn against_chart(v: &TuneView) -> String {
    let labels: Vec<String> = v
        .against
        .iter()
        .map(|a| format!("against {}", a.baseline))
        .collect();
    let largest = v
        .against
        .iter()
        .flat_map(|a| {
            let [lo, hi] = a.ci_pct.unwrap_or([a.difference_pct; 2]);
            [lo.abs(), hi.abs(), a.difference_pct.abs()]
        })
        .fold(1.0, f64::max)
        // An interval that spans thousands of percent says "noise"; it is cut at 100%.
        .min(100.0);
    let (f, xt) = rows_frame(&labels, largest);
    let yticks = row_ticks(&labels);
    let mut out = f.open(
        &percent_ticks(&xt),
        &yticks,
        &format!("{}'s {} against each baseline's", v.winner, v.judged),
        "",
    );
    out += &zero_line(&f);
    let clamp = |p: f64| p.clamp(f.x.min, f.x.max);
    for (i, a) in v.against.iter().enumerate() {
        let color = verdict_color(&a.verdict);
        let y = f.py(row(i, labels.len()));
        w!(
            out,
            "<g class=\"series\" data-series=\"{}\">",
            esc(&a.verdict)
        );
        let interval = a
            .ci_pct
            .map(|[lo, hi]| format!(", 95% interval {lo:+.1}% to {hi:+.1}%"))
            .unwrap_or_default();
        w!(
            out,
            "<g class=\"point\"><title>{} against {}: {:+.1}%{interval}: {}</title>",
            esc(&v.winner),
            esc(&a.baseline),
            a.difference_pct,
            verdict_words(&a.verdict, v.higher_is_better)
        );
        if let Some([lo, hi]) = a.ci_pct {
            w!(
                out,
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"4\" stroke-linecap=\"round\"/>",
                f.px(clamp(lo)),
                f.px(clamp(hi))
            );
        }
        out += &marker(
            &Style {
                color,
                dash: "",
                shape: SHAPES[0],
            },
            f.px(clamp(a.difference_pct)),
            y,
            false,
        );
        out += "</g></g>";
    }
    let mut legend = String::from("<ul class=\"legend\">");
    for verdict in ["faster", "slower", "no_difference", "unknown"] {
        if v.against.iter().any(|a| a.verdict == verdict) {
            w!(
                legend,
                "<li data-legend=\"{verdict}\" role=\"button\" tabindex=\"0\" title=\"click to hide or show\"><svg width=\"38\" height=\"16\" aria-hidden=\"true\"><path d=\"M4 8H34\" stroke=\"{}\" stroke-width=\"4\" stroke-linecap=\"round\"/></svg>{}</li>",
                verdict_color(verdict),
                verdict_words(verdict, v.higher_is_better)
            );
        }
    }
    legend + "</ul>" + &out + "</svg>"
}

fn verdict_words(verdict: &str, higher_is_better: bool) -> &'static str {
    match (verdict, higher_is_better) {
        ("faster", true) => "the winner beats it (the interval all above zero)",
        ("faster", false) => "the winner beats it (the interval all below zero)",
        ("slower", _) => "the winner is worse (the interval all on the worse side)",
        ("no_difference", _) => "not beyond the noise (the interval spans zero)",
        _ => "not judged",
    }
}

/// What mattered: the figure without each knob against the winner's mean, in percent, the
/// prediction interval's worse end as a dashed line; a knob mattered beyond it.
fn ablation_chart(v: &TuneView) -> String {
    let runs = v
        .sides
        .iter()
        .find(|(n, _)| *n == v.winner)
        .map(|(_, r)| r.clone())
        .unwrap_or_default();
    let mean = runs.iter().sum::<f64>() / runs.len().max(1) as f64;
    let pct = |x: f64| 100.0 * (x - mean) / mean.max(f64::MIN_POSITIVE);
    let worst = v.bound.unwrap_or(f64::NAN);
    let labels: Vec<String> = v
        .ablation
        .iter()
        .map(|a| format!("{}={}", a.knob, a.value))
        .collect();
    let largest = v
        .ablation
        .iter()
        .filter_map(|a| a.without.as_ref().ok().map(|x| pct(*x).abs()))
        .chain(worst.is_finite().then(|| pct(worst).abs()))
        .fold(1.0, f64::max);
    let (f, xt) = rows_frame(&labels, largest);
    let yticks = row_ticks(&labels);
    let mut out = f.open(
        &percent_ticks(&xt),
        &yticks,
        &format!("{} without the knob, against the winner's mean", v.judged),
        "",
    );
    out += &zero_line(&f);
    if worst.is_finite() {
        let x = f.px(pct(worst));
        w!(
            out,
            "<line class=\"worst\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"{WORSE}\" stroke-dasharray=\"6 4\"/>",
            f.top,
            f.h - f.bottom
        );
    }
    for (group, label) in [
        (Some(true), "mattered"),
        (Some(false), "within the winner's spread"),
    ] {
        w!(out, "<g class=\"series\" data-series=\"{label}\">");
        let color = if group == Some(true) { WORSE } else { NEUTRAL };
        for (i, a) in v
            .ablation
            .iter()
            .enumerate()
            .filter(|(_, a)| a.mattered == group)
        {
            let Ok(without) = a.without else { continue };
            let y = f.py(row(i, labels.len()));
            let (x0, x1) = (f.px(0.0), f.px(pct(without)));
            w!(
                out,
                "<g class=\"point\"><title>without {}={}: {} {} ({:+.1}% against the winner's mean): {label}</title>\
                 <rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"14\" fill=\"{color}\"/></g>",
                esc(&a.knob),
                esc(&a.value),
                compact(without),
                esc(&v.judged),
                pct(without),
                x0.min(x1),
                y - 7.0,
                (x1 - x0).abs().max(1.0)
            );
        }
        out += "</g>";
    }
    let mut legend = String::from("<ul class=\"legend\">");
    for (label, color) in [("mattered", WORSE), ("within the winner's spread", NEUTRAL)] {
        w!(
            legend,
            "<li data-legend=\"{label}\" role=\"button\" tabindex=\"0\" title=\"click to hide or show\"><svg width=\"38\" height=\"16\" aria-hidden=\"true\"><rect x=\"4\" y=\"2\" width=\"30\" height=\"12\" fill=\"{color}\"/></svg>{label}</li>"
        );
    }
    w!(
        legend,
        "<li><svg width=\"38\" height=\"16\"><path d=\"M19 1V15\" stroke=\"{WORSE}\" stroke-dasharray=\"6 4\"/></svg>the winner's 95% prediction interval, worse end</li></ul>"
    );
    legend + &out + "</svg>"
}

/// Every trial as a table: round, candidate, its knobs, seconds, figure or why none.
fn trials_table(v: &TuneView) -> String {
    let mut out = format!(
        "<details><summary>Every trial</summary><table class=\"data\"><thead><tr><th>round</th>\
         <th>candidate</th><th>knobs</th><th>s</th><th>{}</th></tr></thead><tbody>",
        esc(&v.ranked)
    );
    for t in &v.trials {
        let value = match &t.value {
            Ok(x) => format!("{x:.1}"),
            Err(why) => format!(
                "not measured: {}",
                why.lines().rfind(|l| !l.trim().is_empty()).unwrap_or(why)
            ),
        };
        w!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            t.round,
            esc(&t.candidate),
            esc(&t.knobs),
            t.seconds,
            esc(&value)
        );
    }
    out + "</tbody></table></details>"
}

/// The winner's knobs as a table.
fn knobs_table(v: &TuneView) -> String {
    if v.knobs.is_empty() {
        return format!(
            "<p>{} sets no knob: the engine as shipped.</p>",
            esc(&v.winner)
        );
    }
    let mut out = String::from(
        "<table class=\"data\"><thead><tr><th>knob</th><th>value</th></tr></thead><tbody>",
    );
    for (k, val) in &v.knobs {
        w!(out, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(val));
    }
    out + "</tbody></table>"
}

/// The whole page.
pub fn tune_html(v: &TuneView) -> String {
    let mut out = super::capacity::page_head(&v.title);
    for line in &v.conclusions {
        w!(out, "<p>{}</p>", esc(line));
    }
    out += "</header>\n";
    w!(
        out,
        "<section><h2>The search</h2><p>Every trial's {} in the order measured: each round \
         (successive halving) keeps the best third of the one before and measures it twice as \
         long; a hollow marker on the axis is a candidate the server refused or a run that \
         failed (its reason in its tooltip). The dashed line is the best so far.</p>\
         <figure>{}</figure>{}</section>\n",
        esc(&v.ranked),
        trials_chart(v),
        trials_table(v)
    );
    w!(
        out,
        "<section><h2>The final comparison</h2><p>The winner and each baseline, taking turns: \
         every run's {} and each side's mean (the bar).</p><figure>{}</figure>\
         <p>The winner's difference from each baseline and its 95% bootstrap interval \
         (<code>compare</code>'s rule): it beats a baseline only when the whole interval is \
         on the better side of zero.</p><figure>{}</figure></section>\n",
        esc(&v.judged),
        sides_chart(v),
        against_chart(v)
    );
    if v.ablation.is_empty() {
        w!(
            out,
            "<section><h2>What mattered</h2><p>Not measured: {} has no gain over default beyond \
             the noise to credit to a knob.</p>{}</section>\n",
            esc(&v.winner),
            knobs_table(v)
        );
    } else {
        w!(
            out,
            "<section><h2>What mattered</h2><p>Each of the winner's knobs put back to its shipped \
             value in turn, one run each: the bar is that run's {} against the winner's mean. A \
             knob mattered when its run fell outside the 95% prediction interval of the winner's \
             runs in the final comparison, on the worse side (the dashed line): where one more \
             run of the winner itself falls only 2.5% of the time.</p><figure>{}</figure>{}</section>\n",
            esc(&v.judged),
            ablation_chart(v),
            knobs_table(v)
        );
    }
    w!(
        out,
        "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(round: u32, value: Result<f64, String>) -> TrialView {
        TrialView {
            round,
            candidate: "c".into(),
            knobs: String::new(),
            seconds: 1,
            value,
        }
    }

    #[test]
    fn the_best_so_far_follows_the_goal() {
        let t = vec![
            trial(1, Err("refused".into())),
            trial(1, Ok(5.0)),
            trial(1, Ok(3.0)),
            trial(2, Ok(7.0)),
        ];
        assert_eq!(
            best_so_far(&t, true),
            vec![None, Some(5.0), Some(5.0), Some(7.0)]
        );
        assert_eq!(
            best_so_far(&t, false),
            vec![None, Some(5.0), Some(3.0), Some(3.0)]
        );
    }

    fn view(higher_is_better: bool) -> TuneView {
        TuneView {
            title: "t".into(),
            conclusions: vec!["winner: w".into()],
            ranked: "tps".into(),
            judged: "tps".into(),
            higher_is_better,
            trials: vec![trial(1, Ok(100.0)), trial(1, Err("refused".into()))],
            winner: "w".into(),
            knobs: vec![("a".into(), "1".into()), ("b".into(), "2".into())],
            sides: vec![
                ("default".into(), vec![80.0, 82.0, 81.0]),
                ("w".into(), vec![100.0, 98.0, 102.0]),
            ],
            against: vec![AgainstView {
                baseline: "default".into(),
                difference_pct: 23.0,
                ci_pct: Some([20.0, 26.0]),
                verdict: "faster".into(),
            }],
            ablation: vec![
                AblationView {
                    knob: "a".into(),
                    value: "1".into(),
                    without: Ok(90.0),
                    mattered: Some(true),
                },
                AblationView {
                    knob: "b".into(),
                    value: "2".into(),
                    without: Ok(99.0),
                    mattered: Some(false),
                },
            ],
            bound: Some(96.0),
        }
    }

    /// The series of `name` in the page: the text of its group.
    fn series<'a>(page: &'a str, name: &str) -> &'a str {
        let start = page
            .find(&format!("data-series=\"{name}\""))
            .unwrap_or_else(|| panic!("no series {name}"));
        let rest = &page[start..];
        &rest[..rest.find("</g></g>").unwrap_or(rest.len())]
    }

    #[test]
    fn what_mattered_is_drawn_by_its_rule() {
        let page = tune_html(&view(true));
        if let Ok(dir) = std::env::var("DBDUEL_TUNE_HTML") {
            std::fs::write(dir, &page).unwrap();
        }
        assert!(series(&page, "mattered").contains("without a=1: 90 tps (-10.0%"));
        assert!(!series(&page, "mattered").contains("without b=2"));
        assert!(series(&page, "within the winner's spread").contains("without b=2: 99 tps"));
        // The prediction interval's worse end (96, -4% of the mean) is the dashed line.
        assert!(page.contains("class=\"worst\""));
        assert!(series(&page, "faster").contains("stroke=\"#009E73\""));
        assert!(page.contains("round 1, c: not measured: refused"));
        // No ablation: said, and the knobs still listed.
        let mut none = view(true);
        none.ablation.clear();
        let page = tune_html(&none);
        assert!(page.contains("Not measured: w has no gain over default"));
        assert!(!page.contains("class=\"worst\"") && page.contains("<td>a</td><td>1</td>"));
    }

    #[test]
    fn percent_axes_are_symmetric() {
        assert_eq!(
            symmetric_ticks(7.0),
            vec![-8.0, -6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0]
        );
        let small = symmetric_ticks(0.0);
        assert_eq!(small.first(), Some(&-1.0));
        assert_eq!(small.last(), Some(&1.0));
        assert_eq!(small.iter().filter(|v| **v == 0.0).count(), 1);
    }
}
