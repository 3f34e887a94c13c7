"""A report page as a reader's browser shows it: rendered by headless Chromium (a screenshot
for `test-artifacts/`), with no console message, and carrying exactly the data the tool printed."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.dagster.browser import dom_and_console, ensure_chromium, screenshot
from waterline.reports.page import DATA_ID, EVENTS_ID

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"


def carried(dom: str, script_id: str) -> Any:
    """The JSON a page carries in ``<script type="application/json" id=script_id>``."""
    match = re.search(rf'<script type="application/json" id="{script_id}">(.*?)</script>', dom, re.S)
    assert match, f"no {script_id} script in the page"
    return json.loads(match.group(1))


def table_rows(dom: str, cls: str) -> list[list[str]]:
    """The body cells of the page's ``<table class=cls>``, as text."""
    match = re.search(rf'<table class="{cls}">.*?<tbody>(.*?)</tbody>', dom, re.S)
    assert match, f"no table {cls!r} in the page"
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", match.group(1), re.S)]


def render(page: Path, shot_name: str, tmp_path: Path) -> str:
    """The page's DOM after Chromium ran its scripts; a screenshot lands in test-artifacts/.
    Fails on any console message and unless every figure was drawn (plotly's SVG present)."""
    chromium, reason = ensure_chromium()
    if chromium is None:
        pytest.skip(f"no headless Chromium: {reason}")
    url = page.resolve().as_uri()
    profile = tmp_path / "chromium-profile"
    dom, console = dom_and_console(chromium, url, profile)
    assert console == [], console
    figures = len(re.findall(r'class="plotly-graph-div', dom))
    drawn = len(re.findall(r'class="main-svg"', dom))
    assert figures >= 1 and drawn >= figures, f"{figures} figures, {drawn} plotly SVGs drawn"
    shot = ARTIFACTS / shot_name
    screenshot(chromium, url, shot, profile)
    assert shot.stat().st_size > 10_000
    return dom


def check_carries(dom: str, data: Any, events: list | None = None) -> None:
    """The page carries ``data`` (what --json printed) and, if given, these ``events``."""
    assert carried(dom, DATA_ID) == data
    if events is not None:
        assert carried(dom, EVENTS_ID) == events
