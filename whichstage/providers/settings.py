"""A provider's settings, read from the environment: the Google API key and where Gemini is, the Ollama
server, an OpenAI-style provider's key and base URL, and how long one attempt of one model call may wait; a
ProviderError (one line) for a bad one."""
import math
import os
from typing import Optional
from urllib.parse import urlsplit

from whichstage._util.redact import KEY_VARIABLES, printable, split_url
from whichstage._util.exits import WhichstageError

GEMINI_URL_VARIABLE = "GOOGLE_GEMINI_BASE_URL"  # read by google-genai itself; named here in error lines
GEMINI_DEFAULT_URL = "https://generativelanguage.googleapis.com"
# A provider's API key and base URL variables (read by its SDK too), its name in messages and its own URL.
HOSTED = {"openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OpenAI", "https://api.openai.com/v1"),
          "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "Anthropic", "https://api.anthropic.com")}
CALL_TIMEOUT_S = 120.0  # one attempt of one model call; a timeout is retried like any transient failure
TIMEOUT_VARIABLE, MAX_TIMEOUT_S = "DOCS_CALL_TIMEOUT", 3600.0  # the setting that overrides it, and its bound


class ProviderError(WhichstageError):
    """A model that cannot be used as configured: a missing or rejected key, an unreachable server, an
    unknown model."""


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



def hosted_key(provider: str) -> tuple[str, str]:
    """The variable a hosted provider's API key comes from (HOSTED), and the key; one line naming the variable
    when it is not set."""
    variable, _, shown, _ = HOSTED[provider]
    key = os.environ.get(variable, "").strip()
    if not key:
        raise ProviderError(f"set {variable} to record with an {shown} model ({provider}:MODEL)")
    return variable, key


def hosted_url(provider: str) -> tuple[str, Optional[str]]:
    """Where a hosted provider's requests go, and the variable that said so (None for its own URL)."""
    _, variable, _, default = HOSTED[provider]
    url = os.environ.get(variable, "").strip()
    return (url.rstrip("/"), variable) if url else (default, None)
