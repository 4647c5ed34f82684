"""`--export MODE FILE`: a run's verdicts written as OpenTelemetry events (export_otel.py) or as one row per case
and stage in JSONL or CSV (export_rows.py), each module imported only when its mode is written."""
from pathlib import Path
from typing import Union

from whichstage.model.dicts import ReportDict
from whichstage.model.errors import InputError

MODES = ("otel", "jsonl", "csv")  # what --export writes


def check_mode(mode: str) -> str:
    """`mode` if --export writes it, else InputError naming the valid ones."""
    if mode not in MODES:
        raise InputError(f"--export: unknown mode {mode!r} (valid: {', '.join(MODES)})")
    return mode


def export(reports: list[ReportDict], mode: str, path: Union[str, Path]) -> None:
    """Write the reports as `mode` (MODES) to `path`, atomically: otel events, or the stage records as jsonl or
    csv."""
    if check_mode(mode) == "otel":
        from whichstage.render.export_otel import write_otel

        write_otel(reports, path)
    else:
        from whichstage.render.export_rows import write_rows

        write_rows(reports, path, mode)
