"""How many hypothesis examples each property runs: ``WATERLINE_PROPERTY_EXAMPLES`` scales it.

The defaults keep the semantics and clock suites well under their time budget;
set e.g. ``WATERLINE_PROPERTY_EXAMPLES=5000`` for a long soak.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEFAULT_EXAMPLES = 200


def property_examples() -> int:
    raw = os.environ.get("WATERLINE_PROPERTY_EXAMPLES", "")
    try:
        return max(1, int(raw)) if raw.strip() else DEFAULT_EXAMPLES
    except ValueError:
        raise ValueError(f"WATERLINE_PROPERTY_EXAMPLES must be an integer, got {raw!r}") from None


def property_settings() -> settings:
    """Settings for every waterline property test (no deadline: CI machines are noisy)."""
    return settings(
        max_examples=property_examples(),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


_reported = False


def report_examples(terminalreporter) -> None:
    """Write the example count once per run (both test packages' conftests call this)."""
    global _reported
    if not _reported:
        _reported = True
        terminalreporter.write_line(
            f"waterline property tests: {property_examples()} hypothesis examples per property "
            "(set WATERLINE_PROPERTY_EXAMPLES to change)"
        )
