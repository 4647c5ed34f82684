"""Any other provider LangChain covers (`mistralai:`, `groq:`, `bedrock:`...): the chat model from
init_chat_model, the embedder from init_embeddings, and the judge a small DeepEval model over that provider's
LangChain chat model. Its integration package and its key are the provider's own (see its LangChain page);
one attempt and a timeout are asked for where the class takes them, retries being live_calls.py's."""
from whichstage.providers.answers import EmptyResponse, judged
from whichstage.providers.names import model_of, qualifier
from whichstage.providers.settings import ProviderError, call_timeout
from whichstage._util.redact import printable


def generic_chat(name: str):
    from langchain.chat_models import init_chat_model

    return _built(name, lambda: init_chat_model(model_of(name), model_provider=qualifier(name), temperature=0,
                                                max_retries=0, timeout=call_timeout()))


def generic_embedder(name: str):
    from langchain.embeddings import init_embeddings

    return _built(name, lambda: init_embeddings(model_of(name), provider=qualifier(name)))


def _built(name: str, build):
    """The model `build` makes; one line naming the package when the provider's is not installed."""
    try:
        return build()
    except ImportError as e:
        raise ProviderError(f"the model {printable(name)} needs LangChain's {qualifier(name)} integration: "
                            f"{str(e).splitlines()[0]}") from None
    except ValueError as e:  # a provider init_embeddings does not cover
        raise ProviderError(f"cannot use {printable(name)}: {str(e).splitlines()[0]}") from None


def generic_judge(name: str):
    """A DeepEval model over the provider's LangChain chat model: one request per `generate`, the answer
    parsed into DeepEval's schema, the provider's token counts riding on the cost (the price unknown)."""
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.models.utils import EvaluationCost

    chat = generic_chat(name)

    class LangChainJudge(DeepEvalBaseLLM):
        def load_model(self):
            return chat

        def generate(self, prompt, schema=None, audio=None):
            message = self.model.invoke(prompt)
            text = message.text
            if not text.strip():
                raise EmptyResponse(f"{qualifier(name)} returned an empty answer")
            usage = message.usage_metadata or {}
            cost = EvaluationCost(None, usage.get("input_tokens"), usage.get("output_tokens"))
            return judged(text, schema), cost

        async def a_generate(self, prompt, schema=None, audio=None):
            return self.generate(prompt, schema, audio)

        def get_model_name(self):
            return name

    return LangChainJudge(model_of(name))
