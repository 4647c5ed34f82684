"""`run --export otel|jsonl|csv FILE`: a run's verdicts out of the harness, one per case and stage, as the JSON
report has them; the events' attribute names are the GenAI conventions' or the harness's own, documented; an
imported trace's events link to its trace and spans; a bad mode and an unwritable file are one line, exit 2."""
import csv
import json
from pathlib import Path

import pytest

from whichstage.cli import run as evaluate
from whichstage.recording.store import Cassette
from whichstage.render import export_otel
from whichstage.render.export_otel import EVENT, OWN_ATTRIBUTES, RUN_KEY, hex_id, otlp_lines
from whichstage.scoring.gating import gate_of, stage_results, threshold_of
from whichstage.testing import make_report, make_row

from conftest import E5_RUN, OFFLINE_RUN, PROJECT, one_line, outputs

TRACE_ID, ROOT_SPAN, SEARCH_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "53995c3f42cd8ad8"


def events(lines) -> list[tuple[dict, dict]]:
    """Every (resource, log record) of OTLP JSON lines."""
    found = []
    for line in lines:
        for resource in json.loads(line)["resourceLogs"]:
            for scope in resource["scopeLogs"]:
                found.extend((resource["resource"], record) for record in scope["logRecords"])
    return found


def attrs(record: dict) -> dict:
    """A record's attributes as a plain dict of their values."""
    return {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}


def errored_row() -> dict:
    """A case whose agent run failed after retries, as case_row builds it: no stage has a verdict."""
    return make_row(id="outage", error="agent/outage: ReadTimeout: read timed out", tools=None, behaviour=None,
                    retrieval=None, searches=[], tool_calls=[], answer=None,
                    judged={"faithfulness": None, "contextual_precision": None, "contextual_recall": None,
                            "answer_relevancy": None})


def test_every_attribute_written_is_a_conventions_name_or_a_documented_own_one():
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.semconv.attributes import error_attributes, service_attributes

    conventions = {v for k, v in vars(gen_ai).items() if k.startswith("GEN_AI_")} | \
        {error_attributes.ERROR_TYPE, service_attributes.SERVICE_NAME}
    sourced = make_row(id="imported", source={"format": "otlp", "file": "spans.json", "trace_id": TRACE_ID,
                                              "span_id": ROOT_SPAN})
    report = make_report([make_row(id="ok"), make_row(id="bad", judged={"faithfulness": 0.1}), errored_row(),
                          sourced])
    found = events(otlp_lines([report], now_ns=1))
    keys = {a["key"] for _, record in found for a in record["attributes"]} | \
        {a["key"] for resource, _ in found for a in resource["attributes"]}
    strangers = {k for k in keys if k not in conventions and k not in OWN_ATTRIBUTES and not k.startswith(RUN_KEY)}
    assert not strangers
    assert {gen_ai.GEN_AI_EVALUATION_NAME, gen_ai.GEN_AI_EVALUATION_SCORE_VALUE, gen_ai.GEN_AI_EVALUATION_SCORE_LABEL,
            gen_ai.GEN_AI_EVALUATION_EXPLANATION, error_attributes.ERROR_TYPE} <= keys
    assert {record["eventName"] for _, record in found} == {EVENT}


def test_the_harness_own_attributes_are_documented():
    text = (PROJECT / "docs" / "exporting.md").read_text()
    assert [name for name in (*OWN_ATTRIBUTES, RUN_KEY) if f"`{name}" not in text] == []


def test_an_errored_case_says_its_error_type_and_no_label():
    found = [attrs(r) for _, r in events(otlp_lines([make_report([errored_row()])], now_ns=1))]
    assert found and all(a["error.type"] == "ReadTimeout" for a in found)
    assert not any("gen_ai.evaluation.score.label" in a for a in found)
    assert export_otel.error_type("agent/x: the agent raised nothing we know") == "_OTHER"


def test_ids_in_any_common_spelling_become_otlp_hex_and_others_link_nothing():
    assert hex_id("4BF92F35-77B3-4DA6-A3CE-929D0E0E4736", 32) == TRACE_ID
    assert hex_id(int(ROOT_SPAN, 16), 16) == ROOT_SPAN
    assert hex_id("0" * 32, 32) is None and hex_id("not-an-id", 16) is None and hex_id(True, 16) is None


def replayed_with_source(monkeypatch, *args: str) -> int:
    """The bundled project replayed with `backup`'s recorded trace carrying an imported trace's source (as
    `whichstage import` keeps it), its search output a span id of its own: the path every row is built by."""
    lookup = Cassette.lookup

    def with_source(self, name, deps_of):
        found, why = lookup(self, name, deps_of)
        if name == "agent/backup" and isinstance(found, dict):
            found = {**found, "source": {"format": "openinference", "file": "spans.json", "trace_id": TRACE_ID,
                                         "span_id": ROOT_SPAN},
                     "tool_outputs": [{**o, "span_id": SEARCH_SPAN} for o in found["tool_outputs"]]}
        return found, why

    monkeypatch.setattr(Cassette, "lookup", with_source)
    return evaluate.main(list(args))


def test_an_imported_trace_links_each_verdict_to_the_span_it_judges(here, monkeypatch, capsys):
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")
    assert replayed_with_source(monkeypatch, "--export", "otel", "events.json") == 0
    found = [record for _, record in events((here / "events.json").read_text().splitlines())]
    backup = {attrs(r)["gen_ai.evaluation.name"]: r for r in found if attrs(r)["whichstage.case.id"] == "backup"}
    assert {r["traceId"] for r in backup.values()} == {TRACE_ID}
    assert backup["retrieval"]["spanId"] == SEARCH_SPAN
    assert {r["spanId"] for stage, r in backup.items() if stage != "retrieval"} == {ROOT_SPAN}
    assert attrs(backup["faithfulness"])["whichstage.source.format"] == "openinference"
    others = [r for r in found if attrs(r)["whichstage.case.id"] != "backup"]
    assert others and not any("traceId" in r or "spanId" in r for r in others)


def expected_verdicts(report: dict) -> dict:
    """(run key's embedder, case, stage) -> (passed, score) as the JSON report's rows hold them, read by the
    scoring's own functions: a stage's verdict, each judged metric's score (passed None where it only reports)."""
    found = {}
    for row in report["rows"]:
        results = stage_results(row)
        for stage in ("behaviour", "tools", "retrieval"):
            if stage in results:
                score = row["tools"].get("score") if stage == "tools" else row["retrieval"]["recall"] \
                    if stage == "retrieval" else float(results[stage])
                found[row["id"], stage] = (results[stage], score)
        for metric, verdict in row["judged"].items():
            gate = gate_of(row, metric)
            passed = None if gate is None else results[metric] if gate == metric else \
                verdict["score"] >= threshold_of(row, metric)
            found[row["id"], metric] = (passed, verdict["score"])
    return found


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict:
    """The bundled project replayed once with every export, and the JSON reports it wrote, by run name."""
    from conftest import copy_project

    project = copy_project(tmp_path_factory.mktemp("exported"))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        for name in ("DOCS_MODEL", "DOCS_EMBEDDER", "DOCS_JUDGE"):
            mp.delenv(name, raising=False)
        code = evaluate.main(["--export", "otel", "out/events.json", "--export", "jsonl", "out/rows.jsonl",
                              "--export", "csv", "out/rows.csv"])
    assert code == 0
    reports = {run: json.loads((project / "runs" / f"{run}.json").read_text()) for run in (OFFLINE_RUN, E5_RUN)}
    return {"folder": project / "out", "reports": reports}


def number(text) -> object:
    return None if text in ("", None) else float(text)


def flag(text) -> object:
    return {"true": True, "false": False, "": None}[text] if isinstance(text, str) else text


def exported_verdicts(mode: str, folder: Path) -> dict:
    """(run, case, stage) -> (passed, score, first failure) as one export wrote them."""
    if mode == "otel":
        found = {}
        for resource, record in events((folder / "events.json").read_text().splitlines()):
            run, a = attrs(resource)["whichstage.run.name"], attrs(record)
            found[run, a["whichstage.case.id"], a["gen_ai.evaluation.name"]] = (
                {"pass": True, "fail": False}.get(a.get("gen_ai.evaluation.score.label")),
                a.get("gen_ai.evaluation.score.value"), a.get("whichstage.case.first_failure"))
        return found
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines()] if mode == "jsonl" else \
        list(csv.DictReader((folder / "rows.csv").open(encoding="utf-8", newline="")))
    return {(r["run"], r["case_id"], r["stage"]): (flag(r["passed"]), number(r["score"]), r["first_failure"] or None)
            for r in rows}


@pytest.mark.parametrize("mode", ["otel", "jsonl", "csv"])
def test_the_bundled_replay_exported_agrees_with_its_json_reports(exported, mode):
    found = exported_verdicts(mode, exported["folder"])
    for run, report in exported["reports"].items():
        expected = expected_verdicts(report)
        mine = {(case, stage): (passed, score) for (r, case, stage), (passed, score, _) in found.items() if r == run}
        assert mine == {key: (passed, None if score is None else float(score))
                        for key, (passed, score) in expected.items()}
        firsts = {case: first for (r, case, _), (_, _, first) in found.items() if r == run}
        assert firsts == {row["id"]: row["first_failure"] for row in report["rows"]}


def test_the_api_writes_what_the_command_writes(exported, tmp_path):
    import whichstage

    reports = whichstage.replay(exported["folder"].parent)
    whichstage.export_results(reports, tmp_path / "rows.csv", "csv")
    assert (tmp_path / "rows.csv").read_bytes() == (exported["folder"] / "rows.csv").read_bytes()
    with pytest.raises(whichstage.WhichstageError, match="valid: otel, jsonl, csv"):
        whichstage.export_results(reports[0], tmp_path / "rows.x", "xml")


def test_a_replay_without_export_loads_neither_exporter_nor_the_conventions(project):
    import os
    import subprocess
    import sys

    from conftest import OFFLINE, load_project

    load_project(project)  # the agent's tools read into the copy's .cache, as its first replay would
    only = {"whichstage.render.export_otel", "whichstage.render.export_rows", "opentelemetry.semconv.attributes",
            "opentelemetry.semconv._incubating.attributes.gen_ai_attributes"}
    probe = ("import sys; from whichstage.cli import run as evaluate; code = evaluate.main(['--quiet']); "
             f"print(code, sorted(set(sys.modules) & {only!r}))")
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE}
    done = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stderr


def test_a_bad_export_mode_is_one_line_naming_the_valid_ones(here, capsys):
    before = outputs(here)
    assert evaluate.main(["--export", "xml", "out.xml"]) == 2
    out, err = capsys.readouterr()
    assert one_line(err) == "evaluate.py: --export: unknown mode 'xml' (valid: otel, jsonl, csv)"
    assert out == "" and outputs(here) == before and not (here / "out.xml").exists()


@pytest.mark.parametrize("target", ["/proc/whichstage/events.json", "cases.json/events.json"])
def test_an_export_that_cannot_be_written_is_one_line_and_writes_nothing(here, capsys, target):
    if target.startswith("/proc") and not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    (here / "runs" / f"{OFFLINE_RUN}.md").unlink()  # a report the run would write, were it not stopped
    before = outputs(here)
    assert evaluate.main(["--export", "csv", "rows.csv", "--export", "otel", target]) == 2
    out, err = capsys.readouterr()
    assert "cannot write" in one_line(err) and out == ""
    assert outputs(here) == before and not [p for p in here.rglob(".events.json*")]
