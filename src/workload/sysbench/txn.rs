//! The sysbench scripts' events, statement for statement (oltp_common.lua: execute_*; the
//! oltp_*.lua and select_random_*.lua event functions). As in sysbench, a table is drawn per
//! group of statements and ids per statement; a retried event draws new values.

use super::{Options, Probe, Script};
use crate::engine::{DbResult, Session, StmtId, Value};
use crate::sql::SqlSet;
use crate::workload::Client;
use crate::workload::random::{C_TEMPLATE, PAD_TEMPLATE, Rand};

/// The prepared statements of one sbtest table.
struct Table {
    point: StmtId,
    ranges: [StmtId; 4],
    index_update: StmtId,
    non_index_update: StmtId,
    delete: StmtId,
    insert: StmtId,
    insert_auto: StmtId,
}

pub struct SysbenchClient {
    script: Script,
    opts: Options,
    rand: Rand,
    tables: Vec<Table>,
    /// select_random_*: the one statement on sbtest1, and this client's slice of k.
    random: Option<StmtId>,
    slice: (i64, i64),
    /// probe_select1_x10: ten statements sent as one text.
    select1_x10: String,
}

const RANGES: [&str; 4] = ["simple_range", "sum_range", "order_range", "distinct_range"];

impl SysbenchClient {
    pub fn new(
        sql: &SqlSet,
        s: &mut dyn Session,
        script: Script,
        opts: &Options,
        client_id: u32,
        seed: u64,
    ) -> DbResult<SysbenchClient> {
        let mut tables = Vec::new();
        let probe = matches!(script, Script::Probe(_));
        for n in (1..=opts.tables).filter(|_| !probe) {
            let n = n.to_string();
            let mut prep = |name: &str| s.prepare(&sql.statements(name, &[("n", &n)])[0]);
            tables.push(Table {
                point: prep("point_select")?,
                ranges: [
                    prep(RANGES[0])?,
                    prep(RANGES[1])?,
                    prep(RANGES[2])?,
                    prep(RANGES[3])?,
                ],
                index_update: prep("index_update")?,
                non_index_update: prep("non_index_update")?,
                delete: prep("delete")?,
                insert: prep("insert")?,
                insert_auto: prep("insert_auto")?,
            });
        }
        let random = match script {
            Script::Probe(Probe::Select1x10) => None,
            Script::Probe(_) => Some(s.prepare(&sql.statements(script.name(), &[])[0])?),
            Script::RandomPoints => {
                let marks = vec!["?"; opts.random_points as usize].join(", ");
                Some(s.prepare(&sql.statements("random_points", &[("marks", &marks)])[0])?)
            }
            Script::RandomRanges => {
                let ranges = vec!["k BETWEEN ? AND ?"; opts.number_of_ranges as usize].join(" OR ");
                Some(s.prepare(&sql.statements("random_ranges", &[("ranges", &ranges)])[0])?)
            }
            _ => None,
        };
        // select_random_*: rlen = table_size / threads; this client's k values in [rmin, rmax].
        let rlen = opts.table_size / i64::from(opts.clients);
        let rmin = rlen * i64::from(client_id % opts.clients);
        Ok(SysbenchClient {
            script,
            opts: opts.clone(),
            rand: Rand::new(seed, opts.dist),
            tables,
            random,
            slice: (rmin, rmin + rlen),
            select1_x10: sql.get("probe_select1_x10").to_string(),
        })
    }

    fn table(&mut self) -> usize {
        self.rand.uniform(1, i64::from(self.opts.tables)) as usize - 1
    }

    fn id(&mut self) -> i64 {
        self.rand.default(1, self.opts.table_size)
    }

    fn point_selects(&mut self, s: &mut dyn Session, count: u32) -> DbResult<u32> {
        let t = self.table();
        for _ in 0..count {
            let id = self.id();
            s.exec(self.tables[t].point, &[Value::Int(id)])?;
        }
        Ok(count)
    }

    fn ranges(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let counts = [
            self.opts.simple_ranges,
            self.opts.sum_ranges,
            self.opts.order_ranges,
            self.opts.distinct_ranges,
        ];
        let mut n = 0;
        for (kind, count) in counts.into_iter().enumerate() {
            let t = self.table();
            for _ in 0..count {
                let id = self.id();
                s.exec(
                    self.tables[t].ranges[kind],
                    &[Value::Int(id), Value::Int(id + self.opts.range_size - 1)],
                )?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn index_updates(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let t = self.table();
        for _ in 0..self.opts.index_updates {
            let id = self.id();
            s.exec(self.tables[t].index_update, &[Value::Int(id)])?;
        }
        Ok(self.opts.index_updates)
    }

    fn non_index_updates(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let t = self.table();
        for _ in 0..self.opts.non_index_updates {
            let c = self.rand.string(C_TEMPLATE);
            let id = self.id();
            s.exec(
                self.tables[t].non_index_update,
                &[Value::Text(c), Value::Int(id)],
            )?;
        }
        Ok(self.opts.non_index_updates)
    }

    /// The same id deleted, then inserted again with a new k, c and pad.
    fn delete_inserts(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let t = self.table();
        for _ in 0..self.opts.delete_inserts {
            let (id, k) = (self.id(), self.id());
            let (c, pad) = (self.rand.string(C_TEMPLATE), self.rand.string(PAD_TEMPLATE));
            s.exec(self.tables[t].delete, &[Value::Int(id)])?;
            s.exec(
                self.tables[t].insert,
                &[
                    Value::Int(id),
                    Value::Int(k),
                    Value::Text(c),
                    Value::Text(pad),
                ],
            )?;
        }
        Ok(self.opts.delete_inserts * 2)
    }

    /// read_only, read_write, write_only: the groups inside BEGIN/COMMIT unless --skip-trx.
    fn transaction(&mut self, s: &mut dyn Session, reads: bool, writes: bool) -> DbResult<u32> {
        let trx = !self.opts.skip_trx;
        if trx {
            s.begin(writes)?;
        }
        let mut n = 0;
        if reads {
            n += self.point_selects(s, self.opts.point_selects)?;
            if self.opts.range_selects {
                n += self.ranges(s)?;
            }
        }
        if writes {
            n += self.index_updates(s)?;
            n += self.non_index_updates(s)?;
            n += self.delete_inserts(s)?;
        }
        if trx {
            s.commit()?;
            n += 2;
        }
        Ok(n)
    }

    /// One probe statement, with ids drawn as sysbench draws them.
    fn probe(&mut self, s: &mut dyn Session, probe: Probe) -> DbResult<u32> {
        let id = self.id();
        let end = Value::Int(id + self.opts.range_size - 1);
        let params: Vec<Value> = match probe {
            Probe::Select1x10 => {
                s.batch(&self.select1_x10)?;
                return Ok(10);
            }
            Probe::Select1 | Probe::Scan | Probe::Sequence => vec![],
            Probe::Point => vec![Value::Int(id)],
            Probe::In10 => (0..10).map(|_| Value::Int(self.id())).collect(),
            Probe::Range | Probe::Join | Probe::Correlated | Probe::InSubquery => {
                vec![Value::Int(id), end]
            }
        };
        s.exec(self.random.expect("probe prepared"), &params)?;
        Ok(1)
    }

    fn random_select(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let (rmin, rmax) = self.slice;
        let params: Vec<Value> = match self.script {
            Script::RandomPoints => (0..self.opts.random_points)
                .map(|_| Value::Int(self.rand.default(rmin, rmax)))
                .collect(),
            _ => (0..self.opts.number_of_ranges)
                .flat_map(|_| {
                    let v = self.rand.default(rmin, rmax);
                    [Value::Int(v), Value::Int(v + self.opts.delta)]
                })
                .collect(),
        };
        s.exec(self.random.expect("prepared for select_random_*"), &params)?;
        Ok(1)
    }
}

impl Client for SysbenchClient {
    fn next(&mut self) -> usize {
        0
    }

    fn execute(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        match self.script {
            Script::PointSelect => self.point_selects(s, 1),
            Script::ReadOnly => self.transaction(s, true, false),
            Script::ReadWrite => self.transaction(s, true, true),
            Script::WriteOnly => self.transaction(s, false, true),
            Script::UpdateIndex => self.index_updates(s),
            Script::UpdateNonIndex => self.non_index_updates(s),
            Script::Insert => {
                let t = self.table();
                let k = self.id();
                let (c, pad) = (self.rand.string(C_TEMPLATE), self.rand.string(PAD_TEMPLATE));
                s.exec(
                    self.tables[t].insert_auto,
                    &[Value::Int(k), Value::Text(c), Value::Text(pad)],
                )?;
                Ok(1)
            }
            Script::Delete => {
                let t = self.table();
                let id = self.id();
                s.exec(self.tables[t].delete, &[Value::Int(id)])?;
                Ok(1)
            }
            Script::RandomPoints | Script::RandomRanges => self.random_select(s),
            Script::Probe(p) => self.probe(s, p),
        }
    }

    /// sysbench restarts an event after a duplicate key on PostgreSQL (a delete+insert race).
    fn retryable(&self, class: &crate::engine::ErrorClass) -> bool {
        class.is_retryable() || *class == crate::engine::ErrorClass::UniqueViolation
    }
}
