"""One writer of a recording at a time: an exclusive lock on `.NAME.lock` beside it, which names its holder."""
import datetime
import errno
import os
from pathlib import Path
from typing import IO

import portalocker

from whichstage._util.files import RecordingError, shown

HELD = (errno.EACCES, errno.EAGAIN)  # held elsewhere, as older portalockers say it: a plain LockException
WRITERS = {"live": "another live run is recording it", "merge": "a merge of its shards is writing it"}


def hold(path: Path, writer: str = "live") -> IO[str]:
    """The exclusive lock beside a recording, as the open lock file holding it (close it to release; the system
    releases it when its process ends, however it ends): a live run (`writer` "live") or a merge ("merge").
    Another process holding it is a RecordingError naming what it is, its pid and its start time."""
    lock = Path(path).with_name(f".{Path(path).stem}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    handle = open(lock, "a+", encoding="utf-8")
    try:
        portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
    except portalocker.LockException as e:
        cause = e.__cause__  # the system's error
        if not (isinstance(e, portalocker.AlreadyLocked) or getattr(cause, "errno", None) in HELD):
            handle.close()  # a file system without locks (some network or FUSE mounts)
            raise RecordingError(f"{shown(lock)}: cannot take the live run's lock: "
                                 f"{getattr(cause, 'strerror', None) or cause or e}") from None
        handle.seek(0)
        lines = handle.read().splitlines()
        handle.close()
        holder = " ".join(lines[0].split())[:120] if lines and lines[0].strip() else "another process"
        other = WRITERS.get(lines[1].strip() if len(lines) > 1 else "live", WRITERS["live"])
        raise RecordingError(f"{shown(path)}: {other} ({holder}); wait for it to end, or stop it") from None
    except BaseException:
        handle.close()
        raise
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}, since {datetime.datetime.now().isoformat(timespec='seconds')}\n{writer}\n")
    handle.flush()
    return handle
