//! The thin binary: parse the command line, call `dbduel::run`, map the outcome to an exit code.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use dbduel::Outcome;
use dbduel::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The commands that only print from the store end quietly when their reader goes away
    // (`dbduel results list | head`), as Unix tools do. The others keep SIGPIPE ignored: they
    // talk to servers, and a closed socket must be an error, not the end of the process.
    if matches!(
        cli.command,
        Command::Results(_) | Command::Report(_) | Command::List
    ) {
        // SAFETY: restores the default action of one signal before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\ndbduel: interrupted, stopping the clients (Ctrl-C again to quit at once)");
    });
    match dbduel::run(cli, stop) {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Failures) => ExitCode::from(1),
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        Err(e) => {
            eprintln!("dbduel: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
