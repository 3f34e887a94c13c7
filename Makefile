# Everything a fresh machine needs comes from here: `make demo` and `make test`
# create .venv on first use. Setup is stamp-driven so a second run does nothing.
PY      ?= python3.11
VENV    := .venv
BIN     := $(VENV)/bin
JARS    := $(VENV)/share/waterline/jars
STAMP   := $(VENV)/.setup-stamp
M2_DEPS := .cache/maven-deps
# s3proxy (a real S3 server on loopback) for the s3a:// tests; never on Spark's classpath.
S3PROXY := $(VENV)/share/waterline/s3proxy
S3PROXY_VERSION := 4.1.0
# A Kafka broker (KRaft, 127.0.0.1) for stream sources' tests and demo; its own jar set, never on Spark's classpath.
KAFKA   := $(VENV)/share/waterline/kafka
# waterline's own JVM classes (jvm/src: the output committer, the conditional S3 LogStore): compiled
# against pyspark's and the Delta jars into the jars folder, so every Spark start (local, cluster,
# Connect server) has them with the Delta jars.
JAVA_SRC := $(wildcard jvm/src/dev/waterline/spark/*.java)

.PHONY: setup test demo demo-stream bench bench-apply bench-latency bench-soak bench-sharing bench-audit dev airflow lock check-deps clean

setup: $(STAMP)

$(STAMP): requirements.lock pyproject.toml build/delta-jars.pom.xml build/s3-jars.pom.xml \
          build/kafka-jars.pom.xml build/kafka-broker.pom.xml build/select_jars.py $(JAVA_SRC)
	test -x $(BIN)/python || $(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
# The checkout's editable install was named `waterline` before 0.9.0 (now `waterline-tiers`): drop it.
	$(BIN)/python -m pip uninstall --quiet --yes waterline 2>/dev/null || true
	rm -rf plugin/waterline.egg-info
	$(BIN)/python -m pip install --quiet --no-deps -e .
# The Jupyter kernel docs/quickstart.ipynb names: this venv's Python (`jupyter` finds it under .venv/share).
	$(BIN)/python -m ipykernel install --sys-prefix --name waterline --display-name "waterline (.venv)" >/dev/null
	mvn -q -B -f build/delta-jars.pom.xml dependency:copy-dependencies \
	    -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(M2_DEPS)
	mvn -q -B -f build/s3-jars.pom.xml dependency:copy-dependencies \
	    -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(M2_DEPS)
	mvn -q -B -f build/kafka-jars.pom.xml dependency:copy-dependencies \
	    -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(M2_DEPS)
	$(BIN)/python build/select_jars.py $(M2_DEPS) $(JARS)
	rm -rf $(VENV)/share/waterline/jvm-classes
	javac --release 17 -nowarn -d $(VENV)/share/waterline/jvm-classes \
	    -cp "$$($(BIN)/python -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')/jars/*:$(JARS)/*" $(JAVA_SRC)
	jar cf $(JARS)/waterline-spark.jar -C $(VENV)/share/waterline/jvm-classes .
	mvn -q -B -f build/delta-jars.pom.xml dependency:copy \
	    -Dartifact=org.gaul:s3proxy:$(S3PROXY_VERSION):jar:jar-with-dependencies \
	    -DoutputDirectory=$(CURDIR)/$(S3PROXY)
	rm -rf $(KAFKA)
	mvn -q -B -f build/kafka-broker.pom.xml dependency:copy-dependencies \
	    -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(KAFKA)
	touch $(STAMP)

# Two pytest workers (pytest-xdist, work stealing): much of the suite waits on Dagster and
# Airflow daemons, servers, due instants and driver subprocesses, which a second worker
# overlaps. CI's run kept both cores 97% busy (the suite prints this line at its end), so
# a third would only contend. TEST_WORKERS=0 runs in one process. --durations: the slowest
# tests, in CI's log too.
TEST_WORKERS ?= 2
test: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=25 $(PYTEST_ARGS)

demo: setup
	$(BIN)/waterline demo

# The stream demo: a local Kafka broker, ticks with corrections and cancels, the tiers following.
demo-stream: setup
	$(BIN)/waterline demo --stream

bench: setup
	$(BIN)/python -m bench
	$(BIN)/python -m bench.s3
	$(BIN)/python -m bench.connect
	$(BIN)/python -m bench.stream
	$(BIN)/python -m bench.stream_latency

# What `waterline apply` costs on a live feed, against plain Delta (docs/benchmarks.md).
bench-apply: setup
	$(BIN)/python -m bench.apply

# Release latency with dagster-daemon + the sensor: cold, pre-armed, warm (docs/benchmarks.md).
bench-latency: setup
	$(BIN)/python -m bench.latency

# A day of one-minute releases, `maintain` hourly: first vs last hour's costs (BENCH_SOAK_ARGS="--hours 2": shorter).
bench-soak: setup
	$(BIN)/python -m bench.soak $(BENCH_SOAK_ARGS)

# Delta Sharing under load, the access log table off and on in turn (BENCH_SHARING_ARGS to change).
bench-sharing: setup
	$(BIN)/python -m bench.sharing $(or $(BENCH_SHARING_ARGS),--compare-access-records 2 --max-seconds 150)

# The release proof of a day of one-minute releases, three ways (BENCH_AUDIT_ARGS="--hours 4": shorter).
bench-audit: setup
	$(BIN)/python -m bench.audit $(BENCH_AUDIT_ARGS)

dev: setup
	DAGSTER_HOME=$(CURDIR)/.waterline/dagster_home; mkdir -p $$DAGSTER_HOME; \
	    DAGSTER_HOME=$$DAGSTER_HOME $(BIN)/dagster dev -m dags -h 127.0.0.1 -p 3000

# The demo feeds as Airflow DAGs (dags/airflow_feeds.py): `airflow standalone` on
# http://127.0.0.1:8080 with its SQLite database under .waterline/airflow_home (the
# admin password is printed and kept in simple_auth_manager_passwords.json.generated there).
# build/airflow_loopback first on PATH keeps every component on loopback.
AIRFLOW_HOME_DIR := $(CURDIR)/.waterline/airflow_home
airflow: setup
	mkdir -p $(AIRFLOW_HOME_DIR)
	AIRFLOW_HOME=$(AIRFLOW_HOME_DIR) AIRFLOW__CORE__DAGS_FOLDER=$(CURDIR)/dags \
	    AIRFLOW__CORE__LOAD_EXAMPLES=False AIRFLOW__API__HOST=127.0.0.1 AIRFLOW__API__PORT=8080 \
	    WATERLINE_AIRFLOW=$(CURDIR)/$(BIN)/airflow PATH=$(CURDIR)/build/airflow_loopback:$(CURDIR)/$(BIN):$$PATH \
	    $(BIN)/airflow standalone

# Re-resolve the full pinned set after changing requirements.txt.
lock:
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^waterline' > requirements.lock

# Resolve requirements.txt afresh (pip dry run; needs the index) and check that every
# direct pin, Dagster's and Airflow's alike, resolves as pinned and the lock has it all.
check-deps: setup
	$(BIN)/python build/check_resolution.py

clean:
	rm -rf $(VENV) $(M2_DEPS) .waterline .pytest_cache
