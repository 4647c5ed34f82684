"""The `whichstage` command: one subcommand per job, each the same code as the repository's scripts."""
import sys
from typing import Callable, Optional

from whichstage._util import console

USAGE = """usage: whichstage [COMMAND] [ARGS...]

Evaluate a LangChain agent stage by stage and name the first failing stage. Without a command, `run`.
The project is the current folder (its evals.toml) unless --project DIR says otherwise.

commands:
  run        replay the project's recordings (or --live: record what is missing or stale) and report
  show ID    one case's whole trace, verdicts and first failure (run --show ID)
  init DIR   write a new project that runs at once with the offline backends
  merge      combine the shard recordings of `run --live --shard I/N` into one
  calibrate  check the judge against the project's hand-labelled calibration cases
  compare    diff two runs case by case, with the exact McNemar test
  cases      export the case set as DeepEval goldens or Ragas samples (JSONL, CSV), or import one
  ask        run the project's agent once on a question and print its trace
  import F   record the traces of file F (OTLP, OpenInference, LangSmith, chat JSONL) as model `imported`
  standin P  serve a stand-in of provider P (gemini, openai, anthropic, ollama) for a keyless live run

`whichstage COMMAND --help` describes each one; `whichstage --version` says which version is installed."""


def _run(argv: list[str]) -> int:
    from whichstage.cli.run import main

    return main(argv)


def _show(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print("whichstage show: name the case: whichstage show ID [run's options]", file=sys.stderr)
        return 2
    return _run(["--show", *argv])


def _init(argv: list[str]) -> int:
    return _run(["init", *argv])


def _merge(argv: list[str]) -> int:
    return _run(["merge", *argv])


def _calibrate(argv: list[str]) -> int:
    from whichstage.analysis.calibration import main

    return main(argv)


def _compare(argv: list[str]) -> int:
    from whichstage.analysis.compare import main

    return main(argv)


def _cases(argv: list[str]) -> int:
    from whichstage.cli.cases import main

    return main(argv)


def _ask(argv: list[str]) -> int:
    from whichstage.cli.ask import main

    return main(argv, description="Run a project's agent once on a question and print its trace as JSON.")


def _import(argv: list[str]) -> int:
    from whichstage.cli.import_traces import main

    return main(argv)


def _standin(argv: list[str]) -> int:
    from whichstage.standins.launch import main

    return main(argv)


# The script whose messages each command prints, named by the command the user typed instead.
SCRIPTS = {"run": ["evaluate.py"], "show": ["evaluate.py"], "init": ["evaluate.py"], "merge": ["evaluate.py"],
           "calibrate": ["calibrate.py"], "compare": ["compare.py"], "ask": ["assistant.py"], "standin": [],
           "cases": [], "import": []}
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "run": _run, "show": _show, "init": _init, "merge": _merge, "calibrate": _calibrate, "compare": _compare,
    "ask": _ask, "standin": _standin, "cases": _cases,
    "import": _import}


def main(argv: Optional[list[str]] = None) -> int:
    """Dispatch `whichstage COMMAND ARGS`; an argument list that starts with an option is `run`'s."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["-h"], ["--help"]):
        return console.write_stdout(USAGE, command="whichstage") or 0
    if argv[:1] == ["--version"]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return console.write_stdout(f"whichstage {version('whichstage')}", command="whichstage") or 0
        except PackageNotFoundError:  # run from a clone, not installed
            return console.write_stdout("whichstage (not installed: run from its clone)", command="whichstage") or 0
    if not argv or argv[0].startswith("-"):
        return main(["run", *argv])
    command = COMMANDS.get(argv[0])
    if command is None:
        print(f"whichstage: {argv[0]!r} is not a command (valid: {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    called = "whichstage" if argv[0] in ("init", "merge") else f"whichstage {argv[0]}"  # they add their own word
    before = console.named({script: called for script in SCRIPTS[argv[0]]})
    try:
        return command(argv[1:])
    finally:
        console.restore(before)


def script(command: str, run: Callable[[list[str]], int]) -> None:
    """Run a command as a script: Ctrl-C during start-up is one line, and the exit code is the command's."""
    from whichstage._util.console import quiet_interrupts

    quiet_interrupts(command)
    sys.exit(run(sys.argv[1:]))


def console_script() -> None:
    """The `whichstage` console script's entry point."""
    script("whichstage", main)
