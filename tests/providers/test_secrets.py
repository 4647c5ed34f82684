"""No provider message shows a secret, and each is one line.

Canary values stand in for the secrets: an API key, and a password in GOOGLE_GEMINI_BASE_URL and OLLAMA_HOST
(user:password@, and a key in a query string). Each failure path a provider refuses a run on (a closed port,
an unknown model, a rejected key, an HTTP error whose message echoes the secrets) runs `evaluate.main` and
`calibrate.main` in this process on a copy of the project, and must exit 2 with exactly one line on stderr and
no canary in stdout or stderr. A model name holding a newline is shown escaped, on the same line.
"""
import io
import json
import socket
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler
from types import SimpleNamespace

import pytest

from whichstage.analysis import calibration as calibrate
from whichstage.cli import run as evaluate
from conftest import serial_judge
from whichstage._util.redact import KEY_VARIABLES, URL_VARIABLES, outside_text, shown_url
from whichstage.providers.settings import GEMINI_URL_VARIABLE
from whichstage.run import files as run_files
from whichstage.standins import gemini as gemini_standin
from whichstage.standins import ollama as ollama_standin
from whichstage.standins.ollama import on_loopback

KEY = "CANARY-KEY-1234"  # the stand-in rejects it
GOOD_KEY = "CANARY-KEY-5678"  # and takes this one
PASSWORD = "CANARY-PASS"
QUERY_KEY = "CANARY-QUERY-5678"
CANARIES = ("CANARY", "canary", "Q0FOQVJZ")  # the marker, lower-cased, base64 (a Basic auth header shown)
GEMINI_MODELS = ("gemini-standin-chat", "gemini-standin-embed", "gemini-standin-judge")
OFFLINE_REST = {"DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
NEWLINE_MODEL = "gemini-x\nINJECTED"


def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_userinfo(url: str, query: bool = False) -> str:
    """`url` (http://127.0.0.1:PORT) with the canary user:password@, and a canary key in a query string."""
    return url.replace("http://", f"http://user:{PASSWORD}@") + (f"/?key={QUERY_KEY}" if query else "")


def refused(monkeypatch, main, env: dict) -> str:
    """Run `main(["--live", "--quiet"])` with `env` (None unsets) on top of no model, key or URL variable; assert
    exit 2, one line on stderr and no canary anywhere; return that line."""
    for variable in (*run_files.MODEL_VARIABLES.values(), *KEY_VARIABLES, *URL_VARIABLES):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in env.items():
        if value is not None:
            monkeypatch.setenv(variable, value)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["--live", "--quiet"])
    shown = out.getvalue() + err.getvalue()
    assert code == 2, shown
    assert err.getvalue().endswith("\n") and err.getvalue().count("\n") == 1, err.getvalue()
    assert not any(canary in shown for canary in CANARIES), shown
    assert "Traceback" not in shown
    return err.getvalue().rstrip("\n")


class Answering(BaseHTTPRequestHandler):
    """Answers every request with the server's `status` and a Google-shaped error whose message echoes the
    canaries (key, password, query key) over two lines, as a careless proxy might."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        status = self.server.standin.status  # type: ignore[attr-defined]
        self.server.standin.requests += 1  # type: ignore[attr-defined]
        message = (f"bad credentials for http://user:{PASSWORD}@127.0.0.1/x?key={QUERY_KEY}\n"
                   f"key {KEY} header {self.headers.get('x-goog-api-key')} auth {self.headers.get('authorization')}")
        body = json.dumps({"error": {"code": status, "message": message, "status": "UNAUTHENTICATED"}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def answering():
    """A server answering `status` (set it) to everything."""
    with on_loopback(Answering, SimpleNamespace(status=401, requests=0)) as server:
        yield server


@pytest.fixture(scope="module")
def gemini(shared_ssl_contexts):
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, gemini_standin)
        with gemini_standin.serve(models=GEMINI_MODELS, reject_keys=[KEY]) as server:
            yield server


@pytest.fixture(scope="module")
def ollama():
    with ollama_standin.serve(models=["standin-chat", "standin-judge"]) as server:
        yield server


MAINS = {"evaluate": (evaluate.main, "evaluate.py", "DOCS_MODEL"), "calibrate": (calibrate.main, "calibrate.py",
                                                                              "DOCS_JUDGE")}


def gemini_env(url: str, model: str = "gemini-x", script: str = "evaluate", key: str = KEY,
               variable: str = "GOOGLE_API_KEY") -> dict:
    """The variables for a Gemini run of `model` (the agent's for evaluate, the judge for calibrate)."""
    names = {"DOCS_MODEL": "gemini-standin-chat", "DOCS_EMBEDDER": "gemini-standin-embed",
             "DOCS_JUDGE": "gemini-standin-judge"}
    names[MAINS[script][2]] = model
    return {variable: key, GEMINI_URL_VARIABLE: url, **names}


def ollama_env(host: str, model: str = "standin-missing", script: str = "evaluate") -> dict:
    names = {"DOCS_MODEL": "rules", **OFFLINE_REST}
    names[MAINS[script][2]] = model
    return {"OLLAMA_HOST": host, "GOOGLE_API_KEY": KEY, **names}


# ---- Gemini ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("script", MAINS)
@pytest.mark.parametrize("query", [False, True])
def test_an_unreachable_gemini_url_is_shown_without_its_credentials(here, monkeypatch, script, query):
    port = closed_port()
    line = refused(monkeypatch, MAINS[script][0], gemini_env(with_userinfo(f"http://127.0.0.1:{port}", query),
                                                             script=script))
    assert line == (f"{MAINS[script][1]}: cannot reach Gemini at http://127.0.0.1:{port} (GOOGLE_GEMINI_BASE_URL) "
                    f"for model gemini-x: connection refused")


@pytest.mark.parametrize("script", MAINS)
def test_a_model_gemini_lacks_is_named_without_the_urls_credentials(here, monkeypatch, gemini, script):
    line = refused(monkeypatch, MAINS[script][0], gemini_env(with_userinfo(gemini.url), "gemini-nope", script,
                                                             key=GOOD_KEY))
    assert line.startswith(f"{MAINS[script][1]}: Gemini at {gemini.url} (GOOGLE_GEMINI_BASE_URL) has no model "
                           "'gemini-nope' (HTTP 404 NOT_FOUND: ")


@pytest.mark.parametrize("variable", KEY_VARIABLES)
@pytest.mark.parametrize("script", MAINS)
def test_a_rejected_key_is_named_by_its_variable_never_its_value(here, monkeypatch, gemini, script, variable):
    line = refused(monkeypatch, MAINS[script][0],
                   gemini_env(with_userinfo(gemini.url), "gemini-standin-judge", script, variable=variable))
    assert line.startswith(f"{MAINS[script][1]}: Gemini at {gemini.url} (GOOGLE_GEMINI_BASE_URL) rejected the API "
                           f"key in {variable} for model gemini-standin-judge (HTTP 400 INVALID_ARGUMENT: ")


@pytest.mark.parametrize("status, said", [(401, "rejected the API key in GOOGLE_API_KEY for model gemini-x (HTTP 401"),
                                          (500, "answered HTTP 500 UNAUTHENTICATED for model gemini-x: ")])
@pytest.mark.parametrize("script", MAINS)
def test_a_gemini_error_echoing_the_secrets_is_one_line_without_them(here, monkeypatch, answering, script, status,
                                                                     said):
    answering.status = status
    line = refused(monkeypatch, MAINS[script][0], gemini_env(with_userinfo(answering.url, query=True),
                                                             script=script))
    assert line.startswith(f"{MAINS[script][1]}: Gemini at {answering.url} (GOOGLE_GEMINI_BASE_URL) {said}"), line
    assert "***" in line and "bad credentials for http://127.0.0.1/x?key=***" in line  # the rest of it still shows
    assert answering.requests == 1


@pytest.mark.parametrize("script", MAINS)
def test_a_gemini_model_name_with_a_newline_stays_on_one_line(here, monkeypatch, gemini, script):
    line = refused(monkeypatch, MAINS[script][0], gemini_env(with_userinfo(gemini.url), NEWLINE_MODEL, script,
                                                             key=GOOD_KEY))
    assert repr(NEWLINE_MODEL) in line and line.startswith(f"{MAINS[script][1]}: ")


def test_a_key_with_a_newline_is_not_echoed(here, monkeypatch, gemini):
    refused(monkeypatch, evaluate.main, gemini_env(gemini.url, key=f"{GOOD_KEY}\nCANARY-TAIL"))


@pytest.mark.parametrize("url", [f"http://user:{PASSWORD}/x@127.0.0.1:9", f"http://user:{PASSWORD}@127.0.0.1:9x",
                                 f"http://user:{PASSWORD}@[::1", f"ftp://user:{PASSWORD}@127.0.0.1",
                                 f"http://user:{PASSWORD}@127.0.0.1:9/\x1b[2J"])
def test_a_malformed_gemini_url_is_one_line_without_its_credentials(here, monkeypatch, url):
    line = refused(monkeypatch, evaluate.main, gemini_env(url))
    assert line.startswith("evaluate.py: cannot ")


# ---- Ollama ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("script", MAINS)
def test_an_unreachable_ollama_host_is_shown_without_its_credentials(here, monkeypatch, script):
    port = closed_port()
    line = refused(monkeypatch, MAINS[script][0], ollama_env(with_userinfo(f"http://127.0.0.1:{port}", True),
                                                             script=script))
    assert line.startswith(f"{MAINS[script][1]}: cannot reach an Ollama server at http://127.0.0.1:{port} (")


@pytest.mark.parametrize("model", ["standin-missing", "standin\nINJECTED"])
@pytest.mark.parametrize("script", MAINS)
def test_a_model_ollama_lacks_is_one_line_without_the_hosts_credentials(here, monkeypatch, ollama, script, model):
    line = refused(monkeypatch, MAINS[script][0], ollama_env(with_userinfo(ollama.url), model, script))
    shown = model if model.isprintable() else repr(model)
    assert line == (f"{MAINS[script][1]}: Ollama server at {ollama.url} has no model {model!r}: "
                    f"run `ollama pull {shown}`")


@pytest.mark.parametrize("script", MAINS)
def test_an_ollama_http_error_is_shown_without_the_hosts_credentials(here, monkeypatch, answering, script):
    line = refused(monkeypatch, MAINS[script][0], ollama_env(with_userinfo(answering.url, True), script=script))
    assert line == f"{MAINS[script][1]}: Ollama server at {answering.url} answered HTTP 401 to /api/tags"


@pytest.mark.parametrize("host", [f"user:{PASSWORD}@127.0.0.1:9x", f"http://user:{PASSWORD}/1@127.0.0.1:9"])
def test_an_unreadable_ollama_host_is_named_not_shown(here, monkeypatch, host):
    line = refused(monkeypatch, evaluate.main, ollama_env(host))
    assert line.startswith("evaluate.py: ")


# ---- the helpers -------------------------------------------------------------------------------------------

def test_outside_text_hides_every_form_of_a_secret(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "CANARY/key 1")
    monkeypatch.setenv(GEMINI_URL_VARIABLE, f"http://user:{PASSWORD}@h/?token={QUERY_KEY}")
    text = outside_text("a 'CANARY/key 1' b CANARY%2Fkey%201 c b'CANARY/key 1' https://x:y@h/p?api_key=z&q=1"
                                  f" 'CANARY-P' {QUERY_KEY}\n\x1b[31m")
    assert "CANARY" not in text and "x:y" not in text and "api_key=***&q=1" in text
    assert "\n" not in text and "\x1b" not in text and "\\x1b[31m" in text


def test_shown_url_drops_userinfo_query_and_fragment_and_escapes_the_rest():
    assert shown_url("https://u:p@w/x@host:1/v1/?key=k#f") == "https://host:1/v1"
    assert shown_url("http://h:1/\nx") == repr("http://h:1/\nx")
