"""The pytest entry: a user's own test suite replays a project and fails each case at its first failing stage.

    import pytest
    from whichstage.testing import assert_case_passes, project_cases

    @pytest.mark.parametrize("case", project_cases("evals"))
    def test_case(case):
        assert_case_passes(case)

docs/testing.md describes it; `whichstage.testing.pytest_plugin` is the plugin pip installs with it.
`make_row` and `make_report` (whichstage/testing/builders.py) build a report's rows and a report for a test of
scoring or rendering; they load on first use, so the plugin, which imports this package in every session,
imports no pydantic model (~0.2 s).
"""
from typing import TYPE_CHECKING, Any

from whichstage.testing.cases import CaseResult, assert_case_passes, project_cases

if TYPE_CHECKING:
    from whichstage.testing.builders import make_report, make_row

__all__ = ["CaseResult", "assert_case_passes", "project_cases", "make_row", "make_report"]
_LAZY = {"make_row", "make_report"}


def __getattr__(name: str) -> Any:
    """A builder, imported from whichstage/testing/builders.py on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'whichstage.testing' has no attribute {name!r}")
    from whichstage.testing import builders

    value = getattr(builders, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
