"""The pytest entry: a user's own test suite replays a project and fails each case at its first failing stage.

    import pytest
    from whichstage.testing import assert_case_passes, project_cases

    @pytest.mark.parametrize("case", project_cases("evals"))
    def test_case(case):
        assert_case_passes(case)

docs/testing.md describes it; `whichstage.testing.pytest_plugin` is the plugin pip installs with it.
"""
from whichstage.testing.cases import CaseResult, assert_case_passes, project_cases

__all__ = ["CaseResult", "assert_case_passes", "project_cases"]
