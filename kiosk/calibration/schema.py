"""The calibration file: what threshold was chosen, by which rule, for which encoder, from which data."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Rule = Literal["tau_d", "eer", "far", "strict", "fused"]
RULE_DESCRIPTIONS: dict[str, str] = {
    "tau_d": "intersection of the genuine and impostor densities between their modes (seed paper)",
    "eer": "equal error rate point (FAR = FRR)",
    "far": "lowest threshold whose false accept rate is at most the target FAR",
    "strict": "stricter (higher) of tau_d and the target-FAR threshold",
    "fused": (
        "stricter of 'strict' and the threshold that holds the target FAR for probes fused from 1 up to the live "
        "camera's frames (default for shared terminals when the data has enough images per person)"
    ),
}
SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EncoderInfo(_Model):
    name: str = Field(description="Encoder name as configured (e.g. 'facenet', 'compcode').")
    sha256: str = Field(description="sha256 of the encoder model the scores were made with.")


class DatasetInfo(_Model):
    name: str = Field(description="Benchmark name, e.g. 'lfw' or 'tongji'.")
    path: str = Field(description="Data folder the images came from.")
    protocol: Literal["pairs", "pairs+all-impostors", "all-pairs", "scores"] = Field(
        description=(
            "pairs: a pairs file; pairs+all-impostors: its genuine pairs and every different-identity pair "
            "of its images; all-pairs: every pair of the manifest; scores: given scores."
        )
    )
    pairs_file: str | None = Field(default=None, description="The pairs file for the 'pairs' protocol.")
    images: int = Field(default=0, description="Images embedded.")
    identities: int = Field(default=0, description="Distinct identities among the embedded images.")
    unreadable: list[str] = Field(default_factory=list, description="Images skipped (path: reason).")
    skipped_pairs: int = Field(default=0, description="Pairs dropped because an image was unreadable.")
    cached_embeddings: int = Field(
        default=0, description="Images whose embedding came from the cache (then seconds.embed excludes them)."
    )
    impostor_fraction: float = Field(
        default=1.0, description="Fraction of impostor pairs scored (a deterministic sample when there are millions)."
    )


class Counts(_Model):
    genuine: int = Field(description="Genuine (same identity) comparisons.")
    impostor: int = Field(description="Impostor (different identity) comparisons.")
    impostor_available: int = Field(description="Impostor pairs the data defines (before any sampling).")


class Rate(_Model):
    value: float = Field(description="errors / trials.")
    errors: int
    trials: int
    ci95: tuple[float, float] = Field(description="95 % Clopper-Pearson interval.")


class OperatingPoint(_Model):
    rule: str
    threshold: float
    far: Rate = Field(description="False accept rate at this threshold (impostor score >= threshold).")
    frr: Rate = Field(description="False reject rate at this threshold (genuine score < threshold).")
    resolved: bool = Field(
        default=True,
        description="False when the data cannot resolve this point (e.g. too few impostor pairs).",
    )
    note: str = ""


class FusedPoint(_Model):
    frames: int = Field(description="Frames (images) averaged into each probe.")
    threshold_at_target: float = Field(description="Lowest threshold, FAR <= target, for probes of this many frames.")
    far: Rate = Field(description="FAR of probes of this many frames at the shipped threshold.")
    frr: Rate = Field(description="FRR of probes of this many frames at the shipped threshold.")


class FusedGate(_Model):
    """Trials of probes fused over frames, as the live camera makes them (kiosk.calibration.fused_trials)."""

    target_far: float = Field(description="FAR the fused threshold holds for every frame count.")
    threshold: float = Field(description="Highest per-frame-count target-FAR threshold (before the 'strict' floor).")
    resolved: bool = Field(description="Every frame count had at least 1/target_far impostor trials.")
    frames_fused: int = Field(description="Frames the live fuser averages (FUSE_FRAMES): the probe at the kiosk.")
    enrol: int = Field(description="Images each identity is enrolled from (one template each, the best one counts).")
    identities: int = Field(description="Identities with genuine trials (enrol + frames_fused images or more).")
    gallery: int = Field(description="Identities enrolled (genuine ones plus impostor-only ones).")
    trade_off: list[FusedPoint] = Field(
        description="Per frame count: its own target-FAR threshold, FAR and FRR at the fused rule's threshold."
    )


class TargetFar(_Model):
    target: float
    threshold: float
    tar: Rate = Field(description="True accept rate (genuine score >= threshold) at that threshold.")
    achieved_far: Rate
    resolved: bool = Field(description="At least 1/target impostor comparisons were available.")
    impostors_needed: int


class Figures(_Model):
    tau_d: float = Field(description="Density intersection between the modes.")
    tau_d_crossings: list[float] = Field(description="Every crossing of the two densities on the score grid.")
    genuine_mode: float
    impostor_mode: float
    far_at_tau_d: Rate
    frr_at_tau_d: Rate
    eer: float
    eer_threshold: float
    eer_ci95: tuple[float, float] | None = Field(
        default=None, description="Bootstrap 95 % interval of the EER (None when not computed)."
    )
    bandwidth_genuine: float = Field(description="KDE bandwidth (score units).")
    bandwidth_impostor: float
    genuine_mean: float
    genuine_std: float
    impostor_mean: float
    impostor_std: float
    far_targets: dict[str, TargetFar] = Field(description="Threshold and TAR per target FAR, keyed '1e-03'.")


class Calibration(_Model):
    schema_version: int = SCHEMA_VERSION
    modality: Literal["face", "palm"]
    benchmark: str
    threshold: float = Field(description="The threshold the gate uses (cosine similarity).")
    rule: Rule
    target_far: float = Field(description="Target FAR used by the 'far' and 'strict' rules.")
    encoder: EncoderInfo
    dataset: DatasetInfo
    counts: Counts
    figures: Figures
    operating_points: dict[str, OperatingPoint]
    warnings: list[str] = Field(default_factory=list)
    created: datetime
    seconds: dict[str, float] = Field(default_factory=dict, description="Wall time per stage.")
    plot: str | None = Field(default=None, description="PNG file name next to this JSON.")
    command: str | None = Field(default=None, description="Command that produced this file.")
    alignment_search: bool = Field(
        default=False,
        description=(
            "Palm: probes were scored as the best cosine over their ROI's re-alignments (palm.alignment_search), "
            "every ordered pair of images; the kiosk refuses it when the setting differs."
        ),
    )
    fused: FusedGate | None = Field(
        default=None,
        description="Fused-probe trials behind the 'fused' rule; None when the data had too few images per person.",
    )
