"""The pytest plugin pip installs with whichstage (entry point `whichstage`, or `-p whichstage`): it says it is
loaded in the session's header and ends each session's cache of replays (whichstage.testing.cases)."""
import pytest

from whichstage.testing.cases import forget


def pytest_report_header() -> str:
    return "whichstage: project_cases() replays each project once per session"


@pytest.hookimpl(trylast=True)
def pytest_unconfigure() -> None:
    forget()
