"""The house's rules (docs/design.md), checked against the code's own imports and definitions:
no import circle, a core that knows nothing of the web, wings that import only downward, and
modules and functions short enough to read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "webapp"
# What each wing of the core may import, besides itself. The shared modules at the core's top
# level (settings, triggers, the counter catalog, i18n, lru, time_budget, collector) stand on
# nothing but each other; model on counting.
SHARED = {"settings", "triggers", "counter_catalog", "i18n", "lru", "time_budget", "collector"}
MAY_IMPORT = {
    "shared": {"shared"},
    "counting": {"shared"},
    "model": {"shared", "counting"},
    "engine": {"shared", "counting", "model"},
    "inputs": {"shared", "counting", "model", "engine"},
    "analysis": {"shared", "counting", "model", "engine"},
    "drawing": {"shared", "counting", "model", "engine", "analysis"},
    "output": {"shared", "counting", "model", "engine", "inputs", "analysis"},
}
MODULE_LINES = 450
FUNCTION_LINES = 60


def modules() -> dict[str, Path]:
    return {".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path for path in PACKAGE.rglob("*.py")}


def imports(name: str, path: Path) -> set[str]:
    """The modules of webapp that `name` imports at run time (not those only a type checker reads)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    checking = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING") for node in ast.walk(block)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in checking:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    known = modules()
    return {each for each in found if each in known and each != name}


def graph() -> dict[str, set[str]]:
    return {name: imports(name, path) for name, path in modules().items()}


def wing(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["webapp", "core"] or len(parts) < 3:
        return None
    return "shared" if parts[2] in SHARED else parts[2]


def test_no_import_circle():
    edges = graph()
    # A package's __init__ is not a circle with the modules it gathers.
    edges = {name: {each for each in targets if not name.startswith(each + ".")} for name, targets in edges.items()}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            pytest.fail("import circle: " + " -> ".join(path[path.index(name):] + [name]))
        if name in done:
            return
        for target in sorted(edges.get(name, ())):
            visit(target, path + [name])
        done.add(name)

    for name in sorted(edges):
        visit(name, [])


WEB_LIBRARIES = {"flask", "flask_babel", "werkzeug", "jinja2", "markupsafe"}
# Jinja is also the language open models write their chat templates in: the counter that renders
# a model's template (not a page) uses it.
CHAT_TEMPLATE_RENDERER = "webapp.core.counting.chat_render"


def test_the_core_knows_nothing_of_the_web():
    for name, path in modules().items():
        if name.startswith("webapp.core"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
            names |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and not node.level}
            libraries = WEB_LIBRARIES - {"jinja2"} if name == CHAT_TEMPLATE_RENDERER else WEB_LIBRARIES
            assert not {each.split(".")[0] for each in names} & libraries, name
            assert not any(each.startswith("webapp.web") for each in imports(name, path)), name


def test_each_wing_imports_only_downward():
    wrong = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        if wing(name)
        for target in targets
        if wing(target) and wing(target) != wing(name) and wing(target) not in MAY_IMPORT[wing(name)]
    ]
    assert not wrong, "\n".join(wrong)


def test_modules_and_functions_are_short_enough_to_read():
    long_modules = [f"{path.relative_to(ROOT)}: {lines} lines" for path in PACKAGE.rglob("*.py") if (lines := len(path.read_text().splitlines())) > MODULE_LINES]
    assert not long_modules, long_modules
    long_functions = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > FUNCTION_LINES:
                if "long because" not in (ast.get_docstring(node) or "").lower():
                    long_functions.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not long_functions, "a long function says in its docstring why it is long: " + ", ".join(long_functions)
