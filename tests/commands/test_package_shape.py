"""The package's shape: folders in layers that import only downwards, no import circle, no module over 400 lines."""
import ast
from pathlib import Path


PACKAGE = Path(__file__).parents[2] / "whichstage"
MAX_LINES = 400


def module_name(path: Path) -> str:
    """whichstage/offline/models.py -> whichstage.offline.models; a package's __init__.py is the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, modules: set[str]) -> set[str]:
    """The package's modules an AST imports anywhere, at module level or inside a function."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the modules of the package it imports (a package's own __init__ aside)."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imported(ast.parse(path.read_text()), set(paths)) - {name, "whichstage"}
            for name, path in paths.items()}


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of the graph, as the modules around it (first repeated last); [] if none."""
    done, path = set(), []

    def visit(node: str) -> list[str]:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return []
        path.append(node)
        for after in sorted(graph[node]):
            found = visit(after)
            if found:
                return found
        path.pop()
        done.add(node)
        return []

    for start in sorted(graph):
        found = visit(start)
        if found:
            return found
    return []


def test_the_graph_sees_function_level_imports():
    tree = ast.parse("def f():\n    from whichstage import a\n    import whichstage.b\n")
    assert imported(tree, {"whichstage.a", "whichstage.b"}) == {"whichstage.a", "whichstage.b"}


def test_a_circle_is_found_and_named():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_circle_in_the_package():
    found = cycle(import_graph())
    assert not found, "import circle: " + " -> ".join(found)


def test_only_the_console_script_imports_the_run_command():
    """whichstage/cli/run.py is the command line: the pipeline below it never reaches back up into it."""
    assert {name for name, imports in import_graph().items() if "whichstage.cli.run" in imports} == \
        {"whichstage.cli"}


def too_long() -> dict[str, int]:
    """The package's modules over MAX_LINES lines, with their lengths."""
    lengths = {module_name(p): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    return {name: n for name, n in sorted(lengths.items()) if n > MAX_LINES}


def test_no_module_over_400_lines():
    assert not too_long(), f"over {MAX_LINES} lines: {too_long()}"


# The package's folders, each importing only from those before it (and from itself); the top-level modules
# (__init__, __main__, api) may import any folder. standins/ (which `whichstage standin` starts) and testing/
# are test tooling.
LAYERS = ("_util", "model", "recording", "calls", "scoring", "judging", "offline", "providers", "project", "agent",
          "run", "traces", "render", "analysis", "standins", "cli", "testing")


def layer_of(module: str) -> str:
    """The folder of a module of the package (whichstage.run.pipeline -> run); '' for a top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module that reaches a folder after its own, or a top-level module, as 'a -> b'."""
    found = []
    for module, imports in sorted(graph.items()):
        own = layer_of(module)
        if not own:
            continue
        for other in sorted(imports):
            theirs = layer_of(other)
            if theirs == own or other == "whichstage":
                continue
            if not theirs and own != "testing" or theirs and LAYERS.index(theirs) > LAYERS.index(own):
                found.append(f"{module} -> {other}")
    return found


def test_every_folder_of_the_package_is_a_layer():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(LAYERS)


def test_an_import_that_reaches_up_a_layer_is_found():
    graph = {"whichstage.model.report": {"whichstage.scoring.gating"}, "whichstage.scoring.gating": {"whichstage.model"},
             "whichstage.cli.run": {"whichstage.api"}}
    assert upward(graph) == ["whichstage.cli.run -> whichstage.api",
                             "whichstage.model.report -> whichstage.scoring.gating"]


def test_no_import_reaches_up_a_layer():
    found = upward(import_graph())
    assert not found, "imports that reach up a layer: " + "; ".join(found)


# whichstage.testing is a documented entry (docs/testing.md): `from whichstage.testing import project_cases`.
PUBLIC_FOLDERS = {"whichstage.testing"}


def facades() -> list[str]:
    """Every folder's __init__ that imports a name of its own folder at module level (a re-export), as 'a <- b'."""
    found = []
    for path in sorted(PACKAGE.glob("*/__init__.py")):
        folder = module_name(path)
        if folder in PUBLIC_FOLDERS:
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(folder + "."):
                found.append(f"{folder} <- {node.module}")
    return found


def test_no_folder_re_exports_its_modules():
    assert not facades(), "re-exports inside the package: " + "; ".join(facades())
