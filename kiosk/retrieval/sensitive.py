"""Stronger verification for sensitive notes: whose sensitive notes a query may use.

The gate decides whose notes a probe may reach at all (tau). A sensitive note of a matched owner is used
only if that owner also passes the stricter rule configured in `[sensitive]`:
- threshold: the owner's score under the same probe reaches a higher cosine: an absolute value per modality
  (must lie above tau), else the shipped calibrated value for the active encoder (calibration/sensitive-*.json,
  chosen from fused multi-frame probes at a target FAR; kiosk.calibration.sensitive) when it lies above tau,
  else tau + margin;
- face+palm: a face probe and a palm probe each verify the same single person at their normal tau.
Everything else about the owner's notes is unchanged; withheld notes never reach ranking or the LLM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kiosk.config import SensitiveConfig
from kiosk.errors import ConfigError
from kiosk.identity.gate import GateDecision

CLEARED = "cleared"
BELOW_STRICT = "below the sensitive threshold"
NEEDS_BOTH = "needs face and palm"
MISMATCH = "face and palm verify different people"


@dataclass(frozen=True)
class Clearance:
    """Owners whose sensitive notes this query may use, by which rule, and why the others are withheld."""

    cleared_owner_ids: tuple[int, ...]
    rule: str
    reason: str
    threshold: float | None = None
    withheld_in_top_k: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "cleared_owner_ids": list(self.cleared_owner_ids),
            "rule": self.rule,
            "reason": self.reason,
            "threshold": self.threshold,
            "withheld_in_top_k": self.withheld_in_top_k,
        }


def strict_threshold(config: SensitiveConfig, modality: str, tau: float, calibrated: float | None = None) -> float:
    """The cosine a sensitive note needs in `modality`; a configured value at or below tau is an error.

    `calibrated`: the shipped data-chosen threshold for the probe's encoder (None when there is none). One at or
    below tau (a stricter gate calibration was applied since) is ignored: the margin then keeps sensitive above tau.
    """
    absolute = config.face_threshold if modality == "face" else config.palm_threshold
    if absolute is not None:
        value = absolute
    elif calibrated is not None and calibrated > tau:
        value = calibrated
    else:
        value = tau + config.threshold_margin
    if value <= tau:
        raise ConfigError(
            f"sensitive.{modality}_threshold {value:.4f} is not above the {modality} gate threshold {tau:.4f}",
            f"set it above {tau:.4f}, or leave it unset to use tau + sensitive.threshold_margin",
        )
    return value


def by_threshold(decision: GateDecision, strict: float) -> Clearance:
    cleared = tuple(o for o in decision.matched_owner_ids if decision.scores.get(o, float("-inf")) >= strict)
    return Clearance(cleared, "threshold", CLEARED if cleared else BELOW_STRICT, strict)


def by_face_and_palm(first: GateDecision, second: GateDecision | None) -> Clearance:
    """Both modalities, each verifying exactly one person, the same one."""
    if second is None or first.modality == second.modality or None in (first.modality, second.modality):
        return Clearance((), "face+palm", NEEDS_BOTH)
    one, other = first.verified_user_id, second.verified_user_id
    if one is None or other is None:
        return Clearance((), "face+palm", NEEDS_BOTH)
    if one != other:
        return Clearance((), "face+palm", MISMATCH)
    return Clearance((one,), "face+palm", CLEARED)
