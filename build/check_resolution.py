"""Resolve requirements.txt afresh (pip's dry run) and compare with requirements.lock.

    python build/check_resolution.py        # or: make check-deps

Fails (exit 1) when a direct pin of requirements.txt resolves to another
version than the lock holds, or when the lock misses a package the resolution
needs: the check that Airflow 3 and the Dagster stack resolve together with no
pin changed. Unpinned transitive packages that have newer releases since the
lock was made are listed, not failed: the lock is what `make setup` installs.
Needs the package index (it is not part of `make test`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;]+)", line)
        if match:
            pins[_name(match.group(1))] = match.group(3)
    return pins


def main() -> int:
    direct, lock = _pins(ROOT / "requirements.txt"), _pins(ROOT / "requirements.lock")
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
             "--report", str(report), "-r", str(ROOT / "requirements.txt")],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            print(f"requirements.txt does not resolve:\n{proc.stderr.strip()}", file=sys.stderr)
            return 1
        resolved = {_name(i["metadata"]["name"]): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    moved = {n: (v, resolved.get(n)) for n, v in direct.items() if resolved.get(n) != v}
    missing = sorted(n for n in resolved if n not in lock and n not in ("pip", "setuptools", "wheel"))
    drift = {n: (lock[n], v) for n, v in resolved.items() if n in lock and n not in direct and lock[n] != v}
    print(f"{len(resolved)} packages resolved from requirements.txt; {len(direct)} direct pins, {len(lock)} locked")
    for n, (pinned, got) in sorted(drift.items()):
        print(f"  newer since the lock (transitive, not failed): {n} {pinned} -> {got}")
    for n, (pinned, got) in sorted(moved.items()):
        print(f"  DIRECT PIN MOVED: {n} pinned {pinned}, resolved {got}")
    for n in missing:
        print(f"  NOT IN THE LOCK: {n} {resolved[n]}")
    ok = not moved and not missing
    print("ok: every direct pin resolves as pinned" if ok else "failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
