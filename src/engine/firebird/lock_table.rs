//! Firebird's lock manager figures for `Session::stats`, from a server on this machine: the
//! counters in its lock table's header (those `fb_lock_print -d` prints, and the waits it
//! prints only with `-i`), read from the table's file with one positioned read per reading.
//! Nothing is mapped, no process is started, no lock is taken, and the file is never created:
//! the server cannot tell it is read. The file is found from the server's process
//! (`MON$ATTACHMENTS.MON$SERVER_PID`): the one it maps whose name is the database file's
//! identity (`fb_lock_` and its device and inode in hex, as Firebird names it), else in
//! Firebird's default directory. Only the layout this was checked against is read (the 64-bit
//! table of Firebird 3, version 146); another says so once, as does a server elsewhere.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::engine::Session;
use crate::engine::stats::{Kind, Role, Stat};

/// The counters' names: this, and the header field's name without its `lhb_`.
const PREFIX: &str = "lock_manager.";

/// The table versions read, with where their counters are: Firebird 3's 64-bit table (146).
const VERSION: u16 = 146;

/// The header's counters kept (all `FB_UINT64`, since the table was made), by their offset in
/// version 146's header: `lhb_` and the name, as Firebird's source calls them.
const COUNTERS: [(usize, &str); 13] = [
    (0xa8, "acquires"),
    (0xb0, "acquire_blocks"),
    (0xc8, "enqs"),
    (0xd0, "converts"),
    (0xd8, "downgrades"),
    (0xe0, "deqs"),
    (0x138, "waits"),
    (0x140, "denies"),
    (0x148, "timeouts"),
    (0x150, "blocks"),
    (0x158, "wakeups"),
    (0x160, "scans"),
    (0x168, "deadlocks"),
];

/// The header's bytes read: to the last counter's end.
const HEADER: usize = 0x170;

/// One database's lock table on this machine.
pub struct LockTable {
    path: PathBuf,
}

impl LockTable {
    /// The lock table of the database `session` is attached to, on a server on this machine
    /// (`local`); the reason when it cannot be found.
    pub fn find(session: &mut dyn Session, local: bool) -> Result<LockTable, String> {
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
        let database = database.trim();
        let meta = std::fs::metadata(database).map_err(|e| {
            let what = if e.kind() == std::io::ErrorKind::PermissionDenied {
                "run dbduel as the server's user or in its group"
            } else {
                "is the server on this machine, and not in a container of its own?"
            };
            format!("the database file {database} could not be looked at here ({e}): {what}")
        })?;
        let name = file_name(meta.dev(), meta.ino());
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        let path = mapped(&maps, &name).unwrap_or_else(|| Path::new("/tmp/firebird").join(&name));
        let table = LockTable { path };
        table.read()?;
        Ok(table)
    }

    /// The counters now, or why they could not be read.
    pub fn read(&self) -> Result<Vec<Stat>, String> {
        let mut header = [0u8; HEADER];
        File::open(&self.path)
            .and_then(|f| f.read_exact_at(&mut header, 0))
            .map_err(|e| {
                let what = if e.kind() == std::io::ErrorKind::NotFound {
                    "the database is not open, or the server keeps its lock files elsewhere than \
                     the directory it maps them from"
                } else {
                    "run dbduel as the server's user or in its group"
                };
                format!(
                    "its table {} could not be read ({e}): {what}",
                    self.path.display()
                )
            })?;
        parse(&header)
    }
}

/// Firebird's name for a database's lock table: `fb_lock_`, then the bytes of the database
/// file's device and inode numbers (as `stat` gives them, in the machine's order) in hex.
fn file_name(dev: u64, ino: u64) -> String {
    let hex: String = dev
        .to_ne_bytes()
        .iter()
        .chain(ino.to_ne_bytes().iter())
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("fb_lock_{hex}")
}

/// The path of the file named `name` among those a process maps (`/proc/PID/maps`).
fn mapped(maps: &str, name: &str) -> Option<PathBuf> {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(Path::new)
        .find(|p| p.file_name().and_then(|n| n.to_str()) == Some(name))
        .map(Path::to_path_buf)
}

/// The counters in a lock table's header, once its layout is one this reads: a lock manager's
/// table (`mhb_type` 255), its header version 1 and table version 146, a lock header block
/// (`lhb_type` 1) after the shared memory's header.
fn parse(header: &[u8; HEADER]) -> Result<Vec<Stat>, String> {
    let u16_at = |at: usize| u16::from_le_bytes([header[at], header[at + 1]]);
    if u16_at(0) != 255 || u16_at(2) != 1 || u16_at(0x50) != 1 {
        return Err("its file does not start as a lock table does".into());
    }
    let version = u16_at(4);
    if version != VERSION {
        return Err(format!(
            "its table is version {version}, and dbduel reads only Firebird 3's 64-bit one \
             ({VERSION}); `fb_lock_print -d DATABASE` prints its figures"
        ));
    }
    Ok(COUNTERS
        .iter()
        .map(|&(at, name)| {
            let bytes: [u8; 8] = header[at..at + 8].try_into().expect("eight bytes");
            let mut stat = Stat::new(
                format!("{PREFIX}{name}"),
                u64::from_le_bytes(bytes) as f64,
                Kind::Cumulative,
            );
            if name == "waits" {
                stat.roles.push(Role::Headline);
            }
            stat
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first 0x170 bytes of a Firebird 3.0.11 lock table after a few seconds of tpcb at 4
    /// clients, and what `fb_lock_print -d` printed for it at the same moment: Enqs 40254,
    /// Converts 178, Rejects 238, Blocks 108, Deadlock scans 0, Deadlocks 0, Acquires 85921,
    /// Acquire blocks 854.
    const SAMPLE: &str = "\
        ff00 0100 9200 0000 c4ef 0000 feb6 882b 0000 0000 0000 0000 0000 0000 0000 0000
        8000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
        0000 0000 0000 0000 0000 0000 0000 0000
        0100 0000 a801 0100 0000 0000 5032 0100 c037 0100 c831 0100 c831 0100 6c00 0000
        6c00 0000 a891 0100 e83e 0100 fc3a 0100 7440 0100 8099 0100 4040 0100 0000 1000
        200d 0200 ff1f 0000 4009 0100 0a00 0000 0000 0000 0000 0000 a14f 0100 0000 0000
        5603 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 3e9d 0000 0000 0000
        b200 0000 0000 0000 6c00 0000 0000 0000 399c 0000 0000 0000 ff0d 0000 0000 0000
        0800 0000 0000 0000 0000 0000 0000 0000 892e 0000 0000 0000 0200 0000 0000 0000
        6e58 0000 0000 0000 0000 0000 0000 0000 5154 0000 0000 0000 3400 0000 0000 0000
        b26c 0000 0000 0000 ed06 0000 0000 0000 ee00 0000 0000 0000 0000 0000 0000 0000
        6c00 0000 0000 0000 f706 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000";

    fn sample() -> [u8; HEADER] {
        let hex: String = SAMPLE.split_whitespace().collect();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        bytes.try_into().unwrap()
    }

    fn value(stats: &[Stat], name: &str) -> f64 {
        stats
            .iter()
            .find(|s| s.name == format!("{PREFIX}{name}"))
            .unwrap_or_else(|| panic!("{name} in {stats:?}"))
            .value
    }

    #[test]
    fn the_header_reads_as_fb_lock_print_printed_it() {
        let stats = parse(&sample()).unwrap();
        for (name, printed) in [
            ("enqs", 40254.0),
            ("converts", 178.0),
            ("denies", 238.0),
            ("blocks", 108.0),
            ("scans", 0.0),
            ("deadlocks", 0.0),
            ("acquires", 85921.0),
            ("acquire_blocks", 854.0),
        ] {
            assert_eq!(value(&stats, name), printed, "{name}");
        }
        assert_eq!(value(&stats, "waits"), 1773.0);
        let headlines: Vec<&str> = stats
            .iter()
            .filter(|s| s.roles.contains(&Role::Headline))
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(headlines, ["lock_manager.waits"]);
    }

    #[test]
    fn another_layout_is_named_and_not_read() {
        let mut other = sample();
        other[4] = 147;
        let err = parse(&other).unwrap_err();
        assert!(
            err.contains("version 147") && err.contains("fb_lock_print -d"),
            "{err}"
        );
        let mut not_a_table = sample();
        not_a_table[0x50] = 0;
        assert!(parse(&not_a_table).is_err());
    }

    #[test]
    fn the_file_is_named_by_the_database_files_identity() {
        // A database file on device 0xfe00 at inode 0x98402f.
        assert_eq!(
            file_name(0xfe00, 0x98402f),
            "fb_lock_00fe0000000000002f40980000000000"
        );
        let maps = "7f69b0c2c000-7f69b0d2c000 rw-s 00000000 fe:00 9977916 /srv/run/lock/fb_lock_00fe0000000000002f40980000000000\n\
                    7f69b5a52000-7f69b5b52000 rw-s 00000000 fe:00 9977900 /srv/run/lock/fb_lock_00fe0000000000002340980000000000\n";
        assert_eq!(
            mapped(maps, "fb_lock_00fe0000000000002f40980000000000"),
            Some(PathBuf::from(
                "/srv/run/lock/fb_lock_00fe0000000000002f40980000000000"
            ))
        );
        assert_eq!(mapped(maps, "fb_lock_ff"), None);
    }
}
