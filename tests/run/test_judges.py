"""A second judge over the same traces: `--judge2 NAME` pays for its verdicts alone, and the report gives
the two judges' agreement, kappa and the cases they split on."""
import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from whichstage.render.markdown import second_judge_lines
from whichstage.cli import run as evaluate
from conftest import OFFLINE, copy_project, serial_judge
from whichstage.analysis import second_judge as judges
from whichstage.calls import retries as live_calls
from whichstage.providers.settings import GEMINI_URL_VARIABLE
from whichstage.standins import gemini as gemini_standin
from whichstage.standins.gemini import serve

SECOND = "gemini-3.8-flash"


def report_with(judged: dict) -> dict:
    return {"key": {"judge": "a"}, "rows": [{"id": cid, "judged": {stage: {"score": s} for stage, s in stages.items()}}
                                            for cid, stages in judged.items()]}


def test_two_judges_agreement_kappa_and_split_cases_by_stage():
    first = report_with({"c1": {"faithfulness": 1.0}, "c2": {"faithfulness": 0.0}, "c3": {"faithfulness": 1.0},
                         "c4": {"faithfulness": 0.0}})
    second = report_with({"c1": {"faithfulness": 0.9}, "c2": {"faithfulness": 0.2}, "c3": {"faithfulness": 0.1},
                          "c4": {"faithfulness": 0.3}})
    second["key"]["judge"] = "b"
    found = judges.compared(first, second)["stages"]["faithfulness"]
    assert found["cases"] == 4 and found["agreement"] == 0.75
    assert found["kappa"] == pytest.approx(0.5)  # p_o 3/4, p_e 1/2
    assert found["split"] == [{"id": "c3", "first": 1.0, "second": 0.1}]
    table = "\n".join(second_judge_lines(judges.compared(first, second)))
    assert "| faithfulness | 4 | 75% | 0.50 | c3 (1.00 / 0.10) |" in table


def test_a_second_judge_pays_for_its_verdicts_alone(tmp_path, shared_ssl_contexts, monkeypatch):
    project = copy_project(tmp_path)
    data = json.loads((project / "cases.json").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] in ("backup", "issue-212", "thanks")]
    (project / "cases.json").write_text(json.dumps(data))
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, gemini_standin)
        with serve(models=[SECOND]) as standin:
            monkeypatch.setattr(live_calls, "sleep", lambda s: None)
            monkeypatch.chdir(project)
            for name, value in {**OFFLINE, "GOOGLE_API_KEY": "test", GEMINI_URL_VARIABLE: standin.url}.items():
                monkeypatch.setenv(name, value)
            with redirect_stderr(io.StringIO()) as err, redirect_stdout(io.StringIO()) as out:
                code = evaluate.main(["--project", str(project), "--live", "--quiet", "--judge2", SECOND])
            assert code == 0, err.getvalue()
            kinds = {r["kind"] for r in standin.requests}
    assert "judge" in kinds and not kinds & {"chat", "embed"}  # traces and rankings are the first judge's
    assert f"Second judge {SECOND} beside lexical" in out.getvalue()
    second = json.loads((project / "recordings" / f"docs-assistant+rules+hash+{SECOND}.json").read_text())
    assert any(n.startswith("agent/") for n in second["entries"])  # reused, kept with the verdicts they explain
    report = json.loads((project / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())
    stages = report["second_judge"]["stages"]
    assert stages and all(s["agreement"] == 1.0 and s["split"] == [] for s in stages.values())  # the same rules
    with redirect_stderr(io.StringIO()), redirect_stdout(io.StringIO()) as replayed:
        assert evaluate.main(["--project", str(project), "--judge2", SECOND]) == 0  # a replay, no model
    assert f"Second judge {SECOND} beside lexical" in replayed.getvalue()
