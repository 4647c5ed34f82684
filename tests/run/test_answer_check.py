"""The answer check, the intervention for a case failing at an answer stage: what the answer lacks, judged by
the facts metric in the context the agent read and in the expected pages, recorded as entries of its own,
replayed without a model and staled by exactly what they read."""
import json
from pathlib import Path

from conftest import OFFLINE, init_entries, init_row, recorded_init
from whichstage.cli import run as evaluate

CASE = "offline-edits"
CHECKS = [f"judge/{CASE}/lacks-in-context", f"judge/{CASE}/lacks-in-pages"]


def expecting(fact: str):
    def edit(folder: Path, cases: dict) -> None:
        next(c for c in cases["cases"] if c["id"] == CASE)["expected_facts"] = [fact]
    return edit


def entries(folder: Path) -> dict:
    return init_entries(folder)


def row(folder: Path) -> dict:
    return init_row(folder, CASE)


def answer_without_the_fact(fake_models) -> None:
    """The agent's answer, after its search, says nothing of what the page holds."""
    def after_search(call):
        return call.kind == "chat" and call.label.startswith("Do notes") and call.text != call.label
    fake_models.reply(after_search, "Notes stay on your device.")


def test_a_fact_the_context_held_and_the_answer_dropped_is_the_generators(tmp_path, fake_models):
    answer_without_the_fact(fake_models)
    folder = recorded_init(tmp_path / "p", expecting("Notes edited offline sync when the app is back online"))
    found = row(folder)
    assert found["first_failure"] in ("faithfulness", "facts")  # an answer stage: its check reads the facts lacked
    assert found["answer_check"] == {"lacks": ["Notes edited offline sync when the app is back online"],
                                     "in_context": [True], "in_pages": [True]}
    assert found["diagnosis"]["cause"] == "generator or prompt"
    assert set(CHECKS) <= set(entries(folder))


def test_a_fact_no_page_holds_is_a_docs_gap(tmp_path):
    folder = recorded_init(tmp_path / "p", expecting("Notes sync over Bluetooth to a second phone"))
    found = row(folder)
    assert found["diagnosis"]["cause"] == "docs gap"
    assert "Notes sync over Bluetooth to a second phone" in found["diagnosis"]["evidence"]["outcome"]


def test_a_passing_case_asks_no_answer_check(tmp_path):
    folder = recorded_init(tmp_path / "p", lambda folder, cases: None)
    assert not [name for name in entries(folder) if "/lacks-in-" in name]


def test_a_replay_of_the_answer_check_calls_no_model(tmp_path, fake_models, monkeypatch):
    folder = recorded_init(tmp_path / "p", expecting("Notes sync over Bluetooth to a second phone"))
    fake_models.reset()
    monkeypatch.chdir(folder)
    for name in OFFLINE:
        monkeypatch.delenv(name, raising=False)
    assert evaluate.main(["--quiet"]) == 0
    assert fake_models.count() == 0
    assert row(folder)["diagnosis"]["cause"] == "docs gap"


def test_the_answer_check_is_staled_by_what_it_reads_and_nothing_else(tmp_path, monkeypatch):
    folder = recorded_init(tmp_path / "p", expecting("Notes sync over Bluetooth to a second phone"))
    before = entries(folder)
    cases = json.loads((folder / "cases.json").read_text())
    next(c for c in cases["cases"] if c["id"] == CASE)["expected_facts"] = ["Notes sync over Bluetooth"]
    (folder / "cases.json").write_text(json.dumps(cases))
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
    after = entries(folder)
    changed = sorted(name for name in after if after[name]["deps"] != before.get(name, {}).get("deps"))
    assert changed == sorted([f"judge/{CASE}/facts", *CHECKS])


def test_a_threshold_that_makes_a_case_fail_asks_no_live_run_and_the_next_live_run_records_its_check(
        tmp_path, monkeypatch):
    def criterion(folder: Path, cases: dict) -> None:
        config = folder / "evals.toml"
        config.write_text(config.read_text() + "\n[criteria.mentions]\nrubric = \"It says 'online' and 'instantly'.\""
                          "\nthreshold = 0.4\n")
    folder = recorded_init(tmp_path / "p", criterion)
    config = folder / "evals.toml"
    config.write_text(config.read_text().replace("threshold = 0.4", "threshold = 0.9"))
    monkeypatch.chdir(folder)
    for name in OFFLINE:
        monkeypatch.delenv(name, raising=False)
    assert evaluate.main(["--quiet"]) == 0  # a threshold moves verdicts at replay: nothing is stale
    assert row(folder)["first_failure"] == "mentions"
    outcome = row(folder)["diagnosis"]["evidence"]["outcome"]
    assert outcome == "its answer check is not recorded: run --live to record it"
    before = entries(folder)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert sorted(set(entries(folder)) - set(before)) == CHECKS
    assert row(folder)["diagnosis"]["cause"] != "undetermined"
