"""A run's files: recordings and reports named by the case set, model, embedder and judge, which recordings
a replay reads, reports written only when their text changed, and every written report kept under a label in
runs/history/<name>/<label>.*."""
import hashlib
import os
import re
from pathlib import Path
from typing import Optional


from whichstage._util.files import RecordingError, shown
from whichstage.recording.format import read_key
from whichstage.model.errors import InputError

CALIBRATION_PREFIX = "calibration+"
HISTORY = Path("runs") / "history"  # runs/history/<run name>/<label>.json, .md and .html
TIME_LABEL = "%Y%m%dT%H%M%SZ"  # the default label: the UTC time the reports were written
MODEL_VARIABLES = {"model": "DOCS_MODEL", "embedder": "DOCS_EMBEDDER", "judge": "DOCS_JUDGE"}


def header(cases: str, model: str, embedder: str, judge: str) -> dict:
    """A recording file's own key: the case set's name and the three models, which its name carries too."""
    return {"cases": cases, "model": model, "embedder": embedder, "judge": judge}


def run_name(cases: str, model: str, embedder: str, judge: str) -> str:
    """One recording and one report per case set, model, embedder and judge: recordings/<name>.json,
    runs/<name>.* A run of another case set or with another model gets its own files and never replaces these."""
    return "+".join(file_part(n) for n in (cases, model, embedder, judge))


SAFE = re.compile(r"[A-Za-z0-9._-]+")


def file_part(name: str) -> str:
    """A name as part of a file name, one-to-one: a name of ASCII letters, digits, '.', '_' and '-' as it is;
    any other with each run of other characters as '-' and 8 hex digits of its SHA-256 after a '~', so two
    names never share a file (`llama3.2:3b` -> `llama3.2-3b~925b2caf`, never `llama3.2-3b`)."""
    if SAFE.fullmatch(name) and not name.startswith("."):
        return name
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".") or "-"
    return f"{readable}~{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def replay_targets(folder: Path, cases: str, model: Optional[str], judge: Optional[str] = None) -> list[Path]:
    """The recordings of the case set `cases` to replay: those of the models named by --model and the DOCS_*
    variables, or all. Only files named for this case set are read (not its shards, which `merge` combines),
    so a stray file beside them is not mistaken for one; a file so named that is not a recording is refused,
    naming it."""
    from whichstage._util.redact import printable

    wanted = {"cases": cases, **{field: os.environ.get(variable) for field, variable in MODEL_VARIABLES.items()}}
    wanted["model"] = model or wanted["model"]
    wanted["judge"] = judge or wanted["judge"]
    folder = folder / "recordings"
    prefix = file_part(cases) + "+"
    paths = sorted(p for p in folder.glob("*.json") if p.name.startswith(prefix) and ".shard-" not in p.name)
    chosen = []
    for path in paths:
        names = read_key(path)
        if all(value is None or names.get(field) == value for field, value in wanted.items()):
            chosen.append(path)
    if not chosen:
        asked = ", ".join(f"{f} {printable(v)}" for f, v in wanted.items() if v)
        raise RecordingError(f"{shown(folder)}: no recording for {asked}; record one with --live")
    return chosen


def checked_label(label: Optional[str]) -> Optional[str]:
    """--label as given, refused unless it is letters, digits, '.', '_' and '-' (not starting with '.', at most
    100 characters): it is a file name. None stays None (the time is the label)."""
    if label is not None and not (SAFE.fullmatch(label) and not label.startswith(".") and len(label) <= 100):
        raise InputError(f"--label {label!r}: a label is letters, digits, '.', '_' and '-', not starting "
                         "with '.', at most 100 characters")
    return label


def labelled(folder: Path, label: str) -> list[Path]:
    """The reports kept under `label` ('LABEL', or 'RUN/LABEL' for one run's) in folder's runs/history."""
    run, _, name = label.rpartition("/")
    runs = [folder / HISTORY / run] if run else sorted((folder / HISTORY).glob("*"))
    return [path for path in (run / f"{name}.json" for run in runs) if path.is_file()]


def kept_labels(folder: Path) -> list[str]:
    """Every label kept in folder's runs/history, each once, sorted."""
    return sorted({path.stem for path in (folder / HISTORY).glob("*/*.json")})
