"""Model names: `provider:model` names its provider, today's bare names keep their meaning, and a name no provider
can serve, or a key only a default needs, is refused in one line saying what to do."""
import socket

import pytest

from whichstage.providers import names as model_names, build as providers
from whichstage.providers.preflight import preflight as run_preflight
from whichstage.providers.names import FORMS, model_of, provider_of
from whichstage._util.redact import HOSTED_KEY_VARIABLES, KEY_VARIABLES


def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def no_settings(monkeypatch):
    for variable in ("DOCS_MODEL", "DOCS_EMBEDDER", "DOCS_JUDGE", *KEY_VARIABLES, *HOSTED_KEY_VARIABLES):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{closed_port()}")
    return monkeypatch


def test_the_providers_are_langchains_chat_and_embedding_providers():
    from langchain.chat_models.base import _BUILTIN_PROVIDERS as chat
    from langchain.embeddings.base import _BUILTIN_PROVIDERS as embeddings

    assert model_names.PROVIDERS == set(chat) | set(embeddings)


@pytest.mark.parametrize("name, provider, model", [
    ("openai:gpt-4.1-mini", "openai", "gpt-4.1-mini"), ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
    ("google_genai:gemini-2.5-flash", "google_genai", "gemini-2.5-flash"), ("ollama:qwen3", "ollama", "qwen3"),
    ("ollama:llama3.2:3b", "ollama", "llama3.2:3b"), ("mistralai:mistral-large-latest", "mistralai", "mistral-large-latest"),
    # bare names, as before: a Gemini model, an Ollama tag (its prefix is no provider), the offline backends
    ("gemini-2.5-flash", "google_genai", "gemini-2.5-flash"), ("llama3.2:3b", "ollama", "llama3.2:3b"),
    ("gpt-oss:20b", "ollama", "gpt-oss:20b"), ("rules", "offline", "rules"), ("e5-small", "offline", "e5-small"),
])
def test_a_name_says_its_provider_and_the_model_that_provider_knows(name, provider, model):
    assert (provider_of(name), model_of(name)) == (provider, model)


def test_a_bare_name_no_provider_serves_is_one_line_listing_the_forms(no_settings):
    with pytest.raises(providers.ProviderError) as refused:
        run_preflight(["gpt-4o-mini", "hash", "lexical"])
    line = str(refused.value)
    assert line.startswith("cannot reach an Ollama server at ") and "\n" not in line
    assert line.endswith(f" (did you mean openai:gpt-4o-mini?); a model name is {FORMS}")


def test_an_ollama_qualified_name_is_told_only_about_ollama(no_settings):
    with pytest.raises(providers.ProviderError) as refused:
        run_preflight(["ollama:qwen3", "hash", "lexical"])
    assert "a model name is" not in str(refused.value)


def test_with_an_ollama_agent_and_no_judge_set_the_missing_key_says_gemini_judges_by_default(no_settings):
    with pytest.raises(providers.ProviderError) as refused:
        run_preflight(["llama3.2", "hash", model_names.judge_name()])
    assert str(refused.value) == (
        f"set GOOGLE_API_KEY (or GEMINI_API_KEY) for the judge: Gemini by default ({model_names.DEFAULT_JUDGE}); "
        "or choose another with DOCS_JUDGE=provider:model (e.g. DOCS_JUDGE=ollama:qwen3, "
        "DOCS_JUDGE=openai:gpt-4.1-mini; lexical judges offline)")


@pytest.mark.parametrize("variable", ["DOCS_MODEL", "DOCS_JUDGE"])
def test_a_provider_with_no_model_is_refused_naming_the_variable(no_settings, variable):
    no_settings.setenv(variable, "openai:")
    with pytest.raises(providers.ProviderError,
                       match=f"^{variable}=openai: names the provider openai but no model: write openai:MODEL$"):
        run_preflight(["openai:", "hash"])


def test_an_anthropic_embedder_is_refused_before_any_call(no_settings):
    no_settings.setenv("DOCS_EMBEDDER", "anthropic:claude-sonnet-4-5")
    with pytest.raises(providers.ProviderError, match="^DOCS_EMBEDDER=anthropic:claude-sonnet-4-5: Anthropic has no "
                                                      "embeddings API; name another provider's embedder"):
        run_preflight(["rules", "anthropic:claude-sonnet-4-5", "lexical"])


def test_a_langchain_provider_without_its_integration_names_the_package(no_settings, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "langchain_mistralai"
                        else find_spec(name, *a))
    with pytest.raises(providers.ProviderError) as refused:
        run_preflight(["mistralai:mistral-large-latest", "hash", "lexical"])
    assert str(refused.value) == ("the mistralai provider needs LangChain's integration langchain_mistralai "
                                  "(python -m pip install langchain-mistralai)")


def test_a_bare_name_like_another_providers_that_ollama_lacks_says_what_it_may_be(no_settings, monkeypatch):
    from whichstage.providers import preflight

    monkeypatch.setattr(preflight, "ollama_models", lambda url: ["llama3.2:latest"])
    with pytest.raises(providers.ProviderError) as refused:
        run_preflight(["claude-sonnet-4-5", "hash", "lexical"])
    assert str(refused.value).endswith("run `ollama pull claude-sonnet-4-5` (did you mean "
                                       f"anthropic:claude-sonnet-4-5?); a model name is {FORMS}")


def test_with_an_ollama_agent_and_nothing_else_set_the_missing_key_names_both_gemini_defaults(no_settings):
    with pytest.raises(providers.ProviderError) as refused:
        run_preflight(["llama3.2", model_names.embedder_name(), model_names.judge_name()])
    assert str(refused.value).startswith(
        "set GOOGLE_API_KEY (or GEMINI_API_KEY) for the embedder and the judge: Gemini by default "
        f"({model_names.DEFAULT_EMBEDDER}, {model_names.DEFAULT_JUDGE}); or choose another with "
        "DOCS_EMBEDDER=provider:model and DOCS_JUDGE=provider:model (e.g. DOCS_EMBEDDER=ollama:nomic-embed-text")


def test_with_every_default_the_missing_key_line_is_gemini_s_own(no_settings):
    with pytest.raises(providers.ProviderError) as refused:
        run_preflight([model_names.chat_model_name(), model_names.embedder_name(), model_names.judge_name()])
    assert str(refused.value) == "set GOOGLE_API_KEY (or GEMINI_API_KEY) to record with a Gemini model"
