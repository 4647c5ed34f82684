"""`hash`: a deterministic offline embedder. Each content word is hashed into one of DIM signed buckets, then
the vector is normalised: pages that share words with the query score high; synonyms do not help, as with any
bag of words."""
import hashlib
import math

from langchain_core.embeddings import Embeddings

from whichstage.calls.retries import injected_latency
from whichstage.offline.words import content


class HashEmbeddings(Embeddings):
    """`hash`: each content word is hashed into one of DIM signed buckets, then the vector is normalised.
    Pages that share words with the query score high; synonyms do not help, as with any bag of words."""

    DIM = 512

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.DIM
        for token in sorted(content(text)):
            digest = hashlib.sha256(token.encode()).digest()
            index = int.from_bytes(digest[:4], "big") % self.DIM
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if not norm:  # nothing to hash: a fixed unit vector keeps cosine similarity defined
            return [1.0] + [0.0] * (self.DIM - 1)
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        injected_latency()
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        injected_latency()
        return self._embed(text)
