"""Request-level reuse at the seam every real model client shares: the httpx transport `stopping.client_options()`
gives its sync client. Inside a live run's entry (cassette/requests.py `current`), a request is keyed by a hash
of its content: method, URL path, query without key parameters, and the body (JSON re-dumped with sorted keys),
never its headers or host; a key the recording or the run holds is answered from there without being sent,
any other is sent and its answer kept (2xx only). Outside an entry (a preflight), and on the async path,
requests go out as they are."""
import hashlib
import json
from functools import cache
from typing import Any, Callable, Optional

import httpx

from whichstage.recording.requests import current, kind_of, repeat_of

SECRET_PARAMS = {"key", "api_key", "apikey", "access_token", "token", "code"}
CLIENT_HEADERS = ("user-agent", "x-goog-api-client", "x-stainless-package-version")
DROPPED_HEADERS = {"content-encoding", "transfer-encoding", "content-length"}  # the body kept is decoded


def request_key(request: httpx.Request, repeat: str = "") -> str:
    """The hash of what a request asks: its method, path, query (no key) and body (JSON canonicalised), with
    its run number under --repeats."""
    body = request.read()
    try:
        canonical: Any = json.loads(body) if body else None
    except ValueError:
        canonical = body.decode("latin-1")
    query = sorted((k, v) for k, v in request.url.params.multi_items() if k.lower() not in SECRET_PARAMS)
    text = json.dumps([repeat, request.method, request.url.path, query, canonical], sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def client_of(request: httpx.Request, kind: str) -> str:
    """The client libraries and versions a request names (its User-Agent and like headers), as tokens
    'name/version', sorted, with DeepEval's for a judge's (its prompts are DeepEval's): the plan compares them
    with those installed."""
    tokens = {t for h in CLIENT_HEADERS for t in request.headers.get(h, "").split() if "/" in t}
    if kind == "judge":
        tokens.add(f"deepeval/{deepeval_version()}")
    return " ".join(sorted(tokens))


@cache
def deepeval_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("deepeval")
    except metadata.PackageNotFoundError:
        return "none"


def record_of(response: httpx.Response, kind: str, client: str) -> Optional[dict]:
    """What the recording keeps of an answer, or None for one it does not (an error, a body not UTF-8)."""
    if not 200 <= response.status_code < 300:
        return None
    content_type = response.headers.get("content-type", "")
    try:
        text = response.content.decode("utf-8")
    except UnicodeDecodeError:
        return None
    record: dict = {"kind": kind, "client": client, "status": response.status_code, "type": content_type}
    try:
        record["json"] = json.loads(text)
    except ValueError:
        record["text"] = text
    return record


def response_of(record: dict, http: Any = httpx) -> httpx.Response:
    """A recorded answer as the client reads it (an `http` module's Response: httpx's or httpx2's)."""
    body = json.dumps(record["json"]) if "json" in record else record["text"]
    return http.Response(record["status"], headers={"content-type": record["type"]}, content=body.encode("utf-8"))


class Reusing:
    """An httpx transport that serves what the run's recording holds and sends the rest (sync clients); the
    async path sends every request. `wait()` runs while a request waits for the same one on its way: it
    raises once the run is stopped (stopping.refuse_if_stopped). Built for one HTTP module (`transport()`):
    httpx, or httpx2, the fork the openai and anthropic SDKs take and whose transports they insist on."""

    http: Any = httpx

    def __init__(self, wait: Callable[[], None]):
        self.wait = wait
        self.sync: Optional[httpx.HTTPTransport] = None
        self.async_: Optional[httpx.AsyncHTTPTransport] = None

    def send(self, request: httpx.Request) -> httpx.Response:
        if self.sync is None:
            self.sync = self.http.HTTPTransport()
        return self.sync.handle_request(request)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        serving = current.get()
        if serving is None:
            return self.send(request)
        requests, entry = serving
        kind = kind_of(entry, request.url.path)

        def send() -> tuple[httpx.Response, Optional[dict]]:
            response = self.send(request)
            try:
                response.read()
            finally:
                response.close()
            headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in DROPPED_HEADERS]
            answer = self.http.Response(response.status_code, headers=headers, content=response.content)
            return answer, record_of(response, kind, client_of(request, kind))

        record, response = requests.take(request_key(request, repeat_of(entry)), entry, kind, send, self.wait)
        return response_of(record, self.http) if record is not None else response

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.async_ is None:
            self.async_ = self.http.AsyncHTTPTransport()
        return await self.async_.handle_async_request(request)

    def close(self) -> None:
        if self.sync is not None:
            self.sync.close()

    async def aclose(self) -> None:
        if self.async_ is not None:
            await self.async_.aclose()


@cache
def transport_class(http: Any) -> type:
    """Reusing as a transport of the `http` module (httpx or httpx2): a client takes only its own module's."""
    return type("Reusing", (Reusing, http.BaseTransport, http.AsyncBaseTransport), {"http": http})
