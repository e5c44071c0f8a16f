//! The markdown report: the tables of the HTML report (all points, per type, statements,
//! resources, settings side by side) as GitHub-flavoured markdown, to paste into an issue or a
//! wiki page.

use std::fmt::Write;

use super::data::{
    FASTEST_RULE, ONE_REPEAT, PointSummary, ReportData, ResourceRow, SettingsTable, Timeline, sig3,
    tps_text,
};
use super::{human_bytes, statements};
use crate::metrics::statements::Statements;

/// `write!` into a String, which cannot fail.
macro_rules! w {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
    }};
}

/// The whole report.
pub fn markdown(data: &ReportData) -> String {
    let title = if data.title.trim().is_empty() {
        "dbduel report"
    } else {
        data.title.as_str()
    };
    let mut out = format!("# {}\n\n", cell(title));
    if !data.generated_at.is_empty() {
        w!(out, "Generated {}.\n\n", cell(&data.generated_at));
    }
    out += &host(data);
    if let Some(note) = data.plans_note() {
        w!(out, "{}\n\n", cell(&note));
    }
    out += "## All points\n\n";
    if data.points.is_empty() {
        out += "No points were measured.\n\n";
    } else {
        out += &comparison(data);
        out += &types(data);
        out += &statement_latencies(data);
        out += &profile_comparisons(data);
        out += &sides(data);
        out += &counters(data);
        out += "## Resources\n\n";
        out += &resources(&data.resources());
    }
    out += &server_statements(&data.timelines);
    out += &phases(&data.timelines);
    out += "## Settings\n\n";
    out += &settings(&data.settings_tables());
    out
}

/// The counters that moved most, a row per point that has them (nothing where none has).
fn counters(data: &ReportData) -> String {
    let row = |p: &PointSummary| {
        let (label, listed) = (p.counters_label(), p.counters_listed("; ", cell));
        format!("| {} | {listed} |\n", cell(&label))
    };
    let Some(rows) = data.counters_rows(row) else {
        return String::new();
    };
    format!(
        "## The counters that moved most\n\nThe server's counters over the first repeat's measured run: {}; {}.\n\n| point | counters |\n|---|---|\n{rows}\n",
        super::data::COUNTERS_RULE,
        super::data::COUNTERS_EMBEDDED
    )
}

/// Text made safe inside a table cell: no pipe, no line break, no HTML, no emphasis markers.
/// An underscore inside a word (innodb_buffer_pool_size) is left alone: GitHub does not read
/// it as emphasis, and the text stays readable before it is rendered.
pub fn cell(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let word = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(|c| c.is_alphanumeric())
    };
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '_' if word(i.checked_sub(1)) && word(Some(i + 1)) => out.push(c),
            '|' => out.push_str("\\|"),
            '\\' | '*' | '_' | '`' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A comparison's verdict, with what to run when the noise is unknown.
pub fn verdict_text(c: &super::data::ProfileComparison) -> String {
    match &c.note {
        Some(note) => format!("{} ({note})", c.verdict),
        None => c.verdict.clone(),
    }
}

/// Profiles against their engine's first profile: does the difference exceed the noise?
fn profile_comparisons(data: &ReportData) -> String {
    if data.comparisons.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## Profiles against the baseline\n\n| engine | workload | variant | clients | profile | against | tps ratio (means) | verdict |\n|---|---|---|--:|---|---|--:|---|\n",
    );
    for c in &data.comparisons {
        w!(
            out,
            "| {} | {} | {} | {} | {} | {} | {:.2}x | {} |\n",
            cell(&c.engine),
            cell(&c.workload),
            cell(&c.variant),
            c.clients,
            cell(&super::data::with_plan(&c.profile, &c.plan)),
            cell(&c.baseline),
            c.ratio,
            cell(&verdict_text(c))
        );
    }
    w!(out, "\n{}\n\n", super::compare::NOISE_RULE);
    out
}

/// Each side of a CH-benCHmark mix against itself alone: what the other side cost it.
fn sides(data: &ReportData) -> String {
    if data.sides.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## CH-benCHmark: each side in the mix against itself alone\n\n| engine | profile | clients | figure | alone | in the mix | change [interval] | verdict |\n|---|---|--:|---|--:|--:|--:|---|\n",
    );
    for c in &data.sides {
        w!(
            out,
            "| {} | {} | {}{} | {} | {:.1} | {:.1} | {} | {} |\n",
            cell(&c.engine),
            cell(&super::data::with_plan(&c.profile, &c.plan)),
            c.clients,
            if c.cold { " cold" } else { "" },
            cell(&c.what()),
            c.alone,
            c.mix,
            cell(&c.change()),
            cell(&c.verdict_text())
        );
    }
    w!(out, "\n{}\n\n", cell(super::sides::SIDES_RULE));
    out
}

fn host(data: &ReportData) -> String {
    if data.host.is_empty() {
        return String::new();
    }
    let mut out = String::from("| host | |\n|---|---|\n");
    for (k, v) in &data.host {
        w!(out, "| {} | {} |\n", cell(k), cell(v));
    }
    out + "\n"
}

/// The note on the plans, then the table of every point: what `sweep` and `duel` print.
pub fn points_table(data: &ReportData) -> String {
    let mut out = String::new();
    if let Some(note) = data.plans_note() {
        w!(out, "{}\n\n", cell(&note));
    }
    if data.points.is_empty() {
        out += "No points were measured.\n";
    } else {
        out += &comparison(data);
    }
    out
}

fn comparison(data: &ReportData) -> String {
    let ranked = data.ranks_by_headline();
    let mut out = format!(
        "| engine | profile | isolation | workload | variant | clients |{} tps median [min–max] | CV | p95 ms | p99 ms | first ms | errors | limited by | flags |\n\
         |---|---|---|---|---|--:|{}--:|--:|--:|--:|--:|--:|---|---|\n",
        if ranked { " ranked by (median) |" } else { "" },
        if ranked { "--:|" } else { "" },
    );
    // Warnings are long: the table names them by number, and they follow it.
    let mut notes: Vec<String> = Vec::new();
    for p in data.comparison() {
        let mut numbers = Vec::new();
        for w in &p.warnings {
            let text = format!(
                "{}, {} {}, {} client{}: {}",
                p.series(),
                p.workload,
                p.variant,
                p.clients,
                if p.clients == 1 { "" } else { "s" },
                w
            );
            notes.push(text);
            numbers.push(notes.len().to_string());
        }
        let rank = ranked.then(|| (data.ranking_figure(p), data.ranking_value(p)));
        out += &comparison_row(p, data.is_fastest(p), rank, &numbers);
    }
    w!(out, "\n{FASTEST_RULE} {ONE_REPEAT}\n\n");
    if !notes.is_empty() {
        out += "Warnings:\n\n";
        for (i, n) in notes.iter().enumerate() {
            w!(out, "{}. {}\n", i + 1, cell(n));
        }
        out += "\n";
    }
    out
}

/// Per point with several transaction types (TPC-C's five): its own figures, then each type.
fn types(data: &ReportData) -> String {
    let points = data.typed_points();
    if points.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## Per transaction type\n\nMedians over the repeats; rollbacks, retries and errors summed.\n\n",
    );
    for p in points {
        w!(
            out,
            "**{}{} · {} {} · {} clients**",
            cell(&p.series()),
            if p.unsafe_profile { " (unsafe)" } else { "" },
            cell(&p.workload),
            cell(&p.variant),
            p.clients
        );
        for (name, f) in p.card_figures() {
            w!(
                out,
                " · {} {} [{}–{}]",
                cell(name),
                tps_text(f.median),
                tps_text(f.min),
                tps_text(f.max)
            );
        }
        out += "\n\n";
        if p.types.is_empty() && p.connect.is_none() {
            continue;
        }
        out += "| type | tps | p50 ms | p95 ms | p99 ms | rollbacks | retries | errors |\n|---|--:|--:|--:|--:|--:|--:|--:|\n";
        for t in super::data::TypeFigures::rows(p) {
            let (p95, p99) = t
                .tail()
                .map_or(("—".into(), "—".into()), |(a, b)| (sig3(a), sig3(b)));
            let rows = p
                .rows_of(&t.name)
                .map(|r| format!(" ({r:.0} rows)"))
                .unwrap_or_default();
            w!(
                out,
                "| {}{rows} | {} | {} | {p95} | {p99} | {} | {} | {} |\n",
                cell(&t.name),
                tps_text(t.tps),
                sig3(t.p50_ms),
                t.rollbacks,
                t.retries,
                t.errors
            );
        }
        out += "\n";
    }
    out
}

/// Per point that timed its statements: each one, the longest in total first.
fn statement_latencies(data: &ReportData) -> String {
    use super::statement_latencies::{REPORT_HEADER, report_row};
    let points = data.statement_points();
    if points.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## Statement latencies, timed on the client\n\nTimed on the client, one by one; medians over the repeats, failures and retries summed; share is of the transactions' time.\n\n",
    );
    for p in points {
        w!(
            out,
            "**{} · {} {} · {} clients**\n\n| {} |\n|---|---|{}\n",
            cell(&p.series()),
            cell(&p.workload),
            cell(&p.variant),
            p.clients,
            REPORT_HEADER.join(" | "),
            "--:|".repeat(REPORT_HEADER.len() - 2)
        );
        for s in &p.statement_latencies {
            let cells: Vec<String> = report_row(s).iter().map(|c| cell(c)).collect();
            w!(out, "| {} |\n", cells.join(" | "));
        }
        out += "\n";
    }
    out
}

/// One point's row; `notes`: the numbers of its warnings, listed under the table.
fn comparison_row(
    p: &PointSummary,
    fastest: bool,
    rank: Option<(&str, f64)>,
    notes: &[String],
) -> String {
    let bold = |text: String, on: bool| if on { format!("**{text}**") } else { text };
    let tps = bold(tps_text(p.tps_median), fastest && rank.is_none());
    let ranked = rank.map_or(String::new(), |(name, value)| {
        format!(" {} {} |", name, bold(tps_text(value), fastest))
    });
    let mut flags: Vec<String> = p
        .flags()
        .into_iter()
        .map(|f| match f {
            "unstable" => format!("unstable ({})", cell(&p.unstable.join("; "))),
            "UNSAFE" | "not durable" => cell(&p.durability.text()),
            f => f.to_string(),
        })
        .collect();
    if !notes.is_empty() {
        flags.push(format!("warnings {}", notes.join(", ")));
    }
    let (range, cv) = p.spread().map_or((String::new(), "—".into()), |(r, cv)| {
        (format!(" [{r}]"), cv)
    });
    format!(
        "| {} | {} | {} | {} | {} | {} |{ranked} {tps}{range} | {cv} | {} | {} | {} | {} | {} | {} |\n",
        cell(&p.engine),
        cell(&p.profile_label()),
        cell(&p.isolation),
        cell(&p.workload),
        cell(&p.variant),
        p.clients_text(),
        sig3(p.p95_ms),
        sig3(p.p99_ms),
        p.first_ms.map_or("—".to_string(), sig3),
        p.errors,
        cell(&p.limited_by),
        flags.join(", ")
    )
}

fn series_label(series: &str, unsafe_profile: bool) -> String {
    if unsafe_profile {
        format!("{} (unsafe)", cell(series))
    } else {
        cell(series)
    }
}

fn resources(rows: &[ResourceRow]) -> String {
    let mut out = String::from(
        "| engine/profile | workload | server memory (peak RSS) | server CPU per transaction | database size |\n\
         |---|---|--:|--:|--:|\n",
    );
    for r in rows {
        let cpu = r
            .cpu_per_tx_us
            .map(|(med, lo, hi)| format!("{} µs [{}–{}]", sig3(med), sig3(lo), sig3(hi)))
            .unwrap_or_else(|| "—".into());
        w!(
            out,
            "| {} | {} · {} | {} | {cpu} | {} |\n",
            series_label(&r.series, r.unsafe_profile),
            cell(&r.workload),
            cell(&r.variant),
            r.peak_rss_bytes
                .map(human_bytes)
                .unwrap_or_else(|| "—".into()),
            r.database_size_bytes
                .map(human_bytes)
                .unwrap_or_else(|| "—".into())
        );
    }
    out + "\nCPU per transaction: median over the client counts, range in brackets.\n\n"
}

fn settings(tables: &[SettingsTable]) -> String {
    if tables.is_empty() {
        return "No settings were recorded.\n".into();
    }
    let mut out = String::new();
    for table in tables {
        out += &settings_table(table);
    }
    out + "Bold: the setting differs between profiles.\n"
}

fn settings_table(table: &SettingsTable) -> String {
    let mut out = format!("### {}\n\n| setting |", cell(&table.engine));
    for (profile, unsafe_profile) in &table.columns {
        let series = format!("{}/{profile}", table.engine);
        w!(out, " {} |", series_label(&series, *unsafe_profile));
    }
    out += "\n|---|";
    out += &"---|".repeat(table.columns.len());
    out += "\n";
    for row in &table.rows {
        let name = if row.differs {
            format!("**{}**", cell(&row.name))
        } else {
            cell(&row.name)
        };
        w!(out, "| {name} |");
        for v in &row.values {
            match v {
                Some(v) if row.differs && !v.is_empty() => w!(out, " **{}** |", cell(v)),
                Some(v) => w!(out, " {} |", cell(v)),
                None => out += " — |",
            }
        }
        out += "\n";
    }
    out + "\n"
}

/// The server's statements (`report::statements`): a table per run that has figures, a line
/// per run without.
/// Each run whose load changed shape: its phases' own figures.
fn phases(timelines: &[Timeline]) -> String {
    use crate::metrics::phases::{HEADER, cells};
    let runs: Vec<&Timeline> = timelines.iter().filter(|t| !t.phases.is_empty()).collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Phases\n\n");
    for t in runs {
        let _ = writeln!(out, "### {}\n", cell(&statements::run_label(t)));
        let _ = writeln!(out, "| {} |", HEADER.join(" | "));
        let aligns: Vec<&str> = HEADER
            .iter()
            .map(|h| {
                if matches!(*h, "phase" | "load" | "recovery") {
                    "---"
                } else {
                    "--:"
                }
            })
            .collect();
        let _ = writeln!(out, "|{}|", aligns.join("|"));
        for p in &t.phases {
            let row: Vec<String> = cells(p).iter().map(|c| cell(c)).collect();
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out.push('\n');
    }
    out
}

fn server_statements(timelines: &[Timeline]) -> String {
    let runs: Vec<(&Timeline, &Statements)> = timelines
        .iter()
        .filter_map(|t| Some((t, t.statements.as_ref()?)))
        .collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut out = format!("## Where the time went\n\n{}\n\n", statements::ABOUT);
    for (t, st) in runs {
        let _ = writeln!(
            out,
            "### {}\n\n{}\n",
            cell(&statements::run_label(t)),
            cell(&statements::headline(st))
        );
        if st.top.is_empty() {
            continue;
        }
        let _ = writeln!(out, "| {} |", statements::HEADER.join(" | "));
        let aligns: Vec<&str> = (0..statements::HEADER.len())
            .map(|i| {
                if i < statements::NUMERIC {
                    "--:"
                } else {
                    "---"
                }
            })
            .collect();
        let _ = writeln!(out, "|{}|", aligns.join("|"));
        for s in st.top.iter().chain(&st.rest) {
            let row: Vec<String> = statements::cells(s).iter().map(|c| cell(c)).collect();
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::{CounterFigure, sample};

    /// Cells of a table row: pipes not escaped by a backslash.
    fn cells(line: &str) -> usize {
        let bytes = line.as_bytes();
        (0..bytes.len())
            .filter(|&i| bytes[i] == b'|' && (i == 0 || bytes[i - 1] != b'\\'))
            .count()
            - 1
    }

    #[test]
    fn the_counters_that_moved_most_per_point() {
        let mut data = sample();
        assert!(!markdown(&data).contains("moved most"));
        data.points[0].counters = vec![
            CounterFigure {
                name: "v.commits".into(),
                figure: "1.00 /tx".into(),
            },
            CounterFigure {
                name: "v.<rare>".into(),
                figure: "0.050 /tx".into(),
            },
        ];
        let md = markdown(&data);
        let label = cell(&data.points[0].counters_label());
        assert!(
            md.contains(&format!(
                "| {label} | v.commits 1.00 /tx; v.&lt;rare&gt; 0.050 /tx |"
            )),
            "{md}"
        );
    }

    #[test]
    fn every_point_and_series_is_listed() {
        let mut data = sample();
        data.points[0].limited_by = "lock".into();
        let md = markdown(&data);
        assert!(md.contains(" | lock | "), "the limited-by column");
        for p in &data.points {
            let row = format!(
                "| {} | {} | {} | tpcb | tpcb-like | {} |",
                p.engine, p.profile, p.isolation, p.clients
            );
            assert_eq!(md.matches(&row).count(), 1, "{row}");
        }
        for series in data.series() {
            assert!(md.contains(&format!("| {series}")), "{series}");
        }
        assert!(md.contains("| mariadb/fast (unsafe) |"));
        assert!(md.contains("client-bound, not durable: flush off"));
        assert!(md.contains("**shared_buffers** | **128MB** | **4GB** |"));
        assert_eq!(
            cell("_x_ a_b *c* [d](e) `f`"),
            "\\_x\\_ a_b \\*c\\* \\[d\\](e) \\`f\\`"
        );
    }

    #[test]
    fn tables_keep_their_shape_and_text_is_escaped() {
        let md = markdown(&sample());
        let mut columns = None;
        for line in md.lines() {
            if line.starts_with('|') {
                columns = columns.or(Some(cells(line)));
                assert_eq!(Some(cells(line)), columns, "{line}");
            } else {
                columns = None;
            }
        }
        assert!(!md.contains("<script>"));
        assert!(md.contains("&lt;script&gt;alert(\"x\")&lt;/script&gt; a\\|b"));
        assert!(md.starts_with("# Sample &amp; &lt;test&gt;\n"));
        // The sample's phases, a name with markup in it escaped.
        assert!(md.contains("## Phases"), "{md}");
        assert!(
            md.contains("| spike &lt;x10&gt; | 6.0 | rate 10000/s (poisson) |"),
            "{md}"
        );
    }

    #[test]
    fn the_sides_of_a_ch_mix_and_their_rule() {
        let md = markdown(&sample());
        assert!(md.contains("## CH-benCHmark: each side in the mix against itself alone"));
        assert!(
            md.contains("| postgres | default | 4 | terminals' NOPM | 1000.0 | 700.0 | -30.0% \\[-33.5..-26.1\\] | slower in the mix |"),
            "{md}"
        );
        assert!(md.contains("slower in the mix only when the whole interval is below 0"));
    }

    #[test]
    fn empty_data_says_so() {
        let md = markdown(&ReportData::default());
        assert!(md.contains("No points were measured."));
        assert!(md.contains("No settings were recorded."));
        assert!(!md.contains('|'));
    }
}
