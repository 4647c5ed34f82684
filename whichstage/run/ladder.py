"""The retrieval ladder: every retrieval component earns its place with a number.

For every case with expected pages, the case's question alone ranks every page on three rungs:
- vector: the project's own retriever when evals.toml names a ranking function (`rank = "module:function"`,
  called with the question and the parameters it names of the factory's: its ranked page ids); otherwise a
  reference index over the pages (the configured embedder in an InMemoryVectorStore of each page's indexed
  text), which is not the agent's retriever and is titled so;
- keyword: BM25 from bm25s over each page's indexed text (its title, a newline, its text; the text alone
  when it starts with its title), Lucene scoring with k1 1.5 and b 0.75, tokenised by bm25s.tokenize:
  lower-cased, runs of two or more word characters, bm25s's English stopwords dropped, no stemmer; pages
  with equal scores keep their order in the pages;
- hybrid: both fused by reciprocal rank fusion with RRF_K = 60, the constant of Cormack, Clarke and
  Buettcher (SIGIR 2009), which damps the weight of the very top ranks so neither ranking dominates.

The vector and keyword rankings are cassette entries, `ladder/<case>/vector` and `ladder/<case>/keyword`,
computed only in live mode (`Rankers`): the vector rung pays for embeddings, and bm25s imports numpy and
scipy, which a replay must not load. RRF and the scores are pure and run at report time.
"""

import math
from functools import cache
from typing import Callable, Optional, cast

from whichstage.agent import factory as agent, reading as traces
from whichstage.agent.capture import page_of
from whichstage.project.imports import import_function
from whichstage.run.entries import Inputs, sha, versioned
from whichstage.providers.backend_versions import package_version
from whichstage.calls.pool import locked_once
from whichstage.scoring.retrieval import documents, retrieval_scores
from whichstage.model.dicts import CaseDict, RowDict

RRF_K = 60
RECORDED = ("vector", "keyword")
RUNGS = RECORDED + ("hybrid",)
# How the keyword rung tokenises and scores; recorded in each keyword entry's dependencies.
TOKENS = {"lower": True, "token_pattern": r"(?u)\b\w\w+\b", "stopwords": "en", "stemmer": None}
BM25 = {"method": "lucene", "k1": 1.5, "b": 0.75}


# ---- pure: fusion, scores, summary, report lines -------------------------------------------------------

def rrf(rankings: list[list[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal rank fusion: a page scores the sum of 1 / (k + rank) over the rankings holding it, ranks
    from 1. Summed exactly, each 1 / (k + rank) as a whole number of 1 / lcm(k + 1 ... k + n) for rankings of
    up to n pages, so a tie is a tie; ties keep the order pages first appear in, the first ranking first."""
    rankings = [documents(ranking) for ranking in rankings]
    common = math.lcm(*range(k + 1, k + max(map(len, rankings), default=0) + 1))
    score: dict[str, int] = {}
    for ranking in rankings:
        for rank, page in enumerate(ranking, start=1):
            score[page] = score.get(page, 0) + common // (k + rank)
    return sorted(score, key=score.__getitem__, reverse=True)  # stable: a tie keeps its first appearance


def rung_scores(ranking: list[str], expected: list[str], k: int) -> dict:
    """hit@k and recall@k of the expected pages, scored as the retrieval stage scores one search (on distinct
    pages), and the reciprocal rank of the first over the whole ranking."""
    ranked, wanted = documents(ranking), set(expected)
    first = next((rank for rank, page in enumerate(ranked, start=1) if page in wanted), None)
    scores = cast(dict, retrieval_scores([ranked], expected, k))  # None only without expected pages: case_ladder
    return {**scores, "reciprocal_rank": 1 / first if first else 0.0}


def case_ladder(rankings: dict[str, Optional[list[str]]], expected: list[str], k: int) -> Optional[dict]:
    """Every rung's ranking and scores for one case, from its recorded rankings; None when the case expects
    no page or a recorded ranking is missing."""
    if not expected:
        return None
    ranked = {rung: ranking for rung in RECORDED if (ranking := rankings.get(rung)) is not None}
    if len(ranked) < len(RECORDED):  # a recorded ranking is missing
        return None
    ranked["hybrid"] = rrf([ranked["vector"], ranked["keyword"]])
    return {rung: {"ranking": ranking, **rung_scores(ranking, expected, k)} for rung, ranking in ranked.items()}


def summarize(rows: list[RowDict], k: int, rank: Optional[str] = None) -> Optional[dict]:
    """hit@k, recall@k and MRR of every rung over the rows that have a ladder; None when none has. `rank` is
    the project's ranking function, when the vector rung is its retriever."""
    ladders = [v for r in rows if (v := r.get("ladder"))]
    if not ladders:
        return None
    n = len(ladders)
    mean = lambda field, rung: round(sum(lad[rung][field] for lad in ladders) / n, 3)  # noqa: E731
    return {"cases": n, "k": k, "rrf_k": RRF_K, "retriever": rank,
            "rungs": {rung: {"hits": sum(lad[rung]["hit"] for lad in ladders), f"recall_at_{k}": mean("recall", rung),
                             "mrr": mean("reciprocal_rank", rung)} for rung in RUNGS}}


def meaning(ladder: dict) -> str:
    """One sentence on what the measured ladder says, read against the vector rung."""
    k, rungs = ladder["k"], ladder["rungs"]
    order = lambda rung: (rungs[rung][f"recall_at_{k}"], rungs[rung]["mrr"])  # noqa: E731
    best = [rung for rung in RUNGS if order(rung) == max(map(order, RUNGS))]
    if order("hybrid") > order("vector"):
        fusion = "hybrid beats vector, so BM25 earns its place beside this embedder"
    elif order("hybrid") == order("vector"):
        fusion = "hybrid only ties vector, so BM25 buys nothing beside this embedder"
    else:
        fusion = "hybrid falls below vector, so fusing BM25 in would cost this embedder pages"
    searches = ("the agent searches with the vector rung alone" if ladder.get("retriever") else
                "the vector rung is a reference index over the pages, not the agent's retriever")
    return (f"What it means: {' and '.join(best)} {'ranks' if len(best) == 1 else 'tie as'} best (recall@{k}, "
            f"then MRR); {searches}, and {fusion}.")


def markdown_lines(ladder: Optional[dict], embedder: str) -> list[str]:
    """The report's ladder table and its sentence; nothing when no case has a ladder."""
    if not ladder:
        return []
    k, n, retriever = ladder["k"], ladder["cases"], ladder.get("retriever")
    vector = f"vector: the agent's retriever ({retriever})" if retriever else f"vector: reference index ({embedder})"
    names = {"vector": vector, "keyword": "keyword (BM25)", "hybrid": f"hybrid (RRF, k={ladder['rrf_k']})"}
    title = ("Retrieval ladder" if retriever else
             "Reference retrieval ladder (a reference index over the pages, not the agent's retriever; name the "
             "retriever's ranking with `rank` in evals.toml to measure it)")
    lines = [f"\n{title} ({n} cases with expected pages; each rung ranks every page for the question alone, MRR "
             f"over the whole ranking):\n", f"| rung | hit@{k} | recall@{k} | MRR |", "|---|---|---|---|"]
    lines += [f"| {names[rung]} | {r['hits']}/{n} | {r[f'recall_at_{k}']:.3f} | {r['mrr']:.3f} |"
              for rung, r in ladder["rungs"].items()]
    return lines + ["\n" + meaning(ladder)]


def baseline_part(rows: list[RowDict]) -> dict[str, dict[str, float]]:
    """What a baseline keeps of the ladder: each case's recall@k on each rung."""
    return {r["id"]: {rung: v["recall"] for rung, v in ladder.items()} for r in rows if (ladder := r.get("ladder"))}


def regressions(saved: dict[str, dict[str, float]], now: dict[str, dict[str, float]]) -> list[str]:
    """Zero tolerance: a case whose recall@k dropped on any rung. A case or rung not measured now is skipped."""
    return [f"ladder {rung}: {case} recall@k {recall} -> {now[case][rung]} (tolerance 0)"
            for case, rungs in saved.items() for rung, recall in rungs.items()
            if now.get(case, {}).get(rung) is not None and now[case][rung] < recall]


# ---- the recorded rankings -----------------------------------------------------------------------------

def entry_name(case: CaseDict, rung: str) -> str:
    return f"ladder/{case['id']}/{rung}"


@cache
def keyword_ranker() -> str:
    """The keyword rung's method, as recorded in its entries: the library's version and every setting."""
    return f"bm25s {package_version('bm25s')} {sha({**TOKENS, **BM25})}"


def recorded_deps(inputs: Inputs, case: CaseDict) -> dict[str, Callable[[list], dict]]:
    """rung -> what its ranking depends on: the question and every page; for vector also the project's rank
    function and the agent's code (or the reference index) and the embedder where it is used, for keyword
    the library and its settings. Nothing is recorded for a case that expects no page."""
    if not case["expected_docs"] or inputs.imported:  # imported traces: the project's retrieval is not theirs
        return {}
    read = {"question": sha(case["question"]), "pages": inputs.searched["pages"]}
    embedder = {"embedder": inputs.embedder, **versioned("embedder code", inputs.embedder)}
    if inputs.project.rank:
        vector = {**read, "rank": inputs.project.rank, "agent code": inputs.common["agent code"],
                  **(embedder if "embeddings" in rank_wanted(inputs) else {})}
    else:
        vector = {**read, "reference index": "InMemoryVectorStore", **embedder}
    keyword = {**read, "keyword ranker": keyword_ranker()}
    return {"vector": lambda value: vector, "keyword": lambda value: keyword}


def rank_wanted(inputs: Inputs) -> list[str]:
    """The factory parameters the project's rank function names (read once, with the agent's tools)."""
    return inputs.loaded.described.rank_wanted


def row_ladder(inputs: Inputs, case: CaseDict, entry: Callable[[str, Callable], Optional[list]],
               k: int) -> Optional[dict[str, dict]]:
    """The case's ladder from its recorded rankings; `entry(name, deps_of)` looks each one up."""
    found = {rung: entry(entry_name(case, rung), deps) for rung, deps in recorded_deps(inputs, case).items()}
    return case_ladder(found, case["expected_docs"], k)


class Rankers:
    """Live mode: each rung's index built once per run, on first use, shared by every case."""

    def __init__(self, inputs: Inputs):
        self.inputs = inputs
        self.vector_index = locked_once(lambda: vector_index(inputs.pages, inputs.embedder))
        self.keyword_index = locked_once(lambda: keyword_index(inputs.pages))
        self.ranker = locked_once(lambda: project_ranker(inputs))

    def entries(self, case: CaseDict) -> dict[str, tuple[Callable, Callable[[], list]]]:
        """name -> (deps_of, compute) of the case's recorded rankings."""
        question = case["question"]
        vector = ((lambda: project_ranking(self.ranker(), question, self.inputs)) if self.inputs.project.rank else
                  (lambda: vector_ranking(self.vector_index(), len(self.inputs.pages), question)))
        compute = {"vector": vector,
                   "keyword": lambda: keyword_ranking(self.keyword_index(), self.inputs.pages, question)}
        return {entry_name(case, rung): (deps, compute[rung])
                for rung, deps in recorded_deps(self.inputs, case).items()}


def project_ranker(inputs: Inputs) -> Callable[[str], object]:
    """The project's rank function with the parameters it names, question -> its ranking."""
    function = import_function(inputs.project, inputs.project.rank, "rank")
    values = {"pages": agent.documents(inputs.pages), "records": inputs.records}
    if "embeddings" in rank_wanted(inputs):
        values["embeddings"] = agent.models().embedder(inputs.embedder)
    given = {name: values.get(name) for name in rank_wanted(inputs)}
    return lambda question: function(question, **given)


def project_ranking(ranker: Callable[[str], object], question: str, inputs: Inputs) -> list[str]:
    """The project's ranking of every page for the question, checked: a list of the project's page ids. A
    ranking of chunks (their ids, or Documents) is read by the retrievers' page rule, each page where its
    first chunk is."""
    ranking, rule = ranker(question), inputs.project.page_rule()
    if not isinstance(ranking, (list, tuple)) or not all(isinstance(p, str) or hasattr(p, "page_content")
                                                         for p in ranking):
        raise ValueError(f"{inputs.project.rank} returned {type(ranking).__name__}, not a list of page ids")
    items = [{"id": p, "text": ""} if isinstance(p, str) else page_of(p) for p in ranking]
    try:
        ranked = [traces.item_page(i, rule, inputs.project.rank) if rule else i["id"] for i in items]
    except (traces.Unreadable, traces.PageRuleError) as e:
        raise ValueError(str(e)) from None
    unknown = [p for p in ranked if p not in inputs.page_ids]
    if unknown:
        raise ValueError(f"{inputs.project.rank} ranked page {unknown[0]!r}, which is not in the pages"
                         + (f" (read by {traces.rule_of(rule)})" if rule else ""))
    return documents(ranked)


def indexed_text(page: dict) -> str:
    """What the reference indexes read of a page: its title, a newline, its text (the text alone when it
    already starts with its title, as a markdown page's heading does)."""
    title, text = page.get("title"), page["text"]
    if not title or title in text.strip().split("\n", 1)[0]:
        return text
    return f"{title}\n{text}"


def vector_index(pages: list[dict], embedder: str):
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(agent.models().embedder(embedder))
    store.add_documents([Document(page_content=indexed_text(p), id=p["id"]) for p in pages])
    return store


def vector_ranking(store, pages: int, question: str) -> list[str]:
    """Every page id, closest first."""
    return [d.id for d in store.similarity_search(question, k=pages)]


def tokens(texts: list[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(texts, **TOKENS, return_ids=False, show_progress=False)


def keyword_index(pages: list[dict]):
    import bm25s

    retriever = bm25s.BM25(**BM25)
    retriever.index(tokens([indexed_text(p) for p in pages]), show_progress=False)
    return retriever


def keyword_ranking(retriever, pages: list[dict], question: str) -> list[str]:
    """Every page id by BM25 score, best first; equal scores (a query of stopwords only: all 0) in page order."""
    query = tokens([question])[0]
    scores = [float(s) for s in retriever.get_scores(query)] if query else [0.0] * len(pages)
    return [pages[i]["id"] for i in sorted(range(len(pages)), key=lambda i: -scores[i])]
