//! The HTML report: one self-contained file (inline style, inline SVG charts drawn here, a few
//! lines of script for tooltips; nothing fetched from the network) showing a `ReportData`: the
//! report's sections and charts, each series with a colour, dash and marker that no other series
//! shares; at most 8 series a chart, more split by engine (small multiples); every clients chart
//! drawn on a linear and a log scale, the log one shown first when the series' tops differ more
//! than 10x, a box switching them; a click on a legend entry hides its series (`<g
//! class="series">`); timelines counted from the measured start, each second's point at its end;
//! each transaction type's median latency per engine and profile as bars on a log scale (TPC-H's
//! queries side by side); where the time went, statement by statement (`statements.rs`). Only
//! durable points are bold as fastest. The chart kit is `svg.rs`, the
//! style sheet `report.css`, `capacity --html`'s page `capacity.rs`, and `tune --html`'s `tune.rs`.
//!
//! Hand-written SVG, not a charting library: uPlot, Apache ECharts and Vega-Lite were weighed for
//! the log scales, hover and legends. Each would be vendored and inlined (a report opens offline):
//! 50 KB (uPlot) to 1 MB (ECharts) of script in every page, charts that exist only once that script
//! has run (a page saved, printed, mailed or opened with scripts off shows none; a test must drive
//! a browser to see any), and the series built a second time as JSON. Here every chart is in the
//! page as written, its numbers are in the markup that unit tests read, hover is the SVG's own
//! `<title>` turned into a tooltip by 10 lines of script, and the page works without its script;
//! Chromium checks in the suite (tests/it/report.rs) that each chart of every report kind is laid
//! out with a plot and a legend. Zoom is the one thing a library does that these charts do not;
//! small multiples and the log scale answer the need zoom was asked for (one engine far above the
//! others).

mod capacity;
mod statement_latencies;
mod statements;
mod svg;
mod tune;

use std::fmt::Write;

use super::data::{
    FASTEST_RULE, ONE_REPEAT, PointSummary, ReportData, ResourceRow, SettingsTable, Timeline, sig3,
    tps_text,
};
use super::human_bytes;
pub use capacity::{CapacityView, StepView, capacity_html};
pub use svg::esc;
use svg::{
    Axis, Frame, SHAPES, Shape, Style, compact, line_svg, log_ticks, marker, nice_ticks, ticks_of,
    w,
};
pub use tune::{AblationView, AgainstView, TrialView, TuneView, tune_html};

/// Okabe-Ito colours (yellow left out: too pale on white), safe for colour-blind readers.
const PALETTE: &[&str] = &[
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000",
];
const DASHES: &[&str] = &["", "7 4", "2 3", "9 3 2 3"];
const CHECKPOINT: &str = "#D55E00";
const AUTOVACUUM: &str = "#6A3D9A";

/// The whole report.
pub fn html(data: &ReportData) -> String {
    let styles = Styles::new(data);
    let mut out = String::with_capacity(64 * 1024);
    w!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(&title(data))
    );
    out += &header(data);
    if data.points.is_empty() {
        out += "<section><h2>Results</h2><p class=\"empty\">No points were measured: there is \
                nothing to chart or compare yet.</p></section>\n";
    } else {
        out += &throughput_section(data, &styles);
        out += &sides_section(data);
        out += &latency_section(data, &styles);
    }
    out += &timelines_section(data, &styles);
    out += &statements::section(&data.timelines);
    if !data.points.is_empty() {
        out += &resources_section(data);
        out += &comparison_section(data);
        out += &types_section(data);
        out += &statement_latencies::section(data);
        out += &type_bars_section(data);
        out += &profile_comparison_section(data);
        out += &counters_section(data);
    }
    out += &settings_section(data);
    w!(
        out,
        "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}

fn title(data: &ReportData) -> String {
    if data.title.trim().is_empty() {
        "dbduel report".into()
    } else {
        data.title.clone()
    }
}

fn header(data: &ReportData) -> String {
    let mut out = String::from("<header class=\"top\"><div>");
    w!(out, "<h1>{}</h1>", esc(&title(data)));
    let workloads = data.workloads().len();
    w!(
        out,
        "<p class=\"sub\">Generated {} &middot; {} engine{} &middot; {} series &middot; {} \
         workload variant{} &middot; {} point{}</p>",
        esc(&data.generated_at),
        data.engines().len(),
        plural(data.engines().len()),
        data.series().len(),
        workloads,
        plural(workloads),
        data.points.len(),
        plural(data.points.len())
    );
    if let Some(note) = data.plans_note() {
        w!(out, "<p class=\"sub\">{}</p>", esc(&note));
    }
    out += "<nav><a href=\"#throughput\">Throughput</a>";
    if !data.sides.is_empty() {
        out += "<a href=\"#ch-sides\">CH sides</a>";
    }
    out += "<a href=\"#latency\">Latency</a>\
            <a href=\"#timelines\">Timelines</a><a href=\"#resources\">Resources</a>\
            <a href=\"#comparison\">All points</a>";
    if !data.typed_points().is_empty() {
        out += "<a href=\"#types\">Per type</a>";
    }
    if !data.statement_points().is_empty() {
        out += "<a href=\"#statement-latencies\">Statements</a>";
    }
    out += "<a href=\"#settings\">Settings</a></nav></div>";
    out += "<table class=\"facts\"><caption>Host</caption><tbody>";
    if data.host.is_empty() {
        out += "<tr><td class=\"muted\">no host facts recorded</td></tr>";
    }
    for (k, v) in &data.host {
        w!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    out += "</tbody></table></header>\n";
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

// ---------------------------------------------------------------------------------------------
// Series styles: the same colour, dash and marker for a series in every chart.

struct Styles {
    series: Vec<(String, Style, bool)>,
}

impl Styles {
    /// With several engines, the colour says the engine and dash and marker say the profile;
    /// with one engine, each profile gets its own colour. No two series share colour, dash and
    /// marker at once (up to 7 engines of 16 profiles each, or 28 profiles of one engine).
    fn new(data: &ReportData) -> Styles {
        let engines = data.engines();
        let by_engine = engines.len() > 1;
        let mut series = Vec::new();
        for (i, name) in data.series().into_iter().enumerate() {
            let engine = name.split('/').next().unwrap_or_default();
            let e = engines.iter().position(|x| x == engine).unwrap_or(0);
            let rank = series
                .iter()
                .filter(|(n, _, _): &&(String, Style, bool)| n.split('/').next() == Some(engine))
                .count();
            let style = if by_engine {
                // (rank % 4, rank / 4) is unique per rank; the marker is sheared so that the
                // first four profiles also differ by marker.
                Style {
                    color: PALETTE[e % PALETTE.len()],
                    dash: DASHES[rank % DASHES.len()],
                    shape: SHAPES[(rank + rank / DASHES.len()) % SHAPES.len()],
                }
            } else {
                Style {
                    color: PALETTE[i % PALETTE.len()],
                    dash: DASHES[(i / PALETTE.len()) % DASHES.len()],
                    shape: SHAPES[i % SHAPES.len()],
                }
            };
            let unsafe_profile = data.is_unsafe(&name);
            series.push((name, style, unsafe_profile));
        }
        Styles { series }
    }

    fn get(&self, series: &str) -> Style {
        self.series
            .iter()
            .find(|(n, _, _)| n == series)
            .map(|(_, s, _)| *s)
            .unwrap_or(Style {
                color: "#555",
                dash: "",
                shape: Shape::Circle,
            })
    }

    fn is_unsafe(&self, series: &str) -> bool {
        self.series.iter().any(|(n, _, u)| n == series && *u)
    }

    /// The legend of the given series, in the styles' order.
    fn legend(&self, names: &[String]) -> String {
        let mut out = String::from("<ul class=\"legend\">");
        for (name, style, unsafe_profile) in &self.series {
            if !names.contains(name) {
                continue;
            }
            w!(
                out,
                "<li data-legend=\"{}\" role=\"button\" tabindex=\"0\" title=\"click to hide or show\"><svg width=\"38\" height=\"16\" aria-hidden=\"true\">{}{}</svg>{}{}</li>",
                esc(name),
                line_svg(&[(2.0, 8.0), (36.0, 8.0)], style),
                marker(style, 19.0, 8.0, false),
                esc(name),
                if *unsafe_profile {
                    " <span class=\"unsafe-label\">(unsafe)</span>"
                } else {
                    ""
                }
            );
        }
        out += "</ul>";
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Throughput and latency against clients.

/// The most series one chart draws; more are split into charts per engine (small multiples).
const MAX_SERIES: usize = 8;

/// The spread of the series' values (largest over smallest) past which a chart opens on a
/// logarithmic scale: below a tenth of the top, a curve lies in the bottom tenth of the plot.
const LOG_SPREAD: f64 = 10.0;

fn throughput_section(data: &ReportData, styles: &Styles) -> String {
    let mut out = format!(
        "<section id=\"throughput\"><h2>Throughput vs clients</h2><p class=\"note\">Median of \
         the workload's own figure over the repeats (transactions per second, and its headline \
         figure where it has one: TPC-C NOPM, TPC-H QphH@Size, Power@Size, Throughput@Size); the \
         bar through each marker spans the slowest and the fastest repeat. Higher is better; \
         clients on a log<sub>2</sub> scale. A chart whose largest series is more than \
         {LOG_SPREAD:.0} times its smallest opens on a logarithmic scale (the box above it \
         switches); at most {MAX_SERIES} series share a chart, more are drawn one chart per \
         engine. Click a legend entry to hide its series; hover a point for its figures.</p>\n",
    );
    for (workload, variant) in data.workloads() {
        let points = data.points_of(&workload, &variant);
        let repeats = points.iter().map(|p| p.repeats).max().unwrap_or(0);
        let mut metrics = vec![Metric::tps()];
        metrics.extend(
            crate::workload::headline(&workload)
                .iter()
                .filter(|h| points.iter().any(|p| p.metrics.contains_key(**h)))
                .map(|h| Metric::figure(h)),
        );
        for metric in &metrics {
            for (part, names) in chart_groups(&series_of(&points)) {
                let mine = only(&points, &names);
                w!(
                    out,
                    "<figure class=\"wide\"><figcaption>{} &middot; {}{}{}</figcaption><div class=\"plot\">",
                    esc(&workload),
                    esc(&variant),
                    part,
                    metric.caption()
                );
                out += &scaled_chart(&mine, styles, metric, (860.0, 380.0));
                w!(
                    out,
                    "<div class=\"side\">{}{}</div></div>{}</figure>\n",
                    styles.legend(&names),
                    key_html(repeats),
                    peaks_html(&mine, metric)
                );
            }
        }
    }
    out += "</section>\n";
    out
}

fn latency_section(data: &ReportData, styles: &Styles) -> String {
    let mut out = String::from(
        "<section id=\"latency\"><h2>Latency vs clients</h2><p class=\"note\">Transaction \
         latency percentiles in milliseconds, one chart per percentile, same series as above. \
         Lower is better.</p>\n",
    );
    for (workload, variant) in data.workloads() {
        let points = data.points_of(&workload, &variant);
        for (part, names) in chart_groups(&series_of(&points)) {
            let mine = only(&points, &names);
            w!(
                out,
                "<figure><figcaption>{} &middot; {}{}</figcaption>{}<div class=\"trio\">",
                esc(&workload),
                esc(&variant),
                part,
                styles.legend(&names)
            );
            for metric in [
                Metric::latency("p50"),
                Metric::latency("p95"),
                Metric::latency("p99"),
            ] {
                w!(out, "<div><h4>{}</h4>", metric.name);
                out += &scaled_chart(&mine, styles, &metric, (410.0, 280.0));
                out += "</div>";
            }
            out += "</div></figure>\n";
        }
    }
    out += "</section>\n";
    out
}

/// Series present among these points, in order of first appearance.
/// Under a tps chart of three client counts or more: where each series peaks, and what it
/// makes at its most clients.
fn peaks_html(points: &[&PointSummary], metric: &Metric) -> String {
    if metric.figure != "tps" {
        return String::new();
    }
    let peaks = crate::report::data::peaks(points);
    if peaks.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ul class=\"peaks\">");
    for p in peaks {
        w!(out, "<li>{}</li>", esc(&p.said()));
    }
    out += "</ul>";
    out
}

fn series_of(points: &[&PointSummary]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in points {
        if !names.contains(&p.series()) {
            names.push(p.series());
        }
    }
    names
}

/// The charts the series are drawn in, each with its caption's addition: one chart when they
/// are `MAX_SERIES` or fewer, else one per engine (its series in runs of at most `MAX_SERIES`).
fn chart_groups(names: &[String]) -> Vec<(String, Vec<String>)> {
    if names.len() <= MAX_SERIES {
        return vec![(String::new(), names.to_vec())];
    }
    let mut engines: Vec<&str> = Vec::new();
    for n in names {
        let e = n.split('/').next().unwrap_or_default();
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    let mut out = Vec::new();
    for e in engines {
        let of: Vec<String> = names
            .iter()
            .filter(|n| n.split('/').next() == Some(e))
            .cloned()
            .collect();
        let parts = of.len().div_ceil(MAX_SERIES);
        for (i, chunk) in of.chunks(MAX_SERIES).enumerate() {
            let part = if parts > 1 {
                format!(" &middot; {} ({} of {parts})", esc(e), i + 1)
            } else {
                format!(" &middot; {}", esc(e))
            };
            out.push((part, chunk.to_vec()));
        }
    }
    out
}

fn only<'a>(points: &[&'a PointSummary], names: &[String]) -> Vec<&'a PointSummary> {
    points
        .iter()
        .copied()
        .filter(|p| names.contains(&p.series()))
        .collect()
}

fn key_html(repeats: u32) -> String {
    format!(
        "<ul class=\"key\"><li><svg width=\"16\" height=\"16\"><circle cx=\"8\" cy=\"8\" r=\"4.6\" \
         fill=\"#555\"/></svg>stable</li><li><svg width=\"16\" height=\"16\"><circle cx=\"8\" \
         cy=\"8\" r=\"4.6\" fill=\"#fff\" stroke=\"#555\" stroke-width=\"1.8\"/></svg>unstable \
         (hover for why)</li><li><svg width=\"16\" height=\"16\"><circle cx=\"8\" cy=\"8\" r=\"3.5\" \
         fill=\"#555\"/><circle cx=\"8\" cy=\"8\" r=\"7\" fill=\"none\" stroke=\"#222\" \
         stroke-dasharray=\"2 2\"/></svg>client-bound: measured dbduel, not the database</li>\
         <li><svg width=\"16\" height=\"16\"><path d=\"M5 3h6M8 3v10M5 13h6\" stroke=\"#555\" \
         fill=\"none\"/></svg>min&ndash;max of {repeats} repeat{}</li></ul>",
        plural(repeats as usize)
    )
}

/// What a clients chart plots: tps, a latency percentile, or a figure of the workload's own.
struct Metric {
    /// "tps", "p50", "p95", "p99", or a key of the points' `metrics` ("nopm", "qphh_at_size").
    figure: &'static str,
    name: String,
    axis: String,
}

impl Metric {
    fn tps() -> Metric {
        Metric {
            figure: "tps",
            name: "throughput".into(),
            axis: "transactions per second".into(),
        }
    }

    fn latency(figure: &'static str) -> Metric {
        Metric {
            figure,
            name: figure.into(),
            axis: format!("{figure} latency (ms)"),
        }
    }

    fn figure(figure: &'static str) -> Metric {
        let (name, axis) = match figure {
            "nopm" => ("NOPM", "New-Orders per minute"),
            "qphh_at_size" => ("QphH@Size", "QphH@Size"),
            "power_at_size" => ("Power@Size", "Power@Size"),
            "throughput_at_size" => ("Throughput@Size", "Throughput@Size"),
            other => (other, other),
        };
        Metric {
            figure,
            name: name.into(),
            axis: axis.into(),
        }
    }

    /// The figure in the chart's caption (tps, the first chart, says nothing more).
    fn caption(&self) -> String {
        match self.figure {
            "tps" => String::new(),
            f => format!(
                " &middot; {} ({})",
                esc(&self.name),
                esc(crate::workload::figure_meaning(f))
            ),
        }
    }

    fn value(&self, p: &PointSummary) -> f64 {
        match self.figure {
            "tps" => p.tps_median,
            "p50" => p.p50_ms,
            "p95" => p.p95_ms,
            "p99" => p.p99_ms,
            f => p.metrics.get(f).map_or(0.0, |m| m.median),
        }
    }

    /// The spread drawn as a whisker (the repeats' min and max), if the figure has one.
    fn range(&self, p: &PointSummary) -> Option<(f64, f64)> {
        match self.figure {
            "tps" => Some((p.tps_min, p.tps_max)),
            "p50" | "p95" | "p99" => None,
            f => Some(p.metrics.get(f).map_or((0.0, 0.0), |m| (m.min, m.max))),
        }
    }

    fn top(&self, p: &PointSummary) -> f64 {
        self.range(p)
            .map_or(self.value(p), |r| r.1.max(self.value(p)))
    }

    fn bottom(&self, p: &PointSummary) -> f64 {
        self.range(p)
            .map_or(self.value(p), |r| r.0.min(self.value(p)))
    }
}

/// A chart on a linear and on a logarithmic y scale, the one shown chosen by the data's spread
/// (`LOG_SPREAD`) and switched by the box above it.
fn scaled_chart(
    points: &[&PointSummary],
    styles: &Styles,
    metric: &Metric,
    size: (f64, f64),
) -> String {
    let log = opens_on_log(points, metric);
    format!(
        "<div class=\"scaled\" data-scale=\"{}\"><label class=\"scale-toggle\"><input type=\"checkbox\"{}> log scale</label>\
         <div class=\"linear\">{}</div><div class=\"log\">{}</div></div>",
        if log { "log" } else { "linear" },
        if log { " checked" } else { "" },
        curve_chart(points, styles, metric, size, false),
        curve_chart(points, styles, metric, size, true)
    )
}

/// Whether the largest series' top value is more than `LOG_SPREAD` times the smallest's.
fn opens_on_log(points: &[&PointSummary], metric: &Metric) -> bool {
    let tops: Vec<f64> = series_of(points)
        .iter()
        .map(|s| {
            points
                .iter()
                .filter(|p| p.series() == *s)
                .map(|p| metric.value(p))
                .fold(0.0, f64::max)
        })
        .filter(|v| *v > 0.0)
        .collect();
    let (lo, hi) = tops.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(*v), hi.max(*v))
    });
    tops.len() > 1 && hi > LOG_SPREAD * lo
}

/// One chart of a metric against clients: one `<g class="series">` per engine/profile.
fn curve_chart(
    points: &[&PointSummary],
    styles: &Styles,
    metric: &Metric,
    size: (f64, f64),
    log: bool,
) -> String {
    let mut clients: Vec<u32> = points.iter().map(|p| p.clients.max(1)).collect();
    clients.sort_unstable();
    clients.dedup();
    let top = points.iter().map(|p| metric.top(p)).fold(0.0, f64::max);
    let yticks = if log {
        let low = points
            .iter()
            .map(|p| metric.bottom(p))
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        log_ticks(low, top)
    } else {
        nice_ticks(top)
    };
    let frame = Frame {
        w: size.0,
        h: size.1,
        left: 62.0,
        right: 14.0,
        top: 14.0,
        bottom: 46.0,
        pad: 26.0,
        x: Axis {
            min: clients[0] as f64,
            max: clients[clients.len() - 1] as f64,
            log: true,
        },
        y: Axis {
            min: if log { yticks[0] } else { 0.0 },
            max: *yticks.last().unwrap_or(&1.0),
            log,
        },
    };
    let xticks: Vec<(f64, String)> = clients.iter().map(|c| (*c as f64, c.to_string())).collect();
    let ylabels: Vec<(f64, String)> = yticks.iter().map(|v| (*v, sig_tick(*v))).collect();
    let axis = if log {
        format!("{} (log scale)", metric.axis)
    } else {
        metric.axis.clone()
    };
    let mut out = frame.open(&xticks, &ylabels, "clients", &axis);
    let names = series_of(points);
    for (i, name) in names.iter().enumerate() {
        let dodge = (i as f64 - (names.len() as f64 - 1.0) / 2.0) * 5.0;
        let mine: Vec<&PointSummary> = points
            .iter()
            .copied()
            .filter(|p| p.series() == *name)
            .collect();
        out += &series_curve(&frame, name, &mine, styles.get(name), metric, dodge);
    }
    out += "</svg>";
    out
}

fn sig_tick(v: f64) -> String {
    if v == 0.0 { "0".into() } else { compact(v) }
}

fn series_curve(
    frame: &Frame,
    name: &str,
    points: &[&PointSummary],
    style: Style,
    metric: &Metric,
    dodge: f64,
) -> String {
    let mut points = points.to_vec();
    points.sort_by_key(|p| p.clients);
    let xy: Vec<(f64, f64)> = points
        .iter()
        .map(|p| {
            (
                frame.px(p.clients.max(1) as f64) + dodge,
                frame.py(metric.value(p)),
            )
        })
        .collect();
    let mut out = format!("<g class=\"series\" data-series=\"{}\">", esc(name));
    out += &line_svg(&xy, &style);
    for (p, (x, y)) in points.iter().zip(&xy) {
        out += &point_svg(frame, p, (*x, *y), &style, metric);
    }
    out += "</g>";
    out
}

fn point_svg(
    frame: &Frame,
    p: &PointSummary,
    (x, y): (f64, f64),
    style: &Style,
    metric: &Metric,
) -> String {
    let unstable = !p.unstable.is_empty();
    let class = match (unstable, p.client_bound) {
        (true, true) => "point unstable client-bound",
        (true, false) => "point unstable",
        (false, true) => "point client-bound",
        (false, false) => "point",
    };
    let mut out = format!("<g class=\"{class}\"><title>{}</title>", esc(&point_tip(p)));
    if let Some((lo, hi)) = metric.range(p) {
        let (ylo, yhi) = (frame.py(lo), frame.py(hi));
        w!(
            out,
            "<path class=\"whisker\" d=\"M{:.1} {ylo:.1}V{yhi:.1}M{:.1} {ylo:.1}h8M{:.1} {yhi:.1}h8\" stroke=\"{}\" stroke-width=\"1.4\" fill=\"none\"/>",
            x,
            x - 4.0,
            x - 4.0,
            style.color
        );
    }
    if p.client_bound {
        w!(
            out,
            "<circle class=\"ring\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"8.5\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.2\" stroke-dasharray=\"2 2\"/>"
        );
    }
    out += &marker(style, x, y, unstable);
    out += "</g>";
    out
}

/// Everything about a point, for its tooltip.
fn point_tip(p: &PointSummary) -> String {
    let spread = p.spread().map_or(
        "one repeat: no spread measured".to_string(),
        |(range, cv)| format!("{range}, CV {cv} over {} repeats", p.repeats),
    );
    let mut tip = format!(
        "{}{} · {} clients\n{} tps ({spread})\np50 {} ms · p95 {} ms · p99 {} ms",
        p.series(),
        if p.unsafe_profile { " (unsafe)" } else { "" },
        p.clients,
        tps_text(p.tps_median),
        sig3(p.p50_ms),
        sig3(p.p95_ms),
        sig3(p.p99_ms)
    );
    for (name, f) in &p.metrics {
        w!(
            tip,
            "\n{name} {} (min {}, max {})",
            tps_text(f.median),
            tps_text(f.min),
            tps_text(f.max)
        );
    }
    if p.errors > 0 {
        w!(tip, "\n{} errors", p.errors);
    }
    if !p.limited_by_says.is_empty() {
        w!(tip, "\nlimited by: {}", p.limited_by_says);
    }
    if p.client_bound {
        tip += "\nclient-bound: this number measures dbduel, not the database";
    }
    for reason in &p.unstable {
        w!(tip, "\nunstable: {reason}");
    }
    if p.cold {
        tip += "\ncold: caches dropped before each run";
    }
    for warning in &p.warnings {
        w!(tip, "\nwarning: {warning}");
    }
    tip
}

// ---------------------------------------------------------------------------------------------
// Timelines.

fn timelines_section(data: &ReportData, styles: &Styles) -> String {
    let mut out = String::from("<section id=\"timelines\"><h2>Timelines</h2>");
    if data.timelines.is_empty() {
        out += "<p class=\"empty\">No per-second timelines were recorded.</p></section>\n";
        return out;
    }
    out += "<p class=\"note\">Transactions per second, second by second, each chart on its \
            own y scale (compare levels in the throughput chart above); the last, partial second of \
            a run is left out. Under each, where the server's sessions were sampled, the active \
            sessions by wait class, stacked: what the server spent each second on; for SQLite, \
            which runs in the clients, where the clients' time went by its connections' own \
            counts. Then the server's headline counters second by second, a strip each, those \
            that varied most first.</p>";
    w!(
        out,
        "<ul class=\"key\"><li><span class=\"swatch warm\"></span>warm-up (not measured)</li>\
         <li><svg width=\"16\" height=\"16\"><path d=\"M8 1V15\" stroke=\"{CHECKPOINT}\" stroke-width=\"2\"/></svg>checkpoint</li>\
         <li><svg width=\"16\" height=\"16\"><path d=\"M8 1V15\" stroke=\"{AUTOVACUUM}\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/></svg>autovacuum / autoanalyze</li>{}</ul>",
        if data.timelines.iter().any(|t| !t.phases.is_empty()) {
            "<li><svg width=\"16\" height=\"16\"><path d=\"M8 1V15\" stroke=\"#555\" stroke-width=\"1\" stroke-dasharray=\"1 3\"/></svg>a phase's start (its figures under the chart)</li>"
        } else {
            ""
        }
    );
    let series = data.series();
    let mut groups: Vec<(String, u32)> = Vec::new();
    for t in &data.timelines {
        if !groups.contains(&(t.workload.clone(), t.clients)) {
            groups.push((t.workload.clone(), t.clients));
        }
    }
    groups.sort_by_key(|g| g.1);
    for (workload, clients) in groups {
        let mut row: Vec<&Timeline> = data
            .timelines
            .iter()
            .filter(|t| t.workload == workload && t.clients == clients)
            .collect();
        row.sort_by_key(|t| (series.iter().position(|s| *s == t.series()), t.repeat));
        w!(
            out,
            "<h3>{} &middot; {} client{}</h3><div class=\"grid-timelines\">",
            esc(&workload),
            clients,
            plural(clients as usize)
        );
        for t in row {
            // Each chart has its own scale: next to an engine at 17k tps, one at 1k on a shared
            // axis is a flat line whose swings cannot be seen.
            let top = t.seconds.iter().map(|s| s.tps).fold(0.0, f64::max);
            out += &timeline_figure(t, styles, top);
        }
        out += "</div>";
    }
    out += "</section>\n";
    out
}

fn timeline_figure(t: &Timeline, styles: &Styles, top: f64) -> String {
    let style = styles.get(&t.series());
    let unsafe_profile = styles.is_unsafe(&t.series());
    let checkpoints: u32 = t.seconds.iter().map(|s| s.checkpoints).sum();
    let vacuums: u32 = t.seconds.iter().map(|s| s.autovacuums).sum();
    // An embedded engine's checkpoints are counted by its connections, not placed in time.
    let events = match &t.embedded {
        Some(e) => format!(
            "{} WAL checkpoint{} (counted by the connections, not placed in time)",
            e.figures.checkpoints,
            plural(e.figures.checkpoints as usize)
        ),
        None => format!(
            "{checkpoints} checkpoint{} &middot; {vacuums} autovacuum{}",
            plural(checkpoints as usize),
            plural(vacuums as usize)
        ),
    };
    let mut out = format!(
        "<figure class=\"timeline\" data-series=\"{}\"><figcaption><span class=\"dot\" style=\"background:{}\"></span>{} \
         <span class=\"muted\">repeat {}</span></figcaption><div class=\"events\">{events}</div>",
        esc(&t.series()),
        style.color,
        series_label(&t.series(), unsafe_profile),
        t.repeat,
    );
    if t.seconds.is_empty() {
        out += "<p class=\"empty\">No seconds recorded.</p></figure>";
        return out;
    }
    out += &timeline_chart(t, &style, top);
    if t.seconds.iter().any(|s| !s.sessions.is_empty()) {
        out += &sessions_chart(t);
    }
    if let Some(e) = &t.embedded {
        out += &clients_time(e);
    }
    out += &counters_strips(t);
    out += &phases_table(&t.phases);
    out += "</figure>";
    out
}

/// The wait classes in the order they are stacked, with their colours: the server's work at
/// the bottom, waits above it, the client's turn on top.
const WAIT_COLOURS: [(&str, &str); 8] = [
    ("cpu", "#2e7d32"),
    ("running", "#66bb6a"),
    ("data_read", "#1565c0"),
    ("commit", "#ef6c00"),
    ("lock", "#c62828"),
    ("latch", "#6a1b9a"),
    ("other", "#795548"),
    ("client", "#9e9e9e"),
];

/// The run's sessions second by second, stacked by wait class (average active sessions, as
/// Performance Insights draws database load), on the timeline's x axis, with its legend.
fn sessions_chart(t: &Timeline) -> String {
    let top = t
        .seconds
        .iter()
        .map(|s| s.sessions.values().sum::<f64>())
        .fold(0.0, f64::max);
    let (frame, t0, xticks, yticks) = timeline_frame(t, top.max(1.0), 150.0);
    let mut out = frame.open(
        &ticks_of(&xticks),
        &ticks_of(&yticks),
        "seconds since the measured start",
        "active sessions",
    );
    let mut base: Vec<f64> = vec![0.0; t.seconds.len()];
    let mut seen = Vec::new();
    for (class, colour) in WAIT_COLOURS {
        if t.seconds.iter().all(|s| !s.sessions.contains_key(class)) {
            continue;
        }
        seen.push((class, colour));
        w!(out, "<g class=\"series\" data-series=\"{class}\">");
        for (s, below) in t.seconds.iter().zip(base.iter_mut()) {
            let Some(&n) = s.sessions.get(class) else {
                continue;
            };
            let (xa, xb) = (frame.px(s.t as f64 - t0), frame.px(s.t as f64 + 1.0 - t0));
            let (ya, yb) = (frame.py(*below + n), frame.py(*below));
            w!(
                out,
                "<rect x=\"{xa:.1}\" y=\"{ya:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\"><title>second {} to {}: {class} {n:.2} sessions</title></rect>",
                (xb - xa - 0.6).max(0.5),
                (yb - ya).max(0.0),
                s.t as f64 - t0,
                s.t as f64 + 1.0 - t0
            );
            *below += n;
        }
        out += "</g>";
    }
    out += "</svg><ul class=\"legend\">";
    for (class, colour) in seen {
        w!(
            out,
            "<li data-legend=\"{class}\" role=\"button\" tabindex=\"0\" title=\"click to hide or show\"><svg width=\"16\" height=\"16\" aria-hidden=\"true\"><rect x=\"2\" y=\"2\" width=\"12\" height=\"12\" fill=\"{colour}\"/></svg>{class}</li>"
        );
    }
    out += "</ul>";
    out
}

/// The most counters drawn under a timeline.
const STRIPS: usize = 6;

/// The server's headline counters second by second under the timeline, on its x axis: a strip
/// each, its bars scaled to its own largest second (named beside it), the seconds a checkpoint
/// or autovacuum covered shaded in their colours; the counters whose seconds vary most
/// first (coefficient of variation), at most `STRIPS`.
fn counters_strips(t: &Timeline) -> String {
    let mut names: Vec<&String> = t.seconds.iter().flat_map(|s| s.counters.keys()).collect();
    names.sort();
    names.dedup();
    let spread = |name: &str| {
        let v: Vec<f64> = t
            .seconds
            .iter()
            .filter_map(|s| s.counters.get(name).copied())
            .collect();
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len().max(1) as f64;
        if mean > 0.0 { var.sqrt() / mean } else { 0.0 }
    };
    let mut ranked: Vec<(f64, &String)> = names
        .into_iter()
        .map(|n| (spread(n), n))
        .filter(|(_, n)| {
            t.seconds
                .iter()
                .any(|s| s.counters.get(*n).is_some_and(|v| *v > 0.0))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    if ranked.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<div class=\"strips\"><p class=\"note\">The server's counters, second by second (each \
         strip scaled to its own largest second; shaded: a checkpoint or autovacuum covered it)</p>",
    );
    for (_, name) in ranked.into_iter().take(STRIPS) {
        let top = t
            .seconds
            .iter()
            .filter_map(|s| s.counters.get(name.as_str()).copied())
            .fold(0.0, f64::max);
        let (mut frame, t0, _, _) = timeline_frame(t, top.max(f64::MIN_POSITIVE), 44.0);
        (frame.top, frame.bottom) = (14.0, 4.0);
        frame.y.max = top.max(f64::MIN_POSITIVE);
        let (y0, y1) = (frame.top, frame.h - frame.bottom);
        w!(
            out,
            "<svg class=\"chart strip\" data-counter=\"{n}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{n} per second\">\
             <text x=\"{:.1}\" y=\"10\" font-size=\"9\">{n} (largest second {})</text>",
            frame.w,
            frame.h,
            frame.left,
            sig_tick(top),
            n = esc(name),
        );
        for s in &t.seconds {
            let (xa, xb) = (frame.px(s.t as f64 - t0), frame.px(s.t as f64 + 1.0 - t0));
            let shade = if s.checkpoints > 0 {
                Some(CHECKPOINT)
            } else if s.autovacuums > 0 {
                Some(AUTOVACUUM)
            } else {
                None
            };
            if let Some(colour) = shade {
                w!(
                    out,
                    "<rect class=\"covered\" x=\"{xa:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\" fill-opacity=\"0.15\"/>",
                    xb - xa,
                    y1 - y0
                );
            }
            let Some(&v) = s.counters.get(name.as_str()) else {
                continue;
            };
            let y = frame.py(v);
            w!(
                out,
                "<rect x=\"{xa:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#546e7a\"><title>second {} to {}: {} {}</title></rect>",
                (xb - xa - 0.6).max(0.5),
                (y1 - y).max(0.0),
                s.t as f64 - t0,
                s.t as f64 + 1.0 - t0,
                esc(name),
                sig_tick(v)
            );
        }
        out += "</svg>";
    }
    out += "</div>";
    out
}

/// An embedded engine's run, which has no server sessions to sample: where the clients' time
/// went by its connections' own counts, as one bar (waiting for the lock, in COMMIT, the rest:
/// the engine's work and dbduel's, in the same threads), in the wait classes' colours, with
/// the counts under it.
fn clients_time(e: &crate::metrics::embedded::EmbeddedWaits) -> String {
    let colour = |class: &str| {
        WAIT_COLOURS
            .iter()
            .find(|(c, _)| *c == class)
            .map_or("#999", |(_, colour)| colour)
    };
    let lock = e.lock_share.clamp(0.0, 1.0);
    let commit = e.commit_share.clamp(0.0, 1.0 - lock);
    let parts = [
        ("lock", "waiting for the database lock", lock),
        ("commit", "in COMMIT (the log's writes and syncs)", commit),
        (
            "cpu",
            "the rest: executing, the engine's work and dbduel's",
            1.0 - lock - commit,
        ),
    ];
    let mut out = String::from(
        "<div class=\"clients-time\" role=\"img\" aria-label=\"the clients' time\" \
         style=\"display:flex;height:14px;margin:6px 0 2px\">",
    );
    for (class, what, share) in parts {
        w!(
            out,
            "<span data-part=\"{class}\" style=\"width:{:.1}%;background:{}\" title=\"{what}: {:.1}% of the clients' time\"></span>",
            100.0 * share,
            colour(class),
            100.0 * share
        );
    }
    out += "</div><ul class=\"legend\">";
    for (class, what, share) in parts {
        w!(
            out,
            "<li><svg width=\"16\" height=\"16\" aria-hidden=\"true\"><rect x=\"2\" y=\"2\" width=\"12\" height=\"12\" fill=\"{}\"/></svg>{} {:.0}%</li>",
            colour(class),
            esc(what),
            100.0 * share
        );
    }
    w!(out, "</ul><p class=\"note\">The {}</p>", esc(&e.summary()));
    out
}

/// The measured start of a timeline: its first second that is not warm-up (x = 0 there).
fn measured_start(t: &Timeline) -> f64 {
    t.seconds
        .iter()
        .filter(|s| !s.warmup)
        .map(|s| s.t)
        .min()
        .or_else(|| t.seconds.iter().map(|s| s.t).min())
        .unwrap_or(0) as f64
}

/// The frame of a chart on a timeline's seconds, `h` high, y from 0 to `top`: x counts seconds
/// from the measured start (warm-up seconds before 0); with the measured start and the ticks.
fn timeline_frame(t: &Timeline, top: f64, h: f64) -> (Frame, f64, Vec<f64>, Vec<f64>) {
    let t0 = measured_start(t);
    let first = t.seconds.iter().map(|s| s.t).min().unwrap_or(0) as f64 - t0;
    let last = t.seconds.iter().map(|s| s.t).max().unwrap_or(0) as f64 + 1.0 - t0;
    let yticks = nice_ticks(top);
    let frame = Frame {
        w: 400.0,
        h,
        left: 52.0,
        right: 10.0,
        top: 10.0,
        bottom: 40.0,
        pad: 0.0,
        x: Axis {
            min: first.min(0.0),
            max: last,
            log: false,
        },
        y: Axis {
            min: 0.0,
            max: *yticks.last().unwrap_or(&1.0),
            log: false,
        },
    };
    let ahead = nice_ticks(last);
    let step = ahead.get(1).copied().unwrap_or(1.0);
    let mut xticks: Vec<f64> = ahead.into_iter().filter(|v| *v <= last).collect();
    let mut back = -step;
    while back >= first {
        xticks.insert(0, back);
        back -= step;
    }
    (frame, t0, xticks, yticks)
}

/// A timeline: x counts seconds from the measured start (warm-up seconds before 0), each
/// second's point at its end, as a per-second counter reads; y from 0.
fn timeline_chart(t: &Timeline, style: &Style, top: f64) -> String {
    let (frame, t0, xticks, yticks) = timeline_frame(t, top, 190.0);
    let mut out = frame.open(
        &ticks_of(&xticks),
        &ticks_of(&yticks),
        "seconds since the measured start",
        "tps",
    );
    out += &warmup_shading(t, &frame, t0);
    out += &event_lines(t, &frame, t0);
    out += &phase_lines(t, &frame);
    let xy: Vec<(f64, f64)> = t
        .seconds
        .iter()
        .map(|s| (frame.px(s.t as f64 + 1.0 - t0), frame.py(s.tps)))
        .collect();
    let solid = Style { dash: "", ..*style };
    w!(
        out,
        "<g class=\"series\" data-series=\"{}\">{}",
        esc(&t.series()),
        line_svg(&xy, &solid)
    );
    for (s, (x, y)) in t.seconds.iter().zip(&xy) {
        w!(
            out,
            "<circle class=\"second\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.2\" fill=\"{}\"><title>second {} to {}{}: {} tps</title></circle>",
            style.color,
            s.t as f64 - t0,
            s.t as f64 + 1.0 - t0,
            if s.warmup { " (warm-up)" } else { "" },
            tps_text(s.tps)
        );
    }
    out += "</g></svg>";
    out
}

fn warmup_shading(t: &Timeline, frame: &Frame, t0: f64) -> String {
    let mut out = String::new();
    let (y0, y1) = (frame.top, frame.h - frame.bottom);
    for s in t.seconds.iter().filter(|s| s.warmup) {
        let (xa, xb) = (frame.px(s.t as f64 - t0), frame.px(s.t as f64 + 1.0 - t0));
        w!(
            out,
            "<rect class=\"warmup\" x=\"{xa:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>warm-up second {}</title></rect>",
            (xb - xa) + 0.3,
            y1 - y0,
            s.t as f64 - t0
        );
    }
    out
}

/// A checkpoint or autovacuum seen in a second is marked at that second's end, beside its point.
fn event_lines(t: &Timeline, frame: &Frame, t0: f64) -> String {
    let mut out = String::new();
    let (y0, y1) = (frame.top, frame.h - frame.bottom);
    for s in &t.seconds {
        let x = frame.px(s.t as f64 + 1.0 - t0);
        if s.checkpoints > 0 {
            w!(
                out,
                "<line class=\"checkpoint\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\" stroke=\"{CHECKPOINT}\" stroke-width=\"2\"><title>{} checkpoint{} in second {}</title></line>",
                s.checkpoints,
                plural(s.checkpoints as usize),
                s.t as f64 - t0
            );
        }
        if s.autovacuums > 0 {
            w!(
                out,
                "<line class=\"autovacuum\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\" stroke=\"{AUTOVACUUM}\" stroke-width=\"2\" stroke-dasharray=\"3 2\"><title>{} autovacuum run{} in second {}</title></line>",
                s.autovacuums,
                plural(s.autovacuums as usize),
                s.t as f64 - t0
            );
        }
    }
    out
}

/// Each phase's start (a run whose load changed shape), a line with its name at the top.
fn phase_lines(t: &Timeline, frame: &Frame) -> String {
    let mut out = String::new();
    let (y0, y1) = (frame.top, frame.h - frame.bottom);
    for p in &t.phases {
        let x = frame.px(p.start_s);
        w!(
            out,
            "<line class=\"phase\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\" stroke=\"#555\" stroke-width=\"1\" stroke-dasharray=\"1 3\"><title>phase {} from {:.1} s: {}</title></line>\
             <text class=\"phase\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\" fill=\"#555\">{}</text>",
            esc(&p.name),
            p.start_s,
            esc(&p.load),
            x + 2.0,
            y0 + 9.0,
            esc(&p.name)
        );
    }
    out
}

/// The phases' own figures under their timeline: load, tps, latency, schedule lag, recovery.
fn phases_table(phases: &[crate::metrics::phases::PhaseResult]) -> String {
    use crate::metrics::phases::{HEADER, cells};
    if phases.is_empty() {
        return String::new();
    }
    let mut out = String::from("<table class=\"data phases\"><thead><tr>");
    for h in HEADER {
        w!(out, "<th>{}</th>", esc(h));
    }
    out += "</tr></thead><tbody>";
    for p in phases {
        out += "<tr>";
        for c in cells(p) {
            w!(out, "<td>{}</td>", esc(&c));
        }
        out += "</tr>";
    }
    out += "</tbody></table>";
    out
}

// ---------------------------------------------------------------------------------------------
// Tables.

fn resources_section(data: &ReportData) -> String {
    let rows = data.resources();
    let mut out = String::from(
        "<section id=\"resources\"><h2>Resources</h2><p class=\"note\">Per engine/profile and \
         workload: the server's peak resident memory over all client counts, its CPU time per \
         transaction (median over client counts, range in brackets), and the database's size \
         on disk.</p>",
    );
    let rss_max = rows
        .iter()
        .filter_map(|r| r.peak_rss_bytes)
        .max()
        .unwrap_or(0) as f64;
    let cpu_max = rows
        .iter()
        .filter_map(|r| r.cpu_per_tx_us.map(|c| c.0))
        .fold(0.0, f64::max);
    out += "<table class=\"data\"><thead><tr><th>engine/profile</th><th>workload</th>\
            <th class=\"num\">server memory (peak RSS)</th><th class=\"num\">server CPU per transaction</th>\
            <th class=\"num\">database size</th></tr></thead><tbody>";
    for r in &rows {
        out += &resource_row(r, rss_max, cpu_max);
    }
    out += "</tbody></table></section>\n";
    out
}

fn resource_row(r: &ResourceRow, rss_max: f64, cpu_max: f64) -> String {
    let rss = match r.peak_rss_bytes {
        Some(b) => bar_cell(&human_bytes(b), b as f64 / rss_max),
        None => "<td class=\"num muted\">&mdash;</td>".into(),
    };
    let cpu = match r.cpu_per_tx_us {
        Some((med, lo, hi)) => bar_cell(
            &format!(
                "{} µs <span class=\"muted\">[{}&ndash;{}]</span>",
                sig3(med),
                sig3(lo),
                sig3(hi)
            ),
            med / cpu_max,
        ),
        None => "<td class=\"num muted\">&mdash;</td>".into(),
    };
    let size = r
        .database_size_bytes
        .map(human_bytes)
        .unwrap_or_else(|| "&mdash;".into());
    format!(
        "<tr><td>{}</td><td>{} &middot; {}</td>{rss}{cpu}<td class=\"num\">{size}</td></tr>",
        series_label(&r.series, r.unsafe_profile),
        esc(&r.workload),
        esc(&r.variant)
    )
}

/// A number with a bar behind it showing its share of the column's largest value.
fn bar_cell(text: &str, share: f64) -> String {
    let pct = if share.is_finite() {
        (share * 100.0).clamp(0.0, 100.0)
    } else {
        0.0
    };
    format!(
        "<td class=\"num bar\"><span class=\"track\"><span class=\"fill\" style=\"width:{pct:.1}%\">\
         </span></span><span class=\"v\">{text}</span></td>"
    )
}

fn series_label(series: &str, unsafe_profile: bool) -> String {
    if unsafe_profile {
        format!("{} <span class=\"badge unsafe\">unsafe</span>", esc(series))
    } else {
        esc(series)
    }
}

fn comparison_section(data: &ReportData) -> String {
    let ranked = data.ranks_by_headline();
    let mut out = format!(
        "<section id=\"comparison\"><h2>All points</h2><p class=\"note\">Grouped by workload \
         and clients. {}. Hover a flag for details.</p>\
         <table class=\"data\"><thead><tr><th>engine</th><th>profile</th>\
         <th title=\"the isolation level the transactions ran at\">isolation</th><th>workload</th>\
         <th>variant</th><th class=\"num\">clients</th>{}<th class=\"num\">tps median [min&ndash;max]</th>\
         <th class=\"num\">CV</th><th class=\"num\">p95 ms</th><th class=\"num\">p99 ms</th>\
         <th class=\"num\" title=\"the first transaction's latency: the cold-cache time after a cold start\">first ms</th>\
         <th class=\"num\">errors</th><th title=\"what limited the point, from the server's sampled sessions (hover for the evidence)\">limited by</th><th>flags</th></tr></thead><tbody>",
        esc(format!("{FASTEST_RULE} {ONE_REPEAT}").trim_end_matches('.')),
        if ranked {
            "<th class=\"num\" title=\"the figure that ranks the group: the workload's own\">ranked by (median)</th>"
        } else {
            ""
        }
    );
    let mut previous: Option<(&str, &str, u32)> = None;
    for p in data.comparison() {
        let group = (p.workload.as_str(), p.variant.as_str(), p.clients);
        let first = previous.is_some_and(|g| g != group);
        previous = Some(group);
        let rank = ranked.then(|| (data.ranking_figure(p), data.ranking_value(p)));
        out += &comparison_row(p, data.is_fastest(p), rank, first);
    }
    out += "</tbody></table></section>\n";
    out
}

/// Per point with several transaction types (TPC-C's five): the workload's own figures, then
/// each type's rate, latency percentiles, rollbacks, retries and errors.
/// The counters that moved most, a row per point that has them (nothing where none has).
fn counters_section(data: &ReportData) -> String {
    let row = |p: &PointSummary| {
        let (label, listed) = (p.counters_label(), p.counters_listed("<br>", esc));
        format!("<tr><td>{}</td><td>{listed}</td></tr>", esc(&label))
    };
    let Some(rows) = data.counters_rows(row) else {
        return String::new();
    };
    format!(
        "<section id=\"counters\"><h2>The counters that moved most</h2><p class=\"note\">The \
         server's counters over the first repeat's measured run: {}; {}.</p><table class=\"data\">\
         <thead><tr><th>point</th><th>counters</th></tr></thead><tbody>{rows}</tbody></table>\
         </section>\n",
        esc(super::data::COUNTERS_RULE),
        esc(super::data::COUNTERS_EMBEDDED)
    )
}

fn types_section(data: &ReportData) -> String {
    let points = data.typed_points();
    if points.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section id=\"types\"><h2>Per transaction type</h2><p class=\"note\">Medians over the \
         repeats; rollbacks (TPC-C's 1% of New-Orders that roll back by design), retries and errors \
         are summed over them.</p><table class=\"data\"><thead><tr><th>type</th>\
         <th class=\"num\">tps</th><th class=\"num\">p50 ms</th><th class=\"num\">p95 ms</th>\
         <th class=\"num\">p99 ms</th><th class=\"num\">rollbacks</th><th class=\"num\">retries</th>\
         <th class=\"num\">errors</th></tr></thead><tbody>",
    );
    for p in points {
        let figures: Vec<String> = p
            .card_figures()
            .map(|(name, f)| {
                format!(
                    "{} {} <span class=\"muted\">[{}&ndash;{}]</span>",
                    esc(name),
                    tps_text(f.median),
                    tps_text(f.min),
                    tps_text(f.max)
                )
            })
            .collect();
        w!(
            out,
            "<tr class=\"group\"><th colspan=\"8\">{} &middot; {} {} &middot; {} clients{}{}</th></tr>",
            series_label(&p.series(), p.unsafe_profile),
            esc(&p.workload),
            esc(&p.variant),
            p.clients,
            if figures.is_empty() { "" } else { " &middot; " },
            figures.join(" &middot; ")
        );
        for t in crate::report::data::TypeFigures::rows(p) {
            // One execution has a latency, not percentiles: p50 shows it, the others none.
            let (p95, p99) = t
                .tail()
                .map_or(("&mdash;".into(), "&mdash;".into()), |(a, b)| {
                    (sig3(a), sig3(b))
                });
            w!(
                out,
                "<tr><td>{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num{}\">{}</td></tr>",
                esc(&t.name),
                p.rows_of(&t.name)
                    .map(|r| format!(" <span class=\"muted\">{r:.0} rows</span>"))
                    .unwrap_or_default(),
                tps_text(t.tps),
                sig3(t.p50_ms),
                p95,
                p99,
                t.rollbacks,
                t.retries,
                if t.errors > 0 { " bad" } else { "" },
                t.errors
            );
        }
    }
    out += "</tbody></table></section>\n";
    out
}

/// Each transaction type's median latency per engine/profile side by side (TPC-H: a group per
/// query), for the points with several types; the bars are on a log scale, so that a 10 ms
/// query and a 100 s one both show.
fn type_bars_section(data: &ReportData) -> String {
    let points: Vec<&PointSummary> = data
        .typed_points()
        .into_iter()
        .filter(|p| p.types.len() > 1)
        .collect();
    let p50s = || points.iter().flat_map(|p| p.types.iter().map(|t| t.p50_ms));
    let lowest = p50s().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let highest = p50s().fold(0.0, f64::max);
    if points.is_empty() || highest <= 0.0 {
        return String::new();
    }
    // A decade below the fastest is the bar's zero.
    let floor = lowest.log10() - 1.0;
    let share = |v: f64| (v.log10() - floor) / (highest.log10() - floor);
    let mut out = String::from(
        "<section id=\"type-bars\"><h2>Per transaction type, side by side</h2><p class=\"note\">\
         Each type's median latency (p50 over the repeats) per engine and profile; bars on a log \
         scale.</p><table class=\"data\"><thead><tr><th>engine/profile</th><th>workload</th>\
         <th class=\"num\">p50 ms</th></tr></thead><tbody>",
    );
    let mut names: Vec<&str> = Vec::new();
    for t in points.iter().flat_map(|p| &p.types) {
        if !names.contains(&t.name.as_str()) {
            names.push(&t.name);
        }
    }
    for name in names {
        w!(
            out,
            "<tr class=\"group\"><th colspan=\"3\">{}</th></tr>",
            esc(name)
        );
        for p in &points {
            let Some(t) = p.types.iter().find(|t| t.name == name && t.p50_ms > 0.0) else {
                continue;
            };
            w!(
                out,
                "<tr><td>{}</td><td>{} &middot; {} &middot; {} clients</td>{}</tr>",
                series_label(&p.series(), p.unsafe_profile),
                esc(&p.workload),
                esc(&p.variant),
                p.clients,
                bar_cell(&sig3(t.p50_ms), share(t.p50_ms))
            );
        }
    }
    out += "</tbody></table></section>\n";
    out
}

/// Each side of a CH-benCHmark mix against itself alone: what the other side cost it, judged
/// against the noise.
fn sides_section(data: &ReportData) -> String {
    if data.sides.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<section id=\"ch-sides\"><h2>CH-benCHmark: each side in the mix against itself alone</h2><p class=\"note\">{}</p>\
         <table class=\"data\"><thead><tr><th>engine</th><th>profile</th><th class=\"num\">clients</th>\
         <th>figure</th><th class=\"num\">alone</th><th class=\"num\">in the mix</th>\
         <th class=\"num\">change [interval]</th><th>verdict</th></tr></thead><tbody>",
        esc(super::sides::SIDES_RULE)
    );
    for c in &data.sides {
        w!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}{}</td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&c.engine),
            esc(&super::data::with_plan(&c.profile, &c.plan)),
            c.clients,
            if c.cold { " cold" } else { "" },
            esc(&c.what()),
            sig3(c.alone),
            sig3(c.mix),
            esc(&c.change()),
            esc(&c.verdict_text())
        );
    }
    out += "</tbody></table></section>\n";
    out
}

/// Each profile against its engine's baseline profile, with the verdict of the noise test.
fn profile_comparison_section(data: &ReportData) -> String {
    if data.comparisons.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<section id=\"profiles-vs-baseline\"><h2>Profiles against the baseline</h2><p class=\"note\">{}</p>\
         <table class=\"data\"><thead><tr><th>engine</th><th>workload</th><th>variant</th>\
         <th class=\"num\">clients</th><th>profile</th><th>against</th><th class=\"num\">tps ratio (means)</th>\
         <th>verdict</th></tr></thead><tbody>",
        esc(super::compare::NOISE_RULE)
    );
    for c in &data.comparisons {
        w!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td>\
             <td class=\"num\">{:.2}&times;</td><td>{}</td></tr>",
            esc(&c.engine),
            esc(&c.workload),
            esc(&c.variant),
            c.clients,
            esc(&super::data::with_plan(&c.profile, &c.plan)),
            esc(&c.baseline),
            c.ratio,
            esc(&super::markdown::verdict_text(c))
        );
    }
    out += "</tbody></table></section>\n";
    out
}

fn comparison_row(
    p: &PointSummary,
    fastest: bool,
    rank: Option<(&str, f64)>,
    new_group: bool,
) -> String {
    let bold = |text: String, on: bool| if on { format!("<b>{text}</b>") } else { text };
    let tps = bold(tps_text(p.tps_median), fastest && rank.is_none());
    let ranked = rank.map_or(String::new(), |(name, value)| {
        format!(
            "<td class=\"num\"><span class=\"muted\">{}</span> {}</td>",
            esc(name),
            bold(tps_text(value), fastest)
        )
    });
    let (range, cv) = p
        .spread()
        .map_or((String::new(), "&mdash;".into()), |(r, cv)| {
            (format!(" <span class=\"muted\">[{}]</span>", esc(&r)), cv)
        });
    format!(
        "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>{ranked}\
         <td class=\"num\">{tps}{range}</td><td class=\"num\">{cv}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num{}\">{}</td><td title=\"{}\">{}</td><td>{}</td></tr>",
        if new_group { " class=\"group\"" } else { "" },
        esc(&p.engine),
        esc(&p.profile_label()),
        esc(&p.isolation),
        esc(&p.workload),
        esc(&p.variant),
        p.clients_text(),
        sig3(p.p95_ms),
        sig3(p.p99_ms),
        p.first_ms.map_or("&mdash;".to_string(), sig3),
        if p.errors > 0 { " bad" } else { "" },
        p.errors,
        esc(&p.limited_by_says),
        esc(&p.limited_by),
        flags_html(p)
    )
}

fn flags_html(p: &PointSummary) -> String {
    let mut out = String::new();
    for flag in p.flags() {
        let why = match flag {
            "client-bound" => "dbduel's client threads were busy more than half of the time, or dbduel used more than half of the machine's CPU: this number measures the client".to_string(),
            "unstable" => p.unstable.join("; "),
            "UNSAFE" | "not durable" => p.durability.text(),
            "samples missed" => p.missed.join("; "),
            "server restarted" => "the managed server exited during the run and was started again: the figures hold the crash, its lost transactions and the reconnections".to_string(),
            _ => "caches dropped before each run".to_string(),
        };
        w!(
            out,
            "<span class=\"badge {}\" title=\"{}\">{flag}</span>",
            flag.replace(' ', "-"),
            esc(&why)
        );
    }
    if !p.warnings.is_empty() {
        w!(
            out,
            "<span class=\"badge warning\" title=\"{}\">{} warning{}</span>",
            esc(&p.warnings.join("\n")),
            p.warnings.len(),
            plural(p.warnings.len())
        );
    }
    out
}

fn settings_section(data: &ReportData) -> String {
    let mut out = String::from("<section id=\"settings\"><h2>Settings</h2>");
    let tables = data.settings_tables();
    if tables.is_empty() {
        out += "<p class=\"empty\">No settings were recorded.</p></section>\n";
        return out;
    }
    out += "<p class=\"note\">As read back from each server, profiles side by side. \
            <span class=\"diff-key\">Highlighted</span> rows differ between profiles.</p>";
    for table in &tables {
        out += &settings_table(table);
    }
    out += "</section>\n";
    out
}

fn settings_table(table: &SettingsTable) -> String {
    let mut out = format!(
        "<h3>{}</h3><table class=\"data settings\"><thead><tr><th>setting</th>",
        esc(&table.engine)
    );
    for (profile, unsafe_profile) in &table.columns {
        w!(
            out,
            "<th class=\"series\">{}</th>",
            series_label(&format!("{}/{profile}", table.engine), *unsafe_profile)
        );
    }
    out += "</tr></thead><tbody>";
    for row in &table.rows {
        w!(
            out,
            "<tr{}><td class=\"name\">{}</td>",
            if row.differs { " class=\"diff\"" } else { "" },
            esc(&row.name)
        );
        for v in &row.values {
            match v {
                Some(v) => w!(out, "<td>{}{}</td>", esc(v), size_hint(&row.name, v)),
                None => w!(out, "<td class=\"muted\">&mdash;</td>"),
            };
        }
        out += "</tr>";
    }
    out += "</tbody></table>";
    out
}

/// Byte counts of size settings (MariaDB reports 134217728) also in human units.
fn size_hint(name: &str, value: &str) -> String {
    let sized = name.ends_with("_size") || name.ends_with("_buffer");
    match value.parse::<u64>() {
        Ok(n) if sized && n >= 1024 => {
            format!("<span class=\"hint\">{}</span>", human_bytes(n))
        }
        _ => String::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Style and script.

const STYLE: &str = include_str!("report.css");

/// Tooltips: SVG `<title>`s (native tooltips without script) become a styled tooltip.
const SCRIPT: &str = r#"
(function(){
  var tip=document.createElement("div");tip.className="tip";document.body.appendChild(tip);
  document.querySelectorAll("svg title").forEach(function(t){
    t.parentNode.setAttribute("data-tip",t.textContent);t.parentNode.removeChild(t);});
  document.addEventListener("mouseover",function(e){
    var el=e.target.closest?e.target.closest("[data-tip]"):null;
    if(!el){tip.style.display="none";return;}
    tip.textContent=el.getAttribute("data-tip");tip.style.display="block";});
  document.addEventListener("mousemove",function(e){
    tip.style.left=(e.pageX+14)+"px";tip.style.top=(e.pageY+14)+"px";});
  function toggle(li){
    var name=li.getAttribute("data-legend"),fig=li.closest("figure")||document;
    var off=li.classList.toggle("off");
    fig.querySelectorAll("g.series").forEach(function(g){
      if(g.getAttribute("data-series")===name){g.classList.toggle("hidden",off);}});}
  document.querySelectorAll("li[data-legend]").forEach(function(li){
    li.addEventListener("click",function(){toggle(li);});
    li.addEventListener("keydown",function(e){
      if(e.key==="Enter"||e.key===" "){e.preventDefault();toggle(li);}});});
  document.querySelectorAll(".scale-toggle input").forEach(function(box){
    box.addEventListener("change",function(){
      box.closest(".scaled").setAttribute("data-scale",box.checked?"log":"linear");});});
})();
document.body.dataset.rendered="yes";
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::sample;

    fn count(haystack: &str, needle: &str) -> usize {
        haystack.matches(needle).count()
    }

    #[test]
    fn the_counters_that_moved_most_are_a_table() {
        let mut data = sample();
        assert!(!html(&data).contains("id=\"counters\""));
        data.points[1].counters = vec![crate::report::data::CounterFigure {
            name: "v.<rare>".into(),
            figure: "0.050 /tx".into(),
        }];
        let page = html(&data);
        assert!(
            page.contains("<section id=\"counters\">"),
            "no counters section"
        );
        assert!(
            page.contains("v.&lt;rare&gt; 0.050 /tx</td></tr>"),
            "{page}"
        );
    }

    #[test]
    fn every_series_is_drawn_in_every_clients_chart() {
        let data = sample();
        let page = html(&data);
        for series in [
            "postgres/default",
            "postgres/tuned",
            "mariadb/default",
            "mariadb/fast",
        ] {
            let g = format!("<g class=\"series\" data-series=\"{series}\">");
            // One throughput chart and three latency charts, each on a linear and a log
            // scale, plus its timelines.
            let timelines = data
                .timelines
                .iter()
                .filter(|t| t.series() == series)
                .count();
            assert_eq!(count(&page, &g), 2 * 4 + timelines, "{series}");
            assert!(page.contains(&format!("<li data-legend=\"{series}\" role=\"button\"")));
        }
        assert!(page.contains("mariadb/fast <span class=\"unsafe-label\">(unsafe)</span>"));
        assert_eq!(count(&page, "<g class=\"point unstable\">"), 2 * 4);
        assert_eq!(count(&page, "<g class=\"point client-bound\">"), 2 * 4);
    }

    #[test]
    fn the_sides_of_a_ch_mix_have_a_section_and_a_link_only_when_measured() {
        let page = html(&sample());
        assert!(page.contains("<a href=\"#ch-sides\">CH sides</a>"));
        assert!(page.contains(
            "<td>terminals&#39; NOPM</td><td class=\"num\">1000</td><td class=\"num\">700</td><td class=\"num\">-30.0% [-33.5..-26.1]</td><td>slower in the mix</td>"
        ), "{page}");
        let mut none = sample();
        none.sides.clear();
        let page = html(&none);
        assert!(!page.contains("ch-sides"));
    }

    #[test]
    fn timelines_mark_checkpoints_autovacuums_and_warmup() {
        let page = html(&sample());
        assert_eq!(count(&page, "<line class=\"checkpoint\""), 2);
        assert_eq!(count(&page, "<line class=\"autovacuum\""), 1);
        assert_eq!(count(&page, "<rect class=\"warmup\""), 2);
    }

    #[test]
    fn timelines_stack_the_sampled_sessions_by_wait_class() {
        let page = html(&sample());
        assert_eq!(count(&page, "aria-label=\"active sessions\""), 1);
        // The measured seconds, each with its two classes stacked: cpu below lock.
        assert_eq!(count(&page, ": lock 2.00 sessions</title>"), 10);
        assert_eq!(count(&page, ": cpu 1.00 sessions</title>"), 10);
        let (cpu, lock) = (
            page.find("data-series=\"cpu\"").expect("cpu drawn"),
            page.find("data-series=\"lock\"").expect("lock drawn"),
        );
        assert!(cpu < lock, "the server's work is stacked below its waits");
        assert!(page.contains("<li data-legend=\"lock\""));
        assert!(
            !page.contains("data-series=\"commit\""),
            "a class never seen is not drawn"
        );
    }

    #[test]
    fn timelines_draw_the_counters_that_vary_most_each_on_its_own_scale() {
        let page = html(&sample());
        assert_eq!(count(&page, "class=\"chart strip\""), 2);
        // The blocks read jump in one second: they vary more than the commits, drawn first.
        let (reads, commits) = (
            page.find("data-counter=\"v.blocks_read\"")
                .expect("blocks read drawn"),
            page.find("data-counter=\"v.commits\"")
                .expect("commits drawn"),
        );
        assert!(reads < commits, "the counter that varies most comes first");
        assert!(page.contains("v.blocks_read (largest second 500)"));
        assert!(page.contains(": v.blocks_read 500</title>"));
        assert_eq!(count(&page, ": v.commits "), 12);
        // Seconds 5 and 9 held a checkpoint, 7 an autovacuum: shaded in each strip.
        assert_eq!(count(&page, "<rect class=\"covered\""), 6);
        let mut none = sample();
        for s in &mut none.timelines[0].seconds {
            s.counters.clear();
        }
        assert!(!html(&none).contains("class=\"chart strip\""));
    }

    #[test]
    fn an_embedded_run_draws_its_clients_time() {
        let mut data = sample();
        let figures = crate::engine::figures::ConnectionFigures {
            busy_wait_s: 3.0,
            commit_s: 0.5,
            wall_s: 4.0,
            ..Default::default()
        };
        data.timelines[0].embedded = Some(crate::metrics::embedded::EmbeddedWaits::of(
            figures, 2, 100, None,
        ));
        let page = html(&data);
        assert_eq!(count(&page, "class=\"clients-time\""), 1);
        for part in [
            "data-part=\"lock\" style=\"width:75.0%",
            "data-part=\"commit\" style=\"width:12.5%",
            "data-part=\"cpu\" style=\"width:12.5%",
            "waiting for the database lock 75%</li>",
            "0 WAL checkpoints (counted by the connections",
            "engine&#39;s connections (2, 4.0 s of clients&#39; time)",
        ] {
            assert!(page.contains(part), "{part}");
        }
        assert_eq!(count(&html(&sample()), "class=\"clients-time\""), 0);
    }

    #[test]
    fn text_is_escaped() {
        let page = html(&sample());
        assert_eq!(count(&page, "<script>"), 1, "only the report's own script");
        assert!(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; a|b"));
        assert!(page.contains("<h1>Sample &amp; &lt;test&gt;</h1>"));
        assert!(page.contains("Some &quot;quoted&quot; CPU"));
        assert!(page.contains("(over 10%) &lt;b&gt;"));
        assert_eq!(esc("a'b\"c<d>&"), "a&#39;b&quot;c&lt;d&gt;&amp;");
    }

    #[test]
    fn elements_are_balanced() {
        let page = html(&sample());
        for (open, close) in [
            ("<svg", "</svg>"),
            ("<g ", "</g>"),
            ("<table", "</table>"),
            ("<section", "</section>"),
            ("<figure", "</figure>"),
            ("<tr", "</tr>"),
            ("<ul", "</ul>"),
        ] {
            assert_eq!(count(&page, open), count(&page, close), "{open}");
        }
    }

    #[test]
    fn sections_come_in_order() {
        let page = html(&sample());
        let at = |id: &str| page.find(&format!("<section id=\"{id}\"")).unwrap();
        let ids = [
            "throughput",
            "latency",
            "timelines",
            "resources",
            "comparison",
            "settings",
        ];
        assert!(ids.windows(2).all(|w| at(w[0]) < at(w[1])));
        assert!(page.find("class=\"facts\"").unwrap() < at("throughput"));
    }

    #[test]
    fn types_are_drawn_side_by_side_on_a_log_scale() {
        let mut data = sample();
        data.points.retain(|p| p.clients == 1);
        for (i, p) in data.points.iter_mut().enumerate() {
            p.types = ["Q1", "Q2"]
                .iter()
                .zip([10.0, 1000.0])
                .map(|(name, ms)| crate::report::data::TypeFigures {
                    name: name.to_string(),
                    p50_ms: ms * (i + 1) as f64,
                    ..Default::default()
                })
                .collect();
        }
        let page = html(&data);
        let section = &page[page.find("<section id=\"type-bars\"").expect("the section")..];
        let section = &section[..section.find("</section>").expect("its end")];
        assert!(section.find(">Q1<").unwrap() < section.find(">Q2<").unwrap());
        // The slowest (4000 ms) fills its bar; the fastest (10 ms) shows one decade of the
        // 3.6 from a decade below it: 27.8%.
        assert!(section.contains("width:100.0%"), "{section}");
        assert!(section.contains("width:27.8%"), "{section}");
    }

    #[test]
    fn empty_data_says_so() {
        let page = html(&ReportData::default());
        assert!(page.contains("No points were measured"));
        assert!(page.contains("No per-second timelines were recorded."));
        assert!(page.contains("No settings were recorded."));
        assert!(page.contains("no host facts recorded"));
        assert!(!page.contains("<svg class=\"chart\""));
        assert!(page.contains("document.body.dataset.rendered=\"yes\""));
    }

    #[test]
    fn one_client_count_and_zero_throughput_still_draw() {
        let mut data = sample();
        data.points.retain(|p| p.clients == 1);
        for p in &mut data.points {
            (p.tps_median, p.tps_min, p.tps_max) = (0.0, 0.0, 0.0);
        }
        let page = html(&data);
        assert!(!page.contains("NaN") && !page.contains("inf"));
        assert_eq!(count(&page, "data-series=\"postgres/default\">"), 2 * 4);
    }

    /// Seventeen series of three engines (as a combined report had): no two look alike, and
    /// no chart draws more than `MAX_SERIES` of them.
    fn many_series() -> ReportData {
        let mut data = sample();
        let template = data.points[0].clone();
        data.points.clear();
        data.timelines.clear();
        data.profiles.clear();
        for (engine, profiles) in [("sqlite", 9), ("postgres", 5), ("mariadb", 3)] {
            for k in 0..profiles {
                for clients in [1, 2] {
                    let mut p = template.clone();
                    p.engine = engine.into();
                    p.profile = format!("p{k}");
                    p.clients = clients;
                    data.points.push(p);
                }
            }
        }
        data
    }

    /// How many different looks (colour, dash, marker) the series have.
    fn looks(styles: &Styles) -> usize {
        let mut looks: Vec<(&str, &str, usize)> = styles
            .series
            .iter()
            .map(|(_, s, _)| {
                let shape = SHAPES.iter().position(|x| *x == s.shape).unwrap();
                (s.color, s.dash, shape)
            })
            .collect();
        looks.sort();
        looks.dedup();
        looks.len()
    }

    #[test]
    fn every_series_looks_different_and_charts_hold_eight_at_most() {
        let data = many_series();
        let styles = Styles::new(&data);
        assert_eq!(styles.series.len(), 17);
        assert_eq!(
            looks(&styles),
            17,
            "two series share colour, dash and marker"
        );
        // One engine alone: 28 profiles, all different.
        let mut one = many_series();
        one.points.retain(|p| p.engine == "sqlite");
        for (i, p) in one.points.iter_mut().enumerate() {
            p.profile = format!("p{}", i / 2 + 100);
        }
        let mut extra = one.points.clone();
        for p in &mut extra {
            p.profile += "x";
        }
        one.points.extend(extra.clone());
        for p in &mut extra {
            p.profile += "y";
        }
        one.points.extend(extra);
        let styles = Styles::new(&one);
        let n = styles.series.len();
        assert!(n >= 27, "{n}");
        assert_eq!(looks(&styles), n);

        let names = series_of(&data.points.iter().collect::<Vec<_>>());
        let groups = chart_groups(&names);
        assert!(groups.iter().all(|(_, g)| g.len() <= MAX_SERIES));
        let drawn: usize = groups.iter().map(|(_, g)| g.len()).sum();
        assert_eq!(drawn, 17);
        assert_eq!(
            groups.len(),
            4,
            "sqlite in two charts, postgres and mariadb one each"
        );
        assert!(groups[0].0.contains("sqlite (1 of 2)"), "{}", groups[0].0);
        let page = html(&data);
        assert_eq!(count(&page, "sqlite (2 of 2)"), 2, "throughput and latency");
    }

    #[test]
    fn a_wide_spread_opens_on_a_log_scale() {
        let mut data = sample();
        let page = html(&data);
        // The sample's series lie within 4x of each other: linear.
        assert!(page.contains("<div class=\"scaled\" data-scale=\"linear\">"));
        assert!(!page.contains("<div class=\"scaled\" data-scale=\"log\">"));
        for p in data.points.iter_mut().filter(|p| p.engine == "mariadb") {
            p.tps_median *= 30.0;
            p.tps_min *= 30.0;
            p.tps_max *= 30.0;
        }
        let page = html(&data);
        let throughput =
            &page[page.find("id=\"throughput\"").unwrap()..page.find("id=\"latency\"").unwrap()];
        assert!(throughput.contains("<div class=\"scaled\" data-scale=\"log\"><label class=\"scale-toggle\"><input type=\"checkbox\" checked>"));
        assert!(throughput.contains("transactions per second (log scale)"));
    }

    #[test]
    fn timelines_count_from_the_measured_start() {
        let data = sample();
        let page = html(&data);
        // The sample's seconds 0 and 1 are warm-up: second 2 is the first measured, drawn at
        // its end, x = 1; warm-up seconds fall before 0.
        assert!(
            page.contains("<title>second 0 to 1: "),
            "the first measured second"
        );
        assert!(page.contains("<title>second -2 to -1 (warm-up): "));
        assert!(page.contains("seconds since the measured start"));
    }

    #[test]
    fn capacity_shows_its_ceiling_and_what_is_off_the_scale() {
        let v = CapacityView {
            title: "capacity".into(),
            limits: vec![("p99<10ms".into(), 10.0)],
            curves: vec!["p50", "p99"],
            steps: vec![
                StepView {
                    offered: 100.0,
                    done: 100.0,
                    latency_ms: vec![1.0, 4.0],
                    passed: true,
                    client_busy: 0.1,
                },
                StepView {
                    offered: 400.0,
                    done: 310.0,
                    latency_ms: vec![90.0, 812.0],
                    passed: false,
                    client_busy: 0.2,
                },
            ],
            capacity: Some(100.0),
            ceiling: Some(320.0),
            verdict: "capacity 100 tps".into(),
        };
        let page = capacity_html(&v);
        assert_eq!(
            count(&page, "closed-loop ceiling 320.0 tps"),
            2,
            "both charts"
        );
        assert!(
            page.contains("&#8593; 812 ms"),
            "the p99 drawn off the scale is labelled"
        );
        assert!(page.contains("&#8593; 90.0 ms"));
        assert!(!page.contains("&#8593; 4 ms"));
        assert!(page.contains("<li data-legend=\"p99\""));
    }
}
