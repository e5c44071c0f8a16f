# bench/benchbase.py: finding BenchBase for the bench scripts (its unpacked distributions per engine and a java
# that runs them), its XML configuration, and what its results files say; imported by vs-tpcc, vs-ycsb and
# vs-smallbank.

import json
import os
import re
import shutil
import subprocess
from xml.sax.saxutils import escape


def find(servers, say, die):
    """The unpacked distribution per engine under $BENCHBASE and the java that runs it: ({engine: dir}, java)."""
    root = os.environ.get("BENCHBASE", "").strip()
    dist = {}
    if not root:
        say("BenchBase: BENCHBASE is not set: skipped (set BENCHBASE=/path/to/benchbase, the directory holding the "
            "unpacked benchbase-postgres/ and benchbase-mariadb/, to compare with it)")
    elif not os.path.isdir(root):
        say(f"BenchBase: no directory at BENCHBASE={root}: skipped")
    else:
        for engine in servers:
            d = os.path.join(os.path.abspath(root), f"benchbase-{engine}")
            if os.path.isfile(os.path.join(d, "benchbase.jar")):
                dist[engine] = d
            else:
                say(f"BenchBase: no {d}/benchbase.jar (build it with `mvn clean package -P {engine} -DskipTests` "
                    f"and unpack target/benchbase-{engine}.tgz into BENCHBASE): skipped on {engine}")
    if not dist:
        return dist, ""
    java = (os.environ.get("BENCHBASE_JAVA", "").strip() or
            (os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME", "").strip()
             else shutil.which("java") or ""))
    if not java or not os.access(java, os.X_OK):
        die(f"BenchBase needs java 23 or newer, and there is no java at {java or 'PATH'}: set BENCHBASE_JAVA "
            "(or JAVA_HOME) to a JDK 23+, or unset BENCHBASE")
    out = subprocess.run([java, "-version"], capture_output=True, text=True)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    major = (int(m.group(2) or 0) if m.group(1) == "1" else int(m.group(1))) if m else 0
    if major < 23:
        die(f"BenchBase needs java 23 or newer; {java} is {f'java {major}' if m else 'of unknown version'}: set "
            "BENCHBASE_JAVA (or JAVA_HOME) to a JDK 23+, or unset BENCHBASE")
    return dist, java


def config(engine, user, password, host, port, db, app, body, path, isolation=None):
    """Write BenchBase's XML configuration (readable by its owner alone: it holds the managed server's password):
    connection, the isolation (JDBC's name, e.g. TRANSACTION_SERIALIZABLE; by default the level each engine runs by
    default), then `body` (the benchmark's part)."""
    if engine == "postgres":
        kind, driver, default = "POSTGRES", "org.postgresql.Driver", "TRANSACTION_READ_COMMITTED"
        url = f"jdbc:postgresql://{host}:{port}/{db}?sslmode=disable&ApplicationName={app}&reWriteBatchedInserts=true"
    else:
        kind, driver, default = "MARIADB", "org.mariadb.jdbc.Driver", "TRANSACTION_REPEATABLE_READ"
        url = f"jdbc:mariadb://{host}:{port}/{db}?useServerPrepStmts"
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(f"""<?xml version="1.0"?>
<parameters>
  <type>{kind}</type>
  <driver>{driver}</driver>
  <url>{escape(url)}</url>
  <username>{escape(user)}</username>
  <password>{escape(password)}</password>
  <reconnectOnConnectionFailure>true</reconnectOnConnectionFailure>
  <isolation>{isolation or default}</isolation>
  <batchsize>128</batchsize>
  <loaderThreads>4</loaderThreads>
{body}
</parameters>
""")


def histogram_count(h, kind, name=None):
    """Transactions of an outcome (completed, aborted, rejected, unexpected) in BenchBase's --json-histograms,
    of one procedure or of all."""
    entries = h[kind]["HISTOGRAM"]
    return sum(n for k, n in entries.items() if name is None or k.rsplit("/", 1)[0].endswith("." + name))


def outcome(code, text, results, hist, die):
    """What a timed run (`--execute=true -d results --json-histograms hist`) wrote: (path of its summary.json, the
    summary, the histograms); the script ends, with the end of BenchBase's output, when it failed or wrote neither."""
    summaries = [f for f in os.listdir(results) if f.endswith(".summary.json")] if os.path.isdir(results) else []
    if code != 0 or len(summaries) != 1 or not os.path.exists(hist):
        die(f"BenchBase run failed or wrote no summary and histograms (exit code {code}):\n{text[-3000:]}")
    path = os.path.join(results, summaries[0])
    with open(path) as f:
        summary = json.load(f)
    with open(hist) as f:
        return path, summary, json.load(f)
