//! Writing to stdout and stderr without ending the command when the reader has gone: a
//! closed pipe (`dbduel run ... | head -1`) loses the lines it would have read, never the
//! result files still to be written or the servers still to be stopped.

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
