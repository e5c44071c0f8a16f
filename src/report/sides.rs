//! CH-benCHmark's question in a report: what each side of the mix cost the other. Every `ch` mix
//! point is set beside the same point's sides run alone (the variants `terminals-alone` and
//! `streams-alone`), each side's figure (the terminals' NOPM, the streams' QphH) judged over the
//! repeats by `compare`'s rule; the rule stated once (`SIDES_RULE`) for both reports.

use serde::Serialize;

use super::compare::{self, FigureDef, Verdict};

/// The rule every line of the sides' table follows, as the reports state it.
pub const SIDES_RULE: &str = "Each side of a CH-benCHmark mix against that side run alone at the same point (plan, engine, profile, the mix's clients, cold or warm: variants terminals-alone and streams-alone): the terminals' NOPM, the streams' QphH. Failed runs (failed transactions, lost clients, no transaction, a server restart) are not counted. The change is the mean of the mix's repeats over the mean of the side's alone, less one; its interval and verdict are compare's over repeats (3 or more a side): slower in the mix only when the whole interval is below 0, faster only when it is above; a side that made none (0) in every repeat against one that made some in every repeat is slower or faster with no interval.";

/// One side of a mix against itself alone.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct SideCost {
    /// The plan of the points; empty when the report covers one plan.
    pub plan: String,
    pub engine: String,
    pub profile: String,
    /// The mix's clients (a side alone is filed under them).
    pub clients: u32,
    pub cold: bool,
    /// The side run alone: "terminals" or "streams".
    pub side: String,
    /// Its figure: "nopm" or "qphh".
    pub figure: String,
    /// The means over each point's repeats.
    pub alone: f64,
    pub mix: f64,
    /// The mix against the side alone, in percent, and its interval.
    pub change_pct: f64,
    pub ci_pct: Option<[f64; 2]>,
    pub verdict: String,
    /// Why the noise is unknown, and what to run.
    pub note: Option<String>,
}

/// What a point is to this table: a mix, or a side alone with its figure.
fn role(variant: &str) -> Option<(&'static str, &'static FigureDef)> {
    match variant {
        "terminals-alone" => Some(("terminals", &compare::NOPM)),
        "streams-alone" => Some(("streams", &compare::QPHH)),
        _ => None,
    }
}

/// One stored point as this table needs it: where it was measured, and its repeats' results.
pub struct PointRuns<'a> {
    pub plan: &'a str,
    pub engine: &'a str,
    pub profile: &'a str,
    pub workload: &'a str,
    pub variant: &'a str,
    pub clients: u32,
    pub cold: bool,
    pub results: Vec<&'a serde_json::Value>,
}

/// Every `ch` mix point against each of its sides alone measured at the same point; `several`:
/// the report covers more than one plan, and each line names its own.
pub fn costs(points: &[PointRuns], several: bool) -> Vec<SideCost> {
    let mut out = Vec::new();
    for mix in points
        .iter()
        .filter(|p| p.workload == "ch" && p.variant == "ch")
    {
        for alone in points.iter().filter(|p| {
            p.workload == "ch"
                && p.plan == mix.plan
                && p.engine == mix.engine
                && p.profile == mix.profile
                && p.clients == mix.clients
                && p.cold == mix.cold
        }) {
            let Some((side, figure)) = role(alone.variant) else {
                continue;
            };
            let values = |p: &PointRuns| -> Vec<f64> {
                p.results
                    .iter()
                    .filter(|r| counted(r))
                    .filter_map(|r| r["workload"]["metrics"][figure.name].as_f64())
                    .collect()
            };
            let c = compare::judge_repeats(figure, &values(alone), &values(mix));
            // compare's sides A and B are the side alone and the mix here.
            let note = c.note.map(|n| {
                n.replace("side A", "the side alone")
                    .replace("side B", "the mix")
            });
            out.push(SideCost {
                plan: if several {
                    mix.plan.to_string()
                } else {
                    String::new()
                },
                engine: mix.engine.to_string(),
                profile: mix.profile.to_string(),
                clients: mix.clients,
                cold: mix.cold,
                side: side.to_string(),
                figure: figure.name.to_string(),
                alone: c.a,
                mix: c.b,
                change_pct: c.difference_pct,
                ci_pct: c.ci_pct,
                verdict: verdict(c.verdict).to_string(),
                note,
            });
        }
    }
    out
}

/// Whether a stored run counts: not failed as a sweep judges it (`RunResult::failed`): no failed
/// transaction, no lost client, some transaction, no server restart, its record written.
fn counted(r: &serde_json::Value) -> bool {
    let empty = |v: &serde_json::Value| v.as_array().is_none_or(|a| a.is_empty());
    r["errors"].as_u64().unwrap_or(0) == 0
        && empty(&r["lost_clients"])
        && r["transactions"].as_u64().unwrap_or(0) > 0
        && empty(&r["server_restarts"])
        && r["unrecorded"].is_null()
}

/// The verdict on the mix against the side alone, in this table's words.
fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Slower => "slower in the mix",
        Verdict::Faster => "faster in the mix",
        other => compare::render::verdict(other),
    }
}

impl SideCost {
    /// The side and its figure in words: "terminals' NOPM".
    pub fn what(&self) -> String {
        let figure = if self.figure == "nopm" {
            "NOPM"
        } else {
            "QphH"
        };
        format!("{}' {figure}", self.side)
    }

    /// The change with its interval: "-23.4% [-30.1..-16.0]"; the interval left out when the
    /// noise is unknown.
    pub fn change(&self) -> String {
        match self.ci_pct {
            Some([lo, hi]) => format!("{:+.1}% [{lo:+.1}..{hi:+.1}]", self.change_pct),
            None => format!("{:+.1}%", self.change_pct),
        }
    }

    /// The verdict, with what to run when the noise is unknown.
    pub fn verdict_text(&self) -> String {
        match &self.note {
            Some(note) => format!("{} ({note})", self.verdict),
            None => self.verdict.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn results(figure: &str, values: &[f64]) -> Vec<serde_json::Value> {
        values
            .iter()
            .map(|v| json!({"transactions": 100, "workload": {"metrics": {figure: v}}}))
            .collect()
    }

    fn point<'a>(variant: &'a str, runs: &'a [serde_json::Value]) -> PointRuns<'a> {
        PointRuns {
            plan: "p",
            engine: "postgres",
            profile: "default",
            workload: "ch",
            variant,
            clients: 4,
            cold: false,
            results: runs.iter().collect(),
        }
    }

    #[test]
    fn a_side_is_slower_in_the_mix_only_beyond_the_noise() {
        // The mix's runs carry both figures; each side alone its own.
        let mix: Vec<serde_json::Value> = [(700.0, 40.0), (710.0, 41.0), (690.0, 39.0)]
            .iter()
            .map(|(n, q)| json!({"transactions": 100, "workload": {"metrics": {"nopm": n, "qphh": q}}}))
            .collect();
        let terminals = results("nopm", &[1000.0, 1010.0, 990.0]);
        let streams = results("qphh", &[30.0, 50.0, 41.0]);
        let points = [
            point("ch", &mix),
            point("terminals-alone", &terminals),
            point("streams-alone", &streams),
        ];
        let c = costs(&points, false);
        assert_eq!(c.len(), 2, "{c:?}");
        let nopm = &c[0];
        assert_eq!(
            (nopm.side.as_str(), nopm.figure.as_str()),
            ("terminals", "nopm")
        );
        assert_eq!(nopm.verdict, "slower in the mix", "{nopm:?}");
        assert!((nopm.change_pct + 30.0).abs() < 1e-9, "{nopm:?}");
        let [lo, hi] = nopm.ci_pct.expect("an interval");
        assert!(lo <= -30.0 && (-30.0..0.0).contains(&hi), "{nopm:?}");
        assert_eq!(nopm.what(), "terminals' NOPM");
        // QphH alone spreads over the mix's: no difference beyond the noise.
        let qphh = &c[1];
        assert_eq!(qphh.figure, "qphh");
        assert_eq!(qphh.verdict, "no difference beyond the noise", "{qphh:?}");
        assert!(qphh.ci_pct.is_some_and(|[lo, hi]| lo < 0.0 && hi > 0.0));
        // A mix faster than its side alone is said so.
        let fast = results("nopm", &[500.0, 505.0, 495.0]);
        let points = [point("ch", &mix), point("terminals-alone", &fast)];
        assert_eq!(costs(&points, false)[0].verdict, "faster in the mix");
    }

    #[test]
    fn too_few_repeats_or_another_point_give_no_verdict() {
        let mix = results("nopm", &[700.0, 710.0]);
        let alone = results("nopm", &[1000.0, 1010.0]);
        let points = [point("ch", &mix), point("terminals-alone", &alone)];
        let c = costs(&points, true);
        assert_eq!(c[0].verdict, "noise unknown");
        assert_eq!(c[0].plan, "p");
        assert!(
            c[0].note
                .as_deref()
                .is_some_and(|n| n.contains("--repeats 3")),
            "{c:?}"
        );
        assert!(c[0].ci_pct.is_none());
        // A side alone of another profile, client count or plan is not this mix's.
        let mut other = point("terminals-alone", &alone);
        other.profile = "tuned";
        assert!(costs(&[point("ch", &mix), other], false).is_empty());
        let mut other = point("terminals-alone", &alone);
        other.clients = 3;
        assert!(costs(&[point("ch", &mix), other], false).is_empty());
        // No mix, no line.
        assert!(costs(&[point("terminals-alone", &alone)], false).is_empty());
        // A run with failed transactions, a lost client or a server restart is not counted:
        // three repeats of which one failed leave two.
        let mut failed = results("nopm", &[1000.0, 1010.0, 990.0]);
        let mix3 = results("nopm", &[700.0, 710.0, 690.0]);
        for (i, (key, value)) in [
            ("errors", json!(3)),
            ("lost_clients", json!([{"client": 1}])),
            ("server_restarts", json!([{"at_s": 1.0}])),
            ("transactions", json!(0)),
            ("unrecorded", json!("the store refused it")),
        ]
        .into_iter()
        .enumerate()
        {
            let mut runs = failed.clone();
            runs[i % 3][key] = value;
            let c = costs(
                &[point("ch", &mix3), point("terminals-alone", &runs)],
                false,
            );
            assert_eq!(c[0].verdict, "noise unknown", "{key}: {c:?}");
            assert!(
                c[0].note
                    .as_deref()
                    .is_some_and(|n| n.contains("2 and 3 runs")),
                "{c:?}"
            );
        }
        failed[0]["errors"] = json!(0);
        let c = costs(
            &[point("ch", &mix3), point("terminals-alone", &failed)],
            false,
        );
        assert_eq!(c[0].verdict, "slower in the mix");
        // A side alone that made nothing in any repeat: the mix is faster, with no interval,
        // and the note names the sides in this table's words.
        let none = results("nopm", &[0.0, 0.0, 0.0]);
        let c = costs(
            &[point("ch", &mix3), point("terminals-alone", &none)],
            false,
        );
        assert_eq!(c[0].verdict, "faster in the mix", "{c:?}");
        assert!(c[0].ci_pct.is_none());
        assert!(
            c[0].note
                .as_deref()
                .is_some_and(|n| n.contains("the side alone")),
            "{c:?}"
        );
    }
}
