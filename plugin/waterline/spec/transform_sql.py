"""A feed's ``transform`` read without Spark: sqlglot's Spark dialect, one statement.

The spec loader refuses a transform that does not parse, in one line quoting where sqlglot
stopped (as a policy's syntax errors do); `waterline.spec.columns` reads its select list.
"""

from __future__ import annotations

import logging

#: What a transform's ``{partition}`` placeholder stands for while it is parsed: the engine
#: puts the partition key there as text, so any identifier-like stand-in parses alike.
_PLACEHOLDER_STAND_IN = "p"


def parse_transform(sql: str):
    """The sqlglot tree of ``sql`` (one Spark SQL statement; ``{partition}`` allowed), or a
    ValueError whose text is one line quoting the fragment at fault."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    from waterline.policy.parse import quote, syntax_message

    text = sql.replace("{partition}", _PLACEHOLDER_STAND_IN)
    sqlglot_logger = logging.getLogger("sqlglot")
    previous_level = sqlglot_logger.level
    sqlglot_logger.setLevel(logging.CRITICAL)  # its fallbacks are warnings; the error is the report
    try:
        trees = [tree for tree in sqlglot.parse(text, read="spark") if tree is not None]
    except (ParseError, TokenError) as err:
        raise ValueError(syntax_message(sql, err, "transform")) from None
    finally:
        sqlglot_logger.setLevel(previous_level)
    if not trees:
        raise ValueError(f"no SQL statement in transform {quote(sql)}")
    if len(trees) > 1:
        raise ValueError(f"Spark runs one statement, this transform has {len(trees)} "
                         f"(the second: {quote(trees[1].sql(dialect='spark'))})")
    return trees[0]
