"""Ollama's clients as the harness uses them, on the server OLLAMA_HOST names: the agent's chat model and the
embedder (langchain-ollama) and DeepEval's judge (OllamaModel), each attempt timing out after call_timeout()
seconds and, on the sync client the harness calls, no request sent once the run is stopped."""
from whichstage.providers.settings import call_timeout, ollama_url
from whichstage.calls.stopping import client_options


def ollama_chat(name: str):
    from langchain_ollama import ChatOllama

    return ChatOllama(model=name, temperature=0, reasoning=False, base_url=ollama_url(), **ollama_client_kwargs())


def ollama_embedder(name: str):
    from langchain_ollama import OllamaEmbeddings

    return OllamaEmbeddings(model=name, base_url=ollama_url(), **ollama_client_kwargs())


def ollama_judge(name: str):
    """DeepEval's OllamaModel, returning the token counts Ollama reports with each answer, which DeepEval's
    own generate drops, so each metric accrues its judge's tokens. Retries are live_calls.py's, per metric."""
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
    timeout = {"timeout": call_timeout()}
    return {"client_kwargs": timeout, "sync_client_kwargs": {**timeout, **client_options()}}
