"""An agent factory that raises during a live run is bad input: the run ends at once, one line naming
evals.toml's agent, exit 2, and what was paid for stays in the journal; never retried, never exit 3."""
import os
import subprocess
import sys

from conftest import OFFLINE, PROJECT


def test_a_factory_that_raises_in_a_live_run_ends_it_as_bad_input(tmp_path):
    from whichstage import init

    project = tmp_path / "notes"
    assert init.main([str(project)]) == 0
    agent = project / "agent.py"
    # The first build (reading the tools) works; every later one raises, as a factory that looks up a renamed
    # tool's records does.
    text = agent.read_text()
    signature = next(line for line in text.splitlines() if line.startswith("def build("))
    agent.write_text(text.replace(signature, "BUILT = []\n\n\n" + signature + "\n    BUILT.append(1)\n"
                                  "    if len(BUILT) > 1:\n        raise KeyError('get_order')", 1))
    env = {**os.environ, **OFFLINE, "PYTHONPATH": str(PROJECT)}  # the package of this checkout
    done = subprocess.run([sys.executable, "-m", "whichstage", "run", "--live", "--quiet"], cwd=project,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == \
        "whichstage run: evals.toml: agent: agent:build raised KeyError: 'get_order'", done.stderr
    assert "Traceback" not in done.stderr and "retry" not in done.stderr
