//! The integration suite: one binary that runs every trial against real PostgreSQL, MariaDB
//! and Firebird servers on free loopback ports (as their service accounts when run as root),
//! each started when the first trial needs it and stopped at the end, and against real SQLite
//! files; a run of SQLite-only trials starts no server.

mod capacity;
mod check;
mod client_cpu;
mod command_line;
mod compare;
mod conformance;
mod custom;
mod deploy;
mod env;
mod errors;
mod faults;
mod latency;
mod load;
mod managed;
mod measured;
mod observe;
mod peer_made;
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
mod store;
mod sweep;
mod tls;
mod tpcc;
mod tpch;
mod ycsb;

use std::sync::Arc;

use libtest_mimic::{Arguments, Trial};

fn main() {
    let args = Arguments::from_args();
    let env = match env::Env::start() {
        Ok(env) => Arc::new(env),
        Err(e) => {
            eprintln!("cannot start the test servers: {e}");
            std::process::exit(2);
        }
    };
    let mut trials: Vec<Trial> = Vec::new();
    trials.extend(conformance::trials(&env));
    trials.extend(custom::trials(&env));
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
    trials.extend(tls::trials());
    trials.extend(managed::trials());
    trials.extend(faults::trials(&env));
    trials.extend(prepare::trials(&env));
    trials.extend(load::trials(&env));
    trials.extend(latency::trials(&env));
    trials.extend(client_cpu::trials(&env));
    trials.extend(compare::trials());
    let conclusion = libtest_mimic::run(&args, trials);
    drop(env);
    conclusion.exit();
}
