"""The size rules of the team's code (issue 54): no function over 80 lines, and at most
five functions with 8 or more parameters (self and cls not counted) in the package.

The few allowed are CLI commands whose parameters mirror their command-line options one
for one (`waterline share serve`, `waterline spark start`) and the like; anything else
carries a context object (`stream.batch_context.BatchContext`,
`release.step_context.StepContext`) or is split into named steps.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "plugin" / "waterline"
MAX_LINES = 80
MANY_PARAMETERS = 8
MAX_WITH_MANY = 5


def _functions() -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method of the package, named ``path:line name``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}", node))
    return found


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return len([n for n in names if n not in ("self", "cls")])


@pytest.fixture(scope="module")
def functions():
    found = _functions()
    assert len(found) > 500, f"only {len(found)} functions found under {PACKAGE}: is the path right?"
    return found


def test_no_function_is_over_80_lines(functions):
    long = [f"{name} ({node.end_lineno - node.lineno + 1} lines)" for name, node in functions
            if node.end_lineno - node.lineno + 1 > MAX_LINES]
    assert not long, f"functions over {MAX_LINES} lines (split them into named steps):\n" + "\n".join(long)


def test_at_most_five_functions_take_8_or_more_parameters(functions):
    many = [f"{name} ({_parameters(node)} parameters)" for name, node in functions
            if _parameters(node) >= MANY_PARAMETERS]
    assert len(many) <= MAX_WITH_MANY, (
        f"{len(many)} functions take {MANY_PARAMETERS} or more parameters (at most {MAX_WITH_MANY}; "
        "carry a context object instead):\n" + "\n".join(many))
