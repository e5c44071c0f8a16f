#!/usr/bin/env python3
"""The expected answers of TPC-H's 22 queries with their validation parameters (TPC-H 3.0.1
clause 2.4, each query's "Query Validation" parameters), from an engine independent of dbduel:
DuckDB, with its tpch extension's schema and query texts, on the data tpchgen-cli writes as
.tbl files (the generator dbduel loads from, as a separate program; DuckDB's own dbgen differs
from dbgen in its text columns, addresses and comments). Writes
src/workload/tpch/answers/sf<SF>.tbl.gz (gzip, without a file name or time in its header, so
the same answers give the same bytes), which `check tpch` reads compiled in.

    pip install duckdb==1.5.5 duckdb-extension-tpch==1.5.5 tpchgen-cli==4.0.0
    scripts/tpch-answers.py 0.01 1
"""

import datetime
import decimal
import gzip
import os
import subprocess
import sys
import tempfile

import duckdb
import duckdb_extension_tpch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "src", "workload", "tpch", "answers")


TABLES = ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]


def extension_path():
    root = os.path.dirname(duckdb_extension_tpch.__file__)
    return os.path.join(root, "extensions", "v" + duckdb.__version__, "tpch.duckdb_extension")


def text(value):
    """A value as the answer file holds it: numbers in full, dates as YYYY-MM-DD."""
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (decimal.Decimal, int)):
        return str(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value).rstrip()


def answers(sf):
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.sql(f"LOAD '{extension_path()}'")
    con.sql("CALL dbgen(sf=0)")
    with tempfile.TemporaryDirectory() as tbl:
        subprocess.run(["tpchgen-cli", "-s", str(sf), "--output-dir", tbl], check=True)
        for table in TABLES:
            con.sql(f"COPY {table} FROM '{tbl}/{table}.tbl' (DELIMITER '|', HEADER false)")
    lines = [
        f"# TPC-H answers at scale factor {sf}: the 22 queries with clause 2.4's validation parameters,",
        f"# run by DuckDB {duckdb.__version__} (tpch extension: PRAGMA tpch(N)) on the .tbl files of",
        "# tpchgen-cli 4.0.0; made by scripts/tpch-answers.py.",
        "# One line per row: Q<query>|<column>|<column>|...",
    ]
    for q in range(1, 23):
        for row in con.sql(f"PRAGMA tpch({q})").fetchall():
            lines.append("|".join([f"Q{q}"] + [text(v) for v in row]))
    return "\n".join(lines) + "\n"


def main():
    for sf in sys.argv[1:] or ["0.01"]:
        path = os.path.join(OUT, f"sf{sf}.tbl.gz")
        with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(answers(sf).encode())
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
