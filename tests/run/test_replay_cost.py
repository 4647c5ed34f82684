"""What a replay costs that it need not: it loads none of the modules only a live call needs (docs/measurements.md
measures a replay's start-up against the commit before the package)."""
import os
import subprocess
import sys

from conftest import OFFLINE, load_project

# The model clients, the live scheduler's retries and progress: a live run's, never a replay's.
LIVE_ONLY = {"whichstage.providers.build", "whichstage.providers.gemini", "whichstage.providers.ollama", "whichstage.providers.preflight",
             "whichstage.calls.retries", "whichstage.calls.progress", "whichstage.run.scheduler"}


def test_a_replay_loads_no_module_only_a_live_call_needs(project):
    load_project(project)  # the agent's tools read into the copy's .cache, as its first replay would
    probe = ("import sys; from whichstage.cli import run as evaluate; code = evaluate.main(['--quiet']); "
             f"print(code, sorted(set(sys.modules) & {LIVE_ONLY!r}))")
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE}
    done = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stderr
