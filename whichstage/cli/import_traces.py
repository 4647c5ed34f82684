"""`whichstage import FILE [--project DIR] [--format F] [--drafts FILE]`: read the traces of an agent's runs
that another tool wrote and record them as the project's recording of model `imported` (docs/traces.md)."""
import argparse
import sys
from typing import Optional

from whichstage._util import console
from whichstage._util.ending import ended
from whichstage._util.exits import WhichstageError

DESCRIPTION = """Import the traces of a LangChain agent's runs from FILE: OTLP JSON (the GenAI conventions, or
OpenLLMetry's), OpenInference spans, a LangSmith run export, or a JSONL of chat messages. A trace matched to a
case (by the case id its metadata names, or by its question) is recorded as that case's trace in
recordings/<cases>+imported+<embedder>+<judge>.json; one that matches no case becomes a draft case.
Then `whichstage run --model imported --live` records its verdicts (the judge alone is called), and
`whichstage run --model imported` replays them."""


EPILOG = """models: DOCS_EMBEDDER and DOCS_JUDGE name the recording, as for `whichstage run`; no model is
called by the import.

exit codes: 0 done, 2 bad input (a malformed, truncated or hostile trace file: one line naming the file and
the span; nothing is written)"""


def main(argv: Optional[list[str]] = None) -> int:
    from whichstage.traces.formats import FORMATS

    prog = console.name("whichstage import")
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", help="the trace file")
    parser.add_argument("--project", metavar="DIR", help="the project folder (default: the current folder)")
    parser.add_argument("--format", metavar="F", help=f"the file's format, one of {', '.join(FORMATS)} "
                                                      "(default: told from the file)")
    parser.add_argument("--drafts", metavar="FILE", help="where the draft cases go (default: the project's "
                                                         "imported-drafts.json)")
    args = parser.parse_args(argv)
    from pathlib import Path

    from whichstage.project import config as projects
    from whichstage.run.inputs import load_inputs
    from whichstage.traces.importing import import_file
    from whichstage.traces.formats import checked_format

    try:
        checked_format(args.format)  # before the project is read: a bad --format is the first thing said
        loaded = load_inputs(projects.load(Path(args.project or ".")))
        summary = import_file(loaded, Path(args.file), args.format, None if args.drafts is None else Path(args.drafts))
    except WhichstageError as e:
        return ended(prog, e)
    except OSError as e:
        return ended(prog, e)
    print(summary.said(), file=sys.stderr)
    return 0
