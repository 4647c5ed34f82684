"""A retrieval failure's reason where k cuts a search (stage_view.retrieval_reason, the one wording every
renderer reads): a missed page some search returned below k says where it ranked, over documents; one no
search returned says so; where no search was cut, or the row predates rows holding k, the reason is as before."""
from whichstage.project.config import ToolRole
from whichstage.render.row_view import failure_reason
from whichstage.scoring.retrieval import retrieval_scores
from whichstage.agent.reading import read

TOP = ["help/lights.md", "help/reset.md", "help/wifi.md"]


def failed(searches: list[list[str]], expected: list[str], k: int = 3) -> dict:
    """A row failing at retrieval, scored as case_row scores it (its retrieval holding k)."""
    return {"first_failure": "retrieval", "searches": searches, "retrieved": [p for s in searches for p in s],
            "retrieval": {**retrieval_scores(searches, expected, k), "k": k}}


def test_a_page_ranked_below_k_says_its_rank():
    row = failed([[*TOP, "help/setup.md"]], ["help/setup.md"])
    assert failure_reason(row) == ("missed help/setup.md (ranked 4th, below k = 3); retrieved in the top 3: "
                                   "help/lights.md, help/reset.md, help/wifi.md")


def test_two_chunks_of_one_page_rank_the_page_below_them_once():
    row = failed([[TOP[0], TOP[0], *TOP[1:], "help/setup.md"]], ["help/setup.md"])
    assert "missed help/setup.md (ranked 4th, below k = 3)" in failure_reason(row)


def test_of_several_searches_the_reason_names_the_best_rank_and_the_search_that_gave_it():
    row = failed([[*TOP, "help/a.md", "help/setup.md"], ["help/b.md", "help/c.md", "help/d.md", "help/setup.md"]],
                 ["help/setup.md"])
    assert failure_reason(row).startswith("missed help/setup.md (ranked 4th in search 2, below k = 3); "
                                          "retrieved in the top 3: help/lights.md, help/reset.md, help/wifi.md, "
                                          "help/b.md, help/c.md, help/d.md")


def test_where_k_cut_a_search_a_page_no_search_returned_says_not_retrieved():
    row = failed([[*TOP, "help/setup.md"]], ["help/setup.md", "help/gone.md"])
    assert failure_reason(row).startswith("missed help/gone.md (not retrieved), help/setup.md (ranked 4th, below "
                                          "k = 3); ")


def test_where_no_search_reaches_k_the_reason_is_as_before():
    row = failed([TOP, ["help/setup.md"]], ["help/gone.md"])
    assert failure_reason(row) == ("missed help/gone.md; retrieved help/lights.md, help/reset.md, help/wifi.md, "
                                   "help/setup.md")


def test_k_larger_than_the_search_keeps_the_reason_as_before():
    row = failed([[*TOP, "help/setup.md"]], ["help/gone.md"], k=5)
    assert failure_reason(row) == ("missed help/gone.md; retrieved help/lights.md, help/reset.md, help/wifi.md, "
                                   "help/setup.md")


def test_a_row_saved_before_rows_held_k_keeps_the_reason_as_before():
    row = failed([[*TOP, "help/setup.md"]], ["help/setup.md"])
    del row["retrieval"]["k"]
    assert failure_reason(row) == ("missed help/setup.md; retrieved help/lights.md, help/reset.md, help/wifi.md, "
                                   "help/setup.md")


def test_chunks_mapped_to_pages_by_their_metadata_rank_the_page_not_the_chunk():
    trace = {"tool_calls": [{"name": "search", "args": {"query": "q"}}], "tool_outputs": [{
        "tool": "search", "content": "", "artifact": [{"id": f"c{n}", "text": page, "metadata": {"source": page}}
                                                      for n, page in enumerate([TOP[0], *TOP, "help/setup.md"])]}]}
    role = {"search": ToolRole("search", "retriever", page="metadata.source")}
    searches = read(trace, role, {*TOP, "help/setup.md"})["searches"]
    reason = failure_reason(failed(searches, ["help/setup.md"]))
    assert reason.startswith("missed help/setup.md (ranked 4th, below k = 3)")
