"""A second judge (--judge2) after a first pass that ended incomplete reuses every trace the first pass kept:
each trace is paid for once."""
import json

import pytest

from whichstage._util.exits import Exit
from whichstage.cli import run as evaluate
from conftest import OFFLINE_RUN, serial_judge, edit_cases, failing_judge
from whichstage.providers.settings import GEMINI_URL_VARIABLE


SECOND = "gemini-3.8-flash"


def recording_of(folder):
    return folder / "recordings" / f"{OFFLINE_RUN}.json"


def test_a_second_judge_reuses_the_traces_an_incomplete_first_pass_kept(live_project, shared_ssl_contexts,
                                                                       fake_models, capsys):
    from whichstage.standins import gemini as gemini_standin
    from whichstage.standins.gemini import serve

    recording_of(live_project).unlink()  # every trace is paid for by this run's first pass
    edit_cases(live_project, lambda d: d.update(cases=[c for c in d["cases"] if c["id"] in ("backup", "issue-212")]))
    failing_judge(fake_models, json.loads((live_project / "cases.json").read_text())["cases"][0]["question"])
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, gemini_standin)
        with serve(models=[SECOND]) as standin:
            mp.setenv("GOOGLE_API_KEY", "test")
            mp.setenv(GEMINI_URL_VARIABLE, standin.url)
            code = evaluate.main(["--live", "--quiet", "--judge2", SECOND])
    assert code == Exit.INCOMPLETE, capsys.readouterr().err  # the first judge left backup errored
    runs = fake_models.runs()
    assert sorted(runs) == sorted(set(runs)) and len(runs) == 2  # each trace once: the second pass paid for none
