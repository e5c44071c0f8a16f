//! The integration suite: one binary (libtest-mimic) that runs the trials each module below gives
//! against real SQLite files and real servers, one module per thing users rely on. PostgreSQL,
//! MariaDB and Firebird run on free loopback ports (as their service accounts when run as root);
//! each starts when the first trial that needs it runs (`env.rs`) and stops at the end. Chromium
//! (report.rs) and a Slurm cluster (shards.rs) are found or started by the trials that use them, so
//! a run of SQLite-only trials needs none of them.

mod capacity;
mod ch;
mod check;
mod client_cpu;
mod command_line;
mod compare;
mod conformance;
mod connections;
mod counters;
mod custom;
mod deploy;
mod env;
mod errors;
mod faults;
mod latency;
mod latency_limit;
mod load;
mod managed;
mod measured;
mod multiplexed;
mod observe;
mod peer_made;
mod phases;
mod pipeline;
mod prepare;
mod proxied;
mod proxy;
mod readme;
mod recorded;
mod report;
mod script;
mod secrets;
mod sessions;
mod shards;
mod smallbank;
mod statement_latencies;
mod statements;
mod store;
mod sweep;
mod tatp;
mod tls;
mod tpcb_init;
mod tpcc;
mod tpch;
mod tune;
mod txn_log;
mod verdicts;
mod ycsb;

use std::sync::Arc;

use libtest_mimic::{Arguments, Trial};

fn main() {
    let args = Arguments::from_args();
    let env = match env::Env::start() {
        Ok(env) => Arc::new(env),
        Err(e) => {
            eprintln!("cannot set up the test environment: {e}");
            std::process::exit(2);
        }
    };
    let mut trials: Vec<Trial> = Vec::new();
    trials.extend(conformance::trials(&env));
    trials.extend(custom::trials(&env));
    trials.extend(pipeline::trials(&env));
    trials.extend(connections::trials(&env));
    trials.extend(multiplexed::trials(&env));
    trials.extend(errors::trials(&env));
    trials.extend(command_line::trials(&env));
    trials.extend(recorded::trials(&env));
    trials.extend(measured::trials(&env));
    trials.extend(sessions::trials(&env));
    trials.extend(check::trials(&env));
    trials.extend(peer_made::trials(&env));
    trials.extend(deploy::trials(&env));
    trials.extend(observe::trials(&env));
    trials.extend(report::trials());
    trials.extend(readme::trials(&env));
    trials.extend(sweep::trials());
    trials.extend(store::trials(&env));
    trials.extend(script::trials(&env));
    trials.extend(secrets::trials(&env));
    trials.extend(proxied::trials(&env));
    trials.extend(shards::trials(&env));
    trials.extend(capacity::trials(&env));
    trials.extend(tpcc::trials(&env));
    trials.extend(tpch::trials(&env));
    trials.extend(ycsb::trials(&env));
    trials.extend(statement_latencies::trials(&env));
    trials.extend(phases::trials(&env));
    trials.extend(smallbank::trials(&env));
    trials.extend(tatp::trials(&env));
    trials.extend(ch::trials(&env));
    trials.extend(verdicts::trials(&env));
    trials.extend(statements::trials(&env));
    trials.extend(counters::trials(&env));
    trials.extend(tls::trials());
    trials.extend(managed::trials());
    trials.extend(faults::trials(&env));
    trials.extend(prepare::trials(&env));
    trials.extend(load::trials(&env));
    trials.extend(latency::trials(&env));
    trials.extend(latency_limit::trials(&env));
    trials.extend(txn_log::trials(&env));
    trials.extend(tpcb_init::trials(&env));
    trials.extend(client_cpu::trials(&env));
    trials.extend(compare::trials());
    trials.extend(tune::trials(&env));
    let conclusion = libtest_mimic::run(&args, trials);
    drop(env);
    conclusion.exit();
}
