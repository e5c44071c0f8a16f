//! Load that changes shape within a run (`--phase`): the phases (each a length and a load: a rate,
//! constant or ramping linearly from one rate to another, with Poisson or regular arrivals, or a
//! number of active clients in a closed loop), read from `--phase` specs or a phases file, and
//! each client's way through them (`Pace`): when its next transaction is scheduled, or that it
//! waits for a later phase.
//!
//! A rate is the whole run's: each of the run's clients (every shard's) takes an equal share, so
//! client `i` of `n` arrives at `rate / n`. Poisson arrivals are a non-homogeneous Poisson process
//! (the rate's integral inverted over the linear pieces); regular ones are evenly spaced, the
//! clients staggered so that together they are evenly spaced too. In a phase of `k` clients, the
//! clients with ids below `k` run one transaction after another and the others wait for the
//! phase's end. The warm-up runs the first phase's load as it starts (a ramp's first rate).

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use super::sleep_until;

/// The most phases a run takes.
const MOST_PHASES: usize = 1000;

/// How arrivals are spaced in a rate phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Exponential gaps: arrivals independent of each other (the open loop's default).
    Poisson,
    /// Equal gaps.
    Regular,
}

/// What a phase asks of the clients.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Load {
    /// Transactions a second for the whole run, from `from` at the phase's start to `to` at its
    /// end (equal for a constant rate); latency runs from each scheduled start.
    Rate {
        from: f64,
        to: f64,
        arrival: Arrival,
    },
    /// This many clients in a closed loop, each starting its next transaction when the last one
    /// ends; the others wait.
    Clients(u32),
}

/// One phase of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub name: String,
    pub seconds: f64,
    pub load: Load,
    /// `mix=`: the transaction types' weights as written (name, weight), and as the plan
    /// resolves them against the workload's types (one weight per type, in its order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Vec<(String, f64)>>,
    #[serde(skip)]
    pub weights: Option<Vec<f64>>,
}

impl Phase {
    /// The load in words: "rate 100/s (poisson)", "rate 100 -> 1000/s (regular)", "8 clients",
    /// with its mix when it has one ("8 clients, mix payment:1/new_order:3").
    pub fn load_said(&self) -> String {
        let mix = self.mix.as_ref().map_or(String::new(), |m| {
            let parts: Vec<String> = m.iter().map(|(n, w)| format!("{n}:{}", num(*w))).collect();
            format!(", mix {}", parts.join("/"))
        });
        self.load_alone() + &mix
    }

    fn load_alone(&self) -> String {
        match self.load {
            Load::Rate { from, to, arrival } if from == to => {
                format!("rate {}/s ({})", num(from), arrival_name(arrival))
            }
            Load::Rate { from, to, arrival } => format!(
                "rate {} -> {}/s ({})",
                num(from),
                num(to),
                arrival_name(arrival)
            ),
            Load::Clients(1) => "1 client".into(),
            Load::Clients(k) => format!("{k} clients"),
        }
    }

    /// Transactions a second the phase asks for at `x` seconds into it (None in a closed loop).
    fn rate_at(&self, x: f64) -> Option<f64> {
        match self.load {
            Load::Rate { from, to, .. } => {
                Some(from + (to - from) * (x / self.seconds).clamp(0.0, 1.0))
            }
            Load::Clients(_) => None,
        }
    }
}

fn arrival_name(a: Arrival) -> &'static str {
    match a {
        Arrival::Poisson => "poisson",
        Arrival::Regular => "regular",
    }
}

/// A number as a person writes it: no trailing ".0".
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// The phases of a run, in order; together they are its measured time.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub phases: Vec<Phase>,
    /// The run's clients, every shard's (each takes an equal share of a rate); set by the plan.
    pub run_clients: u32,
}

impl Shape {
    /// The phases from `--phase` specs (`DURATION:KEY=VALUE,...`, see `parse_phase`), and from
    /// a phases file's lines when a spec is `@FILE`.
    pub fn parse(specs: &[String]) -> Result<Shape, String> {
        let mut phases = Vec::new();
        for spec in specs {
            match spec.strip_prefix('@') {
                Some(file) => {
                    let text = std::fs::read_to_string(file)
                        .map_err(|e| format!("--phase @{file}: cannot read it: {e}"))?;
                    for (n, line) in text.lines().enumerate() {
                        let line = line.split('#').next().unwrap_or("").trim();
                        if line.is_empty() {
                            continue;
                        }
                        let phase = parse_phase(line, phases.len())
                            .map_err(|e| format!("--phase @{file}, line {}: {e}", n + 1))?;
                        phases.push(phase);
                    }
                }
                None => phases.push(
                    parse_phase(spec, phases.len()).map_err(|e| format!("--phase {spec}: {e}"))?,
                ),
            }
        }
        if phases.is_empty() {
            return Err("--phase: no phase given (a phases file with no phase in it?)".into());
        }
        if phases.len() > MOST_PHASES {
            return Err(format!(
                "--phase: {} phases, at most {MOST_PHASES}",
                phases.len()
            ));
        }
        let mut names = std::collections::HashSet::new();
        for p in &phases {
            if !names.insert(p.name.as_str()) {
                return Err(format!(
                    "--phase: two phases are named {}: give each its own name",
                    p.name
                ));
            }
        }
        Ok(Shape {
            phases,
            run_clients: 1,
        })
    }

    /// Whether a phase asks for a mix of its own.
    pub fn mixed(&self) -> bool {
        self.phases.iter().any(|p| p.mix.is_some())
    }

    /// Each phase's mix as weights over the workload's transaction types (`types`, in its
    /// order; a name in any case, as YCSB's `read` for `READ`); an unknown type is refused
    /// with the workload's types listed.
    pub fn resolve_mixes(&mut self, workload: &str, types: &[&str]) -> Result<(), String> {
        for p in &mut self.phases {
            let Some(mix) = &p.mix else { continue };
            let mut weights = vec![0.0; types.len()];
            for (name, w) in mix {
                let i = types.iter().position(|t| t.eq_ignore_ascii_case(name)).ok_or_else(|| {
                    format!(
                        "--phase {}: mix: {workload} has no transaction type {name} (its types: {})",
                        p.name,
                        types.join(", ")
                    )
                })?;
                weights[i] = *w;
            }
            p.weights = Some(weights);
        }
        Ok(())
    }

    /// The measured time: the phases' lengths together.
    pub fn seconds(&self) -> f64 {
        self.phases.iter().map(|p| p.seconds).sum()
    }

    /// The most clients a phase asks for (1 when every phase is a rate).
    pub fn clients_needed(&self) -> u32 {
        self.phases
            .iter()
            .filter_map(|p| match p.load {
                Load::Clients(k) => Some(k),
                Load::Rate { .. } => None,
            })
            .max()
            .unwrap_or(1)
    }

    /// Whether any phase is a rate (the run keeps a schedule, and its lag).
    pub fn open_loop(&self) -> bool {
        self.phases
            .iter()
            .any(|p| matches!(p.load, Load::Rate { .. }))
    }

    /// Each phase's start, in seconds from the measured part's start.
    pub fn starts(&self) -> Vec<f64> {
        let mut at = 0.0;
        self.phases
            .iter()
            .map(|p| {
                let start = at;
                at += p.seconds;
                start
            })
            .collect()
    }

    /// The phase at `x` seconds from the measured part's start (the warm-up, before it, is the
    /// first phase's; past the end, the last's).
    pub fn phase_at(&self, x: f64) -> usize {
        let mut end = 0.0;
        for (i, p) in self.phases.iter().enumerate() {
            end += p.seconds;
            if x < end {
                return i;
            }
        }
        self.phases.len() - 1
    }
}

/// One phase from `DURATION[:KEY=VALUE,...]`: DURATION as `30`, `30s`, `2m` or `1h`; keys
/// `rate=R` or `rate=R1..R2` (a ramp), `clients=N`, `arrival=poisson|regular` (rates only) and
/// `name=NAME` (default `phaseN`, N from 1). A phase with neither rate nor clients is refused.
pub fn parse_phase(spec: &str, index: usize) -> Result<Phase, String> {
    let (duration, keys) = spec.split_once(':').unwrap_or((spec, ""));
    let seconds = parse_duration(duration.trim())?;
    let mut name = format!("phase{}", index + 1);
    let (mut rate, mut clients, mut arrival, mut mix) = (None, None, None, None);
    let mut seen: Vec<&str> = Vec::new();
    for kv in keys.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            format!("{kv:?} is not KEY=VALUE (keys: rate, clients, arrival, mix, name)")
        })?;
        let (k, v) = (k.trim(), v.trim());
        if seen.contains(&k) {
            return Err(format!("{k}= is given twice: give it once"));
        }
        seen.push(k);
        match k {
            "rate" => {
                let (a, b) = v.split_once("..").unwrap_or((v, v));
                let r = |s: &str| {
                    s.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|r| r.is_finite() && *r >= 0.0)
                        .ok_or_else(|| {
                            format!(
                                "rate={v}: give transactions a second, R or R1..R2, each 0 or more"
                            )
                        })
                };
                let (from, to) = (r(a)?, r(b)?);
                if from == 0.0 && to == 0.0 {
                    return Err(
                        "rate=0: a phase with no load is a pause: give it clients=0 instead".into(),
                    );
                }
                rate = Some((from, to));
            }
            "clients" => {
                clients = Some(v.parse::<u32>().map_err(|_| {
                    format!("clients={v}: give a whole number of clients, 0 or more")
                })?)
            }
            "arrival" => {
                arrival = Some(match v {
                    "poisson" => Arrival::Poisson,
                    "regular" => Arrival::Regular,
                    _ => return Err(format!("arrival={v}: give poisson or regular")),
                })
            }
            "mix" => mix = Some(parse_mix(v)?),
            "name" => {
                if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c == ',') {
                    return Err(format!("name={v:?}: give a name without spaces or commas"));
                }
                name = v.to_string();
            }
            other => {
                return Err(format!(
                    "unknown key {other:?} (keys: rate, clients, arrival, mix, name)"
                ));
            }
        }
    }
    let load = match (rate, clients) {
        (Some(_), Some(_)) => {
            return Err("give rate= (an open loop) or clients= (a closed loop), not both".into());
        }
        (None, None) => {
            return Err("give its load: rate=R, rate=R1..R2 or clients=N".into());
        }
        (Some((from, to)), None) => Load::Rate {
            from,
            to,
            arrival: arrival.unwrap_or(Arrival::Poisson),
        },
        (None, Some(k)) => {
            if arrival.is_some() {
                return Err("arrival= is for rate phases: clients= run a closed loop".into());
            }
            Load::Clients(k)
        }
    };
    Ok(Phase {
        name,
        seconds,
        load,
        mix,
        weights: None,
    })
}

/// `mix=TYPE:WEIGHT/TYPE:WEIGHT...`: the transaction types' weights in a phase (types left out
/// weigh 0); the names are checked against the workload's by `Shape::resolve_mixes`.
fn parse_mix(v: &str) -> Result<Vec<(String, f64)>, String> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for part in v.split('/') {
        let (name, w) = part.split_once(':').ok_or_else(|| {
            format!("mix={v}: give TYPE:WEIGHT/TYPE:WEIGHT (e.g. mix=new_order:45/payment:43)")
        })?;
        let w = w
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|w| w.is_finite() && *w >= 0.0)
            .ok_or_else(|| format!("mix={v}: {name}'s weight {w:?} is not a number, 0 or more"))?;
        let name = name.trim().to_string();
        if out.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            return Err(format!("mix={v}: {name} is given twice"));
        }
        out.push((name, w));
    }
    if out.iter().all(|(_, w)| *w == 0.0) {
        return Err(format!(
            "mix={v}: every weight is 0: give one transaction type a weight"
        ));
    }
    Ok(out)
}

/// `30`, `30s`, `2m`, `1h`, `1.5s`, `5m30s`, `1h30m`: seconds, more than 0 and at most a day.
fn parse_duration(s: &str) -> Result<f64, String> {
    let bad = || format!("{s:?}: give the phase's length as 30, 30s, 2m, 1h or 5m30s");
    if let Ok(x) = s.parse::<f64>() {
        return within_a_day(s, Some(x).filter(|x| x.is_finite()).ok_or_else(bad)?);
    }
    let mut secs = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let unit_at = rest
            .find(|c: char| c.is_ascii_alphabetic())
            .filter(|i| *i > 0)
            .ok_or_else(bad)?;
        let (number, tail) = rest.split_at(unit_at);
        let unit_len = tail
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let scale = match unit {
            "s" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "ms" => 0.001,
            _ => return Err(bad()),
        };
        let x = number
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(bad)?;
        secs += x * scale;
        rest = next;
    }
    within_a_day(s, secs)
}

fn within_a_day(s: &str, secs: f64) -> Result<f64, String> {
    if !(0.001..=86_400.0).contains(&secs) {
        return Err(format!("{s:?}: a phase lasts from 1 ms to a day"));
    }
    Ok(secs)
}

/// One client's way through the phases.
pub struct Pace {
    phases: Vec<Phase>,
    starts: Vec<f64>,
    /// The measured part's start: phase times are seconds from it (the warm-up before it).
    origin: Instant,
    /// This client's id and the run's clients (all shards'): its share of a rate.
    id: u32,
    clients: u32,
    rng: SmallRng,
    /// The open loop's position: the last scheduled arrival (seconds from `origin`), None when
    /// the next rate phase starts a new schedule.
    last: Option<f64>,
    /// The phase of the last step given.
    current: usize,
    /// Arrivals scheduled and arrivals started (the open loop's due and started), in all and
    /// by phase (the warm-up's in the first).
    pub due: u64,
    pub started: u64,
    pub phase_due: Vec<u64>,
    pub phase_started: Vec<u64>,
}

/// What a client does next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Start a transaction scheduled at this instant (open loop: latency from it; the client
    /// has slept until it, or is late).
    Scheduled(Instant),
    /// Start a transaction now (closed loop): at the instant its phase was read at, so that
    /// it counts in the phase whose mix it was drawn by, however late its thread runs it.
    Now(Instant),
    /// The run is over (or stopped).
    End,
}

impl Pace {
    /// Client `id`'s way through `shape`, whose measured part starts at `origin` (the warm-up
    /// before it runs the first phase's load).
    pub fn new(shape: &Shape, origin: Instant, id: u32, seed: u64) -> Pace {
        Pace {
            phases: shape.phases.clone(),
            starts: shape.starts(),
            origin,
            id,
            clients: shape.run_clients.max(1),
            rng: SmallRng::seed_from_u64(seed),
            last: None,
            current: 0,
            due: 0,
            started: 0,
            phase_due: vec![0; shape.phases.len()],
            phase_started: vec![0; shape.phases.len()],
        }
    }

    fn end(&self) -> f64 {
        self.starts.last().copied().unwrap_or(0.0) + self.phases.last().map_or(0.0, |p| p.seconds)
    }

    fn now(&self) -> f64 {
        self.at(Instant::now())
    }

    /// `now` in seconds from the origin.
    fn at(&self, now: Instant) -> f64 {
        if now >= self.origin {
            (now - self.origin).as_secs_f64()
        } else {
            -(self.origin - now).as_secs_f64()
        }
    }

    fn instant(&self, x: f64) -> Instant {
        if x >= 0.0 {
            self.origin + Duration::from_secs_f64(x)
        } else {
            self.origin - Duration::from_secs_f64(-x)
        }
    }

    /// The phase `x` falls in (the warm-up is the first phase's).
    fn phase_at(&self, x: f64) -> usize {
        let i = self.starts.partition_point(|s| *s <= x);
        i.saturating_sub(1)
    }

    /// The phase of the last step `next` gave (the first phase before any).
    pub fn phase(&self) -> usize {
        self.current
    }

    /// Wait for what comes next: the next scheduled start of a rate phase, at once in a closed
    /// phase where this client is active, or the end. An inactive client sleeps through its
    /// phase; a client that falls behind its schedule starts late (its latency counts the
    /// lateness), and what was due after the end is counted due and not started.
    pub fn next(&mut self, stop: &AtomicBool) -> Next {
        let end = self.end();
        loop {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return self.ended();
            }
            let moment = Instant::now();
            let now = self.at(moment);
            if now >= end {
                return self.ended();
            }
            let i = self.phase_at(now);
            self.current = i;
            let phase_end = self.starts[i] + self.phases[i].seconds;
            match self.phases[i].load {
                Load::Clients(k) => {
                    // A schedule behind at the end of its rate phases: their arrivals it did
                    // not start are due and not started (a closed phase does not serve them).
                    self.count_rest(self.starts[i]);
                    if self.id < k {
                        return Next::Now(moment);
                    }
                    if !sleep_until(self.instant(phase_end), stop) {
                        return self.ended();
                    }
                }
                Load::Rate { .. } => {
                    let fresh = self.last.is_none();
                    let from = self.last.unwrap_or(now);
                    match self.arrival_after(from, fresh) {
                        Some(at) if at < end => {
                            self.last = Some(at);
                            self.due += 1;
                            let of = self.phase_at(at);
                            self.phase_due[of] += 1;
                            if at > now && !sleep_until(self.instant(at), stop) {
                                return self.ended();
                            }
                            if self.now() >= end {
                                // Slept to the end (a clock's rounding): not started.
                                return self.ended();
                            }
                            self.started += 1;
                            self.phase_started[of] += 1;
                            self.current = of;
                            return Next::Scheduled(self.instant(at));
                        }
                        // No arrival before the rate phases give way to a closed one (or the end).
                        _ => {
                            self.last = None;
                            let until = self.rate_stretch_end(i).min(end);
                            if !sleep_until(self.instant(until), stop) || until >= end {
                                return self.ended();
                            }
                        }
                    }
                }
            }
        }
    }

    /// The end (of the run, or a stop): what was scheduled until then and not started counts
    /// as due.
    fn ended(&mut self) -> Next {
        self.close();
        Next::End
    }

    /// Count what was scheduled until now (at most the end) and not started: for a client that
    /// leaves its loop without asking `next` again (a transaction cut short by the end). Once.
    pub fn close(&mut self) {
        let until = self.now().min(self.end());
        self.count_rest(until);
    }

    /// A client behind its schedule at the end (of the run, or of its rate phases): what was
    /// scheduled before `end` and not started counts as due (pgbench does not start it either). Counted from the rate's
    /// integral over the rest of the run (the expected number of arrivals), not arrival by
    /// arrival: a schedule far behind at a high rate would take longer to walk than the run.
    fn count_rest(&mut self, end: f64) {
        let Some(x) = self.last.take() else {
            return;
        };
        for (i, n) in self.expected_arrivals(x, end).into_iter().enumerate() {
            let n = n.round() as u64;
            self.due += n;
            self.phase_due[i] += n;
        }
    }

    /// This client's expected arrivals in [from, to) by phase: the integral of its share of
    /// each rate phase's rate there (a closed phase schedules none).
    fn expected_arrivals(&self, from: f64, to: f64) -> Vec<f64> {
        let share = 1.0 / f64::from(self.clients);
        let mut by_phase = vec![0.0; self.phases.len()];
        for (i, (p, start)) in self.phases.iter().zip(&self.starts).enumerate() {
            let (a, b) = (from.max(*start), to.min(start + p.seconds));
            if b <= a {
                continue;
            }
            if let (Some(ra), Some(rb)) = (p.rate_at(a - start), p.rate_at(b - start)) {
                by_phase[i] = (ra + rb) / 2.0 * (b - a) * share;
            }
        }
        by_phase
    }

    /// The end of the run of consecutive rate phases from phase `i`.
    fn rate_stretch_end(&self, i: usize) -> f64 {
        let mut j = i;
        while j + 1 < self.phases.len() && matches!(self.phases[j + 1].load, Load::Rate { .. }) {
            j += 1;
        }
        self.starts[j] + self.phases[j].seconds
    }

    /// The next arrival after `x` (seconds from the origin), through consecutive rate phases;
    /// None when they end first. A new schedule (`fresh`) starts at a random point of the first
    /// gap for Poisson arrivals (memoryless), and at this client's stagger for regular ones; so
    /// does the schedule of a phase whose arrivals are spaced otherwise than the one before it
    /// (regular after Poisson: the clients evenly staggered from its start).
    fn arrival_after(&mut self, x: f64, fresh: bool) -> Option<f64> {
        let i = self.phase_at(x);
        let arrival = match self.phases[i].load {
            Load::Rate { arrival, .. } => arrival,
            Load::Clients(_) => return None,
        };
        let mut need = match arrival {
            Arrival::Poisson => {
                let u: f64 = self.rng.random();
                -(1.0 - u).ln()
            }
            Arrival::Regular if fresh => {
                (f64::from(self.id % self.clients) + 1.0) / f64::from(self.clients)
            }
            Arrival::Regular => 1.0,
        };
        let share = 1.0 / f64::from(self.clients);
        let mut at = x;
        let mut j = i;
        loop {
            let phase = &self.phases[j];
            phase.rate_at(0.0)?;
            // The warm-up (before the first phase, which starts at 0) runs the first phase's
            // starting rate, up to 0 included.
            let (start, stop) = if at < 0.0 {
                (0.0, 0.0)
            } else {
                (self.starts[j], self.starts[j] + phase.seconds)
            };
            let rate_at = |t: f64| {
                if t < 0.0 {
                    phase.rate_at(0.0).unwrap_or(0.0) * share
                } else {
                    phase.rate_at(t - start).unwrap_or(0.0) * share
                }
            };
            let (r0, r1) = (rate_at(at), rate_at(stop));
            let width = stop - at;
            // The rate is linear over [at, stop]: its integral there, then the point where the
            // integral reaches `need`.
            let slope = if width > 0.0 { (r1 - r0) / width } else { 0.0 };
            let whole = r0 * width + 0.5 * slope * width * width;
            if whole >= need && whole > 0.0 {
                let d = 2.0 * need / (r0 + (r0 * r0 + 2.0 * slope * need).max(0.0).sqrt());
                return Some(at + d.min(width));
            }
            need -= whole.max(0.0);
            at = stop;
            if at >= 0.0 && stop == self.starts[j] + phase.seconds {
                j += 1;
                if j >= self.phases.len() {
                    return None;
                }
                if let Load::Rate { arrival: next, .. } = self.phases[j].load
                    && next != arrival
                {
                    return self.arrival_after(self.starts[j], true);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(specs: &[&str]) -> Shape {
        Shape::parse(&specs.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn phases_are_read_as_written() {
        let s = shape(&[
            "10s:rate=100",
            "1m:rate=100..1000,arrival=regular,name=ramp",
            "5:clients=8",
        ]);
        assert_eq!(s.seconds(), 75.0);
        assert_eq!(s.clients_needed(), 8);
        assert_eq!(s.phases[0].name, "phase1");
        assert_eq!(s.phases[1].name, "ramp");
        assert_eq!(s.phases[1].load_said(), "rate 100 -> 1000/s (regular)");
        assert_eq!(s.phases[2].load_said(), "8 clients");
        assert_eq!(s.starts(), vec![0.0, 10.0, 70.0]);
        assert_eq!(s.phase_at(-1.0), 0);
        assert_eq!(s.phase_at(10.0), 1);
        assert_eq!(s.phase_at(500.0), 2);
        let s = shape(&[
            "5m30s:rate=1",
            "1h30m:clients=1",
            "1.5s:rate=2",
            "250ms:rate=3",
        ]);
        assert_eq!(s.seconds(), 330.0 + 5400.0 + 1.5 + 0.25);
    }

    #[test]
    fn bad_phases_are_refused_with_what_to_change() {
        let bad = |spec: &str, says: &str| {
            let e = Shape::parse(&[spec.to_string()]).unwrap_err();
            assert!(e.contains(says), "{spec}: {e}");
        };
        bad("10s", "give its load");
        bad("10s:rate=5,clients=2", "not both");
        bad("0s:rate=5", "from 1 ms to a day");
        bad("10x:rate=5", "30s, 2m, 1h or 5m30s");
        bad("5m30:rate=5", "30s, 2m, 1h or 5m30s");
        bad("m5:rate=5", "30s, 2m, 1h or 5m30s");
        bad("10s:rate=5,rate=50", "rate= is given twice");
        bad("10s:rate=5,mix=a:1/A:2", "A is given twice");
        bad("10s:rate=-1", "0 or more");
        bad("10s:rate=0", "clients=0");
        bad("10s:clients=2,arrival=regular", "rate phases");
        bad("10s:speed=2", "unknown key");
        bad("10s:rate=5,arrival=burst", "poisson or regular");
        let e = Shape::parse(&["1s:rate=1,name=a".into(), "1s:rate=2,name=a".into()]).unwrap_err();
        assert!(e.contains("two phases are named a"), "{e}");
    }

    /// Arrivals of `clients` clients over the shape, computed (not slept through): each client's
    /// schedule from the origin on.
    fn arrivals(s: &Shape, clients: u32, seed: u64) -> Vec<f64> {
        let mut all = Vec::new();
        let mut s = s.clone();
        s.run_clients = clients;
        let s = &s;
        for id in 0..clients {
            let mut p = Pace::new(s, Instant::now(), id, seed + u64::from(id));
            let mut x = 0.0;
            let mut fresh = true;
            while let Some(at) = p.arrival_after(x, fresh) {
                if at >= s.seconds() {
                    break;
                }
                all.push(at);
                x = at;
                fresh = false;
            }
        }
        all.sort_by(f64::total_cmp);
        all
    }

    #[test]
    fn a_ramp_arrives_as_its_integral_says() {
        // 100 -> 300 a second over 10 s: 2000 arrivals, 500 of them in the first 3.82 s
        // (where 100 t + 10 t^2 = 500: t = 3.66).
        let s = shape(&["10s:rate=100..300"]);
        let a = arrivals(&s, 4, 7);
        let n = a.len() as f64;
        assert!((n - 2000.0).abs() < 150.0, "{n} arrivals");
        let early = a.iter().filter(|x| **x < 3.66).count() as f64;
        assert!((early - 500.0).abs() < 70.0, "{early} in the first 3.66 s");
        // Regular arrivals give the integral almost exactly.
        let s = shape(&["10s:rate=100..300,arrival=regular"]);
        let a = arrivals(&s, 4, 7);
        assert!((a.len() as i64 - 2000).abs() <= 4, "{} arrivals", a.len());
        let early = a.iter().filter(|x| **x < 3.66).count() as i64;
        assert!((early - 500).abs() <= 4, "{early} in the first 3.66 s");
    }

    #[test]
    fn a_spike_changes_the_rate_at_its_boundaries() {
        let s = shape(&["2s:rate=50", "1s:rate=1000", "2s:rate=50"]);
        let a = arrivals(&s, 2, 3);
        let within = |from: f64, to: f64| a.iter().filter(|x| **x >= from && **x < to).count();
        let (before, spike, after) = (within(0.0, 2.0), within(2.0, 3.0), within(3.0, 5.0));
        assert!((70..130).contains(&before), "{before} before");
        assert!((880..1120).contains(&spike), "{spike} in the spike");
        assert!((70..130).contains(&after), "{after} after");
    }

    #[test]
    fn a_schedule_far_behind_counts_its_rest_at_once() {
        // 2e8 a second for 2 s over 2 clients: 2e8 arrivals each, counted without walking them.
        let mut s = shape(&["2s:rate=200000000", "1s:clients=1", "1s:rate=100..300"]);
        s.run_clients = 2;
        let mut p = Pace::new(&s, Instant::now(), 0, 1);
        p.last = Some(0.0);
        let started = Instant::now();
        p.count_rest(4.0);
        assert!(started.elapsed() < Duration::from_millis(100));
        // 2e8 in the first phase, none in the closed one, (100 + 300) / 2 / 2 = 100 in the last.
        assert_eq!(p.due, 200_000_100);
        assert_eq!(p.phase_due, vec![200_000_000, 0, 100]);
    }

    #[test]
    fn regular_arrivals_after_poisson_ones_are_staggered_from_their_phase() {
        // Four clients at 400 a second regular after a Poisson second: client k's first
        // regular arrival at 1 + (k + 1) / 400, then every 1/100 s.
        let mut s = shape(&["1s:rate=50", "1s:rate=400,arrival=regular"]);
        s.run_clients = 4;
        for id in 0..4u32 {
            let mut p = Pace::new(&s, Instant::now(), id, 9);
            let mut x = 0.0;
            let first = loop {
                x = p.arrival_after(x, false).unwrap();
                if x >= 1.0 {
                    break x;
                }
            };
            let want = 1.0 + f64::from(id + 1) / 400.0;
            assert!(
                (first - want).abs() < 1e-9,
                "client {id}: {first}, not {want}"
            );
            let second = p.arrival_after(first, false).unwrap();
            assert!((second - first - 0.01).abs() < 1e-9, "{second}");
        }
    }

    #[test]
    fn a_backlog_at_a_closed_phase_counts_as_not_started() {
        // Half a second behind at 1000 a second when the closed phase begins: 500 arrivals
        // due in the rate phase that never start.
        let s = shape(&["1s:rate=1000", "1s:clients=1"]);
        let origin = Instant::now() - Duration::from_millis(1500);
        let mut p = Pace::new(&s, origin, 0, 1);
        p.last = Some(0.5);
        assert!(matches!(p.next(&AtomicBool::new(false)), Next::Now(_)));
        assert_eq!((p.due, p.started), (500, 0));
        assert_eq!(p.phase_due, vec![500, 0]);
    }

    #[test]
    fn the_warm_up_before_a_ramp_runs_its_starting_rate() {
        // Regular arrivals of one client at the ramp's starting 100 a second: 10 ms apart in
        // the warm-up, whatever the rate later in the ramp.
        let s = shape(&["10s:rate=100..1000,arrival=regular"]);
        let mut p = Pace::new(&s, Instant::now(), 0, 1);
        let next = p.arrival_after(-1.0, false).unwrap();
        assert!((next + 0.99).abs() < 1e-9, "{next}");
        let next = p.arrival_after(-0.005, false).unwrap();
        assert!((next - 0.005).abs() < 5e-5, "{next}");
    }

    #[test]
    fn a_closed_phase_ends_the_schedule_until_the_next_rate() {
        let s = shape(&[
            "1s:rate=200,arrival=regular",
            "1s:clients=1",
            "1s:rate=200,arrival=regular",
        ]);
        let a = arrivals(&s, 1, 1);
        // The schedule stops at the closed phase: nothing in [1, 2).
        assert!(a.iter().all(|x| *x < 1.0), "{:?}", &a[a.len() - 3..]);
        let mut p = Pace::new(&s, Instant::now(), 0, 1);
        let second = p.arrival_after(2.0, true).unwrap();
        assert!((second - 2.005).abs() < 1e-9, "{second}");
    }
}
