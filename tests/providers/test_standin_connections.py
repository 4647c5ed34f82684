"""The stand-in servers keep a connection alive across requests, a test's wrapper of their handler included:
a wrapper that read the body itself and handed the handler a new `rfile` made the server close each connection
after one request, and a client sending its next request on it as it closed had it dropped unanswered (three
such in a row took the provider as silent and failed the run)."""
import threading

import httpx
import pytest

from whichstage.standins import anthropic, gemini, ollama, openai

HANG_GUARD_S = 60
CLIENTS, EACH = 4, 10
REQUESTS = {  # a stand-in module: the path after its url, and the body, of an embedding (Anthropic: a chat)
    gemini: ("/v1beta/models/gemini-standin-embed:batchEmbedContents",
             {"requests": [{"content": {"parts": [{"text": "a page"}]}}]}),
    ollama: ("/api/embed", {"model": "nomic-embed-text", "input": ["a page"]}),
    openai: ("/embeddings", {"model": "text-embedding-3-small", "input": ["a page"]}),
    anthropic: ("/v1/messages", {"model": "claude-standin", "max_tokens": 64,
                                 "messages": [{"role": "user", "content": "hello"}]}),
}
HEADERS = {"x-goog-api-key": "k", "x-api-key": "k", "Authorization": "Bearer k", "anthropic-version": "2023-06-01"}


def started(module):
    models = {"nomic-embed-text", "text-embedding-3-small", "claude-standin"}
    return module.serve() if module is gemini else module.serve(models=models)


@pytest.fixture
def watched(monkeypatch):
    """Wrap a stand-in's do_POST as the tests that log bodies do: read the body first, note the connection."""
    def wrap(module) -> list:
        ports, real = [], module.Handler.do_POST

        def do_POST(self):
            assert self.body()
            ports.append(self.client_address[1])
            real(self)

        monkeypatch.setattr(module.Handler, "do_POST", do_POST)
        return ports
    return wrap


@pytest.mark.parametrize("module", list(REQUESTS), ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_a_wrapped_handler_keeps_the_connection_for_the_next_request(module, watched):
    ports = watched(module)
    path, body = REQUESTS[module]
    with started(module) as standin, httpx.Client(base_url=standin.url, headers=HEADERS) as client:
        answers = [client.post(path, json=body).status_code for _ in range(3)]
    assert answers == [200] * 3 and len(set(ports)) == 1


@pytest.mark.parametrize("module", list(REQUESTS), ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_concurrent_clients_on_kept_alive_connections_get_every_answer(module, watched):
    watched(module)
    path, body = REQUESTS[module]
    failures, go = [], threading.Barrier(CLIENTS)
    with started(module) as standin, httpx.Client(base_url=standin.url, headers=HEADERS) as client:
        def ask():
            go.wait(HANG_GUARD_S)
            for _ in range(EACH):
                try:
                    status = client.post(path, json=body).status_code
                    if status != 200:
                        failures.append(status)
                except httpx.HTTPError as e:
                    failures.append(type(e).__name__)

        threads = [threading.Thread(target=ask) for _ in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(HANG_GUARD_S)
    assert failures == []
