"""Benchmark (issue 30 §3): the diagnoses on planted defects. Each defect, of a known component, is planted
alone in a temporary copy of a bundled project (the repository root's docs assistant, and examples/inverter),
recorded with the offline backends (`evaluate.py --project COPY --live --quiet --split all`), and compared
with the clean copy's run: of the cases newly failing (failing with the defect, passing clean), the share
whose `row["diagnosis"]["cause"]` names the planted component.

The defects, each a small edit of the copy that knows nothing of the cases:
- retriever: the search returns its ranking minus the first hit (the top k+1, less the best); the run with
  the expected pages (`given_pages`) is left as it is, since that run replaces the retriever;
- docs gap: one page blanked, for each page that is the sole expected page of some case, one run per page.
  The page is blanked, not deleted: a case naming a page the corpus lacks is refused at load. A JSON page
  keeps its id and title with the text "(blank)" (and loses its planted sentences, which must be in its
  text); a markdown page keeps its first heading alone;
- generator or prompt: the agent's final answer loses its last sentence (the factory wrapped; an answer of
  one sentence is left as it is, so the defect is a shorter answer, never none);
- judge: a noisy judge, planted through whichstage.testing's fake models around the `lexical` judge (which is
  deterministic, so no offline backend is noisy): each facts request, every time it is asked, is answered
  "not covered" for every fact with probability NOISE (decided by a hash of the prompt and how many times it
  was asked), else as the lexical judge answers it. A verdict in doubt is judged once again, so a noisy
  failure is caught with probability 1 - NOISE at best, and only where the verdict is in doubt (facts scores
  1 or 0, so only where the calibration report does not pass facts: the docs assistant's, not the
  inverter's, whose facts metric is calibrated).

Not expressible with the offline backends: a tool description or prompt that steers away from the right tool
(the `rules` model picks tools by the roles in evals.toml and reads neither, so no offline backend is misled
by one).

Run from the repository root: `python benchmarks/diagnosis.py` (about a minute on two cores). Exit 0.
"""
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OFFLINE = {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
BLANK = "(blank)"

# The factory wrapped so the final answer loses its last sentence: the same parameters (inspect.signature
# follows __wrapped__), the graph's nodes kept so the harness still reads the agent's tools.
SHORTER = '''"""The planted answer defect: the agent's final answer loses its last sentence."""
import functools
import re

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda

from {module} import {function} as original


{shorter}


@functools.wraps(original)
def factory(*args, **kwargs):
    agent = original(*args, **kwargs)

    def run(state, config=None):
        out = agent.invoke(state, config)
        messages = list(out["messages"])
        if messages and isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls:
            messages[-1] = messages[-1].model_copy(update={{"content": shorter(messages[-1].text)}})
        return {{**out, "messages": messages}}

    wrapped = RunnableLambda(run)
    wrapped.nodes = agent.nodes
    return wrapped
'''


def shorter(text: str) -> str:
    """The text less its last sentence; a text of one sentence as it is."""
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    return " ".join(sentences[:-1]) if len(sentences) > 1 else text


class Project:
    """A bundled project: how to copy it, where its agent's search is, how its pages are blanked."""

    def __init__(self, name: str, source: Path, agent_file: str, search: str, dropped: str):
        self.name, self.source, self.agent_file = name, source, agent_file
        self.search, self.dropped = search, dropped  # the search's code, and the same code less its best hit

    def copy(self, into: Path) -> None:
        skip = shutil.ignore_patterns("recordings", "runs", "baselines", ".cache", "__pycache__",
                                      "filed-bug-reports.jsonl")
        if self.source == ROOT:
            into.mkdir(parents=True)
            for pattern in ("evals.toml", "*.py", "*.json"):
                for src in ROOT.glob(pattern):
                    if src.name not in ("evaluate.py", "compare.py", "calibrate.py", "conftest.py",
                                        "test_evaluate.py"):
                        shutil.copy(src, into / src.name)
        else:
            shutil.copytree(self.source, into, ignore=skip)
        (into / "runs").mkdir()
        for report in (self.source / "runs").glob("calibration+*.json"):  # it decides which verdicts are in doubt
            shutil.copy(report, into / "runs" / report.name)

    def cases(self) -> list[dict]:
        return json.loads((self.source / "cases.json").read_text(encoding="utf-8"))["cases"]

    def sole_pages(self) -> list[str]:
        """Every page that is the sole expected page of at least one case, sorted."""
        return sorted({c["expected_docs"][0] for c in self.cases() if len(c.get("expected_docs") or []) == 1})

    def drop_best_hit(self, copy: Path) -> None:
        path = copy / self.agent_file
        code = path.read_text(encoding="utf-8")
        assert code.count(self.search) == 1, f"{self.name}: the search's code is not where it was"
        path.write_text(code.replace(self.search, self.dropped), encoding="utf-8")

    def blank_page(self, copy: Path, page: str) -> None:
        if page.endswith(".md"):
            path = copy / page
            heading = next(line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#"))
            path.write_text(heading + "\n", encoding="utf-8")
            return
        path = copy / "docs.json"
        pages = json.loads(path.read_text(encoding="utf-8"))
        found = [p for p in pages if p["id"] == page]
        assert len(found) == 1, f"{self.name}: no page {page}"
        found[0]["text"] = BLANK
        found[0].pop("planted", None)
        path.write_text(json.dumps(pages, indent=1), encoding="utf-8")

    def shorten_answers(self, copy: Path) -> None:
        config = copy / "evals.toml"
        text = config.read_text(encoding="utf-8")
        spec = re.search(r'^agent = "([\w.]+):(\w+)"', text, re.M)
        module, function = spec.group(1), spec.group(2)
        code = SHORTER.format(module=module, function=function, shorter=inspect.getsource(shorter))
        (copy / "planted_answer.py").write_text(code, encoding="utf-8")
        config.write_text(text.replace(spec.group(0), 'agent = "planted_answer:factory"'), encoding="utf-8")


PROJECTS = [
    Project("tracker", ROOT, "assistant.py",
            "store.similarity_search(query, k=K)", "store.similarity_search(query, k=K + 1)[1:]"),
    Project("inverter", ROOT / "examples" / "inverter", "agent.py",
            'return store.as_retriever(search_kwargs={"k": K})',
            'class Dropped(BaseRetriever):\n'
            '        def _get_relevant_documents(self, query, *, run_manager=None):\n'
            '            return store.similarity_search(query, k=K + 1)[1:]\n'
            '    return Dropped()'),
]


NOISE = 30  # percent of the noisy judge's facts requests answered "not covered"

# evaluate.py's run with the noisy judge: the lexical judge wrapped by the fake models, no harness code changed.
NOISY = f'''
import hashlib, sys, threading
from whichstage.cli import run
from whichstage.offline.lexical_judge import HANDLERS, request_kind
from whichstage.testing import fakes

asked, lock = {{}}, threading.Lock()

def noisy(call):
    if call.kind != "judge" or call.label != "facts/Verdicts":
        return False
    with lock:
        n = asked[call.text] = asked.get(call.text, 0) + 1
    return int(hashlib.sha256(f"{{n}}:{{call.text}}".encode()).hexdigest(), 16) % 100 < {NOISE}

def not_covered(call):
    real = HANDLERS[request_kind(call.schema)](call.text)
    return {{"verdicts": [{{**v, "covered": False, "reason": "noise"}} for v in real["verdicts"]]}}

with fakes.installed() as fake:
    fake.on_call(noisy, not_covered)
    sys.exit(run.main(sys.argv[1:]))
'''


def record(copy: Path, noisy: bool = False) -> dict[str, dict]:
    """The copy recorded offline, every split (with the noisy judge when `noisy`): its rows by case id."""
    command = [sys.executable, "-c", NOISY] if noisy else [sys.executable, str(ROOT / "evaluate.py")]
    done = subprocess.run([*command, "--project", str(copy), "--live", "--quiet", "--split", "all"],
                          env={**os.environ, **OFFLINE}, capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{copy.name}: evaluate.py exited {done.returncode}: {done.stderr.strip()[-600:]}")
    (report,) = (copy / "runs").glob("*.all.json")
    return {row["id"]: row for row in json.loads(report.read_text(encoding="utf-8"))["rows"]}


def failing(row: dict) -> bool:
    return row.get("first_failure") is not None


def cause(row: dict) -> str:
    return (row.get("diagnosis") or {}).get("cause") or f"no diagnosis ({row.get('first_failure')})"


def run_one(folder: Path, project: Project, label: str, plant) -> tuple[str, dict]:
    copy = folder / re.sub(r"[^\w.-]+", "_", f"{project.name}-{label}")
    project.copy(copy)
    if plant and plant is not NOISY:
        plant(copy)
    return label, record(copy, noisy=plant is NOISY)


def main() -> int:
    plans = []  # (project, defect, expected cause, label, plant)
    for p in PROJECTS:
        plans.append((p, "clean", None, "clean", None))
        plans.append((p, "retriever drops its best hit", "retriever", "retriever", p.drop_best_hit))
        for page in p.sole_pages():
            plans.append((p, "a page blanked", "docs gap", f"blank {page}",
                          lambda copy, p=p, page=page: p.blank_page(copy, page)))
        plans.append((p, "answer drops its last sentence", "generator or prompt", "answer", p.shorten_answers))
        plans.append((p, f"a noisy judge (facts, {NOISE}%)", "judge", "noisy judge", NOISY))
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as pool:
        runs = list(pool.map(lambda plan: run_one(Path(tmp), plan[0], plan[3], plan[4]), plans))
    rows = {(plan[0].name, plan[3]): found for plan, (_, found) in zip(plans, runs, strict=True)}

    totals: dict[tuple[str, str], dict] = {}
    details = []
    for p, defect, expected, label, _ in plans:
        if expected is None:
            continue
        clean, planted = rows[(p.name, "clean")], rows[(p.name, label)]
        new = [i for i, row in planted.items() if failing(row) and not failing(clean[i])]
        right = [i for i in new if cause(planted[i]) == expected]
        changed = sum(planted[i].get("answer") != clean[i].get("answer") for i in planted)
        proofs: dict[str, int] = {}
        for i in right:
            proof = (planted[i]["diagnosis"].get("evidence") or {}).get("intervention") or "none"
            proofs[proof] = proofs.get(proof, 0) + 1
        other = {}
        for i in new:
            if i not in right:
                why = (planted[i].get("diagnosis") or {}).get("evidence", {}).get("outcome", "")
                other.setdefault(f"{cause(planted[i])} ({planted[i]['first_failure']})", []).append((i, why))
        for key in (p.name, "both"):
            t = totals.setdefault((key, defect), {"expected": expected, "new": 0, "right": 0, "other": {}})
            t["new"] += len(new)
            t["right"] += len(right)
            for k, v in other.items():
                t["other"].setdefault(k, []).extend(v)
        details.append((p.name, label, len(new), len(right), other, changed, proofs))

    print("Diagnoses on planted defects (offline backends: rules, hash, lexical; --live --split all)\n")
    print(f"{'project':<9} {'defect':<31} {'new fails':>9} {'as planted':>10} {'share':>6}  "
          "other causes (first failure)")
    for (name, defect), t in sorted(totals.items(), key=lambda kv: (kv[0][0] == "both", kv[0][0] != "tracker")):
        share = f"{t['right'] / t['new']:.0%}" if t["new"] else "-"
        others = "; ".join(f"{k} x{len(v)}" for k, v in sorted(t["other"].items())) or "-"
        print(f"{name:<9} {defect:<31} {t['new']:>9} {t['right']:>10} {share:>6}  {others}")
    print("\nPer run: newly failing cases diagnosed as planted (by which intervention), answers changed, and "
          "each miss (case: cause (first failure): the diagnosis's outcome):")
    for name, label, n, r, other, changed, proofs in details:
        by = ", ".join(f"{k} {v}" for k, v in sorted(proofs.items()))
        print(f"- {name} {label}: {r}/{n}" + (f" ({by})" if by else "") + f"; {changed} answers changed")
        for k, cases in sorted(other.items()):
            for i, why in cases:
                print(f"    {i}: {k}: {why}")
    print(f"\nThe noisy judge: a verdict in doubt is judged once again, so at best 1 - {NOISE}% of its noise is "
          "caught, and only where facts is in doubt (its calibration report does not pass it).")
    print("Not expressible here: a tool description or prompt steering away from the right tool (the rules "
          "model picks tools by the roles in evals.toml, reading no description or prompt, so no offline "
          "backend is misled by one).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
