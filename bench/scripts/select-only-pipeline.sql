-- pgbench's built-in "select-only" transaction in pipeline mode (-M prepared): one statement, so
-- nothing is saved; what it measures is what the pipeline itself costs each tool.
\set aid random(1, 100000 * :scale)
\startpipeline
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
\endpipeline
