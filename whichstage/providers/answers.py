"""What a Gemini answer holds when there is nothing to use in it (blocked, withheld, empty, not the JSON its
schema asks for), raised as an UnusableAnswer naming the cause: not transient, so never retried. Also what
every provider's judge makes of an answer: the schema parsed from it, and its cost."""
from typing import Optional

# Finish reasons (google.genai.types.FinishReason) under which Gemini withholds the answer.
WITHHELD = {"SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "SPII", "BLOCKLIST", "RECITATION", "LANGUAGE"}
FOR_SAFETY = {"SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "SPII", "BLOCKLIST"}


class UnusableAnswer(Exception):
    """A model answer with nothing to use. Asking again gets the same answer, so it is not transient."""


class BlockedResponse(UnusableAnswer):
    """Gemini blocked the prompt or withheld the answer (safety, recitation...)."""


class EmptyResponse(UnusableAnswer):
    """Gemini answered with no candidates, or a candidate with nothing in it."""


class InvalidJudgeAnswer(UnusableAnswer):
    """The judge's answer is not valid JSON for the schema DeepEval asked for."""


def _name(value) -> Optional[str]:
    """An enum's name as the API spells it (FinishReason.SAFETY -> 'SAFETY'); None stays None."""
    if value is None:
        return None
    return str(getattr(value, "value", value)) or None


def answer_problem(block_reason, candidates: int, finish_reason, has_answer: bool) -> Optional[UnusableAnswer]:
    """Why a Gemini answer holds nothing to use, or None when it does."""
    block, finish = _name(block_reason), _name(finish_reason)
    if block and block != "BLOCKED_REASON_UNSPECIFIED":
        why = " for safety" if block in FOR_SAFETY else ""
        return BlockedResponse(f"Gemini blocked the prompt{why} (promptFeedback.blockReason {block}): no answer")
    if finish in WITHHELD:
        why = " for safety" if finish in FOR_SAFETY else ""
        return BlockedResponse(f"Gemini withheld the answer{why} (finishReason {finish})")
    if has_answer:
        return None
    if not candidates:
        return EmptyResponse("Gemini returned no candidates: no answer and no block reason")
    return EmptyResponse(f"Gemini returned an empty answer (finishReason {finish or 'none'})")


def chat_result_problem(result) -> Optional[UnusableAnswer]:
    """answer_problem for a LangChain ChatResult from ChatGoogleGenerativeAI, which turns a blocked or empty
    response into an empty AIMessage (no candidates: one generation with no finish reason)."""
    feedback = (result.llm_output or {}).get("prompt_feedback") or {}
    for generation in result.generations:
        message, info = generation.message, generation.generation_info or {}
        block = feedback.get("block_reason") or (message.response_metadata.get("prompt_feedback") or {}).get(
            "block_reason")
        finish = info.get("finish_reason") or message.response_metadata.get("finish_reason")
        has_answer = bool(message.tool_calls) or bool(message.text.strip())
        problem = answer_problem(block, 1 if finish else 0, finish, has_answer)
        if problem:
            return problem
    return None if result.generations else answer_problem(feedback.get("block_reason"), 0, None, False)


def response_problem(response) -> Optional[UnusableAnswer]:
    """answer_problem for a google-genai GenerateContentResponse."""
    candidates = response.candidates or []
    first = candidates[0] if candidates else None
    parts = (first.content.parts or []) if first is not None and first.content is not None else []
    has_answer = any(p.text or p.function_call for p in parts)
    block = response.prompt_feedback.block_reason if response.prompt_feedback else None
    return answer_problem(block, len(candidates), first.finish_reason if first else None, has_answer)


def parsed_answer(schema, text: str):
    """The judge's text as the schema DeepEval asked for; InvalidJudgeAnswer, naming the first problem."""
    from pydantic import ValidationError

    try:
        return schema.model_validate_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "the answer"
        problem = f"{where}: {first.get('msg', 'invalid')}"
    raise InvalidJudgeAnswer(f"the judge's answer is not valid JSON for DeepEval's {schema.__name__} schema "
                             f"({problem})")



def json_text(text: str) -> str:
    """A JSON object's text as a model without structured outputs may wrap it (a code fence, a sentence)."""
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else text


def judged(text: str, schema):
    """The judge's answer as DeepEval asked for it: the text, or the schema parsed from the JSON object in it
    (all of it under structured outputs; a model without them may wrap it in prose)."""
    return text if schema is None else parsed_answer(schema, json_text(text))


def judge_cost(model_data, tokens_in: int, tokens_out: int):
    """DeepEval's EvaluationCost from its price table for the judge's model, the token counts riding on it; a
    model it has no price for costs None ("price unknown"), its tokens still counted."""
    from deepeval.models.utils import EvaluationCost, token_cost

    return token_cost(model_data, tokens_in, tokens_out) or EvaluationCost(None, tokens_in, tokens_out)
