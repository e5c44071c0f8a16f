//! Bad input: every mistake gives a one-line message naming what to change, exit code 2, no
//! panic, and never the password.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, text, with_env};

/// A command line that must fail with exit code 2 and a message containing `needle`.
fn refused(
    env: &Arc<Env>,
    name: &'static str,
    args: fn(&Env) -> Vec<String>,
    needle: &'static str,
) -> Trial {
    with_env(env, format!("errors::{name}"), move |env| {
        let args = args(env);
        let out = dbduel(&args);
        expect_code(&out, 2, name)?;
        let all = text(&out);
        ensure(all.contains(needle), || {
            format!("message lacks '{needle}':\n{all}")
        })?;
        ensure(
            String::from_utf8_lossy(&out.stderr).trim().lines().count() == 1,
            || format!("not one line:\n{all}"),
        )?;
        Ok(())
    })
}

fn v(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A listener that accepts connections and never answers: the connect timeout must end the
/// command with exit 2 and one line, for each server engine.
fn silent_server() -> Trial {
    crate::env::trial("errors::silent_server_times_out", || {
        for (scheme, param) in [
            ("postgres", "connect_timeout"),
            ("mysql", "connect-timeout"),
            ("firebird", "connect_timeout"),
        ] {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let port = listener.local_addr().map_err(|e| e.to_string())?.port();
            std::thread::spawn(move || {
                // Hold every accepted socket open, silent, until the test binary ends.
                let held: Vec<_> = listener.incoming().take(8).collect();
                std::thread::sleep(std::time::Duration::from_secs(120));
                drop(held);
            });
            let dsn = format!("{scheme}://u:secret@127.0.0.1:{port}/db?{param}=2");
            let started = std::time::Instant::now();
            let out = dbduel(&["check", "tpcb", "--dsn", &dsn]);
            let took = started.elapsed();
            expect_code(&out, 2, scheme)?;
            let all = text(&out);
            ensure(all.contains("no answer within 2 s"), || {
                format!("{scheme}: message lacks the timeout:\n{all}")
            })?;
            ensure(took < std::time::Duration::from_secs(10), || {
                format!("{scheme}: took {took:?} with a 2 s connect timeout")
            })?;
            ensure(
                String::from_utf8_lossy(&out.stderr).trim().lines().count() == 1,
                || format!("{scheme}: more than one line:\n{all}"),
            )?;
            ensure(!all.contains("secret"), || "password shown".into())?;
        }
        Ok(())
    })
}

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    vec![
        silent_server(),
        refused(
            env,
            "parser_unknown_flag",
            |_| v(&["run", "tpcb", "--clinets", "4"]),
            "unexpected argument '--clinets'",
        ),
        refused(
            env,
            "parser_bad_value",
            |_| v(&["run", "tpcb", "-c", "x"]),
            "invalid value 'x' for '--clients",
        ),
        refused(
            env,
            "parser_unknown_command",
            |_| v(&["sweeep", "plans/profiles.toml"]),
            "unrecognized subcommand 'sweeep'",
        ),
        refused(
            env,
            "absurd_clients",
            |_| v(&["run", "tpcb", "-c", "4000000000"]),
            "this machine allows at most",
        ),
        refused(
            env,
            "absurd_time",
            |_| v(&["run", "tpcb", "-T", "18446744073709551615"]),
            "at most 31536000 seconds",
        ),
        refused(
            env,
            "absurd_warmup",
            |_| v(&["run", "tpcb", "--warmup", "99999999999"]),
            "--warmup 99999999999: at most",
        ),
        refused(
            env,
            "sqlite_journal_mode_bogus",
            |env| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    &format!("{}?journal_mode=bogus", env.fresh_db(Target::Sqlite, "jm")),
                ])
            },
            "journal_mode=bogus: use DELETE",
        ),
        refused(
            env,
            "sqlite_synchronous_injection",
            |env| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    &format!(
                        "{}?synchronous=OFF;DROP",
                        env.fresh_db(Target::Sqlite, "sync")
                    ),
                ])
            },
            "synchronous=OFF;DROP: use OFF",
        ),
        refused(
            env,
            "sqlite_cache_size_text",
            |env| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    &format!("{}?cache_size=abc", env.fresh_db(Target::Sqlite, "cs")),
                ])
            },
            "cache_size=abc: use an integer",
        ),
        refused(
            env,
            "unknown_workload",
            |_| v(&["run", "tpcx"]),
            "unknown workload 'tpcx'",
        ),
        refused(
            env,
            "unknown_engine",
            |_| v(&["run", "tpcb", "--dsn", "oracle://u@h/db"]),
            "unknown engine 'oracle'",
        ),
        refused(
            env,
            "malformed_dsn",
            |_| v(&["run", "tpcb", "--dsn", "postgres://u:pw@host:99999999/db"]),
            "malformed --dsn",
        ),
        refused(
            env,
            "scale_zero",
            |_| v(&["run", "tpcb", "--scale", "0"]),
            "--scale must be at least 1",
        ),
        refused(
            env,
            "clients_zero",
            |_| v(&["run", "tpcb", "-c", "0"]),
            "--clients must be at least 1",
        ),
        refused(
            env,
            "time_and_transactions",
            |_| v(&["run", "tpcb", "-T", "5", "-t", "10"]),
            "--time and --transactions",
        ),
        refused(
            env,
            "two_variants",
            |_| v(&["run", "oltp_read_only", "-b", "a", "-b", "b"]),
            "only one of",
        ),
        refused(
            env,
            "unknown_variant",
            |_| v(&["run", "tpcb", "-b", "nope"]),
            "unknown tpcb script 'nope'",
        ),
        refused(
            env,
            "prepare_without_dsn",
            |_| v(&["prepare", "tpcb"]),
            "needs --dsn",
        ),
        refused(
            env,
            "table_engine_on_postgres",
            |_| {
                v(&[
                    "check",
                    "tpcb",
                    "--dsn",
                    "postgres://u@127.0.0.1/x",
                    "--table-engine",
                    "MyISAM",
                ])
            },
            "applies to mysql",
        ),
        // Refused before anything is created or connected.
        refused(
            env,
            "lazy_begin_on_sqlite",
            |env| {
                let db = format!("sqlite://{}", env.path("lazy.db").display());
                v(&["run", "tpcb", "--dsn", &db, "--lazy-begin"])
            },
            "--lazy-begin applies to postgresql:// and mysql:// only: SQLite",
        ),
        refused(
            env,
            "lazy_begin_on_firebird",
            |_| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    "firebird://u:pw@127.0.0.1/x.fdb",
                    "--lazy-begin",
                ])
            },
            "--lazy-begin applies to postgresql:// and mysql:// only: a Firebird statement",
        ),
        refused(
            env,
            "unknown_table_engine",
            |_| {
                v(&[
                    "check",
                    "tpcb",
                    "--dsn",
                    "mysql://u@127.0.0.1/x",
                    "--table-engine",
                    "Falcon",
                ])
            },
            "unknown --table-engine",
        ),
        refused(
            env,
            "unreachable_postgres",
            |_| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    &format!("postgres://u:pw@127.0.0.1:{}/x", unused_port()),
                ])
            },
            "cannot reach PostgreSQL",
        ),
        refused(
            env,
            "unreachable_mariadb",
            |_| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    &format!("mysql://u:pw@127.0.0.1:{}/x", unused_port()),
                ])
            },
            "cannot reach MariaDB",
        ),
        refused(
            env,
            "unreachable_firebird",
            |_| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    &format!("firebird://u:pw@127.0.0.1:{}/tmp/x.fdb", unused_port()),
                ])
            },
            "cannot reach Firebird",
        ),
        // Messages name where dbduel tried: an IPv6 address in brackets, a socket by its path.
        refused(
            env,
            "unreachable_ipv6_shown_in_brackets",
            |_| v(&["run", "tpcb", "--dsn", "postgres://u:pw@[::1]:1/x"]),
            "PostgreSQL at [::1]:1",
        ),
        refused(
            env,
            "unreachable_postgres_socket_named",
            |_| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    "postgres://u:pw@localhost:5999/x?host=/nonexistent",
                ])
            },
            "socket /nonexistent/.s.PGSQL.5999",
        ),
        refused(
            env,
            "unreachable_mariadb_socket_named",
            |_| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    "mysql://u:pw@localhost/x?socket=/nonexistent/mysqld.sock",
                ])
            },
            "socket /nonexistent/mysqld.sock",
        ),
        refused(
            env,
            "firebird_bad_isolation",
            |_| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    "firebird://u:pw@127.0.0.1:3050/tmp/x.fdb?isolation=dirty",
                ])
            },
            "use snapshot or read_committed",
        ),
        refused(
            env,
            "firebird_bad_lock_wait",
            |_| {
                v(&[
                    "run",
                    "tpcb",
                    "--dsn",
                    "firebird://u:pw@127.0.0.1:3050/tmp/x.fdb?lock_wait=soon",
                ])
            },
            "unknown lock_wait 'soon' in --dsn firebird://u@127.0.0.1:3050/tmp/x.fdb?lock_wait=soon: use wait, nowait or a lock timeout in whole seconds",
        ),
        wrong_password(env, Target::Postgres),
        wrong_password(env, Target::MariaDb("InnoDB")),
        wrong_password(env, Target::Firebird),
        run_before_prepare(env, Target::Postgres),
        run_before_prepare(env, Target::MariaDb("InnoDB")),
        run_before_prepare(env, Target::Sqlite),
        run_before_prepare(env, Target::Firebird),
        check_before_prepare(env, Target::Postgres),
        check_before_prepare(env, Target::Sqlite),
        check_before_prepare(env, Target::Firebird),
    ]
}

fn unused_port() -> u16 {
    dbduel::server::free_port().expect("port")
}

/// A wrong password is refused with the user named and the password never shown.
fn wrong_password(env: &Arc<Env>, target: Target) -> Trial {
    with_env(
        env,
        format!("errors::wrong_password::{}", target.label()),
        move |env| {
            let dsn = env.fresh_db(target, "pw");
            let secret = "Wr0ngSecret";
            let (scheme_end, at) = (
                dsn.find("://").expect("scheme"),
                dsn.find('@').expect("credentials"),
            );
            let bad = format!("{}://dbduel:{secret}{}", &dsn[..scheme_end], &dsn[at..]);
            let out = dbduel(&["run", "tpcb", "--dsn", &bad]);
            expect_code(&out, 2, "wrong password")?;
            let all = text(&out);
            ensure(all.contains("refused user 'dbduel'"), || {
                format!("message does not name the user:\n{all}")
            })?;
            ensure(!all.contains(secret), || {
                format!("the password was printed:\n{all}")
            })
        },
    )
}

/// Running before preparing says to prepare first.
fn run_before_prepare(env: &Arc<Env>, target: Target) -> Trial {
    with_env(
        env,
        format!("errors::run_before_prepare::{}", target.label()),
        move |env| {
            let dsn = env.fresh_db(target, "empty");
            let out = dbduel(&["run", "tpcb", "--dsn", &dsn, "-T", "1"]);
            expect_code(&out, 2, "run before prepare")?;
            let all = text(&out);
            ensure(all.contains("dbduel prepare tpcb"), || {
                format!("message does not say to prepare:\n{all}")
            })
        },
    )
}

/// Checking a database that holds no workload says to prepare it.
fn check_before_prepare(env: &Arc<Env>, target: Target) -> Trial {
    with_env(
        env,
        format!("errors::check_before_prepare::{}", target.label()),
        move |env| {
            let dsn = env.fresh_db(target, "unchecked");
            let out = dbduel(&["check", "tpcb", "--dsn", &dsn]);
            expect_code(&out, 2, "check before prepare")?;
            let all = text(&out);
            ensure(all.contains("dbduel prepare tpcb"), || {
                format!("message does not say to prepare:\n{all}")
            })
        },
    )
}
