//! What the server says its sessions are doing at one instant (`Session::activity`): each
//! session of the run that is not idle between transactions, by wait class and the engine's
//! own name of what it waits on. The classes are the same on every engine, so that one
//! verdict rule (metrics/waits.rs) reads them all; each engine maps its own events here.

use serde::Serialize;

/// What a session of the run spends its time on, in classes every engine maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitClass {
    /// Running on a CPU (PostgreSQL: active and waiting on nothing).
    Cpu,
    /// Running, CPU and I/O not told apart (MariaDB's processlist).
    Running,
    /// Reading data pages from storage.
    DataRead,
    /// Writing and flushing the log at commit (WAL, redo), or waiting for another to.
    Commit,
    /// Waiting for a row, transaction or table lock another session holds.
    Lock,
    /// Waiting for one of the server's internal latches (PostgreSQL's LWLocks, buffer pins).
    Latch,
    /// Idle inside a transaction: the server waits for the client's next statement.
    Client,
    /// Any other wait (IPC, timeouts, extensions).
    Other,
}

impl WaitClass {
    pub const ALL: [WaitClass; 8] = [
        WaitClass::Cpu,
        WaitClass::Running,
        WaitClass::DataRead,
        WaitClass::Commit,
        WaitClass::Lock,
        WaitClass::Latch,
        WaitClass::Client,
        WaitClass::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WaitClass::Cpu => "cpu",
            WaitClass::Running => "running",
            WaitClass::DataRead => "data_read",
            WaitClass::Commit => "commit",
            WaitClass::Lock => "lock",
            WaitClass::Latch => "latch",
            WaitClass::Client => "client",
            WaitClass::Other => "other",
        }
    }
}

/// One session of the run, as sampled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    pub class: WaitClass,
    /// The engine's own name: "CPU", "IO:WALSync", "Lock:transactionid", "row lock wait".
    pub event: String,
    /// A session waiting on a lock: what the session at the head of its queue (the holder, or
    /// the holder's holder while that one waits too) was doing at that instant,
    /// in the same words (PostgreSQL: `pg_blocking_pids`; MariaDB: `INNODB_LOCK_WAITS`; None
    /// where not read).
    pub holder: Option<Holder>,
}

/// What a session holding an awaited lock was doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub class: WaitClass,
    pub event: String,
}

/// The head of a queue of lock waits: from `start`, the holder `next` names, then its holder
/// while it has one, until a session that waits on no one (or a cycle: a deadlock the server
/// has not broken yet, its last new member then). At most 64 steps.
pub fn head_of_queue<K: PartialEq + Clone>(start: K, next: impl Fn(&K) -> Option<K>) -> K {
    let mut seen = vec![start.clone()];
    let mut at = start;
    while let Some(up) = next(&at) {
        if seen.contains(&up) || seen.len() > 64 {
            break;
        }
        seen.push(up.clone());
        at = up;
    }
    at
}

/// A PostgreSQL lock holder from its `pg_stat_activity` state and wait event: as a session of
/// the run would be named; idle between transactions, it holds a session-level lock.
pub fn postgres_holder(state: &str, wait_type: Option<&str>, wait: Option<&str>) -> Holder {
    match postgres(state, wait_type, wait) {
        Some(a) => Holder {
            class: a.class,
            event: a.event,
        },
        None => Holder {
            class: WaitClass::Client,
            event: "Client:idle (a session-level lock)".into(),
        },
    }
}

/// PostgreSQL's `pg_stat_activity` state and wait event of one backend, as a class and an
/// event (None: idle between transactions, not part of the run's load).
pub fn postgres(state: &str, wait_type: Option<&str>, wait: Option<&str>) -> Option<Activity> {
    let named = |class, event: String| {
        Some(Activity {
            class,
            event,
            holder: None,
        })
    };
    if state == "idle" {
        return None;
    }
    if state.starts_with("idle in transaction") {
        return named(WaitClass::Client, "Client:idle in transaction".into());
    }
    let (Some(kind), Some(event)) = (wait_type, wait) else {
        return named(WaitClass::Cpu, "CPU".into());
    };
    let class = match (kind, event) {
        // 17 renamed the IO events "WalSync", "WalWrite"...; the LWLocks kept their names.
        (
            "IO",
            "WALSync" | "WALWrite" | "WALInitSync" | "WALInitWrite" | "WalSync" | "WalWrite"
            | "WalInitSync" | "WalInitWrite",
        ) => WaitClass::Commit,
        ("LWLock", "WALWrite" | "WALWriteLock" | "WALInsert" | "WALBufMapping") => {
            WaitClass::Commit
        }
        ("IPC", "SyncRep") => WaitClass::Commit,
        ("IO", "DataFileRead" | "DataFilePrefetch" | "RelationMapRead" | "BufFileRead") => {
            WaitClass::DataRead
        }
        ("Lock", _) => WaitClass::Lock,
        ("LWLock" | "BufferPin", _) => WaitClass::Latch,
        ("Client", _) => WaitClass::Client,
        _ => WaitClass::Other,
    };
    named(class, format!("{kind}:{event}"))
}

/// A MariaDB/MySQL thread's InnoDB row lock wait (its transaction in LOCK WAIT).
pub const ROW_LOCK_WAIT: &str = "Lock:row lock wait";

/// A MariaDB/MySQL thread as the processlist (`SHOW PROCESSLIST`) and `INNODB_TRX` show it
/// (`trx_state` None: no InnoDB transaction, or INNODB_TRX not readable).
pub fn mysql(command: &str, state: &str, trx_state: Option<&str>) -> Option<Activity> {
    let named = |class, event: &str| {
        Some(Activity {
            class,
            event: event.to_string(),
            holder: None,
        })
    };
    let state = state.to_ascii_lowercase();
    if command == "Sleep" {
        return match trx_state {
            Some(_) => named(WaitClass::Client, "Client:idle in transaction"),
            None => None,
        };
    }
    if trx_state == Some("LOCK WAIT") {
        return named(WaitClass::Lock, ROW_LOCK_WAIT);
    }
    if state.contains("metadata lock") {
        return named(WaitClass::Lock, "Lock:metadata lock");
    }
    if state.contains("table level lock") || state.contains("waiting for table") {
        return named(WaitClass::Lock, "Lock:table lock");
    }
    if state.contains("commit") {
        return named(WaitClass::Commit, "Commit");
    }
    named(WaitClass::Running, "running")
}

/// A Firebird attachment of the run that has a transaction open, as `MON$STATEMENTS` and
/// `MON$RECORD_STATS` show it: its busiest statement's `MON$STATE` (1 active, 2 stalled: a
/// cursor whose rows the client has not fetched; None: no statement running), and whether
/// that statement waits on a record lock. Firebird 3 has no wait events: an active statement
/// is `running` (CPU, reads and the page cache's writes not told apart), and a transaction with
/// no statement running is the client's, whether it waits for the next statement or for its
/// own commit's flush: a commit is no statement, and Firebird 3 marks neither the attachment
/// nor the transaction active during it, so the event names both.
pub fn firebird(statement: Option<i64>, lock_wait: bool) -> Activity {
    let named = |class, event: &str| Activity {
        class,
        event: event.to_string(),
        holder: None,
    };
    match statement {
        Some(1) if lock_wait => named(WaitClass::Lock, "Lock:record wait"),
        Some(1) => named(WaitClass::Running, "running"),
        Some(_) => named(WaitClass::Client, "Client:fetching (statement stalled)"),
        None => named(
            WaitClass::Client,
            "Client:idle in transaction or committing",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_is_followed_to_its_head() {
        // 1 waits on 2, 2 on 3, 3 on no one.
        let next = |k: &u32| [(1, 2), (2, 3)].iter().find(|(a, _)| a == k).map(|p| p.1);
        assert_eq!(head_of_queue(1, next), 3);
        assert_eq!(head_of_queue(3, next), 3);
        // A cycle (a deadlock not yet broken) ends at its last new member.
        let cycle = |k: &u32| Some(if *k == 1 { 2 } else { 1 });
        assert_eq!(head_of_queue(1, cycle), 2);
    }

    #[test]
    fn postgres_lock_holders_in_the_sessions_words() {
        let h = postgres_holder("idle in transaction", Some("Client"), Some("ClientRead"));
        assert_eq!(
            (h.class, h.event.as_str()),
            (WaitClass::Client, "Client:idle in transaction")
        );
        let h = postgres_holder("active", Some("IO"), Some("WALSync"));
        assert_eq!(
            (h.class, h.event.as_str()),
            (WaitClass::Commit, "IO:WALSync")
        );
        let h = postgres_holder("idle", None, None);
        assert_eq!(h.class, WaitClass::Client);
        assert!(h.event.contains("session-level lock"), "{}", h.event);
    }

    #[test]
    fn postgres_events_map_to_their_classes() {
        let class = |s, t, w| postgres(s, t, w).map(|a| a.class);
        assert_eq!(class("idle", None, None), None);
        assert_eq!(class("active", None, None), Some(WaitClass::Cpu));
        assert_eq!(
            class("active", Some("IO"), Some("WALSync")),
            Some(WaitClass::Commit)
        );
        assert_eq!(
            class("active", Some("LWLock"), Some("WALWrite")),
            Some(WaitClass::Commit)
        );
        // PostgreSQL 17 and later (pg_wait_events).
        for event in ["WalSync", "WalWrite", "WalInitSync", "WalInitWrite"] {
            assert_eq!(
                class("active", Some("IO"), Some(event)),
                Some(WaitClass::Commit),
                "{event}"
            );
        }
        assert_eq!(
            class("active", Some("IO"), Some("DataFileRead")),
            Some(WaitClass::DataRead)
        );
        assert_eq!(
            class("active", Some("Lock"), Some("transactionid")),
            Some(WaitClass::Lock)
        );
        assert_eq!(
            class("active", Some("LWLock"), Some("BufferContent")),
            Some(WaitClass::Latch)
        );
        assert_eq!(
            class("idle in transaction", Some("Client"), Some("ClientRead")),
            Some(WaitClass::Client)
        );
        assert_eq!(
            postgres("active", Some("Lock"), Some("tuple"))
                .unwrap()
                .event,
            "Lock:tuple"
        );
    }

    #[test]
    fn mysql_threads_map_to_their_classes() {
        let class = |c, s, t| mysql(c, s, t).map(|a| a.class);
        assert_eq!(class("Sleep", "", None), None);
        assert_eq!(class("Sleep", "", Some("RUNNING")), Some(WaitClass::Client));
        assert_eq!(
            class("Query", "Updating", Some("LOCK WAIT")),
            Some(WaitClass::Lock)
        );
        assert_eq!(
            class("Query", "Waiting for table level lock", None),
            Some(WaitClass::Lock)
        );
        assert_eq!(
            class("Query", "Waiting for table metadata lock", None),
            Some(WaitClass::Lock)
        );
        assert_eq!(
            class("Query", "Commit", Some("RUNNING")),
            Some(WaitClass::Commit)
        );
        assert_eq!(
            class("Execute", "Sending data", Some("RUNNING")),
            Some(WaitClass::Running)
        );
    }

    #[test]
    fn firebird_attachments_map_to_their_classes() {
        assert_eq!(firebird(Some(1), true).class, WaitClass::Lock);
        assert_eq!(firebird(Some(1), true).event, "Lock:record wait");
        assert_eq!(firebird(Some(1), false).class, WaitClass::Running);
        assert_eq!(firebird(Some(2), false).class, WaitClass::Client);
        // A stalled statement waits on its client, whatever it waited on before.
        assert_eq!(firebird(Some(2), true).class, WaitClass::Client);
        assert_eq!(
            firebird(None, false).event,
            "Client:idle in transaction or committing"
        );
    }
}
