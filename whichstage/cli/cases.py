"""`whichstage cases export FILE` and `whichstage cases import FILE`: a project's case set out to, and in from,
DeepEval's goldens or Ragas' samples, as JSONL or CSV (whichstage/run/case_sets.py; docs/exporting.md)."""
import argparse
import sys
from pathlib import Path
from typing import Optional

from whichstage._util import console
from whichstage._util.ending import ended
from whichstage._util.exits import WhichstageError
from whichstage._util.files import shown
from whichstage.project.peer_cases import FORMATS

DESCRIPTION = "Move a project's case set out to, and in from, DeepEval's goldens or Ragas' samples (JSONL or CSV)."


def main(argv: Optional[list[str]] = None) -> int:
    """The command; `argv` defaults to sys.argv[1:]. Its exit code."""
    prog = console.name("whichstage cases")
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    parser.add_argument("--project", metavar="DIR", help="the project folder (default: the current folder)")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="export|import")
    out = verbs.add_parser("export", help="write the case set to FILE")
    out.add_argument("file", metavar="FILE")
    out.add_argument("--split", choices=("dev", "holdout", "all"), default="all", help="which cases (default all)")
    into = verbs.add_parser("import", help="add FILE's cases to the case set (same id: replaced); rows without a "
                            "reference become drafts in the drafts file")
    into.add_argument("file", metavar="FILE")
    into.add_argument("--replace", action="store_true", help="the imported cases replace the whole case set")
    for verb in (out, into):
        verb.add_argument("--format", choices=FORMATS, help="the file's format (default: from its suffix, .csv "
                          "or JSONL, and, importing, its columns; exporting, DeepEval's)")
        verb.add_argument("--project", metavar="DIR", default=argparse.SUPPRESS, help="the project folder")
    args = parser.parse_args(argv)
    from whichstage.project import config as projects
    from whichstage.run import case_sets

    try:
        project = projects.load(Path(args.project or "."))
        if args.verb == "export":
            count = case_sets.export_cases(project, Path(args.file), args.format, args.split)
            return console.write_stdout(f"{shown(Path(args.file))}: {count} cases written", command=prog) or 0
        done = case_sets.import_cases(project, Path(args.file), args.format, args.replace)
    except (WhichstageError, OSError, KeyboardInterrupt) as e:
        return ended(prog, e)
    drafts = case_sets.drafts_path(project)
    print(done.text(shown(project.folder / project.cases), shown(drafts)), file=sys.stdout)
    return 0
