"""SQLite connect arguments for the test Airflow's components and CLI calls (by import path,
`[database] sql_alchemy_connect_args`).

With `airflow standalone` on SQLite, the scheduler, triggerer, DAG processor, API
server and a CLI call (`airflow backfill create`) all write the one database file;
pysqlite's default 5 s busy timeout made a CLI call under `make test` load fail
with "database is locked". Each process waits up to a minute for the lock instead.
Airflow mutates the dict it gets (check_same_thread), so each mode has its own.
"""

CONNECT_ARGS = {"timeout": 60}
ASYNC_CONNECT_ARGS = {"timeout": 60}
