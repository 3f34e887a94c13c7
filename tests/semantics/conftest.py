from __future__ import annotations

from tests.semantics.examples import report_examples


def pytest_terminal_summary(terminalreporter):
    report_examples(terminalreporter)
