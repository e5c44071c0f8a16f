//! The commands of README.md and of every page under docs/, run as a user pastes them: each
//! `sh` block in a scratch directory that sees the repository's bench/, plans/ and workloads/,
//! with the test servers' DSNs, short times (a second a phase) and small scales substituted; a
//! command that no longer works fails its block's trial, and a page under docs/ missing from
//! `PAGES` fails `docs::every_page_is_tested`. A block of the same commands as an earlier one (the
//! duel, in README.md and docs/duel.md) runs once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Target, ensure, with_env};

/// The pages whose `sh` blocks run, each with its text, by its path in the repository.
macro_rules! pages {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $path)))),*]
    };
}

/// README.md and every page under docs/ (`docs::every_page_is_tested` fails on one not here).
const PAGES: &[(&str, &str)] = pages![
    "README.md",
    "docs/README.md",
    "docs/capacity.md",
    "docs/compare.md",
    "docs/connecting.md",
    "docs/duel.md",
    "docs/plans-and-sweeps.md",
    "docs/reports.md",
    "docs/run.md",
    "docs/servers-and-profiles.md",
    "docs/shards.md",
    "docs/tune.md",
    "docs/workloads/ch.md",
    "docs/workloads/declarative.md",
    "docs/workloads/scripts.md",
    "docs/workloads/smallbank.md",
    "docs/workloads/sysbench.md",
    "docs/workloads/tatp.md",
    "docs/workloads/tpcb.md",
    "docs/workloads/tpcc.md",
    "docs/workloads/tpch.md",
    "docs/workloads/ycsb.md",
];

/// Lines of the pages that are not run, with the reason. Any other line of an `sh` block runs.
const NOT_RUN: &[(&str, &str)] = &[
    ("./scripts/test", "the test suite itself"),
    (
        "dbduel sweep plans/ch-sides.toml --report ch-sides.html",
        "four engines' CH-benCHmark loads and nine points each: ch::sides_in_one_sweep runs this plan on SQLite, its rounds a second long",
    ),
    (
        "cargo build --release && cp target/release/dbduel /usr/local/bin/",
        "installs into the system",
    ),
];

/// An `sh` block: its page, the line where it starts and its command lines.
struct Block {
    page: &'static str,
    line: usize,
    commands: Vec<String>,
}

impl Block {
    /// The trial's name: `readme::block_at_line_N` for README.md, `docs::PAGE::block_at_line_N`
    /// for docs/PAGE.md (a `/` in PAGE as `::`).
    fn name(&self) -> String {
        format!("{}::block_at_line_{}", page_name(self.page), self.line)
    }

    /// Where the block is, for messages: `docs/run.md block at line 12`.
    fn place(&self) -> String {
        format!("{} block at line {}", self.page, self.line)
    }
}

/// `readme` for README.md, `docs::a::b` for docs/a/b.md.
fn page_name(page: &str) -> String {
    match page.strip_prefix("docs/") {
        Some(rest) => format!("docs::{}", rest.trim_end_matches(".md").replace('/', "::")),
        None => "readme".to_string(),
    }
}

fn blocks(page: &'static str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(block) = current.as_mut() {
            if line.starts_with("```") {
                out.extend(current.take());
            } else {
                let command = strip_comment(line);
                if !command.is_empty() {
                    block.commands.push(command);
                }
            }
        } else if line.trim_end() == "```sh" {
            current = Some(Block {
                page,
                line: i + 1,
                commands: Vec::new(),
            });
        }
    }
    out
}

/// The line without its trailing `# comment` (a `#` outside quotes, after a space).
fn strip_comment(line: &str) -> String {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                return line[..i].trim().to_string();
            }
            _ => {}
        }
        prev = c;
    }
    line.trim().to_string()
}

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let blocks: Vec<Block> = PAGES
        .iter()
        .flat_map(|(page, text)| blocks(page, text))
        .collect();
    assert!(blocks.len() >= 20, "the pages' sh blocks were not found");
    assert!(
        blocks.iter().filter(|b| b.page == "README.md").count() >= 8,
        "README.md's sh blocks were not found"
    );
    // A block whose commands are an earlier block's, as a user pastes them, runs once: the
    // later one names where it ran.
    let mut seen: Vec<(Vec<String>, String)> = Vec::new();
    let mut trials: Vec<Trial> = Vec::new();
    for block in blocks {
        let commands: Vec<String> = block
            .commands
            .iter()
            .map(|c| c.replace("cargo run --release -- ", "dbduel "))
            .collect();
        let name = block.name();
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == commands) {
            let first = first.clone();
            trials.push(crate::env::trial(name, move || {
                Ok(ensure(!first.is_empty(), || "no earlier block".into())?)
            }));
            continue;
        }
        seen.push((commands, name.clone()));
        trials.push(with_env(env, name, move |env| run_block(env, &block)));
    }
    trials.push(crate::env::trial("docs::every_page_is_tested", || {
        Ok(every_page_listed()?)
    }));
    trials
}

/// Every `.md` file under docs/ is in `PAGES`, so that its `sh` blocks run.
fn every_page_listed() -> Result<(), String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut dirs = vec![repo.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let relative = path.strip_prefix(repo).map_err(|e| e.to_string())?;
                found.push(relative.display().to_string());
            }
        }
    }
    let missing: Vec<_> = found
        .iter()
        .filter(|f| !PAGES.iter().any(|(p, _)| p == f))
        .collect();
    ensure(missing.is_empty(), || {
        format!(
            "pages under docs/ that tests/it/readme.rs's PAGES does not hold, so their sh blocks never run: {missing:?}"
        )
    })
}

/// The DSNs a block's commands are given: one database per engine, made on first use.
struct Dsns<'a> {
    env: &'a Env,
    dir: PathBuf,
    /// The block's name, in the databases' names.
    name: String,
    made: Vec<(&'static str, String)>,
    last: Option<String>,
}

impl Dsns<'_> {
    fn get(&mut self, scheme: &'static str, original: &str) -> String {
        let dsn = if scheme == "sqlite" {
            // sqlite:///var/tmp/bench.db: the same file name in the scratch directory.
            let name = original.rsplit('/').next().unwrap_or("bench.db");
            format!("sqlite://{}", self.dir.join(name).display())
        } else if let Some((_, d)) = self.made.iter().find(|(s, _)| *s == scheme) {
            d.clone()
        } else {
            let target = match scheme {
                "postgres" => Target::Postgres,
                "mysql" => Target::MariaDb("InnoDB"),
                _ => Target::Firebird,
            };
            let d = self.env.fresh_db(target, &self.name);
            self.made.push((scheme, d.clone()));
            d
        };
        self.last = Some(dsn.clone());
        dsn
    }
}

/// The DSN a page's command names, if any: (start, end) in the line, and its scheme.
fn find_dsn(line: &str, from: usize) -> Option<(usize, usize, &'static str)> {
    let schemes = [
        ("postgres://", "postgres"),
        ("postgresql://", "postgres"),
        ("mysql://", "mysql"),
        ("mariadb://", "mysql"),
        ("firebird://", "firebird"),
        ("sqlite://", "sqlite"),
    ];
    let rest = &line[from..];
    let (at, scheme) = schemes
        .iter()
        .filter_map(|(prefix, scheme)| rest.find(prefix).map(|i| (i, *scheme)))
        .min_by_key(|(i, _)| *i)?;
    let start = from + at;
    let len = line[start..]
        .find(|c: char| c.is_whitespace() || c == '\'' || c == '"')
        .unwrap_or(line.len() - start);
    Some((start, start + len, scheme))
}

/// Whether a DSN names a server on this machine (the pages also show remote ones).
fn local(dsn: &str) -> bool {
    let after = dsn.split_once("://").map_or("", |(_, r)| r);
    let host = after.rsplit_once('@').map_or(after, |(_, h)| h);
    let host = host.split(['/', ':', '?']).next().unwrap_or_default();
    host.is_empty() || host == "127.0.0.1" || host == "localhost" || host == "..."
}

/// The command as the test runs it, or None (with the reason) when it cannot run here.
fn substitute(command: &str, dsns: &mut Dsns, dir: &Path) -> Result<String, String> {
    let mut line = command.replace("cargo run --release -- ", "dbduel ");
    // DSNs: quoted ones lose their quotes, which the substitute gets back.
    let mut from = 0;
    while let Some((start, end, scheme)) = find_dsn(&line, from) {
        let original = line[start..end].to_string();
        if !local(&original) {
            return Err(format!("{original} is a remote server"));
        }
        let dsn = dsns.get(scheme, &original);
        let (a, b) = quoted(&line, start, end);
        let replacement = format!("'{dsn}'");
        line.replace_range(a..b, &replacement);
        from = a + replacement.len();
    }
    // pgbench's connection options naming a server elsewhere.
    let words: Vec<&str> = line.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let host = match w.strip_prefix("PGHOST=") {
            Some(h) => Some(h),
            None => (*w == "-h").then(|| words.get(i + 1).copied()).flatten(),
        };
        if let Some(h) = host.filter(|h| !local(&format!("postgres://{h}"))) {
            return Err(format!("{h} is a remote server"));
        }
    }
    // `--dsn ...`: the block's last DSN.
    if line.contains("--dsn ...") {
        let last = dsns
            .last
            .clone()
            .ok_or_else(|| format!("`--dsn ...` with no DSN before it in: {command}"))?;
        line = line.replace("--dsn ...", &format!("--dsn '{last}'"));
    }
    let scratch = dir.display().to_string();
    line = line
        .replace("/mnt/ssd/", &format!("{scratch}/"))
        .replace("/var/tmp/", &format!("{scratch}/"));
    // A server a block starts lives in its scratch directory, where the block's end stops it:
    // one started elsewhere would outlive the test and refuse the next run's.
    if let Some(at) = line.find("--data-dir /") {
        let path = &line[at + "--data-dir ".len()..];
        if !path.starts_with(&scratch) {
            return Err(format!(
                "`{command}`: a data directory outside /mnt/ssd/ or /var/tmp/ (which the test moves into its scratch directory) would outlive the test"
            ));
        }
    }
    let mut words: Vec<String> = line.split(' ').map(str::to_string).collect();
    let mut timed = false;
    for i in 0..words.len() {
        let value = match words[i].as_str() {
            "-T" | "--time" => {
                timed = true;
                Some("1".to_string())
            }
            "-t" | "--transactions" => {
                timed = true;
                None
            }
            // Each phase lasts a second, its load kept.
            "--phase" => {
                timed = true;
                words
                    .get(i + 1)
                    .and_then(|p| p.split_once(':'))
                    .map(|(_, load)| format!("1s:{load}"))
            }
            "--warmup" => Some("0".into()),
            "-P" | "--progress" => Some("1".into()),
            "-s" | "--scale" | "-w" | "--warehouses" => Some("1".into()),
            "--table-size" => Some("1000".into()),
            "-c" | "--clients" => words
                .get(i + 1)
                .and_then(|n| n.parse::<u32>().ok())
                .map(|n| n.min(4).to_string()),
            _ => None,
        };
        if let (Some(v), Some(next)) = (value, words.get_mut(i + 1)) {
            *next = v;
        }
        if words[i].starts_with("recordcount=") {
            words[i] = "recordcount=1000".into();
        }
        if words[i] == "sweep"
            && let Some(plan) = words.get_mut(i + 1)
        {
            *plan = short_plan(plan, dir)?;
        }
        if i > 0 && words[i - 1] == "show" && words[i].parse::<u32>().is_ok() {
            words[i] = "1".into();
        }
    }
    let mut line = words.join(" ");
    let verb = |v: &str| {
        line.starts_with(&format!("dbduel {v}")) || line.contains(&format!("&& dbduel {v}"))
    };
    // TPC-H runs its streams to their end and takes no -T.
    if verb("run") && !timed && !line.contains(" tpch ") {
        line += " -T 1";
    }
    if line.starts_with("dbduel duel") {
        line += " -T 1 -c 1";
    }
    Ok(line)
}

/// The span of a DSN with the quotes around it, if any.
fn quoted(line: &str, start: usize, end: usize) -> (usize, usize) {
    let bytes = line.as_bytes();
    let open = start > 0 && matches!(bytes[start - 1], b'\'' | b'"');
    let close = end < bytes.len() && matches!(bytes[end], b'\'' | b'"');
    if open && close {
        (start - 1, end + 1)
    } else {
        (start, end)
    }
}

/// A copy of a plan file in the scratch directory, one short point per step: 1 s, no warm-up,
/// one repeat, the first client count, scale 1.
fn short_plan(plan: &str, dir: &Path) -> Result<String, String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(repo.join(plan)).map_err(|e| format!("{plan}: {e}"))?;
    let mut value: toml::Table = toml::from_str(&text).map_err(|e| format!("{plan}: {e}"))?;
    if !value.contains_key("transactions") {
        value.insert("time".into(), toml::Value::Integer(1));
    }
    value.insert("warmup".into(), toml::Value::Integer(0));
    value.insert("repeats".into(), toml::Value::Integer(1));
    value.insert("scale".into(), toml::Value::Integer(1));
    if let Some(first) = value
        .get("clients")
        .and_then(|c| c.as_array())
        .and_then(|c| c.first())
        .cloned()
    {
        let first = first
            .as_integer()
            .map_or(first, |n| toml::Value::Integer(n.min(4)));
        value.insert("clients".into(), toml::Value::Array(vec![first]));
    }
    let out = dir.join(plan);
    let text = toml::to_string(&value).map_err(|e| e.to_string())?;
    std::fs::write(&out, text).map_err(|e| e.to_string())?;
    Ok(out.display().to_string())
}

fn run_block(env: &Env, block: &Block) -> Result<(), String> {
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = scratch.path().to_path_buf();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for shared in ["bench", "workloads"] {
        std::os::unix::fs::symlink(repo.join(shared), dir.join(shared))
            .map_err(|e| e.to_string())?;
    }
    std::fs::create_dir(dir.join("plans")).map_err(|e| e.to_string())?;
    let bin = Path::new(env!("CARGO_BIN_EXE_dbduel"))
        .parent()
        .expect("binary directory")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut dsns = Dsns {
        env,
        dir: dir.clone(),
        name: block.name().replace("::", "_"),
        made: Vec::new(),
        last: None,
    };
    let mut ran = 0;
    let mut result = Ok(());
    for command in &block.commands {
        if NOT_RUN.iter().any(|(c, _)| c == command) {
            continue;
        }
        let line = match substitute(command, &mut dsns, &dir) {
            Ok(line) => line,
            Err(why) if why.ends_with("is a remote server") => continue,
            Err(why) => {
                result = Err(format!("{}: {why}", block.place()));
                break;
            }
        };
        let out = Command::new("bash")
            .args(["-c", &line])
            .current_dir(&dir)
            .env("PATH", &path)
            .env_remove("DBDUEL_DSN")
            .output()
            .map_err(|e| e.to_string())?;
        ran += 1;
        // A spec-timed TPC-C run of a second completes no New-Order: it says so and exits 1.
        let code = out.status.code().unwrap_or(-1);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // One-second capacity steps on a machine the other tests share may find no rate that
        // holds twice: the search says so, writes its steps and exits 1.
        let unconfirmed = command.starts_with("dbduel capacity")
            && text.contains("no capacity confirmed")
            && text.contains("capacity written to");
        // Runs of a second leave compare's figures unjudged: a --fail-if gate then fails.
        let unjudged =
            command.starts_with("dbduel compare") && text.contains("could not be judged");
        let expected: &[i32] = if command.contains("--spec-timing") || unconfirmed || unjudged {
            &[0, 1]
        } else {
            &[0]
        };
        if !expected.contains(&code) || text.contains("panicked") {
            result = Err(format!(
                "{}: `{command}` exited {code}\nran as: {line}\n{text}",
                block.place()
            ));
            break;
        }
    }
    stop_servers(&dir, &bin);
    result?;
    let remote_only = block.commands.iter().all(|c| {
        NOT_RUN.iter().any(|(n, _)| n == c)
            || find_dsn(c, 0).is_some_and(|(a, b, _)| !local(&c[a..b]))
    });
    ensure(ran > 0 || remote_only, || {
        format!("{}: no command ran", block.place())
    })
}

/// Stop every managed server a block started in its scratch directory.
fn stop_servers(dir: &Path, bin: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.path().join("dbduel-server.json").exists() {
            let _ = Command::new(bin.join("dbduel"))
                .args(["server", "stop", "--data-dir"])
                .arg(entry.path())
                .output();
        }
    }
}
