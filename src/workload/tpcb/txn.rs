//! pgbench's built-in scripts, statement for statement: tpcb-like, simple-update, select-only.
//! Parameters are drawn as pgbench's `\set ... random(lo, hi)` lines draw them, from the
//! same generator: one seed gives pgbench's values.

use super::{ACCOUNTS, BRANCHES, TELLERS, Variant};
use crate::engine::{DbResult, Session, StmtId, Value};
use crate::sql::SqlSet;
use crate::workload::script::rand::Prng;
use crate::workload::{Client, one_row};

pub struct TpcbClient {
    rng: Prng,
    variant: Variant,
    scale: i64,
    stmts: [StmtId; 5],
    aid: i64,
    bid: i64,
    tid: i64,
    delta: i64,
    /// The built-in script's command running, numbered as pgbench numbers it (from 0, its
    /// `\set` lines first), for `--verbose-errors`.
    command: usize,
}

impl TpcbClient {
    pub fn new(
        sql: &SqlSet,
        s: &mut dyn Session,
        variant: Variant,
        scale: u32,
        rng: Prng,
    ) -> DbResult<TpcbClient> {
        let names = [
            "update_account",
            "select_account",
            "update_teller",
            "update_branch",
            "insert_history",
        ];
        let mut stmts = [StmtId(0); 5];
        for (slot, name) in stmts.iter_mut().zip(names) {
            *slot = s.prepare(sql.get(name))?;
        }
        Ok(TpcbClient {
            rng,
            variant,
            scale: scale as i64,
            stmts,
            aid: 0,
            bid: 0,
            tid: 0,
            delta: 0,
            command: 0,
        })
    }
}

impl Client for TpcbClient {
    fn failed_command(&self) -> Option<usize> {
        Some(self.command)
    }

    fn next(&mut self) -> usize {
        // \set aid random(1, 100000 * :scale) ... \set delta random(-5000, 5000); select-only
        // sets aid alone.
        self.aid = self.rng.uniform(1, ACCOUNTS * self.scale);
        if self.variant != Variant::SelectOnly {
            self.bid = self.rng.uniform(1, BRANCHES * self.scale);
            self.tid = self.rng.uniform(1, TELLERS * self.scale);
            self.delta = self.rng.uniform(-5000, 5000);
        }
        0
    }

    fn execute(&mut self, s: &mut dyn Session) -> DbResult<u32> {
        let [upd_acc, sel_acc, upd_tel, upd_br, ins_hist] = self.stmts;
        let (aid, bid, tid, delta) = (
            Value::Int(self.aid),
            Value::Int(self.bid),
            Value::Int(self.tid),
            Value::Int(self.delta),
        );
        if self.variant == Variant::SelectOnly {
            // \set aid, then the SELECT.
            self.command = 1;
            s.exec(sel_acc, &[aid])?;
            return Ok(1);
        }
        // Four \set lines, then BEGIN.
        self.command = 4;
        s.begin(true)?;
        self.command = 5;
        one_row(
            s.exec(upd_acc, &[delta.clone(), aid.clone()])?,
            "pgbench_accounts",
        )?;
        self.command = 6;
        s.exec(sel_acc, std::slice::from_ref(&aid))?;
        if self.variant == Variant::TpcbLike {
            self.command = 7;
            one_row(
                s.exec(upd_tel, &[delta.clone(), tid.clone()])?,
                "pgbench_tellers",
            )?;
            self.command = 8;
            one_row(
                s.exec(upd_br, &[delta.clone(), bid.clone()])?,
                "pgbench_branches",
            )?;
        }
        self.command += 1;
        s.exec(ins_hist, &[tid, bid, aid, delta])?;
        self.command += 1;
        s.commit()?;
        // BEGIN, the statements, END.
        Ok(if self.variant == Variant::TpcbLike {
            7
        } else {
            5
        })
    }
}
