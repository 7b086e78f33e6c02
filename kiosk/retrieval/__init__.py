"""Identity-gated retrieval: the biometric gate, then RF-Mem paths fused with BM25 inside the matched pool."""

from kiosk.retrieval.gate import (
    GateDecision,
    ScopedPool,
    decide,
    gate,
    scoped_pool,
    user_scores,
    validate_probe,
    validate_query,
)
from kiosk.retrieval.results import FamiliaritySignal, Retrieval, ScoredNote
from kiosk.retrieval.retriever import Retriever

__all__ = [
    "FamiliaritySignal",
    "GateDecision",
    "Retrieval",
    "Retriever",
    "ScopedPool",
    "ScoredNote",
    "decide",
    "gate",
    "scoped_pool",
    "user_scores",
    "validate_probe",
    "validate_query",
]
