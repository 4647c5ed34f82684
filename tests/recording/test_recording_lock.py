"""Who may write a recording at once: merge refuses while a live run holds it, a live run refuses while a merge
holds it, and a lock held by an older portalocker still names its holder."""
import os

import pytest

from whichstage.cli import run as evaluate
from whichstage._util.files import RecordingError
from whichstage.recording.lock import hold
from conftest import OFFLINE_RUN


def recording_of(folder):
    return folder / "recordings" / f"{OFFLINE_RUN}.json"


def test_merge_refuses_while_a_live_run_holds_the_recording(live_project, capsys):
    for shard in ("1/2", "2/2"):
        assert evaluate.main(["--live", "--quiet", "--shard", shard]) == 0
    shards = sorted(str(p) for p in (live_project / "recordings").glob("*.shard-*-of-2.json"))
    before = recording_of(live_project).read_bytes()
    capsys.readouterr()
    live = hold(recording_of(live_project))  # as a live run of the project's recording holds it
    try:
        assert evaluate.main(["merge", *shards]) == 2
    finally:
        live.close()
    err = capsys.readouterr().err
    assert err.startswith(f"evaluate.py: merge: recordings/{OFFLINE_RUN}.json: another live run is recording it (pid ")
    assert recording_of(live_project).read_bytes() == before


def test_a_live_run_refuses_while_a_merge_holds_the_recording(live_project, capsys):
    merging = hold(recording_of(live_project), "merge")
    try:
        assert evaluate.main(["--live", "--quiet"]) == 2
    finally:
        merging.close()
    assert f"{OFFLINE_RUN}.json: a merge of its shards is writing it (pid " in capsys.readouterr().err


def test_a_lock_held_elsewhere_as_an_older_portalocker_says_it_names_its_holder(tmp_path, monkeypatch):
    import errno

    import portalocker

    from whichstage.recording import lock

    path = tmp_path / "tape.json"
    holding = hold(path, "merge")
    holding.close()  # its holder's line stays in the lock file

    def held(handle, flags):  # portalocker 2: contention as a plain LockException, the system's error its cause
        raise portalocker.LockException("locked") from OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
    monkeypatch.setattr(lock.portalocker, "lock", held)
    with pytest.raises(RecordingError, match=rf"tape\.json: a merge of its shards is writing it \(pid {os.getpid()}, "):
        hold(path)
