"""The bundled example agent: a LangChain agent that answers questions about `tracker`, an open-source
task-tracker CLI, with three tools, built through the same factory contract as any project's agent.

search_docs runs a vector search over the pages (k=3, page ids kept), get_issue looks an issue up in the
records, and file_bug_report files a bug report (an action: evals.toml declares it, so the harness never runs
it, only records the proposal). evals.toml names `build_agent` as the factory and `rank` as the ladder's view
of its retriever.
`python assistant.py "question"` (or `--project DIR`) prints one trace of a project's agent.
"""
import json
import sys
import threading
from pathlib import Path
from typing import Optional

K = 3
FILED = Path(__file__).with_name("filed-bug-reports.jsonl")  # where file_bug_report files, outside evaluation
PROMPT = """You answer questions about `tracker`, an open-source task-tracker CLI.
Use search_docs for questions about how tracker works and get_issue for a numbered issue.
Use file_bug_report only when the user asks you to file a bug report; the user confirms it before it is filed.
Answer only from what the tools return, in at most three sentences.
If a message needs no lookup, reply without calling a tool."""


def page_content(page) -> str:
    """What is indexed of a page, and what a search returns of it: its title, a newline, its text."""
    return f"{page.metadata['title']}\n{page.page_content}"


_INDEXES: dict = {}
_BUILDING = threading.Lock()


def index(pages: list, embeddings):
    """The vector index search_docs searches: every page embedded, kept by its id; built once per embedder
    and pages, so ranking every case's question embeds the pages once."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    key = (id(embeddings), tuple((p.id, p.page_content) for p in pages))
    with _BUILDING:  # cases are ranked in parallel: the first builds the index, the others wait for it
        if key not in _INDEXES:
            store = InMemoryVectorStore(embeddings)
            store.add_documents([Document(page_content=page_content(p), id=p.id) for p in pages])
            _INDEXES[key] = (embeddings, store)  # the embedder is kept, so its id is not reused
    return _INDEXES[key][1]


def build_agent(model, embeddings, pages: list, records: dict, given_pages: Optional[list] = None):
    """The agent: `model` with search_docs over `pages` (or exactly `given_pages`, for the counterfactual run)
    and get_issue over the get_issue records."""
    from langchain.agents import create_agent
    from langchain_core.tools import StructuredTool

    store = index(pages, embeddings) if given_pages is None else None
    issues = records["get_issue"]

    def search_docs(query: str) -> str:
        hits = given_pages[:K] if store is None else store.similarity_search(query, k=K)
        return json.dumps([{"id": d.id, "text": d.page_content if store else page_content(d)} for d in hits])

    def get_issue(number: int) -> str:
        issue = issues.get(str(number))
        return json.dumps({"number": number, **issue}) if issue else f"issue {number} does not exist"

    def file_bug_report(title: str, body: str) -> str:
        with open(FILED, "a", encoding="utf-8") as out:  # the side effect an evaluation must never cause
            out.write(json.dumps({"title": title, "body": body}) + "\n")
        return f"filed bug report {title!r}"

    tools = [StructuredTool.from_function(search_docs, description="Search the tracker documentation and return "
                                                                   "the three closest pages."),
             StructuredTool.from_function(get_issue, description="Look up a tracker GitHub issue by number: its "
                                                                 "title, state and the version that fixed it."),
             StructuredTool.from_function(file_bug_report, description="File a bug report about tracker: open "
                                                                       "a new issue with a title and a body.")]
    return create_agent(model, tools=tools, system_prompt=PROMPT)


def rank(query: str, embeddings, pages: list) -> list[str]:
    """Every page id, closest first, as search_docs ranks them (its top k is this ranking's first k)."""
    return [d.id for d in index(pages, embeddings).similarity_search(query, k=len(pages))]


def main(argv: Optional[list[str]] = None) -> int:
    """`python assistant.py [--project DIR] "question"`: one trace of a project's agent (whichstage/cli/ask.py)."""
    from whichstage.cli import ask

    return ask.main(argv, description="Run a project's agent once on a question and print its trace as JSON.")


if __name__ == "__main__":
    sys.exit(main())
