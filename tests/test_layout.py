"""The layout the project keeps: plugins import only the public API, the core's packages import
only the layers below them, no module imports itself through others, the core stays in short
modules and short functions, the public API imports nothing heavy, and docs/architecture.md names
every module."""

from __future__ import annotations

import ast
import re
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


def core_imports_of_plugins(src: Path) -> list[str]:
    """Each import of ``ddpx.plugins`` (or a module under it) by a module of ``src`` outside
    ``src/plugins``, anywhere in the file (inside functions too; ``from ddpx import plugins``
    too), as ``path:line imports module``."""
    found = []
    for path in sorted(src.rglob("*.py")):
        if src / "plugins" in path.parents:
            continue
        modules = imported_modules(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "ddpx" and node.level == 0:
                modules += [(node.lineno, f"ddpx.{alias.name}") for alias in node.names]
        for line, module in sorted(modules):
            if module == "ddpx.plugins" or module.startswith("ddpx.plugins."):
                found.append(f"{path.relative_to(src.parent)}:{line} imports {module}")
    return found


def test_the_core_imports_no_plugin():
    """The core reaches every plugin through the hooks (entry points, ``DDPX_PLUGINS``), never by
    importing it: a built-in plugin is replaceable, and its commands come from its own hooks."""
    leaks = core_imports_of_plugins(SRC)
    assert not leaks, "the core must not import ddpx.plugins; use a hook:\n" + "\n".join(leaks)


def test_the_core_check_catches_an_import_inside_a_function(tmp_path):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "own.py").write_text("import ddpx.plugins.own\n")  # a plugin may
    (tmp_path / "core.py").write_text("def f():\n    from ddpx.plugins.trackers.mlflow import runs\n")
    (tmp_path / "other.py").write_text("from ddpx import __version__, plugins\n")
    assert core_imports_of_plugins(tmp_path) == [
        f"{tmp_path.name}/core.py:2 imports ddpx.plugins.trackers.mlflow",
        f"{tmp_path.name}/other.py:1 imports ddpx.plugins",
    ]


def test_the_check_catches_an_internal_import(tmp_path):
    plugin = tmp_path / "leaky.py"
    plugin.write_text(
        "from ddpx.api import hookimpl\n\ndef f():\n    from ddpx.rank.checkpoints.rank_state import unwrap\n"
    )
    assert [module for _, module in imported_modules(plugin)] == ["ddpx.api", "ddpx.rank.checkpoints.rank_state"]


def module_name(path: Path, package: Path) -> str:
    """``ddpx.records.reports`` for ``<package>/records/reports.py``; a package is its ``__init__.py``."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): its body never runs."""
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def runtime_imports(path: Path, module: str, modules: set[str], type_checking: bool = False) -> dict[str, int]:
    """The modules of ``modules`` that ``path`` (the module ``module``) imports when it runs,
    each with the line of its first import: at the top or inside functions, relative ones
    resolved; ``from P import n`` imports ``P.n`` when that is a module, else ``P``. With
    ``type_checking``, the imports under ``if TYPE_CHECKING:`` count too."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, int] = {}
    nodes: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while nodes:
        node = nodes.pop()
        if _type_checking_only(node) and not type_checking:
            nodes += node.orelse
            continue
        nodes += ast.iter_child_nodes(node)
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for name in names:
            if name in modules and name != module:
                found[name] = min(found.get(name, node.lineno), node.lineno)
    return found


def import_graph(package: Path, type_checking: bool = False) -> dict[str, dict[str, int]]:
    """Each module under ``package`` with the modules of it that it imports (and their lines)."""
    paths = {module_name(path, package): path for path in package.rglob("*.py")}
    return {module: runtime_imports(path, module, set(paths), type_checking) for module, path in paths.items()}


def import_circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The circles a depth-first walk of ``graph`` closes, each from a module back to it: every
    module that reaches itself lies on at least one."""
    circles: list[list[str]] = []
    done: set[str] = set()
    trail: list[str] = []

    def visit(module: str) -> None:
        trail.append(module)
        for imported in sorted(graph[module]):
            if imported in trail:
                circles.append([*trail[trail.index(imported) :], imported])
            elif imported not in done:
                visit(imported)
        trail.pop()
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module)
    return circles


def describe_circle(graph: dict[str, dict[str, int]], circle: list[str]) -> str:
    """``a:12 -> b:3 -> a``: each module with the line where it imports the next."""
    steps = [f"{module}:{graph[module][imported]}" for module, imported in zip(circle, circle[1:])]
    return " -> ".join([*steps, circle[-1]])


def test_no_module_imports_itself_through_others():
    """Imports anywhere in a file count, inside functions too; those under ``if TYPE_CHECKING:``
    never run and do not. A module's parent packages, which Python runs first, are not imports
    of it: a package's ``__init__.py`` may import its own modules."""
    graph = import_graph(SRC)
    circles = [describe_circle(graph, circle) for circle in import_circles(graph)]
    assert not circles, "modules that import themselves through others:\n" + "\n".join(circles)


def test_the_circle_check_catches_a_circle(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    files = {
        "__init__.py": "",
        "a.py": "def f():\n    from . import b\n",  # inside a function, relative
        "b.py": "import pkg.c\n",
        "c.py": "from pkg.a import f\n",
        "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.e import E\n",
        "e.py": "from pkg import d\n",  # d only names e for a type checker: no circle
    }
    for name, text in files.items():
        (package / name).write_text(text)
    graph = import_graph(package)
    assert [describe_circle(graph, c) for c in import_circles(graph)] == ["pkg.a:2 -> pkg.b:1 -> pkg.c:1 -> pkg.a"]


# The core's layers, ground floor first. A package imports only from the layers below its own:
# never from a layer above, nor from the other package of its own layer (the parent side,
# ``launch``, and the rank side, ``rank``, meet only in the records below them). ``api`` and
# ``__main__`` are the faces on top. The root package ``ddpx`` (its version, and ``ddpx.<name>``
# handed on from the API) runs before any of its modules, so importing it adds no arrow; the
# built-in plugins stand outside the core and import only the API (tested above).
LAYERS = [
    ("contract",),
    ("plugin_host",),
    ("config",),
    ("records",),
    ("launch", "rank"),
    ("testing",),
    ("cli",),
    ("api", "__main__"),
]


def layer_package(module: str) -> str | None:
    """``records`` for ``<root>.records.reports`` and ``api`` for ``<root>.api``; None for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def layer_violations(graph: dict[str, dict[str, int]], layers: list[tuple[str, ...]]) -> list[str]:
    """``a.b:12 imports a.c.d (c stands at or above b's layer)`` for each import that does not point
    down; imports within one package, of the root package, or of packages outside ``layers`` are free."""
    floor = {package: index for index, layer in enumerate(layers) for package in layer}
    wrong = []
    for module, imports in sorted(graph.items()):
        own = layer_package(module)
        for imported, line in sorted(imports.items()):
            other = layer_package(imported)
            if own == other or own not in floor or other not in floor:
                continue
            if floor[other] >= floor[own]:
                wrong.append(f"{module}:{line} imports {imported} ({other} stands at or above {own}'s layer)")
    return wrong


def test_the_core_packages_import_only_the_layers_below():
    """Imports under ``if TYPE_CHECKING:`` count here: a name a type checker follows is a
    dependency on its layer all the same."""
    graph = import_graph(SRC, type_checking=True)
    missing = {layer_package(m) for m in graph} - {p for layer in LAYERS for p in layer} - {None, "plugins"}
    assert not missing, f"core packages without a layer in LAYERS: {sorted(missing)}"
    wrong = layer_violations(graph, LAYERS)
    assert not wrong, "imports that point up, or across to the other side:\n" + "\n".join(wrong)


def test_the_layer_check_catches_an_import_that_points_up(tmp_path):
    package = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high.b import B\n",
        "low/c.py": "from . import a\nimport pkg\n",  # its own package, the root: free
        "left/__init__.py": "",
        "left/d.py": "def f():\n    from ..right import e\n",  # across, inside a function, relative
        "right/__init__.py": "",
        "right/e.py": "from pkg.low import c\n",  # down: free
        "high/__init__.py": "",
        "high/b.py": "import pkg.left.d\n",  # down: free
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    layers = [("low",), ("left", "right"), ("high",)]
    assert layer_violations(import_graph(package, type_checking=True), layers) == [
        "pkg.left.d:2 imports pkg.right.e (right stands at or above left's layer)",
        "pkg.low.a:3 imports pkg.high.b (high stands at or above low's layer)",
    ]
    assert layer_violations(import_graph(package), layers) == [
        "pkg.left.d:2 imports pkg.right.e (right stands at or above left's layer)"
    ]


def test_modules_and_functions_stay_short():
    long = too_long(SRC)
    assert not long, f"over {MAX_MODULE_LINES} lines a module or {MAX_FUNCTION_LINES} a function:\n" + "\n".join(long)


def test_the_public_api_is_cheap_and_complete():
    code = (
        "import sys, ddpx, ddpx.api\n"
        "missing = [n for n in ddpx.api.__all__ if getattr(ddpx, n, None) is not getattr(ddpx.api, n)]\n"
        "print(missing, sorted(m for m in ('torch', 'mlflow', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] []"


def too_long(folder: Path) -> list[str]:
    """Every module under ``folder`` over ``MAX_MODULE_LINES`` lines and every function over
    ``MAX_FUNCTION_LINES``, each with its length."""
    long = []
    for path in sorted(folder.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long.append(f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines")
    return long


def test_benchmarks_keep_the_cores_limits():
    """The benchmarks are held to the core's limits: each one a folder of short modules
    (``benchmarks/README.md``)."""
    long = too_long(ROOT / "benchmarks")
    assert not long, f"over {MAX_MODULE_LINES} lines a module or {MAX_FUNCTION_LINES} a function:\n" + "\n".join(long)


def named_in_architecture(module: str, page: str) -> bool:
    """Whether ``docs/architecture.md`` names a module (its path under ``src/ddpx``): by that path, or
    by its file name on a line that names its folder (``loop/`` ... ``fit.py``; ``plugins/smiles/`` ...)."""
    if module in page:
        return True
    folder, _, name = module.rpartition("/")
    word = re.compile(rf"(?<!\w){re.escape(name)}")
    last = folder.rpartition("/")[2]
    return any(word.search(line) and (not folder or f"{last}/" in line) for line in page.splitlines())


def test_the_architecture_page_names_every_module():
    """``docs/architecture.md`` says which file owns each step: a module it does not name is one the
    next engineer finds only by searching."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [path.relative_to(SRC).as_posix() for path in sorted(SRC.rglob("*.py")) if path.name != "__init__.py"]
    assert len(modules) > 150
    missing = [module for module in modules if not named_in_architecture(module, page)]
    assert not missing, "not in docs/architecture.md: " + ", ".join(missing)
    assert not named_in_architecture("rank/loop/nowhere.py", page)
    assert not named_in_architecture("plugins/vision/model.py", "models `smiles_rnn` (`model.py`) in `smiles/`")
