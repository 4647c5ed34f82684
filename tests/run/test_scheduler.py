"""The live loop (whichstage/run/scheduler.py) as a plain scheduler: settings in, what it recorded out."""
import json

import pytest

from conftest import OFFLINE_RUN, offline_inputs


def test_a_live_run_with_everything_current_calls_nothing_and_returns_every_row(live_project):
    from whichstage.model import replay_check as shapes
    from whichstage.recording.store import Cassette, Mode
    from whichstage.run.scheduler import Live, collect
    from whichstage.run.files import header

    inputs, path = offline_inputs(live_project), live_project / "recordings" / f"{OFFLINE_RUN}.json"
    cassette = Cassette(path, header(inputs.cases["name"], "rules", "hash", "lexical"), Mode.LIVE,
                        check=shapes.problem)
    inputs.index(cassette)
    try:
        recorded = collect(inputs, cassette, Live(judge=lambda: pytest.fail("nothing to judge"),
                                                  agent=lambda: pytest.fail("nothing to run")))
    finally:
        cassette.close()
    every = json.loads((live_project / "runs" / f"{OFFLINE_RUN}.all.json").read_text())["rows"]
    assert recorded.errors == {}
    assert {cid: row["first_failure"] for cid, row in recorded.rows.items()} == \
        {row["id"]: row["first_failure"] for row in every}
