"""The build hook: waterline's own JVM classes (jvm/src) compiled into the wheel.

`build_py` runs ``javac --release 17`` over jvm/src and packs the classes as
``waterline/jars/waterline-spark.jar``, which a Spark start puts on ``spark.jars``
(docs/packaging.md). javac compiles against two jars only: hadoop-client-api (Hadoop's
FileSystem and output committer API, which pyspark ships) and delta-storage (Delta's
LogStore). They are taken, in order, from ``WATERLINE_BUILD_CLASSPATH`` (jars or folders
of jars, ``os.pathsep``-separated), pyspark's jars when pyspark is importable in the build
environment, the local Maven repository, this hook's cache, and last from Maven Central
(``WATERLINE_MAVEN_REPO`` for a mirror), each checked against its pinned SHA-256. An
editable install (``pip install -e .``: `make setup`) compiles nothing: `make setup`
builds the jar into its own jars folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
JAVA_SRC = ROOT / "jvm" / "src"
JAR_NAME = "waterline-spark.jar"
# (group path, artifact, version, sha256): what javac needs, nothing more
COMPILE_JARS = [
    ("org/apache/hadoop", "hadoop-client-api", "3.5.0",
     "cc59446ec9ebaceae56fdb8d8c21477766dc5d426325642151c796bec5c4e6b7"),
    ("io/delta", "delta-storage", "4.4.0", "c46735481fa8e326b0957be02b4420cbcab4b325bb08009b7f2045a95133f1cc"),
]
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"


def _candidates() -> list[Path]:
    """Jars already on this machine, most explicit first."""
    found: list[Path] = []
    for entry in filter(None, os.environ.get("WATERLINE_BUILD_CLASSPATH", "").split(os.pathsep)):
        path = Path(entry)
        found += sorted(path.glob("*.jar")) if path.is_dir() else [path]
    try:
        import pyspark  # only in a non-isolated build (the dev venv, `python -m build --no-isolation`)

        found += sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    except ImportError:
        pass
    return found


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "waterline-tiers" / "build-jars"


def _fetch(group: str, artifact: str, version: str, sha256: str) -> Path:
    name = f"{artifact}-{version}.jar"
    for path in (Path.home() / ".m2" / "repository" / group / artifact / version / name, _cache_dir() / name):
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
            return path
    repo = os.environ.get("WATERLINE_MAVEN_REPO", MAVEN_CENTRAL).rstrip("/")
    url = f"{repo}/{group.replace('.', '/')}/{artifact}/{version}/{name}"
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise SystemExit(f"build: {url} does not have the pinned SHA-256 {sha256}")
    target = _cache_dir() / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def compile_classpath() -> list[Path]:
    """One jar per artifact javac needs: a local one whose name starts with it, else fetched."""
    local = _candidates()
    chosen = []
    for group, artifact, version, sha256 in COMPILE_JARS:
        match = next((j for j in local if j.name.startswith(f"{artifact}-") and j.is_file()), None)
        chosen.append(match or _fetch(group, artifact, version, sha256))
    return chosen


def build_jar(target: Path) -> None:
    """Compile jvm/src into ``target`` (a jar: a zip of the classes, with a manifest)."""
    javac = shutil.which("javac", path=str(Path(os.environ["JAVA_HOME"]) / "bin")) if "JAVA_HOME" in os.environ \
        else None
    javac = javac or shutil.which("javac")
    if javac is None:
        raise SystemExit("build: waterline-tiers compiles its JVM classes with javac (a JDK 17 or newer): "
                         "install one or set JAVA_HOME")
    sources = sorted(str(p) for p in JAVA_SRC.rglob("*.java"))
    with tempfile.TemporaryDirectory() as classes:
        cp = os.pathsep.join(str(p) for p in compile_classpath())
        subprocess.run([javac, "--release", "17", "-nowarn", "-d", classes, "-cp", cp, *sources], check=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: waterline-tiers setup.py\r\n\r\n")
            for path in sorted(Path(classes).rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())


class BuildWithJvmClasses(build_py):
    """setuptools' build_py, plus waterline/jars/waterline-spark.jar in the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "waterline" / "jars" / JAR_NAME
        build_jar(target)
        print(f"build: {target.relative_to(self.build_lib)} ({target.stat().st_size} bytes)", file=sys.stderr)


setup(cmdclass={"build_py": BuildWithJvmClasses})
