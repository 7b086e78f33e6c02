"""The face video of the sensitive-threshold bench: the clip analysed at the kiosk's frame rate in its replay
phases, his shots, the wizard's enrolment and the step-up replayed, and the FRR sections they give (the reference
photo's and the enrolled-as-the-kiosk-enrols one). The other face-video benches reuse its constants and steps."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bench.common import command_line, table
from bench.sensitive_report import counted_rate, percent_cell
from kiosk.app.enrolment import Enrolment
from kiosk.app.live import STEP_UP_FRAMES, STEP_UP_WAIT_S, STEP_UP_WINDOW_S, longer_fusion
from kiosk.identity.face import FaceEmbedder
from kiosk.identity.gallery import Gallery
from kiosk.identity.gate import user_scores
from kiosk.identity.probe import Probe
from kiosk.identity.verify import FUSE_FRAMES, FUSE_MAX_AGE_S, ProbeFuser
from kiosk.memory.note import Template
from kiosk.ui.screens.enroll import SAMPLE_INTERVAL_MS, SAMPLES_NEEDED

VIDEO_FPS = 29.97
VIDEO_STEP = 3  # every 3rd frame: about the kiosk's 10 analysed frames a second
VIDEO_OWNER_MIN = 0.3
VIDEO_FRAMES = (1, 3, 5, 10)


def video_figures(embedder: FaceEmbedder, data_dir: Path, threshold: float, tau: float) -> dict[int, dict[str, Any]]:
    """Genuine fused probes of the live camera's own fuser on the face video, scored against the reference photo."""
    folder = data_dir / "face_video"
    reference = cv2.imread(str(folder / "lin-manuel-miranda.png"))
    template = embedder.embed_image(reference)
    template = template / np.linalg.norm(template)
    capture = cv2.VideoCapture(str(folder / "short_hamilton_clip.mp4"))
    observations: list[tuple[float, np.ndarray | None, int]] = []
    index = 0
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        if index % VIDEO_STEP == 0:
            analysis = embedder.analyse(frame)
            observations.append((index / VIDEO_FPS, analysis.embedding, analysis.faces_in_view))
        index += 1
    capture.release()
    out: dict[int, dict[str, Any]] = {}
    for frames in VIDEO_FRAMES:
        fuser = ProbeFuser(
            "face", embedder.model_sha256, fuse_frames=frames, max_age_s=FUSE_MAX_AGE_S["face"] * frames / 5
        )
        scores: list[float] = []
        used: list[int] = []
        for stamp, vector, faces in observations:
            fuser.add(vector, stamp, faces)
            if vector is None or float(vector @ template) / float(np.linalg.norm(vector)) < VIDEO_OWNER_MIN:
                continue  # only moments when he is the newest face in view (the fuser keeps to him from there)
            probe = fuser.fuse(stamp).probe
            assert probe is not None
            scores.append(float(probe.vector @ template))
            used.append(probe.frames)
        values = np.asarray(scores)
        out[frames] = {
            "probes": len(values),
            "mean_frames": float(np.mean(used)) if used else 0.0,
            "frr_sensitive": counted_rate(int((values < threshold).sum()), len(values)),
            "frr_tau": counted_rate(int((values < tau).sum()), len(values)),
            "median": float(np.median(values)) if len(values) else float("nan"),
        }
    print(f"face video: {len(observations)} frames analysed, {out[1]['probes']} with his face")
    return out


# ---- face video, enrolled as the kiosk enrols (issue #38.2: what the owner at the camera gets) --------------

VIDEO_MARKER = "## Face video: enrolled as the kiosk enrols"
VIDEO_PHASES = 3  # the 10 frames/s analysis can start on any of the 3 camera frames: three honest replays
SEGMENT_GAP_S = 0.5  # a longer run of frames without him starts a new shot


@dataclass(frozen=True)
class ClipFrame:
    """One analysed frame of the clip: its time, the requester's embedding (None: no usable face), face count,
    and whether that face is the video's person (cosine to his reference photo >= VIDEO_OWNER_MIN)."""

    index: int
    stamp: float
    vector: np.ndarray | None
    faces_in_view: int
    owner: bool


def owner_segments(frames: Sequence[ClipFrame], gap_s: float = SEGMENT_GAP_S) -> list[list[ClipFrame]]:
    """The runs of frames showing the owner (his shots), split where he is absent for longer than `gap_s`."""
    segments: list[list[ClipFrame]] = []
    for frame in frames:
        if not frame.owner:
            continue
        if segments and frame.stamp - segments[-1][-1].stamp <= gap_s:
            segments[-1].append(frame)
        else:
            segments.append([frame])
    return segments


def evenly_spread(items: Sequence[Any], count: int) -> list[Any]:
    """`count` items evenly spaced from first to last (all of them when there are fewer)."""
    if len(items) <= count:
        return list(items)
    return [items[i] for i in np.linspace(0, len(items) - 1, count).round().astype(int)]


def replace_section(text: str, marker: str, section: str) -> str:
    """`text` with everything from the line `marker` on replaced by `section` (appended when absent)."""
    head = text.split(f"\n{marker}\n", 1)[0].rstrip("\n")
    return f"{head}\n\n{section.rstrip()}\n"


def clip_frames(embedder: FaceEmbedder, folder: Path, reference: np.ndarray) -> list[ClipFrame]:
    capture = cv2.VideoCapture(str(folder / "short_hamilton_clip.mp4"))
    frames: list[ClipFrame] = []
    while True:
        ok, image = capture.read()
        if not ok:
            break
        analysis = embedder.analyse(image)
        vector = analysis.embedding
        owner = vector is not None and float(vector @ reference) / float(np.linalg.norm(vector)) >= VIDEO_OWNER_MIN
        frames.append(ClipFrame(len(frames), len(frames) / VIDEO_FPS, vector, analysis.faces_in_view, owner))
    capture.release()
    return frames


def wizard_gallery(enrol_shot: Sequence[ClipFrame], model_sha256: str) -> Gallery:
    """The enrolment wizard's SAMPLES_NEEDED good frames (one face, an embedding), spread over the shot, through
    the kiosk's own gallery rules (Enrolment._gallery: min samples, outliers, duplicates)."""
    good = [f.vector for f in enrol_shot if f.vector is not None and f.faces_in_view == 1]
    enrolment = Enrolment.__new__(Enrolment)  # _gallery needs no store or camera
    return enrolment._gallery(evenly_spread(good, SAMPLES_NEEDED), model_sha256, "face")


def _templates(vectors: np.ndarray, model_sha256: str) -> list[Template]:
    now = datetime.now(UTC)
    return [Template(i, 1, "face", vector, model_sha256, now) for i, vector in enumerate(vectors)]


def step_up_probe(results: Sequence[tuple[float, Probe | None]], asked_at: float) -> Probe | None:
    """verify_stronger replayed on (frame time, longer-window probe) pairs: the first probe whose newest frame is
    at or after `asked_at` with STEP_UP_FRAMES frames, else the last fresh one by the STEP_UP_WAIT_S deadline."""
    chosen: Probe | None = None
    for stamp, probe in results:
        if stamp < asked_at:
            continue
        if stamp > asked_at + STEP_UP_WAIT_S:
            break
        chosen = probe if probe is not None and probe.captured_at >= asked_at else None
        if chosen is not None and chosen.frames >= STEP_UP_FRAMES:
            break
    return chosen


def video_probe_scores(
    analysed: Sequence[ClipFrame], span: tuple[int, int], templates: list[Template], model_sha256: str
) -> dict[int, list[tuple[float, int]]]:
    """(score, frames fused) of the question's probe (live fuser, FUSE_FRAMES) and of the step-up's (STEP_UP_FRAMES,
    waiting for frames after the ask) asked at every analysed frame showing him within the frame indices `span`
    (inclusive); no other frame reaches the fuser. A step-up without a fresh probe scores -1 (rejected)."""
    fuser = ProbeFuser.for_modality("face", model_sha256)
    out: dict[int, list[tuple[float, int]]] = {FUSE_FRAMES["face"]: [], STEP_UP_FRAMES: []}
    longer: list[tuple[float, Probe | None]] = []
    asks: list[float] = []
    for frame in analysed:
        if not span[0] <= frame.index <= span[1]:
            continue
        fuser.add(frame.vector, frame.stamp, frame.faces_in_view)
        longer.append((frame.stamp, longer_fusion(fuser, STEP_UP_FRAMES, STEP_UP_WINDOW_S, now=frame.stamp).probe))
        if frame.owner:
            asks.append(frame.stamp)
            probe = fuser.fuse(frame.stamp).require()
            out[FUSE_FRAMES["face"]].append((user_scores(probe, templates).scores[1], probe.frames))
    for asked_at in asks:
        stronger = step_up_probe(longer, asked_at)
        score = -1.0 if stronger is None else user_scores(stronger, templates).scores[1]
        out[STEP_UP_FRAMES].append((score, 0 if stronger is None else stronger.frames))
    return out


def enrolled_video_section(
    embedder: FaceEmbedder, data_dir: Path, threshold: float, tau: float
) -> tuple[str, dict[str, float]]:
    """FRR of the owner at the camera on the face video: enrolled by the wizard from his first shot, or from his
    one reference photo, and probed by the live fuser and the step-up on his later shots."""
    folder = data_dir / "face_video"
    photo = embedder.embed_image(cv2.imread(str(folder / "lin-manuel-miranda.png")))
    photo = photo / np.linalg.norm(photo)
    frames = clip_frames(embedder, folder, photo)
    shots = owner_segments(frames)
    if len(shots) < 2:
        raise SystemExit(f"face video: {len(shots)} shot(s) of him; disjoint enrolment and probe shots need 2")
    probe_from = shots[1][0].index
    # main: enrolled from his first shot, probed on the later ones; reverse check: enrolled from the last shot,
    # probed on the first (tells the enrolment method apart from how unlike the two shots are)
    directions = {
        "later": (shots[0], (probe_from, frames[-1].index)),
        "reverse": (shots[-1], (shots[0][0].index, shots[0][-1].index)),
    }
    scores: dict[tuple[str, str, int], list[tuple[float, int]]] = defaultdict(list)
    galleries: list[Gallery] = []
    for direction, (enrol_shot, span) in directions.items():
        for phase in range(VIDEO_PHASES):
            analysed = frames[phase::VIDEO_STEP]
            shot = [f for f in enrol_shot if f.index % VIDEO_STEP == phase]
            gallery = wizard_gallery(shot, embedder.model_sha256)
            galleries.append(gallery)
            for how, vectors in (("wizard", gallery.vectors), ("photo", photo[None, :])):
                templates = _templates(vectors, embedder.model_sha256)
                for window, got in video_probe_scores(analysed, span, templates, embedder.model_sha256).items():
                    scores[(direction, how, window)] += got
    rows: list[list[str]] = []
    figures: dict[str, float] = {}
    labels = {
        ("later", "wizard"): f"enrolment wizard: {SAMPLES_NEEDED} frames of his first shot; probes: later shots",
        ("later", "photo"): "his one reference photo (earlier figure); probes: later shots",
        ("reverse", "wizard"): f"reverse check: wizard, {SAMPLES_NEEDED} frames of his last shot; probes: first shot",
        ("reverse", "photo"): "reverse check: his one reference photo; probes: first shot",
    }
    order = {key: rank for rank, key in enumerate(labels)}
    for (direction, how, window), pairs in sorted(scores.items(), key=lambda i: (order[i[0][:2]], i[0][2])):
        values = np.asarray([score for score, _ in pairs])
        sensitive = counted_rate(int((values < threshold).sum()), len(values))
        at_tau = counted_rate(int((values < tau).sum()), len(values))
        figures[f"face_video.{direction}.enrolled_{how}.fused_{window}.frr_sensitive"] = sensitive.value
        figures[f"face_video.{direction}.enrolled_{how}.fused_{window}.frr_tau"] = at_tau.value
        rows.append(
            [
                labels[(direction, how)],
                "step-up" if window == STEP_UP_FRAMES else "question probe",
                f"{window} ({np.mean([n for _, n in pairs]):.1f})",
                str(len(values)),
                f"{np.median(values):.3f}",
                f"{percent_cell(sensitive)} [{100 * sensitive.ci95[0]:.1f}, {100 * sensitive.ci95[1]:.1f}]",
                f"{percent_cell(at_tau)} [{100 * at_tau.ci95[0]:.1f}, {100 * at_tau.ci95[1]:.1f}]",
            ]
        )
    kept = ", ".join(f"{len(g.vectors)}/{len(g.outcomes)}" for g in galleries)
    fps = VIDEO_FPS / VIDEO_STEP
    body = "\n".join(
        [
            VIDEO_MARKER,
            "",
            f"Made by `{command_line()}` on {datetime.now(UTC).isoformat(timespec='seconds')}.",
            "",
            f"Clip `short_hamilton_clip.mp4` ({len(frames)} frames, {len(frames) / VIDEO_FPS:.1f} s), analysed at "
            f"{fps:.0f} frames/s as the kiosk does, replayed {VIDEO_PHASES} times (each phase of the 1-in-"
            f"{VIDEO_STEP} frame choice). He is in view in {len(shots)} shots: "
            + ", ".join(
                f"frames {s[0].index}-{s[-1].index} ({s[-1].stamp - s[0].stamp + 1 / VIDEO_FPS:.1f} s)" for s in shots
            )
            + f". Enrolment uses one shot, his first (main rows) or his last (reverse check): the wizard's "
            f"{SAMPLES_NEEDED} good frames (one face in view), spread evenly over the shot (the wizard takes one "
            f"every {SAMPLE_INTERVAL_MS} ms; his first shot is shorter than {SAMPLES_NEEDED} of those), through "
            f"Enrolment._gallery (templates kept per enrolment: {kept}). Probes come only from the other shot(s), "
            f"main rows from frame {probe_from} on (no enrolment frame reaches the fuser): one per analysed frame "
            "showing him, fused by the live "
            f"ProbeFuser ({FUSE_FRAMES['face']} frames, {FUSE_MAX_AGE_S['face']:.0f} s) and by the step-up's "
            f"longer_fusion ({STEP_UP_FRAMES} frames, {STEP_UP_WINDOW_S:.0f} s, waiting up to {STEP_UP_WAIT_S} s "
            "after the ask for frames, as verify_stronger does; every ask is stepped up here); score = the gate's "
            f"max cosine over his templates. Shipped face sensitive threshold {threshold:.4f}, gate tau {tau:.4f}. "
            "Intervals are Clopper-Pearson 95 % over probes, which are consecutive frames of one person in one "
            "shot (step-ups asked in one shot share most of their frames), so the real uncertainty is much wider.",
            "",
            table(
                [
                    "face video: enrolled from",
                    "probe",
                    "frames fused (mean in probe)",
                    "probes",
                    "median cosine to his templates",
                    "FRR at shipped sensitive threshold [95 % CI, %]",
                    "FRR at gate tau [95 % CI, %]",
                ],
                rows,
            ),
        ]
    )
    return body, figures
