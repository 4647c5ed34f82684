"""Choosing what a run covers and knowing its bill: --case, --show, --plan, --shard and merge, on the bundled
example and on examples/inverter."""
import json
import shutil
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from whichstage.cli import run as evaluate
from conftest import OFFLINE, OFFLINE_RUN, SAMPLE, interrupt_after_runs, of_cases, untimed
from whichstage.project import selection

HERE = Path(__file__).parents[2]


def recorded(project: Path) -> dict[str, str]:
    """The entries of the project's recording, each as its JSON text."""
    entries = json.loads((project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    return {name: json.dumps(entry) for name, entry in entries.items()}


def written(before: dict[str, str], after: dict[str, str]) -> dict[str, int]:
    """How many entries a live run wrote anew (added, or changed), by kind as the plan names its kinds."""
    from collections import Counter

    def kind(name: str) -> str:
        head, _, rest = name.partition("/")
        if head == "agent":
            return "counterfactual runs" if "@" in rest else "repeats" if "#" in rest else "agent runs"
        if head == "ladder":
            return "embeddings" if rest.endswith("/vector") else "ladder rankings"
        return {"tools": "tool scores", "judge": "judge metrics"}[head]
    return dict(Counter(kind(name) for name in after if after[name] != before.get(name)))


def paid(calls: list) -> list:
    """The model calls that answer a case: all but embedding the pages, which each run does again to build its
    indexes (and to read the agent's tools)."""
    return [c for c in calls if (c.kind, c.label) != ("embed", "documents")]


def plan_counts(out: str) -> dict[str, int]:
    """'  judge metrics: 12 (not recorded: 8; ...)' -> {'judge metrics': 12, ...}"""
    from whichstage.run.plan import KINDS

    found = {}
    for line in out.splitlines():
        head, _, rest = line.strip().partition(": ")
        if head in KINDS and rest[:1].isdigit():
            found[head] = int(rest.split()[0])
    return found


def edit_cases(folder: Path, change) -> None:
    path = folder / "cases.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


# ---- --case and --show ------------------------------------------------------------------------------------

def test_case_replays_only_the_cases_it_names_and_writes_no_report(here, capsys):
    before = {p.name: p.read_bytes() for p in (here / "runs").iterdir()}
    assert evaluate.main(["--case", "issue-*", "--case", "backup"]) == 0
    table = next(part for part in capsys.readouterr().out.split("\n\n") if part.startswith("| case |"))
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    dev = [c["id"] for c in json.loads((here / "cases.json").read_text())["cases"] if c["split"] == "dev"]
    assert rows[1:] == [cid for cid in dev if cid == "backup" or cid.startswith("issue-")]
    assert "issue-212" in rows and "restore" not in rows
    assert {p.name: p.read_bytes() for p in (here / "runs").iterdir()} == before


@pytest.mark.parametrize("args, message", [
    (["--case", "nope"], "evaluate.py: --case 'nope': no case matches (the cases: backup, "),
    (["--case", "zzz-*"], "evaluate.py: --case 'zzz-*': no case matches"),
    (["--show", "nope"], "evaluate.py: --show 'nope': no case matches"),
])
def test_a_case_that_matches_nothing_exits_2_in_one_line(here, capsys, args, message):
    assert evaluate.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_a_live_run_of_some_cases_records_theirs_and_keeps_the_others(live_project, fake_models):
    path = live_project / "recordings" / f"{OFFLINE_RUN}.json"
    before = json.loads(path.read_text())["entries"]
    edit_cases(live_project, lambda d: [c.update(question=c["question"] + " Please.") for c in d["cases"]])
    assert evaluate.main(["--live", "--quiet", "--case", "backup"]) == 0
    assert len(fake_models.runs()) == 1
    after = json.loads(path.read_text())["entries"]
    assert set(after) == set(before)  # the others' entries stay, stale as they are, for their own run
    assert all(after[n] == before[n] for n in before if selection.case_of(n) != "backup")


def test_show_prints_the_whole_trace_with_the_expected_pages_marked(here, capsys):
    assert evaluate.main(["--show", "json-reports"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("case json-reports (")
    assert "1. search_docs(query=" in out and "pages: 1. " in out and "output (expected)" not in out
    assert "first failure: retrieval: missed output" in out
    assert "answer:" in out and "  faithfulness: " in out


def test_show_works_on_any_project(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "inverter"
    shutil.copytree(HERE / "examples" / "inverter", folder, ignore=shutil.ignore_patterns(".cache"))
    assert evaluate.main(["--project", str(folder), "--show", "e07"]) == 0
    out = capsys.readouterr().out
    assert "1. search_manual(query=" in out and "1. manual/errors.md (expected)" in out
    assert "first failure: none, every stage passes" in out


# ---- --plan -------------------------------------------------------------------------------------------------

def test_the_plans_calls_are_the_calls_the_live_run_then_makes(live_project, fake_models, capsys):
    def change(data):
        data["cases"][2]["reference"] = "Run tracker restore ID now."
        data["cases"].append({"id": "tag-a-task", "question": "How do I tag a task?", "expected_tools": ["search_docs"],
                              "expected_docs": ["tags"], "reference": "Use tracker tag ID NAME."})
        data["cases"].append({"id": "bye", "question": "Goodbye!", "expected_behavior": "chitchat",
                              "reference": "Goodbye!"})
    edit_cases(live_project, change)
    snapshot = {p: p.read_bytes() for p in (live_project / "recordings").iterdir()}
    assert evaluate.main(["--live", "--plan"]) == 0
    planned = plan_counts(capsys.readouterr().out)
    assert paid(fake_models.reset()) == []  # no model called
    assert {p: p.read_bytes() for p in (live_project / "recordings").iterdir()} == snapshot  # nothing written
    before = recorded(live_project)
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert planned == written(before, recorded(live_project))  # every kind, the free ones too
    assert (len(fake_models.runs()), len(fake_models.measurements())) == (planned["agent runs"],
                                                                          planned["judge metrics"])
    assert planned["agent runs"] == 2 and planned["judge metrics"] >= 4


def test_a_plan_with_nothing_to_do_says_so(live_project, capsys):
    assert evaluate.main(["--live", "--plan"]) == 0
    assert capsys.readouterr().out.strip() == "plan: nothing to call: every entry is recorded and current"


def test_a_plan_prices_known_models_and_says_when_a_price_is_unknown(live_project, monkeypatch, capsys):
    monkeypatch.setenv("DOCS_MODEL", "gemini-3.8-flash")
    monkeypatch.setenv("DOCS_JUDGE", "gemini-unreleased-judge")
    assert evaluate.main(["--live", "--plan"]) == 0  # no key needed: nothing is called
    out = capsys.readouterr().out
    assert "  agent: " in out and "(rule); $" in out
    assert "price unknown for gemini-unreleased-judge" in out and "plus what gemini-unreleased-judge costs" in out


def test_plan_and_shard_go_with_live(capsys):
    for flag in (["--plan"], ["--shard", "1/2"]):
        with pytest.raises(SystemExit) as exited:
            evaluate.main(flag)
        assert exited.value.code == 2 and "goes with --live" in capsys.readouterr().err


# ---- shards -----------------------------------------------------------------------------------------------


def test_a_case_belongs_to_one_shard_whatever_else_is_added():
    ids = [f"case-{i}" for i in range(200)]
    shards = {cid: selection.shard_of(cid, 4) for cid in ids}
    assert set(shards.values()) == {1, 2, 3, 4}
    grown = {"name": "x", "version": 1, "cases": [{"id": cid} for cid in ids + ["new-a", "new-b"]]}
    for i in range(1, 5):
        chosen = {c["id"] for c in selection.select(grown, shard=(i, 4))["cases"]}
        assert {cid for cid in ids if shards[cid] == i} <= chosen


@pytest.mark.parametrize("bad", ["5/4", "0/3", "a/b", "1/0", "2"])
def test_a_shard_that_cannot_be_is_refused(live_project, capsys, bad):
    assert evaluate.main(["--live", "--shard", bad]) == 2
    assert capsys.readouterr().err.startswith(f"evaluate.py: --shard {bad!r}: expected I/N")


def test_three_shards_merged_equal_one_run_and_a_killed_shard_resumes(sample_project, monkeypatch, fake_models,
                                                                      capsys):
    (sample_project / "recordings" / f"{OFFLINE_RUN}.json").unlink()
    interrupt_after_runs(fake_models, 3)
    assert evaluate.main(["--live", "--quiet", "--shard", "2/3", "--concurrency", "1"]) == Exit.INTERRUPTED
    fake_models.reset()
    capsys.readouterr()
    for shard in ("1/3", "2/3", "3/3"):
        assert evaluate.main(["--live", "--quiet", "--shard", shard]) == 0
        if shard == "2/3":
            assert "resuming: " in capsys.readouterr().err  # the killed shard resumes on its own
    shards = sorted(str(p) for p in (sample_project / "recordings").glob("*.shard-*-of-3.json"))
    assert evaluate.main(["merge", *shards]) == 0
    merged = json.loads((sample_project / "recordings" / f"{OFFLINE_RUN}.json").read_text())
    bundled = json.loads((HERE / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    assert untimed(merged["entries"]) == untimed(of_cases(bundled, SAMPLE))
    for name in OFFLINE:
        monkeypatch.delenv(name)
    assert evaluate.main(["--split", "all"]) == 0  # the merged recording replays


def test_merge_refuses_shards_that_are_not_one_run(live_project, capsys):
    for shard in ("1/2", "2/2"):
        assert evaluate.main(["--live", "--quiet", "--shard", shard]) == 0
    first, second = sorted((live_project / "recordings").glob("*.shard-*-of-2.json"))
    capsys.readouterr()
    assert evaluate.main(["merge", str(first)]) == 2
    assert "shard 2/2 is missing" in capsys.readouterr().err
    data = json.loads(second.read_text())
    name = next(iter(data["entries"]))
    changed = json.loads(first.read_text())
    changed["entries"][name] = json.loads(json.dumps(data["entries"][name]))
    changed["entries"][name]["deps"]["question"] = "0"  # the same entry, recorded differently
    first.write_text(json.dumps(changed))
    assert evaluate.main(["merge", str(first), str(second)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"entry {name} differs from the one in" in err
    other = json.loads(second.read_text())
    other["key"]["model"] = "another"
    second.write_text(json.dumps(other))
    assert evaluate.main(["merge", str(first), str(second)]) == 2
    assert "recorded with other model than" in capsys.readouterr().err
