"""The CI workflows where users keep them: CI runs .ci/run on every push and pull request, the live evals are
opt-in, calibrated first and sharded, their shard and merge commands give one run's recording, every action is
pinned, no checkout leaves credentials, and the workflows pass the security audit run from the lock."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from whichstage.cli import run as evaluate

from conftest import OFFLINE_RUN, SAMPLE, of_cases, untimed


HERE = Path(__file__).parents[2]


def workflow(name: str) -> tuple[dict, dict]:
    data = yaml.safe_load((HERE / ".github" / "workflows" / name).read_text())
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` key as true
    return data, triggers if isinstance(triggers, dict) else dict.fromkeys(triggers)


def steps(data: dict) -> list[dict]:
    return [step for job in data["jobs"].values() for step in job["steps"]]


def test_ci_runs_the_ci_script_on_every_push_and_pull_request():
    data, triggers = workflow("ci.yml")
    assert {"push", "pull_request"} <= set(triggers)
    assert not any((triggers[t] or {}).get(k) for t in ("push", "pull_request") for k in ("branches", "paths"))
    assert any(s.get("uses", "").startswith("actions/setup-python@") and str(s["with"]["python-version"]) == "3.11"
               for s in steps(data))
    assert [s["run"] for s in steps(data) if "run" in s] == ["bash .ci/run"]


def test_the_live_evals_are_opt_in_and_never_run_on_push():
    data, triggers = workflow("evals.yml")
    assert "push" not in triggers and "workflow_dispatch" in triggers
    assert triggers["workflow_dispatch"]["inputs"]["shards"]["default"] == "4"
    runs = " ".join(s.get("run", "") for s in steps(data))
    assert "evaluate.py --live --shard" in runs and "calibrate.py --live" in runs and "--check-baseline" in runs
    jobs = data["jobs"]
    assert "run-evals" in jobs["calibrate"]["if"]
    assert jobs["shard"]["needs"] == "calibrate" and jobs["merge"]["needs"] == "shard"  # every job waits for its judge
    for name in ("calibrate", "shard"):
        assert jobs[name]["env"]["GOOGLE_API_KEY"] == "${{ secrets.GOOGLE_API_KEY }}"
    assert "GOOGLE_API_KEY" not in jobs["merge"].get("env", {})  # merging and replaying call no model
    uploads = [s for s in jobs["merge"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert uploads and "runs/*.html" in uploads[0]["with"]["path"]


def evaluate_calls(command: str, env: dict) -> list[list[str]]:
    """The arguments of each `python evaluate.py ...` a workflow step's shell command runs, as bash expands them
    (its variables, quotes and globs, against the files there now): `python` stands in as a function printing them."""
    done = subprocess.run(["bash", "-c", "python() { printf '%s\\0' \"$@\"; printf '\\n'; }\n" + command],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = [line.split("\0")[:-1] for line in done.stdout.splitlines()]
    assert calls and all(call[0] == "evaluate.py" for call in calls), calls
    return [call[1:] for call in calls]


def test_the_workflows_shard_and_merge_commands_give_one_runs_recording(sample_project):
    """The shard job's and the merge job's own commands, run here (evaluate.py in this process) with the offline
    backends on three shards of the sample's cases."""
    data, _ = workflow("evals.yml")
    shard_run = next(s["run"] for s in data["jobs"]["shard"]["steps"] if "--shard" in s.get("run", ""))
    merge_runs = [s["run"] for s in data["jobs"]["merge"]["steps"]
                  if s.get("run") and "evaluate.py" in s["run"] and "check-baseline" not in s["run"]]
    (sample_project / "recordings" / f"{OFFLINE_RUN}.json").unlink()  # every shard records its own cases
    env = {**os.environ, "SHARDS": "3"}
    for shard in ("1", "2", "3"):
        for argv in evaluate_calls(shard_run, {**env, "SHARD": shard}):
            assert evaluate.main(argv) == 0
    for command in merge_runs:
        for argv in evaluate_calls(command, env):
            assert evaluate.main(argv) == 0
    merged = json.loads((sample_project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    bundled = json.loads((HERE / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    assert untimed(merged) == untimed(of_cases(bundled, SAMPLE))


WORKFLOWS = sorted((HERE / ".github" / "workflows").glob("*.y*ml"))


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_commit_with_its_version_in_a_comment(path):
    uses = [line.strip() for line in path.read_text().splitlines() if re.match(r"\s*(- )?uses:", line)]
    assert uses
    for line in uses:
        assert re.fullmatch(r"(- )?uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} +# v\d+\.\d+\.\d+", line), line


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_checkout_leaves_no_credentials_in_the_workspace(path):
    data, _ = workflow(path.name)
    checkouts = [s for s in steps(data) if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts and all((s.get("with") or {}).get("persist-credentials") is False for s in checkouts)


def test_the_judge_is_calibrated_before_the_live_evaluation_spends_anything():
    data, _ = workflow("evals.yml")
    jobs = data["jobs"]
    calibrate = [s.get("run", "") for s in jobs["calibrate"]["steps"]]
    assert any("calibrate.py --live" in r for r in calibrate) and not any("evaluate.py" in r for r in calibrate)
    # the shard jobs, which pay for the live evaluation, start only once the calibration job has passed
    assert jobs["shard"]["needs"] == "calibrate" and "if" not in jobs["shard"]
    assert all("if" not in step for step in jobs["calibrate"]["steps"])


def zizmor() -> str | None:
    import shutil
    beside = Path(sys.executable).with_name("zizmor")
    return str(beside) if beside.is_file() else shutil.which("zizmor")


def test_the_workflows_pass_the_security_audit_offline():
    if not zizmor():
        pytest.skip("zizmor is not installed (it is in requirements-lock.txt)")
    done = subprocess.run([zizmor(), "--offline", "--no-progress", "--format", "json", ".github/workflows"],
                          cwd=HERE, capture_output=True, text=True, timeout=120)
    assert (done.returncode, json.loads(done.stdout or "null")) == (0, []), done.stdout + done.stderr


def test_ci_runs_the_audit_from_the_lock_after_installing_it_and_before_the_tests():
    script = (HERE / ".ci" / "run").read_text().splitlines()
    install = next(i for i, line in enumerate(script) if "-r requirements-lock.txt" in line)
    audit = next(i for i, line in enumerate(script) if line.startswith(".venv/bin/zizmor --offline"))
    tests = next(i for i, line in enumerate(script) if "-m pytest" in line)
    assert install < audit < tests and script[audit].split()[-1] == ".github/workflows"
    assert re.search(r"^zizmor==1\.32\.\d+$", (HERE / "requirements-lock.txt").read_text(), re.M)
