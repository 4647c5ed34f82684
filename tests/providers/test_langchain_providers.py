"""Any other provider LangChain covers (whichstage/providers/langchain.py): the chat model is init_chat_model's for
the provider, with one attempt, a timeout and temperature 0; the judge is a DeepEval model over it that parses
DeepEval's schema and carries the provider's token counts, the price unknown."""
import json

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from whichstage.providers import langchain as langchain_clients, settings as provider_settings, build as providers
from whichstage.providers.answers import UnusableAnswer


def test_a_langchain_providers_chat_model_is_init_chat_models_with_one_attempt_and_a_timeout(monkeypatch):
    import langchain.chat_models

    asked = {}
    monkeypatch.setattr(langchain.chat_models, "init_chat_model", lambda model, **kwargs: asked.update(
        model=model, **kwargs) or "the model")
    monkeypatch.setattr(provider_settings, "CALL_TIMEOUT_S", 42.0)
    assert providers.chat_model("mistralai:mistral-large-latest") == "the model"
    assert asked == {"model": "mistral-large-latest", "model_provider": "mistralai", "temperature": 0,
                     "max_retries": 0, "timeout": 42.0}


def test_a_langchain_providers_judge_parses_deepevals_schema_and_carries_its_tokens(monkeypatch):
    from deepeval.metrics.faithfulness.schema import Truths

    answer = AIMessage("```json\n" + json.dumps({"truths": ["The sky is blue."]}) + "\n```",
                       usage_metadata={"input_tokens": 12, "output_tokens": 7, "total_tokens": 19})
    monkeypatch.setattr(langchain_clients, "generic_chat", lambda name: GenericFakeChatModel(messages=iter([answer])))
    judge = providers.judge_model("groq:llama-3.3-70b-versatile")
    parsed, cost = judge.generate("List the truths.\n\nText:\nThe sky is blue.\n\nJSON:\n", schema=Truths)
    assert parsed == Truths(truths=["The sky is blue."])
    assert (cost.input_tokens, cost.output_tokens, cost.value) == (12, 7, None)  # no price table: unknown
    assert judge.get_model_name() == "groq:llama-3.3-70b-versatile"


def test_a_langchain_providers_judge_names_an_answer_that_is_not_the_schemas(monkeypatch):
    from deepeval.metrics.faithfulness.schema import Truths

    monkeypatch.setattr(langchain_clients, "generic_chat",
                        lambda name: GenericFakeChatModel(messages=iter([AIMessage("no JSON here")])))
    with pytest.raises(UnusableAnswer, match="not valid JSON for DeepEval's Truths schema"):
        providers.judge_model("groq:llama-3.3-70b-versatile").generate("List the truths.", schema=Truths)
