"""Identity-gated retrieval: the scoped pool the gate opens, then cosine top-K fused with BM25 inside it."""

from kiosk.retrieval.pool import ScopedPool, scoped_pool, validate_query
from kiosk.retrieval.results import Retrieval, ScoredNote
from kiosk.retrieval.retriever import Retriever

__all__ = [
    "Retrieval",
    "Retriever",
    "ScopedPool",
    "ScoredNote",
    "scoped_pool",
    "validate_query",
]
