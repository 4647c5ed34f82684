"""Installing the package from a clone, as the README says (`pip install CLONE[...]`): pip builds its wheel in
the clone, and the build leaves the clone as it was."""
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tracked_files() -> list[str]:
    return subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.split("\0")[:-1]


def clone(into: Path) -> Path:
    """The repository's files as a clone holds them (the working tree's, edits included)."""
    for name in tracked_files():
        source, target = ROOT / name, into / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    return into


def files_in(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


def wheel(source: Path, out: Path) -> Path:
    """The wheel pip builds from `source`, as `pip install` builds it (this venv's setuptools, no download), with
    Python writing bytecode as it does by default."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(out), str(source)], check=True, capture_output=True, env=env)
    (built,) = out.glob("whichstage-*.whl")
    return built


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """A clone, what it held before pip built its wheel, and the wheel."""
    folder = clone(tmp_path_factory.mktemp("install") / "clone")
    before = files_in(folder)
    return {"folder": folder, "before": before, "wheel": wheel(folder, tmp_path_factory.mktemp("wheel"))}


def test_building_the_wheel_leaves_the_clone_as_it_was(built):
    assert files_in(built["folder"]) == built["before"]


def test_the_wheel_holds_what_setuptools_own_build_puts_in_it(built, tmp_path):
    plain = clone(tmp_path / "plain")
    config = (plain / "pyproject.toml").read_text()
    backend = tomllib.loads(config)["build-system"]
    config = config.replace(f'build-backend = "{backend["build-backend"]}"', 'build-backend = "setuptools.build_meta"')
    (plain / "pyproject.toml").write_text(config.replace("backend-path = ", "# backend-path = "))
    assert zipfile.ZipFile(built["wheel"]).namelist() == zipfile.ZipFile(wheel(plain, tmp_path / "out")).namelist()


def test_the_sdist_it_builds_builds_the_same_wheel(built, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    hook = ("import sys; sys.path.insert(0, 'build_backend'); import clean_tree; "
            f"print(clean_tree.build_sdist({str(tmp_path)!r}))")
    name = subprocess.run([sys.executable, "-c", hook], cwd=built["folder"], env=env, capture_output=True,
                          text=True, check=True).stdout.split()[-1]
    again = wheel(tmp_path / name, tmp_path / "out")
    assert zipfile.ZipFile(again).namelist() == zipfile.ZipFile(built["wheel"]).namelist()
