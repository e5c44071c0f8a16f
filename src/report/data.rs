//! What a report shows, independent of its format: points summarised over their repeats, per-second
//! timelines with server events, and the settings of each profile. Built from the results store
//! (stored.rs); rendered by html/ and markdown.rs.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::durability::{Durability, Level};

/// What a table says of a spread it does not show.
pub const ONE_REPEAT: &str =
    "A point of one repeat has no spread (—): repeats give one (`repeats = 3` in a plan).";

/// The rule `is_fastest` follows, as every report states it under its table.
pub const FASTEST_RULE: &str = "Bold: in each group of points of the same workload, variant and clients, the best median of the group's ranking figure (the workload's own: TPC-C NOPM, TPC-H QphH@Size or Power@Size; tps otherwise), among the points whose settings read back are durable (every commit survives a crash of the server, the system or the power). A point flagged UNSAFE or not durable, or whose durability is unknown, is never bold; where no point of a group is durable, none is.";

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReportData {
    pub title: String,
    pub generated_at: String,
    /// Host facts of the runs (cores, RAM, kernel...), as key -> value.
    pub host: BTreeMap<String, String>,
    pub points: Vec<PointSummary>,
    pub timelines: Vec<Timeline>,
    /// The plans whose runs the report covers, in order of first run. With more than one,
    /// every point and timeline names its plan and points of different plans stay apart.
    pub plans: Vec<String>,
    pub profiles: Vec<ProfileSettings>,
    /// Each profile against the first profile of its engine, point by point.
    pub comparisons: Vec<ProfileComparison>,
    /// Each side of a CH-benCHmark mix against itself alone (`report::sides`).
    pub sides: Vec<super::sides::SideCost>,
}

/// A profile's repeats against the baseline profile's at the same point.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProfileComparison {
    /// The plan of both points; empty when the report covers one plan.
    pub plan: String,
    pub engine: String,
    pub workload: String,
    pub variant: String,
    pub clients: u32,
    pub baseline: String,
    pub profile: String,
    /// Mean tps of the profile over the baseline's (over their repeats).
    pub ratio: f64,
    /// `compare`'s verdict on tps: "faster", "slower", "no difference beyond the noise" or
    /// "noise unknown" (see `compare::NOISE_RULE`).
    pub verdict: String,
    /// Why the noise is unknown, and what to run.
    pub note: Option<String>,
}

/// Where a series peaks over its client counts (seed 001's and 004's curves): the client count
/// of its highest median tps, and what it makes at its most clients. Facts, not a verdict: the
/// repeats' spread is on the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    pub series: String,
    pub clients: u32,
    pub tps: f64,
    pub most_clients: u32,
    pub tps_at_most: f64,
}

impl Peak {
    /// "postgres/tuned peaks at 64 clients (12,345 tps); at 1024 clients 8,000 tps (-35%)".
    pub fn said(&self) -> String {
        let mut out = format!(
            "{} peaks at {} client{} ({} tps)",
            self.series,
            self.clients,
            if self.clients == 1 { "" } else { "s" },
            tps_text(self.tps)
        );
        if self.most_clients != self.clients {
            out += &format!(
                "; at {} clients {} tps ({:+.0}%)",
                self.most_clients,
                tps_text(self.tps_at_most),
                (self.tps_at_most / self.tps - 1.0) * 100.0
            );
        }
        out
    }
}

/// Each series' peak, for points of one workload and variant measured at three client counts
/// or more (fewer make no curve); in the order the series first appear.
pub fn peaks(points: &[&PointSummary]) -> Vec<Peak> {
    let mut out: Vec<Peak> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for p in points {
        if !names.contains(&p.series()) {
            names.push(p.series());
        }
    }
    for name in names {
        let mine: Vec<&&PointSummary> = points.iter().filter(|p| p.series() == name).collect();
        if mine.len() < 3 {
            continue;
        }
        let (Some(best), Some(most)) = (
            mine.iter()
                .max_by(|a, b| a.tps_median.total_cmp(&b.tps_median)),
            mine.iter().max_by_key(|p| p.clients),
        ) else {
            continue;
        };
        if best.tps_median <= 0.0 {
            continue;
        }
        out.push(Peak {
            series: name,
            clients: best.clients,
            tps: best.tps_median,
            most_clients: most.clients,
            tps_at_most: most.tps_median,
        });
    }
    out
}

/// One (engine, profile, workload, variant, clients) point, over its repeats.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PointSummary {
    /// The plan the point was measured under; empty when the report covers one plan.
    pub plan: String,
    pub engine: String,
    pub profile: String,
    /// The profile turns durability off (fsync, flush at commit): its numbers are labelled unsafe.
    pub unsafe_profile: bool,
    /// What the settings read back promise for commits: the weakest over the repeats. Only
    /// durable points are ranked.
    pub durability: Durability,
    /// The isolation level the point's transactions ran at (engine.isolation of its runs;
    /// joined with "/" if repeats differ), empty for results stored before it was recorded.
    pub isolation: String,
    pub workload: String,
    pub variant: String,
    pub clients: u32,
    /// The clients that ran, where fewer than `clients` did (CH's side alone, filed under the
    /// mix's clients; a workload that sets its own clients, as TPC-H's streams, is not told).
    pub clients_ran: Option<u32>,
    pub repeats: u32,
    pub tps_median: f64,
    pub tps_min: f64,
    pub tps_max: f64,
    /// Coefficient of variation of tps over the repeats, as a fraction (0.05 is 5%; 0 with one
    /// repeat).
    pub tps_cv: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// The first transaction's latency (median over repeats): the cold-cache query time after
    /// a cold start.
    pub first_ms: Option<f64>,
    pub errors: u64,
    pub client_bound: bool,
    /// What limited the point (`metrics::waits::verdict`): its repeats' limiter, or each
    /// limiter with its count when they differ; the first repeat's sentence. Empty for runs
    /// stored before verdicts were recorded.
    pub limited_by: String,
    pub limited_by_says: String,
    /// The server's counters that moved most in the first repeat (`report::counters`).
    pub counters: Vec<CounterFigure>,
    /// A sweep's managed server exited during one of its runs and was started again.
    pub server_restarted: bool,
    /// Why the point is unstable (empty when it is not): repeats spread, throughput collapses.
    pub unstable: Vec<String>,
    pub cold: bool,
    /// What the server's observation missed in its repeats (the wait sampler's samples, the
    /// counters' readings: the server answered slower than asked), in sentences; empty when
    /// nothing was missed.
    #[serde(default)]
    pub missed: Vec<String>,
    /// Peak resident memory of the server's processes during the runs.
    pub server_rss_bytes: Option<u64>,
    /// Server CPU time per transaction, microseconds.
    pub server_cpu_per_tx_us: Option<f64>,
    pub database_size_bytes: Option<u64>,
    pub warnings: Vec<String>,
    /// The workload's own figures over the repeats (TPC-C: nopm, tpmC), by name.
    pub metrics: BTreeMap<String, Figure>,
    /// Each transaction type over the repeats, for workloads with more than one (TPC-C's five).
    pub types: Vec<TypeFigures>,
    /// The connections' row beside the types (`stored::connect_row`), for a point whose
    /// clients opened more than their first connections (-C, lifetimes, lost ones, idle ones).
    pub connect: Option<TypeFigures>,
    /// Each statement timed on the client, over the repeats, the longest in total first (none
    /// when timing was off).
    pub statement_latencies: Vec<super::statement_latencies::StatementFigures>,
}

/// One of the server's counters as a report shows it: its name and figure.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CounterFigure {
    pub name: String,
    pub figure: String,
}

/// The rule the counters that moved most follow, as the summary and the reports state it
/// (`metrics::counters::moved_most`).
/// What the counters' tables show for an embedded engine, as the reports state it.
pub const COUNTERS_EMBEDDED: &str = "an embedded engine (SQLite) has no server: its connections' own counts instead, the clients' time waiting for the lock and in COMMIT, then the page cache, lock waits and checkpoints";
pub const COUNTERS_RULE: &str = "the headline counters first, then the others by the share of their count the measured run made; per transaction (gauges: mean and max)";

/// A figure over a point's repeats.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Figure {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// One transaction type of a point, over its repeats: medians of the rates and latencies,
/// sums of the counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TypeFigures {
    pub name: String,
    pub tps: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
    pub retries: u64,
    pub rollbacks: u64,
    /// Executions in the run that had most: one gives a latency, not percentiles.
    pub executions: u64,
}

impl PointSummary {
    /// The point's clients as the tables show them: "4", or "4 (3 ran)".
    pub fn clients_text(&self) -> String {
        match self.clients_ran {
            Some(ran) => format!("{} ({ran} ran)", self.clients),
            None => self.clients.to_string(),
        }
    }

    /// The point in words for the counters' table: engine, profile, workload, clients.
    pub fn counters_label(&self) -> String {
        let profile = if self.profile.is_empty() {
            String::new()
        } else {
            format!(" {}", self.profile)
        };
        format!(
            "{}{profile}, {} {}, {} clients",
            self.engine, self.workload, self.variant, self.clients
        )
    }

    /// Its counters, each name and figure made safe by `esc`, joined by `sep`.
    pub fn counters_listed(&self, sep: &str, esc: impl Fn(&str) -> String) -> String {
        self.counters
            .iter()
            .map(|c| format!("{} {}", esc(&c.name), esc(&c.figure)))
            .collect::<Vec<_>>()
            .join(sep)
    }

    /// The spread of tps over the repeats: the range and the CV in percent, as text; None
    /// with a single repeat, whose spread was never measured.
    pub fn spread(&self) -> Option<(String, String)> {
        (self.repeats >= 2).then(|| {
            (
                format!("{}–{}", tps_text(self.tps_min), tps_text(self.tps_max)),
                format!("{:.1}%", self.tps_cv * 100.0),
            )
        })
    }

    /// The rows a query type returned (TPC-H's "Qnn rows" figure of type "Qn").
    pub fn rows_of(&self, query: &str) -> Option<f64> {
        let number = query.strip_prefix('Q')?.parse::<u32>().ok()?;
        self.metrics
            .get(&format!("Q{number:02} rows"))
            .map(|f| f.median)
    }

    /// The workload's figures a card shows (row counts go with their query's row).
    pub fn card_figures(&self) -> impl Iterator<Item = (&String, &Figure)> {
        self.metrics
            .iter()
            .filter(|(name, _)| !name.ends_with(" rows"))
    }

    /// The curve this point belongs to: one per engine and profile (and plan, when the report
    /// covers several).
    pub fn series(&self) -> String {
        series(&self.engine, &self.profile, &self.plan)
    }

    /// The profile, followed by the plan when the report covers several.
    pub fn profile_label(&self) -> String {
        with_plan(&self.profile, &self.plan)
    }
}

/// `engine/profile`, followed by ` · plan` when the report covers several plans.
fn series(engine: &str, profile: &str, plan: &str) -> String {
    with_plan(&format!("{engine}/{profile}"), plan)
}

pub fn with_plan(text: &str, plan: &str) -> String {
    if plan.is_empty() {
        text.to_string()
    } else {
        format!("{text} · {plan}")
    }
}

/// One run's seconds, with the server events seen in each.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    /// The run's plan; empty when the report covers one plan.
    pub plan: String,
    pub engine: String,
    pub profile: String,
    pub workload: String,
    pub clients: u32,
    pub repeat: u32,
    pub seconds: Vec<Second>,
    /// Where the server's time went in this run, statement by statement (the result's
    /// `statements`); None in results without them.
    pub statements: Option<crate::metrics::statements::Statements>,
    /// An embedded engine's own evidence (the result's `embedded_waits`): where the clients'
    /// time went, by its connections' counts; None for a server.
    pub embedded: Option<crate::metrics::embedded::EmbeddedWaits>,
    /// The phases of a run whose load changed shape (the result's `phases`), marked on the
    /// timeline and tabled under it; empty otherwise.
    pub phases: Vec<crate::metrics::phases::PhaseResult>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Second {
    pub t: u32,
    pub warmup: bool,
    pub tps: f64,
    pub p99_ms: Option<f64>,
    /// Checkpoints that completed in this second (PostgreSQL; InnoDB where observable), or 1
    /// where the run's server counters say a checkpoint covered it.
    pub checkpoints: u32,
    /// Autovacuum and autoanalyze runs that completed in this second, or 1 where the
    /// counters say autovacuum covered it.
    pub autovacuums: u32,
    pub server_rss_bytes: Option<u64>,
    /// The run's sessions in this second, average active by wait class (the result's
    /// `waits.seconds`); empty where they were not sampled.
    pub sessions: BTreeMap<String, f64>,
    /// The server's headline counters in this second (the result's `server_counters.seconds`:
    /// cumulative ones as their change, gauges as read); empty where they were not read.
    pub counters: BTreeMap<String, f64>,
}

/// The settings in effect under one profile on one engine, as read back from the server.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProfileSettings {
    pub engine: String,
    pub profile: String,
    pub unsafe_profile: bool,
    pub settings: BTreeMap<String, String>,
    /// What those settings promise for commits.
    pub durability: Durability,
}

impl TypeFigures {
    /// The point's transaction types, then its connections' row when it has one.
    pub fn rows(p: &PointSummary) -> impl Iterator<Item = &TypeFigures> {
        p.types.iter().chain(p.connect.iter())
    }

    /// p95 and p99, or None for a single execution (a latency, not a distribution).
    pub fn tail(&self) -> Option<(f64, f64)> {
        (self.executions != 1).then_some((self.p95_ms, self.p99_ms))
    }
}

impl PointSummary {
    /// The point's flags as short words, in a fixed order: server restarted, client-bound,
    /// unstable, UNSAFE or not durable (from the settings read back), cold.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = Vec::new();
        if self.server_restarted {
            flags.push("server restarted");
        }
        if self.client_bound {
            flags.push("client-bound");
        }
        if !self.unstable.is_empty() {
            flags.push("unstable");
        }
        if matches!(self.durability.level, Level::Unsafe | Level::NotDurable) {
            flags.push(self.durability.word());
        }
        if self.cold {
            flags.push("cold");
        }
        if !self.missed.is_empty() {
            flags.push("samples missed");
        }
        flags
    }
}

impl Timeline {
    pub fn series(&self) -> String {
        series(&self.engine, &self.profile, &self.plan)
    }
}

impl ProfileSettings {
    pub fn series(&self) -> String {
        format!("{}/{}", self.engine, self.profile)
    }
}

/// One row of the resources table: one engine/profile on one workload variant.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRow {
    pub series: String,
    pub unsafe_profile: bool,
    pub workload: String,
    pub variant: String,
    /// Highest server peak RSS over the client counts.
    pub peak_rss_bytes: Option<u64>,
    /// Server CPU per transaction over the client counts: median, min, max (µs).
    pub cpu_per_tx_us: Option<(f64, f64, f64)>,
    /// Largest database size seen.
    pub database_size_bytes: Option<u64>,
}

/// The settings of one engine's profiles side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsTable {
    pub engine: String,
    /// (profile, unsafe) per column.
    pub columns: Vec<(String, bool)>,
    pub rows: Vec<SettingsRow>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SettingsRow {
    pub name: String,
    /// One value per column; None where that profile did not report the setting.
    pub values: Vec<Option<String>>,
    /// The values are not all the same.
    pub differs: bool,
}

/// Distinct values in order of first appearance.
fn distinct<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

impl ReportData {
    /// Each point that has the server's counters as a row made by `row`, joined; None where
    /// no point has them.
    pub fn counters_rows(&self, row: impl Fn(&PointSummary) -> String) -> Option<String> {
        let rows: String = self
            .points
            .iter()
            .filter(|p| !p.counters.is_empty())
            .map(row)
            .collect();
        (!rows.is_empty()).then_some(rows)
    }

    /// What a reader must know when the report covers several plans: their points are kept
    /// apart, each labelled with its plan.
    pub fn plans_note(&self) -> Option<String> {
        (self.plans.len() > 1).then(|| {
            format!(
                "This report covers {} plans ({}): points of different plans are kept apart, \
                 each labelled with its plan; give --plan NAME for one.",
                self.plans.len(),
                self.plans.join(", ")
            )
        })
    }

    /// Every series (engine/profile), in order of first appearance in points, timelines, profiles.
    pub fn series(&self) -> Vec<String> {
        let points = self.points.iter().map(PointSummary::series);
        let timelines = self.timelines.iter().map(Timeline::series);
        let profiles = self.profiles.iter().map(ProfileSettings::series);
        distinct(points.chain(timelines).chain(profiles))
    }

    /// Engines in order of first appearance.
    pub fn engines(&self) -> Vec<String> {
        let points = self.points.iter().map(|p| p.engine.clone());
        let timelines = self.timelines.iter().map(|t| t.engine.clone());
        let profiles = self.profiles.iter().map(|p| p.engine.clone());
        distinct(points.chain(timelines).chain(profiles))
    }

    /// Whether a series' profile is unsafe, from its points or its settings.
    pub fn is_unsafe(&self, series: &str) -> bool {
        let point = self
            .points
            .iter()
            .any(|p| p.unsafe_profile && p.series() == series);
        let profile = self
            .profiles
            .iter()
            .any(|p| p.unsafe_profile && p.series() == series);
        point || profile
    }

    /// The (workload, variant) pairs of the points, in order of first appearance.
    pub fn workloads(&self) -> Vec<(String, String)> {
        distinct(
            self.points
                .iter()
                .map(|p| (p.workload.clone(), p.variant.clone())),
        )
    }

    /// The points of one workload variant.
    pub fn points_of(&self, workload: &str, variant: &str) -> Vec<&PointSummary> {
        self.points
            .iter()
            .filter(|p| p.workload == workload && p.variant == variant)
            .collect()
    }

    /// Every point, grouped by workload variant, then client count, then series (each in
    /// order of first appearance): engines at the same concurrency sit next to each other.
    pub fn comparison(&self) -> Vec<&PointSummary> {
        let workloads = self.workloads();
        let series = self.series();
        let mut points: Vec<&PointSummary> = self.points.iter().collect();
        points.sort_by_key(|p| {
            let w = (p.workload.clone(), p.variant.clone());
            let wi = workloads.iter().position(|x| *x == w);
            let si = series.iter().position(|s| *s == p.series());
            (wi, p.clients, si)
        });
        points
    }

    /// The points with per-statement latencies, in the comparison's order.
    pub fn statement_points(&self) -> Vec<&PointSummary> {
        self.comparison()
            .into_iter()
            .filter(|p| !p.statement_latencies.is_empty())
            .collect()
    }

    /// The points with figures of their own or several transaction types (TPC-C), in the
    /// order of the comparison table.
    pub fn typed_points(&self) -> Vec<&PointSummary> {
        self.comparison()
            .into_iter()
            .filter(|p| !p.types.is_empty() || !p.metrics.is_empty() || p.connect.is_some())
            .collect()
    }

    /// The points measured alongside this one: same plan, workload, variant and clients.
    fn group_of(&self, point: &PointSummary) -> Vec<&PointSummary> {
        self.points
            .iter()
            .filter(|p| {
                p.plan == point.plan
                    && p.workload == point.workload
                    && p.variant == point.variant
                    && p.clients == point.clients
            })
            .collect()
    }

    /// The figure that ranks the point's group: the first of its workload's headline figures
    /// (TPC-C NOPM, TPC-H QphH@Size...) that every point of the group has, else tps.
    pub fn ranking_figure(&self, point: &PointSummary) -> &'static str {
        let group = self.group_of(point);
        crate::workload::headline(&point.workload)
            .iter()
            .copied()
            .find(|h| group.iter().all(|p| p.metrics.contains_key(*h)))
            .unwrap_or("tps")
    }

    /// Whether any point is ranked by a figure of its workload's rather than tps.
    pub fn ranks_by_headline(&self) -> bool {
        self.points.iter().any(|p| self.ranking_figure(p) != "tps")
    }

    /// The point's median of its group's ranking figure.
    pub fn ranking_value(&self, point: &PointSummary) -> f64 {
        match self.ranking_figure(point) {
            "tps" => point.tps_median,
            name => point.metrics.get(name).map_or(f64::NAN, |f| f.median),
        }
    }

    /// The rule behind every bold number: among the points of the same plan, workload,
    /// variant and clients, the best median of the workload's ranking figure, among the points
    /// whose settings read back are durable. A point that is not durable, or whose durability
    /// is unknown, is never bold; where no point is durable, none is.
    pub fn is_fastest(&self, point: &PointSummary) -> bool {
        if point.durability.level != Level::Durable {
            return false;
        }
        let best = self
            .group_of(point)
            .into_iter()
            .filter(|p| p.durability.level == Level::Durable)
            .map(|p| self.ranking_value(p))
            .filter(|v| v.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        self.ranking_value(point) >= best && best > 0.0
    }

    /// One row per engine/profile and workload variant, over its client counts.
    pub fn resources(&self) -> Vec<ResourceRow> {
        let keys = distinct(
            self.points
                .iter()
                .map(|p| (p.series(), p.workload.clone(), p.variant.clone())),
        );
        keys.into_iter()
            .map(|(series, workload, variant)| {
                let points: Vec<&PointSummary> = self
                    .points
                    .iter()
                    .filter(|p| {
                        p.series() == series && p.workload == workload && p.variant == variant
                    })
                    .collect();
                resource_row(series, workload, variant, &points)
            })
            .collect()
    }

    /// The settings of each engine's profiles, one table per engine.
    pub fn settings_tables(&self) -> Vec<SettingsTable> {
        let engines = distinct(self.profiles.iter().map(|p| p.engine.clone()));
        engines
            .into_iter()
            .map(|engine| {
                let profiles: Vec<&ProfileSettings> = self
                    .profiles
                    .iter()
                    .filter(|p| p.engine == engine)
                    .collect();
                settings_table(engine, &profiles)
            })
            .collect()
    }
}

fn resource_row(
    series: String,
    workload: String,
    variant: String,
    points: &[&PointSummary],
) -> ResourceRow {
    let cpu: Vec<f64> = points
        .iter()
        .filter_map(|p| p.server_cpu_per_tx_us)
        .collect();
    let cpu_per_tx_us = (!cpu.is_empty()).then(|| {
        let s = crate::stats::spread(&cpu);
        (s.median, s.min, s.max)
    });
    ResourceRow {
        series,
        unsafe_profile: points.iter().any(|p| p.unsafe_profile),
        workload,
        variant,
        peak_rss_bytes: points.iter().filter_map(|p| p.server_rss_bytes).max(),
        cpu_per_tx_us,
        database_size_bytes: points.iter().filter_map(|p| p.database_size_bytes).max(),
    }
}

fn settings_table(engine: String, profiles: &[&ProfileSettings]) -> SettingsTable {
    let mut names: Vec<&String> = profiles.iter().flat_map(|p| p.settings.keys()).collect();
    names.sort();
    names.dedup();
    // What the settings promise comes first: the row a reader must not miss.
    let durability: Vec<Option<String>> =
        profiles.iter().map(|p| Some(p.durability.text())).collect();
    let first = SettingsRow {
        name: "durability (judged from these settings)".into(),
        differs: durability.iter().any(|v| *v != durability[0]),
        values: durability,
    };
    let rows = std::iter::once(first)
        .chain(names.into_iter().map(|name| {
            let values: Vec<Option<String>> = profiles
                .iter()
                .map(|p| p.settings.get(name).cloned())
                .collect();
            let differs = values.iter().any(|v| *v != values[0]);
            SettingsRow {
                name: name.clone(),
                values,
                differs,
            }
        }))
        .collect();
    SettingsTable {
        engine,
        columns: profiles
            .iter()
            .map(|p| (p.profile.clone(), p.unsafe_profile))
            .collect(),
        rows,
    }
}

/// Transactions per second as people read them: 12,345 above 100, 45.6 below.
pub fn tps_text(tps: f64) -> String {
    if !tps.is_finite() {
        return "—".into();
    }
    if tps.abs() < 100.0 {
        return format!("{tps:.1}");
    }
    let digits = format!("{:.0}", tps.abs());
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if tps < 0.0 {
        format!("-{grouped}")
    } else {
        grouped
    }
}

/// A latency or a CPU time with three significant digits (0.412, 4.12, 41.2, 412).
pub fn sig3(ms: f64) -> String {
    if !ms.is_finite() {
        "—".into()
    } else if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else if ms >= 1.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.3}")
    }
}

/// A small report for the renderers' tests: two engines with two profiles each (one unsafe),
/// clients 1, 2 and 4, one unstable and one client-bound point, a timeline with warm-up,
/// checkpoints and an autovacuum, and settings holding text that needs escaping.
#[cfg(test)]
pub(crate) fn sample() -> ReportData {
    ReportData {
        title: "Sample & <test>".into(),
        generated_at: "2026-01-01 00:00 UTC".into(),
        host: sample_settings(&[("cores", "8"), ("cpu", "Some \"quoted\" CPU")]),
        points: sample_points(),
        timelines: sample_timelines(),
        profiles: sample_profiles(),
        plans: vec!["sample".into()],
        comparisons: vec![ProfileComparison {
            plan: String::new(),
            engine: "postgres".into(),
            workload: "tpcb".into(),
            variant: "tpcb-like".into(),
            clients: 4,
            baseline: "default".into(),
            profile: "tuned".into(),
            ratio: 1.8,
            verdict: "faster".into(),
            note: None,
        }],
        sides: vec![super::sides::SideCost {
            plan: String::new(),
            engine: "postgres".into(),
            profile: "default".into(),
            clients: 4,
            cold: false,
            side: "terminals".into(),
            figure: "nopm".into(),
            alone: 1000.0,
            mix: 700.0,
            change_pct: -30.0,
            ci_pct: Some([-33.5, -26.1]),
            verdict: "slower in the mix".into(),
            note: None,
        }],
    }
}

/// The sample's points: four engine and profile series, clients 1, 2 and 4.
#[cfg(test)]
fn sample_points() -> Vec<PointSummary> {
    let series = [
        ("postgres", "default", false, 800.0),
        ("postgres", "tuned", false, 1500.0),
        ("mariadb", "default", false, 700.0),
        ("mariadb", "fast", true, 2400.0),
    ];
    let mut points = Vec::new();
    for (engine, profile, unsafe_profile, base) in series {
        for clients in [1u32, 2, 4] {
            let tps = base * clients as f64 * 0.8;
            points.push(PointSummary {
                engine: engine.into(),
                profile: profile.into(),
                unsafe_profile,
                workload: "tpcb".into(),
                variant: "tpcb-like".into(),
                clients,
                repeats: 3,
                tps_median: tps,
                tps_min: tps * 0.97,
                tps_max: tps * 1.02,
                tps_cv: 0.02,
                p50_ms: 1.2 * clients as f64,
                p95_ms: 2.5 * clients as f64,
                p99_ms: 4.0 * clients as f64,
                first_ms: Some(9.0),
                durability: if unsafe_profile {
                    Durability::of(vec![(Level::NotDurable, "flush off".into())])
                } else {
                    Durability::durable()
                },
                client_bound: unsafe_profile && clients == 4,
                missed: Vec::new(),
                limited_by: String::new(),
                limited_by_says: String::new(),
                counters: Vec::new(),
                unstable: if engine == "mariadb" && clients == 4 && !unsafe_profile {
                    vec!["repeats spread 14% (over 10%) <b>".into()]
                } else {
                    vec![]
                },
                server_rss_bytes: Some(300 << 20),
                server_cpu_per_tx_us: Some(150.0 + clients as f64),
                database_size_bytes: Some(20 << 20),
                ..Default::default()
            });
        }
    }
    points
}

/// The sample's one timeline: twelve seconds, two of warm-up, checkpoints and an autovacuum,
/// and the sessions sampled in the measured seconds.
#[cfg(test)]
fn sample_timelines() -> Vec<Timeline> {
    let seconds = (0..12)
        .map(|t| Second {
            t,
            warmup: t < 2,
            tps: 1000.0 + t as f64,
            p99_ms: Some(3.0),
            checkpoints: u32::from(t == 5 || t == 9),
            autovacuums: u32::from(t == 7),
            server_rss_bytes: None,
            // The commits follow the throughput; the blocks read jump in second 9.
            counters: [
                ("v.commits".to_string(), 1000.0 + t as f64),
                (
                    "v.blocks_read".to_string(),
                    if t == 9 { 500.0 } else { 20.0 },
                ),
            ]
            .into(),
            // Sampled sessions from the measured start: 2 waiting on locks, 1 on a CPU.
            sessions: if t < 2 {
                BTreeMap::new()
            } else {
                [("lock".to_string(), 2.0), ("cpu".to_string(), 1.0)].into()
            },
        })
        .collect();
    vec![Timeline {
        plan: String::new(),
        engine: "postgres".into(),
        profile: "tuned".into(),
        workload: "tpcb".into(),
        clients: 4,
        repeat: 1,
        seconds,
        statements: None,
        embedded: None,
        // Two phases: a rate, then a spike to ten times it.
        phases: serde_json::from_value(serde_json::json!([
            {"name": "steady", "load": "rate 1000/s (poisson)", "start_s": 0.0, "seconds": 6.0,
             "transactions": 6000, "tps": 1000.0, "errors": 0, "retries": 0,
             "latency_ms": {"mean": 1.0, "p50": 0.9, "p90": 1.5, "p95": 2.0, "p99": 3.0, "p99_9": 5.0, "max": 9.0},
             "schedule_lag_ms": {"mean": 0.1, "p50": 0.1, "p90": 0.2, "p95": 0.2, "p99": 0.4, "p99_9": 1.0, "max": 2.0}},
            {"name": "spike <x10>", "load": "rate 10000/s (poisson)", "start_s": 6.0, "seconds": 4.0,
             "transactions": 4000, "tps": 1000.0, "errors": 0, "retries": 0,
             "latency_ms": {"mean": 900.0, "p50": 800.0, "p90": 1500.0, "p95": 1700.0, "p99": 2000.0, "p99_9": 2100.0, "max": 2200.0},
             "schedule_lag_ms": {"mean": 800.0, "p50": 700.0, "p90": 1400.0, "p95": 1600.0, "p99": 1900.0, "p99_9": 2000.0, "max": 2100.0}}
        ]))
        .expect("the sample's phases"),
    }]
}

/// The sample's profiles and their settings, one with text that needs escaping.
#[cfg(test)]
fn sample_profiles() -> Vec<ProfileSettings> {
    vec![
        ProfileSettings {
            engine: "postgres".into(),
            profile: "default".into(),
            unsafe_profile: false,
            settings: sample_settings(&[("shared_buffers", "128MB"), ("fsync", "on")]),
            durability: Durability::durable(),
        },
        ProfileSettings {
            engine: "postgres".into(),
            profile: "tuned".into(),
            unsafe_profile: false,
            settings: sample_settings(&[
                ("shared_buffers", "4GB"),
                ("fsync", "on"),
                ("application_name", "<script>alert(\"x\")</script> a|b"),
            ]),
            durability: Durability::durable(),
        },
        ProfileSettings {
            engine: "mariadb".into(),
            profile: "fast".into(),
            unsafe_profile: true,
            settings: sample_settings(&[("innodb_flush_log_at_trx_commit", "0")]),
            durability: Durability::of(vec![(Level::NotDurable, "flush off".into())]),
        },
    ]
}

/// Settings from (name, value) pairs.
#[cfg(test)]
fn sample_settings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_series_peaks_where_its_median_is_highest() {
        let point = |clients: u32, tps: f64| PointSummary {
            engine: "postgres".into(),
            profile: "tuned".into(),
            clients,
            tps_median: tps,
            ..Default::default()
        };
        let pts = [
            point(1, 900.0),
            point(8, 5000.0),
            point(64, 7000.0),
            point(512, 4550.0),
        ];
        let refs: Vec<&PointSummary> = pts.iter().collect();
        let peaks = peaks(&refs);
        assert_eq!(peaks.len(), 1);
        assert_eq!((peaks[0].clients, peaks[0].most_clients), (64, 512));
        assert_eq!(
            peaks[0].said(),
            "postgres/tuned peaks at 64 clients (7,000 tps); at 512 clients 4,550 tps (-35%)"
        );
        // Two client counts make no curve.
        assert!(super::peaks(&refs[..2]).is_empty());
    }

    use super::*;

    fn at<'a>(data: &'a ReportData, series: &str, clients: u32) -> &'a PointSummary {
        let p = data.points.iter();
        let mut p = p.filter(|p| p.series() == series && p.clients == clients);
        p.next().unwrap()
    }

    #[test]
    fn only_durable_points_are_fastest() {
        let mut data = sample();
        assert!(data.is_fastest(at(&data, "postgres/tuned", 4)));
        assert!(!data.is_fastest(at(&data, "mariadb/fast", 4)));
        assert!(!data.is_fastest(at(&data, "postgres/default", 4)));
        // A profile named for speed whose settings read back are not durable (SQLite's WAL
        // with synchronous=NORMAL) is never the fastest durable one, whatever its name.
        for p in data.points.iter_mut().filter(|p| p.profile == "tuned") {
            p.durability = Durability::of(vec![(Level::NotDurable, "NORMAL".into())]);
        }
        assert!(!data.is_fastest(at(&data, "postgres/tuned", 4)));
        assert!(
            at(&data, "postgres/tuned", 4)
                .flags()
                .contains(&"not durable")
        );
        // Neither is one whose durability is unknown; and with none durable, none is bold.
        for p in &mut data.points {
            p.durability = Durability::default();
        }
        assert!(data.points.iter().all(|p| !data.is_fastest(p)));
    }

    #[test]
    fn one_repeat_shows_no_spread() {
        let mut p = sample().points[0].clone();
        assert!(p.spread().is_some_and(|(_, cv)| cv == "2.0%"));
        p.repeats = 1;
        assert_eq!(p.spread(), None);
        let mut data = sample();
        data.points[0].repeats = 1;
        let md = super::super::markdown::markdown(&data);
        assert!(
            md.lines()
                .any(|l| l.contains("| postgres | default |") && l.contains("| — |")),
            "{md}"
        );
    }

    #[test]
    fn row_counts_go_with_their_query_and_one_run_has_no_tail() {
        let mut p = PointSummary::default();
        let four = Figure {
            median: 4.0,
            min: 4.0,
            max: 4.0,
        };
        p.metrics.insert("Q02 rows".into(), four);
        p.metrics.insert("power_at_size".into(), four);
        assert_eq!(p.rows_of("Q2"), Some(4.0));
        assert_eq!(p.rows_of("Q3"), None);
        let shown: Vec<&String> = p.card_figures().map(|(n, _)| n).collect();
        assert_eq!(shown, ["power_at_size"]);
        let mut t = TypeFigures {
            executions: 1,
            p95_ms: 3.0,
            p99_ms: 4.0,
            ..Default::default()
        };
        assert_eq!(t.tail(), None);
        t.executions = 5;
        assert_eq!(t.tail(), Some((3.0, 4.0)));
    }

    #[test]
    fn ranked_by_the_workloads_own_figure() {
        let mut data = sample();
        for p in &mut data.points {
            p.workload = "tpch".into();
            // The lower tps has the higher Power@Size.
            let power = 1e6 / p.tps_median;
            p.metrics.insert(
                "power_at_size".into(),
                Figure {
                    median: power,
                    min: power,
                    max: power,
                },
            );
        }
        // The lowest tps of the durable points has the highest Power@Size.
        let slow = at(&data, "mariadb/default", 4);
        assert_eq!(data.ranking_figure(slow), "power_at_size");
        assert!(data.is_fastest(slow));
        assert!(!data.is_fastest(at(&data, "postgres/tuned", 4)));
        // A figure one point lacks cannot rank its group: tps does.
        data.points[0].metrics.clear();
        assert_eq!(data.ranking_figure(&data.points[3]), "tps");
        assert_eq!(data.ranking_figure(&data.points[4]), "power_at_size");
    }

    #[test]
    fn settings_side_by_side_mark_differences() {
        let tables = sample().settings_tables();
        assert_eq!(tables.len(), 2);
        let pg = &tables[0];
        assert_eq!(pg.columns.len(), 2);
        let row = |name: &str| pg.rows.iter().find(|r| r.name == name).unwrap();
        assert!(row("shared_buffers").differs);
        assert!(!row("fsync").differs);
        assert!(row("application_name").differs);
        assert_eq!(row("application_name").values[0], None);
    }

    #[test]
    fn resources_summarise_each_series() {
        let rows = sample().resources();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].cpu_per_tx_us, Some((152.0, 151.0, 154.0)));
        assert!(rows[3].unsafe_profile);
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(tps_text(1234567.4), "1,234,567");
        assert_eq!(tps_text(45.66), "45.7");
        assert_eq!(tps_text(999.6), "1,000");
        assert_eq!(sig3(0.41234), "0.412");
        assert_eq!(sig3(41.234), "41.2");
        assert_eq!(sig3(412.34), "412");
    }
}
