//! The thin binary: parse the command line, call `dbduel::run`, map the outcome to an exit code (0
//! success, 1 finished with failures, 130 interrupted, otherwise the error's own, from error.rs).
//! Ctrl-C: the first stops the clients (the run ends and keeps its partial result), the second
//! quits at once.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use dbduel::Outcome;
use dbduel::cli::Cli;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return refused(&e),
    };
    if let Some(name) = cli.bare_h() {
        let mut command = <Cli as clap::CommandFactory>::command();
        command.build();
        if let Some(sub) = command.find_subcommand_mut(name) {
            let _ = sub.print_help();
        }
        return ExitCode::SUCCESS;
    }
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

/// The argument parser's refusal in one line, as dbduel's own (exit 2); help and version as
/// clap prints them (exit 0).
fn refused(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind::{
        DisplayHelp, DisplayHelpOnMissingArgumentOrSubcommand, DisplayVersion,
    };
    if matches!(e.kind(), DisplayHelp | DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return ExitCode::from(2);
    }
    let text = e.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let tip = lines
        .find_map(|l| l.strip_prefix("tip: "))
        .map(|t| format!("; {t}"))
        .unwrap_or_default();
    // "Usage: dbduel run [OPTIONS] [WORKLOAD]": the command, for where to read more.
    let command: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("Usage: "))
        .map(|u| {
            u.split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<']))
                .collect()
        })
        .unwrap_or_default();
    let usage = match command.is_empty() {
        true => String::new(),
        false => format!(" (see `{} --help`)", command.join(" ")),
    };
    dbduel::errln!("dbduel: {first}{tip}{usage}");
    ExitCode::from(2)
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
