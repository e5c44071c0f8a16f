//! A managed Firebird 3 SuperServer: its own root directory (firebird.conf written at every
//! start with the port and the profile's settings, its own security database with the SYSDBA
//! password, symlinks to the installed messages, plugins and character sets), its own lock and
//! temporary directories, and the alias `dbduel` for its default database.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::profile::{Facts, Knob, Tuning, config_lines, pairs};
use super::{Layout, ServerKind, command, find_binary, run_logged};
use crate::error::Error;

pub static FIREBIRD: ServerKind = ServerKind {
    engine: "firebird",
    product: "Firebird",
    package: "firebird3.0-server",
    account: "firebird",
    binaries,
    init,
    command: server_command,
    dsn,
    stop_signal: libc::SIGTERM,
    default_db: "dbduel",
    setup,
    fresh_db,
    tuning: TUNING,
    statements,
};

/// `--server-statements`: nothing to turn on (Firebird keeps no cumulative figures per
/// statement; its MON$ tables are always there).
fn statements(_: &Path, _: &super::Settings) -> Result<Vec<super::Setting>, String> {
    Ok(Vec::new())
}

/// The profile rules: `tuned` below, for `unsafe` too.
const TUNING: Tuning = Tuning {
    engine: "firebird",
    tuned,
    durability_off: &[],
    connections: None,
    space,
    config,
    recommended: None,
};

/// firebird.conf lines.
fn config(knobs: &[(String, String)]) -> String {
    config_lines(
        "# firebird.conf: the settings dbduel tune chose (restart the server to apply them)",
        "",
        knobs,
        |k, v| format!("{k} = {v}"),
    )
}

/// What `dbduel tune` searches on Firebird (firebird.conf): SuperServer's page cache (16 KiB
/// pages, up to a quarter of RAM), the size up to which files stay in the OS cache, the lock
/// manager's hash slots and memory, the sort space in memory, the garbage collection policy.
/// Forced writes belong to each database, not to firebird.conf: nothing here touches
/// durability.
fn space(f: &Facts) -> Vec<Knob> {
    let most = (f.ram_bytes / 4 / (16 * 1024)).max(2048);
    let mut pages = vec!["2048".to_string()];
    for p in [8192, 32_768, 131_072, most] {
        let p = p.min(most).to_string();
        if !pages.contains(&p) {
            pages.push(p);
        }
    }
    vec![
        Knob {
            name: "DefaultDbCachePages".into(),
            values: pages,
            durability: false,
        },
        Knob::new("FileSystemCacheThreshold", &["65536", "262144"]),
        Knob::new("LockHashSlots", &["8191", "30011"]),
        Knob::new("LockMemSize", &["1M", "8M"]),
        Knob::new("TempCacheLimit", &["64M", "256M"]),
        Knob::new("GCPolicy", &["combined", "cooperative", "background"]),
    ]
}

/// Firebird (firebird.conf): SuperServer's shared page cache holds the dataset plus 10% (in
/// 16 KiB pages, at most a quarter of RAM, never under the shipped 2048 pages), the OS cache
/// stays in use for files up to that size, and the lock manager gets more hash slots and
/// memory for many connections. Firebird's durability switch (forced writes) belongs to each
/// database, not to the server, so `unsafe` adds nothing to `tuned` here.
fn tuned(f: &Facts) -> Vec<(String, String)> {
    let pages = ((f.dataset_bytes * 11 / 10).min(f.ram_bytes / 4) / (16 * 1024)).max(2048);
    pairs(&[
        ("DefaultDbCachePages", &pages.to_string()),
        ("FileSystemCacheThreshold", &pages.max(65_536).to_string()),
        ("LockHashSlots", "30011"),
        ("LockMemSize", "8M"),
        ("TempCacheLimit", "256M"),
    ])
}

/// The password SYSDBA gets when no random one is asked for (Firebird has no trust login
/// over TCP); the server listens on loopback only.
pub const DEFAULT_PASSWORD: &str = "masterkey";

/// The security database the package made, copied into each managed server's root.
const SECURITY_DB: &str = "/var/lib/firebird/3.0/system/security3.fdb";

/// What a root directory links to from the installation.
const SHARED: &[&str] = &[
    "firebird.msg",
    "intl",
    "plugins",
    "UDF",
    "lib",
    "plugins.conf",
    "fbtrace.conf",
];

fn binaries(first: Option<&Path>) -> Option<(PathBuf, PathBuf)> {
    let isql = find_binary(&["isql-fb", "isql"], first, &[])?;
    let server = find_binary(&["firebird"], first, &[])?;
    install_root()?;
    Some((isql, server))
}

/// The installation's root (messages, plugins): Debian's /usr/lib/<arch>/firebird/3.0, or
/// /opt/firebird.
fn install_root() -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from("/opt/firebird")];
    if let Ok(dirs) = std::fs::read_dir("/usr/lib") {
        for d in dirs.flatten() {
            if let Ok(versions) = std::fs::read_dir(d.path().join("firebird")) {
                candidates.extend(versions.flatten().map(|v| v.path()));
            }
        }
    }
    candidates.sort();
    candidates
        .into_iter()
        .rev()
        .find(|p| p.join("firebird.msg").is_file() && p.join("plugins").is_dir())
}

fn root(layout: &Layout) -> PathBuf {
    layout.dir.join("root")
}

/// The environment that points Firebird's tools and server at the managed root.
fn environment(cmd: &mut Command, layout: &Layout) {
    cmd.env("FIREBIRD", root(layout))
        .env("FIREBIRD_LOCK", layout.run.join("lock"))
        .env("FIREBIRD_TMP", layout.run.join("tmp"));
}

fn init(
    layout: &Layout,
    isql: &Path,
    account: Option<(u32, u32)>,
    password: Option<&str>,
) -> Result<(), Error> {
    let install = install_root().ok_or_else(|| {
        Error::Usage(
            "Firebird's messages and plugins were not found: install firebird3.0-server".into(),
        )
    })?;
    let root = root(layout);
    for dir in [
        root.clone(),
        layout.run.join("lock"),
        layout.run.join("tmp"),
    ] {
        std::fs::create_dir_all(&dir).map_err(Error::io("create", &dir))?;
    }
    for name in SHARED {
        let target = install.join(name);
        if target.exists() {
            std::os::unix::fs::symlink(&target, root.join(name))
                .map_err(Error::io("link to", &target))?;
        }
    }
    std::fs::copy(SECURITY_DB, root.join("security3.fdb")).map_err(|e| {
        Error::Usage(format!(
            "cannot copy Firebird's security database {SECURITY_DB} ({e}): install firebird3.0-server"
        ))
    })?;
    let databases = root.join("databases.conf");
    std::fs::write(
        &databases,
        format!("dbduel = {}\n", layout.data.join("dbduel.fdb").display()),
    )
    .map_err(Error::io("write", &databases))?;
    write_conf(layout, 0, &[]).map_err(Error::io("write", &root.join("firebird.conf")))?;

    // SYSDBA's password, set in the copied security database through an embedded connection.
    let script = root.join("password.sql");
    let pw = password.unwrap_or(DEFAULT_PASSWORD).replace('\'', "''");
    std::fs::write(
        &script,
        format!("CREATE OR ALTER USER SYSDBA PASSWORD '{pw}' USING PLUGIN Srp;\nCOMMIT;\n"),
    )
    .map_err(Error::io("write", &script))?;
    let mut cmd = command(isql, None);
    environment(&mut cmd, layout);
    cmd.args(["-q", "-b", "-user", "SYSDBA", "-i"])
        .arg(&script)
        .arg(root.join("security3.fdb"));
    let result = run_logged(cmd, &layout.log, "setting Firebird's SYSDBA password");
    let _ = std::fs::remove_file(&script);
    result?;
    chown_tree(&layout.dir, account)
}

/// Give everything under `dir` (not following links) to the service account.
fn chown_tree(dir: &Path, account: Option<(u32, u32)>) -> Result<(), Error> {
    let Some((uid, gid)) = account else {
        return Ok(());
    };
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        std::os::unix::fs::lchown(&p, Some(uid), Some(gid))
            .map_err(Error::io("give to the firebird account", &p))?;
        if p.is_dir()
            && !p.is_symlink()
            && let Ok(entries) = std::fs::read_dir(&p)
        {
            stack.extend(entries.flatten().map(|e| e.path()));
        }
    }
    Ok(())
}

/// firebird.conf: loopback only, the port, the own security database, then the settings.
fn write_conf(layout: &Layout, port: u16, settings: &[(String, String)]) -> std::io::Result<()> {
    let root = root(layout);
    let mut text = format!(
        "# Written by dbduel at each start.\nServerMode = Super\nRemoteBindAddress = 127.0.0.1\n\
         RemoteServicePort = {port}\nSecurityDatabase = {}\nWireCrypt = Enabled\nUdfAccess = None\n",
        root.join("security3.fdb").display()
    );
    // A knob given twice (`server start --set`) is written once, with its last value: how
    // firebird.conf treats a repeated line is not something to lean on.
    for (i, (k, v)) in settings.iter().enumerate() {
        if settings[i + 1..].iter().any(|(later, _)| later == k) {
            continue;
        }
        text.push_str(&format!("{k} = {v}\n"));
    }
    std::fs::write(root.join("firebird.conf"), text)
}

fn server_command(
    layout: &Layout,
    server: &Path,
    port: u16,
    settings: &[(String, String)],
    account: Option<(u32, u32)>,
) -> Command {
    // A failure to write shows as the server refusing to start (its log says why).
    if let Err(e) = write_conf(layout, port, settings) {
        let _ = std::fs::write(&layout.log, format!("cannot write firebird.conf: {e}\n"));
    }
    let mut cmd = command(server, account);
    environment(&mut cmd, layout);
    cmd
}

fn dsn(port: u16, password: Option<&str>) -> String {
    let pw = password.unwrap_or(DEFAULT_PASSWORD);
    format!("firebird://SYSDBA:{pw}@127.0.0.1:{port}/")
}

/// The sweep's database is the `dbduel` alias of a new server: its file does not exist yet, and
/// the first connection creates it.
fn fresh_db(_admin: &mut dyn crate::engine::Session, name: &str) -> Result<(), Error> {
    if name == FIREBIRD.default_db {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "a managed Firebird server keeps its sweep database under the alias {}, not {name}",
            FIREBIRD.default_db
        )))
    }
}

/// SYSDBA is set up by `init`.
fn setup(_layout: &Layout, _password: Option<&str>) -> Result<(), Error> {
    Ok(())
}
