"""Shared fixtures: one Spark session per test process, temp warehouses."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from waterline.engine.session import get_session

    session = get_session()
    yield session
    session.stop()
