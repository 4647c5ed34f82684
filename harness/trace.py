"""Reading a recorded trace by the roles of its tools: which pages each retriever call returned, what the
agent read (the judge's context), and whether it searched. Pure: no I/O, no model imports.

A retriever call's pages, ranked, come from the first of: the Documents of its ToolMessage artifact, the
Documents its retrievers returned through the callbacks, its output as a JSON list of objects with an `id`,
or the `ids` regular expression evals.toml declares for it (one id per match, its first group). A call none
of these can read, or a page id that is not in the corpus, raises Unreadable naming the tool and its output.
"""
import json
import re
from typing import Optional

from harness.json_text import loads

TEXT_FIELDS = ("text", "page_content", "content")


class Unreadable(Exception):
    """A retriever call whose pages cannot be read: the case is an error, never 'retrieved nothing'."""


def shown_output(text: str) -> str:
    flat = " ".join(str(text).split())
    return repr(flat[:80] + ("..." if len(flat) > 80 else ""))


def json_pages(content: str) -> Optional[list[dict]]:
    """The output as a JSON list of objects that each carry an `id`, else None."""
    try:
        found = loads(content)
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(found, list) or not all(isinstance(p, dict) and "id" in p for p in found):
        return None
    return [{"id": str(p["id"]), "text": listed_text(p), "listed": True} for p in found]


def listed_text(page: dict) -> str:
    """A listed page's text: its first text field, else its other fields as JSON."""
    for field in TEXT_FIELDS:
        if field in page:
            return str(page[field])
    return json.dumps({k: v for k, v in page.items() if k != "id"})


def pages_of(output: dict, ids: Optional[str], corpus: set[str]) -> list[dict]:
    """One retriever call's pages, ranked: [{"id", "text"}], by the order of sources in the module docstring."""
    tool, content = output["tool"], output.get("content", "")
    for source in ("artifact", "callbacks"):
        found = output.get(source)
        if found and all(p.get("id") for p in found):
            pages = found
            break
    else:
        pages = json_pages(content)
        if pages is None and ids is not None:
            matches = [m.group(1) if m.groups() else m.group(0) for m in re.finditer(ids, content)]
            pages = [{"id": i, "text": None} for i in matches] if matches or not content.strip() else None
        if pages is None:
            raise Unreadable(f"{tool} returned {shown_output(content)}, which the harness cannot read as pages: no "
                             "Document artifact, no retriever callback, not a JSON list of objects with an id, and "
                             f"no ids pattern under [tools.{tool}] in evals.toml")
    unknown = [p["id"] for p in pages if p["id"] not in corpus]
    if unknown:
        raise Unreadable(f"{tool} returned page {unknown[0]!r}, which is not in the project's pages "
                         f"({len(corpus)} pages); it returned {shown_output(content)}")
    return pages


def read(trace: dict, roles: dict, corpus: set[str]) -> dict:
    """What the trace did, by role: `searches` (ranked page ids per retriever call), `retrieved` (all of them,
    in order), `searched` (any retriever called), `looked_up` (tool, key) pairs and the judge's `context`.
    `roles` maps a tool's name to its evals.toml role (harness.project.ToolRole)."""
    searches, context = [], []
    for output in trace["tool_outputs"]:
        role = roles.get(output["tool"])
        if role is None or role.role != "retriever":
            context.append(output.get("content", ""))
            continue
        pages = pages_of(output, role.ids, corpus)
        searches.append([p["id"] for p in pages])
        context += seen_text(output.get("content", ""), pages)
    calls = trace["tool_calls"]
    retrievers = {name for name, r in roles.items() if r.role == "retriever"}
    looked_up = [(c["name"], str(c["args"].get(roles[c["name"]].key))) for c in calls
                 if c["name"] in roles and roles[c["name"]].role == "lookup"]
    return {"searches": searches, "retrieved": [p for s in searches for p in s], "context": context,
            "searched": any(c["name"] in retrievers for c in calls), "looked_up": looked_up}


def seen_text(content: str, pages: list[dict]) -> list[str]:
    """The judge's context of one retriever call: the text the agent saw. One node per page when its output
    lists the pages (JSON) or holds each page's text; the id is kept with a page when the agent saw it.
    Otherwise the output as the agent saw it, as one node."""
    whole = all(p["text"] is not None and (p.get("listed") or p["text"].strip() in content) for p in pages)
    if not pages or not whole:
        return [content] if content.strip() else []
    return [f"[{p['id']}] {p['text']}" if p["id"] in content else p["text"] for p in pages]
