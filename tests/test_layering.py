"""The import layering of the package, checked on the source (AST): ui -> app -> core, cli -> app -> core, never back.

- core (identity, memory, retrieval, llm, calibration, security, text, models and the top-level modules) imports
  none of kiosk.app, kiosk.ui, kiosk.cli, kiosk.eval;
- kiosk.app imports the core only (never kiosk.ui, kiosk.cli, kiosk.eval);
- kiosk.eval (the LoCoMo protocol `kiosk eval locomo` runs) is a client of kiosk.app like the CLI, never of the UI;
- kiosk.ui imports kiosk.app and the core, never kiosk.cli or kiosk.eval;
- kiosk.cli is imported only inside kiosk/cli (and by `python -m kiosk`);
- Qt (PySide6) is imported only in kiosk.ui;
- an Assistant is constructed only in kiosk.app (the composition root), in the package and in bench/.

Every import counts, also one inside a function or under TYPE_CHECKING: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from kiosk.config import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "kiosk"
LAYERS = {"kiosk.app": "app", "kiosk.ui": "ui", "kiosk.cli": "cli", "kiosk.eval": "eval"}
FORBIDDEN: dict[str, frozenset[str]] = {
    "core": frozenset({"app", "ui", "cli", "eval"}),
    "app": frozenset({"ui", "cli", "eval"}),
    "eval": frozenset({"ui", "cli"}),
    "ui": frozenset({"cli", "eval"}),
    "cli": frozenset(),
    "entry": frozenset(),  # kiosk/__main__.py: `python -m kiosk` runs the CLI
}
QT = "PySide6"
COMPOSITION_ROOT = "kiosk.app"


@dataclass(frozen=True)
class Violation:
    module: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.message}"


def layer_of(module: str) -> str:
    if module == "kiosk.__main__":
        return "entry"
    for prefix, layer in LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return "core"


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, int]]:
    """Every module an import statement names, relative imports resolved; `from kiosk import ui` names kiosk.ui."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                anchor = parts if is_package else parts[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((base, node.lineno))
            found.extend((f"{base}.{alias.name}", node.lineno) for alias in node.names)
    return found


def check_source(module: str, source: str, is_package: bool = False) -> list[Violation]:
    """The layering violations of one module of the package, given its dotted name and source."""
    tree = ast.parse(source)
    layer = layer_of(module)
    violations: list[Violation] = []
    reported: set[tuple[int, str]] = set()  # one violation per statement and forbidden layer
    for name, line in imported_modules(tree, module, is_package):
        if name == QT or name.startswith(QT + "."):
            target, message = "qt", f"imports Qt ({name}) outside kiosk.ui"
            if layer == "ui":
                continue
        elif name.startswith("kiosk."):
            target, message = layer_of(name), f"{layer} module imports {name} ({layer_of(name)})"
            if target == layer or target not in FORBIDDEN[layer]:
                continue
        else:
            continue
        if (line, target) not in reported:
            reported.add((line, target))
            violations.append(Violation(module, line, message))
    if layer != "app":
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node.func) == "Assistant":
                violations.append(Violation(module, node.lineno, "constructs an Assistant outside kiosk.app"))
    return violations


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def module_name(path: Path, root: Path = PROJECT_ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def check_tree(package: Path = PACKAGE) -> list[Violation]:
    violations: list[Violation] = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path)
        violations.extend(check_source(module, path.read_text(encoding="utf-8"), path.name == "__init__.py"))
    return violations


def test_the_package_keeps_its_layers() -> None:
    violations = check_tree()
    assert not violations, "\n".join(str(v) for v in violations)


def test_benchmarks_build_the_assistant_through_the_composition_root() -> None:
    bench = PROJECT_ROOT / "bench"
    calls = []
    for path in sorted(bench.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls += [
            f"{path.name}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _called_name(node.func) == "Assistant"
        ]
    assert not calls, f"bench constructs Assistant directly (use kiosk.app.build.build_assistant): {calls}"


@pytest.mark.parametrize(
    "source",
    [
        "import kiosk.ui",
        "import kiosk.ui.app as window",
        "from kiosk.ui.workers import submit",
        "from kiosk import ui",
        "def later():\n    from kiosk.ui.app import run\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kiosk.ui.app import KioskWindow\n",
    ],
)
def test_a_core_module_importing_the_ui_is_a_violation(source: str) -> None:
    violations = check_source("kiosk.memory.fake", source)
    assert len(violations) == 1 and "core module imports kiosk.ui" in violations[0].message


@pytest.mark.parametrize(
    ("module", "source", "message"),
    [
        ("kiosk.app.fake", "from kiosk.cli.common import config", "app module imports kiosk.cli.common"),
        ("kiosk.app.fake", "import kiosk.ui.theme", "app module imports kiosk.ui.theme"),
        ("kiosk.ui.fake", "from kiosk.cli.common import config", "ui module imports kiosk.cli.common"),
        ("kiosk.retrieval.fake", "from kiosk.app.build import build_assistant", "core module imports kiosk.app"),
        ("kiosk.eval.fake", "from kiosk.ui.app import run", "eval module imports kiosk.ui.app"),
        ("kiosk.identity.fake", "from PySide6.QtCore import QObject", "imports Qt (PySide6.QtCore)"),
        ("kiosk.identity.fake", "from ..ui import theme", "core module imports kiosk.ui"),
        ("kiosk.cli.fake", "a = Assistant(store, encoder, None, config)", "constructs an Assistant outside kiosk.app"),
    ],
)
def test_each_rule_reports_its_violation(module: str, source: str, message: str) -> None:
    violations = check_source(module, source)
    assert any(message in v.message for v in violations), violations


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("kiosk.ui.fake", "from kiosk.app.views import FrameView\nfrom PySide6.QtCore import QObject"),
        ("kiosk.app.fake", "from kiosk.assistant import Assistant\nAssistant(store, encoder, None, config)"),
        ("kiosk.cli.fake", "from kiosk.app.build import build_assistant\nfrom kiosk.cli import common"),
        ("kiosk.eval.fake", "from kiosk.app.build import build_assistant"),
        ("kiosk.__main__", "from kiosk.cli import main"),
        ("kiosk.memory.fake", "from kiosk.identity.gate import GateDecision\nimport numpy"),
    ],
)
def test_allowed_imports_are_not_reported(module: str, source: str) -> None:
    assert check_source(module, source) == []


def test_a_violation_in_a_real_file_of_the_tree_is_found(tmp_path: Path) -> None:
    """The tree walk reads every module: a core module that imports the UI makes the tree fail."""
    package = tmp_path / "kiosk"
    (package / "memory").mkdir(parents=True)
    (package / "memory" / "__init__.py").write_text("")
    (package / "memory" / "leak.py").write_text("from kiosk.ui.app import KioskWindow\n")
    violations = [
        v for path in package.rglob("*.py") for v in check_source(module_name(path, tmp_path), path.read_text())
    ]
    assert [str(v) for v in violations] == ["kiosk.memory.leak:1: core module imports kiosk.ui.app (ui)"]
