//! The SVG chart kit of the HTML report: escaping, series markers and lines, plot frames (linear or
//! log scales, grid, ticks, axis labels), round tick values and log ticks. It knows nothing of
//! results.

use std::fmt::Write;

/// `write!` into a String, which cannot fail.
macro_rules! w {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
    }};
}
pub(crate) use w;

/// Text made safe for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Series marks: markers and lines in a colour, a dash and a shape.

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
}

pub(super) const SHAPES: &[Shape] = &[
    Shape::Circle,
    Shape::Square,
    Shape::Triangle,
    Shape::Diamond,
];

#[derive(Clone, Copy)]
pub(super) struct Style {
    pub(super) color: &'static str,
    pub(super) dash: &'static str,
    pub(super) shape: Shape,
}

pub(super) fn marker(style: &Style, x: f64, y: f64, hollow: bool) -> String {
    let fill = if hollow { "#fff" } else { style.color };
    let paint = format!(
        "fill=\"{fill}\" stroke=\"{}\" stroke-width=\"1.8\"",
        style.color
    );
    let r = 4.6;
    match style.shape {
        Shape::Circle => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" {paint}/>"),
        Shape::Square => format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" {paint}/>",
            x - r * 0.85,
            y - r * 0.85,
            r * 1.7,
            r * 1.7
        ),
        Shape::Triangle => polygon(
            &[(x, y - r * 1.1), (x + r, y + r * 0.8), (x - r, y + r * 0.8)],
            &paint,
        ),
        Shape::Diamond => polygon(
            &[(x, y - r * 1.2), (x + r, y), (x, y + r * 1.2), (x - r, y)],
            &paint,
        ),
    }
}

fn polygon(points: &[(f64, f64)], paint: &str) -> String {
    format!("<polygon points=\"{}\" {paint}/>", coords(points))
}

fn coords(points: &[(f64, f64)]) -> String {
    let pairs: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    pairs.join(" ")
}

pub(super) fn line_svg(points: &[(f64, f64)], style: &Style) -> String {
    let dash = if style.dash.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{}\"", style.dash)
    };
    format!(
        "<polyline class=\"curve\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.2\" \
         stroke-linejoin=\"round\"{dash}/>",
        coords(points),
        style.color
    )
}

// ---------------------------------------------------------------------------------------------
// Plot frames: scales, grid, ticks and axis labels.

#[derive(Clone, Copy)]
pub(super) struct Axis {
    pub(super) min: f64,
    pub(super) max: f64,
    /// A logarithmic scale (its base does not change where a value falls).
    pub(super) log: bool,
}

impl Axis {
    fn frac(&self, v: f64) -> f64 {
        let (v, lo, hi) = if self.log {
            (
                v.max(1e-9).log10(),
                self.min.max(1e-9).log10(),
                self.max.max(1e-9).log10(),
            )
        } else {
            (v, self.min, self.max)
        };
        if hi - lo <= f64::EPSILON {
            0.5
        } else {
            (v - lo) / (hi - lo)
        }
    }
}

pub(super) struct Frame {
    pub(super) w: f64,
    pub(super) h: f64,
    pub(super) left: f64,
    pub(super) right: f64,
    pub(super) top: f64,
    pub(super) bottom: f64,
    /// Room between the plot's edges and the first and last x values.
    pub(super) pad: f64,
    pub(super) x: Axis,
    pub(super) y: Axis,
}

impl Frame {
    pub(super) fn px(&self, v: f64) -> f64 {
        let width = self.w - self.left - self.right - 2.0 * self.pad;
        self.left + self.pad + self.x.frac(v) * width
    }

    pub(super) fn py(&self, v: f64) -> f64 {
        let height = self.h - self.top - self.bottom;
        self.h - self.bottom - self.y.frac(v).clamp(0.0, 1.05) * height
    }

    /// The opening `<svg>` tag, the grid, the ticks and the axis labels.
    pub(super) fn open(
        &self,
        xticks: &[(f64, String)],
        yticks: &[(f64, String)],
        xlabel: &str,
        ylabel: &str,
    ) -> String {
        let (x0, x1) = (self.left, self.w - self.right);
        let (y0, y1) = (self.h - self.bottom, self.top);
        let mut out = format!(
            "<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">",
            self.w,
            self.h,
            esc(ylabel)
        );
        out += &self.grid(xticks, yticks);
        w!(
            out,
            "<line class=\"axis\" x1=\"{x0}\" x2=\"{x1}\" y1=\"{y0}\" y2=\"{y0}\"/>"
        );
        w!(
            out,
            "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (x0 + x1) / 2.0,
            self.h - 6.0,
            esc(xlabel)
        );
        w!(
            out,
            "<text class=\"label\" transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            (y0 + y1) / 2.0,
            esc(ylabel)
        );
        out
    }
}

impl Frame {
    /// Grid lines with their tick labels.
    fn grid(&self, xticks: &[(f64, String)], yticks: &[(f64, String)]) -> String {
        let (x0, x1) = (self.left, self.w - self.right);
        let (y0, y1) = (self.h - self.bottom, self.top);
        let mut out = String::from("<g class=\"grid\">");
        for (v, label) in yticks {
            let y = self.py(*v);
            w!(
                out,
                "<line x1=\"{x0}\" x2=\"{x1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
                 <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0 - 6.0,
                y + 4.0,
                esc(label)
            );
        }
        for (v, label) in xticks {
            let x = self.px(*v);
            w!(
                out,
                "<line class=\"xgrid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\"/>\
                 <text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y0 + 16.0,
                esc(label)
            );
        }
        out + "</g>"
    }
}

/// Ticks from 0 to a round number at or above `max`, about five of them, steps of 1, 2, 2.5 or 5.
pub(super) fn nice_ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let n = (max / step - 1e-9).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// Ticks of a logarithmic axis over [lo, hi] (both above 0): 1, 2 and 5 times the powers of
/// ten, from the one at or below `lo` to the one at or above `hi`; only the powers of ten when
/// the range spans more than three of them.
pub(super) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let lo = if lo.is_finite() && lo > 0.0 { lo } else { 1.0 };
    let hi = if hi.is_finite() && hi > lo {
        hi
    } else {
        lo * 10.0
    };
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let steps: &[f64] = if last - first > 3 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let all: Vec<f64> = (first..=last)
        .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
        .collect();
    let start = all
        .iter()
        .rposition(|v| *v <= lo * (1.0 + 1e-9))
        .unwrap_or(0);
    let end = all
        .iter()
        .position(|v| *v >= hi * (1.0 - 1e-9))
        .unwrap_or(all.len() - 1);
    all[start..=end].to_vec()
}

/// An axis number: 950, 1.5k, 12k, 2M; small numbers with what decimals they need.
pub(super) fn compact(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if v.abs() >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if v.abs() >= 1e3 {
        trim(format!("{:.2}", v / 1e3)) + "k"
    } else {
        trim(format!("{v:.3}"))
    }
}

pub(super) fn ticks_of(values: &[f64]) -> Vec<(f64, String)> {
    values.iter().map(|v| (*v, compact(*v))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(nice_ticks(10900.0).last(), Some(&12500.0));
        assert_eq!(nice_ticks(4.0), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(nice_ticks(0.0).last(), Some(&1.0));
        assert_eq!(compact(1500.0), "1.5k");
        assert_eq!(compact(12000.0), "12k");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(compact(2_000_000.0), "2M");
    }

    #[test]
    fn log_ticks_cover_the_values() {
        assert_eq!(
            log_ticks(600.0, 15600.0),
            vec![500.0, 1000.0, 2000.0, 5000.0, 10000.0, 20000.0]
        );
        assert_eq!(
            log_ticks(0.3, 4000.0),
            vec![0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]
        );
        assert_eq!(log_ticks(100.0, 100.0), vec![100.0, 200.0, 500.0, 1000.0]);
        // The values lie inside the ticks' range, so the axis holds every point.
        let t = log_ticks(3.7, 77.0);
        assert!(t[0] <= 3.7 && *t.last().unwrap() >= 77.0, "{t:?}");
    }
}
