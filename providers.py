"""Which client serves a model name, and a check that it can be reached before any paid call is made.

`gemini-*` goes to Google (langchain-google-genai, DeepEval's GeminiModel); `rules`, `hash` and `lexical`
are the deterministic offline backends; any other name is a model on an Ollama server (OLLAMA_HOST).
"""
import json
import os
import urllib.error
import urllib.request
from urllib.parse import urlsplit

OFFLINE = {"chat": "rules", "embedder": "hash", "judge": "lexical"}
KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")


class ProviderError(Exception):
    """A model that cannot be used as configured: a missing key or an unreachable server."""


def is_gemini(name: str) -> bool:
    return name.startswith("gemini")


def is_offline(name: str) -> bool:
    return name in OFFLINE.values()


def ollama_url() -> str:
    """OLLAMA_HOST as the ollama CLI reads it (host, host:port or a URL); default http://localhost:11434."""
    host = os.environ.get("OLLAMA_HOST", "").strip() or "localhost"
    parts = urlsplit(host if "://" in host else "http://" + host)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or 11434}"


def google_api_key() -> str:
    key = next((os.environ[v] for v in KEY_VARIABLES if os.environ.get(v)), None)
    if not key:
        raise ProviderError("set GOOGLE_API_KEY (or GEMINI_API_KEY) to record with a Gemini model")
    return key


def ollama_models(url: str, timeout: float = 5.0) -> list[str]:
    """Names of the models an Ollama server has pulled; a clear error when it does not answer."""
    try:
        with urllib.request.urlopen(f"{url}/api/tags", timeout=timeout) as response:
            return [m["name"] for m in json.load(response).get("models", [])]
    except urllib.error.HTTPError as e:
        raise ProviderError(f"Ollama server at {url} answered HTTP {e.code} to /api/tags") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise ProviderError(f"cannot reach an Ollama server at {url} ({reason}): start `ollama serve` "
                            "or set OLLAMA_HOST") from None


def preflight(names: list[str]) -> None:
    """Fail before the first call when a named model cannot be reached; offline backends always can."""
    remote = [n for n in dict.fromkeys(names) if not is_offline(n)]
    if any(is_gemini(n) for n in remote):
        google_api_key()
    local = [n for n in remote if not is_gemini(n)]
    if local:
        url = ollama_url()
        pulled = ollama_models(url)
        for name in local:
            if name not in pulled and f"{name}:latest" not in pulled:
                raise ProviderError(f"Ollama server at {url} has no model {name!r}: run `ollama pull {name}`")


def chat_model(name: str):
    """The agent's chat model for a name."""
    if name == OFFLINE["chat"]:
        from offline_agent import RulesChatModel
        return RulesChatModel()
    if is_gemini(name):
        from langchain_google_genai import ChatGoogleGenerativeAI
        return ChatGoogleGenerativeAI(model=name, temperature=0, google_api_key=google_api_key())
    from langchain_ollama import ChatOllama
    return ChatOllama(model=name, temperature=0, reasoning=False, base_url=ollama_url())


def embedder(name: str):
    """The embedding model search_docs indexes the pages with."""
    if name == OFFLINE["embedder"]:
        from offline_agent import HashEmbeddings
        return HashEmbeddings()
    if is_gemini(name):
        from langchain_google_genai import GoogleGenerativeAIEmbeddings
        return GoogleGenerativeAIEmbeddings(model=name, google_api_key=google_api_key())
    from langchain_ollama import OllamaEmbeddings
    return OllamaEmbeddings(model=name, base_url=ollama_url())


def judge_model(name: str):
    """The DeepEval judge for a name. Temperature 0 where the provider takes one."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    if name == OFFLINE["judge"]:
        from lexical_judge import LexicalJudge
        return LexicalJudge()
    if is_gemini(name):
        from deepeval.models import GeminiModel
        return GeminiModel(model=name, api_key=google_api_key(), temperature=0)
    return counting_ollama_judge(name)


def counting_ollama_judge(name: str):
    """DeepEval's OllamaModel, returning the token counts Ollama reports with each answer, which DeepEval's
    own generate drops, so each metric accrues its judge's tokens. Retries are live_calls.py's, per metric."""
    from deepeval.models import OllamaModel
    from deepeval.models.utils import EvaluationCost

    class OllamaJudge(OllamaModel):
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
