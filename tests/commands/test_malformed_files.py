"""Files that cannot be read as what they should be (a baseline that is not an object or holds a field of
the wrong type, JSON nested 1000 deep): exit 2, one line naming the file and the field. Offline, on a copy
of the project."""
import re

import pytest

from whichstage.cli import run as evaluate

from conftest import OFFLINE_RUN, edit_json as edit, outputs, one_line


def test_a_baseline_that_is_not_an_object_exits_2_naming_it(here, capsys):
    (here / "b.json").write_text("5\n")
    before = outputs(here)
    assert evaluate.main(["--check-baseline", "b.json"]) == 2
    out, err = capsys.readouterr()
    assert one_line(err).startswith("evaluate.py: b.json: not a baseline (missing measured_with, tolerance,")
    assert out == "" and outputs(here) == before


@pytest.mark.parametrize("field, value", [("tolerance", "0.1"), ("pass_rate", 0.9), ("stages.tools.passed", "10"),
                                          ("stages.faithfulness.total", True), ("retrieval.backup", "1.0"),
                                          ("measured_with", ["rules"]), ("first_failures.backup", 3)])
def test_a_baseline_field_of_the_wrong_type_exits_2_naming_the_file_and_field(here, capsys, field, value):
    def change(data):
        *parents, leaf = field.split(".")
        for part in parents:
            data = data[part]
        data[leaf] = value
    (here / "b.json").write_bytes((here / "baselines" / f"{OFFLINE_RUN}.json").read_bytes())
    edit(here / "b.json", change)
    before = outputs(here)
    assert evaluate.main(["--check-baseline", "b.json"]) == 2
    out, err = capsys.readouterr()
    assert re.fullmatch(rf"evaluate\.py: b\.json: {re.escape(field)}: Input should be a valid \w+", one_line(err))
    assert out == "" and outputs(here) == before


@pytest.mark.parametrize("name, args", [("cases.json", []), (f"recordings/{OFFLINE_RUN}.json", []),
                                        ("b.json", ["--check-baseline", "b.json"])])
def test_json_nested_1000_deep_exits_2_naming_the_file(here, capsys, name, args):
    (here / name).write_text("[" * 1000 + "]" * 1000)
    before = outputs(here)
    assert evaluate.main(args) == 2
    out, err = capsys.readouterr()
    assert one_line(err) == f"evaluate.py: {name}: nested too deeply to read"
    assert out == "" and outputs(here) == before
