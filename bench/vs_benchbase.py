# bench/vs_benchbase.py: one of dbduel's workloads against BenchBase's implementation of the same benchmark on the
# same PostgreSQL and MariaDB servers (started and removed through `dbduel server start/stop`): load time, transactions
# per second and client CPU per committed transaction, as medians of alternating rounds. vs-smallbank and vs-tatp
# give it their workload (a `Pair`) and document their method. With BENCH_FLOOR=1 on PostgreSQL, a workload that ships
# pgbench scripts of its transactions is also run by pgbench (a C client on libpq) and by dbduel with BEGIN a round
# trip of its own, as pgbench sends it: the same statements and round trips from both, a floor for the client's CPU.

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    DBDUEL, die, say, env_int, env_list, start_server, server_address, sql, query, settle, measured, rotated, med, fmt,
    pg_bindir)
import benchbase  # noqa: E402

TPS_TARGET = 1.0  # dbduel transactions per second / BenchBase's, at least
CPU_TARGET = 0.5  # dbduel CPU per committed transaction / BenchBase's, at most
# dbduel's side sends as BenchBase's JDBC drivers do: statements prepared, BEGIN with the first statement.
DBDUEL_ARGS = ("-M", "prepared", "--lazy-begin")


@dataclass
class Pair:
    """A benchmark both tools implement, run alike."""
    name: str  # dbduel's workload and BenchBase's benchmark (-b)
    procedures: tuple  # BenchBase's transaction types, in the order of `weights`
    weights: str  # BenchBase's <weights>: the mix dbduel runs too
    rows: str  # what one dbduel scale unit loads, for the messages ("100,000 customers")
    scalefactor: object  # dbduel's --scale -> BenchBase's <scalefactor>
    run_args: tuple  # dbduel run's options that make its run BenchBase's (isolation, key distribution...)
    isolation: str  # BenchBase's <isolation>
    # The floor (BENCH_FLOOR=1): pgbench scripts of the workload's transactions, (file, weight), in bench/scripts/...
    pgbench_scripts: tuple = ()
    pgbench_defines: object = None  # dbduel's --scale -> pgbench's -D NAME=VALUE arguments
    pgbench_options: str = ""  # PGOPTIONS for pgbench's sessions (the isolation dbduel's run_args set)
    floor_args: tuple = field(default=("-M", "prepared"))  # dbduel's run beside pgbench: BEGIN a round trip


class Bench:
    def __init__(self, pair, engine, dsn, root, dist, java, seconds, scale, pgbench=None):
        self.pair, self.engine, self.dsn, self.root = pair, engine, dsn, root
        self.dist, self.java, self.seconds, self.scale = dist, java, seconds, scale
        # pgbench and dbduel-begin (the floor) run on dbduel's database: the same rows, no load of their own.
        self.db = {"dbduel": f"dbduel_{pair.name}", "benchbase": f"benchbase_{pair.name}",
                   "pgbench": f"dbduel_{pair.name}", "dbduel-begin": f"dbduel_{pair.name}"}
        self.pgbench = pgbench if engine == "postgres" and pair.pgbench_scripts else None
        self.serial = 0

    def tools(self):
        return (["dbduel"] + (["benchbase"] if self.engine in self.dist else [])
                + (["pgbench", "dbduel-begin"] if self.pgbench else []))

    def loaders(self):
        """The tools that load a database of their own."""
        return [t for t in self.tools() if t in ("dbduel", "benchbase")]

    def log(self, tag):
        self.serial += 1
        return os.path.join(self.root, f"{self.serial:04d}-{self.engine}-{tag}.log")

    def db_url(self):
        return f"{self.dsn.rsplit('/', 1)[0]}/{self.db['dbduel']}"

    def commits(self, db):
        """PostgreSQL's count of transactions committed in `db` (pg_stat_database), read from another database."""
        out = query(self.engine, self.dsn, f"SELECT xact_commit FROM pg_stat_database WHERE datname = '{db}'")
        if not out or not out.strip().isdigit():
            die(f"cannot read pg_stat_database.xact_commit of {db}")
        return int(out.strip())

    def run_pgbench(self, clients, log):
        """pgbench on the workload's scripts; return (exit code, CPU seconds, tps, committed, retries, failed)."""
        user, password, host, port = server_address(self.dsn)
        here = os.path.dirname(os.path.abspath(__file__))
        argv = [self.pgbench, "-n", "-M", "prepared", "-c", str(clients), "-j", str(clients), "-T", str(self.seconds),
                "--max-tries", "100", "-h", host, "-p", str(port), "-U", user]
        for name, value in self.pair.pgbench_defines(self.scale):
            argv += ["-D", f"{name}={value}"]
        for script, weight in self.pair.pgbench_scripts:
            argv += ["-f", f"{os.path.join(here, 'scripts', script)}@{weight}"]
        argv.append(self.db["pgbench"])
        before = self.commits(self.db["pgbench"])
        secret = {"PGPASSWORD": password, "PGOPTIONS": self.pair.pgbench_options}
        started = time.monotonic()
        with open(log, "w") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **secret})
            _, status, usage = os.wait4(proc.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        with open(log, errors="replace") as f:
            text = f.read()
        time.sleep(1)  # the backends' statistics reach pg_stat_database as they exit
        committed = self.commits(self.db["pgbench"]) - before

        def number(pattern):
            m = re.search(pattern, text)
            return float(m.group(1)) if m else 0

        tps = number(r"tps = ([0-9.]+) \(without initial connection time\)")
        processed = number(r"number of transactions actually processed: (\d+)")
        if code != 0 or not tps or not committed or committed > processed + clients:
            die(f"pgbench failed on {self.engine} (exit code {code}, {committed} commits counted, "
                f"{time.monotonic() - started:.0f} s):\n{text[-2000:]}")
        return (code, usage.ru_utime + usage.ru_stime, tps, committed,
                int(number(r"number of transactions retried: (\d+)")), int(number(r"number of failed transactions: (\d+)")))

    def benchbase(self, clients, seconds, execute, tag):
        """Run BenchBase: a timed run (execute) or the load; return (exit code, CPU seconds, output, results
        directory, histograms file)."""
        user, password, host, port = server_address(self.dsn)
        types = "".join(f"\n    <transactiontype><name>{n}</name></transactiontype>" for n in self.pair.procedures)
        body = f"""  <scalefactor>{self.pair.scalefactor(self.scale):g}</scalefactor>
  <terminals>{clients}</terminals>
  <works>
    <work>
      <time>{seconds}</time>
      <rate>unlimited</rate>
      <weights>{self.pair.weights}</weights>
    </work>
  </works>
  <transactiontypes>{types}
  </transactiontypes>"""
        log = self.log(f"benchbase-{tag}")
        cfg = log.replace(".log", ".xml")
        benchbase.config(self.engine, user, password, host, port, self.db["benchbase"], self.pair.name, body, cfg,
                         isolation=self.pair.isolation)
        results, hist = log.replace(".log", "-results"), log.replace(".log", "-histograms.json")
        args = ["--execute=true", "--json-histograms", hist] if execute else ["--create=true", "--load=true"]
        code, _, cpu, text = measured([self.java, "-jar", "benchbase.jar", "-b", self.pair.name, "-c", cfg, "-d",
                                       results] + args, log, cwd=self.dist[self.engine])
        return code, cpu, text, results, hist

    def load(self, tool):
        """Load the dataset into a fresh database; return wall seconds."""
        db = self.db[tool]
        sql(self.engine, self.dsn, f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
        settle(self.engine, self.dsn)
        if tool == "benchbase":
            started = time.monotonic()
            code, _, text, _, _ = self.benchbase(1, 1, False, "load")
            secs = time.monotonic() - started
        else:
            code, secs, _, text = measured(
                [DBDUEL, "prepare", self.pair.name, "--scale", str(self.scale), "--dsn", self.db_url()],
                self.log("dbduel-load"))
        if code != 0:
            die(f"{tool} load failed on {self.engine} (exit code {code}):\n{text[-2000:]}")
        return secs

    def run(self, tool, clients):
        """One timed run; return (transactions per second, CPU seconds per committed transaction, retries)."""
        settle(self.engine, self.dsn)
        if tool in ("dbduel", "dbduel-begin"):
            log = self.log(f"{tool}-{clients}")
            js = log.replace(".log", ".json")
            how = DBDUEL_ARGS if tool == "dbduel" else self.pair.floor_args
            code, _, cpu, text = measured(
                [DBDUEL, "run", self.pair.name, "--dsn", self.db_url(), "-c", str(clients), "-T", str(self.seconds),
                 *how, *self.pair.run_args, "--json", js], log)
            if code not in (0, 1) or not os.path.exists(js):
                die(f"dbduel run failed on {self.engine} (exit code {code}):\n{text[-2000:]}")
            with open(js) as f:
                r = json.load(f)
            rate, committed, errors, retries = r["tps"], r["transactions"] - r["rollbacks"], r["errors"], r["retries"]
        elif tool == "pgbench":
            _, cpu, rate, committed, retries, errors = self.run_pgbench(clients, self.log(f"pgbench-{clients}"))
        else:
            code, cpu, text, results, hist = self.benchbase(clients, self.seconds, True, str(clients))
            _, summary, h = benchbase.outcome(code, text, results, hist, die)
            rate = summary["Throughput (requests/second)"]
            committed = benchbase.histogram_count(h, "completed")
            errors, retries = benchbase.histogram_count(h, "unexpected"), benchbase.histogram_count(h, "rejected")
        if committed == 0:
            die(f"{tool} committed no transaction on {self.engine} ({clients} clients)")
        if errors:
            say(f"  warning: {tool} had {errors} errors ({clients} clients)")
        return rate, cpu / committed, retries


def median_ratio(rows, a, b, i):
    """The median over rounds of tool a's figure i over tool b's."""
    return med([x[i] / y[i] for x, y in zip(rows[a], rows[b]) if y[i]])


def verdict(value, target, at_least):
    if value is None:
        return "n/a"
    ok = value >= target if at_least else value <= target
    return f"{value:.2f} ({'meets' if ok else 'MISSES'} the target {'>=' if at_least else '<='} {target})"


def bench_engine(b, pairs, clients):
    loads = {t: [] for t in b.loaders()}
    runs = {}  # (clients, tool) -> [(tps, cpu/committed transaction, retries)]
    for rnd in range(pairs):
        order = rotated(b.tools(), rnd)
        for tool in [t for t in order if t in b.loaders()]:
            secs = b.load(tool)
            loads[tool].append(secs)
            say(f"{b.engine} round {rnd + 1}: {tool} loaded scale {b.scale} in {secs:.1f} s")
        if b.engine == "postgres":
            # Untimed: otherwise autovacuum takes up each freshly loaded table during whichever runs come first.
            for tool in [t for t in order if t in b.loaders()]:
                sql(b.engine, b.dsn, "VACUUM (ANALYZE)", db=b.db[tool])
        for c in clients:
            for tool in order:
                rate, cpu, retries = b.run(tool, c)
                runs.setdefault((c, tool), []).append((rate, cpu, retries))
                say(f"{b.engine} round {rnd + 1}: {c} clients {tool}: {rate:.0f} tps, {cpu * 1e6:.1f} us CPU per "
                    f"committed transaction, {retries} retries")
    report(b, pairs, clients, loads, runs)


def report(b, pairs, clients, loads, runs):
    tools = b.tools()
    say(f"\n== {b.pair.name} on {b.engine}: medians of {pairs} rounds")
    for tool in b.loaders():
        say(f"  load scale {b.scale}, {tool}: {med(loads[tool]):.1f} s")
    if "benchbase" in tools:
        ratio = med([x / y for x, y in zip(loads["benchbase"], loads["dbduel"])])
        say(f"  load time benchbase/dbduel: {fmt(ratio)} (reported only; JVM start-up included)")
    for c in clients:
        line = f"  {c} clients:"
        for tool in tools:
            rows = runs[(c, tool)]
            line += (f" {tool} {med([r[0] for r in rows]):.0f} tps, {med([r[1] for r in rows]) * 1e6:.1f} us CPU per "
                     f"committed transaction;")
        say(line)
        if "benchbase" in tools:
            rows = {t: runs[(c, t)] for t in tools}
            say(f"    tps dbduel/benchbase {verdict(median_ratio(rows, 'dbduel', 'benchbase', 0), TPS_TARGET, True)}; "
                f"CPU per transaction dbduel/benchbase "
                f"{verdict(median_ratio(rows, 'dbduel', 'benchbase', 1), CPU_TARGET, False)}")
        if "pgbench" in tools:
            rows = {t: runs[(c, t)] for t in tools}
            line = (f"    the floor, the same statements and round trips (BEGIN its own): CPU per transaction "
                    f"dbduel-begin/pgbench {fmt(median_ratio(rows, 'dbduel-begin', 'pgbench', 1))}, "
                    f"dbduel/dbduel-begin {fmt(median_ratio(rows, 'dbduel', 'dbduel-begin', 1))}")
            if "benchbase" in tools:
                line += f", pgbench/benchbase {fmt(median_ratio(rows, 'pgbench', 'benchbase', 1))}"
            say(line + " (reported only)")


def main(pair, default_scale):
    """The bench, as BENCH_* and BENCHBASE say (see vs-smallbank's header)."""
    seconds = env_int("BENCH_SECONDS", 30)
    pairs = env_int("BENCH_PAIRS", 3)
    clients = env_list("BENCH_CLIENTS", "2 8")
    scale = env_int("BENCH_SCALE", default_scale)
    servers = (os.environ.get("BENCH_SERVERS", "").strip() or "postgres mariadb").split()
    for s in servers:
        if s not in ("postgres", "mariadb"):
            die(f"BENCH_SERVERS: unknown server {s!r} (use postgres and/or mariadb)")
    if not os.access(DBDUEL, os.X_OK):
        die(f"no dbduel binary at {DBDUEL}: run `cargo build --release` or set DBDUEL")
    dist, java = benchbase.find(servers, say, die)  # engine -> unpacked distribution directory
    pgbench = None
    if os.environ.get("BENCH_FLOOR", "") == "1" and "postgres" in servers:
        if not pair.pgbench_scripts:
            die(f"BENCH_FLOOR: {pair.name} ships no pgbench scripts")
        pgbench = os.environ.get("PGBENCH") or os.path.join(pg_bindir(), "pgbench")
        if not os.access(pgbench, os.X_OK):
            die(f"BENCH_FLOOR: no pgbench at {pgbench} (set PGBENCH)")
    root = tempfile.mkdtemp(prefix=f"vs-{pair.name}-")
    os.chmod(root, 0o755)  # the servers run as their own OS users
    say(f"vs-{pair.name}: scale {scale} ({pair.rows} each; BenchBase scalefactor {pair.scalefactor(scale):g}), "
        f"dbduel {' '.join(DBDUEL_ARGS + pair.run_args)}, clients {' '.join(map(str, clients))}, {seconds} s per run, {pairs} rounds; "
        f"logs in {root}")
    for engine in servers:
        data, dsn = start_server(engine, root)
        try:
            bench_engine(Bench(pair, engine, dsn, root, dist, java, seconds, scale, pgbench), pairs, clients)
        finally:
            subprocess.run([DBDUEL, "server", "stop", "--data-dir", data], capture_output=True)
