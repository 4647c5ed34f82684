"""Retrieval scored over documents: hit@k, recall@k and reciprocal rank of a case's expected pages, a
search's documents (its distinct pages in rank order) as every report lists them, and where k cut them.
Pure, no I/O."""
from typing import Iterable, Optional

from whichstage.model.dicts import RetrievalDict


def retrieval_scores(searches: list[list[str]], expected: list[str], k: int) -> Optional[RetrievalDict]:
    """hit@k, recall@k and reciprocal rank of the expected pages, per search, over documents: a page is
    retrieved at rank r when some search returned it as its r-th distinct page with r <= k (two chunks of one
    page are one document, at the first one's place), and its rank is the best any search gave it. None when
    the case expects no page."""
    if not expected:
        return None
    best: dict[str, int] = {}
    for ranked in searches:
        for rank, page in enumerate(documents(ranked)[:k], start=1):
            best[page] = min(rank, best.get(page, rank))
    ranks = sorted(best[page] for page in set(expected) if page in best)
    return {"hit": bool(ranks), "recall": len(ranks) / len(set(expected)),
            "reciprocal_rank": 1 / ranks[0] if ranks else 0.0,
            "missed": sorted(set(expected) - set(best))}


def case_retrieval(searches: list[list[str]], expected: list[str], k: int) -> Optional[RetrievalDict]:
    """A case's retrieval verdict as its row holds it: retrieval_scores and the k they were scored at, so the
    row alone says where k cut each search. None when the case expects no page."""
    scores = retrieval_scores(searches, expected, k)
    if scores is not None:
        scores["k"] = k
    return scores


def below_k(searches: list[list[str]], missed: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Each missed page (one no search returned within its top k) that some search returned below k: its best
    rank over documents and the search (from 1) that gave it, the first one on a tie."""
    wanted = set(missed)
    found: dict[str, tuple[int, int]] = {}
    for number, ranked in enumerate(searches, start=1):
        for rank, page in enumerate(documents(ranked), start=1):
            if page in wanted and (page not in found or rank < found[page][0]):
                found[page] = (rank, number)
    return found


def scored_documents(searches: list[list[str]], k: int) -> list[str]:
    """The distinct pages within the top k of some search, in the order the searches returned them."""
    return documents(page for ranked in searches for page in documents(ranked)[:k])


def documents(ranked: Iterable[str]) -> list[str]:
    """A ranking's distinct pages, each where it first appears: what ranked retrieval metrics score."""
    return list(dict.fromkeys(ranked))


def ranked_documents(ranked: Iterable[str]) -> list[tuple[str, str]]:
    """A search's documents as the reports list them, so the ranks shown are the ranks scored: each distinct
    page in rank order (documents()), with a note of its chunks when the search returned more than one."""
    counts: dict[str, int] = {}
    for page in ranked:
        counts[page] = counts.get(page, 0) + 1
    return [(page, f" ({n} chunks)" if n > 1 else "") for page, n in counts.items()]

