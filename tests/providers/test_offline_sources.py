"""The files hashed into an offline backend's code version are every file of whichstage/offline it loads."""
import importlib
import sys
from pathlib import Path

import pytest

from conftest import in_child
from whichstage.providers.backend_versions import OFFLINE_SOURCES

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = {"rules": "whichstage.offline.models", "hash": "whichstage.offline.hash_embedder",
            "lexical": "whichstage.offline.lexical_judge", "e5-small": "whichstage.offline.e5"}


def loads(names: list[str]) -> dict[str, list[str]]:
    """Each module of `names` imported in turn, every module of the package forgotten before each (the libraries
    it uses stay loaded: they are not what is counted); the files of whichstage/offline each one loaded, the
    package found in this repository (a test may have left another copy's folder on sys.path)."""
    sys.path.insert(0, str(ROOT))
    loaded = {}
    for name in names:
        for module in [n for n in sys.modules if n == "whichstage" or n.startswith("whichstage.")]:
            del sys.modules[module]
        importlib.import_module(name)
        loaded[name] = sorted(m.__file__ for n, m in list(sys.modules.items())
                              if n.startswith("whichstage.offline.") and getattr(m, "__file__", None))
    return loaded


@pytest.fixture(scope="module")
def loaded() -> dict[str, list[str]]:
    """The files of whichstage/offline each backend's module loads, by module: counted in a child process, whose
    modules it may forget."""
    return in_child(loads, list(BACKENDS.values()))


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_an_offline_backends_hashed_sources_are_the_offline_files_it_loads(loaded, name):
    files = {Path(f).resolve().relative_to(ROOT).as_posix() for f in loaded[BACKENDS[name]]}
    assert files == set(OFFLINE_SOURCES[name])
