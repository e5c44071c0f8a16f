//! Firebird's lock manager figures for `Session::stats`, from a server on this machine: one
//! `fb_lock_print -i` process for the sampler's session, printing the lock table's counters
//! each second, of which these are kept as running totals (`fb_lock_print.wait`, ...): lock
//! waits (a headline), timeouts, rejects (NO WAIT requests refused), enqueues, conversions,
//! blocking notices, deadlock scans and deadlocks, and the lock table's acquisitions and the
//! waits for its mutex. Those the table's header counts since it was made start from its
//! header's values (read once, `fb_lock_print` alone), as the server's other counters start
//! from theirs; waits and timeouts, which it does not count, from zero. The server's lock table
//! is found from its process (`MON$ATTACHMENTS.MON$SERVER_PID`): the directory of the
//! `fb_lock_*` file it has mapped, and the database file it serves (`MON$DATABASE_NAME`).
//! A server elsewhere, or one whose process this user may not read, has none, and the
//! reading says why once.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::engine::Session;
use crate::engine::stats::{Kind, Role, Stat};

/// The counters' names: `fb_lock_print.` and the column's, without its `/s`.
const PREFIX: &str = "fb_lock_print.";

/// The lock manager's counters for one database, read by a child process until dropped.
pub struct LockTable {
    child: Child,
    totals: Arc<Mutex<Totals>>,
}

/// The columns kept (`fb_lock_print -i`'s, without `/s`), with the header's name for the
/// same count where it has one.
const KEPT: [(&str, Option<&str>); 10] = [
    ("wait", None),
    ("timeout", None),
    ("reject", Some("Rejects")),
    ("enqueue", Some("Enqs")),
    ("convert", Some("Converts")),
    ("blckast", Some("Blocks")),
    ("dlkscan", Some("Deadlock scans")),
    ("deadlck", Some("Deadlocks")),
    ("acquire", Some("Acquires")),
    ("acqwait", Some("Acquire blocks")),
];

/// What the child has printed so far: its columns and each one's sum over the seconds, on
/// top of the header's counts (by the header's names).
#[derive(Debug, Default, PartialEq)]
struct Totals {
    base: Vec<(String, f64)>,
    columns: Vec<String>,
    sums: Vec<f64>,
    seconds: u32,
    /// Its last words when it printed something else (the lock table gone).
    said: Option<String>,
}

impl Totals {
    /// One line of `fb_lock_print -i`: its header (a time, then the columns), a second's
    /// rates (a time, then numbers), or its closing average (left out: the sums have it).
    fn line(&mut self, line: &str) {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { return };
        let rest: Vec<&str> = words.collect();
        if !is_time(first) {
            if first != "Average:" {
                self.said = Some(line.trim().to_string());
            }
            return;
        }
        if rest.iter().any(|w| w.ends_with("/s")) {
            self.columns = rest.iter().map(|w| w.to_string()).collect();
            self.sums = vec![0.0; self.columns.len()];
            return;
        }
        let values: Option<Vec<f64>> = rest.iter().map(|w| w.parse().ok()).collect();
        match values {
            Some(v) if v.len() == self.columns.len() => {
                for (sum, x) in self.sums.iter_mut().zip(v) {
                    *sum += x;
                }
                self.seconds += 1;
            }
            _ => self.said = Some(line.trim().to_string()),
        }
    }

    /// The kept columns' counts so far, as cumulative counters (the header's count at the
    /// start and the seconds' since); lock waits are a headline.
    fn stats(&self) -> Vec<Stat> {
        let base = |header: Option<&str>| {
            self.base
                .iter()
                .find(|(n, _)| Some(n.as_str()) == header)
                .map_or(0.0, |(_, v)| *v)
        };
        KEPT.iter()
            .filter_map(|&(name, header)| {
                let i = self
                    .columns
                    .iter()
                    .position(|c| c == &format!("{name}/s"))?;
                let value = base(header) + self.sums[i];
                let mut stat = Stat::new(format!("{PREFIX}{name}"), value, Kind::Cumulative);
                if name == "wait" {
                    stat.roles.push(Role::Headline);
                }
                Some(stat)
            })
            .collect()
    }
}

/// The lock table header's counts (`Enqs:  20428, Converts:     14, ...`), by their names.
fn header_counts(printed: &str) -> Vec<(String, f64)> {
    printed
        .lines()
        .flat_map(|l| l.split(','))
        .filter_map(|part| {
            let (name, value) = part.split_once(':')?;
            Some((name.trim().to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// `HH:MM:SS`, as the child stamps its lines.
fn is_time(word: &str) -> bool {
    let b = word.as_bytes();
    b.len() == 8
        && b[2] == b':'
        && b[5] == b':'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 2 || i == 5 || c.is_ascii_digit())
}

impl LockTable {
    /// Start reading the lock table of the database `session` is attached to, on a server on
    /// this machine (`local`); the reason when it cannot be read.
    pub fn open(session: &mut dyn Session, local: bool) -> Result<LockTable, String> {
        if !local {
            return Err(
                "the server is not on this machine, and its lock table is read only where it runs"
                    .into(),
            );
        }
        let rows = session
            .query_text(
                "SELECT a.MON$SERVER_PID, d.MON$DATABASE_NAME FROM MON$ATTACHMENTS a \
                 CROSS JOIN MON$DATABASE d WHERE a.MON$ATTACHMENT_ID = CURRENT_CONNECTION",
            )
            .map_err(|e| format!("the server's process was not named: {}", e.message))?;
        let row = rows.first().ok_or("the server named no process")?;
        let pid = row.first().and_then(|v| v.as_i64()).unwrap_or(0);
        let database = row.get(1).map(|v| v.to_string()).unwrap_or_default();
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let dir = lock_dir(&proc)?;
        let program = program(&proc).ok_or(
            "fb_lock_print was not found: it comes with the server (Debian's firebird3.0-server); put its directory on PATH",
        )?;
        let database = database.trim();
        // The header's counts now, from which the kept ones go on.
        let header = Command::new(&program)
            .args(["-d", database])
            .env("FIREBIRD_LOCK", &dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("{} could not start: {e}", program.display()))?;
        let base = header_counts(&String::from_utf8_lossy(&header.stdout));
        if base.iter().all(|(n, _)| n != "Enqs") {
            return Err(format!(
                "{} found no lock table for {database} in {}",
                program.display(),
                dir.display()
            ));
        }
        let mut cmd = Command::new(&program);
        cmd.args(["-d", database, "-i", "1", "1000000"])
            .env("FIREBIRD_LOCK", &dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // SAFETY: prctl is async-signal-safe; it runs in the child after fork, before exec:
        // a dbduel that dies leaves no reader behind.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("{} could not start: {e}", program.display()))?;
        let totals = Arc::new(Mutex::new(Totals {
            base,
            ..Totals::default()
        }));
        let out = child.stdout.take().expect("piped");
        let kept = totals.clone();
        let read = std::thread::Builder::new()
            .name("fb_lock_print".into())
            .spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    kept.lock().unwrap_or_else(|p| p.into_inner()).line(&line);
                }
            });
        if let Err(e) = read {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no thread to read fb_lock_print: {e}"));
        }
        Ok(LockTable { child, totals })
    }

    /// The counts so far (none before its first line), and what it said instead of counts.
    pub fn read(&self) -> (Vec<Stat>, Option<String>) {
        let t = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        (t.stats(), t.said.clone())
    }
}

impl Drop for LockTable {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The directory of the lock file the server's process has mapped (`fb_lock_<id>`), where
/// `fb_lock_print` finds the database's table (its FIREBIRD_LOCK).
fn lock_dir(proc: &Path) -> Result<PathBuf, String> {
    let maps = std::fs::read_to_string(proc.join("maps")).map_err(|e| {
        format!(
            "the server's process could not be read ({}: {e}); run dbduel as the server's user",
            proc.join("maps").display()
        )
    })?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(Path::new)
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("fb_lock_"))
        })
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            format!(
                "the server's process ({}) has no lock table mapped: is it Firebird's?",
                proc.display()
            )
        })
}

/// `fb_lock_print` beside the server's own binary, else on PATH, else in /opt/firebird/bin.
fn program(proc: &Path) -> Option<PathBuf> {
    let beside = std::fs::read_link(proc.join("exe"))
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf));
    let path = std::env::var_os("PATH").unwrap_or_default();
    beside
        .into_iter()
        .chain(std::env::split_paths(&path))
        .chain([
            PathBuf::from("/usr/bin"),
            PathBuf::from("/opt/firebird/bin"),
        ])
        .map(|d| d.join("fb_lock_print"))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRINTED: &str = "\
02:10:31 acquire/s acqwait/s  %acqwait acqrtry/s    wait/s  reject/s deadlck/s
02:10:32     25006       459         1         0       758       412         0
02:10:33     24122       392         1         0       662       457         1

Average:     24564       425         1         0       710       434         0
";

    #[test]
    fn the_seconds_add_up_and_the_percentage_is_left_out() {
        let mut t = Totals::default();
        PRINTED.lines().for_each(|l| t.line(l));
        assert_eq!(t.seconds, 2);
        assert_eq!(t.said, None);
        let stats = t.stats();
        let get = |n: &str| stats.iter().find(|s| s.name == n).map(|s| s.value);
        assert_eq!(get("fb_lock_print.wait"), Some(1420.0));
        assert_eq!(get("fb_lock_print.acquire"), Some(49128.0));
        assert_eq!(get("fb_lock_print.deadlck"), Some(1.0));
        assert_eq!(get("fb_lock_print.%acqwait"), None);
        // Kept columns only: the retries of an acquisition are not.
        assert_eq!(get("fb_lock_print.acqrtry"), None);
        assert_eq!(stats.len(), 5);
        let wait = stats.iter().find(|s| s.name == "fb_lock_print.wait");
        assert_eq!(wait.map(|s| s.roles.clone()), Some(vec![Role::Headline]));
        assert!(stats.iter().all(|s| s.kind == Kind::Cumulative));
    }

    #[test]
    fn the_headers_counts_are_where_the_seconds_start() {
        let header = "LOCK_HEADER BLOCK\n\tVersion: 146, Creation timestamp: 2026-12-06 02:10:23\n\
            \tEnqs:  20428, Converts:     14, Rejects:    618, Blocks:      2\n\
            \tDeadlock scans:      0, Deadlocks:      0, Scan interval:  10\n\
            \tAcquires:  43762, Acquire blocks:    649, Spin count:   0\n\tMutex wait: 1.5%\n";
        let mut t = Totals {
            base: header_counts(header),
            ..Totals::default()
        };
        PRINTED.lines().for_each(|l| t.line(l));
        let stats = t.stats();
        let get = |n: &str| stats.iter().find(|s| s.name == n).map(|s| s.value);
        assert_eq!(get("fb_lock_print.acquire"), Some(43762.0 + 49128.0));
        assert_eq!(get("fb_lock_print.acqwait"), Some(649.0 + 851.0));
        assert_eq!(get("fb_lock_print.reject"), Some(618.0 + 869.0));
        // The header does not count waits.
        assert_eq!(get("fb_lock_print.wait"), Some(1420.0));
    }

    #[test]
    fn words_in_place_of_counts_are_kept() {
        let mut t = Totals::default();
        t.line("shmem_data->sh_mem_length_mapped is 0");
        t.line("Unable to access lock table.");
        assert_eq!(t.said.as_deref(), Some("Unable to access lock table."));
        assert!(t.stats().is_empty());
        // A line of the wrong width is not counted.
        PRINTED.lines().take(1).for_each(|l| t.line(l));
        t.line("02:10:32 1 2 3");
        assert_eq!(t.seconds, 0);
    }

    #[test]
    fn a_process_without_a_lock_table_is_said() {
        let me = PathBuf::from("/proc/self");
        let e = lock_dir(&me).unwrap_err();
        assert!(e.contains("no lock table mapped"), "{e}");
        let e = lock_dir(Path::new("/proc/0")).unwrap_err();
        assert!(e.contains("could not be read"), "{e}");
    }
}
