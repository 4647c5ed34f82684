"""The pytest entry (whichstage.testing and its plugin): a user's own suite replays a project made by `init` and
recorded offline, one test per case, each failing at its first failing stage. Each runs pytest inside pytest."""
import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import OFFLINE, recorded_init

pytest_plugins = ["pytester"]
PLUGIN = ("--disable-plugin-autoload", "-p", "whichstage.testing.pytest_plugin")
SUITE = """
import pytest
from whichstage.testing import assert_case_passes, project_cases

@pytest.mark.parametrize("case", project_cases({folder!r}))
def test_case(case):
    assert_case_passes(case)
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A project written by `init`, its order case expecting another order's id, recorded offline with --live."""
    def edit(folder: Path, cases: dict) -> None:
        order = next(c for c in cases["cases"] if c["id"] == "order-status")
        order["expected_args"]["get_order"]["order_id"] = "ORD-1001"

    return recorded_init(tmp_path_factory.mktemp("entry") / "mine", edit)


@pytest.fixture
def project(recorded, tmp_path, monkeypatch) -> Path:
    """A copy of the recorded project, free to edit; the offline models chosen, as a replay of it needs."""
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    return Path(shutil.copytree(recorded, tmp_path / "mine"))


def test_a_failing_case_fails_with_its_first_failing_stage_and_reason(pytester, project):
    pytester.makepyfile(test_evals=SUITE.format(folder=str(project)))
    result = pytester.runpytest(*PLUGIN)
    result.stdout.fnmatch_lines(["*order-status: first failing stage tools: wrong argument*ORD-1001*"])
    assert result.parseoutcomes()["failed"] == 1


def test_passing_cases_pass(pytester, project):
    pytester.makepyfile(test_evals=SUITE.format(folder=str(project)))
    result = pytester.runpytest(*PLUGIN, "-v")
    result.stdout.fnmatch_lines_random([f"*test_case?{case}? PASSED*" for case in ("offline-edits", "printing",
                                                                                    "hello")])


def test_a_stale_recording_fails_the_collection_in_one_line(pytester, project):
    cases = json.loads((project / "cases.json").read_text())
    cases["cases"][0]["question"] = "Do notes I edit on a plane get synced?"
    (project / "cases.json").write_text(json.dumps(cases))
    pytester.makepyfile(test_evals=SUITE.format(folder=str(project)))
    result = pytester.runpytest(*PLUGIN)
    assert result.ret == pytest.ExitCode.INTERRUPTED and result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*ERROR collecting test_evals.py*", "whichstage: *acme-notes+rules+hash+lexical.json: "
                                 "stale: case offline-edits (question changed*; record again with --live"])


def test_a_project_is_replayed_once_per_session(pytester, project):
    first = SUITE.format(folder=str(project)) + f"\nimport shutil\nshutil.rmtree({str(project / 'recordings')!r})\n"
    pytester.makepyfile(test_first=first, test_second=SUITE.format(folder=str(project)))
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=6, failed=2)


def test_the_plugin_ends_the_replays_with_the_session(pytester, project):
    import whichstage.testing  # noqa: F401 - kept loaded across both sessions, as in a process running pytest twice

    pytester.makepyfile(test_evals=SUITE.format(folder=str(project)))
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=3, failed=1)
    shutil.rmtree(project / "recordings")
    pytester.runpytest(*PLUGIN).assert_outcomes(errors=1)


def test_the_plugin_says_it_is_loaded(pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    pytester.runpytest(*PLUGIN).stdout.fnmatch_lines(["whichstage: project_cases() replays each project once per "
                                                      "session"])


# ---- DeepEval's and LangSmith's pytest plugins: autoloaded wherever the harness is installed ------------------

README = Path(__file__).resolve().parents[2] / "README.md"
# Autoloading on: pytest loads every other plugin (pytest-asyncio's default loop scope set, to keep it quiet).
WITH_WHICHSTAGE = ("-p", "whichstage.testing.pytest_plugin", "-o", "asyncio_default_fixture_loop_scope=function")
LOADED = """
def test_loaded(request):
    found = [n for n in ("deepeval", "langsmith_plugin") if request.config.pluginmanager.has_plugin(n)]
    print("loaded:", " ".join(found) or "none")
"""
HINT = ("whichstage: DeepEval's and LangSmith's pytest plugins, autoloaded, cost seconds a run: unless your tests "
        "use them, add -p no:deepeval -p no:langsmith_plugin to addopts (docs/testing.md)")


def readme_pytest_config() -> str:
    """The pytest configuration the README gives beside its pytest entry."""
    blocks = re.findall(r"^```toml\n(.*?)^```", README.read_text(), re.S | re.M)
    return next(b for b in blocks if "[tool.pytest.ini_options]" in b)


def test_without_configuration_pytest_loads_deepevals_and_langsmiths_plugins(pytester):
    pytester.makepyfile(test_plugins=LOADED)
    pytester.runpytest(*WITH_WHICHSTAGE, "-s").stdout.fnmatch_lines(["*loaded: deepeval langsmith_plugin"])


def test_the_readmes_pytest_configuration_skips_them(pytester):
    pytester.makepyprojecttoml(readme_pytest_config())
    pytester.makepyfile(test_plugins=LOADED)
    pytester.runpytest(*WITH_WHICHSTAGE, "-s").stdout.fnmatch_lines(["*loaded: none"])


def test_the_plugin_names_the_autoloaded_ones_and_how_to_skip_them(pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    pytester.runpytest(*WITH_WHICHSTAGE).stdout.fnmatch_lines([HINT])


def test_the_plugin_names_none_once_they_are_skipped(pytester):
    pytester.makepyprojecttoml(readme_pytest_config())
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    assert "cost seconds a run" not in pytester.runpytest(*WITH_WHICHSTAGE).stdout.str()


def test_the_plugin_does_not_name_one_a_run_asks_for(pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest(*WITH_WHICHSTAGE, "-p", "deepeval")
    result.stdout.fnmatch_lines(["whichstage: LangSmith's pytest plugin, autoloaded, costs seconds a run: unless your "
                                 "tests use it, add -p no:langsmith_plugin to addopts (docs/testing.md)"])
