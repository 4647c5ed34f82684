"""The files hashed into an offline backend's code version are every file of whichstage/offline it loads."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from whichstage.model_code import OFFLINE_SOURCES

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = {"rules": "whichstage.offline.models", "hash": "whichstage.offline.hash_embedder",
            "lexical": "whichstage.offline.lexical_judge", "e5-small": "whichstage.offline.e5"}
# One child imports each backend in turn, every module of the package forgotten before each (the libraries it
# uses stay loaded: they are not what is counted), and prints the files of whichstage/offline each one loaded.
LOADED = ("import json, sys, importlib\n"
          "loaded = {}\n"
          "for name in sys.argv[1:]:\n"
          "    for module in [n for n in sys.modules if n == 'whichstage' or n.startswith('whichstage.')]:\n"
          "        del sys.modules[module]\n"
          "    importlib.import_module(name)\n"
          "    loaded[name] = sorted(m.__file__ for n, m in list(sys.modules.items())\n"
          "                          if n.startswith('whichstage.offline.') and getattr(m, '__file__', None))\n"
          "print(json.dumps(loaded))\n")


@pytest.fixture(scope="module")
def loaded() -> dict[str, list[str]]:
    """The files of whichstage/offline each backend's module loads, by module."""
    done = subprocess.run([sys.executable, "-c", LOADED, *BACKENDS.values()], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_an_offline_backends_hashed_sources_are_the_offline_files_it_loads(loaded, name):
    files = {Path(f).resolve().relative_to(ROOT).as_posix() for f in loaded[BACKENDS[name]]}
    assert files == set(OFFLINE_SOURCES[name])
