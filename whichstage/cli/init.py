"""`python evaluate.py init DIR`: write a minimal project that runs at once with the offline backends.

It holds an evals.toml, an agent module with a retriever tool and a lookup tool, three markdown pages, a
records file and one case per behaviour (answer, abstain, chitchat). DIR must be new or empty; the project
is written beside it first and moved into place whole.
"""
import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional

from whichstage._util import console
from whichstage._util.ending import ended
from whichstage.model.errors import InputError

EVALS_TOML = '''# The project: its agent, its cases and pages, and the role of each tool (see the README).
agent = "agent:build"        # the factory: module:function, importable from this folder
cases = "cases.json"
pages = "pages/*.md"         # one page per markdown file; its id is its path, its title its first heading
k = 2                        # retrieval is scored at k

[tools.search_help]
role = "retriever"           # its output is ranked pages

[tools.get_order]
role = "lookup"              # it reads the record its `order_id` argument names
records = "orders.json"
key = "order_id"
'''

AGENT = '''"""The agent under test: a LangChain agent with a help-page search and an order lookup.

The harness calls `build` with the parameters it names: the chat model, the embeddings, the pages as
Documents, the records of each lookup tool, and given_pages (the pages the counterfactual run hands the
retriever instead of searching).
"""
import json
from typing import Optional

PROMPT = """You answer questions about `Acme Notes`, a note-taking app.
Use search_help for questions about the app and get_order for an order such as ORD-1001.
Answer only from what the tools return."""


def build(model, embeddings, pages: list, records: dict, given_pages: Optional[list] = None):
    from langchain.agents import create_agent
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import create_retriever_tool, tool
    from langchain_core.vectorstores import InMemoryVectorStore

    if given_pages is None:
        store = InMemoryVectorStore(embeddings)
        store.add_documents(pages)
        retriever = store.as_retriever(search_kwargs={"k": 2})
    else:
        class Given(BaseRetriever):
            def _get_relevant_documents(self, query, *, run_manager=None):
                return list(given_pages)
        retriever = Given()
    search_help = create_retriever_tool(retriever, "search_help", "Search the Acme Notes help pages.",
                                        response_format="content_and_artifact")
    orders = records["get_order"]

    @tool
    def get_order(order_id: str) -> str:
        """Look up an order by its id, such as ORD-1001: its plan and its status."""
        found = orders.get(order_id.strip().upper())
        return json.dumps({"order": order_id, **found}) if found else f"no order {order_id}"

    return create_agent(model, tools=[search_help, get_order], system_prompt=PROMPT)
'''

PAGES = {
    "pages/sync.md": "# Syncing notes\n\nAcme Notes syncs every note to your account within a minute of a change. "
                     "Sync needs an internet connection; notes edited offline sync when the app is back online.\n",
    "pages/export.md": "# Exporting notes\n\nChoose File, then Export, to save every note as a markdown file. "
                       "The export keeps tags as front matter and images as separate files.\n",
    "pages/plans.md": "# Plans\n\nThe Free plan holds 500 notes. The Pro plan has no note limit and adds version "
                      "history for 30 days.\n",
}

ORDERS = {"ORD-1001": {"plan": "Pro", "status": "active"}, "ORD-1002": {"plan": "Pro", "status": "refunded"}}

CASES = {"name": "acme-notes", "version": 1, "cases": [
    {"id": "offline-edits", "question": "Do notes I edit offline get synced?",
     "expected_docs": ["pages/sync.md"], "expected_tools": ["search_help"],
     "reference": "Yes: notes edited offline sync when the app is back online."},
    {"id": "order-status", "question": "What is the status of order ORD-1002?",
     "expected_tools": ["get_order"], "expected_args": {"get_order": {"order_id": "ORD-1002"}},
     "reference": "Order ORD-1002, a Pro plan, was refunded."},
    {"id": "printing", "question": "Can I print a note to a thermal printer?", "expected_behavior": "abstain",
     "expected_tools": ["search_help"], "reference": "The help pages do not say."},
    {"id": "hello", "question": "Hello!", "expected_behavior": "chitchat", "reference": "Hello!"},
]}


def files() -> dict[str, str]:
    """Every file of a new project, by its path in the project."""
    return {"evals.toml": EVALS_TOML, "agent.py": AGENT, **PAGES,
            "orders.json": json.dumps(ORDERS, indent=2) + "\n", "cases.json": json.dumps(CASES, indent=2) + "\n"}


def write(folder: Path) -> None:
    """Write the project into `folder`, which must not exist or be empty; all or nothing."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{folder}: not empty: init writes a new project into a new or empty folder")
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".tmp"))
    try:
        for relative, text in files().items():
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            (staging / relative).write_text(text, encoding="utf-8")
        os.chmod(staging, 0o755)
        if folder.exists():
            folder.rmdir()
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def main(argv: Optional[list[str]] = None) -> int:
    prog = console.name("evaluate.py")  # how the user called this command, for its messages
    parser = argparse.ArgumentParser(prog=f"{prog} init", description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("folder", metavar="DIR", help="the new project's folder (new or empty)")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    try:
        write(folder)
    except ValueError as e:  # not a new or empty folder
        return ended(prog, InputError(str(e)))
    except OSError as e:
        e.filename = e.filename or str(folder)
        return ended(prog, e)
    run = "whichstage run" if prog == "whichstage" else "python evaluate.py"  # as the user called init
    print(f"wrote a project to {folder}; run it with the offline backends:\n"
          f"  DOCS_MODEL=rules DOCS_EMBEDDER=hash DOCS_JUDGE=lexical {run} --project {folder} --live")
    return 0
