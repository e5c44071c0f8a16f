//! What a report shows, independent of its format: points summarised over their repeats,
//! per-second timelines with server events, and the settings of each profile. Built from the
//! results store (store::report_data); rendered by html.rs and markdown.rs.

use std::collections::BTreeMap;

use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReportData {
    pub title: String,
    pub generated_at: String,
    /// Host facts of the runs (cores, RAM, kernel...), as key -> value.
    pub host: BTreeMap<String, String>,
    pub points: Vec<PointSummary>,
    pub timelines: Vec<Timeline>,
    pub profiles: Vec<ProfileSettings>,
}

/// One (engine, profile, workload, variant, clients) point, over its repeats.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PointSummary {
    pub engine: String,
    pub profile: String,
    /// The profile turns durability off (fsync, flush at commit): its numbers are labelled unsafe.
    pub unsafe_profile: bool,
    pub workload: String,
    pub variant: String,
    pub clients: u32,
    pub repeats: u32,
    pub tps_median: f64,
    pub tps_min: f64,
    pub tps_max: f64,
    /// Coefficient of variation of tps over the repeats (0 with one repeat).
    pub tps_cv: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
    pub client_bound: bool,
    /// Why the point is unstable (empty when it is not): repeats spread, throughput collapses.
    pub unstable: Vec<String>,
    pub cold: bool,
    /// Peak resident memory of the server's processes during the runs.
    pub server_rss_bytes: Option<u64>,
    /// Server CPU time per transaction, microseconds.
    pub server_cpu_per_tx_us: Option<f64>,
    pub database_size_bytes: Option<u64>,
    pub warnings: Vec<String>,
}

impl PointSummary {
    /// The curve this point belongs to: one per engine and profile.
    pub fn series(&self) -> String {
        format!("{}/{}", self.engine, self.profile)
    }
}

/// One run's seconds, with the server events seen in each.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    pub engine: String,
    pub profile: String,
    pub workload: String,
    pub clients: u32,
    pub repeat: u32,
    pub seconds: Vec<Second>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Second {
    pub t: u32,
    pub warmup: bool,
    pub tps: f64,
    pub p99_ms: Option<f64>,
    /// Checkpoints that completed in this second (PostgreSQL; InnoDB where observable).
    pub checkpoints: u32,
    /// Autovacuum and autoanalyze runs that completed in this second.
    pub autovacuums: u32,
    pub server_rss_bytes: Option<u64>,
}

/// The settings in effect under one profile on one engine, as read back from the server.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProfileSettings {
    pub engine: String,
    pub profile: String,
    pub unsafe_profile: bool,
    pub settings: BTreeMap<String, String>,
}

impl PointSummary {
    /// The point's flags as short words, in a fixed order: client-bound, unstable, unsafe, cold.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = Vec::new();
        if self.client_bound {
            flags.push("client-bound");
        }
        if !self.unstable.is_empty() {
            flags.push("unstable");
        }
        if self.unsafe_profile {
            flags.push("unsafe");
        }
        if self.cold {
            flags.push("cold");
        }
        flags
    }
}

impl Timeline {
    pub fn series(&self) -> String {
        format!("{}/{}", self.engine, self.profile)
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

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

impl ReportData {
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

    /// The best median tps among the points of the same workload variant and client count.
    pub fn best_tps(&self, point: &PointSummary) -> f64 {
        self.points
            .iter()
            .filter(|p| {
                p.workload == point.workload
                    && p.variant == point.variant
                    && p.clients == point.clients
            })
            .map(|p| p.tps_median)
            .fold(f64::NEG_INFINITY, f64::max)
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
    let mut cpu: Vec<f64> = points
        .iter()
        .filter_map(|p| p.server_cpu_per_tx_us)
        .collect();
    let cpu_per_tx_us = (!cpu.is_empty()).then(|| {
        let med = median(&mut cpu);
        (med, cpu[0], cpu[cpu.len() - 1])
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
    let rows = names
        .into_iter()
        .map(|name| {
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
        })
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
