"""Reading a recorded trace by the roles of its tools: which pages each retriever call returned, what the
agent read (the judge's context), and whether it searched. Pure: no I/O, no model imports.

A retriever call's pages, ranked, come from the first of: the Documents of its ToolMessage artifact, the
Documents its retrievers returned through the callbacks, its output as a JSON list of objects with an `id`,
or the `ids` regular expression evals.toml declares for it (one id per match, its first group; the output
split at the matches gives each page its text). A retriever of chunks declares how a chunk names its page
(`page`, a dotted path into the item, or `page_pattern`, a regular expression over its id): its searches rank
pages, its context keeps the chunks. A call none of these can read, or a page id that is not in the corpus,
raises Unreadable naming the tool and its output; a chunk its tool's page rule maps to no page of the corpus
raises PageRuleError, the configuration's fault in every case alike.
"""
import json
import re
from typing import Any, Mapping, Optional, cast

from whichstage.model.errors import InputError
from whichstage._util.jsontext import loads
from whichstage.project.config import ToolRole
from whichstage.model.dicts import TraceDict

TEXT_FIELDS = ("text", "page_content", "content")


class Unreadable(Exception):
    """A retriever call whose pages cannot be read: the case is an error, never 'retrieved nothing'."""


class PageRuleError(InputError):
    """A chunk that its retriever's page rule in evals.toml maps to no page of the project: bad input (exit 2),
    not a failed call, since every replay and every live run would read it the same way."""


def rule_error(role: ToolRole, item: dict, why: str, tool: str) -> PageRuleError:
    """`evals.toml: tools.NAME.page: ...`, naming the chunk (its id and text) the rule could not map, and why."""
    key = "page" if role.page else "page_pattern"
    text = item.get("text")
    seen = f" ({shown_output(text)})" if text else ""
    return PageRuleError(f"evals.toml: tools.{role.name}.{key}: {getattr(role, key)!r} maps no page for the chunk "
                         f"{item.get('id')!r}{seen} that {tool} returned: {why}")


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
    return [{"id": str(p["id"]), "text": listed_text(p), "listed": True, "item": p} for p in found]


def listed_text(page: dict) -> str:
    """A listed page's text: its first text field, else its other fields as JSON."""
    for field in TEXT_FIELDS:
        if field in page:
            return str(page[field])
    return json.dumps({k: v for k, v in page.items() if k != "id"})


def matched_pages(content: str, ids: str) -> list[dict]:
    """The pages an `ids` pattern finds in a retriever's text: one per match (its id the first group, else the
    whole match), each page's text the part of the output that belongs to its match (see split_at)."""
    matches = list(re.finditer(ids, content))
    return [{"id": m.group(1) if m.groups() else m.group(0), "text": text, "split": True}
            for m, text in zip(matches, split_at(content, matches), strict=False)]


def split_at(content: str, matches: list[re.Match]) -> list[str]:
    """The output cut into one part per match. An id usually opens its page ('[p1] text'), so each part runs
    from its match's line (or the match itself, when the previous match is on that line) up to the next,
    and any text before the first match joins the first part. When text comes before the first match's line
    and only punctuation after the last match's line, the ids close their pages ('text (p1)', 'Source: p1'
    after the text): each part then runs up to and including its match's line."""
    if not matches:
        return []
    same_line = [i > 0 and "\n" not in content[matches[i - 1].end():m.start()] for i, m in enumerate(matches)]
    after_last = content[line_end(content, matches[-1].end()):]
    before_first = content[:line_start(content, matches[0].start())]
    if re.search(r"\w", before_first) and not re.search(r"\w", after_last):
        ends = [m.end() if i + 1 < len(matches) and same_line[i + 1] else line_end(content, m.end())
                for i, m in enumerate(matches)]
        cuts = [0] + ends[:-1] + [len(content)]
    else:
        starts = [m.start() if same_line[i] else line_start(content, m.start()) for i, m in enumerate(matches)]
        cuts = [0] + starts[1:] + [len(content)]
    return [content[a:b].strip() for a, b in zip(cuts, cuts[1:], strict=False)]


def line_start(content: str, at: int) -> int:
    return content.rfind("\n", 0, at) + 1


def line_end(content: str, at: int) -> int:
    end = content.find("\n", at)
    return len(content) if end < 0 else end


def pages_of(output: Mapping[str, Any], role: ToolRole, corpus: set[str]) -> list[dict]:
    """One retriever call's items, ranked: [{"id", "text", "page"}] (`page` the page an item belongs to, its id
    unless the tool declares a page rule), by the order of sources in the module docstring."""
    tool, content, ids = output["tool"], output.get("content", ""), role.ids
    for source in ("artifact", "callbacks"):
        found = output.get(source)
        if found and all(p.get("id") or role.page for p in found):
            pages = found
            break
    else:
        pages = json_pages(content)
        if pages is None and ids is not None:
            pages = matched_pages(content, ids) or (None if content.strip() else [])
        if pages is None:
            raise Unreadable(f"{tool} returned {shown_output(content)}, which the harness cannot read as pages: no "
                             "Document artifact, no retriever callback, not a JSON list of objects with an id, and "
                             f"no ids pattern under [tools.{tool}] in evals.toml")
    pages = [{**p, "page": item_page(p, role, tool)} for p in pages]
    unknown = next((p for p in pages if p["page"] not in corpus), None)
    if unknown is not None and (role.page or role.page_pattern):
        raise rule_error(role, unknown, unmapped(unknown, role, corpus), tool)
    if unknown is not None:
        raise Unreadable(f"{tool} returned page {unknown['page']!r}, which is not in the project's pages "
                         f"({len(corpus)} pages); it returned {shown_output(content)}")
    return pages


def unmapped(item: dict, role: ToolRole, corpus: set[str]) -> str:
    """Why a chunk's page, by its tool's rule, is none of the project's pages."""
    pages = f"the project's {len(corpus)} pages (such as {min(corpus)!r})" if corpus else "the project's pages (none)"
    if role.page_pattern and item["page"] == item["id"]:
        return f"the pattern does not match its id, and the id is not one of {pages}"
    return f"it names page {item['page']!r}, which is not one of {pages}"


def rule_of(role: ToolRole) -> str:
    rule = f"page = {role.page!r}" if role.page else f"page_pattern = {role.page_pattern!r}"
    return f"{rule} under [tools.{role.name}] in evals.toml"


def item_page(item: dict, role: ToolRole, tool: str) -> str:
    """The page a retriever's item (a chunk) belongs to, by its tool's page rule: `page_pattern`'s first group
    (else its whole match) in the item's id, the id itself when it does not match (a whole page); or the
    value at the dotted path `page` of the item; the id when the tool declares no rule."""
    if role.page_pattern:
        found = re.search(role.page_pattern, item["id"] or "")
        page = found and (found.group(1) if found.groups() else found.group(0))
        return page or item["id"]
    if role.page:
        return str(at_path(item, role, tool))
    return item["id"]


def at_path(item: dict, role: ToolRole, tool: str) -> Any:
    """The value at the dotted path `role.page` in an item: a JSON object the tool listed, or a Document as
    recorded (`id`, `page_content`, `metadata`)."""
    value: Any = item.get("item") or {"id": item["id"], "page_content": item["text"],
                                      "metadata": item.get("metadata", {})}
    path = cast(str, role.page)  # item_page asks only for a tool with a `page` rule
    for depth, part in enumerate(path.split(".")):
        if not isinstance(value, dict) or part not in value:
            if path.startswith("metadata.") and "item" not in item and "metadata" not in item:
                raise Unreadable(f"{tool} returned an item with nothing at {path!r} ({rule_of(role)}); its "
                                 "recording holds no metadata: record it again with --live")
            raise rule_error(role, item, nothing_at(value, path.split(".")[:depth + 1]), tool)
        value = value[part]
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise rule_error(role, item, f"its {path!r} is {shown_output(json.dumps(value))}, not a page id", tool)
    return value


def nothing_at(value: Any, path: list[str]) -> str:
    """Why a dotted path finds nothing in an item: which part is missing, and what is there instead."""
    if not isinstance(value, dict):
        return f"{'.'.join(path[:-1])!r} is {shown_output(json.dumps(value))}, not an object with {path[-1]!r}"
    keys = list(value)
    has = ", ".join(map(repr, keys[:8])) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "") or "nothing"
    return f"it has no {'.'.join(path)!r} ({'.'.join(path[:-1]) or 'the chunk'} holds {has})"


def read(trace: TraceDict, roles: dict, corpus: set[str]) -> dict:
    """What the trace did, by role: `searches` (per retriever call, the page of each item it returned, in its
    order: two chunks of one page name it twice, and scoring counts it once), `chunks` (per retriever call,
    each item's id, page and text), `retrieved` (all pages, in order), `searched` (any retriever called),
    `looked_up` (tool, key) pairs and the judge's `context`. `roles` maps a tool's name to its evals.toml
    role (whichstage.project.config.ToolRole)."""
    searches, chunks, context = [], [], []
    for output in trace["tool_outputs"]:
        role = roles.get(output["tool"])
        if role is None or role.role != "retriever":
            context.append(output.get("content", ""))
            continue
        pages = pages_of(output, role, corpus)
        searches.append([p["page"] for p in pages])
        chunks.append([{"id": p.get("id"), "page": p["page"], "text": p.get("text")} for p in pages])
        context += seen_text(output.get("content", ""), pages)
    calls = trace["tool_calls"]
    retrievers = {name for name, r in roles.items() if r.role == "retriever"}
    looked_up = [(c["name"], str(c["args"].get(roles[c["name"]].key))) for c in calls
                 if c["name"] in roles and roles[c["name"]].role == "lookup"]
    return {"searches": searches, "chunks": chunks, "retrieved": [p for s in searches for p in s], "context": context,
            "searched": any(c["name"] in retrievers for c in calls), "looked_up": looked_up}


def seen_text(content: str, pages: list[dict]) -> list[str]:
    """The judge's context of one retriever call: the text the agent saw. One node per page when its output
    lists the pages (JSON), holds each page's text or is split at an `ids` pattern's matches; the id is kept
    with a page when the agent saw it (a split page holds its own). Otherwise the output as the agent saw it,
    as one node."""
    whole = all(p["text"] is not None and (p.get("listed") or p["text"].strip() in content) for p in pages)
    if not pages or not whole:
        return [content] if content.strip() else []
    return [f"[{p['id']}] {p['text']}" if p["id"] and p["id"] in content and not p.get("split") else p["text"]
            for p in pages]
