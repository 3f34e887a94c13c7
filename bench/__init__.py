"""waterline benchmarks: `make bench` (= `python -m bench`). See docs/benchmarks.md."""
