"""The Sunbeam S5 support assistant: a LangChain agent with a manual search, a ticket lookup and a calculator.

`build` is the factory evals.toml names: its retriever is `create_retriever_tool` with
response_format="content_and_artifact", so the pages it found travel as Documents. `build_plain` is the
same agent whose search formats the pages as text itself (the harness reads them through the retriever
callbacks) and which takes no `given_pages`.
"""
from typing import Optional

PROMPT = """You are the support assistant for `Sunbeam S5`, a solar inverter.
Use search_manual for questions about the inverter, get_ticket for a support ticket such as INV-1001, and
energy to work out kilowatt-hours. Answer only from what the tools return."""
K = 2


def retriever(pages: list, embeddings, given_pages: Optional[list] = None):
    """A vector retriever over the pages, or one that returns exactly `given_pages`."""
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.vectorstores import InMemoryVectorStore

    if given_pages is not None:
        class Given(BaseRetriever):
            def _get_relevant_documents(self, query, *, run_manager=None):
                return list(given_pages)
        return Given()
    store = InMemoryVectorStore(embeddings)
    store.add_documents(pages)
    return store.as_retriever(search_kwargs={"k": K})


def ticket_tool(records: dict):
    import json

    from langchain_core.tools import tool

    tickets = records["get_ticket"]

    @tool
    def get_ticket(ticket_id: str) -> str:
        """Look up a support ticket by its id, such as INV-1001: its title, status and resolution."""
        found = tickets.get(ticket_id.strip().upper())
        return json.dumps({"ticket": ticket_id, **found}) if found else f"no ticket {ticket_id}"
    return get_ticket


def energy_tool():
    from langchain_core.tools import tool

    @tool
    def energy(watts: float, hours: float) -> str:
        """Work out the energy in kilowatt-hours of a load of `watts` running for `hours`."""
        return f"{watts * hours / 1000:g} kWh"
    return energy


def build(model, embeddings, pages: list, records: dict, given_pages: Optional[list] = None):
    from langchain.agents import create_agent
    from langchain_core.tools import create_retriever_tool

    search = create_retriever_tool(retriever(pages, embeddings, given_pages), "search_manual",
                                   "Search the Sunbeam S5 manual and return the closest pages.",
                                   response_format="content_and_artifact")
    return create_agent(model, tools=[search, ticket_tool(records), energy_tool()], system_prompt=PROMPT)


def build_plain(model, embeddings, pages: list, records: dict):
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    found = retriever(pages, embeddings)

    @tool
    def search_manual(query: str) -> str:
        """Search the Sunbeam S5 manual and return the closest pages."""
        return "\n\n".join(d.page_content for d in found.invoke(query))

    return create_agent(model, tools=[search_manual, ticket_tool(records), energy_tool()], system_prompt=PROMPT)
