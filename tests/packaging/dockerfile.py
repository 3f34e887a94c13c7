"""Read deploy/*.Dockerfile, and lay an image's files out in a folder where no Docker engine runs.

`Dockerfile.parse` reads the instructions the deploy Dockerfiles use (FROM, RUN, COPY, ENV,
WORKDIR, USER, EXPOSE, ENTRYPOINT, CMD; line continuations, comments). `Layout` stands in
for the image's file system under a host folder: COPY copies for real, a container path
(``/opt/...``) maps to the same path under the folder, so the image's own RUN pip lines, ENV,
WORKDIR and entry command can run in a virtualenv built from the wheel.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Dockerfile:
    path: Path
    instructions: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def parse(cls, path: Path) -> Dockerfile:
        logical, pending = [], ""
        for line in path.read_text().splitlines():
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            logical.append(pending + line)
            pending = ""
        out = cls(path)
        for text in logical:
            op, _, args = text.strip().partition(" ")
            out.instructions.append((op.upper(), " ".join(args.split())))
        return out

    def all(self, op: str) -> list[str]:
        return [args for name, args in self.instructions if name == op]

    def last(self, op: str) -> str | None:
        found = self.all(op)
        return found[-1] if found else None

    @property
    def python_version(self) -> str:
        """``3.12`` of ``FROM python:3.12-slim-bookworm``."""
        match = re.match(r"python:(\d+\.\d+)", self.all("FROM")[0])
        assert match, f"{self.path.name}: FROM is not an official python image"
        return match.group(1)

    def copies(self) -> list[tuple[str, str]]:
        return [tuple(args.split()) for args in self.all("COPY")]  # type: ignore[misc]

    def env(self) -> dict[str, str]:
        return dict(args.split("=", 1) for args in self.all("ENV"))

    def command(self) -> list[str]:
        """ENTRYPOINT + CMD, both in exec (JSON) form."""
        entry, cmd = self.last("ENTRYPOINT"), self.last("CMD")
        return (json.loads(entry) if entry else []) + (json.loads(cmd) if cmd else [])

    def pip_installs(self) -> list[str]:
        """The RUN lines that install Python packages (the apt-get ones are the base image's business)."""
        return [args for args in self.all("RUN") if args.startswith("pip install")]


@dataclass
class Layout:
    """An image's files under ``root``: ``/opt/x`` in the image is ``root/opt/x`` here."""

    root: Path

    def host(self, text: str) -> str:
        """``text`` with every absolute container path under ``root`` (words, URLs and module names untouched)."""
        return re.sub(r"(?<![\w./-])/(?=[A-Za-z])", str(self.root).rstrip("/") + "/", text)

    def copy_in(self, dockerfile: Dockerfile, context: Path) -> None:
        """Each COPY of ``dockerfile`` from the build ``context``."""
        for source, dest in dockerfile.copies():
            src, target = context / source, Path(self.host(dest))
            assert src.exists(), f"{dockerfile.path.name}: COPY {source}: not in the build context {context}"
            if src.is_dir():
                shutil.copytree(src, target, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".waterline"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target)
