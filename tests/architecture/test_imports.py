"""The import contract of DESIGN.md ("Architecture"), checked by import-linter.

The contracts live in pyproject.toml under ``[tool.importlinter]``: the layers
(adapters -> `waterline.feed` -> `waterline.engine` -> spec -> policy, clock ->
semantics -> errors), the engine's rooms (spark -> log -> delta -> core), and the
modules that must never reach pyspark, Dagster or Airflow.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "plugin" / "waterline"


def test_import_contracts_hold():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    assert lint_imports.exists(), f"{lint_imports} is missing: run `make setup` (import-linter is a test dependency)"
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    report = done.stdout[done.stdout.find("Contracts"):] if "Contracts" in done.stdout else done.stdout
    assert done.returncode == 0, f"an import contract is broken:\n{report}\n{done.stderr}"
    assert "0 broken" in done.stdout, report


def test_every_module_of_the_package_sits_in_a_layer():
    """A new top-level module or package of `waterline` must be placed in the layers
    contract, or nothing would check where it may import from."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["id"] == "layers")["layers"]
    placed = {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}
    present = {
        f"waterline.{path.stem if path.is_file() else path.name}"
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py") or (path / "__init__.py").is_file()
    }
    assert present - placed == set(), f"modules outside the layers contract in pyproject.toml: {sorted(present - placed)}"


def test_no_import_cycle_between_modules():
    """No module of the package imports, through any chain, a module that imports it back
    (issue 54): grimp's graph (import-linter's own), strongly connected components over
    direct imports, `if TYPE_CHECKING:` imports left out as the contracts leave them out."""
    import grimp

    graph = grimp.build_graph("waterline", exclude_type_checking_imports=True)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == [], f"import cycles: {cycles}"
