//! The HTML report: one self-contained file (inline style, inline SVG charts drawn here, a few
//! lines of script for tooltips; nothing fetched from the network) showing a `ReportData`.

mod capacity;
mod svg;

use std::fmt::Write;

use super::data::{
    FASTEST_RULE, ONE_REPEAT, PointSummary, ReportData, ResourceRow, SettingsTable, Timeline, sig3,
    tps_text,
};
use super::human_bytes;
pub use capacity::{CapacityView, StepView, capacity_html};
pub use svg::esc;
use svg::{Axis, Frame, SHAPES, Shape, Style, compact, line_svg, marker, nice_ticks, ticks_of, w};

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
        out += &latency_section(data, &styles);
    }
    out += &timelines_section(data, &styles);
    if !data.points.is_empty() {
        out += &resources_section(data);
        out += &comparison_section(data);
        out += &types_section(data);
        out += &type_bars_section(data);
        out += &profile_comparison_section(data);
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
    out += "<nav><a href=\"#throughput\">Throughput</a><a href=\"#latency\">Latency</a>\
            <a href=\"#timelines\">Timelines</a><a href=\"#resources\">Resources</a>\
            <a href=\"#comparison\">All points</a>";
    if !data.typed_points().is_empty() {
        out += "<a href=\"#types\">Per type</a>";
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
    /// with one engine, each profile gets its own colour.
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
            let (c, k) = if by_engine { (e, rank) } else { (i, i) };
            let style = Style {
                color: PALETTE[c % PALETTE.len()],
                dash: if by_engine {
                    DASHES[k % DASHES.len()]
                } else {
                    ""
                },
                shape: SHAPES[k % SHAPES.len()],
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
                "<li data-legend=\"{}\"><svg width=\"38\" height=\"16\" aria-hidden=\"true\">{}{}</svg>{}{}</li>",
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

fn throughput_section(data: &ReportData, styles: &Styles) -> String {
    let mut out = String::from(
        "<section id=\"throughput\"><h2>Throughput vs clients</h2><p class=\"note\">Median \
         transactions per second over the repeats; the bar through each marker spans the \
         slowest and the fastest repeat. Higher is better; clients on a log<sub>2</sub> scale.</p>\n",
    );
    for (workload, variant) in data.workloads() {
        let points = data.points_of(&workload, &variant);
        let names = series_of(&points);
        let repeats = points.iter().map(|p| p.repeats).max().unwrap_or(0);
        w!(
            out,
            "<figure class=\"wide\"><figcaption>{} &middot; {}</figcaption><div class=\"plot\">",
            esc(&workload),
            esc(&variant)
        );
        out += &curve_chart(&points, styles, &Metric::TPS, (860.0, 380.0));
        w!(
            out,
            "<div class=\"side\">{}{}</div></div></figure>\n",
            styles.legend(&names),
            key_html(repeats)
        );
        if points.iter().any(|p| p.metrics.contains_key("nopm")) {
            w!(
                out,
                "<figure class=\"wide nopm\"><figcaption>{} &middot; {} &middot; New-Orders per minute \
                 (NOPM: committed New-Order transactions, as HammerDB counts them)</figcaption><div class=\"plot\">",
                esc(&workload),
                esc(&variant)
            );
            out += &curve_chart(&points, styles, &Metric::NOPM, (860.0, 380.0));
            w!(
                out,
                "<div class=\"side\">{}{}</div></div></figure>\n",
                styles.legend(&names),
                key_html(repeats)
            );
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
        let names = series_of(&points);
        w!(
            out,
            "<figure><figcaption>{} &middot; {}</figcaption>{}<div class=\"trio\">",
            esc(&workload),
            esc(&variant),
            styles.legend(&names)
        );
        for metric in [&Metric::P50, &Metric::P95, &Metric::P99] {
            w!(out, "<div><h4>{}</h4>", metric.name);
            out += &curve_chart(&points, styles, metric, (410.0, 280.0));
            out += "</div>";
        }
        out += "</div></figure>\n";
    }
    out += "</section>\n";
    out
}

/// Series present among these points, in order of first appearance.
fn series_of(points: &[&PointSummary]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in points {
        if !names.contains(&p.series()) {
            names.push(p.series());
        }
    }
    names
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

/// The low and high ends of a point's spread.
type Spread = fn(&PointSummary) -> (f64, f64);

/// What a clients chart plots.
struct Metric {
    name: &'static str,
    axis: &'static str,
    value: fn(&PointSummary) -> f64,
    /// The spread drawn as a whisker, if any.
    range: Option<Spread>,
}

impl Metric {
    const TPS: Metric = Metric {
        name: "throughput",
        axis: "transactions per second",
        value: |p| p.tps_median,
        range: Some(|p| (p.tps_min, p.tps_max)),
    };
    const NOPM: Metric = Metric {
        name: "NOPM",
        axis: "New-Orders per minute",
        value: |p| p.metrics.get("nopm").map_or(0.0, |f| f.median),
        range: Some(|p| p.metrics.get("nopm").map_or((0.0, 0.0), |f| (f.min, f.max))),
    };
    const P50: Metric = Metric {
        name: "p50",
        axis: "p50 latency (ms)",
        value: |p| p.p50_ms,
        range: None,
    };
    const P95: Metric = Metric {
        name: "p95",
        axis: "p95 latency (ms)",
        value: |p| p.p95_ms,
        range: None,
    };
    const P99: Metric = Metric {
        name: "p99",
        axis: "p99 latency (ms)",
        value: |p| p.p99_ms,
        range: None,
    };

    fn top(&self, p: &PointSummary) -> f64 {
        match self.range {
            Some(range) => range(p).1.max((self.value)(p)),
            None => (self.value)(p),
        }
    }
}

/// One chart of a metric against clients: one `<g class="series">` per engine/profile.
fn curve_chart(
    points: &[&PointSummary],
    styles: &Styles,
    metric: &Metric,
    size: (f64, f64),
) -> String {
    let mut clients: Vec<u32> = points.iter().map(|p| p.clients.max(1)).collect();
    clients.sort_unstable();
    clients.dedup();
    let top = points.iter().map(|p| metric.top(p)).fold(0.0, f64::max);
    let yticks = nice_ticks(top);
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
            log2: true,
        },
        y: Axis {
            min: 0.0,
            max: *yticks.last().unwrap_or(&1.0),
            log2: false,
        },
    };
    let xticks: Vec<(f64, String)> = clients.iter().map(|c| (*c as f64, c.to_string())).collect();
    let ylabels: Vec<(f64, String)> = match metric.range {
        Some(_) => ticks_of(&yticks),
        None => yticks.iter().map(|v| (*v, sig_tick(*v))).collect(),
    };
    let mut out = frame.open(&xticks, &ylabels, "clients", metric.axis);
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
                frame.py((metric.value)(p)),
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
    if let Some(range) = metric.range {
        let (lo, hi) = range(p);
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
            a run is left out.</p>";
    w!(
        out,
        "<ul class=\"key\"><li><span class=\"swatch warm\"></span>warm-up (not measured)</li>\
         <li><svg width=\"16\" height=\"16\"><path d=\"M8 1V15\" stroke=\"{CHECKPOINT}\" stroke-width=\"2\"/></svg>checkpoint</li>\
         <li><svg width=\"16\" height=\"16\"><path d=\"M8 1V15\" stroke=\"{AUTOVACUUM}\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/></svg>autovacuum / autoanalyze</li></ul>"
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
    let mut out = format!(
        "<figure class=\"timeline\" data-series=\"{}\"><figcaption><span class=\"dot\" style=\"background:{}\"></span>{} \
         <span class=\"muted\">repeat {}</span></figcaption><div class=\"events\">{} checkpoint{} &middot; {} autovacuum{}</div>",
        esc(&t.series()),
        style.color,
        series_label(&t.series(), unsafe_profile),
        t.repeat,
        checkpoints,
        plural(checkpoints as usize),
        vacuums,
        plural(vacuums as usize)
    );
    if t.seconds.is_empty() {
        out += "<p class=\"empty\">No seconds recorded.</p></figure>";
        return out;
    }
    out += &timeline_chart(t, &style, top);
    out += "</figure>";
    out
}

fn timeline_chart(t: &Timeline, style: &Style, top: f64) -> String {
    let first = t.seconds.iter().map(|s| s.t).min().unwrap_or(0) as f64;
    let last = t.seconds.iter().map(|s| s.t).max().unwrap_or(0) as f64 + 1.0;
    let yticks = nice_ticks(top);
    let frame = Frame {
        w: 400.0,
        h: 190.0,
        left: 52.0,
        right: 10.0,
        top: 10.0,
        bottom: 40.0,
        pad: 0.0,
        x: Axis {
            min: first,
            max: last,
            log2: false,
        },
        y: Axis {
            min: 0.0,
            max: *yticks.last().unwrap_or(&1.0),
            log2: false,
        },
    };
    let xticks: Vec<f64> = nice_ticks(last - first)
        .into_iter()
        .map(|v| v + first)
        .filter(|v| *v <= last)
        .collect();
    let mut out = frame.open(&ticks_of(&xticks), &ticks_of(&yticks), "seconds", "tps");
    out += &warmup_shading(t, &frame);
    out += &event_lines(t, &frame);
    let xy: Vec<(f64, f64)> = t
        .seconds
        .iter()
        .map(|s| (frame.px(s.t as f64 + 0.5), frame.py(s.tps)))
        .collect();
    let solid = Style { dash: "", ..*style };
    w!(
        out,
        "<g class=\"series\" data-series=\"{}\">{}</g>",
        esc(&t.series()),
        line_svg(&xy, &solid)
    );
    out += "</svg>";
    out
}

fn warmup_shading(t: &Timeline, frame: &Frame) -> String {
    let mut out = String::new();
    let (y0, y1) = (frame.top, frame.h - frame.bottom);
    for s in t.seconds.iter().filter(|s| s.warmup) {
        let (xa, xb) = (frame.px(s.t as f64), frame.px(s.t as f64 + 1.0));
        w!(
            out,
            "<rect class=\"warmup\" x=\"{xa:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>warm-up second {}</title></rect>",
            (xb - xa) + 0.3,
            y1 - y0,
            s.t
        );
    }
    out
}

fn event_lines(t: &Timeline, frame: &Frame) -> String {
    let mut out = String::new();
    let (y0, y1) = (frame.top, frame.h - frame.bottom);
    for s in &t.seconds {
        let x = frame.px(s.t as f64 + 0.5);
        if s.checkpoints > 0 {
            w!(
                out,
                "<line class=\"checkpoint\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\" stroke=\"{CHECKPOINT}\" stroke-width=\"2\"><title>{} checkpoint{} in second {}</title></line>",
                s.checkpoints,
                plural(s.checkpoints as usize),
                s.t
            );
        }
        if s.autovacuums > 0 {
            w!(
                out,
                "<line class=\"autovacuum\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\" stroke=\"{AUTOVACUUM}\" stroke-width=\"2\" stroke-dasharray=\"3 2\"><title>{} autovacuum run{} in second {}</title></line>",
                s.autovacuums,
                plural(s.autovacuums as usize),
                s.t
            );
        }
    }
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
         <th class=\"num\">errors</th><th>flags</th></tr></thead><tbody>",
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
        for t in &p.types {
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
         <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num{}\">{}</td><td>{}</td></tr>",
        if new_group { " class=\"group\"" } else { "" },
        esc(&p.engine),
        esc(&p.profile_label()),
        esc(&p.isolation),
        esc(&p.workload),
        esc(&p.variant),
        p.clients,
        sig3(p.p95_ms),
        sig3(p.p99_ms),
        p.first_ms.map_or("&mdash;".to_string(), sig3),
        if p.errors > 0 { " bad" } else { "" },
        p.errors,
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

const STYLE: &str = include_str!("html/report.css");

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
            // One throughput chart and three latency charts, plus its timelines.
            let timelines = data
                .timelines
                .iter()
                .filter(|t| t.series() == series)
                .count();
            assert_eq!(count(&page, &g), 4 + timelines, "{series}");
            assert!(page.contains(&format!("<li data-legend=\"{series}\">")));
        }
        assert!(page.contains("mariadb/fast <span class=\"unsafe-label\">(unsafe)</span>"));
        assert_eq!(count(&page, "<g class=\"point unstable\">"), 4);
        assert_eq!(count(&page, "<g class=\"point client-bound\">"), 4);
    }

    #[test]
    fn timelines_mark_checkpoints_autovacuums_and_warmup() {
        let page = html(&sample());
        assert_eq!(count(&page, "<line class=\"checkpoint\""), 2);
        assert_eq!(count(&page, "<line class=\"autovacuum\""), 1);
        assert_eq!(count(&page, "<rect class=\"warmup\""), 2);
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
        assert_eq!(count(&page, "data-series=\"postgres/default\">"), 4);
    }
}
