"""Evaluate an agent stage by stage (behaviour, tools, retrieval, grounding, answer); name the first failure.

`python evaluate.py [--project DIR]` replays the project's recordings against its current inputs, offline;
`--live` records what is missing or stale with DOCS_MODEL, DOCS_EMBEDDER and DOCS_JUDGE;
`python evaluate.py init DIR` starts a project. Without --project the project is the current folder
(`whichstage run` is this command). The flow, top to bottom: the project, a case, its trace, the entries it needs, its row,
the report.
"""
import sys


import argparse
import copy
import gc
import textwrap
from pathlib import Path
from typing import Callable, Optional

from whichstage.cassette import (ABSENT, Cassette, Mode, RecordingError, entry_count, printable_stdout, read_key,
                                  read_recording, shown, write_atomic)
from whichstage import checks as own_checks, console, criteria, ladder, shapes
from whichstage.dataset import InputError
from whichstage.inputs import Loaded, load_inputs
from whichstage.entries import (EXPECTED_PAGES, Inputs, agent_entry, case_entries, free, recorded_repeats, repeat,
                             rescored, sha, variant_label)
from whichstage.judging import STRICT_FAITHFULNESS, stage_of
from whichstage.live_calls import SigtermAsInterrupt, add_live_options, check_live_options
from whichstage.providers import DEFAULT_EMBEDDER, DEFAULT_JUDGE, DEFAULT_MODEL, chat_model_name, embedder_name, \
    judge_name
from whichstage.report import cases as cases_text, markdown
from whichstage.run_files import header, replay_targets, report_files, run_name, write_if_changed
from whichstage.selection import SelectionError, case_of, parse_shard, report_split, select
from whichstage.stages import (added, behaviour_verdict, first_failure, repeat_summary, retrieval_scores, spent,
                            summarize, tool_verdict, with_threshold)
from whichstage.trace import Unreadable

MAX_REPEATS = 100  # runs per case: a bound on memory and on a bill; more is a benchmark, not an evaluation
EXIT_REGRESSED, EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 3, 130, 143
EPILOG = f"""models, named by environment variables:
  DOCS_MODEL     the agent's model (default {DEFAULT_MODEL})
  DOCS_EMBEDDER  the embedder (default {DEFAULT_EMBEDDER})
  DOCS_JUDGE     the judge (default {DEFAULT_JUDGE})
  rules, hash and lexical are the offline backends, e5-small a real
  embedder run locally; a gemini name needs GOOGLE_API_KEY; any other
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


def recording_key(inputs: Inputs) -> dict:
    """What a report was measured with: the agent, the inputs' hashes and the models. Baselines and compare.py
    read it."""
    from whichstage import providers

    cases, names = inputs.cases, (inputs.model, inputs.embedder, inputs.judge)
    return {"agent": inputs.project.agent,
            "agent_sha": inputs.common["agent code"], "tools_sha": inputs.common["tools"],
            "cases": f"{cases['name']}@{cases['version']}", "cases_sha": sha(cases), "pages_sha": sha(inputs.pages),
            "records_sha": sha(inputs.records), "k": inputs.k, "rank": inputs.project.rank,
            "model": inputs.model, "embedder": inputs.embedder, "judge": inputs.judge,
            "strict_faithfulness": STRICT_FAITHFULNESS, "offline": all(map(providers.is_offline, names)),
            **criteria.key_part(inputs.project.criteria)}


def case_row(inputs: Inputs, case: dict, cassette: Cassette, error: Optional[str] = None,
             stale: Optional[dict] = None, variant: str = "") -> dict:
    """A report row from the case's current entries (of its counterfactual run, with `variant`). An entry
    without a current value is left out; in a replay, `stale` collects why, by case."""
    def entry(name: str, deps_of: Callable, compute: Optional[Callable] = None) -> Optional[dict]:
        value, why = cassette.lookup(name, deps_of)
        if value is ABSENT and free(name) and compute is not None and not cassette.live:
            return rescored(compute)  # costs nothing: a replay scores it again rather than refusing
        if value is ABSENT:
            if stale is not None:  # reasons kept once each, in order: a dict, so thousands of runs stay linear
                stale.setdefault(case["id"], {}).update(dict.fromkeys(r + variant_label(variant) for r in why))
            return None
        return value

    row = {"id": case["id"], "question": case["question"], "category": case["category"],
           "split": case["split"], "expected_behavior": case["expected_behavior"], "reference": case["reference"],
           "expected_docs": case["expected_docs"], "expected_tools": case["expected_tools"],
           "expected_args": case.get("expected_args", {}), "must_not": case.get("must_not", []),
           **criteria.row_part(inputs.project.criteria)}
    if not variant:
        row["ladder"] = ladder.row_ladder(inputs, case, entry, inputs.k)  # the retrieval ladder: needs no trace
    pages = inputs.expected_pages(case) if variant == EXPECTED_PAGES else None
    trace = entry(agent_entry(case, variant), inputs.agent_deps(case, pages))
    unscored = {"answer": None, "calls": [], "tool_calls": [], "retrieved": [], "searches": [], "searched": False,
                "behaviour": None, "tools": None, "retrieval": None, "judged": {}, "usage": {}, "agent_s": None,
                "error": error, "first_failure": "error"}
    if trace is None:
        return {**row, **unscored}
    try:
        view = inputs.view(trace)
        needed = case_entries(inputs, case, trace, variant, view)
    except Unreadable as e:  # what the retriever returned cannot be read as pages: say what, never "nothing"
        return {**row, **unscored, "answer": trace["answer"], "calls": [c["name"] for c in trace["tool_calls"]],
                "tool_calls": trace["tool_calls"], "usage": trace.get("usage", {}), "agent_s": trace.get("agent_s"),
                "error": error or f"agent/{case['id']}{variant}: {e}"}
    found = {name: entry(name, deps_of, compute) for name, (deps_of, compute) in needed.items()}
    tools = found.pop(f"tools/{case['id']}{variant}")
    judged = {stage_of(name.rsplit("/", 1)[1]): v for name, v in found.items() if v is not None}
    row.update({"answer": trace["answer"], "calls": [c["name"] for c in trace["tool_calls"]],
                "tool_calls": trace["tool_calls"], "retrieved": view["retrieved"], "searches": view["searches"],
                "searched": view["searched"],
                "tools": None if tools is None else tool_verdict(trace["tool_calls"], case["expected_tools"], tools,
                                                                 case.get("expected_args"), inputs.parameters,
                                                                 case.get("tools_match", "multiset"),
                                                                 inputs.project.actions()),
                "retrieval": retrieval_scores(view["searches"], case["expected_docs"], inputs.k),
                "judged": {stage: with_threshold(v, inputs.project.threshold_of(stage))
                           for stage, v in judged.items()},
                "usage": trace.get("usage", {}), "agent_s": trace.get("agent_s"), "error": error})
    row["behaviour"] = behaviour_verdict(row, inputs.planted_retrieved(view),
                                         own_checks.run(inputs.loaded.checks, case, trace, view),
                                         inputs.project.actions())
    row["first_failure"] = first_failure(row)
    if row["first_failure"] == "retrieval" and not variant:
        if not inputs.counterfactual:
            row["counterfactual"] = {"for": "retrieval", "available": False,
                                     "why": "counterfactual not available: the factory takes no given_pages"}
            return row
        again = case_row(inputs, case, cassette, None, stale, EXPECTED_PAGES)
        row["counterfactual"] = counterfactual(again)
        row["also_spent"] = spent(again)
    return row


def counterfactual(again: dict) -> Optional[dict]:
    """Would the right pages have fixed it? `again` is the same agent on the same question, its search
    returning the case's expected pages, scored the same way; None until that run is recorded."""
    if again["answer"] is None:
        return None
    return {"for": "retrieval", "first_failure": again["first_failure"], "fixed": again["first_failure"] is None}


def stale_message(cassette: Cassette, stale: dict, total: int, shown_cases: int = 5, shown_reasons: int = 3) -> str:
    """'recordings/x.json: stale: case backup (question changed); 9 cases current; record again with --live';
    at most `shown_cases` cases and `shown_reasons` reasons each, then how many more, so it stays one
    readable line however many runs are stale."""
    def reasons(why) -> str:
        why = list(why)
        more = f", and {len(why) - shown_reasons:,} more" if len(why) > shown_reasons else ""
        return ", ".join(why[:shown_reasons]) + more

    listed = [f"case {cid} ({reasons(why)})" for cid, why in list(stale.items())[:shown_cases]]
    more = f"; and {len(stale) - shown_cases:,} more cases" if len(stale) > shown_cases else ""
    return (f"{shown(cassette.path)}: stale: {'; '.join(listed)}{more}; "
            f"{total - len(stale)} cases current; record again with --live")


def evaluate(inputs: Inputs, cassette: Cassette, judge: Callable = lambda: None, agent: Callable = lambda: None,
             concurrency: int = 1, progress=None, split: Optional[str] = "dev",
             counterfactual_agent: Optional[Callable[[dict], object]] = None, repeats: Optional[int] = None,
             batch: Optional[Callable[[list], dict]] = None) -> dict:
    """Score every case from the cassette: the report of `split`, or with None every case's row unsummarised
    (for of_split). In live mode, first record what is missing or stale. `judge` and `agent` build the models
    only when a call needs them, so a replay imports no model library."""
    errors, stale = {}, None if cassette.live else {}
    inputs.index(cassette)
    repeats = repeats or recorded_repeats(cassette.recorded)
    done: dict[str, dict] = {}  # the rows of cases a live run found complete: nothing to call, nothing to redo

    def complete(case: dict) -> Optional[dict]:
        missing: dict = {}
        row = case_row(inputs, case, cassette, None, missing)
        if missing or repeats > 1:
            return None
        done[case["id"]] = row
        return row

    if cassette.live:
        from whichstage.recording import Quiet, collect

        errors = collect(inputs, cassette, judge, agent, concurrency, progress or Quiet(),
                         lambda case, error: case_row(inputs, case, cassette, error)["first_failure"],
                         counterfactual_agent, repeats, batch, complete)
    rows = []
    for case in inputs.cases["cases"]:
        rows.append(done.pop(case["id"], None) or case_row(inputs, case, cassette, errors.get(case["id"]), stale))
        if repeats > 1:
            again = [case_row(inputs, case, cassette, errors.get(case["id"]), stale, repeat(r))
                     for r in range(2, repeats + 1)]
            rows[-1]["repeats"] = repeat_summary([rows[-1], *again])
            earlier = [rows[-1]["also_spent"]] if rows[-1].get("also_spent") else []
            rows[-1]["also_spent"] = added(*earlier, *map(spent, again))
    if stale:
        raise RecordingError(stale_message(cassette, stale, len(rows)))
    from whichstage.calibration_status import status

    every = {"key": recording_key(inputs), "rows": rows, "calibration": status(inputs.project.folder, inputs.judge),
             "threshold": inputs.project.threshold, "thresholds": inputs.project.thresholds}
    return every if split is None else of_split(every, split)


def of_split(report: dict, split: str) -> dict:
    """The report of one split from a report of every case."""
    rows, k = [r for r in report["rows"] if split == "all" or r["split"] == split], report["key"]["k"]
    hidden = sum(r["split"] == "holdout" for r in report["rows"]) if split == "dev" else 0
    return {"key": report["key"], "k": k, "threshold": report["threshold"],
            **({"thresholds": report["thresholds"]} if report["thresholds"] else {}),
            "split": split, "held_out": hidden, "rows": rows,
            "summary": {**summarize(rows, k), **own_checks.summary(rows),
                        "ladder": ladder.summarize(rows, k, report["key"].get("rank"))},
            **({"calibration": report["calibration"]} if "calibration" in report else {})}


# ---- the command line ------------------------------------------------------------------------------------

def replay(loaded: Loaded, model: Optional[str], split: str = "dev", repeats: Optional[int] = None,
           judge: Optional[str] = None) -> list[dict]:
    """Rebuild every chosen report from its recording; a stale entry anywhere refuses the replay."""
    reports, name = [], loaded.cases["name"]
    for path in replay_targets(loaded.project.folder, name, model, judge):
        names = read_key(path)
        cassette = Cassette(path, header(name, names["model"], names["embedder"], names["judge"]), Mode.REPLAY,
                            check=shapes.problem)
        reports.append(evaluate(Inputs(loaded, names["model"], names["embedder"], names["judge"]),
                                cassette, split=split, repeats=repeats))
    return reports


def shown_cases(loaded: Loaded, reports: list[dict], model: Optional[str]) -> str:
    """--show: each report's case with its recorded trace, read by role (whichstage/show.py)."""
    from whichstage import show

    texts = []
    for report, path in zip(reports, replay_targets(loaded.project.folder, loaded.cases["name"], model)):
        entries, key = read_recording(path)["entries"], report["key"]
        inputs = Inputs(loaded, key["model"], key["embedder"], key["judge"])
        for row in report["rows"]:
            trace = entries.get(agent_entry(row), {}).get("value")
            try:
                view = {**inputs.view(trace), "retrievers": loaded.project.retrievers()} if trace else None
            except Unreadable:
                view = None
            texts.append(show.text(row, trace, view, key["model"]))
    return "\n\n".join(texts)


def subset(loaded: Loaded, cases: Optional[dict]) -> Loaded:
    """The loaded project with only the chosen cases (--case, --shard)."""
    if cases is None:
        return loaded
    chosen = copy.copy(loaded)
    chosen.cases = cases
    return chosen


class Interrupted(Exception):
    """Ctrl-C or SIGTERM during a live run; says what was kept."""


def record(loaded: Loaded, model: str, concurrency: int, rerecord: bool, quiet: bool, split: str = "dev",
           repeats: Optional[int] = None, cases: Optional[dict] = None, shard: Optional[tuple[int, int]] = None,
           plan: bool = False, batch: bool = False, judge: Optional[str] = None,
           reuse: Optional[str] = None) -> tuple[dict, Optional[str], int]:
    """Call the models for every entry that is missing or stale, then build the report of `split`; also
    the number of cases of any split whose calls still failed (a held-out case's error counts too). With
    `cases` (a subset of the case set) only theirs; with `shard` into the shard's own recording; with `plan`
    nothing is called or written, and the text returned second says what would be called and its cost.
    `judge` overrides DOCS_JUDGE; `reuse` names the judge of a recording whose traces and rankings this run
    reuses, read only (a second judge's run pays for its verdicts alone)."""
    from whichstage import agent, providers
    from whichstage.live_calls import Progress, locked_once

    if plan:
        from whichstage import plan as plans

    embedder, judge = embedder_name(), judge or judge_name()
    if not plan:
        providers.preflight([model, embedder, judge])
    name, head = run_name(loaded.cases["name"], model, embedder, judge), header(loaded.cases["name"], model,
                                                                              embedder, judge)
    folder = loaded.project.folder / "recordings"
    path, also, inputs = folder / f"{name}.json", None, Inputs(subset(loaded, cases), model, embedder, judge)
    if reuse:
        first = run_name(loaded.cases["name"], model, embedder, reuse)
        also = (folder / f"{first}.json", header(loaded.cases["name"], model, embedder, reuse))
    if shard:
        path, also = folder / f"{name}.shard-{shard[0]}-of-{shard[1]}.json", (path, head)
        head = {**head, "shard": f"{shard[0]}/{shard[1]}", "inputs": shard_inputs(Inputs(loaded, model, embedder, judge))}
    predict = None
    if plan:
        recorded = {}
        for source in (folder / f"{name}.json", path):
            if source.exists():
                recorded.update(read_recording(source, shapes.problem)["entries"])
        predict = plans.predictor(inputs, recorded)
    cassette = Cassette(path, head, Mode.RERECORD if rerecord else Mode.LIVE, predict=predict, also=also,
                        check=shapes.problem)
    progress = Progress(len(inputs.cases["cases"]), name, quiet or plan)
    for note in cassette.notes:
        progress.log(note)
    build = agent.builder(inputs, model, embedder)
    rounds = None
    if batch and not plan:
        from whichstage import batch as batches  # asyncio, for the rounds: a run without --batch need not load it

        rounds = batches.measurer(judge, path, progress.log)
    try:
        try:
            every = evaluate(inputs, cassette, judge=locked_once(lambda: providers.judge_model(judge)),
                             agent=locked_once(build), concurrency=concurrency, progress=progress, split=None,
                             repeats=repeats, counterfactual_agent=(lambda case: build(inputs.expected_pages(case)))
                             if inputs.counterfactual else None, batch=rounds)
        except InputError:  # a refusal mid-run (a page rule that maps no page): what was paid for stays journaled
            cassette.incomplete("stopped by bad input")
            raise
        except KeyboardInterrupt:
            raise Interrupted(f"{entry_count(cassette.computed, 'new')} {'is' if cassette.computed == 1 else 'are'} "
                              f"kept in {shown(cassette.journal)}") from None
        finally:
            progress.close()
        errored = sum(r["first_failure"] == "error" for r in every["rows"])
        if errored and not plan:
            cassette.incomplete(f"{cases_text(errored)} errored")
        if not errored and not plan:  # an incomplete recording is never written, whichever split is shown
            chosen = {c["id"] for c in inputs.cases["cases"]}
            keep = (lambda entry: case_of(entry) not in chosen) if cases is not None and not shard else None
            written = cassette.save(keep)
            if rounds is not None:
                rounds.journal.path.unlink(missing_ok=True)  # every answer is in the recording now
            gone = cassette.dropped()
            dropped = f", dropped {gone} no longer current" if gone else ""
            progress.log(f"recorded {entry_count(cassette.computed, 'new')}, kept {cassette.reused()}{dropped}: "
                         + (f"wrote {shown(cassette.path)}" if written else "nothing to write"))
    finally:
        cassette.close()  # the recording is free for the next live run
    planned = None
    if plan:  # what the dry run noted, estimated from the recording's own measured entries
        planned = plans.text(cassette.planned, recorded, model, embedder, judge, batch,
                             plans.possible_counterfactuals(cassette.planned, recorded, inputs))
    del cassette  # the report needs none of its entries' text: free it before summarising and writing
    return of_split(every, split), planned, errored


def shard_inputs(inputs: Inputs) -> str:
    """What every shard of one run must share besides the models: the whole case set, the pages, the records
    and the agent (its code and tools). `merge` refuses shards that differ."""
    return sha([sha(inputs.cases), inputs.searched["pages"], sha(inputs.records), inputs.common])


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Rows are many long-lived objects with few cycles: the default thresholds rescan them all, often.
    gc.set_threshold(50_000, 20, 100)
    if argv[:1] == ["init"]:
        from whichstage.init import main as init_main

        return init_main(argv[1:])
    if argv[:1] == ["merge"]:
        from whichstage.shards import main as merge_main

        return merge_main(argv[1:])
    parser = argparse.ArgumentParser(description=textwrap.fill(__doc__.splitlines()[0], 79), epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", metavar="DIR", help="the project folder, with its evals.toml (default: the "
                        "current folder); `evaluate.py init DIR` starts one")
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
                        "into its own recording (`evaluate.py merge` combines them)")
    parser.add_argument("--plan", action="store_true", help="with --live: list what would be called, and its "
                        "estimated tokens and cost; call no model, write no recording or report")
    parser.add_argument("--batch", action="store_true", help="with --live: the judge's calls through the Gemini "
                        "Batch API, in rounds, at the batch price (agent runs stay interactive)")
    parser.add_argument("--judge2", metavar="NAME", help="a second judge over the same traces (live: records its "
                        "verdicts alone); the report gives the two judges' agreement, kappa and split cases")
    parser.add_argument("--check-baseline", metavar="FILE", help="exit 1 if the run regressed against FILE")
    parser.add_argument("--save-baseline", metavar="FILE", help="write this run's results as the baseline FILE")
    args = parser.parse_args(argv)
    check_live_options(parser, args)
    if args.repeats is not None and not 1 <= args.repeats <= MAX_REPEATS:
        parser.error(f"--repeats must be from 1 to {MAX_REPEATS}")
    for flag in ("plan", "shard", "batch"):
        if getattr(args, flag) and not args.live:
            parser.error(f"--{flag} goes with --live")
    if (args.case or args.shard or args.show) and (args.check_baseline or args.save_baseline):
        parser.error("a baseline is of every case: --case, --shard and --show do not go with it")
    printable_stdout()
    from whichstage import baseline
    from whichstage import providers
    from whichstage import judges
    from whichstage import project as projects

    terminated = SigtermAsInterrupt()
    try:
        loaded = load_inputs(projects.load(Path(args.project or ".")))
        folder = loaded.project.folder
        patterns = [args.show] if args.show else args.case
        shard = parse_shard(args.shard) if args.shard else None
        cases = select(loaded.cases, patterns, shard, "--show" if args.show else "--case") if (patterns or shard) \
            else None
        split = "all" if args.show else report_split(args.split, cases if args.case else None, args.case)
        if args.live:
            model = args.model or chat_model_name()
            if args.batch and not providers.is_gemini(judge_name()):
                raise InputError(f"--batch: the judge {providers.printable(judge_name())} has no batch API: only a "
                                 "Gemini judge (DOCS_JUDGE=gemini-...) can be asked in batches")
            report, planned, errors = record(loaded, model, args.concurrency, args.rerecord, args.quiet, split,
                                              args.repeats, cases, shard, args.plan, args.batch)
            if args.plan:
                return console.write_stdout(planned, command="evaluate.py") or 0
            reports = [report]
            if args.judge2:
                second, _, more = record(loaded, model, args.concurrency, args.rerecord, args.quiet, split,
                                         args.repeats, cases, None, False, False, args.judge2, judge_name())
                reports, errors = [judges.beside(report, second)], errors + more
        else:
            reports = replay(subset(loaded, cases), args.model, split, args.repeats)
            errors = sum(r["summary"]["errors"] for r in reports)
            if args.judge2:
                seconds = replay(subset(loaded, cases), args.model, split, args.repeats, args.judge2)
                reports = [judges.beside(r, next((o for o in seconds if o["key"]["model"] == r["key"]["model"]
                                                  and o["key"]["embedder"] == r["key"]["embedder"]), None))
                           for r in reports if r["key"]["judge"] != args.judge2]
        if args.show:
            return console.write_stdout(shown_cases(loaded, reports, args.model), command="evaluate.py") or 0
        saved = baseline.load(Path(args.check_baseline)) if args.check_baseline else None
        checked = baseline.select(reports, saved) if (saved or args.save_baseline) else None
        verdict = baseline.check(checked, saved) if saved else None
        texts = [markdown(r) for r in reports]
        for report, text in zip(reports, texts) if cases is None else []:  # some cases: printed, not written
            for path, pieces in report_files(folder, report, text).items():
                write_if_changed(path, pieces)
        if args.save_baseline and not errors:
            write_atomic(Path(args.save_baseline), baseline.dumps(baseline.from_report(checked)))
    except (InputError, RecordingError, providers.ProviderError, baseline.BaselineError, SelectionError) as e:
        print(f"evaluate.py: {console.visible(str(e))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as e:
        print(console.visible(f"evaluate.py: {shown(e.filename) if e.filename else 'output'}: cannot write: "
                              f"{e.strerror or e}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except (KeyboardInterrupt, Interrupted) as e:
        kept = f": {e}" if isinstance(e, Interrupted) else ""
        how = "terminated" if terminated else "interrupted"
        print(f"evaluate.py: {how}{kept}" + ("; run --live again to finish" if args.live else ""), file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        terminated.restore()
    stopped = console.write_stdout("\n\n".join(texts), command="evaluate.py")
    if stopped is not None:
        return stopped
    if errors:
        print(f"\nevaluate.py: incomplete: {cases_text(errors)} errored (each error is in the report's first "
              "failures); their completed calls are kept, run --live again to retry the rest"
              + ("; no baseline written" if args.save_baseline else ""), file=sys.stderr)
        return EXIT_INCOMPLETE
    if args.save_baseline:
        print(f"\nbaseline written to {args.save_baseline}")
    if verdict is not None:
        print("\n" + verdict.text)
        return EXIT_REGRESSED if verdict.regressions else 0
    return 0

