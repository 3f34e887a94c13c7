"""A stream feed's transform, record by record: checked row-wise, then given the columns
waterline needs to know which record each output row came from.

A micro-batch's output is collapsed per key to its last record by (topic, Kafka partition,
offset) and may carry a removal mark (``remove_when``); both are evaluated in the
transform's own SELECT, over the view ``source``, so they see the record the row came
from. That needs a transform that maps each record to at most one row: one SELECT from
``source`` with no aggregate, window, join, DISTINCT, GROUP BY, ORDER BY or LIMIT.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp

#: Stream record columns each output row carries up to the collapse (then dropped).
RECORD_TOPIC = "_wl_kafka_topic"
RECORD_PARTITION = "_wl_kafka_partition"
RECORD_OFFSET = "_wl_kafka_offset"
REMOVE = "_wl_remove"
#: The view's columns those come from, as Spark's Kafka source names them.
RECORD_COLUMNS = {RECORD_TOPIC: "topic", RECORD_PARTITION: "partition", RECORD_OFFSET: "offset"}

_ROW_WISE = "a stream transform maps each record to at most one row: one SELECT ... FROM source"


def row_wise_problem(transform: str | None) -> str | None:
    """Why ``transform`` is not row-wise over ``source`` (the first thing found), or None."""
    if transform is None:
        return None
    try:
        trees = sqlglot.parse(transform, read="spark")
    except sqlglot.errors.ParseError as exc:
        return f"cannot parse: {str(exc).splitlines()[0]}"
    if len(trees) != 1 or not isinstance(trees[0], exp.Select):
        return f"{_ROW_WISE}, not several statements or a set operation"
    tree = trees[0]
    source = tree.args.get("from_") or tree.args.get("from")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or table.name.lower() != "source" or table.db:
        return f"{_ROW_WISE} (it reads {table.sql(dialect='spark') if table is not None else 'no table'})"
    for key, what in (("joins", "a JOIN"), ("group", "GROUP BY"), ("having", "HAVING"), ("order", "ORDER BY"),
                      ("limit", "LIMIT"), ("distinct", "DISTINCT"), ("laterals", "LATERAL VIEW")):
        if tree.args.get(key):
            return f"{_ROW_WISE}, without {what}"
    for node, what in ((exp.AggFunc, "an aggregate"), (exp.Window, "a window function"),
                       (exp.Subquery, "a subquery"), (exp.Explode, "explode")):
        found = tree.find(node)
        if found is not None:
            return f"{_ROW_WISE}, without {what} ({found.sql(dialect='spark')[:60]})"
    return None


def record_select(transform: str | None, remove_when: str | None, *, views: Mapping[str, str] | None = None) -> str:
    """The transform (default ``SELECT * FROM source``) with each row's record columns and
    its removal mark appended to its SELECT list. ``transform`` passed `row_wise_problem`.
    ``views``: tables to read under another name (``source`` -> a view of this batch
    only), each keeping its name as its alias, so ``source.value`` still resolves."""
    tree = sqlglot.parse_one(transform or "SELECT * FROM source", read="spark")
    for table in list(tree.find_all(exp.Table)) if views else ():
        if not table.args.get("db") and table.name in views:
            alias = table.alias or table.name
            table.set("this", exp.to_identifier(views[table.name]))
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    extra: Mapping[str, str] = {alias: f"`{column}`" for alias, column in RECORD_COLUMNS.items()}
    extra = {**extra, REMOVE: f"COALESCE(({remove_when}), FALSE)" if remove_when else "FALSE"}
    for alias, sql in extra.items():
        tree = tree.select(exp.alias_(sqlglot.parse_one(sql, read="spark"), alias), copy=False)
    return tree.sql(dialect="spark")
