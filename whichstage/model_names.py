"""The models a run uses, by name: the ones the environment names (DOCS_MODEL, DOCS_EMBEDDER, DOCS_JUDGE), the
defaults, and what a name says of its model (offline, Gemini; any other is an Ollama model)."""
import os

OFFLINE = {"chat": "rules", "embedder": "hash", "judge": "lexical"}
# A real embedding model run in this process (whichstage/offline/e5.py, which names it NAME): offline like the three above
# (no network, no key, nothing for preflight to reach), but a model, not rules.
E5_EMBEDDER = "e5-small"
# The models a live run uses unless DOCS_MODEL, DOCS_EMBEDDER and DOCS_JUDGE say otherwise. One fixed judge,
# so scores stay comparable when the agent's model changes.
DEFAULT_MODEL, DEFAULT_EMBEDDER, DEFAULT_JUDGE = "gemini-3.8-flash", "gemini-embedding-2", "gemini-3.8-flash"


def chat_model_name() -> str:
    return os.environ.get("DOCS_MODEL") or DEFAULT_MODEL


def embedder_name() -> str:
    return os.environ.get("DOCS_EMBEDDER") or DEFAULT_EMBEDDER


def judge_name() -> str:
    return os.environ.get("DOCS_JUDGE") or DEFAULT_JUDGE


def is_gemini(name: str) -> bool:
    return name.startswith("gemini")


def is_anthropic(name: str) -> bool:
    return name.startswith("anthropic:")


def is_offline(name: str) -> bool:
    """Runs here, with no network and no key: the offline backends and the local `e5-small` embedder."""
    return name in OFFLINE.values() or name == E5_EMBEDDER
