"""whichstage: evaluate a LangChain agent stage by stage and name each case's first failing stage.

The public API (docs/api.md) is `__all__`; every other module is private. Names load on first use, so
`import whichstage` imports no model library (`Case`, `Trace`, `Row`, `Report` are pydantic models of the
dicts the API returns and reads, whichstage/model/).
"""
from typing import TYPE_CHECKING, Any

__all__ = ["load_project", "replay", "record", "compare_runs", "calibrate_judge", "import_traces", "export_results",
           "export_cases", "import_cases", "Case", "Trace", "Row", "Report", "WhichstageError"]
_HOME = {"load_project": "api", "replay": "api", "record": "api", "compare_runs": "api", "calibrate_judge": "api",
         "import_traces": "api", "export_results": "api", "export_cases": "api", "import_cases": "api",
         "Case": "model.inputs", "Trace": "model.trace", "Row": "model.report", "Report": "model.report",
         "WhichstageError": "_util.exits"}

if TYPE_CHECKING:
    from whichstage._util.exits import WhichstageError
    from whichstage.api import (calibrate_judge, compare_runs, export_cases, export_results, import_cases,
                                import_traces, load_project, record, replay)
    from whichstage.model.inputs import Case
    from whichstage.model.report import Report, Row
    from whichstage.model.trace import Trace


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    if name not in _HOME:
        raise AttributeError(f"module 'whichstage' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"whichstage.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
