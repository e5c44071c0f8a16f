//! dbduel: the same benchmark on every SQL database. `run` dispatches a parsed command line
//! to the commands; everything a test needs is reachable from here, in-process.

#[macro_use]
mod out;
pub mod capacity;
pub mod cli;
mod commands;
pub mod coop;
pub mod dsn;
pub mod engine;
pub mod error;
pub mod event;
pub mod merge;
pub mod metrics;
pub mod point;
pub mod report;
pub mod resample;
pub mod result;
pub mod run_plan;
pub mod runner;
pub mod server;
pub mod sql;
pub mod stats;
pub mod store;
pub mod sweep;
pub mod tune;
pub mod workload;

#[cfg(test)]
mod fuzz;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use cli::{Cli, Command};
pub use error::Error;
pub use point::Outcome;

/// Run one command. `stop` is raised by Ctrl-C.
pub fn run(cli: Cli, stop: Arc<AtomicBool>) -> Result<Outcome, Error> {
    match cli.command {
        Command::List => {
            out!("{}", commands::list());
            Ok(Outcome::Success)
        }
        Command::Prepare(mut args) => {
            run_plan::pgbench_connection(&mut args.target, Some(&mut args.ycsb), true)?;
            let (target, opts) = run_plan::prepare_plan(&args)?;
            let dsn = target.dsn.expect("prepare requires --dsn");
            point::prepare(&dsn, &target.engine, target.workload, &opts, &stop, false)
                .map(|_| Outcome::Success)
        }
        Command::Check(mut args) => {
            run_plan::pgbench_connection(&mut args, None, false)?;
            commands::check(&run_plan::target(&args, "check")?)
        }
        Command::Cleanup(mut args) => {
            run_plan::pgbench_connection(&mut args, None, false)?;
            commands::cleanup(&run_plan::target(&args, "cleanup")?)
        }
        Command::Run(mut args) => {
            if let Some(text) = run_plan::builtin_listing(&args)? {
                out!("{text}");
                return Ok(Outcome::Success);
            }
            let scripts = args.files.is_empty();
            run_plan::pgbench_connection(&mut args.target, Some(&mut args.ycsb), scripts)?;
            commands::run(&run_plan::run_plan(&args)?, &stop)
        }
        Command::Server(args) => commands::server(&args.action),
        Command::Sweep(args) => commands::sweep_cmd(&args, &stop),
        Command::Duel(args) => commands::duel(&args, &stop),
        Command::Report(args) => commands::report_cmd(&args),
        Command::Results(args) => commands::results(&args),
        Command::Compare(args) => commands::compare(&args),
        Command::Merge(args) => commands::merge(&args),
        Command::Capacity(mut args) => {
            let r = &mut args.run;
            run_plan::pgbench_connection(&mut r.target, Some(&mut r.ycsb), r.files.is_empty())?;
            commands::capacity(&args, &stop)
        }
        Command::Tune(args) => commands::tune(&args, &stop),
        Command::Completions { shell } => {
            let mut text = Vec::new();
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "dbduel", &mut text);
            out!("{}", String::from_utf8_lossy(&text));
            Ok(Outcome::Success)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut page)
                .map_err(|e| Error::Io {
                    doing: "render the manual page to",
                    path: "stdout".into(),
                    source: e,
                })?;
            out!("{}", String::from_utf8_lossy(&page));
            Ok(Outcome::Success)
        }
    }
}
