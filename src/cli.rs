//! Command-line definitions (clap) and nothing else: flags follow pgbench and sysbench.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::engine::Protocol;

#[derive(Debug, Parser)]
#[command(
    name = "dbduel",
    version,
    about = "The same benchmark on every SQL database, with numbers you can trust"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload and print (and optionally save) its result.
    Run(RunArgs),
    /// Create the workload's tables and load its data.
    Prepare(PrepareArgs),
    /// Verify the workload's consistency invariants on a database.
    Check(TargetArgs),
    /// Drop the workload's tables.
    Cleanup(TargetArgs),
    /// List engines and workloads.
    List,
}

#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Workload name (see `dbduel list`).
    pub workload: String,
    /// Database to use: postgres://user:pass@host:port/db, mysql://..., sqlite:///path/file.db
    #[arg(long, env = "DBDUEL_DSN")]
    pub dsn: Option<String>,
    /// MariaDB/MySQL storage engine for created tables: InnoDB (default), MyISAM, Aria.
    #[arg(long, value_name = "ENGINE")]
    pub table_engine: Option<String>,
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Scale factor (tpcb: 1 = 1 branch, 10 tellers, 100,000 accounts).
    #[arg(short = 's', long, default_value_t = 1)]
    pub scale: u32,
    /// Fill factor of the tables, in percent (PostgreSQL; as pgbench -F).
    #[arg(short = 'F', long, value_name = "PERCENT")]
    pub fillfactor: Option<u32>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Number of concurrent clients (one connection each).
    #[arg(short = 'c', long, default_value_t = 1)]
    pub clients: u32,
    /// Measured duration in seconds (default 10 unless --transactions is given).
    #[arg(short = 'T', long, value_name = "SECONDS")]
    pub time: Option<u64>,
    /// Transactions per client instead of a duration.
    #[arg(short = 't', long, value_name = "N")]
    pub transactions: Option<u64>,
    /// Scale factor: used to prepare the temporary SQLite database; with --dsn the scale is
    /// read from the database, as pgbench does.
    #[arg(short = 's', long)]
    pub scale: Option<u32>,
    /// Target total rate in transactions per second (open loop; latency counts from the schedule).
    #[arg(short = 'R', long, value_name = "TPS")]
    pub rate: Option<f64>,
    /// Print a progress line every N seconds.
    #[arg(short = 'P', long, value_name = "SECONDS")]
    pub progress: Option<u64>,
    /// How statements are sent.
    #[arg(short = 'M', long, value_enum, default_value_t = Protocol::Simple)]
    pub protocol: Protocol,
    /// Seconds run before measuring; their transactions are excluded from the result.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub warmup: u64,
    /// Tries of a transaction that met a retryable error (serialization, deadlock, busy...).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub max_tries: u32,
    /// Write the full result as JSON to FILE (schema: schema/result.schema.json).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Built-in script variant (tpcb: tpcb-like, simple-update, select-only).
    #[arg(short = 'b', long, value_name = "NAME")]
    pub builtin: Option<String>,
    /// Shortcut for --builtin select-only.
    #[arg(short = 'S', long)]
    pub select_only: bool,
    /// Shortcut for --builtin simple-update.
    #[arg(short = 'N', long)]
    pub simple_update: bool,
    /// Seed of the clients' random generators (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
}
