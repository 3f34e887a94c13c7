"""A feed's ``transform`` read without Spark: sqlglot's Spark dialect, one statement.

The spec loader refuses a transform that does not parse, in one line quoting where sqlglot
stopped (as a policy's syntax errors do); `waterline.spec.columns` reads its select list.
"""

from __future__ import annotations

import logging

#: What a transform's ``{partition}`` placeholder stands for while it is parsed: the engine
#: puts the partition key there as text, so any identifier-like stand-in parses alike.
_PLACEHOLDER_STAND_IN = "p"


class UnreadTransform(ValueError):
    """A transform sqlglot cannot parse but Spark may run: its columns are unknown, it is not refused."""


def _beyond_sqlglot(text: str) -> str | None:
    """The Spark syntax in ``text`` that sqlglot's Spark dialect is known not to read, or None.

    Spark 4's VARIANT path (``v:price``, ``parse_json(raw):a.b``) is one: refusing such a
    transform would refuse a valid feed, so a parse error there means "not known without
    Spark" (Spark reports a real mistake, with its position, at ingest)."""
    from sqlglot.dialects.spark import Spark
    from sqlglot.tokens import TokenType

    try:
        tokens = Spark().tokenize(text)
    except Exception:  # a text the tokenizer refuses is a syntax error, reported as such
        return None
    if any(token.token_type == TokenType.COLON for token in tokens):
        return "a VARIANT path, `column:field`"
    return None


def parse_transform(sql: str):
    """The sqlglot tree of ``sql`` (one Spark SQL statement; ``{partition}`` allowed), or a
    ValueError whose text is one line quoting the fragment at fault; `UnreadTransform` (a
    ValueError too) when sqlglot cannot read Spark syntax the transform uses."""
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
        if _beyond_sqlglot(text):
            raise UnreadTransform(f"the transform uses Spark syntax sqlglot does not read ({_beyond_sqlglot(text)})") from None
        raise ValueError(syntax_message(sql, err, "transform")) from None
    finally:
        sqlglot_logger.setLevel(previous_level)
    if not trees:
        raise ValueError(f"no SQL statement in transform {quote(sql)}")
    if len(trees) > 1:
        raise ValueError(f"Spark runs one statement, this transform has {len(trees)} "
                         f"(the second: {quote(trees[1].sql(dialect='spark'))})")
    return trees[0]
