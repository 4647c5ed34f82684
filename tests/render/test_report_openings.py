"""Each report a replay prints opens with the run it is: its embedder, model and cases."""


def test_each_of_two_replayed_reports_opens_with_its_run(here, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main([]) == 0
    out = capsys.readouterr().out
    openings = [line for line in out.splitlines() if line.startswith("# ")]
    assert out.startswith(openings[0]) and len(openings) == 2
    assert ["embedder e5-small," in openings[0], "embedder hash," in openings[1]] == [True, True]
    assert all("cases docs-assistant@" in line and "model rules," in line for line in openings)
