"""Evaluate an agent stage by stage (behaviour, tools, retrieval, grounding, answer); name the first failure.

`python evaluate.py [--project DIR]` replays the project's recordings against its current inputs, offline;
`--live` records what is missing or stale with DOCS_MODEL, DOCS_EMBEDDER and DOCS_JUDGE;
`python evaluate.py init DIR` starts a project. Without --project the project is the current folder
(`whichstage run` is this command). This module is the command line; the pipeline it runs is
whichstage/run/pipeline.py.
"""
import argparse
import gc
import sys
import textwrap
from pathlib import Path
from typing import Optional

from whichstage._util.files import printable_stdout, shown, write_atomic
from whichstage._util import console
from whichstage.model.errors import InputError
from whichstage._util.ending import ended
from whichstage._util.exits import EXIT_INCOMPLETE, EXIT_REGRESSED, WhichstageError
from whichstage.run.inputs import load_inputs
from whichstage.calls.options import add_live_options, check_live_options
from whichstage.run.options import RunOptions
from whichstage.run.pipeline import record, replay, subset
from whichstage.render.case_text import shown_cases
from whichstage.providers.names import DEFAULT_EMBEDDER, DEFAULT_JUDGE, DEFAULT_MODEL, chat_model_name, judge_name
from whichstage._util.redact import printable
from whichstage._util.console import cases as cases_text
from whichstage.render.markdown import markdown
from whichstage.render.row_view import row_view
from whichstage.run.files import checked_label
from whichstage.render.files import write_gate_summary, write_reports
from whichstage.render.export import MODES as EXPORT_MODES, export
from whichstage.project.selection import parse_shard, report_split, select
from whichstage.calls.stopping import SigtermAsInterrupt

MAX_REPEATS = 100  # runs per case: a bound on memory and on a bill; more is a benchmark, not an evaluation
EPILOG = f"""models, named by environment variables:
  DOCS_MODEL     the agent's model (default {DEFAULT_MODEL})
  DOCS_EMBEDDER  the embedder (default {DEFAULT_EMBEDDER})
  DOCS_JUDGE     the judge (default {DEFAULT_JUDGE})
  rules, hash and lexical are the offline backends, e5-small a real
  embedder run locally; provider:model names any provider
  (openai:gpt-4.1-mini, anthropic:claude-..., google_genai:gemini-...,
  ollama:qwen3); a bare gemini name needs GOOGLE_API_KEY; any other bare
  name is an Ollama model (OLLAMA_HOST)

exit codes:
  0    done
  1    regressed against --check-baseline
  2    bad input, a stale or missing recording, a file that cannot be
       written, or a model that cannot be reached
  3    incomplete: some calls still failed after retries
  130  interrupted (Ctrl-C)
  143  terminated (SIGTERM)
  an interrupted or terminated run keeps every entry it paid for"""


def check_batches(judge: str) -> None:
    """--batch: the judge's provider has a batch API here (batch.PROVIDERS), else one line."""
    from whichstage.run.batch import has_batches  # asyncio: a run without --batch need not load it

    if not has_batches(judge):
        raise InputError(f"--batch: the judge {printable(judge)} has no batch API: only a Gemini, OpenAI or "
                         "Anthropic judge (DOCS_JUDGE=gemini-..., openai:... or anthropic:...) can be asked in "
                         "batches")


def main(argv: Optional[list[str]] = None) -> int:
    """The command; `argv` defaults to sys.argv[1:]. Its exit code."""
    collector = gc.get_threshold()
    # A run's rows are many long-lived objects with few cycles: the default thresholds rescan them all, often
    # (docs/measurements.md: 10-18% of a 10,000-case replay). Restored for a caller in this process once the
    # run has returned: its reports are freed by then, so the collection the restored thresholds start at
    # once does not rescan them all (a fifth of a second at 10,000 cases).
    gc.set_threshold(50_000, 20, 100)
    try:
        return _main(argv)
    finally:
        gc.set_threshold(*collector)


def _main(argv: Optional[list[str]]) -> int:
    prog = console.name("evaluate.py")  # how the user called this command, for its messages
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["init"]:
        from whichstage.cli.init import main as init_main

        return init_main(argv[1:])
    if argv[:1] == ["merge"]:
        from whichstage.run.shards import main as merge_main

        return merge_main(argv[1:])
    parser = argparse.ArgumentParser(prog=prog, description=textwrap.fill(__doc__.splitlines()[0], 79), epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", metavar="DIR", help="the project folder, with its evals.toml (default: the "
                        "current folder); `init DIR` starts one")
    add_live_options(parser, "model calls")
    parser.add_argument("--model", help=f"the model under test (replay: its recordings only; live: default "
                                        f"DOCS_MODEL or {DEFAULT_MODEL})")
    parser.add_argument("--split", choices=("dev", "holdout", "all"),
                        help="which cases to report (default dev, and a held-out case named with --case; --live "
                        "records every case either way)")
    parser.add_argument("--repeats", type=int, metavar="N", help=f"runs per case, each judged, at most {MAX_REPEATS} "
                        "(live: record N; default: as many as the recording holds, else 1); reports passes out of N "
                        "and flaky cases")
    parser.add_argument("--case", action="append", metavar="ID", help="only this case (repeatable; a glob such as "
                        "'issue-*'); the report is printed, not written, and the recording keeps the other cases'")
    parser.add_argument("--show", metavar="ID", help="print one case's whole trace, verdicts and first failure")
    parser.add_argument("--shard", metavar="I/N", help="with --live: record the I-th of N fixed slices of the cases "
                        "into its own recording (`merge` combines them)")
    parser.add_argument("--plan", action="store_true", help="with --live: list what would be called, and its "
                        "estimated tokens and cost; call no model, write no recording or report")
    parser.add_argument("--batch", action="store_true", help="with --live: the judge's calls through its "
                        "provider's Batch API (Gemini, OpenAI or Anthropic), in rounds, at the batch price (agent "
                        "runs stay interactive)")
    parser.add_argument("--judge2", metavar="NAME", help="a second judge over the same traces (live: records its "
                        "verdicts alone); the report gives the two judges' agreement, kappa and split cases")
    parser.add_argument("--check-baseline", metavar="FILE", help="exit 1 if the run regressed against FILE")
    parser.add_argument("--save-baseline", metavar="FILE", help="write this run's results as the baseline FILE")
    parser.add_argument("--export", nargs=2, action="append", metavar=("MODE", "FILE"), help="also write the run's "
                        "verdicts to FILE as MODE: otel (OpenTelemetry gen_ai.evaluation.result events, OTLP JSON "
                        "logs), jsonl or csv (one row per case and stage); repeatable")
    parser.add_argument("--label", metavar="NAME", help="keep this run's reports as runs/history/<name>/NAME.* "
                        "beside the latest (default: the UTC time, e.g. 20261201T183000Z); compare takes it")
    args = parser.parse_args(argv)
    exports = [(mode, Path(file)) for mode, file in args.export or []]
    bad = next((mode for mode, _ in exports if mode not in EXPORT_MODES), None)
    if bad is not None:
        print(f"{prog}: --export: unknown mode {bad!r} (valid: {', '.join(EXPORT_MODES)})", file=sys.stderr)
        return 2
    check_live_options(parser, args)
    if args.repeats is not None and not 1 <= args.repeats <= MAX_REPEATS:
        parser.error(f"--repeats must be from 1 to {MAX_REPEATS}")
    for flag in ("plan", "shard", "batch"):
        if getattr(args, flag) and not args.live:
            parser.error(f"--{flag} goes with --live")
    if (args.case or args.shard or args.show) and (args.check_baseline or args.save_baseline):
        parser.error("a baseline is of every case: --case, --shard and --show do not go with it")
    if exports and (args.show or args.plan):
        parser.error("--export writes a run's verdicts: --show and --plan report none")
    if args.label is not None and (args.case or args.shard or args.show or args.plan):
        parser.error("--label names a written run: --case, --shard, --show and --plan write no report")
    printable_stdout()
    from whichstage.analysis import baseline, gate, gate_summary
    from whichstage.analysis import second_judge as judges
    from whichstage.project import config as projects

    terminated = SigtermAsInterrupt()
    try:
        label = checked_label(args.label)
        loaded = load_inputs(projects.load(Path(args.project or ".")))
        folder = loaded.project.folder
        patterns = [args.show] if args.show else args.case
        shard = parse_shard(args.shard) if args.shard else None
        cases = select(loaded.cases, patterns, shard, "--show" if args.show else "--case") if (patterns or shard) \
            else None
        split = "all" if args.show else report_split(args.split, cases if args.case else None, args.case)
        if args.live:
            model = args.model or chat_model_name()
            if args.batch:
                check_batches(judge_name())
            options = RunOptions(model, concurrency=args.concurrency, rerecord=args.rerecord, quiet=args.quiet,
                                 split=split, repeats=args.repeats, cases=cases, shard=shard, plan=args.plan,
                                 batch=args.batch)
            report, planned, errors = record(loaded, options)
            if args.plan:
                return console.write_stdout(planned or "", command=prog) or 0
            reports = [report]
            if args.judge2:
                second, _, more = record(loaded, options.but(shard=None, plan=False, batch=False, judge=args.judge2,
                                                             reuse=judge_name()))
                reports, errors = [judges.beside(report, second)], errors + more
        else:
            reports = replay(subset(loaded, cases), model=args.model, split=split, repeats=args.repeats)
            errors = sum(r["summary"]["errors"] for r in reports)
            if args.judge2:
                seconds = replay(subset(loaded, cases), model=args.model, split=split, repeats=args.repeats,
                                 judge=args.judge2)
                reports = [judges.beside(r, next((o for o in seconds if o["key"]["model"] == r["key"]["model"]
                                                  and o["key"]["embedder"] == r["key"]["embedder"]), None))
                           for r in reports if r["key"]["judge"] != args.judge2]
        if args.show:
            return console.write_stdout(shown_cases(loaded, reports, args.model), command=prog) or 0
        saved = baseline.load(Path(args.check_baseline)) if args.check_baseline else None
        checked = baseline.select(reports, saved) if (saved or args.save_baseline) else None
        tolerances = gate.Tolerances(loaded.project.tolerance, loaded.project.tolerances)
        verdict = baseline.check(checked, saved, tolerances) if saved and checked else None
        views = [[row_view(r) for r in report["rows"]] for report in reports]  # read by every rendering
        texts = [markdown(r, v) for r, v in zip(reports, views, strict=False)]
        for mode, file in exports:  # before the reports: a file that cannot be written stops the run unwritten
            export(reports, mode, file)
        if cases is None:  # some cases: printed, not written
            write_reports(folder, reports, texts, label, views)
        summary = None
        if verdict is not None and checked and saved and not errors:
            summary = write_gate_summary(folder, checked, gate_summary.markdown(checked, saved, verdict.result,
                                                                                verdict.other))
        if args.save_baseline and checked and not errors:
            write_atomic(Path(args.save_baseline),
                         baseline.dumps(baseline.from_report(checked, loaded.project.tolerance)))
    except (WhichstageError, OSError, KeyboardInterrupt) as e:
        return ended(prog, e, terminated=bool(terminated), again="; run --live again to finish" if args.live else "")
    finally:
        terminated.restore()
    stopped = console.write_stdout("\n\n".join(texts), command=prog)
    if stopped is not None:
        return stopped
    if errors:
        print(f"\n{prog}: incomplete: {cases_text(errors)} errored (each error is in the report's first "
              "failures); their completed calls are kept, run --live again to retry the rest"
              + ("; no baseline written" if args.save_baseline else ""), file=sys.stderr)
        return EXIT_INCOMPLETE
    if args.save_baseline:
        print(f"\nbaseline written to {args.save_baseline}")
    if verdict is not None:
        print((f"\ngate summary: {shown(summary)}" if summary else "") + "\n" + verdict.text)
        return EXIT_REGRESSED if verdict.regressions else 0
    return 0

