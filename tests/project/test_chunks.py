"""Documents, not chunks: a retriever that returns chunks declares how a chunk names its page (`page`, a
dotted path into the item, or `page_pattern`, a regular expression over its id), and retrieval is scored on
pages while the judge reads the chunks. End to end on a project of the tests' own (`init`, then a kettle
manual whose search splits every page into sentence chunks), and the rule alone on recorded traces."""
import json
import shutil
from pathlib import Path

import pytest

from whichstage.cli import run as evaluate
from conftest import OFFLINE, offline_inputs, refusal
from whichstage.project.config import ToolRole
from whichstage.agent.reading import PageRuleError, Unreadable, read

# A search that ranks sentence chunks by the question's words (the best three that share two or more); `ID` and `EXTRA` say how a chunk is named.
AGENT = '''import re
from typing import Optional

ID = {chunk_id!r}  # the chunk's Document.id, from its page's id and its number
EXTRA = {extra!r}  # metadata every chunk carries beside its page's


def chunks_of(page) -> list:
    from langchain_core.documents import Document

    parts = re.split(r"(?<=\\.)\\s+(?=[A-Z])", page.page_content.strip())
    return [Document(page_content=part, id=ID.format(page=page.id, n=n),
                     metadata={{"source": page.id, **EXTRA}}) for n, part in enumerate(parts)]


def rank(question: str, pages: list) -> list:
    """Every chunk, best first: the search's ranking, for the retrieval ladder."""
    asked = set(re.findall(r"\\w+", question.lower()))
    score = lambda c: -len(asked & set(re.findall(r"\\w+", c.page_content.lower())))
    return sorted([c for p in pages for c in chunks_of(p)], key=score)


def build(model, pages: list, records: dict, given_pages: Optional[list] = None):
    from langchain.agents import create_agent
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import create_retriever_tool

    class Chunks(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager=None):
            if given_pages is not None:
                return list(given_pages)
            asked = set(re.findall(r"\\w+", query.lower()))
            return [c for c in rank(query, pages) if len(asked & set(re.findall(r"\\w+", c.page_content.lower()))) > 1][:3]

    search = create_retriever_tool(Chunks(), "search_manual", "Search the Zephyr kettle manual.",
                                   response_format="content_and_artifact")
    return create_agent(model, tools=[search], system_prompt="You answer questions about the Zephyr kettle.")
'''

EVALS_TOML = '''agent = "agent:build"
rank = "agent:rank"
cases = "cases.json"
pages = "manual/*.md"
k = 2

[tools.search_manual]
role = "retriever"
{rule}
'''

MANUAL = {
    "manual/setup.md": "# Setting up\n\nFill the Zephyr kettle to the MAX line before the first boil. "
                       "Descale the Zephyr kettle every month with citric acid.\n",
    "manual/warranty.md": "# Warranty\n\nEvery kettle has a two year warranty.\n",
    "manual/lid.md": "# The lid\n\nPress the button on the handle to open the lid.\n",
}

CASES = {"name": "zephyr", "version": 1, "cases": [
    # Two chunks of setup.md outrank warranty.md's: counted once, warranty.md is the second page within k = 2.
    {"id": "fill-and-warranty", "question": "How do I fill and descale the Zephyr kettle, and its warranty?",
     "expected_docs": ["manual/setup.md", "manual/warranty.md"], "expected_tools": ["search_manual"],
     "reference": "Fill to the MAX line, descale monthly with citric acid; a two year warranty."},
    # Its words find setup.md's chunks, not lid.md: retrieval fails and the counterfactual hands it lid.md.
    {"id": "lid", "question": "What should I fill the Zephyr kettle with before the first boil?",
     "expected_docs": ["manual/lid.md"], "expected_tools": ["search_manual"],
     "reference": "Press the button on the handle."},
]}

RULES = {  # the way the agent names its chunks, and the rule in evals.toml that maps them to pages
    "ids": ("{page}#{n}", {}, "page_pattern = '^(.*)#\\d+$'"),
    "metadata": ("chunk-{n}-of-{page}", {"kind": "chunk"}, 'page = "metadata.source"'),
}
RUN = "zephyr+rules+hash+lexical"


def chunked_project(folder: Path, naming: str) -> Path:
    """`init` a project, then make it a kettle manual searched in chunks named as `naming` says."""
    assert evaluate.main(["init", str(folder)]) == 0
    shutil.rmtree(folder / "pages")
    (folder / "orders.json").unlink()
    chunk_id, extra, rule = RULES[naming]
    files = {"agent.py": AGENT.format(chunk_id=chunk_id, extra=extra), "evals.toml": EVALS_TOML.format(rule=rule),
             "cases.json": json.dumps(CASES), **MANUAL}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module", params=sorted(RULES))
def kettle(request, tmp_path_factory) -> Path:
    """The chunked project, recorded live with the offline backends, then replayed; once per naming, for the
    tests that only read it."""
    folder = chunked_project(tmp_path_factory.mktemp("kettle") / "kettle", request.param)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in OFFLINE.items():
            patch.setenv(name, value)
        assert evaluate.main(["--project", str(folder), "--live", "--quiet", "--split", "all"]) == 0
        for name in OFFLINE:
            patch.delenv(name)
        assert evaluate.main(["--project", str(folder), "--quiet", "--split", "all"]) == 0
    return folder


def rows(folder: Path) -> dict:
    return rows_of(folder, ".all")


def rows_of(folder: Path, split: str) -> dict:
    found = json.loads((folder / "runs" / f"{RUN}{split}.json").read_text())
    return {r["id"]: r for r in found["rows"]}


def recorded_view(folder: Path, case: str) -> tuple[dict, dict]:
    """A case's recorded trace, and that trace read by role as the scoring reads it."""
    trace = json.loads((folder / "recordings" / f"{RUN}.json").read_text())["entries"][f"agent/{case}"]["value"]
    return trace, offline_inputs(folder).view(trace)


def test_two_chunks_of_one_page_in_one_search_score_the_page_once(kettle):
    row = rows(kettle)["fill-and-warranty"]
    assert row["retrieved"][:2] == ["manual/setup.md", "manual/setup.md"]  # the search's chunks, by page
    assert row["retrieval"] == {"hit": True, "recall": 1.0, "reciprocal_rank": 1.0, "missed": [], "k": 2}


def test_the_ladder_ranks_the_pages_of_a_rank_function_that_ranks_chunks(kettle):
    ladder = rows(kettle)["fill-and-warranty"]["ladder"]["vector"]
    assert ladder["ranking"] == ["manual/setup.md", "manual/warranty.md", "manual/lid.md"]
    assert (ladder["hit"], ladder["recall"], ladder["reciprocal_rank"]) == (True, 1.0, 1.0)


def test_the_judge_reads_each_chunk_as_the_agent_saw_it(kettle):
    trace, view = recorded_view(kettle, "fill-and-warranty")
    chunks = trace["tool_outputs"][0]["artifact"]
    assert len(chunks) == 3 and view["context"] == [c["text"] for c in chunks]
    assert view["context"][1:] == ["Descale the Zephyr kettle every month with citric acid.",
                                   "# Warranty\n\nEvery kettle has a two year warranty."]


def test_a_retrieval_failure_of_a_chunked_agent_gets_its_counterfactual(kettle):
    row = rows(kettle)["lid"]
    assert row["first_failure"] == "retrieval" and row["retrieval"]["missed"] == ["manual/lid.md"]
    assert row["counterfactual"]["first_failure"] not in (None, "retrieval", "error") or row["counterfactual"]["fixed"]


def test_without_its_page_rule_a_chunked_search_is_an_error_naming_the_chunk(tmp_path, monkeypatch):
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    folder = chunked_project(tmp_path / "kettle", "ids")
    config = folder / "evals.toml"
    config.write_text(config.read_text().replace("page_pattern = '^(.*)#\\d+$'", "").replace('rank = "agent:rank"', ""))
    assert evaluate.main(["--project", str(folder), "--live", "--quiet", "--split", "all"]) == 3  # incomplete: cases errored
    assert "search_manual returned page 'manual/setup.md#0', which is not in the project's pages" in \
        rows(folder)["fill-and-warranty"]["error"]


# ---- the rule alone, on a recorded trace ------------------------------------------------------------------

CORPUS = {"manual/setup.md", "manual/lid.md"}


def searches(items: list[dict], content: str = "", **rule: str) -> list[list[str]]:
    trace = {"tool_calls": [{"name": "search", "args": {"query": "q"}}],
             "tool_outputs": [{"tool": "search", "content": content, "artifact": items}]}
    return read(trace, {"search": ToolRole("search", "retriever", **rule)}, CORPUS)["searches"]


def test_a_page_pattern_maps_each_chunk_id_to_its_first_group():
    items = [{"id": "manual/setup.md#2", "text": "a"}, {"id": "manual/lid.md#0", "text": "b"}]
    assert searches(items, page_pattern=r"^(.*)#\d+$") == [["manual/setup.md", "manual/lid.md"]]


def test_an_id_the_page_pattern_does_not_match_is_a_whole_page():
    items = [{"id": "manual/setup.md", "text": "a"}, {"id": "manual/lid.md#0", "text": "b"}]
    assert searches(items, page_pattern=r"^(.*)#\d+$") == [["manual/setup.md", "manual/lid.md"]]


def test_a_page_path_reads_the_chunks_metadata():
    items = [{"id": "9f1c", "text": "a", "metadata": {"source": "manual/lid.md", "start": 0}}]
    assert searches(items, page="metadata.source") == [["manual/lid.md"]]


def test_a_page_path_reads_a_json_listed_item():
    trace = {"tool_calls": [{"name": "search", "args": {}}], "tool_outputs": [
        {"tool": "search", "content": json.dumps([{"id": "c1", "text": "a", "doc": {"path": "manual/lid.md"}}])}]}
    role = {"search": ToolRole("search", "retriever", page="doc.path")}
    assert read(trace, role, CORPUS)["searches"] == [["manual/lid.md"]]


def test_a_chunk_of_an_unknown_page_is_bad_input_naming_the_field_the_chunk_and_its_page():
    with pytest.raises(PageRuleError) as caught:
        searches([{"id": "manual/gone.md#1", "text": "a"}], page_pattern=r"^(.*)#\d+$")
    assert str(caught.value) == ("evals.toml: tools.search.page_pattern: '^(.*)#\\\\d+$' maps no page for the chunk "
                                 "'manual/gone.md#1' ('a') that search returned: it names page 'manual/gone.md', which "
                                 "is not one of the project's 2 pages (such as 'manual/lid.md')")


def test_a_chunk_recorded_without_the_metadata_its_rule_names_says_to_record_it_again():
    with pytest.raises(Unreadable, match=r"nothing at 'metadata\.source' .*record it again with --live"):
        searches([{"id": "9f1c", "text": "a"}], page="metadata.source")


# ---- a bad rule: one line naming evals.toml and the field ---------------------------------------------------

@pytest.mark.parametrize("rule, message", [
    ("page = 'metadata..source'", "evals.toml: tools.search_manual.page: 'metadata..source' is not a dotted path"),
    ("page = '^(.*)#\\d+$'", "evals.toml: tools.search_manual.page: '^(.*)#\\\\d+$' is not a dotted path"),
    ("page = 3", "evals.toml: tools.search_manual.page: expected a dotted path"),
    ("page_pattern = '(unclosed'", "evals.toml: tools.search_manual.page_pattern: not a regular expression"),
    ("page = 'metadata.source'\npage_pattern = '^(.*)#'", "evals.toml: tools.search_manual.page: set with "
                                                           "page_pattern"),
])
def test_a_bad_page_rule_is_refused_in_one_line(tmp_path, rule, message):
    folder = chunked_project(tmp_path / "kettle", "ids")
    (folder / "evals.toml").write_text(EVALS_TOML.format(rule=rule))
    assert refusal(folder).startswith(message)


def test_a_bad_page_rule_exits_2_and_writes_nothing(tmp_path, capsys):
    folder = chunked_project(tmp_path / "kettle", "ids")
    (folder / "evals.toml").write_text(EVALS_TOML.format(rule="page = 'metadata/source'"))
    assert evaluate.main(["--project", str(folder), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "evals.toml: tools.search_manual.page:" in err
    assert not (folder / "runs").exists() and not (folder / "recordings").exists()


# ---- the chunked agent docs/projects.md shows, as written -------------------------------------------------

def test_the_documented_chunked_agent_scores_its_pages_once(tmp_path, monkeypatch):
    """docs/projects.md's chunked agent and its rule, on pages of two paragraphs each."""
    import re

    section = (Path(__file__).parents[2] / "docs" / "projects.md").read_text() \
        .split("## A retriever of chunks", 1)[1].split("\n## ", 1)[0]
    python, = re.findall(r"```python\n(.*?)```", section, re.S)
    toml, = re.findall(r"```toml\n(.*?)```", section, re.S)
    folder = chunked_project(tmp_path / "kettle", "ids")
    (folder / "agent.py").write_text(python)
    (folder / "evals.toml").write_text('agent = "agent:build"\npages = "manual/*.md"\nk = 2\n' + toml)
    (folder / "manual" / "setup.md").write_text(
        "# Setting up\n\nFill the Zephyr kettle to the MAX line.\n\nDescale the Zephyr kettle every month.\n")
    (folder / "cases.json").write_text(json.dumps({"name": "zephyr", "version": 1, "cases": [
        {"id": "setup", "question": "How do I fill and descale the Zephyr kettle?",
         "expected_docs": ["manual/setup.md"], "expected_tools": ["search_manual"], "reference": "To MAX."}]}))
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
    row = rows_of(folder, "")["setup"]
    assert len(row["retrieved"]) == 3 and set(row["retrieved"]) <= set(MANUAL)  # three chunks, read as pages
    assert row["retrieval"]["hit"] and row["retrieval"]["reciprocal_rank"] == 1.0


def test_an_id_the_page_pattern_does_not_match_and_no_page_holds_is_bad_input_naming_the_field():
    with pytest.raises(PageRuleError, match=r"^evals\.toml: tools\.search\.page_pattern: .* the chunk "
                                            r"'manual/setup\.md-2' .*: the pattern does not match its id"):
        searches([{"id": "manual/setup.md-2", "text": "a"}], page_pattern=r"^(.*)#\d+$")


def test_a_page_path_to_nothing_is_bad_input_naming_what_the_chunk_holds():
    items = [{"id": "9f1c", "text": "a", "metadata": {"source": "manual/lid.md"}}]
    with pytest.raises(PageRuleError, match=r"^evals\.toml: tools\.search\.page: 'metadata\.nosuch' maps no page "
                                            r"for the chunk '9f1c' .*metadata holds 'source'"):
        searches(items, page="metadata.nosuch")


def test_changing_the_page_rule_re_reads_the_recording_and_pays_nothing(tmp_path, monkeypatch, capsys):
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    folder = chunked_project(tmp_path / "kettle", "ids")  # its chunks carry metadata.source too
    assert evaluate.main(["--project", str(folder), "--live", "--quiet", "--split", "all"]) == 0
    config = folder / "evals.toml"
    config.write_text(config.read_text().replace("page_pattern = '^(.*)#\\d+$'", 'page = "metadata.source"'))
    assert evaluate.main(["--project", str(folder), "--quiet", "--split", "all"]) == 0
    assert "stale" not in capsys.readouterr().err
    assert rows(folder)["fill-and-warranty"]["retrieval"]["recall"] == 1.0


def test_a_page_pattern_reads_the_chunk_ids_an_ids_pattern_finds_in_text():
    content = "[manual/setup.md#0] Fill it.\n[manual/setup.md#1] Descale it.\n[manual/lid.md#0] Press the button."
    trace = {"tool_calls": [{"name": "search", "args": {}}], "tool_outputs": [{"tool": "search", "content": content}]}
    role = {"search": ToolRole("search", "retriever", ids=r"\[([^\]]+)\]", page_pattern=r"^(.*)#\d+$")}
    view = read(trace, role, CORPUS)
    assert view["searches"] == [["manual/setup.md", "manual/setup.md", "manual/lid.md"]]
    assert view["context"] == content.split("\n")


# ---- a rule that maps no page: bad input, the same on replay and --live ----------------------------------

@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """The kettle project (chunks with metadata.source), recorded once live with the offline backends."""
    folder = chunked_project(tmp_path_factory.mktemp("recorded") / "kettle", "metadata")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in OFFLINE.items():
            patch.setenv(name, value)
        assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
    return folder


def with_rule(source: Path, folder: Path, rule: str) -> Path:
    shutil.copytree(source, folder)
    (folder / "evals.toml").write_text(EVALS_TOML.format(rule=rule))
    return folder


def written(folder: Path) -> dict:
    """Every file the user or a recording holds; a live run's lock file says when it last ran, so it is left out."""
    return {p: p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and ".cache" not in p.parts and p.suffix != ".lock"}


@pytest.mark.parametrize("rule, field", [("page = 'metadata.nosuch'", "page"), ("page = 'id'", "page"),
                                         ("page_pattern = '^(.*)@\\d+$'", "page_pattern")])
@pytest.mark.parametrize("live", [False, True])
def test_a_page_rule_that_maps_no_page_exits_2_in_one_line_and_writes_nothing(recorded, tmp_path, monkeypatch, capsys,
                                                                             rule, field, live):
    folder = with_rule(recorded, tmp_path / "kettle", rule)
    before = written(folder)
    if live:
        for name, value in OFFLINE.items():
            monkeypatch.setenv(name, value)
    assert evaluate.main(["--project", str(folder), "--quiet"] + (["--live"] if live else [])) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"evaluate.py: evals.toml: tools.search_manual.{field}: ")
    assert "maps no page for the chunk 'chunk-" in err
    assert written(folder) == before


def test_a_live_run_stopped_by_its_page_rule_keeps_the_traces_it_paid_for(tmp_path, monkeypatch, capsys):
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    folder = chunked_project(tmp_path / "kettle", "metadata")
    (folder / "evals.toml").write_text(EVALS_TOML.format(rule="page = 'metadata.nosuch'"))
    assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 2
    assert not (folder / "recordings" / f"{RUN}.json").exists()
    (folder / "evals.toml").write_text(EVALS_TOML.format(rule="page = 'metadata.source'"))
    capsys.readouterr()
    assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
    assert "from the last run (not interrupted: it ended incomplete, stopped by bad input) are kept" in \
        capsys.readouterr().err


def test_a_chunked_replay_writes_each_search_in_its_row(tmp_path, monkeypatch):
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    folder = chunked_project(tmp_path / "kettle", "metadata")
    assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
    row, = [r for r in json.loads((folder / "runs" / f"{RUN}.json").read_text())["rows"]
            if r["id"] == "fill-and-warranty"]
    assert row["searches"] == [row["retrieved"]] and row["retrieved"][:2] == ["manual/setup.md"] * 2
