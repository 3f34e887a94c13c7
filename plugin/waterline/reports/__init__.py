"""Pages for the people who answer for an embargo: the release proof and the month's usage.

Each page is one self-contained HTML file (plotly.js inlined: it opens offline, mails as one
attachment) built from the same data `waterline audit --json` and `waterline report usage
--json` print, which it also carries verbatim (``<script id="waterline-data">``), so what a
reader sees can be checked against what the tools computed.
"""

from waterline.reports.audit_page import audit_figure, audit_page, audit_summary
from waterline.reports.usage_page import usage_page

__all__ = ["audit_figure", "audit_page", "audit_summary", "usage_page"]
