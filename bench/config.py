"""Scale knobs, all from the environment, so a quick run is `WATERLINE_BENCH_SCALE=0.1 make bench`."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@dataclass(frozen=True)
class BenchConfig:
    scale: float
    reps: int  # measured repetitions of ticks and of case 3 (after one warm-up); medians are reported
    heavy_reps: int  # the same for the costly naive release and re-ingest
    backlog_small: int  # pending versions in held for the first series of ticks
    backlog_large: int  # ... and for the second
    ingest_rows: int  # rows of one backlog partition (case 2 ingests these)
    tick_rows: int  # due versions released by one tick (case 1)
    merge_rows: int  # D, due versions of case 3
    driver_memory: str
    workdir: Path
    keep: bool  # keep the warehouse after the run

    @classmethod
    def from_env(cls) -> "BenchConfig":
        scale = float(os.environ.get("WATERLINE_BENCH_SCALE", "1"))

        def scaled(n: int, floor: int = 1000) -> int:
            return max(floor, int(n * scale))

        ingest_rows = scaled(_int("WATERLINE_BENCH_INGEST_ROWS", 1_000_000))
        small_parts = _int("WATERLINE_BENCH_BACKLOG_SMALL_PARTITIONS", 1)
        large_parts = _int("WATERLINE_BENCH_BACKLOG_LARGE_PARTITIONS", 5)
        root = os.environ.get("WATERLINE_BENCH_DIR") or str(Path(".waterline/bench").absolute())
        return cls(
            scale=scale,
            reps=max(1, _int("WATERLINE_BENCH_REPS", 3)),
            heavy_reps=max(1, _int("WATERLINE_BENCH_HEAVY_REPS", min(2, _int("WATERLINE_BENCH_REPS", 3)))),
            backlog_small=ingest_rows * small_parts,
            backlog_large=ingest_rows * large_parts,
            ingest_rows=ingest_rows,
            tick_rows=scaled(_int("WATERLINE_BENCH_TICK_ROWS", 10_000), floor=100),
            merge_rows=scaled(_int("WATERLINE_BENCH_MERGE_ROWS", 100_000), floor=1000),
            driver_memory=os.environ.get("WATERLINE_BENCH_DRIVER_MEMORY", "6g"),
            workdir=Path(root),
            keep=os.environ.get("WATERLINE_BENCH_KEEP", "") not in ("", "0"),
        )

    @property
    def backlog_partitions(self) -> tuple[int, int]:
        return self.backlog_small // self.ingest_rows, self.backlog_large // self.ingest_rows

    def to_dict(self) -> dict:
        d = asdict(self)
        d["workdir"] = str(self.workdir)
        return d
