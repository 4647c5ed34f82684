"""A function of the project's own, named by a 'module:function' spec in evals.toml (the agent factory, the rank
function, a check): imported from the project folder, and the parameters it names of what the harness provides."""
import importlib
import inspect
import sys
import threading
from pathlib import Path

from whichstage._util.console import first_line
from whichstage.model.errors import InputError
from whichstage.project.config import Project
from whichstage.project.paths import CONFIG

_IMPORTING = threading.RLock()


def import_function(project: Project, spec: str, key: str):
    """The function a 'module:function' spec names, imported from the project folder."""
    module_name, name = spec.split(":")
    project.module_file(spec, key)  # a clear error when the file is not in the project
    folder = str(project.folder)
    with _IMPORTING:  # the agent and the ladder's rank function may be imported by two threads at once
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
        top = module_name.split(".")[0]
        # dict.copy() runs no Python code, so no other thread's import can change the dict while it is read
        # (a list of its items may run a finaliser that lets one in: "dictionary changed size during iteration")
        for loaded, module in sys.modules.copy().items():
            if loaded != top and not loaded.startswith(top + "."):
                continue
            where = getattr(module, "__file__", None) or ""
            if not Path(where).absolute().is_relative_to(project.folder):
                sys.modules.pop(loaded, None)  # another project's module of the same name
        try:
            module = importlib.import_module(module_name)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - whatever the user's module raised, one line
            raise InputError(f"{CONFIG}: {key}: importing {module_name!r} failed: {first_line(e)}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise InputError(f"{CONFIG}: {key}: module {module_name!r} has no function {name!r}")
    return function


def wanted(function, spec: str, key: str = "agent", provided: tuple[str, ...] = ()) -> list[str]:
    """The `provided` parameters a function names; a required parameter the harness cannot give is an error.
    A `rank` function's first parameter is the query."""
    names, parameters = [], list(inspect.signature(function).parameters.values())
    for parameter in parameters[1:] if key == "rank" else parameters:
        if parameter.kind in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
            continue
        if parameter.name in provided:
            names.append(parameter.name)
        elif parameter.default is parameter.empty:
            raise InputError(f"{CONFIG}: {key}: {spec} takes {parameter.name!r}, which the harness does not "
                             f"provide (it provides {', '.join(provided)})")
    return names
