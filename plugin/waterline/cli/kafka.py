"""`waterline kafka start|stop|status|topic`: a local Kafka broker for stream sources.

One KRaft process (broker and controller) on 127.0.0.1, from the jars `make setup` resolved;
state under ``.waterline/kafka`` (see `waterline.local.kafka_broker`). For the stream
demo and for trying a ``format: kafka`` source; production feeds point at their own cluster.
"""

from __future__ import annotations

import click

from waterline.local import kafka_broker
from waterline.local.kafka_broker import DEFAULT_STATE_DIR

_DIR = click.option("--dir", "state_dir", default=DEFAULT_STATE_DIR, show_default=True,
                    help="Folder for the broker's data, logs and broker.json.")


@click.group("kafka")
def kafka_group() -> None:
    """A local Kafka broker on 127.0.0.1."""


@kafka_group.command("start")
@_DIR
@click.option("--port", type=click.IntRange(1, 65535), help="Client port (default: the last one, else a free one).")
@click.option("--topic", "topics", multiple=True, help="Create this topic once the broker is up (repeatable).")
@click.option("--partitions", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Partitions of each --topic.")
def start(state_dir, port, topics, partitions) -> None:
    """Start the broker (formatting its storage on first use); print its bootstrap address."""
    state = kafka_broker.start(state_dir, port=port)
    for topic in topics:
        kafka_broker.create_topic(state.bootstrap, topic, partitions=partitions)
    for line in kafka_broker.describe(state):
        click.echo(line)


@kafka_group.command("stop")
@_DIR
def stop(state_dir) -> None:
    """Stop the broker `waterline kafka start` started (its topics stay for the next start)."""
    click.echo("stopped" if kafka_broker.stop(state_dir) else "nothing to stop")


@kafka_group.command("status")
@_DIR
def status(state_dir) -> None:
    """Print the bootstrap address and whether the broker runs."""
    for line in kafka_broker.describe(kafka_broker.BrokerState.load(state_dir)):
        click.echo(line)


@kafka_group.command("topic")
@_DIR
@click.argument("topic")
@click.option("--partitions", default=1, show_default=True, type=click.IntRange(1, 64))
def topic(state_dir, topic, partitions) -> None:
    """Create TOPIC on the running broker (nothing if it exists)."""
    state = kafka_broker.BrokerState.load(state_dir)
    if state is None or not state.running():
        raise click.ClickException(f"no Kafka broker runs from {state_dir}: `waterline kafka start` first")
    kafka_broker.create_topic(state.bootstrap, topic, partitions=partitions)
    click.echo(f"topic {topic} at {state.bootstrap}")
