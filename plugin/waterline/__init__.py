"""waterline: delayed, embargoed and tiered releases of processed data.

Spark computes, Delta Lake stores, Dagster orchestrates. See docs/ and
DESIGN.md for the release semantics; `waterline.semantics` is the oracle.
"""

__version__ = "0.1.0"
