"""The judge intervention without a second judge: a failing verdict in doubt (near its threshold, or of a metric
the calibration does not pass) judged again, recorded as `judge/<case>/<stage>#again`, replayed without a model,
staled by what the verdict reads; a verdict that passes when judged again is 'judge uncertain'."""
import json
from pathlib import Path

from conftest import OFFLINE, init_entries, init_row, recorded_init
from whichstage.cli import run as evaluate

CASE = "offline-edits"
FACT = "Notes sync over Bluetooth to a second phone"  # in no page: the offline judge fails it every time
AGAIN = f"judge/{CASE}/facts#again"


def in_doubt(within: float = 1):
    """The case expects a fact no page holds; evals.toml rechecks a failing verdict within `within`."""
    def edit(folder: Path, cases: dict) -> None:
        next(c for c in cases["cases"] if c["id"] == CASE)["expected_facts"] = [FACT]
        recheck_within(folder, within)
    return edit


def recheck_within(folder: Path, within: float) -> None:
    """evals.toml's top-level `recheck_within` set (written before its first table)."""
    lines = [line for line in (folder / "evals.toml").read_text().splitlines(True)
             if not line.startswith("recheck_within")]
    (folder / "evals.toml").write_text(f"recheck_within = {within}\n" + "".join(lines))


def entries(folder: Path) -> dict:
    return init_entries(folder)


def row(folder: Path) -> dict:
    return init_row(folder, CASE)


def covered_the_second_time(fake_models) -> None:
    """The judge's facts request, asked a second time with the same prompt, finds the fact covered."""
    seen: set[str] = set()

    def asked_again(call) -> bool:
        if call.kind != "judge" or call.label != "facts/Verdicts" or FACT not in call.text:
            return False
        again = call.text in seen
        seen.add(call.text)
        return again
    fake_models.judge_reply(asked_again, {"verdicts": [{"reason": "stated", "covered": True}]})


def test_a_verdict_that_fails_again_keeps_its_diagnosis(tmp_path):
    found = row(recorded_init(tmp_path / "p", in_doubt()))
    assert found["first_failure"] == "facts"
    assert found["judge_recheck"]["flipped"] is False and found["judge_recheck"]["again"] == 0
    assert found["diagnosis"]["cause"] == "docs gap"


def test_a_verdict_that_passes_when_judged_again_is_judge_uncertain(tmp_path, fake_models):
    covered_the_second_time(fake_models)
    found = row(recorded_init(tmp_path / "p", in_doubt()))
    assert found["first_failure"] == "facts"  # the first verdict still decides the stage
    assert found["judge_recheck"]["flipped"] is True
    assert found["diagnosis"]["cause"] == "judge"
    assert "judge uncertain" in found["diagnosis"]["evidence"]["outcome"]


def test_a_verdict_far_from_its_threshold_is_not_judged_again(tmp_path):
    folder = recorded_init(tmp_path / "p", in_doubt(within=0.1))  # facts scores 0, 0.7 below its threshold
    assert "judge_recheck" not in row(folder)
    assert AGAIN not in entries(folder)


def test_a_passing_case_is_never_judged_again(tmp_path):
    folder = recorded_init(tmp_path / "p", lambda folder, cases: None)
    assert not [name for name in entries(folder) if name.endswith("#again")]


def test_a_replay_of_the_recheck_calls_no_model(tmp_path, fake_models, monkeypatch):
    covered_the_second_time(fake_models)
    folder = recorded_init(tmp_path / "p", in_doubt())
    fake_models.reset()
    monkeypatch.chdir(folder)
    for name in OFFLINE:
        monkeypatch.delenv(name, raising=False)
    assert evaluate.main(["--quiet"]) == 0
    assert fake_models.count() == 0
    assert row(folder)["diagnosis"]["cause"] == "judge"


def test_the_recheck_is_staled_by_what_the_verdict_reads(tmp_path, monkeypatch, fake_models):
    folder = recorded_init(tmp_path / "p", in_doubt())
    before = entries(folder)[AGAIN]
    cases = json.loads((folder / "cases.json").read_text())
    next(c for c in cases["cases"] if c["id"] == CASE)["expected_facts"] = ["Notes sync over Bluetooth"]
    (folder / "cases.json").write_text(json.dumps(cases))
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    fake_models.reset()
    assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
    after = entries(folder)[AGAIN]
    assert after["deps"]["expected_facts"] != before["deps"]["expected_facts"]
    assert after["deps"]["judged"] == "again"


def test_a_recheck_not_recorded_is_no_stale_replay(tmp_path, monkeypatch, capsys):
    folder = recorded_init(tmp_path / "p", in_doubt(within=0.1))
    recheck_within(folder, 1)  # now in doubt: its recheck was never recorded
    monkeypatch.chdir(folder)
    for name in OFFLINE:
        monkeypatch.delenv(name, raising=False)
    assert evaluate.main(["--quiet"]) == 0
    found = row(folder)
    assert found["judge_recheck"] is None and found["diagnosis"]["cause"] == "docs gap"
    assert evaluate.main(["--show", CASE]) == 0
    assert "judged again: not recorded yet: run --live" in capsys.readouterr().out


def test_recheck_within_out_of_range_is_one_line(tmp_path, monkeypatch, capsys):
    folder = recorded_init(tmp_path / "p", lambda folder, cases: None)
    recheck_within(folder, 2)
    monkeypatch.chdir(folder)
    capsys.readouterr()
    code = evaluate.main(["--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "recheck_within" in err and err.count("\n") == 1
