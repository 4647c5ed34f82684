"""The files of a project folder that evals.toml's paths and globs name: each glob's matches, never a file the
harness writes nor one in an installed environment, and nothing that links outside the folder."""
import glob
import os
from pathlib import Path
from typing import Union

from whichstage.model.errors import InputError

CONFIG = "evals.toml"
# Written by the harness, at the top of the project: a glob never matches a file in them.
OUTPUTS = ("runs", "recordings", "baselines", ".cache")
# Installed packages: a wildcard never walks into them, nor into a Python environment (a folder holding
# pyvenv.cfg); `*` and `**` already skip hidden folders (.venv, .git, .tox).
PACKAGES = ("node_modules", "site-packages", "__pycache__")


def files_of(folder: Path, patterns: list[str], key: str) -> list[Path]:
    """The files the globs match, each once, in the patterns' order; a glob that matches none is refused."""
    files: dict[Path, None] = {}
    for i, pattern in enumerate(patterns):
        found = files_matching(folder, pattern)
        if not found:
            raise fail(f"{key}[{i}]" if len(patterns) > 1 else key, f"{pattern!r} matches no file in {folder}"
                       + (f" ({', '.join(OUTPUTS)} are never read)" if is_output(pattern) else ""))
        files.update(dict.fromkeys(found))
    return list(files)


def files_matching(folder: Path, pattern: str) -> list[Path]:
    """The files a glob (`**` allowed) matches under `folder`, sorted: none the harness writes (OUTPUTS), none in
    an environment or packages folder the pattern does not name, and none that links outside the folder."""
    named, seen = set(Path(pattern).parts), {}

    def installed(up: Path) -> bool:
        if up not in seen:
            seen[up] = up.name not in named and (up.name in PACKAGES or (folder / up / "pyvenv.cfg").is_file())
        return seen[up]

    found = []
    for relative in sorted(Path(p) for p in glob.glob(pattern, root_dir=folder, recursive=True)):
        if not is_output(relative) and not any(map(installed, relative.parents[:-1])) \
                and (folder / relative).is_file():
            found.append(inside(folder, folder / relative))
    return found


def is_output(relative: Union[str, Path]) -> bool:
    parts = Path(relative).parts
    return bool(parts) and parts[0] in OUTPUTS


def outside(relative: str) -> bool:
    """A path or glob of evals.toml that leaves the project folder: absolute, or up through '..'."""
    return Path(relative).is_absolute() or os.path.normpath(relative).split(os.sep)[0] == ".."


def inside(folder: Path, path: Path) -> Path:
    """`path`, refused (one line naming it) when it resolves outside `folder`: a link to a file elsewhere."""
    target = path.resolve()
    if not target.is_relative_to(folder.resolve()):
        raise InputError(f"{Path(os.path.relpath(path, folder)).as_posix()}: a link to {target}, outside the project "
                         "folder: only files inside it are read")
    return path


def fail(key: str, message: str) -> InputError:
    return InputError(f"{CONFIG}: {key}: {message}")
