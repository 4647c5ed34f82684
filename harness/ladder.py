"""The retrieval ladder: every retrieval component earns its place with a number.

For every case with expected pages, the case's question alone ranks every page on three rungs:
- vector: the configured embedder through the index search_docs searches (assistant.index_pages);
- keyword: BM25 from bm25s over the same page text (title, newline, text), Lucene scoring with k1 1.5 and
  b 0.75, tokenised by bm25s.tokenize: lower-cased, runs of two or more word characters, bm25s's English
  stopwords dropped, no stemmer; pages with equal scores keep their order in docs.json;
- hybrid: both fused by reciprocal rank fusion with RRF_K = 60, the constant of Cormack, Clarke and
  Buettcher (SIGIR 2009), which damps the weight of the very top ranks so neither ranking dominates.

The vector and keyword rankings are cassette entries, `ladder/<case>/vector` and `ladder/<case>/keyword`,
computed only in live mode (`Rankers`): the vector rung pays for embeddings, and bm25s imports numpy and
scipy, which a replay must not load. RRF and the scores are pure and run at report time.
"""
from fractions import Fraction
from functools import cache
from typing import Callable, Optional

from harness.entries import Inputs, sha
from harness.stages import retrieval_scores

RRF_K = 60
RECORDED = ("vector", "keyword")
RUNGS = RECORDED + ("hybrid",)
# How the keyword rung tokenises and scores; recorded in each keyword entry's dependencies.
TOKENS = {"lower": True, "token_pattern": r"(?u)\b\w\w+\b", "stopwords": "en", "stemmer": None}
BM25 = {"method": "lucene", "k1": 1.5, "b": 0.75}


# ---- pure: fusion, scores, summary, report lines -------------------------------------------------------

def rrf(rankings: list[list[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal rank fusion: a page scores the sum of 1 / (k + rank) over the rankings holding it, ranks
    from 1. Exact fractions, so a tie is a tie; ties keep the order pages first appear in, the first
    ranking first."""
    fused: dict[str, Fraction] = {}
    for ranking in rankings:
        for rank, page in enumerate(dict.fromkeys(ranking), start=1):
            fused[page] = fused.get(page, Fraction(0)) + Fraction(1, k + rank)
    return sorted(fused, key=lambda page: -fused[page])


def rung_scores(ranking: list[str], expected: list[str], k: int) -> dict:
    """hit@k and recall@k of the expected pages, scored as the retrieval stage scores one search, and the
    reciprocal rank of the first over the whole ranking."""
    ranked = list(dict.fromkeys(ranking))
    return {**retrieval_scores([ranked], expected, k),
            "reciprocal_rank": retrieval_scores([ranked], expected, len(ranked))["reciprocal_rank"]}


def case_ladder(rankings: dict[str, Optional[list[str]]], expected: list[str], k: int) -> Optional[dict]:
    """Every rung's ranking and scores for one case, from its recorded rankings; None when the case expects
    no page or a recorded ranking is missing."""
    if not expected or any(rankings.get(rung) is None for rung in RECORDED):
        return None
    ranked = {rung: rankings[rung] for rung in RECORDED}
    ranked["hybrid"] = rrf([ranked["vector"], ranked["keyword"]])
    return {rung: {"ranking": ranking, **rung_scores(ranking, expected, k)} for rung, ranking in ranked.items()}


def summarize(rows: list[dict], k: int) -> Optional[dict]:
    """hit@k, recall@k and MRR of every rung over the rows that have a ladder; None when none has."""
    ladders = [r["ladder"] for r in rows if r.get("ladder")]
    if not ladders:
        return None
    n = len(ladders)
    mean = lambda field, rung: round(sum(lad[rung][field] for lad in ladders) / n, 3)  # noqa: E731
    return {"cases": n, "k": k, "rrf_k": RRF_K,
            "rungs": {rung: {"hits": sum(lad[rung]["hit"] for lad in ladders), f"recall_at_{k}": mean("recall", rung),
                             "mrr": mean("reciprocal_rank", rung)} for rung in RUNGS}}


def meaning(ladder: dict) -> str:
    """One sentence on what the measured ladder says, read against the vector rung, which the agent searches with."""
    k, rungs = ladder["k"], ladder["rungs"]
    order = lambda rung: (rungs[rung][f"recall_at_{k}"], rungs[rung]["mrr"])  # noqa: E731
    best = [rung for rung in RUNGS if order(rung) == max(map(order, RUNGS))]
    if order("hybrid") > order("vector"):
        fusion = "hybrid beats vector, so BM25 earns its place beside this embedder"
    elif order("hybrid") == order("vector"):
        fusion = "hybrid only ties vector, so BM25 buys nothing beside this embedder"
    else:
        fusion = "hybrid falls below vector, so fusing BM25 in would cost this embedder pages"
    return (f"What it means: {' and '.join(best)} {'ranks' if len(best) == 1 else 'tie as'} best (recall@{k}, "
            f"then MRR); the agent searches with the vector rung alone, and {fusion}.")


def markdown_lines(ladder: Optional[dict], embedder: str) -> list[str]:
    """The report's ladder table and its sentence; nothing when no case has a ladder."""
    if not ladder:
        return []
    k, n = ladder["k"], ladder["cases"]
    names = {"vector": f"vector ({embedder})", "keyword": "keyword (BM25)",
             "hybrid": f"hybrid (RRF, k={ladder['rrf_k']})"}
    lines = [f"\nRetrieval ladder ({n} cases with expected pages; each rung ranks every page for the question "
             f"alone, MRR over the whole ranking):\n", f"| rung | hit@{k} | recall@{k} | MRR |", "|---|---|---|---|"]
    lines += [f"| {names[rung]} | {r['hits']}/{n} | {r[f'recall_at_{k}']:.3f} | {r['mrr']:.3f} |"
              for rung, r in ladder["rungs"].items()]
    return lines + ["\n" + meaning(ladder)]


def baseline_part(rows: list[dict]) -> dict[str, dict[str, float]]:
    """What a baseline keeps of the ladder: each case's recall@k on each rung."""
    return {r["id"]: {rung: v["recall"] for rung, v in r["ladder"].items()} for r in rows if r.get("ladder")}


def regressions(saved: dict[str, dict[str, float]], now: dict[str, dict[str, float]]) -> list[str]:
    """Zero tolerance: a case whose recall@k dropped on any rung. A case or rung not measured now is skipped."""
    return [f"ladder {rung}: {case} recall@k {recall} -> {now[case][rung]} (tolerance 0)"
            for case, rungs in saved.items() for rung, recall in rungs.items()
            if now.get(case, {}).get(rung) is not None and now[case][rung] < recall]


# ---- the recorded rankings -----------------------------------------------------------------------------

def entry_name(case: dict, rung: str) -> str:
    return f"ladder/{case['id']}/{rung}"


@cache
def keyword_ranker() -> str:
    """The keyword rung's method, as recorded in its entries: the library's version and every setting."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("bm25s")
    except PackageNotFoundError:
        installed = "not installed"
    return f"bm25s {installed} {sha({**TOKENS, **BM25})}"


def recorded_deps(inputs: Inputs, case: dict) -> dict[str, Callable[[list], dict]]:
    """rung -> what its ranking depends on: the question and every page; for vector also the embedder and
    its code, for keyword the library and its settings. Nothing is recorded for a case that expects no page."""
    if not case["expected_docs"]:
        return {}
    read = {"question": sha(case["question"]), "pages": inputs.searched["pages"]}
    vector = {**read, **{f: v for f, v in inputs.searched.items() if f.startswith("embedder")}}
    keyword = {**read, "keyword ranker": keyword_ranker()}
    return {"vector": lambda value: vector, "keyword": lambda value: keyword}


def row_ladder(inputs: Inputs, case: dict, entry: Callable[[str, Callable], Optional[list]], k: int) -> Optional[dict]:
    """The case's ladder from its recorded rankings; `entry(name, deps_of)` looks each one up."""
    found = {rung: entry(entry_name(case, rung), deps) for rung, deps in recorded_deps(inputs, case).items()}
    return case_ladder(found, case["expected_docs"], k)


class Rankers:
    """Live mode: each rung's index built once per run, on first use, shared by every case."""

    def __init__(self, inputs: Inputs):
        from harness.recording import locked_once

        self.inputs = inputs
        self.vector_index = locked_once(lambda: vector_index(inputs.docs, inputs.embedder))
        self.keyword_index = locked_once(lambda: keyword_index(inputs.docs))

    def entries(self, case: dict) -> dict[str, tuple[Callable, Callable[[], list]]]:
        """name -> (deps_of, compute) of the case's recorded rankings."""
        compute = {"vector": lambda: vector_ranking(self.vector_index(), len(self.inputs.docs), case["question"]),
                   "keyword": lambda: keyword_ranking(self.keyword_index(), self.inputs.docs, case["question"])}
        return {entry_name(case, rung): (deps, compute[rung])
                for rung, deps in recorded_deps(self.inputs, case).items()}


def vector_index(docs: list[dict], embedder: str):
    from assistant import index_pages

    return index_pages(docs, embedder)


def vector_ranking(store, pages: int, question: str) -> list[str]:
    """Every page id, closest first, as search_docs ranks them (its top k is this ranking's first k)."""
    return [d.id for d in store.similarity_search(question, k=pages)]


def tokens(texts: list[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(texts, **TOKENS, return_ids=False, show_progress=False)


def keyword_index(docs: list[dict]):
    import bm25s

    from assistant import page_content

    retriever = bm25s.BM25(**BM25)
    retriever.index(tokens([page_content(d) for d in docs]), show_progress=False)
    return retriever


def keyword_ranking(retriever, docs: list[dict], question: str) -> list[str]:
    """Every page id by BM25 score, best first; equal scores (a query of stopwords only: all 0) in page order."""
    query = tokens([question])[0]
    scores = [float(s) for s in retriever.get_scores(query)] if query else [0.0] * len(docs)
    return [docs[i]["id"] for i in sorted(range(len(docs)), key=lambda i: -scores[i])]
