"""Identity-gated retrieval: the scoped pool the gate opens, then RF-Mem paths fused with BM25 inside it."""

from kiosk.retrieval.pool import ScopedPool, scoped_pool, validate_query
from kiosk.retrieval.results import FamiliaritySignal, Retrieval, ScoredNote
from kiosk.retrieval.retriever import Retriever

__all__ = [
    "FamiliaritySignal",
    "Retrieval",
    "Retriever",
    "ScopedPool",
    "ScoredNote",
    "scoped_pool",
    "validate_query",
]
