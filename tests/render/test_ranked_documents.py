"""What `--show` and the HTML report list of a search agrees with what is scored: its documents at the ranks
scored (two chunks of one page once, the page counted beside them), each search ranked from one, and each
search cut where k cuts it, its chunks below k marked as not scored."""
import re

from conftest import CHUNKED, chunked_row as row_of, shown_chunked as shown
from whichstage.render import case_text as show
from whichstage.render.html_cases import pages as _pages


def test_show_lists_a_searchs_documents_at_the_ranks_scored():
    pages, = [line.strip() for line in shown(row_of()).splitlines() if line.strip().startswith("pages:")]
    assert pages == ("pages: 1. guides/cancelling.md (2 chunks), 2. guides/returns.md, "
                     "3. guides/damage.md (expected)")


def test_the_html_lists_a_searchs_documents_at_the_ranks_scored():
    items = re.findall(r"<li[^>]*>(.*?)</li>", _pages(row_of()))
    assert items == ["guides/cancelling.md (2 chunks)", "guides/returns.md", "guides/damage.md &#10003; expected"]


def test_the_html_ranks_each_search_from_one():
    html = _pages(row_of(searches=[["guides/returns.md"], ["guides/damage.md", "guides/returns.md"]],
                         retrieved=["guides/returns.md", "guides/damage.md", "guides/returns.md"]))
    lists = re.findall(r"<p>Search (\d):</p><ol>(.*?)</ol>", html)
    assert [(n, re.findall(r"<li[^>]*>(.*?)</li>", items)) for n, items in lists] == [
        ("1", ["guides/returns.md"]), ("2", ["guides/damage.md &#10003; expected", "guides/returns.md"])]


def cut_row(searches: list[list[str]], k: int = 2) -> dict:
    """row_of, scored at k over `searches`, expecting guides/damage.md."""
    retrieval = {"hit": False, "recall": 0.0, "reciprocal_rank": 0.0, "missed": ["guides/damage.md"], "k": k}
    return row_of(searches=searches, retrieved=[p for s in searches for p in s], retrieval=retrieval)


def test_the_html_cuts_each_search_at_k_on_its_own():
    html = _pages(cut_row([["guides/returns.md"], CHUNKED]))
    first, second = re.findall(r"<p>Search (\d):</p>(.*?)(?=<p>Search|$)", html)
    assert first == ("1", "<ol><li>guides/returns.md</li></ol>") and 'class="cut"' in second[1]
    assert re.findall(r'<ol start="3" class="below-k">(.*?)</ol>', html) == [
        '<li class="below-k missed">guides/damage.md &#10007; expected, below k = 2: not scored</li>']


def test_the_html_draws_no_cut_where_k_is_larger_than_the_search():
    assert 'class="cut"' not in _pages(cut_row([CHUNKED], k=3))


def test_show_marks_only_the_chunks_of_pages_below_k_as_not_scored():
    chunks = [{"id": f"c{n}", "page": page, "text": f"chunk {n}"} for n, page in enumerate(CHUNKED + CHUNKED[:1])]
    row = cut_row([[c["page"] for c in chunks]])
    trace = {"tool_calls": [{"name": "lookup_guides", "args": {"query": "train"}}],
             "tool_outputs": [{"tool": "lookup_guides", "content": "five chunks"}], "answer": "No."}
    view = {"searches": row["searches"], "chunks": [chunks], "retrievers": ["lookup_guides"]}
    heads = re.findall(r"--- (chunk \d of 5: .*) ---", show.text(row, trace, view, "rules"))
    assert [h.partition(": ")[2] for h in heads] == [
        "rank 1, page guides/cancelling.md, id c0", "rank 1, page guides/cancelling.md, id c1",
        "rank 2, page guides/returns.md, id c2",
        "rank 3, page guides/damage.md, id c3 (expected, below k = 2: not scored)",
        "rank 1, page guides/cancelling.md, id c4"]
