"""What a failed model call's error says: transient or not, whether the provider answered, the wait it asked
for, and one line to show. SDKs wrap the HTTP error in their own, so every question reads the whole chain."""
import re
from typing import Any, Iterator, Optional, Protocol, TypeGuard

from whichstage._util.console import first_line

TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504, 529}  # 529: Anthropic's overloaded_error
TRANSIENT_NAMES = ("Timeout", "RateLimit", "ResourceExhausted", "ServiceUnavailable", "InternalServerError",
                   "ServerError", "ConnectError", "ConnectionError", "DeadlineExceeded", "TooManyRequests",
                   # a connection dropped without an answer (httpx, httpcore: RemoteProtocolError, ReadError,
                   # WriteError; aiohttp: ServerDisconnectedError)
                   "RemoteProtocolError", "ReadError", "WriteError", "ServerDisconnected")


def status_of(error: BaseException) -> Optional[int]:
    """The HTTP status an SDK error carries, wherever that SDK keeps it."""
    for candidate in (error, getattr(error, "response", None)):
        for field in ("status_code", "code", "status"):
            value = getattr(candidate, field, None)
            if isinstance(value, int):
                return value
    return None


def causes(error: Optional[BaseException]) -> Iterator[BaseException]:
    """The exception, then what caused it, and so on: SDKs wrap the HTTP error in their own."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def is_transient(error: BaseException) -> bool:
    """Rate limits, 5xx, timeouts and dropped connections, anywhere in the exception's chain."""
    for cause in causes(error):
        if isinstance(cause, (TimeoutError, ConnectionError)) or status_of(cause) in TRANSIENT_STATUS:
            return True
        if any(name in type(cause).__name__ for name in TRANSIENT_NAMES):
            return True
    return False


def _seconds(value: Any) -> Optional[float]:
    """A Retry-After value: delay seconds, or an HTTP date (seconds from now)."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    from datetime import datetime, timezone
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


_RETRY_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _retry_info(details: Any) -> Optional[float]:
    """Google's RetryInfo in an error body: {"error": {"details": [{"@type": ".../google.rpc.RetryInfo",
    "retryDelay": "37s"}]}}; google-genai keeps that body on `error.details`."""
    body = details.get("error", details) if isinstance(details, dict) else None
    for item in (body or {}).get("details") or []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            found = _RETRY_DELAY.match(str(item.get("retryDelay", "")))
            if found:
                return float(found.group(1))
    return None


def retry_after(error: BaseException) -> Optional[float]:
    """Seconds the server asked to wait before another attempt, or None: a Retry-After header on the HTTP
    response an error carries (google-genai keeps it on `error.response`, under the SDK's own wrapper), else
    Google's RetryInfo delay in the error body."""
    for cause in causes(error):
        headers = getattr(getattr(cause, "response", None), "headers", None)
        if headers is not None and hasattr(headers, "get"):
            seconds = _seconds(headers.get("retry-after") or headers.get("Retry-After"))
            if seconds is not None:
                return seconds
        seconds = _retry_info(getattr(cause, "details", None))
        if seconds is not None:
            return seconds
    return None


def http_answer(error: BaseException) -> bool:
    """The error carries an HTTP status, anywhere in its chain: the provider answered, if with an error."""
    return any(status_of(cause) is not None for cause in causes(error))


def no_answer(error: BaseException) -> bool:
    """A transient failure with no HTTP answer (a timeout, a failed connection): the provider said nothing."""
    return is_transient(error) and not http_answer(error)


class ApiError(Protocol):
    """What api_error finds of google-genai's APIError, read by its fields rather than its class."""
    code: int
    status: str
    message: str


def is_api_error(error: BaseException) -> TypeGuard[ApiError]:
    return isinstance(getattr(error, "code", None), int) and isinstance(getattr(error, "status", None), str) \
        and isinstance(getattr(error, "message", None), str)


def api_error(error: BaseException) -> Optional[ApiError]:
    """The Google API error (google-genai's APIError: an int `code`, a `status` and a `message`) in the chain."""
    return next((c for c in causes(error) if is_api_error(c)), None)


def one_line(error: BaseException) -> str:
    """The error's type and first line; a Google API error as its code, status and message rather than the
    whole JSON body its text repeats."""
    from whichstage._util.redact import outside_text

    api = api_error(error)
    line = first_line(error) if api is None else \
        f"{type(error).__name__}: " + " ".join(f"{api.code} {api.status}: {api.message}".split())
    return outside_text(line)[:300]  # no key or password reaches a line or a journal

