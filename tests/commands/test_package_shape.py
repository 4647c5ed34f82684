"""The package's shape: no import circle among its modules, and no module over 400 lines."""
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
    """whichstage/evaluate.py is the command line: the pipeline below it never reaches back up into it."""
    assert {name for name, imports in import_graph().items() if "whichstage.evaluate" in imports} == \
        {"whichstage.cli"}


def too_long() -> dict[str, int]:
    """The package's modules over MAX_LINES lines, with their lengths."""
    lengths = {module_name(p): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    return {name: n for name, n in sorted(lengths.items()) if n > MAX_LINES}


def test_no_module_over_400_lines():
    assert not too_long(), f"over {MAX_LINES} lines: {too_long()}"


def test_docs_layout_names_every_module_of_the_package():
    layout = (PACKAGE.parent / "docs" / "layout.md").read_text()
    unnamed = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
               if p.name != "__init__.py" and f"`{p.name}`" not in layout and f"{p.parent.name}/{p.name}" not in layout]
    assert not unnamed, f"docs/layout.md names no job for: {unnamed}"
