"""Identity-gated retrieval: the biometric gate, then RF-Mem paths fused with BM25 inside the matched pool."""

from kiosk.retrieval.gate import GateDecision, decide, gate, user_scores, validate_probe, validate_query
from kiosk.retrieval.results import FamiliaritySignal, Retrieval, ScoredNote
from kiosk.retrieval.retriever import Retriever

__all__ = [
    "FamiliaritySignal",
    "GateDecision",
    "Retrieval",
    "Retriever",
    "ScoredNote",
    "decide",
    "gate",
    "user_scores",
    "validate_probe",
    "validate_query",
]
