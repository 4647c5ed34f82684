"""A case as a peer's row and back: DeepEval's goldens (input, expected_output, context, expected_tools, name,
additional_metadata...) and Ragas' samples (user_input, reference, reference_contexts, reference_tool_calls...),
each in JSONL or CSV. Pure: no file is read here (case_files.py reads and writes them).

A row's peer columns carry what the peer reads: the question, the reference, the expected pages' texts as the
ideal context, the expected tools with their expected arguments. Every other field of the case (its id,
category, split, behaviour, must_not, facts, history...) rides in the row's metadata column, under
`"whichstage"`, so exporting a case set and importing it again gives back the very cases. On import a peer
column that still holds what the metadata's case exports as is read from the metadata (so nothing is lost to
a lossy cell); one that was edited wins."""
import ast
import json
import re
from typing import Any, Callable, Optional

from whichstage.model.errors import InputError

DEEPEVAL, RAGAS = "deepeval", "ragas"
FORMATS = ("deepeval-jsonl", "deepeval-csv", "ragas-jsonl", "ragas-csv")
METADATA = {DEEPEVAL: "additional_metadata", RAGAS: "metadata"}  # the column holding {"whichstage": {...}}
OWN = "whichstage"
COLUMNS = {
    DEEPEVAL: ("input", "actual_output", "expected_output", "context", "retrieval_context", "tools_called",
               "expected_tools", "name", "comments", "additional_metadata"),
    RAGAS: ("user_input", "retrieved_contexts", "reference_contexts", "response", "reference",
            "reference_tool_calls", "metadata")}
QUESTION = {DEEPEVAL: "input", RAGAS: "user_input"}
REFERENCE = {DEEPEVAL: "expected_output", RAGAS: "reference"}
CONTEXT = {DEEPEVAL: "context", RAGAS: "reference_contexts"}  # the ideal context: the expected pages' texts
TOOLS = {DEEPEVAL: "expected_tools", RAGAS: "reference_tool_calls"}
LISTS = ("context", "retrieval_context", "retrieved_contexts", "reference_contexts")
OBJECTS = ("tools_called", "expected_tools", "reference_tool_calls", "additional_metadata", "metadata")
DEEPEVAL_DELIMITER = "|"  # how DeepEval joins a list of texts in one CSV cell (deepeval.dataset.utils.DELIMITER)
# The order a case's fields are written in when the cases file holds no case of that id to follow.
FIELD_ORDER = ("id", "question", "category", "expected_behavior", "split", "history", "expected_docs",
               "expected_tools", "tools_match", "expected_args", "must_not", "reference", "expected_facts")
ID = re.compile(r"[A-Za-z0-9._-]+")


def peer_of(fmt: str) -> tuple[str, str]:
    """('deepeval', 'csv') from 'deepeval-csv'."""
    peer, _, container = fmt.partition("-")
    return peer, container


def tool_entries(case: dict, peer: str) -> Optional[list[dict]]:
    """The expected tools as the peer lists tool calls: each with the arguments the case expects of that tool
    (DeepEval's inputParameters, Ragas' args); None when the case expects none."""
    args = case.get("expected_args") or {}
    if not case.get("expected_tools"):
        return None
    field = "inputParameters" if peer == DEEPEVAL else "args"
    return [{"name": t, **({field: args[t]} if t in args else {})} for t in case["expected_tools"]]


def to_row(case: dict, texts: dict[str, str], peer: str) -> dict:
    """A case as the peer's row (JSON values); `texts` are the project's pages' texts by id."""
    own = {k: v for k, v in case.items() if k not in ("question", "reference")}
    context = [texts.get(page, page) for page in case.get("expected_docs") or []] or None
    if peer == DEEPEVAL:
        return {"input": case["question"], "actual_output": None, "expected_output": case["reference"],
                "context": context, "retrieval_context": None, "tools_called": None,
                "expected_tools": tool_entries(case, peer), "name": case["id"], "comments": None,
                "additional_metadata": {OWN: own}}
    return {"user_input": case["question"], "retrieved_contexts": None, "reference_contexts": context,
            "response": None, "reference": case["reference"], "reference_tool_calls": tool_entries(case, peer),
            "metadata": {OWN: own}}


def to_cell(column: str, value: Any, peer: str, container: str) -> Any:
    """A column's JSON value as the container writes it: as it is in JSONL; in CSV a string (empty for none),
    DeepEval's lists of texts joined by '|', any other list or object as JSON."""
    if container == "jsonl":
        return value
    if value is None:
        return ""
    if column in LISTS and peer == DEEPEVAL:
        return DEEPEVAL_DELIMITER.join(value)
    if column in LISTS or column in OBJECTS:
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def cells(case: dict, texts: dict[str, str], fmt: str) -> dict:
    """A case as the row a file of `fmt` holds: each column's cell."""
    peer, container = peer_of(fmt)
    return {column: to_cell(column, value, peer, container) for column, value in to_row(case, texts, peer).items()}


def from_cell(column: str, cell: Any, peer: str, container: str, fail: Callable[[str, str], InputError]) -> Any:
    """A cell read back as its JSON value; an empty one is None. `fail(field, message)` makes the refusal."""
    if container == "jsonl" or not isinstance(cell, str):
        if column in LISTS and isinstance(cell, str):  # DeepEval's own JSONL joins them as in CSV
            return cell.split(DEEPEVAL_DELIMITER) if cell else []
        return cell
    if cell == "":
        return None
    if column in LISTS and peer == DEEPEVAL:
        return cell.split(DEEPEVAL_DELIMITER)
    if column in LISTS or column in OBJECTS:
        try:
            return json.loads(cell)
        except ValueError:
            pass
        try:
            return ast.literal_eval(cell)  # a list a DataFrame wrote as Python: literals only, never code
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            if column in ("tools_called", "expected_tools"):  # DeepEval reads a plain list of names too
                return [{"name": name.strip()} for name in cell.split(";") if name.strip()]
            raise fail(column, "neither JSON nor a list") from None
    return cell


def text_of(value: Any, column: str, fail: Callable[[str, str], InputError]) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    raise fail(column, f"expected text, got {type(value).__name__}")


def tools_from(value: Any, peer: str, column: str,
               fail: Callable[[str, str], InputError]) -> tuple[list[str], dict[str, dict]]:
    """(expected_tools, expected_args) from a peer's list of tool calls (each an object with a name, or a name)."""
    if value is None:
        return [], {}
    if not isinstance(value, list):
        raise fail(column, "expected a list of tool calls")
    names, args = [], {}
    for i, call in enumerate(value):
        call = {"name": call} if isinstance(call, str) else call
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            raise fail(f"{column}[{i}]", "expected a tool call with a name")
        names.append(call["name"])
        given = next((call[k] for k in ("inputParameters", "input_parameters", "args") if call.get(k) is not None),
                     None)
        if given is not None:
            if not isinstance(given, dict):
                raise fail(f"{column}[{i}]", "its arguments must be an object")
            args[call["name"]] = given
    return names, args


def pages_from(value: Any, texts: dict[str, str], column: str, fail: Callable[[str, str], InputError],
               unmatched: list[str]) -> list[str]:
    """The expected pages from an ideal context: each passage that is a page's id or its whole text names that
    page; a passage that matches no page is left out and listed in `unmatched`."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(column, "expected a list of texts")
    by_text = {text.strip(): page for page, text in texts.items()}
    found: list[str] = []
    for passage in value:
        page = passage if passage in texts else by_text.get(passage.strip())
        if page is None:
            unmatched.append(passage)
        elif page not in found:
            found.append(page)
    return found


def from_row(row: dict, texts: dict[str, str], fmt: str, fail: Callable[[str, str], InputError],
             unmatched: list[str], number: int) -> dict:
    """A peer's row (its cells, as read from a file of `fmt`) as a case; without a reference the case's
    reference is None (a draft). `number` is the row's, for the id of a row that names none."""
    peer, container = peer_of(fmt)
    own = own_of(row, fmt, fail)
    question = text_of(from_cell(QUESTION[peer], row.get(QUESTION[peer]), peer, container, fail), QUESTION[peer],
                       fail)
    if not question:
        raise fail(QUESTION[peer], "empty: every case asks a question")
    reference = text_of(from_cell(REFERENCE[peer], row.get(REFERENCE[peer]), peer, container, fail),
                        REFERENCE[peer], fail)
    case = dict(own or {})
    case.setdefault("id", row_id(row.get("name") if peer == DEEPEVAL else None, number))
    case.update(question=question, reference=reference or None)
    if own is None or not same_cell(row, own, texts, fmt, TOOLS[peer]):
        tools, args = tools_from(from_cell(TOOLS[peer], row.get(TOOLS[peer]), peer, container, fail), peer,
                                 TOOLS[peer], fail)
        case.update(expected_tools=tools, expected_args=args)
    if own is None or not same_cell(row, own, texts, fmt, CONTEXT[peer]):
        case["expected_docs"] = pages_from(from_cell(CONTEXT[peer], row.get(CONTEXT[peer]), peer, container, fail),
                                           texts, CONTEXT[peer], fail, unmatched)
    foreign = ("expected_tools", "expected_args", "expected_docs") if own is None else ()
    return {k: v for k, v in case.items() if not (k in foreign and not v)}


def own_of(row: dict, fmt: str, fail: Callable[[str, str], InputError]) -> Optional[dict]:
    """The case's own fields the row's metadata column carries (under "whichstage"), None without them."""
    peer, container = peer_of(fmt)
    meta_cell = from_cell(METADATA[peer], row.get(METADATA[peer]), peer, container, fail)
    if meta_cell is not None and not isinstance(meta_cell, dict):
        raise fail(METADATA[peer], "expected an object")
    own = (meta_cell or {}).get(OWN)
    if own is not None and not isinstance(own, dict):
        raise fail(f"{METADATA[peer]}.{OWN}", "expected an object")
    return own


def same_cell(row: dict, own: dict, texts: dict[str, str], fmt: str, column: str) -> bool:
    """Whether the row's cell is what the metadata's case exports there: unedited since it was exported."""
    probe = {**own, "question": "", "reference": ""}
    try:
        exported = cells(probe, texts, fmt)[column]
    except (TypeError, KeyError, AttributeError):  # metadata the model would refuse: read the cell itself
        return False
    given = row.get(column)
    return given == exported or (given in (None, "") and exported in (None, ""))


def row_id(name: Any, number: int) -> str:
    """The id of a row's case: its name where that is an id, a name made one (other characters as '-'), or
    'imported-N' after its row."""
    if isinstance(name, str) and name.strip():
        found = re.sub(r"[^A-Za-z0-9._-]+", "-", name.strip()).strip("-")[:80]
        if found:
            return found
    return f"imported-{number}"


def ordered(case: dict, like: Optional[dict] = None) -> dict:
    """The case's fields in the order of the case `like` (the one of that id the cases file holds), else in
    FIELD_ORDER; a field of neither comes last."""
    order = list(like) if like is not None else list(FIELD_ORDER)
    rank = {k: i for i, k in enumerate(order)}
    return dict(sorted(case.items(), key=lambda item: rank.get(item[0], len(rank))))
