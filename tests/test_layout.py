"""The layout the project keeps: plugins import only the public API, the core stays in short
modules and short functions, and the public API imports nothing heavy."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "ddpx"
PLUGIN_DIRS = [SRC / "plugins", ROOT / "examples"]
PUBLIC = {"ddpx", "ddpx.api"}
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports (top level or inside functions), with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def own_package(path: Path) -> str:
    """The package a plugin file may import from besides the API: its own plugin's."""
    if SRC / "plugins" in path.parents:
        parts = path.relative_to(SRC / "plugins").with_suffix("").parts
        return f"ddpx.plugins.{parts[0]}"
    return "ddpx_moons"


def test_plugins_and_the_example_import_only_the_public_api():
    leaks = []
    for folder in PLUGIN_DIRS:
        for path in folder.rglob("*.py"):
            own = own_package(path)
            for line, module in imported_modules(path):
                if module.split(".")[0] != "ddpx" or module in PUBLIC:
                    continue
                if module == own or module.startswith(own + "."):
                    continue
                leaks.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not leaks, "plugins must import only ddpx.api (or ddpx):\n" + "\n".join(leaks)


def test_the_check_catches_an_internal_import(tmp_path):
    plugin = tmp_path / "leaky.py"
    plugin.write_text("from ddpx.api import hookimpl\n\ndef f():\n    from ddpx.rank.checkpoint import unwrap\n")
    assert [module for _, module in imported_modules(plugin)] == ["ddpx.api", "ddpx.rank.checkpoint"]


def test_modules_and_functions_stay_short():
    long = []
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long.append(f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines")
    assert not long, f"over {MAX_MODULE_LINES} lines a module or {MAX_FUNCTION_LINES} a function:\n" + "\n".join(long)


def test_the_public_api_is_cheap_and_complete():
    code = ("import sys, ddpx, ddpx.api\n"
            "missing = [n for n in ddpx.api.__all__ if getattr(ddpx, n, None) is not getattr(ddpx.api, n)]\n"
            "print(missing, sorted(m for m in ('torch', 'mlflow', 'numpy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] []"
