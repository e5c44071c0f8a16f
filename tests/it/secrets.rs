//! A password is never printed or stored, whichever way it comes: a canary password given
//! through each channel (the DSN's user information, its `password=` parameter, PGPASSWORD,
//! `.pgpass`, `--password-file`, `--server DIR`, a plan's `[dsn]`, a `--results` store) is looked for in
//! every output, file, store row, report and error message those commands leave.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, Test, dbduel, ensure, expect_code, prepared_tpcb, session, text, trials_of,
};

/// A way of giving the password: its name, the target's flags, the environment's variables.
type Channel<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, &'a str)>);

/// The password of the canary role: found anywhere, it leaked.
const CANARY: &str = "Cnry-7f3a9e2b";

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 2] = [
        ("canary_password_never_leaks", canary),
        ("password_stays_out_of_results", password_hidden),
    ];
    trials_of(env, "secrets", tests)
}

/// dbduel with extra environment variables, its output kept for the scan.
fn run(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    seen: &mut Vec<(String, String)>,
) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dbduel"));
    cmd.args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("PGPASSWORD")
        .env_remove("DBDUEL_DSN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run dbduel");
    // The command line holds the password (the user put it there); its output must not.
    seen.push((format!("dbduel {}", args.join(" ")), text(&out)));
    out
}

/// Every file under `dir`, read as bytes: the names of those holding the canary.
fn files_with_canary(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|b| b.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()))
            {
                // The files the user put the password in are the only ones allowed to hold it.
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                if !matches!(name.as_ref(), ".pgpass" | "pw" | "canary.toml") {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    found
}

fn canary(env: &Env) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let d = dir.path();
    // A role with the canary password, owning a database of its own and a store database.
    let base = env.fresh_db(Target::Postgres, "canary");
    let store_db = env.fresh_db(Target::Postgres, "canary_store");
    let (db, store_db) = (last_segment(&base), last_segment(&store_db));
    let mut admin = env.admin(Target::Postgres);
    admin
        .batch(&format!(
            "DROP ROLE IF EXISTS canary_user; CREATE ROLE canary_user LOGIN PASSWORD '{CANARY}'; \
             ALTER DATABASE {db} OWNER TO canary_user; ALTER DATABASE {store_db} OWNER TO canary_user"
        ))
        .map_err(|e| e.to_string())?;
    let port = base
        .rsplit_once(':')
        .and_then(|(_, r)| r.split('/').next())
        .ok_or("no port")?
        .to_string();
    let bare = format!("postgres://canary_user@127.0.0.1:{port}/{db}");
    let in_userinfo = format!("postgres://canary_user:{CANARY}@127.0.0.1:{port}/{db}");
    let in_param = format!("{bare}?sslmode=prefer&password={CANARY}");
    // libpq's keyword/value form, as psql takes it, the password quoted.
    let conninfo =
        format!("host=127.0.0.1 port={port} user=canary_user dbname={db} password = '{CANARY}'");
    let store = format!("postgres://canary_user:{CANARY}@127.0.0.1:{port}/{store_db}");
    session(&in_userinfo)
        .batch("SELECT 1")
        .map_err(|e| format!("the canary role cannot log in: {e}"))?;
    std::fs::write(d.join("pw"), format!("{CANARY}\n")).map_err(|e| e.to_string())?;
    std::fs::write(
        d.join(".pgpass"),
        format!("127.0.0.1:{port}:*:canary_user:{CANARY}\n"),
    )
    .map_err(|e| e.to_string())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.join(".pgpass"), std::fs::Permissions::from_mode(0o600))
        .map_err(|e| e.to_string())?;
    std::fs::write(
        d.join("canary.toml"),
        format!("engines = [\"postgres\"]\nclients = [1]\ntime = 1\nwarmup = 0\n\n[dsn]\npostgres = \"{in_param}\"\n"),
    )
    .map_err(|e| e.to_string())?;

    let mut seen = Vec::new();
    let pw_file = d.join("pw").display().to_string();
    let nothing: &[(&str, &str)] = &[];
    expect_code(
        &run(
            d,
            &["prepare", "tpcb", "--dsn", &in_userinfo],
            nothing,
            &mut seen,
        ),
        0,
        "prepare",
    )?;
    let channels: Vec<Channel> = vec![
        ("user info", vec!["--dsn", &in_userinfo], vec![]),
        ("password= parameter", vec!["--dsn", &in_param], vec![]),
        ("libpq keyword/value", vec!["--dsn", &conninfo], vec![]),
        (
            "PGPASSWORD",
            vec!["--dsn", &bare],
            vec![("PGPASSWORD", CANARY)],
        ),
        (".pgpass", vec!["--dsn", &bare], vec![]),
        (
            "--password-file",
            vec!["--dsn", &bare, "--password-file", &pw_file],
            vec![],
        ),
        (
            "DBDUEL_DSN",
            vec![],
            vec![("DBDUEL_DSN", in_param.as_str())],
        ),
    ];
    for (i, (name, target, vars)) in channels.iter().enumerate() {
        let json = format!("run{i}.json");
        let mut args = vec!["run", "tpcb", "-T", "1", "-P", "1", "--json", &json];
        args.extend(target.iter().copied());
        expect_code(
            &run(d, &args, vars, &mut seen),
            0,
            &format!("run through {name}"),
        )?;
        let mut check = vec!["check", "tpcb"];
        check.extend(target.iter().copied());
        expect_code(
            &run(d, &check, vars, &mut seen),
            0,
            &format!("check through {name}"),
        )?;
        // A bad parameter beside the password: the refusal names the DSN.
        if target.first() == Some(&"--dsn") {
            let sep = match (target[1].contains("://"), target[1].contains('?')) {
                (false, _) => ' ',
                (true, true) => '&',
                (true, false) => '?',
            };
            let bad = format!("{}{sep}bogus=1", target[1]);
            let out = run(
                d,
                &["run", "tpcb", "-T", "1", "--dsn", &bad],
                vars,
                &mut seen,
            );
            expect_code(&out, 2, &format!("a bad parameter through {name}"))?;
        }
        let _ = run(d, &["run", "tpcb", "--help"], vars, &mut seen);
    }
    // DSNs that cannot be used, each refused without the password in the refusal.
    for bad in [
        format!("host=127.0.0.1 port={port} password='{CANARY}"),
        format!("host=127.0.0.1 port={port} password={CANARY}\\"),
        format!("sqlite://canary_user:{CANARY}@/{}/x.db", d.display()),
        format!("postgres:/canary_user:{CANARY}@127.0.0.1:{port}/{db}"),
    ] {
        let out = run(
            d,
            &["run", "tpcb", "-T", "1", "--dsn", &bad],
            nothing,
            &mut seen,
        );
        expect_code(
            &out,
            2,
            &format!("an unusable DSN ({})", bad.replace(CANARY, "***")),
        )?;
    }
    // A plan's [dsn], into a SQLite store and into a PostgreSQL store, with reports.
    for results in ["store.db", store.as_str()] {
        let out = run(
            d,
            &[
                "sweep",
                "canary.toml",
                "--results",
                results,
                "--report",
                "r.html",
            ],
            nothing,
            &mut seen,
        );
        expect_code(&out, 0, &format!("sweep into {results}"))?;
        for args in [
            vec!["results", "list", "--results", results],
            vec!["results", "show", "1", "--results", results],
            vec![
                "results",
                "export",
                "--format",
                "json",
                "--results",
                results,
            ],
            vec!["report", "--format", "markdown", "--results", results],
            vec!["report", "--results", results, "--output", "again.html"],
        ] {
            let out = run(d, &args, nothing, &mut seen);
            expect_code(&out, 0, &args.join(" "))?;
        }
    }
    // A store the password reaches through a refused scheme.
    let refused = format!("mysql://u:{CANARY}@127.0.0.1/x");
    let out = run(
        d,
        &["results", "list", "--results", &refused],
        nothing,
        &mut seen,
    );
    expect_code(&out, 2, "results list with a mysql:// store")?;
    // The PostgreSQL store's own rows, read directly.
    let mut s = session(&store);
    for q in ["SELECT text FROM plans", "SELECT result FROM runs"] {
        let rows = s.query_text(q).map_err(|e| format!("{q}: {e}"))?;
        ensure(!format!("{rows:?}").contains(CANARY), || {
            format!("the PostgreSQL store keeps the password: {q}")
        })?;
    }
    let leaked: Vec<String> = seen
        .iter()
        .filter(|(_, out)| out.contains(CANARY))
        .map(|(cmd, out)| format!("$ {cmd}\n{out}"))
        .collect();
    ensure(leaked.is_empty(), || {
        format!("the password was printed:\n{}", leaked.join("\n---\n"))
    })?;
    let files = files_with_canary(d);
    ensure(files.is_empty(), || {
        format!("the password was written into {files:?}")
    })
}

fn last_segment(dsn: &str) -> String {
    dsn.rsplit('/').next().unwrap_or_default().to_string()
}

/// A run's output and result, and a sweep's store, report and output, never hold the
/// password of the DSN the server was named by.
fn password_hidden(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "secret")?;
    let password = dsn
        .split("dbduel:")
        .nth(1)
        .and_then(|s| s.split('@').next())
        .unwrap_or_default()
        .to_string();
    let json = env.path("secret.json");
    let out = dbduel(&[
        "run",
        "tpcb",
        "--dsn",
        &dsn,
        "-T",
        "1",
        "--json",
        &json.display().to_string(),
    ]);
    expect_code(&out, 0, "run")?;
    let saved = std::fs::read_to_string(&json).map_err(|e| e.to_string())?;
    ensure(password.len() > 8, || "test DSN has no password".into())?;
    ensure(
        !text(&out).contains(&password) && !saved.contains(&password),
        || "the password was printed or saved".into(),
    )?;
    // A plan naming the server in [dsn]: neither the store nor the report keeps the password.
    let plan = env.path("secret-plan.toml");
    std::fs::write(
        &plan,
        format!("engines = [\"postgres\"]\nclients = [1]\ntime = 1\n[dsn]\npostgres = \"{dsn}\"\n"),
    )
    .map_err(|e| e.to_string())?;
    let store = env.path("secret.db");
    let report = env.path("secret.html");
    let out = dbduel(&[
        "sweep",
        &plan.display().to_string(),
        "--results",
        &store.display().to_string(),
        "--report",
        &report.display().to_string(),
    ]);
    expect_code(&out, 0, "sweep")?;
    for file in [&store, &report] {
        let bytes = std::fs::read(file).map_err(|e| e.to_string())?;
        ensure(!String::from_utf8_lossy(&bytes).contains(&password), || {
            format!("{} keeps the password", file.display())
        })?;
    }
    ensure(!text(&out).contains(&password), || {
        "the sweep printed the password".into()
    })
}
