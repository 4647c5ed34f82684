"""The package's build backend (pyproject.toml's `build-backend`): setuptools', each hook run in a temporary
copy of what the build reads, so `pip install CLONE` and `pip wheel CLONE` leave no build/ nor
whichstage.egg-info/ in the clone. An editable install keeps setuptools' own hooks: it builds in the tree."""
import contextlib
import os
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Iterator, Optional

from setuptools import build_meta
from setuptools.build_meta import (build_editable, get_requires_for_build_editable,  # noqa: F401
                                   prepare_metadata_for_build_editable)

# Python cached this module's bytecode in the tree before running it: out again, and nothing else cached there.
sys.dont_write_bytecode = True
with contextlib.suppress(OSError):
    os.remove(__cached__)
    os.rmdir(os.path.dirname(__cached__))

# What setuptools reads beside pyproject.toml when it is there, and the license files it takes unless told.
CONFIG_FILES = ("setup.py", "setup.cfg", "MANIFEST.in")
LICENSE_FILES = ["LICEN[CS]E*", "COPYING*", "NOTICE*", "AUTHORS*"]


def sources(root: Path) -> list[Path]:
    """What the build reads: its configuration files, the readme and license files, the packages it finds, and
    this backend (an sdist holds it)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    project = config.get("project", {})
    readme = project.get("readme")
    named = ["pyproject.toml", *CONFIG_FILES, readme if isinstance(readme, str) else (readme or {}).get("file")]
    licenses = [p for pattern in project.get("license-files", LICENSE_FILES) for p in root.glob(pattern)]
    patterns = config.get("tool", {}).get("setuptools", {}).get("packages", {}).get("find", {}).get("include", [])
    packages = [p for p in root.iterdir() if p.is_dir() and any(Path(p.name).match(i) for i in patterns)]
    backend = [root / d for d in config.get("build-system", {}).get("backend-path", [])]
    return [root / n for n in named if n and (root / n).exists()] + licenses + packages + backend


@contextlib.contextmanager
def in_a_copy() -> Iterator[None]:
    """Work in a temporary copy of the sources of the tree the hook was called in, then come back."""
    root = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="whichstage-build-") as copy:
        for path in sources(root):
            target = Path(copy) / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir():
                shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(path, target)
        os.chdir(copy)
        try:
            yield
        finally:
            os.chdir(root)


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> list[str]:
    with in_a_copy():
        return build_meta.get_requires_for_build_wheel(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict] = None) -> str:
    metadata_directory = os.path.abspath(metadata_directory)
    with in_a_copy():
        return build_meta.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    wheel_directory = os.path.abspath(wheel_directory)
    metadata_directory = metadata_directory and os.path.abspath(metadata_directory)
    with in_a_copy():
        return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> list[str]:
    with in_a_copy():
        return build_meta.get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    sdist_directory = os.path.abspath(sdist_directory)
    with in_a_copy():
        return build_meta.build_sdist(sdist_directory, config_settings)
