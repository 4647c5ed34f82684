"""The pipeline behind every command: a project's cases scored from their recording (replay), or recorded
first (live), into the report of a split. The flow: the loaded project, each case's entries in the cassette,
its row (whichstage/run/rows.py), the report; a live run schedules the missing calls (whichstage/run/scheduler.py).
"""
import copy
from typing import TYPE_CHECKING, Optional

from whichstage.recording.store import Cassette, Mode
from whichstage._util.files import RecordingError, shown
from whichstage.recording.format import entry_count, read_key, read_recording
from whichstage.project import checks as own_checks, criteria
from whichstage.run import ladder
from whichstage.model import replay_check as shapes
from whichstage.model.errors import InputError
from whichstage.run.entries import Inputs, agent_entry, recorded_repeats, repeat, sha
from whichstage.run.inputs import Loaded
from whichstage.run.options import RunOptions
from whichstage.judging.metrics import STRICT_FAITHFULNESS
from whichstage.providers.names import embedder_name, is_imported, is_offline, judge_name
from whichstage._util.console import cases as cases_text
from whichstage.run.rows import case_row
from whichstage.run.files import header, replay_targets, run_name
from whichstage.project.selection import case_of
from whichstage.scoring.diagnosis import fix_list
from whichstage.scoring.summary import added, repeat_summary, spent, summarize
from whichstage._util.exits import Exit, WhichstageError
from whichstage.model.dicts import CaseSetDict, ReportDict, RowDict

if TYPE_CHECKING:
    from whichstage.run.scheduler import Live


def recording_key(inputs: Inputs) -> dict:
    """What a report was measured with: the agent, the inputs' hashes and the models. Baselines and compare.py
    read it."""
    cases, names = inputs.cases, (inputs.model, inputs.embedder, inputs.judge)
    return {"agent": inputs.project.agent,
            "agent_sha": inputs.common["agent code"], "tools_sha": inputs.common["tools"],
            "cases": f"{cases['name']}@{cases['version']}", "cases_sha": sha(cases), "pages_sha": sha(inputs.pages),
            "records_sha": sha(inputs.records), "k": inputs.k, "rank": inputs.project.rank,
            "model": inputs.model, "embedder": inputs.embedder, "judge": inputs.judge,
            "strict_faithfulness": STRICT_FAITHFULNESS, "offline": all(map(is_offline, names)),
            **criteria.key_part(inputs.project.criteria)}


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


def evaluate(inputs: Inputs, cassette: Cassette, split: Optional[str] = "dev", repeats: Optional[int] = None,
             live: Optional["Live"] = None) -> ReportDict:
    """Score every case from the cassette: the report of `split`, or with None every case's row unsummarised
    (for of_split). In live mode, first record what is missing or stale with `live` (a recording.Live, whose
    models are built only when a call needs them, so a replay imports no model library)."""
    errors: dict[str, str] = {}
    done: dict[str, RowDict] = {}
    stale: Optional[dict] = None if cassette.live else {}
    inputs.index(cassette)
    if inputs.calibration is None:  # it decides which failing verdicts are in doubt, and judged again
        from whichstage.run.calibration_status import status

        inputs.calibration = status(inputs.project.folder, inputs.judge)
    repeats = repeats or recorded_repeats(cassette.recorded)
    if cassette.live:
        from whichstage.run.scheduler import Live, collect

        recorded = collect(inputs, cassette, live or Live(), repeats)
        errors, done = recorded.errors, recorded.rows
    rows: list[RowDict] = []
    for case in inputs.cases["cases"]:
        rows.append(done.pop(case["id"]) if case["id"] in done else
                    case_row(inputs, case, cassette, error=errors.get(case["id"]), stale=stale))
        if repeats > 1:
            again = [case_row(inputs, case, cassette, error=errors.get(case["id"]), stale=stale, variant=repeat(r))
                     for r in range(2, repeats + 1)]
            rows[-1]["repeats"] = repeat_summary([rows[-1], *again])
            earlier = [rows[-1]["also_spent"]] if rows[-1].get("also_spent") else []
            rows[-1]["also_spent"] = added(*earlier, *map(spent, again))
    if stale:
        raise RecordingError(stale_message(cassette, stale, len(rows)))
    every: ReportDict = {"key": recording_key(inputs), "rows": rows, "calibration": inputs.calibration,
             "threshold": inputs.project.threshold, "thresholds": inputs.project.thresholds}
    return every if split is None else of_split(every, split)


def of_split(report: ReportDict, split: str) -> ReportDict:
    """The report of one split from a report of every case."""
    rows, k = [r for r in report["rows"] if split == "all" or r["split"] == split], report["key"]["k"]
    hidden = sum(r["split"] == "holdout" for r in report["rows"]) if split == "dev" else 0
    return {"key": report["key"], "k": k, "threshold": report["threshold"],
            **({"thresholds": report["thresholds"]} if report["thresholds"] else {}),
            "split": split, "held_out": hidden, "rows": rows,
            "summary": {**summarize(rows, k), **own_checks.summary(rows), "fix_list": fix_list(rows),
                        "ladder": ladder.summarize(rows, k, report["key"].get("rank"))},
            **({"calibration": report["calibration"]} if "calibration" in report else {})}



def replay(loaded: Loaded, *, model: Optional[str] = None, split: str = "dev", repeats: Optional[int] = None,
           judge: Optional[str] = None) -> list[ReportDict]:
    """Rebuild every chosen report from its recording; a stale entry anywhere refuses the replay."""
    reports, name = [], loaded.cases["name"]
    for path in replay_targets(loaded.project.folder, name, model, judge):
        names = read_key(path)
        cassette = Cassette(path, header(name, names["model"], names["embedder"], names["judge"]), Mode.REPLAY,
                            check=shapes.problem)
        chosen = imported_cases(loaded, cassette) if is_imported(names["model"]) else loaded
        reports.append(evaluate(Inputs(chosen, names["model"], names["embedder"], names["judge"]),
                                cassette, split=split, repeats=repeats))
    return reports


def subset(loaded: Loaded, cases: Optional[CaseSetDict]) -> Loaded:
    """The loaded project with only the chosen cases (--case, --shard)."""
    if cases is None:
        return loaded
    chosen = copy.copy(loaded)
    chosen.cases = cases
    return chosen


def imported_cases(loaded: Loaded, cassette: Cassette) -> Loaded:
    """The project with only the cases a recording of imported traces holds a trace of (whichstage import)."""
    held = [c for c in loaded.cases["cases"] if agent_entry(c) in cassette.recorded]
    return subset(loaded, {**loaded.cases, "cases": held})


def imported_current(inputs: Inputs, cassette: Cassette) -> None:
    """Refuse a live run of imported traces before any call when one is stale or none is there: the agent that
    made them is never run to record them again."""
    if not inputs.cases["cases"]:
        raise RecordingError(f"{shown(cassette.path)}: no imported trace of any case chosen: import traces first "
                             "(whichstage import FILE)")
    for case in inputs.cases["cases"]:
        why = cassette.lookup(agent_entry(case), inputs.agent_deps(case))[1]
        if why:
            raise RecordingError(f"{shown(cassette.path)}: the imported trace of case {case['id']} is stale "
                                 f"({', '.join(why)}): import the traces again (whichstage import FILE); the agent "
                                 "is never run for an imported recording")


def no_agent(given=None):
    """The agent of an imported recording: there is none to run (imported_current refuses before it is asked)."""
    raise InputError("an imported recording's traces are never recorded again by running the agent")


class Interrupted(WhichstageError):
    """Ctrl-C or SIGTERM during a live run; says what was kept."""
    exit_code, interrupts = Exit.INTERRUPTED, True


def record(loaded: Loaded, options: RunOptions) -> tuple[ReportDict, Optional[str], int]:
    """Call the models for every entry that is missing or stale, then build the report of the options' split;
    also the number of cases of any split whose calls still failed (a held-out case's error counts too). With
    `plan` nothing is called or written, and the text returned second says what would be called and its cost
    (RunOptions says what each option does)."""
    model, concurrency, rerecord, quiet, split = (options.model, options.concurrency, options.rerecord,
                                                  options.quiet, options.split)
    repeats, cases, shard, plan, batch, judge, reuse = (options.repeats, options.cases, options.shard, options.plan,
                                                        options.batch, options.judge, options.reuse)
    from whichstage.agent import factory as agent
    from whichstage.providers import build as providers
    from whichstage.providers.preflight import preflight
    from whichstage.calls.progress import Progress
    from whichstage.calls.pool import locked_once
    from whichstage.run.scheduler import Live

    if plan:
        from whichstage.run import plan as plans

    embedder, judge, imported = embedder_name(), judge or judge_name(), is_imported(model)
    if imported and (repeats and repeats > 1 or rerecord):
        raise InputError((f"--repeats {repeats}" if not rerecord else "--rerecord") + ": an imported recording holds "
                         "the traces of the file imported, and its agent is never run again: import the file again")
    if not plan:
        preflight([judge] if imported else [model, embedder, judge])
    name, head = run_name(loaded.cases["name"], model, embedder, judge), header(loaded.cases["name"], model,
                                                                              embedder, judge)
    folder = loaded.project.folder / "recordings"
    path, also, inputs = folder / f"{name}.json", None, Inputs(subset(loaded, cases), model, embedder, judge)
    if reuse:
        first = run_name(loaded.cases["name"], model, embedder, reuse)
        also = (folder / f"{first}.json", header(loaded.cases["name"], model, embedder, reuse))
    if shard:
        path, also = folder / f"{name}.shard-{shard[0]}-of-{shard[1]}.json", (path, head)
        sharded = shard_inputs(Inputs(loaded, model, embedder, judge))
        head = {**head, "shard": f"{shard[0]}/{shard[1]}", "inputs": sharded}
    predict = None
    if plan:
        recorded, requests = {}, {}
        for source in (folder / f"{name}.json", path):
            if source.exists():
                data = read_recording(source, shapes.problem)
                recorded.update(data["entries"])
                requests.update(data.get("requests", {}))
        predict = plans.predictor(inputs, recorded)
    cassette = Cassette(path, head, Mode.RERECORD if rerecord else Mode.LIVE, predict=predict, also=also,
                        check=shapes.problem)
    if imported:
        try:
            inputs = Inputs(imported_cases(subset(loaded, cases), cassette), model, embedder, judge)
            imported_current(inputs, cassette)
        except BaseException:
            cassette.close()
            raise
    progress = Progress(len(inputs.cases["cases"]), name, quiet or plan)
    for note in cassette.notes:
        progress.log(note)
    build = no_agent if imported else agent.builder(inputs, model, embedder)
    rounds = None
    if batch and not plan:
        from whichstage.run import batch as batches  # asyncio, for the rounds: a run without --batch need not load it

        rounds = batches.measurer(judge, path, progress.log)
    live = Live(judge=locked_once(lambda: providers.judge_model(judge)), agent=locked_once(build),
                counterfactual_agent=(lambda case: build(inputs.expected_pages(case))) if inputs.counterfactual
                else None, batch=rounds, concurrency=concurrency, progress=progress)
    try:
        try:
            every = evaluate(inputs, cassette, split=None, repeats=repeats, live=live)
        except InputError:  # a refusal mid-run (a page rule that maps no page): what was paid for stays journaled
            cassette.incomplete("stopped by bad input")
            raise
        except KeyboardInterrupt:
            kept = cassette.end()
            raise Interrupted(f"{entry_count(kept, 'new')} {'is' if kept == 1 else 'are'} "
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
            index = " and the pages' index" if cassette.indexed else ""  # an entry of no call, counted apart
            progress.log(f"recorded {entry_count(cassette.computed, 'new')}{index}, kept {cassette.reused()}"
                         f"{dropped}: " + (f"wrote {shown(cassette.path)}" if written else "nothing to write")
                         + (cassette.requests.said() if cassette.requests else ""))
    finally:
        cassette.close()  # the recording is free for the next live run
    planned = None
    if plan:  # what the dry run noted, estimated from the recording's own measured entries
        planned = plans.text(cassette.planned + plans.answer_checks_again(cassette.planned, recorded), recorded,
                             model, embedder, judge, batch=batch, requests=requests,
                             unforeseen=plans.unforeseen_interventions(cassette.planned, recorded, inputs))
    del cassette  # the report needs none of its entries' text: free it before summarising and writing
    return of_split(every, split), planned, errored


def shard_inputs(inputs: Inputs) -> str:
    """What every shard of one run must share besides the models: the whole case set, the pages, the records
    and the agent (its code and tools). `merge` refuses shards that differ."""
    return sha([sha(inputs.cases), inputs.searched["pages"], sha(inputs.records), inputs.common])


