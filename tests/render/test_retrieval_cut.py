"""Where k cuts a search: a project of the tests' own (`init`, then a router manual whose search returns four
chunks of four pages, the expected page fourth, scored at k = 3), recorded with the offline backends. The
reason says where the page ranked; the markdown, the HTML page and `--show` draw the cut and never mark the
page under it as an expected page found; `--show` gives each chunk on its own and what its text leaves out."""
import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from whichstage.cli import run as evaluate
from conftest import OFFLINE

# A search that returns one chunk of each page in a fixed order, whatever the query: setup.md comes fourth.
AGENT = '''from typing import Optional

ORDER = ["help/lights.md", "help/reset.md", "help/wifi.md", "help/setup.md"]


def build(model, pages: list, records: dict, given_pages: Optional[list] = None):
    from langchain.agents import create_agent
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import create_retriever_tool

    by_id = {page.id: page for page in pages}

    class Chunks(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager=None):
            if given_pages is not None:
                return list(given_pages)
            return [Document(page_content=by_id[p].page_content, id=f"{p}#0") for p in ORDER]

    search = create_retriever_tool(Chunks(), "search_help", "Search the router help pages.",
                                   response_format="content_and_artifact")
    return create_agent(model, tools=[search], system_prompt="You answer questions about the router.")
'''

EVALS_TOML = '''agent = "agent:build"
cases = "cases.json"
pages = "help/*.md"
k = 3

[tools.search_help]
role = "retriever"
page_pattern = '^(.*)#\\d+$'
'''

SETUP = ("# Setting up\n\nPlug the router into the modem with the yellow cable, then into power. "
         + "Wait for the status light to turn solid green before you connect a laptop to the router. " * 12)
PAGES = {
    "help/setup.md": SETUP,
    "help/lights.md": "# Lights\n\nA blinking amber light means the router has no internet.\n",
    "help/reset.md": "# Reset\n\nHold the reset button for ten seconds to restore the factory settings.\n",
    "help/wifi.md": "# Wi-Fi\n\nThe Wi-Fi password is printed under the router.\n",
}
CASES = {"name": "router", "version": 1, "cases": [
    {"id": "setup", "question": "How do I set up the router with the modem?", "expected_docs": ["help/setup.md"],
     "expected_tools": ["search_help"], "reference": "Plug it into the modem with the yellow cable."}]}
RUN = "router+rules+hash+lexical"
MISSED = ("missed help/setup.md (ranked 4th, below k = 3); retrieved in the top 3: help/lights.md, help/reset.md, "
          "help/wifi.md")


@pytest.fixture(scope="module")
def router(tmp_path_factory) -> Path:
    """The router project, recorded live with the offline backends, then replayed."""
    folder = tmp_path_factory.mktemp("router") / "router"
    assert evaluate.main(["init", str(folder)]) == 0
    shutil.rmtree(folder / "pages")
    (folder / "orders.json").unlink()
    for name, text in {"agent.py": AGENT, "evals.toml": EVALS_TOML, "cases.json": json.dumps(CASES), **PAGES}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in OFFLINE.items():
            patch.setenv(name, value)
        assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
        for name in OFFLINE:
            patch.delenv(name)
        assert evaluate.main(["--project", str(folder), "--quiet"]) == 0
    return folder


@pytest.fixture(scope="module")
def shown(router) -> str:
    """`--show setup`, as the terminal prints it."""
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert evaluate.main(["--project", str(router), "--show", "setup"]) == 0
    return printed.getvalue()


def chunk_body(shown: str, number: int) -> list[str]:
    """The lines `--show` prints between a chunk's opening and closing delimiters."""
    lines = shown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"     --- chunk {number} of "))
    return lines[start + 1:lines.index(f"     --- end of chunk {number} ---")]


def row(folder: Path) -> dict:
    found, = json.loads((folder / "runs" / f"{RUN}.json").read_text())["rows"]
    return found


def test_the_expected_page_fourth_fails_retrieval_at_k_3(router):
    retrieval = row(router)["retrieval"]
    assert (retrieval["hit"], retrieval["missed"], retrieval["k"]) == (False, ["help/setup.md"], 3)


def test_the_markdown_reason_says_the_page_ranked_4th_below_k(router):
    markdown = (router / "runs" / f"{RUN}.md").read_text()
    assert f"- `setup` **retrieval**: {MISSED}; with the expected pages retrieval passes and the case then passes" in markdown


def test_the_html_page_gives_the_same_reason(router):
    page = (router / "runs" / f"{RUN}.html").read_text()
    assert f"<strong>Why:</strong> {MISSED}</p>" in page


def test_the_html_page_draws_the_cut_above_the_fourth_page(router):
    page = (router / "runs" / f"{RUN}.html").read_text()
    top, cut, below = re.search(r"<ol>(.*?)</ol><p class=\"cut\">(.*?)</p><ol start=\"4\" class=\"below-k\">(.*?)</ol>",
                                page).groups()
    assert re.findall(r"<li[^>]*>(.*?)</li>", top) == ["help/lights.md", "help/reset.md", "help/wifi.md"]
    assert cut == "&#8212; k = 3: below this line is not scored &#8212;"
    assert below == '<li class="below-k missed">help/setup.md &#10007; expected, below k = 3: not scored</li>'


def test_the_html_page_never_marks_the_page_below_k_as_an_expected_page_found(router):
    page = (router / "runs" / f"{RUN}.html").read_text()
    assert '<li class="expected">help/setup.md' not in page and "&#10003; expected" not in page


def test_show_gives_the_same_reason(shown):
    assert f"first failure: retrieval: {MISSED}; with the expected pages retrieval passes and the case then passes" in shown


def test_show_draws_the_cut_above_the_fourth_page(shown):
    at = shown.index("     pages: ")
    assert shown[at:].splitlines()[:3] == [
        "     pages: 1. help/lights.md, 2. help/reset.md, 3. help/wifi.md",
        "     --- k = 3: below this line is not scored ---",
        "            4. help/setup.md (expected, below k = 3: not scored)"]


def test_show_gives_each_chunk_between_delimiters_with_its_rank_and_page(shown):
    heads = re.findall(r"^     --- (chunk .*|end of chunk \d) ---$", shown, re.M)
    assert heads == ["chunk 1 of 4: rank 1, page help/lights.md, id help/lights.md#0", "end of chunk 1",
                     "chunk 2 of 4: rank 2, page help/reset.md, id help/reset.md#0", "end of chunk 2",
                     "chunk 3 of 4: rank 3, page help/wifi.md, id help/wifi.md#0", "end of chunk 3",
                     "chunk 4 of 4: rank 4, page help/setup.md, id help/setup.md#0 (expected, below k = 3: not "
                     "scored)", "end of chunk 4"]


def test_show_gives_a_short_chunk_whole(shown):
    assert chunk_body(shown, 2) == ["       # Reset Hold the reset button for ten seconds to restore the factory "
                                    "settings."]


def test_show_says_how_much_of_a_long_chunk_it_leaves_out(shown):
    *text, note = chunk_body(shown, 4)
    flat, left = " ".join(SETUP.split()), int(re.fullmatch(r"       \.\.\. \[(\d+) more characters\]", note)[1])
    assert left > 0 and " ".join(" ".join(text).split()) + " " + flat[-left:] == flat
