"""An agent factory that raises during a live run is bad input: the run ends at once, one line naming
evals.toml's agent, exit 2, and what was paid for stays in the journal; never retried, never exit 3."""
from conftest import OFFLINE


def test_a_factory_that_raises_in_a_live_run_ends_it_as_bad_input(tmp_path, monkeypatch, capsys):
    from whichstage import cli
    from whichstage.cli import init
    from whichstage.calls import retries as live_calls

    project = tmp_path / "notes"
    assert init.main([str(project)]) == 0
    agent = project / "agent.py"
    # The first build (reading the tools) works; every later one raises, as a factory that looks up a renamed
    # tool's records does.
    text = agent.read_text()
    signature = next(line for line in text.splitlines() if line.startswith("def build("))
    agent.write_text(text.replace(signature, "BUILT = []\n\n\n" + signature + "\n    BUILT.append(1)\n"
                                  "    if len(BUILT) > 1:\n        raise KeyError('get_order')", 1))
    monkeypatch.chdir(project)
    monkeypatch.setattr(live_calls, "sleep", lambda seconds: None)  # a retry, should one come, costs no time
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = cli.main(["run", "--live", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip().splitlines()[-1] == \
        "whichstage run: evals.toml: agent: agent:build raised KeyError: 'get_order'", err
    assert "Traceback" not in err and "retry" not in err
