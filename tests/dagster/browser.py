"""Headless Chromium for the browser test: found, or installed from Debian, or a skip reason.

Independent of the Makefile: ``ensure_chromium()`` returns the binary, running
``apt-get install -y chromium`` when /usr/bin/chromium is missing (as root, or
through sudo when available); if that fails it returns None and the reason.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
    "--window-size=1400,1000",
]


def ensure_chromium(timeout: float = 900) -> tuple[str | None, str]:
    """``(path, "")`` when Chromium is usable, else ``(None, reason)``.

    The two pytest workers may both need it first: one installs while the other waits on a
    file lock (apt-get would otherwise fail on dpkg's lock and the second page test skip)."""
    found = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if found:
        return found, ""
    with open(Path(tempfile.gettempdir()) / "waterline-chromium-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install_chromium(timeout)


def _install_chromium(timeout: float) -> tuple[str | None, str]:
    found = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if found:  # the other worker installed it while this one waited
        return found, ""
    prefix: list[str] = []
    if os.geteuid() != 0:
        if not shutil.which("sudo"):
            return None, "chromium is not installed and apt-get needs root (no sudo)"
        prefix = ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        # Lock::Timeout: wait for an apt run outside this suite rather than fail at once
        for args in (["apt-get", "-o", "DPkg::Lock::Timeout=600", "update"],
                     ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "--no-install-recommends", "chromium"]):
            proc = subprocess.run(prefix + args, env=env, capture_output=True, text=True, timeout=timeout)
            if proc.returncode != 0 and "install" in args:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
                return None, f"apt-get install chromium failed: {tail[0]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"apt-get install chromium failed: {exc}"
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM, ""
    return None, "apt-get reported success but /usr/bin/chromium is missing"


def _run(binary: str, profile: Path, extra: list[str], url: str, budget_ms: int, timeout: float):
    args = [binary, *_FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", *extra, url]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def screenshot(binary: str, url: str, path: Path, profile: Path, *, budget_ms: int = 20000, timeout: float = 180) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = _run(binary, profile, [f"--screenshot={path}"], url, budget_ms, timeout)
    if not path.exists():
        raise RuntimeError(f"chromium wrote no screenshot (rc {proc.returncode}): {proc.stderr[-2000:]}")


def dump_dom(binary: str, url: str, profile: Path, *, budget_ms: int = 20000, timeout: float = 180) -> str:
    proc = _run(binary, profile, ["--dump-dom"], url, budget_ms, timeout)
    return proc.stdout


def dom_and_console(binary: str, url: str, profile: Path, *, budget_ms: int = 20000,
                    timeout: float = 180) -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran, and every message it wrote to the console
    (Chromium logs them, errors and uncaught exceptions alike, as ``INFO:CONSOLE`` lines)."""
    proc = _run(binary, profile, ["--dump-dom", "--enable-logging=stderr", "--v=0"], url, budget_ms, timeout)
    return proc.stdout, [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


if __name__ == "__main__":
    print(ensure_chromium())
