"""The agent under test: a LangChain agent that answers questions about `tracker` with two tools.

search_docs runs a vector search over the doc pages (k=3, page ids kept) and get_issue looks an issue up.
Models come by name (see providers.py); `python assistant.py "question"` prints one trace.
"""
import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional

HERE = Path(__file__).parent
DEFAULT_MODEL = "gemini-3.8-flash"
DEFAULT_EMBEDDER = "gemini-embedding-2"
K = 3
PROMPT = """You answer questions about `tracker`, an open-source task-tracker CLI.
Use search_docs for questions about how tracker works and get_issue for a numbered issue.
Answer only from what the tools return, in at most three sentences.
If a message needs no lookup, reply without calling a tool."""
# The tool descriptions are what the model reads to choose a tool, so they are hashed with the prompt.
TOOL_DESCRIPTIONS = {
    "search_docs": "Search the tracker documentation and return the three closest pages.",
    "get_issue": "Look up a tracker GitHub issue by number: its title, state and the version that fixed it.",
}
TOOLS = tuple(TOOL_DESCRIPTIONS)
# Each tool's parameters and their types, declared once without LangChain: build_agent's tool functions carry
# exactly these annotations (a test holds them to it), and scoring reads an argument as the tool receives it.
TOOL_PARAMETERS = {"search_docs": {"query": str}, "get_issue": {"number": int}}


def chat_model_name() -> str:
    return os.environ.get("DOCS_MODEL") or DEFAULT_MODEL


def embedder_name() -> str:
    return os.environ.get("DOCS_EMBEDDER") or DEFAULT_EMBEDDER


def page_content(doc: dict) -> str:
    """What is indexed of a page, and what a search returns of it: its title, a newline, its text."""
    return f"{doc['title']}\n{doc['text']}"


def index_pages(docs: list[dict], embedder: str):
    """The vector index search_docs searches: every page embedded with `embedder`, kept by its id."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from harness import providers
    store = InMemoryVectorStore(providers.embedder(embedder))
    store.add_documents([Document(page_content=page_content(d), id=d["id"]) for d in docs])
    return store


def build_agent(docs: list[dict], issues: dict, model: str, embedder: str, pages: Optional[list[dict]] = None):
    """Index the pages with `embedder` and wire both tools into `create_agent` around `model`. With `pages`,
    search_docs returns those pages for any query instead (the counterfactual run: the right pages given)."""
    from langchain.agents import create_agent
    from langchain_core.tools import StructuredTool

    from harness import providers
    store = index_pages(docs, embedder) if pages is None else None
    given = [{"id": d["id"], "text": page_content(d)} for d in (pages or [])[:K]]

    def search_docs(query: str) -> str:
        hits = given if store is None else [{"id": d.id, "text": d.page_content}
                                            for d in store.similarity_search(query, k=K)]
        return json.dumps(hits)

    def get_issue(number: int) -> str:
        issue = issues.get(str(number))
        return json.dumps({"number": number, **issue}) if issue else f"issue {number} does not exist"

    tools = [StructuredTool.from_function(f, name=f.__name__, description=TOOL_DESCRIPTIONS[f.__name__])
             for f in (search_docs, get_issue)]
    return create_agent(providers.chat_model(model), tools=tools, system_prompt=PROMPT)


def run(agent, question: str) -> dict:
    """Run one question and keep the whole trajectory: calls with arguments, outputs, retrieved ids, usage."""
    from langchain_core.messages import AIMessage, ToolMessage

    messages = agent.invoke({"messages": [{"role": "user", "content": question}]})["messages"]
    replies = [m for m in messages if isinstance(m, AIMessage)]
    calls = [{"name": c["name"], "args": c["args"]} for m in replies for c in m.tool_calls]
    outputs = [{"tool": m.name, "content": m.text} for m in messages if isinstance(m, ToolMessage)]
    retrieved = [page["id"] for o in outputs if o["tool"] == "search_docs" for page in json.loads(o["content"])]
    usage = {"input_tokens": 0, "output_tokens": 0}
    for m in replies:
        for field in usage:
            usage[field] += (m.usage_metadata or {}).get(field, 0)
    return {"answer": messages[-1].text, "tool_calls": calls, "tool_outputs": outputs, "retrieved": retrieved,
            "usage": usage}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run the agent once on a question and print its trace as JSON.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"""models, named as in evaluate.py --help:
  DOCS_MODEL     the agent's model (default {DEFAULT_MODEL})
  DOCS_EMBEDDER  the embedder search_docs uses (default {DEFAULT_EMBEDDER})
  offline: DOCS_MODEL=rules DOCS_EMBEDDER=hash python assistant.py "..."

exit codes: 0 done, 2 bad input or a model that cannot be reached""")
    parser.add_argument("question", help="the question to ask, in quotes")
    args = parser.parse_args(argv)
    from harness import providers
    from cassette import printable_stdout
    from harness.dataset import InputError, read

    printable_stdout()
    model, embedder = chat_model_name(), embedder_name()
    try:
        providers.preflight([model, embedder])
        docs, issues = read(HERE / "docs.json"), read(HERE / "issues.json")
    except (providers.ProviderError, InputError) as e:
        print(f"assistant.py: {e}", file=sys.stderr)
        return 2
    print(json.dumps(run(build_agent(docs, issues, model, embedder), args.question), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
