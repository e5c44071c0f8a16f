# bench/common.py: what every bench script shares: its messages and exit on error, the numbers it reads from the
# environment, the dbduel binary it measures, a managed server started through `dbduel server start` (or PostgreSQL
# by hand), in its own session or the script's (BENCH_SERVER_SESSION), and the SQL sent to it, a measured client run (its wall time and CPU), the untimed settling before a timed step, and the medians,
# rotations and formatting of its figures.

import glob
import os
import re
import shlex
import socket
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DBDUEL_GIVEN = os.environ.get("DBDUEL", "").strip()
DBDUEL = os.path.abspath(DBDUEL_GIVEN or os.path.join(REPO, "target", "release", "dbduel"))


def die(msg):
    """The script's error, named by the script, then exit 1."""
    print(f"{os.path.basename(sys.argv[0])}: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def say(*a):
    print(*a, flush=True)


def env_int(name, default, minimum=1):
    text = os.environ.get(name, "").strip() or str(default)
    try:
        value = int(text)
    except ValueError:
        die(f"{name}={text!r} must be a whole number")
    if value < minimum:
        die(f"{name}={value} must be >= {minimum}")
    return value


def env_list(name, default):
    text = os.environ.get(name, "").strip() or default
    try:
        values = [int(v) for v in text.split()]
    except ValueError:
        die(f"{name}={text!r} must be whole numbers separated by spaces")
    if not values or min(values) < 1:
        die(f"{name} must list numbers >= 1")
    return values


SESSIONS = {
    "own": "the server in a session of its own, as a service runs",
    "caller": "the server in the script's session (its own process group), as `dbduel server start` runs it",
}


def server_session(default):
    """BENCH_SERVER_SESSION, `own` or `caller` (`default` when unset). Linux's autogroup scheduling (on when
    /proc/sys/kernel/sched_autogroup_enabled is 1) shares the CPU between sessions first, then among a session's
    threads: a server in its own session does not compete thread by thread with the clients, and which way a client
    multiplexes its connections best can change with it (BENCHMARKS.md, "How many threads for many clients")."""
    text = os.environ.get("BENCH_SERVER_SESSION", "").strip() or default
    if text not in SESSIONS:
        die(f"BENCH_SERVER_SESSION={text!r}: use own ({SESSIONS['own']}) or caller ({SESSIONS['caller']})")
    return text


def session_popen(session):
    """Popen's keyword arguments that start a server in `session`; Ctrl-C at the terminal reaches neither way (the
    script stops the server)."""
    return {"start_new_session": True} if session == "own" else {"process_group": 0}


def start_postgres(bindir, data, opts, log, session, run_as, timeout=60):
    """Start PostgreSQL on `data` with the postgres options `opts` (a string, as pg_ctl's -o takes them), its log to
    `log`, as the OS user `run_as` wraps argv into: `own` through pg_ctl (which calls setsid), `caller` by starting
    the postmaster itself in this session; wait until it accepts connections. pg_ctl stops it either way."""
    if session == "own":
        r = subprocess.run(run_as([os.path.join(bindir, "pg_ctl"), "-D", data, "-l", log, "-w", "-t", str(timeout),
                                   "-o", opts, "start"]), capture_output=True, text=True)
        if r.returncode != 0:
            die(f"PostgreSQL did not start:\n{r.stdout}{r.stderr}\n{tail(log)}")
        return
    with open(log, "ab") as out:
        os.chown(log, *owner_of(data))
        proc = subprocess.Popen(run_as([os.path.join(bindir, "postgres"), "-D", data] + shlex.split(opts)),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, **session_popen(session))
    port = shlex.split(opts)[shlex.split(opts).index("-p") + 1]
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            die(f"PostgreSQL exited with {proc.returncode} while starting:\n{tail(log)}")
        ready = subprocess.run([os.path.join(bindir, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", port])
        if ready.returncode == 0:
            return
        if time.monotonic() > deadline:
            die(f"PostgreSQL did not accept connections within {timeout} s:\n{tail(log)}")
        time.sleep(0.1)


def owner_of(path):
    st = os.stat(path)
    return st.st_uid, st.st_gid


def start_server(engine, root, connections=None, settings=(), name=None, flags=()):
    """A managed server of `engine` (postgres, mariadb or firebird) in root/`name` (default: root/engine), taking
    `connections` at once when given, with `settings` (KNOB=VALUE, `server start --set`) on top of the default
    profile and `flags` (`server start`'s own, as --server-statements), in the session BENCH_SERVER_SESSION names (default: the caller's, see server_session): (data
    directory, DSN with its password)."""
    kind = {"postgres": "postgres", "mariadb": "mysql", "mysql": "mysql", "firebird": "firebird"}.get(engine)
    if kind is None:
        die(f"unknown server {engine!r}: use postgres, mariadb or firebird")
    session = server_session("caller")
    say(f"# {engine} server session: {session} ({SESSIONS[session]})")
    data = os.path.join(root, name or engine)
    # `dbduel server start` leaves the server in its caller's session; setsid gives it one of its own.
    argv = (["setsid", "--wait"] if session == "own" else []) + [DBDUEL, "server", "start", kind, "--data-dir", data]
    if connections:
        argv += ["--connections", str(connections)]
    for setting in settings:
        argv += ["--set", setting]
    argv += list(flags)
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        die(f"cannot start {engine}: {out.stdout}{out.stderr}")
    # `server dsn` gives the DSN with the server's password (`server start` prints it without).
    full = subprocess.run([DBDUEL, "server", "dsn", "--data-dir", data], capture_output=True, text=True)
    if full.returncode != 0 or "://" not in full.stdout:
        die(f"no DSN from `dbduel server dsn`: {full.stdout}{full.stderr}")
    return data, full.stdout.strip()


def measured(argv, log, cwd=None):
    """Run a client, its output to `log`; return (exit code, wall seconds, user+system CPU seconds of the process
    from the rusage wait4() returns, output)."""
    code, wall, cpu, _, text = measured_rss(argv, log, cwd)
    return code, wall, cpu, text


def measured_rss(argv, log, cwd=None):
    """`measured`, with the process's peak resident set in KiB (ru_maxrss) before the output."""
    started = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    with open(log, errors="replace") as f:
        text = f.read()
    return os.waitstatus_to_exitcode(status), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, text


def shown(dsn):
    """A DSN as it may be printed: its password replaced by ***."""
    user, password, host, port = server_address(dsn)
    return dsn.replace(f":{password}@", ":***@", 1) if password else dsn


def server_address(dsn):
    """(user, password, host, port) of a DSN."""
    m = re.match(r"(\w+)://([^@:/]+)(?::([^@/]*))?@([^:/]+):(\d+)", dsn)
    if not m:
        die(f"cannot read user, host and port from {dsn}")
    return m.group(2), m.group(3) or "", m.group(4), int(m.group(5))


def sql(engine, dsn, *statements, db="postgres"):
    """Statements through the server's own client (psql into `db`, or mariadb), the password in its environment."""
    user, password, host, port = server_address(dsn)
    if engine == "postgres":
        argv = ["psql", "-h", host, "-p", str(port), "-U", user, "-d", db, "-q", "-v", "ON_ERROR_STOP=1"]
        for s in statements:
            argv += ["-c", s]
    else:
        argv = ["mariadb", "-h", host, "-P", str(port), "-u", user, "-e", "; ".join(statements)]
    secret = {"PGPASSWORD" if engine == "postgres" else "MYSQL_PWD": password}
    out = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **secret})
    if out.returncode != 0:
        die(f"{'; '.join(statements)} failed on {engine}: {out.stderr}")


def query(engine, dsn, statement, db="postgres"):
    """One statement's rows through the server's own client, tab-separated, without headers (None when it fails)."""
    user, password, host, port = server_address(dsn)
    if engine == "postgres":
        argv = ["psql", "-h", host, "-p", str(port), "-U", user, "-d", db, "-At", "-F", "\t", "-c", statement]
    else:
        argv = ["mariadb", "-h", host, "-P", str(port), "-u", user, "-N", "-B", "-e", statement]
    secret = {"PGPASSWORD" if engine == "postgres" else "MYSQL_PWD": password}
    out = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **secret})
    return out.stdout if out.returncode == 0 else None


def settle(engine, dsn):
    """Untimed, before each timed step: PostgreSQL writes out the previous step's dirty pages."""
    if engine == "postgres":
        sql(engine, dsn, "CHECKPOINT")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bindir():
    """The newest PostgreSQL server's bin directory under /usr/lib/postgresql."""
    dirs = [d for d in glob.glob("/usr/lib/postgresql/*/bin") if os.path.exists(os.path.join(d, "postgres"))]
    if not dirs:
        die("no PostgreSQL server found under /usr/lib/postgresql/*/bin (apt-get install -y postgresql)")

    def version(d):
        v = d.split("/")[-2]
        return tuple(int(x) if x.isdigit() else 0 for x in v.split("."))

    return max(dirs, key=version)


def tail(path, n=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def fail_run(what, argv, out_path, rc):
    """A measured client failed: its command and the end of its output, then exit 2."""
    say(f"\n{what} FAILED (exit {rc}): {shlex.join(argv)}")
    say("---- output ----")
    say(tail(out_path, 40).rstrip())
    say("----------------")
    sys.exit(2)


def rotated(tools, i):
    """The tools' order in round i: each round starts one later, so that no tool is always first."""
    k = i % len(tools)
    return tools[k:] + tools[:k]


def med(values):
    """The median of the values that are not None (None if none are)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(r, digits=2):
    return f"{r:.{digits}f}" if r is not None else "n/a"
