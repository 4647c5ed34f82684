"""Ids that would break the markdown table or the HTML (a case's, a page's, a calibration case's) are refused
in one line naming the rule. Offline, on a copy of the project."""
from conftest import edit_json as edit, one_line

import pytest

from whichstage.analysis import calibration as calibrate
from whichstage.cli import run as evaluate

from whichstage.project.validate import ID_RULE, PAGE_ID_RULE


@pytest.mark.parametrize("bad", ["bad|id", "bad\nid", "<b>bad</b>", "two words"])
def test_a_case_id_that_would_break_the_report_is_refused_in_one_line(here, capsys, bad):
    edit(here / "cases.json", lambda cases: cases["cases"][3].update(id=bad))
    assert evaluate.main([]) == 2
    shown = bad if bad.isprintable() else repr(bad)
    assert one_line(capsys.readouterr().err) == f"evaluate.py: cases.json: cases[3] ({shown}).id: {ID_RULE}"
    assert ID_RULE == "ids may hold only ASCII letters, digits, '-', '_' and '.'"


def test_a_page_id_that_would_break_the_report_is_refused_in_one_line(here, capsys):
    edit(here / "docs.json", lambda docs: docs[2].update(id="arch|ive"))
    assert evaluate.main([]) == 2
    assert one_line(capsys.readouterr().err) == f"evaluate.py: docs.json: pages[2] (arch|ive).id: {PAGE_ID_RULE}"
    assert PAGE_ID_RULE == "a page id may not hold '|', '`' or a line break, nor start or end with a space"


def test_a_calibration_id_that_would_break_the_table_is_refused_in_one_line(here, capsys):
    edit(here / "calibration-cases.json", lambda cases: cases["cases"][1].update(id="csv|color"))
    assert calibrate.main([]) == 2
    assert one_line(capsys.readouterr().err) == \
        f"calibrate.py: calibration-cases.json: cases[1] (csv|color).id: {ID_RULE}"
