"""`python assistant.py [--project DIR] "question"`: run a project's agent once and print its trace as JSON,
with the pages each retriever call returned as the harness reads them.

With `--as-case ID` it prints, instead, a draft case for the case set's "cases" list (`draft_case`): what the
agent did, as the expectations, and REFERENCE_PLACEHOLDER as the reference. A trace is a draft, not the truth:
the case set refuses a case whose reference is still the placeholder, until a person writes what right is."""
import argparse
import json
import re
import sys
from pathlib import Path
from typing import Optional, cast

from whichstage._util.console import first_line
from whichstage.project.drafts import draft_case  # noqa: F401  (tests import it from here too)
from whichstage.project.validate import REFERENCE_PLACEHOLDER  # noqa: F401  (a drafted case's reference)
from whichstage._util import console
from whichstage._util.ending import ended
from whichstage._util.exits import WhichstageError
from whichstage.model.dicts import TraceDict

CASE_ID = re.compile(r"[A-Za-z0-9._-]+")  # model.inputs.Id, without importing pydantic


def main(argv: Optional[list[str]] = None, description: str = __doc__) -> int:
    prog = console.name("assistant.py")  # how the user called this command, for its messages
    from whichstage.providers.names import DEFAULT_EMBEDDER, DEFAULT_MODEL

    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"""models, named as in evaluate.py --help:
  DOCS_MODEL     the agent's model (default {DEFAULT_MODEL})
  DOCS_EMBEDDER  the embedder (default {DEFAULT_EMBEDDER})
  offline: DOCS_MODEL=rules DOCS_EMBEDDER=hash python assistant.py "..."

exit codes: 0 done, 2 bad input or a model that cannot be reached, 3 the run failed""")
    parser.add_argument("question", help="the question to ask, in quotes")
    parser.add_argument("--project", metavar="DIR", help="the project folder (default: the current folder)")
    parser.add_argument("--as-case", metavar="ID", help="print a draft case with this id for the case set, not the "
                                                        "trace; write its reference before it loads")
    args = parser.parse_args(argv)
    from whichstage._util.files import printable_stdout
    from whichstage.project import config as projects
    from whichstage.providers.names import chat_model_name, embedder_name, judge_name
    from whichstage.providers.preflight import preflight
    from whichstage.agent import factory as agent
    from whichstage.model.errors import InputError
    from whichstage.run.entries import Inputs
    from whichstage.run.inputs import load_inputs
    from whichstage.agent.reading import Unreadable

    from whichstage.project.validate import ID_RULE

    printable_stdout()
    case_id = args.as_case
    if case_id is not None and not CASE_ID.fullmatch(case_id):
        shown = case_id if case_id.isprintable() else repr(case_id)
        print(f"{prog}: --as-case {shown}: {ID_RULE}", file=sys.stderr)
        return 2
    model, embedder = chat_model_name(), embedder_name()
    try:
        loaded = load_inputs(projects.load(Path(args.project or ".")))
        if case_id is not None and any(c["id"] == case_id for c in loaded.cases["cases"]):
            raise InputError(f"--as-case {case_id}: {loaded.project.cases} already has a case with this id")
        preflight([model, embedder])
        from whichstage.agent.capture import run

        inputs = Inputs(loaded, model, embedder, judge_name())
        trace = cast(TraceDict, run(agent.builder(inputs, model, embedder)(None), args.question))
    except WhichstageError as e:
        return ended(prog, e)
    except Exception as e:  # noqa: BLE001 - the agent's own failure, in one line
        print(f"{prog}: the agent failed: {first_line(e)}", file=sys.stderr)
        return 3
    try:
        view = inputs.view(trace)
    except Unreadable as e:
        view, unreadable = None, str(e)
    except InputError as e:  # a page rule in evals.toml that maps a chunk to no page
        return ended(prog, e)
    if case_id is not None:
        if view is None:
            print(f"{prog}: the case has no expected_docs: {unreadable}", file=sys.stderr)
        case = draft_case(case_id, args.question, trace, inputs.roles, inputs.k,
                          None if view is None else view["searches"])
        print(json.dumps(case, indent=2, ensure_ascii=False))
        return 0
    printed: dict = dict(trace)  # the trace, with what its retriever calls returned read by role
    if view is None:
        printed["unreadable"] = unreadable
    else:
        printed["searches"], printed["context"] = view["searches"], view["context"]
    print(json.dumps(printed, indent=2))
    return 0
