//! The thin binary: parse the command line, call `dbduel::run`, map the outcome to an exit code.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use dbduel::Outcome;
use dbduel::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // SIGPIPE stays ignored: a closed socket must be an error, not the end of the process, and
    // a closed stdout or stderr only loses the lines written to it (`out!`, `errln!`), never
    // the files still to be written or the servers still to be stopped.
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        dbduel::errln!(
            "\ndbduel: interrupted, stopping the clients (Ctrl-C again to quit at once)"
        );
    });
    raise_open_files();
    match dbduel::run(cli, stop) {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Failures) => ExitCode::from(1),
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        Err(e) => {
            dbduel::errln!("dbduel: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Each client holds its connection and a second handle on it (to shut it down if it is stuck
/// at the end of a run): raise the soft limit on open files to the hard one, as servers do, so
/// that a run of many clients does not meet the usual 1024.
fn raise_open_files() {
    // SAFETY: reads and sets this process's own limit.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
