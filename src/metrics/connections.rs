//! The run's connections as the events tell them (`Event::Connected`, `ConnectFailed`, `Storm`):
//! every connection it opened (the clients' first ones, `-C`'s, those replaced at the end of
//! their life or after a lost one, the idle ones), by cause; their connect times in one HDR
//! histogram (µs, 3 significant digits; TLS handshakes and authentication included); the
//! connections that could not be had; and the storm, all the clients' first connections opened
//! at once: how many and how long until the last was connected. Shards' are added (`add`).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{Latency, histogram, serialize};
use crate::event::{ConnectCause, Event};

/// The result's `connections`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Connections {
    /// Every connection the run opened, the idle ones included.
    pub opened: u64,
    /// The clients' first connections.
    pub initial: u64,
    /// `-C`: one per transaction.
    pub per_transaction: u64,
    /// Replaced after `--reconnect-every` transactions.
    pub by_count: u64,
    /// Replaced after `--reconnect-after` seconds.
    pub by_age: u64,
    /// Opened after a lost connection.
    pub after_lost: u64,
    /// `--idle-connections`, held open beside the clients.
    pub idle: u64,
    /// Each cause's connect times summed, by its name above (`per_transaction`...): its mean
    /// connect apart from the others'.
    #[serde(default)]
    pub connect_s: BTreeMap<String, f64>,
    /// Tries that did not get a connection (or could not prepare on it), and the first's
    /// message.
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// Connect time of every connection opened.
    pub connect_ms: Latency,
    /// The storm: the clients whose first connections were opened at once, and the seconds
    /// from the first starting to connect until all were connected.
    pub storm_clients: u32,
    pub storm_s: f64,
    /// `--idle-connections`: seconds from the first starting to open until all were open.
    #[serde(default)]
    pub idle_s: f64,
    /// The connect-time histogram (µs), HdrHistogram V2-serialized (a shard's, for `merge`).
    #[serde(skip)]
    pub histogram: Vec<u8>,
}

impl Connections {
    /// Connections replaced at the end of their life (`--reconnect-every`, `--reconnect-after`).
    pub fn by_lifetime(&self) -> u64 {
        self.by_count + self.by_age
    }

    /// The mean connect time of the `n` connections opened for `cause`, in ms.
    pub fn mean_connect_ms(&self, cause: ConnectCause, n: u64) -> f64 {
        self.connect_s.get(cause.name()).copied().unwrap_or(0.0) * 1000.0 / n.max(1) as f64
    }

    /// The summary's line: "connections: 812 opened (800 by -C), connect mean 1.21 ms, p99
    /// 3.4 ms; connected 8 clients in 0.031 s".
    pub fn line(&self) -> String {
        let idle = format!(
            "idle, all open in {:.3} s, connect mean {:.2} ms",
            self.idle_s,
            self.mean_connect_ms(ConnectCause::Idle, self.idle)
        );
        let mut causes = Vec::new();
        for (n, what) in [
            (self.per_transaction, "by -C"),
            (self.by_lifetime(), "reconnects by lifetime"),
            (self.after_lost, "after lost ones"),
            (self.idle, idle.as_str()),
            (self.failed, "failed"),
        ] {
            if n > 0 {
                causes.push(format!("{n} {what}"));
            }
        }
        let causes = if causes.is_empty() {
            String::new()
        } else {
            format!(" ({})", causes.join(", "))
        };
        let l = &self.connect_ms;
        format!(
            "{} opened{causes}, connect mean {:.2} ms, p99 {:.2} ms, max {:.2} ms; connected {} clients in {:.3} s",
            self.opened, l.mean, l.p99, l.max, self.storm_clients, self.storm_s
        )
    }

    /// A shard's connections added to these (`merge`): counts summed, histograms added, the
    /// storm the slowest shard's over all shards' clients.
    pub fn add(&mut self, other: &Connections) -> Result<(), String> {
        // An empty one: nothing added yet (or a result from before connect times were kept).
        let read = |bytes: &[u8]| match bytes.is_empty() {
            true => Ok(histogram(3)),
            false => super::deserialize(bytes),
        };
        let mut hist = read(&self.histogram)?;
        hist.add(read(&other.histogram)?)
            .map_err(|e| format!("adding connect-time histograms: {e}"))?;
        self.opened += other.opened;
        self.initial += other.initial;
        self.per_transaction += other.per_transaction;
        self.by_count += other.by_count;
        self.by_age += other.by_age;
        self.after_lost += other.after_lost;
        self.idle += other.idle;
        for (cause, secs) in &other.connect_s {
            *self.connect_s.entry(cause.clone()).or_default() += secs;
        }
        self.failed += other.failed;
        if self.first_failure.is_none() {
            self.first_failure.clone_from(&other.first_failure);
        }
        self.storm_clients += other.storm_clients;
        self.storm_s = self.storm_s.max(other.storm_s);
        self.idle_s = self.idle_s.max(other.idle_s);
        self.connect_ms = Latency::of(&hist);
        self.histogram = serialize(&hist);
        Ok(())
    }
}

/// The aggregator's part: the counts and the connect-time histogram.
pub struct Acc {
    hist: Histogram<u64>,
    figures: Connections,
}

impl Default for Acc {
    fn default() -> Acc {
        Acc {
            hist: histogram(3),
            figures: Connections::default(),
        }
    }
}

impl Acc {
    /// Take a connection event; false for any other.
    pub fn add(&mut self, event: &Event) -> bool {
        let f = &mut self.figures;
        match event {
            Event::Connected(cause, took) => {
                f.opened += 1;
                *match cause {
                    ConnectCause::Initial => &mut f.initial,
                    ConnectCause::Transaction => &mut f.per_transaction,
                    ConnectCause::Count => &mut f.by_count,
                    ConnectCause::Age => &mut f.by_age,
                    ConnectCause::Lost => &mut f.after_lost,
                    ConnectCause::Idle => &mut f.idle,
                } += 1;
                *f.connect_s.entry(cause.name().to_string()).or_default() += took.as_secs_f64();
                self.hist
                    .saturating_record((took.as_micros() as u64).max(1));
            }
            Event::ConnectFailed(_, message) => {
                f.failed += 1;
                f.first_failure.get_or_insert_with(|| message.clone());
            }
            Event::Storm(clients, took) => {
                f.storm_clients = *clients;
                f.storm_s = took.as_secs_f64();
            }
            Event::IdleOpened(took) => f.idle_s = took.as_secs_f64(),
            _ => return false,
        }
        true
    }

    pub fn finish(self) -> Connections {
        Connections {
            connect_ms: Latency::of(&self.hist),
            histogram: serialize(&self.hist),
            ..self.figures
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn acc(events: &[Event]) -> Connections {
        let mut acc = Acc::default();
        for e in events {
            assert!(acc.add(e));
        }
        acc.finish()
    }

    #[test]
    fn connections_are_counted_by_cause_and_timed_and_shards_add() {
        let ms = Duration::from_millis;
        let a = acc(&[
            Event::Storm(2, ms(30)),
            Event::Connected(ConnectCause::Initial, ms(10)),
            Event::Connected(ConnectCause::Initial, ms(20)),
            Event::Connected(ConnectCause::Count, ms(4)),
            Event::Connected(ConnectCause::Age, ms(6)),
            Event::ConnectFailed(ConnectCause::Count, "too many clients".into()),
            Event::Connected(ConnectCause::Idle, ms(3)),
            Event::Connected(ConnectCause::Idle, ms(5)),
            Event::IdleOpened(ms(7)),
        ]);
        assert_eq!(
            (a.opened, a.initial, a.by_lifetime(), a.failed),
            (6, 2, 2, 1)
        );
        assert!(
            a.line()
                .contains("2 idle, all open in 0.007 s, connect mean 4.00 ms"),
            "{}",
            a.line()
        );
        assert_eq!(a.first_failure.as_deref(), Some("too many clients"));
        assert!((a.connect_ms.mean - 8.0).abs() < 0.1, "{:?}", a.connect_ms);
        assert!(
            a.line().contains("2 reconnects by lifetime"),
            "{}",
            a.line()
        );
        assert!(
            a.line().ends_with("connected 2 clients in 0.030 s"),
            "{}",
            a.line()
        );
        let mut b = acc(&[
            Event::Storm(1, ms(50)),
            Event::Connected(ConnectCause::Transaction, ms(40)),
        ]);
        b.add(&a).unwrap();
        let mut none = Connections::default();
        none.add(&b).unwrap();
        assert_eq!((none.opened, none.histogram.len()), (7, b.histogram.len()));
        assert_eq!((b.opened, b.per_transaction, b.storm_clients), (7, 1, 3));
        assert!((b.connect_s["idle"] - 0.008).abs() < 1e-9);
        assert!((b.mean_connect_ms(ConnectCause::Transaction, 1) - 40.0).abs() < 1e-9);
        assert!((b.storm_s - 0.05).abs() < 1e-9);
        // The idle ones of the shard that took longest.
        assert!((b.idle_s - 0.007).abs() < 1e-9);
        assert!(
            (b.connect_ms.mean - 88.0 / 7.0).abs() < 0.1,
            "{:?}",
            b.connect_ms
        );
        assert!((b.connect_ms.max - 40.0).abs() < 0.1, "{:?}", b.connect_ms);
    }
}
