//! Writing to stdout and stderr without ending the command when the reader has gone: every line
//! dbduel prints goes through `out!`, `outln!`, `err!` and `errln!`, and a failed write (a closed
//! pipe: `dbduel run ... | head -1`) loses the lines it would have read, never the result files
//! still to be written or the servers still to be stopped (SIGPIPE stays ignored: a closed socket
//! is an error, not the end of the process). And sizes in the units people read.

/// `print!` that ignores a failed write (a closed pipe) instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `println!` that ignores a failed write (a closed pipe) instead of panicking.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprint!` that ignores a failed write (a closed pipe) instead of panicking.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `eprintln!` that ignores a failed write (a closed pipe) instead of panicking.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// A size as people read it: 512 B, 1.5 KiB, 20.0 MiB.
pub fn human_bytes(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < units.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[unit])
    }
}
