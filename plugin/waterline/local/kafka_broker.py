"""A local Kafka broker in KRaft mode, from the jars `make setup` resolved.

``waterline kafka start|stop|status``, the stream tests and the stream demo use this: one
process that is broker and controller, on 127.0.0.1 only, on a free port (or the one given),
its storage formatted on first start. Data, logs, ``server.properties`` and ``broker.json``
live under the state folder (default ``.waterline/kafka``); a second start on the same folder
keeps the topics. The jars (``kafka_2.13`` 4.x and its closure) sit in a folder of their own,
``.venv/share/waterline/kafka`` (or ``WATERLINE_KAFKA_JARS``), never on Spark's classpath.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from waterline.local.processes import SavedState, HOST, alive, free_port, kill_group, port_open, spawn, wait_for
from waterline.errors import WaterlineError
from waterline.extras import require

DEFAULT_STATE_DIR = ".waterline/kafka"
_STATE_FILE = "broker.json"
_LOG_NAME = "broker.log"


@dataclass
class BrokerState(SavedState):
    """What `start` started: where it listens, its pid, the storage it formatted."""

    FILE = _STATE_FILE
    DEFAULT_DIR = DEFAULT_STATE_DIR

    state_dir: str
    bootstrap: str
    controller_port: int
    cluster_id: str
    pid: int | None = None


    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    def running(self) -> bool:
        return self.pid is not None and alive(self.pid)


def jars_dir() -> Path:
    """The broker's jar folder (``make setup`` fills it)."""
    folder = Path(os.environ.get("WATERLINE_KAFKA_JARS") or Path(sys.prefix) / "share" / "waterline" / "kafka")
    if not any(folder.glob("kafka_2.13-*.jar")):
        raise WaterlineError(f"the Kafka broker jars are not in {folder}: run `make setup` (or set WATERLINE_KAFKA_JARS)")
    return folder


def start(state_dir: str | Path = DEFAULT_STATE_DIR, *, port: int | None = None, heap: str = "512m",
          timeout: float = 90.0) -> BrokerState:
    """Start the broker (formatting its storage on first use) and wait until it serves metadata."""
    root = Path(state_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    (root / "logs").mkdir(exist_ok=True)
    existing = BrokerState.load(root)
    if existing is not None and existing.running():
        raise WaterlineError(f"a Kafka broker already runs from {root} at {existing.bootstrap}: "
                             f"`waterline kafka stop --dir {state_dir}` first")
    jars = jars_dir()
    # The same ports and cluster id as last time: a broker's storage remembers its controller
    # quorum, and clients that kept the bootstrap address reconnect.
    if existing is not None and port in (None, existing.port) and not port_open(existing.port):
        state = BrokerState(str(root), existing.bootstrap, existing.controller_port, existing.cluster_id)
    else:
        state = BrokerState(str(root), f"{HOST}:{port or free_port()}", free_port(), _cluster_id())
        shutil.rmtree(root / "data", ignore_errors=True)
    props = _write_config(state)
    log = root / "logs" / _LOG_NAME
    if not (root / "data" / "meta.properties").exists():
        _format(jars, state, props, log)
    state.pid = spawn(_java(jars, heap) + ["kafka.Kafka", str(props)], log_path=log, env=_env(root), cwd=root)
    state.save()
    try:
        wait_for(lambda: _serves_metadata(state.bootstrap), timeout, pid=state.pid, log_path=log,
                 what=f"the Kafka broker at {state.bootstrap}")
    except WaterlineError:
        kill_group(state.pid, grace=5)
        raise
    return state


def stop(state_dir: str | Path = DEFAULT_STATE_DIR) -> bool:
    """Stop the broker `start` started from ``state_dir`` (its data stays); False if none ran."""
    state = BrokerState.load(state_dir)
    if state is None or state.pid is None:
        return False
    stopped = kill_group(state.pid, grace=30)
    state.pid = None
    state.save()
    return stopped


def describe(state: BrokerState | None) -> list[str]:
    if state is None:
        return ["no Kafka broker started here (`waterline kafka start`)"]
    return [f"bootstrap {state.bootstrap}", f"broker   {'running' if state.running() else 'stopped'}"
            + (f" (pid {state.pid})" if state.pid else ""),
            f"data     {Path(state.state_dir, 'data')}", f"log      {Path(state.state_dir, 'logs', _LOG_NAME)}"]


def create_topic(bootstrap: str, topic: str, *, partitions: int = 1, timeout: float = 30.0) -> None:
    """Create ``topic`` (replication 1) unless it exists."""
    require("waterline kafka", "confluent_kafka")
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic]
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise WaterlineError(f"creating Kafka topic {topic!r} at {bootstrap}: {exc.args[0].str()}") from None


# -- internals ------------------------------------------------------------------------------


def _cluster_id() -> str:
    """A Kafka cluster id: a random UUID, base64url without padding (what `kafka-storage random-uuid` prints).
    Never one starting with ``-`` (1 in 64 would): `kafka-storage format -t` reads it as an
    option and fails, as Kafka's own ``Uuid.randomUuid`` avoids too."""
    for _ in range(64):  # 63 in 64 draws do: 64 that all fail is a broken random source
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found
    raise WaterlineError("Kafka cluster id: 64 random UUIDs in a row began with '-'; is the random source broken?")


def _write_config(state: BrokerState) -> Path:
    root = Path(state.state_dir)
    conf = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{HOST}:{state.controller_port}",
        "listeners": f"PLAINTEXT://{state.bootstrap},CONTROLLER://{HOST}:{state.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{state.bootstrap}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(root / "data"),
        "num.partitions": "1",
        # one broker: every internal topic has one replica
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # records are kept until deleted: a test that reads from the earliest offset finds them
        "log.retention.hours": "-1",
    }
    props = root / "server.properties"
    props.write_text("".join(f"{key}={value}\n" for key, value in conf.items()))
    (root / "log4j2.properties").write_text(
        "rootLogger.level = WARN\nrootLogger.appenderRef.out.ref = OUT\n"
        "appender.out.type = Console\nappender.out.name = OUT\n"
        "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n"
        # the line that says the broker is up, and why it stopped, stay in the log
        "logger.server.name = kafka.server.KafkaRaftServer\nlogger.server.level = INFO\n")
    return props


def _java(jars: Path, heap: str) -> list[str]:
    java = Path(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    return [str(java), f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
            "-Dlog4j2.configurationFile=log4j2.properties", "-cp", f"{jars}/*"]


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KAFKA_OPTS", None)
    return env


def _format(jars: Path, state: BrokerState, props: Path, log: Path) -> None:
    argv = _java(jars, "256m") + ["kafka.tools.StorageTool", "format", "-t", state.cluster_id, "-c", str(props)]
    done = subprocess.run(argv, cwd=state.state_dir, env=_env(Path(state.state_dir)), capture_output=True, text=True)
    with open(log, "a") as out:
        out.write(done.stdout + done.stderr)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "(no output)").splitlines()[-1]
        raise WaterlineError(f"formatting the Kafka broker's storage in {state.state_dir} failed: {last}")


def _serves_metadata(bootstrap: str) -> bool:
    require("waterline kafka", "confluent_kafka")
    from confluent_kafka.admin import AdminClient

    if not port_open(int(bootstrap.rsplit(":", 1)[1])):
        return False
    try:
        AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
        return True
    except Exception:  # noqa: BLE001 - not ready yet (KafkaException of any kind): poll again
        return False
