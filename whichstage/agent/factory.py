"""The agent contract: import a project's factory, call it with the parameters it names, read its tools.

The factory (`agent = "module:function"` in evals.toml) returns a LangChain runnable taking {"messages": [...]}
and names, as keyword parameters, what it wants of PROVIDED; it gets only those. Its tools (names,
descriptions, argument types) are read from the runnable's ToolNodes and kept in `.cache/agent.json` under a
stamp of the sources, so a replay of unchanged code imports neither the agent nor LangChain.
"""
import hashlib
import json
from pathlib import Path
from typing import Any, Optional

from whichstage.agent import actions
from whichstage.calls.errors import causes, is_transient
from whichstage._util.files import write_atomic
from whichstage._util.console import first_line
from whichstage.model.errors import InputError
from whichstage.providers.backend_versions import package_version
from whichstage.calls.pool import locked_once
from whichstage.project.config import CONFIG, Project
from whichstage.project.imports import import_function, wanted
from whichstage.calls.stopping import Silent, Stopped

PROVIDED = ("model", "embeddings", "pages", "records", "given_pages")
CACHE = Path(".cache") / "agent.json"
# JSON-schema types the scoring converts arguments to; any other type is compared as it is.
PYTHON_TYPES = {"integer": int, "string": str}


def build_agent(project: Project, values: dict[str, Any]):
    """Call the factory with the values of the parameters it names; its result must be a runnable."""
    from langchain_core.runnables import Runnable

    factory = import_function(project, project.agent, "agent")
    given = {name: values[name] for name in wanted(factory, project.agent, "agent", PROVIDED)}
    try:
        agent = factory(**given)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001
        if is_transient(e) or any(isinstance(c, (Stopped, Silent)) for c in causes(e)):
            raise  # its model's provider failed (building an index embeds), not the factory: a call's failure
        raise InputError(f"{CONFIG}: agent: {project.agent} raised {first_line(e)}") from None
    if not isinstance(agent, Runnable):
        raise InputError(f"{CONFIG}: agent: {project.agent} returned {type(agent).__name__}, not a LangChain "
                         "runnable (return create_agent(...) or a compiled graph)")
    return agent


def tools_of(agent) -> list:
    """The tools of a runnable: those of every ToolNode among its graph's nodes (create_agent's `tools`)."""
    found = {}
    for node in (getattr(agent, "nodes", None) or {}).values():
        by_name = getattr(getattr(node, "bound", node), "tools_by_name", None)
        if isinstance(by_name, dict):
            found.update(by_name)
    return list(found.values())


def argument_type(schema: dict) -> Optional[str]:
    """A JSON-schema property's type; the first non-null one of an anyOf (Optional[int] -> 'integer')."""
    if isinstance(schema.get("type"), str):
        return schema["type"]
    for option in schema.get("anyOf", []):
        if option.get("type") not in (None, "null"):
            return option["type"]
    return None


def describe_tools(tools: list) -> list[dict]:
    """Each tool as the model reads it: name, description and each argument's JSON type."""
    return [{"name": t.name, "description": t.description or "",
             "parameters": {arg: argument_type(schema) for arg, schema in t.args.items()}} for t in tools]


def stamp(project: Project) -> str:
    """What the agent's tools depend on: the factory, the sources, the LangChain that reads them."""
    core = package_version("langchain-core")
    core = "none" if core == "not installed" else core
    return hashlib.sha256(json.dumps([project.agent, project.rank, project.sources_sha(), core]).encode()).hexdigest()


class Described:
    """The factory's parameters and the agent's tools, read once per content of the sources."""

    def __init__(self, wanted: list[str], tools: list[dict], rank_wanted: Optional[list[str]] = None):
        self.wanted, self.tools, self.rank_wanted = wanted, tools, rank_wanted or []
        self.by_name = {t["name"]: t for t in tools}

    def parameters(self) -> dict[str, dict[str, Optional[type]]]:
        return {t["name"]: {a: PYTHON_TYPES.get(kind) for a, kind in t["parameters"].items()} for t in self.tools}


def describe(project: Project, pages: list[dict], records: dict[str, dict]) -> Described:
    """The agent's tools and the factory's parameters: from the cache when the sources are unchanged, else
    by building the agent with the offline backends (no paid call). Then the roles are checked against them."""
    cache, now = project.folder / CACHE, stamp(project)
    try:
        kept = json.loads(cache.read_text(encoding="utf-8"))
        found = Described(kept["wanted"], kept["tools"], kept["rank_wanted"]) if kept.get("stamp") == now else None
    except (OSError, ValueError, KeyError, TypeError):
        found = None
    if found is None:
        factory = import_function(project, project.agent, "agent")
        names = wanted(factory, project.agent, "agent", PROVIDED)
        rank = import_function(project, project.rank, "rank") if project.rank else None
        ranks = wanted(rank, project.rank, "rank", PROVIDED) if rank and project.rank else []
        agent = build_agent(project, offline_values(project, pages, records))
        found = Described(names, describe_tools(tools_of(agent)), ranks)
        try:
            write_atomic(cache, json.dumps({"stamp": now, "wanted": found.wanted, "tools": found.tools,
                                            "rank_wanted": found.rank_wanted}, indent=1))
        except OSError:
            pass  # no cache: the next run reads the tools again
    check_roles(project, found)
    return found


def offline_values(project: Project, pages: list[dict], records: dict) -> dict:
    """The values the factory may name, with the offline backends: how the agent is built to read its tools."""
    from whichstage.providers.names import OFFLINE

    providers = models()
    return {"model": providers.chat_model(OFFLINE["chat"], rules_roles(project, records)),
            "pages": documents(pages), "embeddings": providers.embedder(OFFLINE["embedder"]),
            "records": records, "given_pages": None}


def models():
    """The model builders (whichstage.providers.build), loaded when a model is built: a replay of unchanged agent code
    builds none, so it loads no model client."""
    from whichstage.providers import build as providers

    return providers


def check_roles(project: Project, described: Described) -> None:
    """Every role in evals.toml names a tool of the agent, and a lookup's key is one of its arguments."""
    for name, role in project.roles.items():
        if name not in described.by_name:
            have = ", ".join(described.by_name) or "none"
            raise InputError(f"{CONFIG}: tools.{name}: the agent has no tool {name!r} (its tools: {have})")
        if role.role == "lookup" and role.key not in described.by_name[name]["parameters"]:
            raise InputError(f"{CONFIG}: tools.{name}.key: {name} takes no argument {role.key!r} (it takes "
                             f"{', '.join(described.by_name[name]['parameters']) or 'none'})")


def rules_roles(project: Project, records: dict) -> dict[str, dict]:
    """What the offline `rules` model is told of each tool with a role: the role, and for a lookup the key
    argument and the keys its records hold (the argument's type it reads from the tool itself)."""
    roles: dict[str, dict] = {}
    for name, role in project.roles.items():
        roles[name] = {"role": role.role}
        if role.role == "lookup":
            roles[name].update(key=role.key, keys=sorted(records.get(name, {})))
    return roles


def documents(pages: list[dict]) -> list:
    """The pages as LangChain Documents: the text as page_content, the id as Document.id, metadata["id"] and
    (unless the page sets one) metadata["source"],
    the title and the other metadata in metadata; a page's planted instructions are the eval's, never the
    agent's."""
    from langchain_core.documents import Document

    return [Document(page_content=p["text"], id=p["id"],
                     metadata={"source": p["id"], **{k: v for k, v in p.items() if k not in ("text", "planted")}})
            for p in pages]


def builder(inputs, model: str, embedder: str):
    """Builds the project's agent with the run's models (`inputs`: entries.Inputs): build(None) the agent,
    build(pages) the counterfactual one, whose retriever must return exactly those pages. The chat model and
    the embedder are built once, only if the factory names them. An action tool is never run
    (whichstage.agent.actions)."""
    names, providers = inputs.loaded.described.wanted, models()
    chat = locked_once(lambda: providers.chat_model(model, rules_roles(inputs.project, inputs.records)))
    embeddings = locked_once(lambda: providers.embedder(embedder))
    pages = locked_once(lambda: documents(inputs.pages))

    def build(given: Optional[list[dict]] = None):
        values = {"model": chat() if "model" in names else None, "records": inputs.records,
                  "embeddings": embeddings() if "embeddings" in names else None,
                  "pages": pages() if "pages" in names else None,
                  "given_pages": None if given is None else documents(given)}
        agent = build_agent(inputs.project, values)
        actions.intercept(agent, inputs.project.actions(), inputs.project.agent)  # never run, only proposed
        return agent
    return build
