"""The report-shape checks of compare: every field the diff reads, in both reports, checked before it compares,
each problem one line naming the file, the row and the field."""
from typing import Callable

from whichstage.cassette import read_json
from whichstage.stages import BEHAVIOUR_JUDGED, STAGES

# A different model under test, prompt or pages is what a comparison is for; these change the measurement.
MEASURED_BY = ("cases", "cases_sha", "judge", "embedder", "k", "strict_faithfulness", "criteria")
ERROR = "error"
FIRST_FAILURES = (*STAGES, ERROR)
ROW_STAGES = ("behaviour", "tools", "retrieval")  # a row field each; the other stages are in row["judged"]


class CompareError(Exception):
    """A report that cannot be compared: unreadable, not a report, or measured differently."""


class ShapeError(Exception):
    """A report field compare reads is missing or of the wrong type: 'where: what is wrong'."""


def load_report(path: str) -> dict:
    """Read one saved report and check the shape of every field compare reads (check_report), turning every
    way it can be unusable into a one-line error naming the file as typed."""
    report = read_json(path, CompareError, path)
    if not looks_like_report(report):
        raise CompareError(f"{path}: not an evaluation report (expected 'key', 'threshold' and 'rows' with 'id' "
                           f"and 'first_failure')")
    try:
        check_report(report)
    except ShapeError as e:
        raise CompareError(f"{path}: {e}") from None
    return report


def looks_like_report(data: object) -> bool:
    """An evaluation report, however broken, rather than some other JSON (a calibration report has 'key',
    'threshold' and 'rows' too, but no row of it has a first failure)."""
    if not (isinstance(data, dict) and {"key", "threshold", "rows"} <= data.keys()):
        return False
    rows = data["rows"]
    return not (isinstance(rows, list) and rows and not any(isinstance(r, dict) and "first_failure" in r
                                                            for r in rows))


def kind(value: object) -> str:
    """A JSON value's type as a sentence names it."""
    if value is None:
        return "null"
    for types, name in ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "a list"),
                        (dict, "an object")):
        if isinstance(value, types):
            return name
    return type(value).__name__


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def expect(holder: dict, field: str, where: str, ok: Callable[[object], bool], wanted: str,
           required: bool = True) -> object:
    """holder[field], refused unless ok(value); an absent field is refused when required, else None."""
    if field not in holder:
        if required:
            raise ShapeError(f"{where}.{field}: missing")
        return None
    value = holder[field]
    if not ok(value):
        raise ShapeError(f"{where}.{field}: expected {wanted}, got {kind(value)}")
    return value


def is_str(value: object) -> bool:
    return isinstance(value, str)


def is_object(value: object) -> bool:
    return isinstance(value, dict)


def is_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def or_null(ok: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or ok(value)


def one_line(case_id: str) -> str:
    """A case id as a refusal shows it: quoted when it holds a line break or another unprintable character."""
    return case_id if case_id.isprintable() else repr(case_id)


def check_report(report: dict) -> None:
    """Refuse, with a ShapeError, a report missing a field compare reads or holding one of the wrong type:
    the key's measured-with fields, the threshold, the split, and every row (see check_row)."""
    key = report["key"]
    if not isinstance(key, dict):
        raise ShapeError(f"key: expected an object, got {kind(key)}")
    for field in MEASURED_BY:  # compared and shown, never computed with: any JSON scalar
        expect(key, field, "key", lambda v: v is None or isinstance(v, (str, int, float)),
               "a string, number, boolean or null", required=field != "criteria")  # a project without criteria
    if not is_number(report["threshold"]):
        raise ShapeError(f"threshold: expected a number, got {kind(report['threshold'])}")
    own = report.get("thresholds", {})
    if not isinstance(own, dict):
        raise ShapeError(f"thresholds: expected an object, got {kind(own)}")
    for stage, value in own.items():
        if not is_number(value):
            raise ShapeError(f"thresholds.{stage}: expected a number, got {kind(value)}")
    if "split" in report and not isinstance(report["split"], str):
        raise ShapeError(f"split: expected a string, got {kind(report['split'])}")
    if not isinstance(report["rows"], list):
        raise ShapeError(f"rows: expected a list, got {kind(report['rows'])}")
    seen: dict[str, int] = {}
    for i, r in enumerate(report["rows"]):
        if not isinstance(r, dict):
            raise ShapeError(f"rows[{i}]: expected an object, got {kind(r)}")
        expect(r, "id", f"rows[{i}]", is_str, "a string")
        where = f"rows[{i}] ({one_line(r['id'])})"
        if r["id"] in seen:
            raise ShapeError(f"{where}.id: the same id as rows[{seen[r['id']]}]")
        seen[r["id"]] = i
        check_row(r, where)


def check_row(r: dict, where: str) -> None:
    """The fields of one row the diff reads: first_failure; for an errored row its error text; otherwise what
    stages.stage_results reads of every stage, and what stages.failure_reason reads of the first failing one."""
    first = expect(r, "first_failure", where, or_null(is_str), "a stage name or null")
    own = expect(r, "criteria", where, is_object, "an object of thresholds", required=False) or {}
    for name in own:
        expect(own, name, f"{where}.criteria", is_number, "a number")
    valid = (*FIRST_FAILURES, *own)
    if first is not None and first not in valid:
        raise ShapeError(f"{where}.first_failure: unknown stage {first!r} (valid: {', '.join(valid)})")
    expect(r, "error", where, or_null(is_str), "a string or null", required=False)
    if first == ERROR:
        return
    if first in ROW_STAGES and r.get(first) is None:
        raise ShapeError(f"{where}.{first}: {'null' if first in r else 'missing'}, but first_failure names it")
    # stage_results: every stage the row measured
    for field in ("behaviour", "tools"):
        if expect(r, field, where, or_null(is_object), "an object or null", required=False) is not None:
            expect(r[field], "pass", f"{where}.{field}", lambda v: isinstance(v, bool), "a boolean")
    if expect(r, "retrieval", where, or_null(is_object), "an object or null", required=False) is not None:
        expect(r["retrieval"], "recall", f"{where}.retrieval", is_number, "a number")
    expect(r, "expected_behavior", where, is_str, "a string", required=False)
    judged = expect(r, "judged", where, is_object, "an object", required=False) or {}
    for name, verdict in judged.items():
        if name in BEHAVIOUR_JUDGED:
            continue
        if not isinstance(verdict, dict):
            raise ShapeError(f"{where}.judged.{name}: expected an object, got {kind(verdict)}")
        expect(verdict, "score", f"{where}.judged.{name}", or_null(is_number), "a number or null")
        expect(verdict, "threshold", f"{where}.judged.{name}", is_number, "a number", required=False)
    if first is not None and first not in ROW_STAGES and first not in judged:
        raise ShapeError(f"{where}.judged.{first}: missing, but first_failure names it")
    # failure_reason: what it reads of the first failing stage
    if first is None:
        return
    if first == "tools":
        tools = r["tools"]
        expect(tools, "reason", f"{where}.tools", or_null(is_str), "a string or null")
        if "deepeval" not in tools:
            for field in ("missing", "unexpected"):
                expect(tools, field, f"{where}.tools", is_strings, "a list of strings")
        expect(tools, "wrong_args", f"{where}.tools", is_strings, "a list of strings", required=False)
    elif first == "behaviour":
        expect(r["behaviour"], "failures", f"{where}.behaviour", is_strings, "a list of strings")
    elif first == "retrieval":
        expect(r["retrieval"], "missed", f"{where}.retrieval", is_strings, "a list of strings")
        expect(r, "retrieved", where, is_strings, "a list of strings")
        counterfactual = expect(r, "counterfactual", where, or_null(is_object), "an object or null", required=False)
        if counterfactual and counterfactual.get("available") is False:
            expect(counterfactual, "why", f"{where}.counterfactual", is_str, "a string")
        elif counterfactual:
            fixed = expect(counterfactual, "fixed", f"{where}.counterfactual", lambda v: isinstance(v, bool),
                           "a boolean")
            if not fixed:
                expect(counterfactual, "first_failure", f"{where}.counterfactual", or_null(is_str),
                       "a stage name or null")
    else:
        expect(judged[first], "reason", f"{where}.judged.{first}", or_null(is_str), "a string or null")
