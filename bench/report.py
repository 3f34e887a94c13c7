"""The summary table: case, value, baseline, ratio, target, met?"""

from __future__ import annotations

# "Flat" driver memory: the peak at the large backlog within 25% of the small one.
MEMORY_TARGET = 1.25


def _n(x: int) -> str:
    if x >= 1_000_000 and x % 100_000 == 0:
        return f"{x / 1_000_000:g}M"
    if x >= 1000 and x % 100 == 0:
        return f"{x / 1000:g}k"
    return str(x)


def _row(case, value, baseline=None, target=None, unit="s", cpu=None, cpu_baseline=None):
    ratio = (value / baseline) if (value is not None and baseline) else None
    met = None if target is None or ratio is None else ratio <= target
    cpu_ratio = (cpu / cpu_baseline) if (cpu is not None and cpu_baseline) else None
    return {"case": case, "value": value, "baseline": baseline, "unit": unit,
            "ratio": ratio, "target": target, "met": met,
            "cpu_s": cpu, "cpu_baseline_s": cpu_baseline, "cpu_ratio": cpu_ratio}


def _timed_row(case, c: dict, name: str, base: str | None = None, target=None):
    """A wall-time row; the CPU seconds of the same runs ride along (less sensitive to other load)."""
    b = c[base] if base else {}
    return _row(case, c[name]["median_s"], b.get("median_s"), target,
                cpu=c[name].get("median_cpu_s"), cpu_baseline=b.get("median_cpu_s"))


def build_rows(out: dict) -> list[dict]:
    c, m, cfg = out["cases"], out["memory"], out["config"]
    small, large = _n(cfg["backlog_small"]), _n(cfg["backlog_large"])
    tick, ing, d = _n(cfg["tick_rows"]), _n(cfg["ingest_rows"]), _n(cfg["merge_rows"])
    mib = 2**20
    return [
        _timed_row(f"1  tick: release {tick} due, backlog {small} pending", c, "tick_small"),
        _timed_row(f"1  tick: release {tick} due, backlog {large} pending  (vs {small})",
                   c, "tick_large", "tick_small", 1.5),
        _timed_row(f"1  naive full-scan release [bench baseline], backlog {small}", c, "naive_small"),
        _timed_row(f"1  naive full-scan release [bench baseline], backlog {large}  (vs {small})",
                   c, "naive_large", "naive_small"),
        _timed_row(f"1  tick vs naive, both at backlog {large}", c, "tick_large", "naive_large"),
        _timed_row(f"2  ingest {ing}-row partition  (vs plain Delta append)", c, "ingest", "plain_append", 1.5),
        *([_timed_row("2  plain append + the duplicate-key check alone [floor]  (vs plain append)",
                      c, "append_and_duplicate_check", "plain_append"),
           _timed_row(f"2  ingest {ing}-row partition  (vs that floor)", c, "ingest", "append_and_duplicate_check",
                      1.5)]
          if "append_and_duplicate_check" in c else []),
        _timed_row(f"2  re-ingest identical {ing}-row partition, 0 versions  (vs plain append)",
                   c, "reingest", "plain_append", 1.0),
        _timed_row(f"3  release D={d} due  (vs bare Delta MERGE of the D rows)", c, "release_d", "bare_merge_d", 1.5),
        _row(f"4  driver JVM heap peak during tick, {large} (vs {small})",
             m["large"]["heap_peak_bytes"] / mib, m["small"]["heap_peak_bytes"] / mib, MEMORY_TARGET, "MiB"),
        _row(f"4  driver JVM RSS peak during tick, {large} (vs {small})",
             m["large"]["rss_peak_bytes"] / mib, m["small"]["rss_peak_bytes"] / mib, MEMORY_TARGET, "MiB"),
    ]


def _fmt(x, unit):
    if x is None:
        return "-"
    return f"{x:.0f} {unit}" if unit == "MiB" else f"{x:.2f} {unit}"


def print_table(out: dict) -> None:
    rows = out["rows"]
    header = ("case", "value", "baseline", "ratio", "target", "met?", "cpu ratio")
    lines = [
        (r["case"], _fmt(r["value"], r["unit"]), _fmt(r["baseline"], r["unit"]),
         "-" if r["ratio"] is None else f"{r['ratio']:.2f}x",
         "-" if r["target"] is None else f"<= {r['target']:g}x",
         "-" if r["met"] is None else ("yes" if r["met"] else "NO"),
         "-" if r.get("cpu_ratio") is None else f"{r['cpu_ratio']:.2f}x")
        for r in rows
    ]
    widths = [max(len(str(x[i])) for x in [header, *lines]) for i in range(len(header))]
    fmt = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    print(fmt.format(*header))
    print("  ".join("-" * w for w in widths))
    for line in lines:
        print(fmt.format(*line))
    cfg = out["config"]
    print(f"\nscale {cfg['scale']}, reps {cfg['reps']} (+1 warm-up, medians), backlog built by "
          f"{out['backlog_built_by']}; load average start {out['load']['start']} end {out['load']['end']}; "
          f"total {out['total_s']:.0f} s; JSON: bench/results/latest.json")
    print("value/baseline: median wall seconds (met? is decided on these); cpu ratio: the same ratio on "
          "CPU seconds of the driver JVM + Python, less sensitive to other load on a shared machine")
