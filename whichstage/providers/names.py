"""The models a run uses, by name: the ones the environment names (DOCS_MODEL, DOCS_EMBEDDER, DOCS_JUDGE), the
defaults, and what a name says of its model: `provider:model` names its provider; a bare name is an offline
backend, a Gemini model (`gemini-*`) or else an Ollama model (`llama3.2:3b`: a prefix that is not a provider
is part of an Ollama tag)."""
import os
from typing import Optional

OFFLINE = {"chat": "rules", "embedder": "hash", "judge": "lexical"}
# A real embedding model run in this process (whichstage/offline/e5.py, which names it NAME): offline like the
# three above (no network, no key, nothing for preflight to reach), but a model, not rules.
E5_EMBEDDER = "e5-small"
# The models a live run uses unless DOCS_MODEL, DOCS_EMBEDDER and DOCS_JUDGE say otherwise. One fixed judge,
# so scores stay comparable when the agent's model changes.
DEFAULT_MODEL, DEFAULT_EMBEDDER, DEFAULT_JUDGE = "gemini-3.8-flash", "gemini-embedding-2", "gemini-3.8-flash"
JUDGE_VARIABLE = "DOCS_JUDGE"
# The providers a `provider:model` name may start with: LangChain's init_chat_model and init_embeddings keys
# (tests/providers/test_names.py holds this to them). openai, anthropic, google_genai and ollama have clients of
# their own here; any other goes through LangChain's generic path (langchain_clients.py).
PROVIDERS = frozenset({
    "anthropic", "anthropic_bedrock", "azure_ai", "azure_openai", "baseten", "bedrock", "bedrock_converse",
    "bedrock_mantle_anthropic", "bedrock_mantle_openai", "cohere", "deepseek", "fireworks",
    "google_anthropic_vertex", "google_genai", "google_vertexai", "groq", "huggingface", "ibm", "langsmith",
    "litellm", "meta", "mistralai", "nvidia", "ollama", "openai", "openrouter", "perplexity", "together",
    "upstage", "xai"})
# The forms a model name takes, as the one line refusing a name lists them.
FORMS = ("provider:model (openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, google_genai:gemini-2.5-flash, "
         "ollama:qwen3, or another LangChain provider's), a bare gemini-* name, an Ollama model its server has "
         "pulled, or an offline backend (rules, hash, lexical, e5-small)")


# The model name of a recording of imported traces (`whichstage import`, docs/traces.md): no agent is run for
# it, so a live run of it pays only for the judge, and never for an intervention that re-runs the agent.
IMPORTED = "imported"


def is_imported(name: str) -> bool:
    """Whether a recording's model is the traces imported from a file, not a model the harness runs."""
    return name == IMPORTED


def chat_model_name() -> str:
    return os.environ.get("DOCS_MODEL") or DEFAULT_MODEL


def embedder_name() -> str:
    return os.environ.get("DOCS_EMBEDDER") or DEFAULT_EMBEDDER


def judge_name() -> str:
    return os.environ.get(JUDGE_VARIABLE) or DEFAULT_JUDGE


def qualifier(name: str) -> Optional[str]:
    """The provider a `provider:model` name starts with; None for a bare name."""
    prefix, colon, model = name.partition(":")
    return prefix if colon and model and prefix in PROVIDERS else None


def provider_of(name: str) -> str:
    """Who serves a model: "offline", "google_genai" (Gemini), "ollama", "openai", "anthropic" or another of
    PROVIDERS."""
    if is_offline(name):
        return "offline"
    return qualifier(name) or ("google_genai" if name.startswith("gemini") else "ollama")


def model_of(name: str) -> str:
    """The name its provider knows the model by: without the `provider:`."""
    return name.partition(":")[2] if qualifier(name) else name


def is_bare(name: str) -> bool:
    """A name without a provider: its provider is guessed from the name."""
    return qualifier(name) is None


def is_gemini(name: str) -> bool:
    return provider_of(name) == "google_genai"


def is_offline(name: str) -> bool:
    """Runs here, with no network and no key: the offline backends and the local `e5-small` embedder."""
    return name in OFFLINE.values() or name == E5_EMBEDDER


def no_model(name: str) -> Optional[str]:
    """Why a name that starts with a provider but names no model (`openai:`) is none, in one line; else None."""
    prefix, colon, model = name.partition(":")
    if not (colon and not model.strip() and prefix in PROVIDERS):
        return None
    variable = next((v for v in ("DOCS_MODEL", "DOCS_EMBEDDER", JUDGE_VARIABLE) if os.environ.get(v) == name), "")
    shown = name if name.isprintable() else repr(name)
    return f"{variable + '=' if variable else ''}{shown} names the provider {prefix} but no model: write {prefix}:MODEL"


def cannot_embed(name: str) -> Optional[str]:
    """Why a model cannot be the embedder, in one line; None when it may be."""
    if provider_of(name) != "anthropic":
        return None
    shown = name if name.isprintable() else repr(name)
    return (f"DOCS_EMBEDDER={shown}: Anthropic has no embeddings API; name another provider's embedder "
            "(openai:text-embedding-3-small, google_genai:gemini-embedding-001, ollama:nomic-embed-text, hash)")
