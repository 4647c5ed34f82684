"""Action tools (`role = "action"` in evals.toml): tools with side effects, proposed and never executed.

`intercept` replaces each action tool in the agent's ToolNodes by a stand-in with the same name, description
and arguments whose only effect is a fixed result: the action awaits the user's confirmation. The stand-in's
message carries a marker (`MARKER` in its artifact) so the trace records the proposal (whichstage/agent/capture.py).
"""
from functools import cache
from typing import Any, Literal

from whichstage.model.errors import InputError
from whichstage.project.config import CONFIG

MARKER = "proposed_action"


def awaiting(tool: str, args: dict) -> str:
    """What the agent receives in place of the action's result: the proposal, not carried out."""
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return (f"Not done: {tool}({shown}) is an action that awaits the user's confirmation; it has not been "
            "carried out.")


@cache
def proposed_class() -> type:
    """The stand-in's class, made once (LangChain is imported only when an agent is built)."""
    from langchain_core.tools import BaseTool

    class Proposed(BaseTool):
        response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"  # as BaseTool types it

        def _run(self, *args: Any, **kwargs: Any) -> tuple[str, dict]:
            return awaiting(self.name, kwargs), {MARKER: self.name}

    return Proposed


def stand_in(tool) -> Any:
    """A tool that looks like `tool` to the agent (name, description, argument schema) and does nothing."""
    return proposed_class()(name=tool.name, description=tool.description or "", args_schema=tool.args_schema,
                            return_direct=getattr(tool, "return_direct", False))


def intercept(agent, actions: list[str], factory: str) -> None:
    """Replace every action tool in the runnable's ToolNodes by its stand-in; an action found in no ToolNode
    (so it could run) is refused, naming it."""
    if not actions:
        return
    replaced = set()
    for node in (getattr(agent, "nodes", None) or {}).values():
        by_name = getattr(getattr(node, "bound", node), "tools_by_name", None)
        if not isinstance(by_name, dict):
            continue
        for name in actions:
            if name in by_name:
                if not isinstance(by_name[name], proposed_class()):
                    by_name[name] = stand_in(by_name[name])
                replaced.add(name)
    missing = [name for name in actions if name not in replaced]
    if missing:
        raise InputError(f"{CONFIG}: tools.{missing[0]}: an action, and {factory} returned an agent with no "
                         f"ToolNode holding {missing[0]!r}: the harness cannot keep it from running")
