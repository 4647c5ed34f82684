"""A run's report files: runs/<name>.json, .md and .html written only when their text changed, every written
report kept under a label in runs/history/<name>/<label>.*, and the baseline gate's summary."""
import json
import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import orjson

from whichstage._util.files import shown, write_atomic
from whichstage.model.errors import InputError
from whichstage.run.files import HISTORY, TIME_LABEL, run_name
from whichstage.model.dicts import ReportDict

Files = dict[Path, Callable[[], Iterable[str]]]  # a report's files, each as the producer of its text's pieces


def report_files(folder: Path, report: ReportDict, text: Optional[str] = None,
                 views: Optional[list] = None) -> dict[Path, Callable[[], Iterable[str]]]:
    """runs/<name>.json, .md and .html of a report, each as the producer of its text's pieces; a split other
    than dev adds its name. `text` is the report's markdown and `views` its rows' stage views (stage_view.
    row_view), when the caller has them already."""
    from whichstage.render.html import html_parts
    from whichstage.render.markdown import markdown

    stem = report_stem(folder, report)
    return {stem.with_name(f"{stem.name}.json"): lambda: json_lines(report),
            stem.with_name(f"{stem.name}.md"): lambda: [text or markdown(report), "\n"],
            stem.with_name(f"{stem.name}.html"): lambda: html_parts(report, views)}


def report_stem(folder: Path, report: ReportDict) -> Path:
    """runs/<name> of a report's files, without a suffix; a split other than dev adds its name."""
    key = report["key"]
    name = run_name(key["cases"].rsplit("@", 1)[0], key["model"], key["embedder"], key["judge"])
    return folder / "runs" / (name if report["split"] == "dev" else f"{name}.{report['split']}")


def json_lines(report: ReportDict) -> Iterator[str]:
    """A report as JSON: each top-level field on a line of its own, and each row on one line, so a diff of
    two reports shows the cases that changed, and a report of 10,000 cases is written a row at a time."""
    yield "{\n"
    for i, (field, value) in enumerate(report.items()):
        comma = ",\n" if i < len(report) - 1 else "\n"
        if field == "rows" and isinstance(value, list) and value:
            yield '  "rows": [\n'
            for j, row in enumerate(value):
                yield f"    {one_line(row)}{',' if j < len(value) - 1 else ''}\n"
            yield "  ]" + comma
        else:
            yield f"  {one_line(field)}: {one_line(value)}{comma}"
    yield "}\n"


def one_line(value: Any) -> str:
    """A value as one line of JSON, compact, UTF-8 as it is (orjson, quick; JSON has no NaN, so a non-finite
    number is null); json.dumps's where orjson refuses (an integer beyond 64 bits, a lone surrogate)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value)


def write_if_changed(path: Path, text) -> None:
    """Write atomically, and not at all when the file already holds exactly this text (a str, or a producer
    of its pieces, which is called again to write when the file differs)."""
    produce = (lambda: [text]) if isinstance(text, str) else text
    if not holds(path, produce()):
        write_atomic(path, produce())


def holds(path: Path, chunks: Iterable[str]) -> bool:
    """Whether the file holds exactly the text of `chunks`, read along with them a piece at a time."""
    try:
        with open(path, "rb") as f:
            for chunk in chunks:
                data = chunk.encode("utf-8")
                if f.read(len(data)) != data:
                    return False
            return f.read(1) == b""
    except OSError:
        return False


def write_reports(folder: Path, reports: list[ReportDict], texts: list[str], label: Optional[str] = None,
                  views: Optional[list[list]] = None) -> None:
    """Write each report as its run's latest (runs/<name>.*, only when its text changed) and keep a copy in the
    history as runs/history/<name>/<label>.*. An explicit label that already holds another report is refused
    before anything is written; without one, the UTC time is the label, with -2, -3... if that second is taken."""
    seen_views: Sequence[Optional[list]] = views if views else [None] * len(reports)
    latest = [report_files(folder, report, text, seen)
              for report, text, seen in zip(reports, texts, seen_views, strict=False)]
    if label is None:
        label = free_label(latest, utc_now().strftime(TIME_LABEL))
    for files in latest:
        refuse_taken(files, label)
    for files in latest:
        for path, pieces in files.items():
            write_if_changed(path, pieces)
    for files in latest:
        for path in files:  # the latest file, copied rather than rendered again
            kept = kept_path(path, label)
            if not holds(kept, pieces_of(path)):
                copy_atomic(path, kept)


def write_gate_summary(folder: Path, report: ReportDict, text: str) -> Path:
    """The baseline gate's markdown summary as runs/<name>.gate.md, appended to GitHub's step summary too when
    GITHUB_STEP_SUMMARY names its file; returns the file written."""
    stem = report_stem(folder, report)
    path = stem.with_name(f"{stem.name}.gate.md")
    write_atomic(path, text)
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    return path


def utc_now() -> datetime:
    """The time now, in UTC: the default label's."""
    return datetime.now(timezone.utc)


def kept_path(latest: Path, label: str) -> Path:
    """Where the history keeps a latest file under `label`: runs/<name>.json -> runs/history/<name>/<label>.json."""
    return latest.parent / HISTORY.name / latest.stem / f"{label}{latest.suffix}"


def copy_atomic(source: Path, path: Path) -> None:
    """Copy a file by the OS (no text decoded and encoded again: a report of 10,000 cases is tens of megabytes)
    through a temp file beside `path`, renamed into place: never a torn copy, and no temp file left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(source, tmp)
        os.chmod(tmp, 0o644)  # as write_atomic's: mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            e.filename = str(path)  # the file asked for, not the temp file beside it
        raise


def pieces_of(path: Path) -> Iterator[str]:
    """A file's text as it is, a megabyte at a time."""
    with open(path, encoding="utf-8", newline="") as f:
        while piece := f.read(1 << 20):
            yield piece


def free_label(latest: list[Files], label: str) -> str:
    """`label`, or label-2, label-3...: the first that no run of this invocation has kept yet."""
    taken = lambda name: any(kept_path(path, name).exists() for files in latest for path in files)  # noqa: E731
    suffix = 1
    while taken(label if suffix == 1 else f"{label}-{suffix}"):
        suffix += 1
    return label if suffix == 1 else f"{label}-{suffix}"


def refuse_taken(latest: Files, label: str) -> None:
    """Refuse a label whose files hold another report; the same report again writes nothing and is allowed."""
    for path, pieces in latest.items():
        kept = kept_path(path, label)
        if kept.exists() and not holds(kept, pieces()):
            raise InputError(f"--label {label}: {shown(kept)} already holds another run; choose another label, "
                             "or delete that run's files to reuse it")
