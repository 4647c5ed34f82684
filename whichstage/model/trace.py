"""A recorded agent run (a recording's `agent/<case>` entry) and a judged verdict (`judge/`, `tools/` entries,
and each stage of a row's `judged`). whichstage.model.replay_check checks the same fields on a replay, without
pydantic."""
from typing import Annotated, Optional

from pydantic import Field

from whichstage.model.fields import Absent, MaybeNumber, MaybeStr, Number, Object, Open, Str, Whole, wanted


class ToolCall(Open):
    """One tool call the agent made: the tool's name and its arguments."""
    name: Str
    args: Object


class PageRead(Open):
    """A page a tool returned as data (its artifact or a retriever callback's documents)."""
    id: MaybeStr = None
    text: Str


Pages = Annotated[list[Annotated[PageRead, wanted("an object")]], wanted("a list of pages")]


class ToolOutput(Open):
    """What a tool returned, as text, with the pages it returned as data where it did."""
    tool: MaybeStr = None
    content: Str
    artifact: Optional[Pages] = None
    callbacks: Optional[Pages] = None


class Proposal(Open):
    """An action tool's call, proposed and never run: the tool and its arguments."""
    tool: MaybeStr = None
    args: Object


class Trace(Open):
    """One recorded agent run: its answer, calls, outputs, tokens in and out, wall time in seconds, and the
    actions it proposed (when it called an action tool)."""
    answer: Str
    tool_calls: Annotated[list[Annotated[ToolCall, wanted("an object")]], wanted("a list")]
    tool_outputs: Annotated[list[Annotated[ToolOutput, wanted("an object")]], wanted("a list")]
    usage: Annotated[dict[str, Whole], wanted("an object")] = Field(default_factory=dict)
    agent_s: Annotated[Optional[float], wanted("a number of seconds")] = None
    proposed: Annotated[list[Annotated[Proposal, wanted("an object")]], wanted("a list")] = Field(default_factory=list)


class Verdict(Open):
    """A judged stage's verdict: the judge's score (null: not measured) and reason, the threshold a row holds
    it to, and the judge's time, tokens and cost where recorded."""
    score: MaybeNumber
    reason: MaybeStr = None
    threshold: Absent[Number] = None
    judge_s: MaybeNumber = None
    cost: MaybeNumber = None
    tokens_in: Optional[Whole] = None
    tokens_out: Optional[Whole] = None

