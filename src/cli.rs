//! Command-line definitions (clap) and nothing else: flags follow pgbench and sysbench (`-c -T -t
//! -s -R -P -M -S -N -b`). `WorkloadFlags` are the workloads' own flags, built from their registry
//! entries' option tables (`workload/options.rs`), never written here; `HabitArgs` are pgbench's
//! and sysbench's flags that dbduel takes with a note or refuses naming its own way. `completions`
//! and `man` are generated from these definitions (clap_complete, clap_mangen).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::engine::Protocol;
use crate::workload::options::{Kind, Opt, Phase};

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

impl Cli {
    /// The command whose help `-h` alone asked for (pgbench's `-h` takes a host; without one it
    /// is the help, as everywhere else).
    pub fn bare_h(&self) -> Option<&'static str> {
        let (name, target) = match &self.command {
            Command::Run(a) => ("run", &a.target),
            Command::Prepare(a) => ("prepare", &a.target),
            Command::Check(a) => ("check", a),
            Command::Cleanup(a) => ("cleanup", a),
            Command::Capacity(a) => ("capacity", &a.run.target),
            _ => return None,
        };
        (target.host.as_deref() == Some("")).then_some(name)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload and print (and optionally save) its result.
    #[command(disable_help_flag = true, args_override_self = true)]
    Run(Box<RunArgs>),
    /// Create the workload's tables and load its data.
    #[command(disable_help_flag = true, args_override_self = true)]
    Prepare(PrepareArgs),
    /// Verify the workload's consistency invariants on a database.
    #[command(disable_help_flag = true, args_override_self = true)]
    Check(TargetArgs),
    /// Drop the workload's tables.
    #[command(disable_help_flag = true, args_override_self = true)]
    Cleanup(TargetArgs),
    /// List engines and workloads.
    List,
    /// Start, stop or inspect a managed local server.
    Server(ServerArgs),
    /// Run a plan: engines x profiles x workloads x clients x repeats, into the results store.
    Sweep(SweepArgs),
    /// Every engine installed here, default and tuned, at 1, 2, 4 and 8 clients: one table, one report.
    Duel(DuelArgs),
    /// Turn the results store into one HTML file (or markdown tables).
    Report(ReportArgs),
    /// Read the results store back: list, show, export.
    Results(ResultsArgs),
    /// Whether two runs, or two sets of repeats, differ beyond their noise (tps, latency
    /// percentiles), with confidence intervals; --fail-if sets the exit code for CI.
    Compare(CompareArgs),
    /// Merge the results of one run's shards (`run --shard I/N --json FILE` on several
    /// machines) into one result: counts summed, latency histograms merged exactly, windows
    /// aligned on the wall clock.
    Merge(MergeArgs),
    /// The highest rate that meets latency and error objectives (--slo 'p99<10ms'): open-loop
    /// steps at rising rates, then narrowing in; each step -T seconds (longer when its
    /// percentile needs more transactions) after --warmup seconds (2 when not given).
    #[command(disable_help_flag = true, args_override_self = true)]
    Capacity(Box<CapacityArgs>),
    /// Search the engine's knobs on a server dbduel manages (or SQLite's file): candidates
    /// measured by successive halving, the best measured again against default and tuned,
    /// judged against the noise; writes the winner's configuration.
    Tune(TuneArgs),
    /// Print the completion script of a shell (bash, zsh, fish, elvish, powershell), made
    /// from these very flags: `dbduel completions bash > /etc/bash_completion.d/dbduel`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), made from these very flags: `dbduel man > dbduel.1`.
    Man,
}

#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Workload name (see `dbduel list`), or a workload file (FILE.toml); `run` also takes a
    /// pgbench-format script (FILE.sql).
    pub workload: Option<String>,
    /// Database to use: postgres://user:pass@host:port/db, mysql://..., firebird://user:pass@host:port/path.fdb,
    /// sqlite:///path/file.db
    #[arg(long, env = "DBDUEL_DSN", hide_env_values = true)]
    pub dsn: Option<String>,
    /// The managed server whose data directory is DIR (`dbduel server start`): its DSN and
    /// password are read from DIR, so the password never appears on a command line.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["dsn", "password_file"])]
    pub server: Option<std::path::PathBuf>,
    /// Read the password from the first line of FILE (kept out of `ps` and shell history);
    /// PGPASSWORD, ~/.pgpass and MYSQL_PWD work too.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<std::path::PathBuf>,
    /// pgbench's -h: the PostgreSQL host (or socket directory), when no --dsn is given; `-h`
    /// alone, or --help, prints this help.
    #[arg(
        short = 'h',
        long = "host",
        value_name = "HOST",
        num_args = 0..=1,
        default_missing_value = "",
        help_heading = "pgbench's connection options"
    )]
    pub host: Option<String>,
    /// pgbench's -p (or --port): the PostgreSQL port, when no --dsn is given (`-p` with a number;
    /// `-p NAME=VALUE` is YCSB's property).
    #[arg(
        long = "port",
        value_name = "PORT",
        help_heading = "pgbench's connection options"
    )]
    pub port: Option<u16>,
    /// pgbench's -U: the PostgreSQL user, when no --dsn is given.
    #[arg(
        short = 'U',
        long = "username",
        value_name = "USER",
        help_heading = "pgbench's connection options"
    )]
    pub username: Option<String>,
    /// pgbench's DBNAME, after the workload (or in its place: a word that names no workload
    /// and no file, with -h, -p, -U, PGHOST, PGPORT or PGDATABASE; the workload is then tpcb).
    #[arg(value_name = "DBNAME")]
    pub dbname: Option<String>,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// The DSN pgbench's connection options make (`run_plan::pgbench_connection`).
    #[arg(skip)]
    pub pgbench_dsn: Option<crate::dsn::Dsn>,
    /// The server's own limit on each statement, in seconds (PostgreSQL statement_timeout,
    /// MariaDB max_statement_time, MySQL max_execution_time); a statement past it counts as a
    /// statement_timeout error.
    #[arg(long, value_name = "SECONDS")]
    pub statement_timeout: Option<f64>,
    /// MariaDB/MySQL storage engine for created tables: InnoDB (default), MyISAM, Aria.
    #[arg(long, value_name = "ENGINE")]
    pub table_engine: Option<String>,
}

/// The workloads' own options, built from their registry entries' tables
/// (`workload::options`): with `RUN`, every option; without, those of the data (`prepare`).
/// Each is a flag `--table-size` (and `--table_size`, as sysbench spells it) under its
/// workload's heading; what was given reaches the workload as text by name, checked there by
/// `options::parse`.
#[derive(Debug, Default, Clone)]
pub struct WorkloadFlags<const RUN: bool> {
    pub params: std::collections::BTreeMap<String, String>,
}

impl<const RUN: bool> WorkloadFlags<RUN> {
    /// Every option the flags take, once each, with its table's heading.
    fn opts() -> Vec<(&'static str, &'static Opt)> {
        let mut out: Vec<(&'static str, &'static Opt)> = Vec::new();
        for entry in crate::workload::all() {
            for opt in entry.options.opts {
                let wanted = RUN || opt.phase == Phase::Data;
                if wanted && !out.iter().any(|(_, o)| o.name == opt.name) {
                    out.push((entry.options.heading, opt));
                }
            }
        }
        out
    }

    /// An option's help: its own, or, when several workloads take an option of that name
    /// (tpcc's and smallbank's --isolation), each one's, named, with its default.
    fn help(opt: &Opt) -> String {
        let with_default = |o: &Opt| match o.default {
            "" => o.help.to_string(),
            d => format!("{} [{d}]", o.help),
        };
        let mut owners: Vec<(&str, &Opt)> = Vec::new();
        for e in crate::workload::all() {
            let who = e.options.who;
            if let Some(o) = e.options.get(opt.name)
                && !owners.iter().any(|(w, _)| *w == who)
            {
                owners.push((who, o));
            }
        }
        match owners.as_slice() {
            [] | [_] => with_default(opt),
            many => many
                .iter()
                .map(|(who, o)| format!("{who}: {}", with_default(o)))
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

impl<const RUN: bool> clap::FromArgMatches for WorkloadFlags<RUN> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = Self::default();
        flags.update_from_arg_matches(m)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        for (_, opt) in Self::opts() {
            if opt.kind == Kind::Flag {
                if m.get_flag(opt.name) {
                    self.params.insert(opt.name.into(), "on".into());
                }
            } else if let Some(v) = m.get_one::<String>(opt.name) {
                self.params.insert(opt.name.into(), v.clone());
            }
        }
        Ok(())
    }
}

impl<const RUN: bool> Args for WorkloadFlags<RUN> {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        for (heading, opt) in Self::opts() {
            let long = opt.name.replace('_', "-");
            let help = Self::help(opt);
            let mut arg = clap::Arg::new(opt.name)
                .long(long.clone())
                .help(help)
                .help_heading(heading);
            if long != opt.name {
                arg = arg.alias(opt.name);
            }
            if let Some(c) = opt.short {
                arg = arg.short(c);
            }
            arg = if opt.kind == Kind::Flag {
                arg.action(clap::ArgAction::SetTrue)
            } else {
                arg.action(clap::ArgAction::Set).value_name(opt.value_name)
            };
            cmd = cmd.arg(arg);
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// YCSB's overrides, for `prepare` and `run` (YCSB's own -p).
#[derive(Debug, Args, Default)]
#[command(next_help_heading = "YCSB options")]
pub struct YcsbArgs {
    /// A YCSB property, as YCSB's -p (repeatable): -p recordcount=100000.
    #[arg(short = 'p', long = "property", value_name = "NAME=VALUE")]
    pub properties: Vec<String>,
}

#[derive(Debug, Args)]
/// The flattened groups come after the command's own options: a group's help heading holds
/// for every option declared after it.
pub struct PrepareArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Scale factor (tpcb: 1 = 1 branch, 10 tellers, 100,000 accounts).
    #[arg(short = 's', long, default_value_t = 1)]
    pub scale: u32,
    /// Fill factor of the tables, in percent (PostgreSQL; as pgbench -F).
    #[arg(short = 'F', long, value_name = "PERCENT")]
    pub fillfactor: Option<u32>,
    #[command(flatten)]
    pub workload: WorkloadFlags<false>,
    /// YCSB: a property file, or one of the core workloads built in (workloada..workloadf).
    #[arg(short = 'P', long, value_name = "FILE", help_heading = "YCSB options")]
    pub property_file: Option<String>,
    #[command(flatten)]
    pub ycsb: YcsbArgs,
    /// pgbench -i -n: no vacuum after the load (tpcb's -I steps without v).
    #[arg(short = 'n', long = "no-vacuum", hide = true)]
    pub no_vacuum: bool,
    /// pgbench -i -q: quieter logging (taken: dbduel prints a line a table).
    #[arg(short = 'q', long = "quiet", hide = true)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
/// The flattened groups come after the command's own options (see PrepareArgs).
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Number of concurrent clients (one connection each; sysbench's --threads).
    /// [default: 1, or the most clients a --phase asks for]
    #[arg(short = 'c', long, aliases = ["threads", "client"])]
    pub clients: Option<u32>,
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
    /// A phase of a run whose load changes shape, repeated in order: DURATION (30s, 2m, 5m30s)
    /// then :rate=R (open loop), rate=R1..R2 (a linear ramp), or clients=N (closed loop;
    /// clients=0 pauses), with arrival=poisson|regular, mix=TYPE:WEIGHT/TYPE:WEIGHT (the
    /// phase's own mix of the workload's transaction types) and name=NAME; e.g. `--phase
    /// 30s:rate=100 --phase 10s:rate=1000 --phase 30s:rate=100`. `--phase @FILE` reads one phase
    /// a line. The phases together are the run's time.
    #[arg(long, value_name = "SPEC")]
    pub phase: Vec<String>,
    /// A latency limit in milliseconds (pgbench's -L): transactions slower than it (from their
    /// schedule, in an open loop) are counted late; with --rate or rate phases, a transaction
    /// already later than it when its turn comes is skipped, not sent to the server.
    #[arg(short = 'L', long = "latency-limit", value_name = "MS")]
    pub latency_limit: Option<f64>,
    /// Write pgbench's per-transaction log (pgbench's -l), to PREFIX.PID (--log-prefix,
    /// default pgbench_log), in pgbench's format.
    #[arg(short = 'l', long = "log")]
    pub log: bool,
    /// With -l: the log file's prefix (pgbench's --log-prefix).
    #[arg(long, value_name = "PREFIX")]
    pub log_prefix: Option<String>,
    /// With -l: log this fraction of the transactions, 0 < R <= 1 (pgbench's --sampling-rate).
    #[arg(long, value_name = "R")]
    pub sampling_rate: Option<f64>,
    /// With -l: one aggregated line per N seconds instead of a line per transaction (pgbench's
    /// --aggregate-interval).
    #[arg(long, value_name = "N")]
    pub aggregate_interval: Option<i64>,
    /// pgbench's --failures-detailed: the transaction log names a failure's kind
    /// (serialization, deadlock) instead of `failed`, and its aggregated lines count them (the
    /// summary and the JSON always break errors down by kind).
    #[arg(long)]
    pub failures_detailed: bool,
    /// Every error a client meets on stderr, and whether its transaction is tried again or
    /// ends failed (pgbench's --verbose-errors); without it the summary counts them by kind.
    #[arg(long)]
    pub verbose_errors: bool,
    /// With -t: when a client has waited this many seconds inside one transaction and no
    /// transaction has finished meanwhile, the server is taken as stalled and the run ends
    /// (its clients cancelled and named, what was measured kept, exit 1); 0 waits forever.
    /// Default 60, 3600 for tpch and ch.
    #[arg(long, value_name = "SECONDS")]
    pub stall_timeout: Option<u64>,
    /// Stop the run when a client aborts (pgbench's --exit-on-abort): what was measured until
    /// then is kept and the run exits 1; without it the other clients go on.
    #[arg(long)]
    pub exit_on_abort: bool,
    /// Print a progress line every N seconds (sysbench's --report-interval). For ycsb, -P with
    /// a name that is not a number is YCSB's -P: a property file, or a core workload built in
    /// (workloada..workloadf).
    #[arg(short = 'P', long, alias = "report-interval", value_name = "SECONDS")]
    pub progress: Option<String>,
    /// How statements are sent.
    #[arg(short = 'M', long, value_enum, default_value_t = Protocol::Simple)]
    pub protocol: Protocol,
    /// BEGIN travels with the transaction's first statement, in one round trip with it (as the
    /// JDBC drivers send it: pgJDBC under that statement's Sync; on MariaDB/MySQL the session
    /// runs with autocommit off, as Connector/J's, and sends no BEGIN), instead of as a round
    /// trip of its own (as pgbench, sysbench and Go's drivers send it); a transaction that sent
    /// no statement sends no COMMIT. PostgreSQL and MariaDB/MySQL.
    #[arg(long)]
    pub lazy_begin: bool,
    /// Seconds run before measuring; their transactions are excluded from the result.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub warmup: u64,
    /// Tries of a transaction that met a retryable error (serialization, deadlock, busy...)
    /// [1: no retry; tpcc and smallbank: 100]; from the second retry on, a random pause of up
    /// to 20 ms.
    #[arg(long, value_name = "N")]
    pub max_tries: Option<u32>,
    /// Write the full result as JSON to FILE (schema: schema/result.schema.json).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Built-in script (tpcb: tpcb-like, simple-update, select-only, or a unique prefix), with
    /// its weight among several (repeatable, and with -f, as pgbench -b NAME@W); `-b list`
    /// lists them.
    #[arg(short = 'b', long, value_name = "NAME[@WEIGHT]")]
    pub builtin: Vec<String>,
    /// Progress lines (-P) stamped with the Unix time instead of the seconds since the start
    /// (as pgbench --progress-timestamp).
    #[arg(long)]
    pub progress_timestamp: bool,
    /// Print a built-in script's text (as pgbench --show-script) and exit.
    #[arg(long, value_name = "NAME")]
    pub show_script: Option<String>,
    /// Shortcut for --builtin select-only.
    #[arg(short = 'S', long)]
    pub select_only: bool,
    /// Shortcut for --builtin simple-update.
    #[arg(short = 'N', long)]
    pub simple_update: bool,
    /// Seed of the clients' random generators (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run shard I of N of a run whose load comes from N processes or machines: this one
    /// starts its share of --clients (and of --rate), with client ids of its own; `dbduel
    /// merge` makes one result of the shards' --json files. `auto/N` takes I from the
    /// orchestrator (Kubernetes' JOB_COMPLETION_INDEX, Slurm's SLURM_PROCID); `auto` takes N
    /// from Slurm's SLURM_NTASKS too.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Start the measured clients at this wall-clock time (RFC 3339, e.g.
    /// 2026-12-01T10:00:00Z), once connected: every shard of a run starts together.
    #[arg(long, value_name = "TIME", env = "DBDUEL_START_AT")]
    pub start_at: Option<String>,
    /// Do not sample what the server's sessions wait on during the run (then no verdict on
    /// what limited it): for measuring the sampling's own cost.
    #[arg(long, conflicts_with = "waits_hz")]
    pub no_waits: bool,
    /// Sample the server's sessions this many times a second, 1 to 100 (default: 10, fewer past
    /// 12 clients so that a second reads at most 128 sessions, 64 on MariaDB/MySQL, and 4 on
    /// Firebird).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub waits_hz: Option<u32>,
    /// Do not time each statement on the client (per-statement latencies are on by default;
    /// pgbench's -r is taken as asking for them).
    #[arg(long)]
    pub no_statement_latencies: bool,
    /// A new connection for every transaction (pgbench's -C): connect, run one transaction,
    /// disconnect; the connect is measured apart, the latency starts once connected.
    #[arg(short = 'C', long = "connect", help_heading = "Connections")]
    pub connect: bool,
    /// Close each client's connection after N transactions and open a new one, between
    /// transactions (a pool's connection lifetime in uses).
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Connections"
    )]
    pub reconnect_every: Option<i64>,
    /// Close each client's connection once it has lived SECONDS and open a new one, between
    /// transactions (a pool's maximum lifetime).
    #[arg(
        long,
        value_name = "SECONDS",
        allow_negative_numbers = true,
        help_heading = "Connections"
    )]
    pub reconnect_after: Option<f64>,
    /// Open N more connections before the clients start and hold them open, idle (no
    /// transaction open), until the end; they are not clients.
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Connections"
    )]
    pub idle_connections: Option<i64>,
    /// Run the clients on N threads, many clients on each (as pgbench -j), on PostgreSQL and
    /// MariaDB. Default: a thread per client; on PostgreSQL past 8 clients a core, 8 clients
    /// a thread (one to four threads a core).
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<u32>,
    /// A pgbench-format script to run, with its weight among several (as pgbench -f).
    #[arg(short = 'f', long = "file", value_name = "FILE[@WEIGHT]")]
    pub files: Vec<String>,
    /// Define a script variable (as pgbench -D NAME=VALUE).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    pub defines: Vec<String>,
    #[command(flatten)]
    pub workload: WorkloadFlags<true>,
    /// YCSB: a property file, or a core workload built in (workloada..workloadf).
    #[arg(long, value_name = "FILE", help_heading = "YCSB options")]
    pub property_file: Option<String>,
    #[command(flatten)]
    pub ycsb: YcsbArgs,
    #[command(flatten)]
    pub habits: HabitArgs,
}

/// Flags that pgbench and sysbench users type out of habit, hidden from the help: taken with a
/// note where dbduel needs nothing for them, refused in one line naming dbduel's way otherwise
/// (`HabitArgs::check`).
#[derive(Debug, Args)]
pub struct HabitArgs {
    /// pgbench -n: do not vacuum before the run.
    #[arg(short = 'n', long = "no-vacuum", hide = true)]
    pub no_vacuum: bool,
    /// sysbench --percentile: the percentile its summary shows.
    #[arg(long, hide = true, value_name = "P")]
    pub percentile: Option<f64>,
    /// pgbench 18 --continue-on-error: a client goes on after an SQL error (dbduel's way).
    #[arg(long, hide = true)]
    pub continue_on_error: bool,
    /// pgbench -r: per-statement latencies (on by default; taken as asking for them).
    #[arg(
        short = 'r',
        long = "report-per-command",
        alias = "report-latencies",
        hide = true
    )]
    pub per_statement: bool,
    /// pgbench -i: initialize.
    #[arg(short = 'i', long = "initialize", hide = true)]
    pub initialize: bool,
    /// pgbench -v: vacuum the four tables before the run.
    #[arg(short = 'v', long = "vacuum-all", hide = true)]
    pub vacuum_all: bool,
    /// sysbench --events: all threads' events together.
    #[arg(long, hide = true, value_name = "N")]
    pub events: Option<u64>,
    /// sysbench --histogram: print the latency histogram.
    #[arg(long, hide = true)]
    pub histogram: bool,
    /// pgbench --random-seed: time, rand or a number (dbduel's --seed).
    #[arg(long, hide = true, value_name = "SEED")]
    pub random_seed: Option<String>,
    /// pgbench -d: debugging output.
    #[arg(short = 'd', long = "debug", hide = true)]
    pub debug: bool,
}

impl HabitArgs {
    /// pgbench's --random-seed as dbduel's seed: `time` (or none) from the clock, `rand` from
    /// the system's randomness, a number as itself; beside --seed, refused.
    pub fn seed(&self, seed: Option<u64>) -> Result<Option<u64>, String> {
        let Some(given) = self.random_seed.as_deref() else {
            return Ok(seed);
        };
        if seed.is_some() {
            return Err("--random-seed is pgbench's --seed: give one of them".into());
        }
        match given {
            "time" => Ok(None),
            "rand" => {
                use std::hash::{BuildHasher, Hasher};
                Ok(Some(
                    std::collections::hash_map::RandomState::new()
                        .build_hasher()
                        .finish(),
                ))
            }
            n => n.parse().map(Some).map_err(|_| {
                format!("--random-seed {n}: give time, rand or an unsigned integer, as pgbench")
            }),
        }
    }

    /// The first flag dbduel has no such thing for, refused in one line that names dbduel's
    /// way; else the notes for the flags it takes and needs nothing for.
    pub fn check(&self) -> Result<Vec<String>, String> {
        let refused = [
            (
                self.initialize,
                "-i (initialize): dbduel prepare loads the data, then dbduel run measures it",
            ),
            (
                self.events.is_some(),
                "--events (all threads' events together): give -t, transactions per client",
            ),
            (
                self.histogram,
                "--histogram: dbduel keeps the full HDR histogram in --json",
            ),
        ];
        if let Some((_, why)) = refused.iter().find(|(given, _)| *given) {
            return Err((*why).to_string());
        }
        let mut notes = Vec::new();
        if self.no_vacuum {
            notes.push("-n taken: dbduel vacuums before a run only when -v asks".to_string());
        }
        if self.continue_on_error {
            notes.push("--continue-on-error taken: dbduel's clients always go on after an SQL error, which counts as a failed transaction of its kind".to_string());
        }
        if self.debug {
            notes.push("-d taken: dbduel prints no debugging output (--verbose-errors prints each failure in full)".to_string());
        }
        if let Some(p) = self.percentile {
            notes.push(format!("--percentile {p} taken: dbduel's summary shows p50, p90, p95, p99, p99.9 and the maximum"));
        }
        Ok(notes)
    }
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    #[command(subcommand)]
    pub action: ServerAction,
}

#[derive(Debug, Subcommand)]
pub enum ServerAction {
    /// Initialise (when new) and start a managed server; it keeps running after dbduel exits.
    Start(ServerStartArgs),
    /// Stop the managed server of a directory.
    Stop(ServerDirArgs),
    /// Say whether the managed server of a directory runs, and how to reach it.
    Status(ServerDirArgs),
    /// Print the DSN of a directory's server, password included (for `--dsn "$(...)"`).
    Dsn(ServerDirArgs),
}

#[derive(Debug, Args)]
pub struct ServerStartArgs {
    /// Engine: postgres, mysql (MariaDB or MySQL; `mariadb` is taken too) or firebird.
    pub engine: String,
    /// The server's directory (its data, log and socket); new or empty, or a stopped dbduel server's.
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
    /// Port on 127.0.0.1 (default: a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Profile: default, tuned or unsafe.
    #[arg(long, default_value = "default")]
    pub profile: String,
    /// Scale of the dataset the tuned profile is sized for (of --workload).
    #[arg(short = 's', long, default_value_t = 1)]
    pub scale: u32,
    /// The workload whose data at --scale the tuned profile is sized for.
    #[arg(long, default_value = "tpcb", value_name = "NAME")]
    pub workload: String,
    /// Connections the server must take at once (clients and --idle-connections); its
    /// connection limit (max_connections) is raised where it ships lower, with room for dbduel's
    /// own.
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub connections: u32,
    /// Directory holding the server's binaries (default: PATH and the usual Debian locations).
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// Keep the server's own figures per statement, for every result's "where the server's
    /// time went": PostgreSQL with pg_stat_statements loaded (added to a profile's or --set's
    /// preloaded libraries), MariaDB with performance_schema and its statement digests on (its
    /// wait times too); Firebird keeps none, so nothing changes. These settings hold over the
    /// profile's and --set's. Off by default, as the engines ship: on 2 cores keeping them cost
    /// point selects 8% on MariaDB and 5.5% on PostgreSQL at 64 clients (BENCHMARKS.md).
    #[arg(long)]
    pub server_statements: bool,
    /// A server setting on top of the profile's, in the engine's own words (repeatable):
    /// postgresql.conf's for postgres, mysqld's options for mysql, firebird.conf's for
    /// firebird. The server judges it when it starts; the connection limit
    /// --connections needs still holds, and `server status` names the settings. A knob given
    /// twice is passed twice (MariaDB's performance-schema-instrument takes a pattern each
    /// time).
    #[arg(long = "set", value_name = "KNOB=VALUE")]
    pub set: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ServerDirArgs {
    /// The server's directory, as given to `server start`.
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The plan file (TOML): engines, profiles or steps, workload, clients, repeats...
    pub plan: PathBuf,
    /// The results store: a SQLite file, or a PostgreSQL database (postgres://...) that several
    /// machines share.
    #[arg(
        long,
        alias = "store",
        value_name = "FILE|DSN",
        default_value = "dbduel-results.db"
    )]
    pub results: PathBuf,
    /// Write the HTML report of this plan here when the sweep ends.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// Workload name (see `dbduel list`).
    pub workload: String,
    /// The engine to tune: postgres, mysql (MariaDB or MySQL), firebird (servers dbduel
    /// starts) or sqlite (its file).
    #[arg(long)]
    pub engine: String,
    /// Where the managed server keeps its data (one directory per engine under DIR) [default:
    /// a temporary one].
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Directory of the server's binaries.
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// Scale factor of the data (size it past the default caches to find what they buy).
    #[arg(short = 's', long, default_value_t = 1)]
    pub scale: u32,
    /// Clients of every trial.
    #[arg(short = 'c', long, default_value_t = 4)]
    pub clients: u32,
    /// Measured seconds of a first-round trial; each later round's trials run twice as long
    /// as the round before, and the final comparison's as long as the last round's.
    #[arg(short = 'T', long, value_name = "SECONDS", default_value_t = 10)]
    pub trial_time: u64,
    /// Warm-up seconds before each trial.
    #[arg(long, value_name = "SECONDS", default_value_t = 3)]
    pub warmup: u64,
    /// Trials the search may spend (the final comparison's runs apart).
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u32).range(3..))]
    pub trials: u32,
    /// Runs of default, tuned and the winner each in the final comparison, taking turns.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..))]
    pub repeats: u32,
    /// Also try the knobs that give up durability (synchronous_commit, the flush at commit,
    /// SQLite's synchronous): such candidates are labelled UNSAFE.
    #[arg(long = "unsafe")]
    pub allow_unsafe: bool,
    /// Seed of the candidates drawn.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A knob space of your own, in place of the engine's: a TOML file of knobs, each with the
    /// values to try, the shipped one first (`shared_buffers = ["128MB", "1GB"]`), and those
    /// that give up durability in a `[durability]` table.
    #[arg(long, value_name = "FILE")]
    pub space: Option<PathBuf>,
    /// Also write the search as JSON to FILE: every trial, the winner, its verdicts against
    /// default and tuned (compare's figures and intervals), what mattered, the time it took.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also draw the search in an HTML page: every trial's figure with the best so far, the
    /// final comparison's runs and intervals, what mattered.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// What the search ranks by: tps (the workload's headline, such as TPC-C's NOPM, at full
    /// speed), a latency percentile (p50, p95, p99) at the fixed rate --rate gives, or
    /// capacity: the highest rate that meets every --slo.
    #[arg(long, value_name = "FIGURE")]
    pub objective: Option<String>,
    /// Transactions a second every trial offers (open loop), for a percentile --objective.
    #[arg(short = 'R', long, value_name = "TPS")]
    pub rate: Option<f64>,
    /// Rank by the capacity under this objective (repeatable, as `capacity --slo` takes it:
    /// 'p99<10ms', 'errors<0.1%'): each trial's closed loop, then a staircase of rates up to
    /// it, each step a trial's length; the highest step met with every step below it.
    #[arg(long, value_name = "OBJECTIVE")]
    pub slo: Vec<String>,
    /// Query protocol: simple, extended or prepared.
    #[arg(short = 'M', long)]
    pub protocol: Option<String>,
    #[command(flatten)]
    pub workload_flags: WorkloadFlags<true>,
    /// The results store: a SQLite file, or a PostgreSQL database (postgres://...); every
    /// trial is kept there, and the same command run again resumes.
    #[arg(
        long,
        alias = "store",
        value_name = "FILE|DSN",
        default_value = "dbduel-results.db"
    )]
    pub results: PathBuf,
    /// Where the winner's configuration is written (postgresql.conf lines, a my.cnf section,
    /// firebird.conf lines, SQLite's PRAGMAs) [default: dbduel-tune-ENGINE.conf].
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DuelArgs {
    /// Workload name (see `dbduel list`).
    #[arg(default_value = "tpcb")]
    pub workload: String,
    /// Measured seconds per point.
    #[arg(short = 'T', long, default_value_t = 10)]
    pub time: u64,
    /// Client counts.
    #[arg(short = 'c', long, value_delimiter = ',', default_value = "1,2,4,8")]
    pub clients: Vec<u32>,
    /// Engines to compare, comma-separated (sqlite, postgres, mysql, firebird) [default: every
    /// engine installed here].
    #[arg(long, value_delimiter = ',', value_name = "ENGINES")]
    pub engines: Option<Vec<String>>,
    /// Repeats of every point.
    #[arg(long, default_value_t = 1)]
    pub repeats: u32,
    /// Tries of a transaction that lost a conflict (serialization, deadlock; every retry is
    /// counted): under snapshot isolation (Firebird) a transaction that waited on a row another
    /// one updated fails, and at 8 clients on 8 branches 10 tries still lost a few [100, as
    /// TPC-C's].
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_tries: u32,
    /// Scale factor [tpcb: the most clients, as pgbench advises (scale 1 has one branch row,
    /// which every transaction updates: that measures one row's lock, not the engines);
    /// others: 1].
    #[arg(short = 's', long)]
    pub scale: Option<u32>,
    /// The managed servers keep their own figures per statement (as `server start
    /// --server-statements`): results say where each server's time went, at a cost to every
    /// server (BENCHMARKS.md).
    #[arg(long)]
    pub server_statements: bool,
    /// The results store: a SQLite file, or a PostgreSQL database (postgres://...) that several
    /// machines share.
    #[arg(
        long,
        alias = "store",
        value_name = "FILE|DSN",
        default_value = "dbduel-results.db"
    )]
    pub results: PathBuf,
    /// The HTML report to write.
    #[arg(long, value_name = "FILE", default_value = "dbduel-report.html")]
    pub report: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Html,
    Markdown,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The results store: a SQLite file, or a PostgreSQL database (postgres://...) that several
    /// machines share.
    #[arg(
        long,
        alias = "store",
        value_name = "FILE|DSN",
        default_value = "dbduel-results.db"
    )]
    pub results: PathBuf,
    /// Only the runs of this plan (default: all).
    #[arg(long)]
    pub plan: Option<String>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
    /// Output file (default: dbduel-report.html, or standard output for markdown).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// The results store: a SQLite file, or a PostgreSQL database (postgres://...) that several
    /// machines share.
    #[arg(
        long,
        alias = "store",
        value_name = "FILE|DSN",
        default_value = "dbduel-results.db",
        global = true
    )]
    pub results: PathBuf,
    #[command(subcommand)]
    pub action: ResultsAction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum ResultsAction {
    /// One line per stored run.
    List {
        #[arg(long)]
        plan: Option<String>,
    },
    /// The full result of one run, as JSON.
    Show { id: i64 },
    /// Every run (of a plan) as CSV or JSON on standard output.
    Export {
        #[arg(long, value_enum, default_value_t = ExportFormat::Csv)]
        format: ExportFormat,
        #[arg(long)]
        plan: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    Text,
    Markdown,
    Json,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: a run id of the store, ids of repeats (3,4,5), @ID (every repeat of run
    /// ID's sweep point), or result files of `run --json` (a.json, or a1.json,a2.json,a3.json).
    #[arg(value_name = "A")]
    pub a: String,
    /// The side judged against A, given the same ways.
    #[arg(value_name = "B")]
    pub b: String,
    /// The results store, for run ids: a SQLite file, or a PostgreSQL database (postgres://...).
    #[arg(
        long,
        alias = "store",
        value_name = "FILE|DSN",
        default_value = "dbduel-results.db"
    )]
    pub results: PathBuf,
    /// Exit 1 when a figure changed beyond the noise and past this change from A (repeatable):
    /// 'tps<-5%', 'p99>+10%'. Figures: tps, p50, p90, p95, p99.
    #[arg(long = "fail-if", value_name = "CONDITION", allow_hyphen_values = true)]
    pub fail_if: Vec<String>,
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' result files (`run --shard I/N --json FILE`), every shard once.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Write the merged result as JSON to FILE (schema: schema/result.schema.json).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also keep the merged result in a results store (a SQLite file, or a PostgreSQL
    /// database: postgres://...), as a run of plan --plan, for `report`, `results`, `compare`.
    #[arg(long, alias = "store", value_name = "FILE|DSN")]
    pub results: Option<PathBuf>,
    /// The plan the merged run is stored under.
    #[arg(long, value_name = "NAME", default_value = "merged")]
    pub plan: String,
}

#[derive(Debug, Args)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// An objective every step must meet (repeatable): 'p99<10ms', 'p99.9<=250us',
    /// 'mean<2ms', 'errors<0.1%'. Figures: mean, p50, p90, p95, p99, p99.9, max, errors.
    #[arg(long = "slo", value_name = "OBJECTIVE", required = true)]
    pub slo: Vec<String>,
    /// Stop narrowing in when the lowest failing rate is within this percentage above the
    /// highest passing one.
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0)]
    pub precision: f64,
    /// Write the latency-against-rate chart (with the objectives and the capacity) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}
