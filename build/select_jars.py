"""Copy the Delta jars Maven resolved into the venv, minus any artifact pyspark ships.

Maven resolves Delta's full runtime closure (hadoop, jackson, scala, parquet ...).
Spark already bundles those, usually at newer versions; putting a second copy on
the classpath would shadow Spark's and break it in ways that surface much later.
So we keep only artifacts whose name pyspark does not already have.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pyspark

_VERSIONED = re.compile(r"^(?P<name>.+?)-\d[\w.\-]*\.jar$")


def artifact(jar: Path) -> str:
    match = _VERSIONED.match(jar.name)
    return match.group("name") if match else jar.stem


def main(resolved: str, target: str) -> int:
    spark_jars = Path(pyspark.__file__).parent / "jars"
    bundled = {artifact(j) for j in spark_jars.glob("*.jar")}
    out = Path(target)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    kept = []
    for jar in sorted(Path(resolved).glob("*.jar")):
        if artifact(jar) not in bundled:
            shutil.copy2(jar, out / jar.name)
            kept.append(jar.name)
    if not any(name.startswith("delta-spark_") for name in kept):
        print(f"select_jars: no delta-spark jar among {resolved}", file=sys.stderr)
        return 1
    print(f"select_jars: {len(kept)} jars -> {out}: {', '.join(kept)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
