//! The page of `capacity --html`, drawn from a `CapacityView` (p50, p99 and each other latency
//! figure an objective judges): the latency-against-rate curve (the "hockey stick") with the
//! objectives' limits and the capacity found, and the rate done against the rate offered.

use std::fmt::Write;

use super::svg::{Axis, Frame, SHAPES, Style, esc, line_svg, marker, nice_ticks, ticks_of, w};
use super::{PALETTE, SCRIPT, STYLE};

/// What the page shows of a capacity search.
pub struct CapacityView {
    pub title: String,
    /// The latency objectives: their text and their limit in milliseconds.
    pub limits: Vec<(String, f64)>,
    /// The latency curves drawn: p50, p99, and each other figure an objective judges (p95,
    /// mean...), so that every limit lies over the curve it limits.
    pub curves: Vec<&'static str>,
    /// Each open-loop step.
    pub steps: Vec<StepView>,
    pub capacity: Option<f64>,
    /// The closed-loop step's rate: the most the clients got through at all.
    pub ceiling: Option<f64>,
    pub verdict: String,
}

/// One open-loop step as the chart draws it.
#[derive(Debug, Clone)]
pub struct StepView {
    pub offered: f64,
    pub done: f64,
    /// Each curve's latency in this step (ms), in the order of `CapacityView::curves`.
    pub latency_ms: Vec<f64>,
    pub passed: bool,
    pub client_busy: f64,
}

/// A frame over rates from 0 to `x_max` and values from 0 to `y_max`.
fn frame(x_max: f64, y_max: f64) -> (Frame, Vec<f64>, Vec<f64>) {
    let xt = nice_ticks(x_max);
    let yt = nice_ticks(y_max);
    let f = Frame {
        w: 760.0,
        h: 360.0,
        left: 62.0,
        right: 14.0,
        top: 14.0,
        bottom: 46.0,
        pad: 10.0,
        x: Axis {
            min: 0.0,
            max: *xt.last().unwrap_or(&1.0),
            log: false,
        },
        y: Axis {
            min: 0.0,
            max: *yt.last().unwrap_or(&1.0),
            log: false,
        },
    };
    (f, xt, yt)
}

fn style(i: usize) -> Style {
    Style {
        color: PALETTE[i % PALETTE.len()],
        dash: "",
        shape: SHAPES[i % SHAPES.len()],
    }
}

fn latency_chart(v: &CapacityView, x_max: f64) -> String {
    // Above three times the tightest limit the curve only says "far too slow": it is cut there
    // so that the knee stays readable.
    let tightest = v.limits.iter().map(|l| l.1).fold(f64::INFINITY, f64::min);
    let highest = v
        .steps
        .iter()
        .flat_map(|s| s.latency_ms.iter().copied())
        .fold(0.0, f64::max);
    let y_max = if tightest.is_finite() {
        highest.min(3.0 * tightest).max(tightest * 1.2)
    } else {
        highest
    };
    let (f, xt, yt) = frame(x_max, y_max);
    let mut out = f.open(
        &ticks_of(&xt),
        &ticks_of(&yt),
        "rate offered (tps)",
        "latency (ms)",
    );
    for (text, limit) in &v.limits {
        let y = f.py(*limit);
        w!(
            out,
            "<line class=\"limit\" x1=\"{}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#D55E00\" stroke-dasharray=\"6 4\"/>\
             <text class=\"tick\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            f.left,
            f.w - f.right,
            f.w - f.right - 4.0,
            y - 5.0,
            esc(text)
        );
    }
    if let Some(c) = v.capacity {
        let x = f.px(c);
        w!(
            out,
            "<line class=\"capacity\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#009E73\" stroke-width=\"2\"/>\
             <text class=\"tick\" x=\"{:.1}\" y=\"{}\">capacity {c:.1} tps</text>",
            f.top,
            f.h - f.bottom,
            x + 4.0,
            f.h - f.bottom - 8.0
        );
    }
    if let Some(c) = v.ceiling {
        out += &ceiling_line(&f, c);
    }
    let mut steps = v.steps.clone();
    steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    for (i, name) in v.curves.iter().enumerate() {
        let st = style(i);
        let value = |s: &StepView| s.latency_ms.get(i).copied().unwrap_or(0.0);
        let xy: Vec<(f64, f64)> = steps
            .iter()
            // A value above the scale is drawn on its top edge, its value written beside it.
            .map(|s| (f.px(s.offered), f.py(value(s).min(f.y.max))))
            .collect();
        w!(out, "<g class=\"series\" data-series=\"{name}\">");
        out += &line_svg(&xy, &st);
        for (s, (x, y)) in steps.iter().zip(&xy) {
            w!(
                out,
                "<g class=\"point\"><title>{name} {:.3} ms at {:.1} tps offered ({:.1} done){}; client busy {:.0}%</title>",
                value(s),
                s.offered,
                s.done,
                if s.passed { ", met" } else { ", failed" },
                s.client_busy * 100.0
            );
            out += &marker(&st, *x, *y, !s.passed);
            if value(s) > f.y.max {
                // Drawn at the top edge: its value is written beside it.
                w!(
                    out,
                    "<text class=\"offscale\" x=\"{:.1}\" y=\"{:.1}\" fill=\"{}\">&#8593; {} ms</text>",
                    x + 7.0,
                    y + 4.0 + 11.0 * i as f64,
                    st.color,
                    crate::report::data::sig3(value(s))
                );
            }
            out += "</g>";
        }
        out += "</g>";
    }
    out + "</svg>"
}

/// The closed loop's rate, as a vertical line: no open-loop rate above it can be kept.
fn ceiling_line(f: &Frame, ceiling: f64) -> String {
    let x = f.px(ceiling);
    format!(
        "<line class=\"ceiling\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/>\
         <text class=\"tick\" x=\"{:.1}\" y=\"{}\" text-anchor=\"end\">closed-loop ceiling {ceiling:.1} tps</text>",
        f.top,
        f.h - f.bottom,
        x - 4.0,
        f.top + 26.0
    )
}

/// The legend of the latency curves (and the capacity's and ceiling's lines).
fn legend(v: &CapacityView) -> String {
    let mut out = String::from("<ul class=\"legend\">");
    for (i, name) in v.curves.iter().enumerate() {
        let st = style(i);
        w!(
            out,
            "<li data-legend=\"{name}\" role=\"button\" tabindex=\"0\" title=\"click to hide or show\"><svg width=\"38\" height=\"16\" aria-hidden=\"true\">{}{}</svg>{name}</li>",
            line_svg(&[(2.0, 8.0), (36.0, 8.0)], &st),
            marker(&st, 19.0, 8.0, false)
        );
    }
    out += "<li><svg width=\"38\" height=\"16\"><path d=\"M2 8H36\" stroke=\"#D55E00\" stroke-dasharray=\"6 4\"/></svg>objective</li>";
    if v.capacity.is_some() {
        out += "<li><svg width=\"38\" height=\"16\"><path d=\"M19 1V15\" stroke=\"#009E73\" stroke-width=\"2\"/></svg>capacity</li>";
    }
    if v.ceiling.is_some() {
        out += "<li><svg width=\"38\" height=\"16\"><path d=\"M19 1V15\" stroke=\"#555\" stroke-dasharray=\"2 3\"/></svg>closed-loop ceiling</li>";
    }
    out + "</ul>"
}

fn throughput_chart(v: &CapacityView, x_max: f64) -> String {
    let (f, xt, yt) = frame(x_max, x_max);
    let mut out = f.open(
        &ticks_of(&xt),
        &ticks_of(&yt),
        "rate offered (tps)",
        "rate done (tps)",
    );
    let diagonal = [(f.px(0.0), f.py(0.0)), (f.px(f.x.max), f.py(f.x.max))];
    out += &line_svg(
        &diagonal,
        &Style {
            color: "#999999",
            dash: "3 3",
            shape: SHAPES[0],
        },
    );
    if let Some(c) = v.ceiling {
        out += &ceiling_line(&f, c);
    }
    let st = style(0);
    out += "<g class=\"series\" data-series=\"steps\">";
    for s in &v.steps {
        w!(
            out,
            "<g class=\"point\"><title>{:.1} tps done of {:.1} offered</title>",
            s.done,
            s.offered
        );
        out += &marker(&st, f.px(s.offered), f.py(s.done), !s.passed);
        out += "</g>";
    }
    out += "</g>";
    out + "</svg>"
}

fn throughput_legend(v: &CapacityView) -> String {
    let st = style(0);
    let mut out = format!(
        "<ul class=\"legend\"><li data-legend=\"steps\" role=\"button\" tabindex=\"0\" title=\"click to hide or show\"><svg width=\"38\" height=\"16\" aria-hidden=\"true\">{}</svg>steps (hollow: failed)</li>\
         <li><svg width=\"38\" height=\"16\"><path d=\"M2 14L36 2\" stroke=\"#999\" stroke-dasharray=\"3 3\"/></svg>rate kept</li>",
        marker(&st, 19.0, 8.0, false)
    );
    if v.ceiling.is_some() {
        out += "<li><svg width=\"38\" height=\"16\"><path d=\"M19 1V15\" stroke=\"#555\" stroke-dasharray=\"2 3\"/></svg>closed-loop ceiling</li>";
    }
    out + "</ul>"
}

/// The curves and their markers in words: "p50 (circles), p99 (squares)".
fn curves_named(curves: &[&str]) -> String {
    // In the order of `SHAPES`.
    const SHAPE_NAMES: [&str; 4] = ["circles", "squares", "triangles", "diamonds"];
    curves
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} ({})", SHAPE_NAMES[i % SHAPE_NAMES.len()]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A page's head, its style, and the opening of its header with the title (the caller
/// closes the header).
pub(super) fn page_head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <header><h1>{}</h1>",
        esc(title),
        esc(title)
    )
}

/// The whole page.
pub fn capacity_html(v: &CapacityView) -> String {
    let x_max = v
        .steps
        .iter()
        .map(|s| s.offered.max(s.done))
        .chain(v.ceiling)
        .fold(1.0, f64::max);
    let mut out = page_head(&v.title);
    w!(out, "<p>{}</p></header>\n", esc(&v.verdict));
    w!(
        out,
        "<section><h2>Latency against rate</h2><p>Each open-loop step's {}: filled where the \
         step met every objective, hollow where it failed; the dashed lines are the latency \
         objectives, each over the curve of the figure it limits, and values far above them are \
         drawn at the top with their value written beside them; the dotted line is the closed loop's \
         rate, the ceiling no offered rate can pass. Latency counts from each transaction's \
         scheduled start.</p><figure>{}{}</figure></section>\n",
        curves_named(&v.curves),
        legend(v),
        latency_chart(v, x_max)
    );
    w!(
        out,
        "<section><h2>Rate done against rate offered</h2><p>On the diagonal the database kept \
         up; below it, transactions waited for a free client or the server.</p><figure>{}{}</figure></section>\n",
        throughput_legend(v),
        throughput_chart(v, x_max)
    );
    w!(
        out,
        "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}
