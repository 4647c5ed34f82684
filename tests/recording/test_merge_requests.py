"""`evaluate.py merge` keeps the shards' requests (issue 23 §2), counted at the Gemini stand-in: two shards recorded
live and merged keep, request for request, the answers one unsharded run of the same cases keeps, so the next live
run pays no request one run would not. Each lists the entries of either shard that used it, so one may list more
than one run's: the pages' index, embedded once a process, is listed under the first entry each process ran.
A request two shards got different answers to keeps the first shard's."""
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from test_request_reuse import EDITS, RUN, logging_standin, recorded_requests, run, some_cases
from whichstage.cli import run as evaluate


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with logging_standin() as server:
        yield server


def merge(project: Path) -> tuple[int, str]:
    """`evaluate.py merge` of the project's shard recordings: its exit code and its stdout."""
    shards = sorted(str(p) for p in (project / "recordings").glob(f"{RUN}.shard-*-of-2.json"))
    assert len(shards) == 2
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(out), redirect_stderr(io.StringIO()):
        mp.chdir(project)
        code = evaluate.main(["merge", *shards])
    return code, out.getvalue()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, standin) -> tuple[Path, list[bytes]]:
    """The five cases recorded live as two shards, not yet merged, and every body the shards sent."""
    project, sent = some_cases(tmp_path_factory.mktemp("sharded")), []
    for shard in ("1/2", "2/2"):
        code, err, bodies = run(project, standin, "--live", "--shard", shard)
        assert code == 0, err
        sent += bodies
    return project, sent


@pytest.fixture
def sharded(recorded) -> Path:
    return recorded[0]


def with_shards(sharded: Path, into: Path) -> Path:
    """The five cases' project with the shard recordings in its recordings/."""
    project = some_cases(into)
    for shard in (sharded / "recordings").glob(f"{RUN}.shard-*"):
        (project / "recordings" / shard.name).write_bytes(shard.read_bytes())
    return project


def test_merged_shards_keep_the_requests_one_unsharded_run_keeps(sharded, standin, tmp_path):
    one = some_cases(tmp_path / "one")
    code, err, _ = run(one, standin, "--live")
    assert code == 0, err
    merged = with_shards(sharded, tmp_path / "merged")
    code, out = merge(merged)
    assert code == 0, out
    expected, found = recorded_requests(one), recorded_requests(merged)
    assert expected and list(found) == list(expected)
    for key, request in expected.items():
        *answer, entries = request.items()
        assert list(found[key].items())[:-1] == answer and set(found[key]["entries"]) >= set(entries[1])


def test_a_request_two_shards_were_answered_differently_keeps_the_first_shards_answer(sharded, tmp_path):
    project = with_shards(sharded, tmp_path / "differ")
    paths = [project / "recordings" / f"{RUN}.shard-{i}-of-2.json" for i in (1, 2)]
    first, second = (json.loads(p.read_text()) for p in paths)
    both = sorted(set(first["requests"]) & set(second["requests"]))
    assert both  # the pages' index is embedded by each shard
    second["requests"][both[0]]["json"] = {"another": "answer"}  # as a model that does not answer the same twice
    paths[1].write_text(json.dumps(second))
    code, out = merge(project)
    assert code == 0 and "1 answered differently in two shards: the first shard's answer kept" in out
    kept = recorded_requests(project)[both[0]]
    assert kept["json"] == first["requests"][both[0]]["json"]



def test_shards_after_an_edit_pay_no_request_the_merged_recording_holds(recorded, standin, tmp_path):
    """As the workflow's next run: each shard on a fresh machine, with the merged recording alone."""
    project = with_shards(recorded[0], tmp_path / "next")
    assert merge(project)[0] == 0
    for shard in (project / "recordings").glob(f"{RUN}.shard-*"):
        shard.unlink()
    EDITS["a question"](project)
    paid = []
    for shard in ("1/2", "2/2"):
        code, err, bodies = run(project, standin, "--live", "--shard", shard)
        assert code == 0, err
        paid += bodies
    assert paid and not set(paid) & set(recorded[1])
