"""A real Kafka broker (KRaft, 127.0.0.1) for the stream tests: started once per test process."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """The broker `waterline.local.kafka_broker` starts, stopped at the end of the session."""
    from waterline.local import kafka_broker

    state_dir = tmp_path_factory.mktemp("kafka")
    state = kafka_broker.start(state_dir)
    try:
        yield state
    finally:
        kafka_broker.stop(state_dir)
