"""The pytest plugin pip installs with whichstage (entry point `whichstage`, or `-p whichstage`): it says it is
loaded in the session's header, names the slow plugins the harness's dependencies bring when pytest loaded them
by itself, and ends each session's cache of replays (whichstage.testing.cases)."""
import pytest

from whichstage.testing.cases import forget

# The pytest plugins DeepEval and LangSmith install, by entry-point name: loading them costs seconds a run.
DEPENDENCY_PLUGINS = {"deepeval": "DeepEval", "langsmith_plugin": "LangSmith"}


def autoloaded(config: pytest.Config) -> list[str]:
    """The DEPENDENCY_PLUGINS pytest loaded by itself: registered, and not named by a `-p`."""
    named = set(getattr(config.option, "plugins", None) or [])
    return [name for name in DEPENDENCY_PLUGINS
            if config.pluginmanager.has_plugin(name) and name not in named]


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = ["whichstage: project_cases() replays each project once per session"]
    slow = autoloaded(config)
    if slow:
        owners = " and ".join(f"{DEPENDENCY_PLUGINS[n]}'s" for n in slow)
        plugins = "plugins, autoloaded, cost" if len(slow) > 1 else "plugin, autoloaded, costs"
        lines.append(f"whichstage: {owners} pytest {plugins} seconds a run: unless your tests use "
                     f"{'them' if len(slow) > 1 else 'it'}, add {' '.join('-p no:' + n for n in slow)} to addopts "
                     "(docs/testing.md)")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_unconfigure() -> None:
    forget()
