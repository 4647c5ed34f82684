"""The offline backends: models of their own that need no network (rules chat model, hash embedder, lexical judge)."""
