"""`python evaluate.py merge SHARD...`: combine the shard recordings of one run (`--live --shard I/N`, each a
fixed slice of the cases, recorded on separate machines) into the project's recording beside them.

Refused, with one line and exit 2, before anything is written: a file that is not a shard recording, shards
of other models, case sets or inputs (their `inputs` hash: cases, pages, records, agent), two copies of one
shard, a shard missing, an entry two shards both hold with different values or dependencies, and a live run of the
project's recording under way (it holds the recording's lock, which the merge takes while it writes).

The merged recording keeps the shards' requests (cassette/requests.py) as one run would: each with the entries
that used it in any shard, so the next live run pays only for requests never sent. A request two shards got
different answers to is no conflict (a model need not answer the same twice; each entry holds its own): the
first shard's answer is kept, as one run serves a request asked twice its first answer, and the merge says so.
"""
import argparse
import re
from whichstage._util import console
from pathlib import Path
from typing import Any, Optional, cast
from whichstage._util.exits import WhichstageError

SHARD_NAME = re.compile(r"^(?P<name>.+)\.shard-(?P<i>[0-9]+)-of-(?P<n>[0-9]+)\.json$")


class MergeError(WhichstageError):
    """Shards that cannot be merged into one recording."""


def merged(paths: list[Path]) -> tuple[Path, dict]:
    """The project's recording path and its content, from every shard of one run."""
    from whichstage.recording.format import read_recording
    from whichstage._util.files import shown
    from whichstage.recording.requests import union
    from whichstage.model import replay_check as shapes

    if not paths:
        raise MergeError("name the shard recordings to merge (recordings/NAME.shard-I-of-N.json)")
    keys: Optional[dict] = None
    target: Optional[Path] = None
    entries: dict[str, Any] = {}
    owner: dict[str, Path] = {}
    seen: dict[int, Path] = {}
    requests: dict[int, dict] = {}
    for path in paths:
        found = SHARD_NAME.match(Path(path).name)
        if not found:
            raise MergeError(f"{shown(path)}: not a shard recording (NAME.shard-I-of-N.json)")
        data = read_recording(path, shapes.problem)
        key = data["key"]
        if "shard" not in key or "inputs" not in key:
            raise MergeError(f"{shown(path)}: its key names no shard: not recorded with --shard")
        i, n = int(found.group("i")), int(found.group("n"))
        here = Path(path).with_name(f"{found.group('name')}.json")
        if keys is None:
            keys, first, target, total = {k: v for k, v in key.items() if k != "shard"}, path, here, n
        else:
            other = {k: v for k, v in key.items() if k != "shard"}
            differ = [k for k in dict.fromkeys([*keys, *other]) if keys.get(k) != other.get(k)]
            if differ or n != total or here != target:
                what = ", ".join(differ) if differ else "the number of shards" if n != total else "the run"
                raise MergeError(f"{shown(path)}: recorded with other {what} than {shown(first)}: not one run")
        if i in seen:
            raise MergeError(f"{shown(path)}: shard {i}/{n} is {shown(seen[i])} too")
        seen[i] = path
        shard_requests = data.get("requests")
        requests[i] = shard_requests if isinstance(shard_requests, dict) else {}
        for name, item in data["entries"].items():
            if name in entries and entries[name] != item:
                raise MergeError(f"{shown(path)}: entry {name} differs from the one in {shown(owner[name])}")
            entries.setdefault(name, item)
            owner.setdefault(name, path)
    # paths is not empty (refused above): its first shard set keys and target
    keys, target = cast(dict, keys), cast(Path, target)
    missing = [i for i in range(1, total + 1) if i not in seen]
    if missing:
        raise MergeError(f"shard {missing[0]}/{total} is missing: merge every shard of the run")
    key = {k: v for k, v in keys.items() if k != "inputs"}
    kept, differ = union([requests[i] for i in sorted(requests)], set(entries))
    return target, {"key": key, "entries": dict(sorted(entries.items())), "requests": kept, "differ": differ}


def main(argv: Optional[list[str]] = None) -> int:
    prog = console.name("evaluate.py")  # how the user called this command, for its messages
    parser = argparse.ArgumentParser(prog=f"{prog} merge", description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("shards", nargs="+", metavar="SHARD", help="the shard recordings of one run")
    args = parser.parse_args(argv)
    from whichstage._util.ending import ended
    from whichstage._util.files import shown, write_atomic
    from whichstage.recording.format import dumps_recording, entry_count
    from whichstage.recording.lock import hold

    try:
        target, content = merged([Path(p) for p in args.shards])
        lock = hold(target, "merge")  # a live run of the same recording would write over the merge, or it over that
        try:
            write_atomic(target, dumps_recording(content["key"], content["entries"], content["requests"]))
        finally:
            lock.close()
    except (WhichstageError, OSError) as e:
        return ended(f"{prog}: merge", e)
    n, differ = len(content["requests"]), content["differ"]
    answered = f"; {len(differ)} answered differently in two shards: the first shard's answer kept" if differ else ""
    print(f"merged {len(args.shards)} shards ({entry_count(len(content['entries']))}, "
          f"{n} request{'' if n == 1 else 's'}{answered}) into {shown(target)}")
    return 0
