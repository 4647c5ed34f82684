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
LOADED = ("import json, sys, importlib; importlib.import_module(sys.argv[1]); "
          "print(json.dumps(sorted(m.__file__ for n, m in list(sys.modules.items()) "
          "if n.startswith('whichstage.offline.') and getattr(m, '__file__', None))))")


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_an_offline_backends_hashed_sources_are_the_offline_files_it_loads(name):
    done = subprocess.run([sys.executable, "-c", LOADED, BACKENDS[name]], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    loaded = {Path(f).resolve().relative_to(ROOT).as_posix() for f in json.loads(done.stdout)}
    assert loaded == set(OFFLINE_SOURCES[name])
