"""Face presentation-attack detection: APCER / BPCER of passive cues and active challenge on attacks made here.

Bona fide: the shared 10 s face video (`face_video/short_hamilton_clip.mp4`), sampled at the kiosk's analysis rate
(every third frame of 29.97 fps = ~10 fps, three phases), cut into 2 s windows every 0.5 s; windows that span a
shot cut are left out (a kiosk camera has no cuts). Attacks (bench/pad_attacks.py), 20 frames each:

- print-video-still: a still frame of the video printed (washed-out colour, squeezed contrast, blur) and held in a
  slightly moving hand (a plane tilted +-8-10 deg, shifted, scaled), camera noise per frame;
- print-halftone: the same with a printer's halftone dot screen;
- print-lfw: an LFW3D face (one per identity, seed 0) enlarged into a frame, printed and held the same way;
- frozen-still: one still frame (video or LFW) repeated unchanged (an injected image / frozen stream);
- screen-replay: each bona fide window's frames re-rendered as filmed off a screen (display gamma, RGB sub-pixel
  grid resampled by the camera = moire, refresh bands rolling, slight tilt, camera noise).

Each window goes through the live path: MediaPipe detector -> requester -> Face Mesh -> `FrameEvidence` ->
`liveness.judge` with the default tuning (`PASSIVE`). APCER (per attack type) = attack windows not called "attack" (an
"undecided" window does not block by default, so it counts as accepted); BPCER = bona fide windows called "attack".
The active challenge is run on the same material with the rules of kiosk/identity/challenge.py.

    .venv/bin/python -m bench.bench_pad [--lfw 30] [--data DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bench import pad_attacks
from bench.common import percentiles_ms, table, write_results
from kiosk.calibration.scores import clopper_pearson
from kiosk.config import KioskConfig, load_config
from kiosk.identity.challenge import CHALLENGE, ActiveChallenge, ChallengeKind
from kiosk.identity.detect import Detector, create_detector
from kiosk.identity.facemesh import FaceMesh, load_face_mesh
from kiosk.identity.liveness import PASSIVE, FrameEvidence, LivenessVerdict, frame_evidence, judge
from kiosk.identity.pad import challenge_sample, usable_mesh

VIDEO = "face_video/short_hamilton_clip.mp4"
STEP = 3  # 29.97 fps / 3 = the kiosk's ~10 analysed frames a second
WINDOW = 20  # frames at ~10 fps = 2 s (PASSIVE.window_s)
STRIDE = 5  # 0.5 s between window starts
CUT_DIFF = 40.0  # mean gray difference between consecutive frames that marks a shot cut
STILLS_EVERY = 30  # one still per second of video for the print attacks
MIN_FACE_PX = 60


def read_video(path: Path) -> list[np.ndarray]:
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    if not frames:
        raise SystemExit(f"cannot read frames from {path}")
    return frames


@dataclass
class Analyser:
    detector: Detector
    mesh: FaceMesh
    times_ms: list[float]

    def evidence(self, frame: np.ndarray, timestamp: float) -> tuple[FrameEvidence | None, Any]:
        """The requester's evidence (largest face of at least MIN_FACE_PX) and its mesh, or (None, None)."""
        started = time.perf_counter()
        faces = [f for f in self.detector.detect(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)) if f.side >= MIN_FACE_PX]
        if not faces:
            return None, None
        face = max(faces, key=lambda f: f.side)
        mesh = usable_mesh(self.mesh, frame, face.landmarks)
        evidence = frame_evidence(frame, face.landmarks, timestamp, mesh.xy if mesh is not None else None)
        self.times_ms.append((time.perf_counter() - started) * 1000)
        return evidence, mesh

    def window(self, frames: Iterable[np.ndarray]) -> tuple[list[FrameEvidence], list[Any]]:
        evidence, meshes = [], []
        for index, frame in enumerate(frames):
            found, mesh = self.evidence(frame, index / 10.0)
            meshes.append(mesh)
            if found is not None:
                evidence.append(found)
        return evidence, meshes


def shot_cuts(frames: Sequence[np.ndarray]) -> set[int]:
    """Indices i where frame i starts a new shot."""
    grays = [cv2.cvtColor(cv2.resize(f, (160, 90)), cv2.COLOR_BGR2GRAY).astype(np.float32) for f in frames]
    return {i for i in range(1, len(grays)) if float(np.mean(np.abs(grays[i] - grays[i - 1]))) > CUT_DIFF}


def bona_fide_windows(frames: Sequence[np.ndarray]) -> list[list[int]]:
    cuts = shot_cuts(frames)
    windows = []
    for phase in range(STEP):
        indices = list(range(phase, len(frames), STEP))
        for start in range(0, len(indices) - WINDOW + 1, STRIDE):
            window = indices[start : start + WINDOW]
            if not any(window[0] < cut <= window[-1] for cut in cuts):
                windows.append(window)
    return windows


def still_indices(frames: Sequence[np.ndarray], analyser: Analyser) -> list[int]:
    """One frame per second whose requester face is usable (detector + mesh)."""
    chosen = []
    for index in range(0, len(frames), STILLS_EVERY):
        for candidate in range(index, min(index + STILLS_EVERY, len(frames)), 3):
            evidence, mesh = analyser.evidence(frames[candidate], 0.0)
            if evidence is not None and mesh is not None:
                chosen.append(candidate)
                break
    return chosen


def lfw_frames(data: Path, count: int, seed: int) -> list[np.ndarray]:
    """LFW3D faces (one image per identity), each enlarged to 200 px and set in a 640x360 dark frame."""
    root = data / "lfw3d_frontalized" / "images"
    people = sorted(p for p in root.iterdir() if p.is_dir())
    rng = np.random.default_rng(seed)
    out = []
    for person in rng.permutation(len(people))[:count]:
        image = cv2.imread(str(sorted(people[int(person)].glob("*.jpg"))[0]))
        if image is None:
            continue
        face = cv2.resize(image, (200, 200), interpolation=cv2.INTER_CUBIC)
        frame = np.full((360, 640, 3), 40, dtype=np.uint8)
        frame[80:280, 220:420] = face
        out.append(frame)
    return out


# ---- scoring --------------------------------------------------------------------------------------------------


def rate(errors: int, trials: int) -> dict[str, Any]:
    low, high = clopper_pearson(errors, trials)
    return {
        "value": errors / trials if trials else float("nan"),
        "errors": errors,
        "trials": trials,
        "ci95": [low, high],
    }


def summarise(verdicts: list[LivenessVerdict], attack: bool) -> dict[str, Any]:
    decisions = [v.decision for v in verdicts]
    errors = sum(d != "attack" for d in decisions) if attack else sum(d == "attack" for d in decisions)
    fired: dict[str, int] = {}
    for verdict in verdicts:
        for cue in verdict.fired:
            fired[cue] = fired.get(cue, 0) + 1
    cues: dict[str, list[float]] = {}
    for verdict in verdicts:
        for name, value in verdict.cues.items():
            cues.setdefault(name, []).append(value)
    return {
        ("apcer" if attack else "bpcer"): rate(errors, len(verdicts)),
        "windows": len(verdicts),
        "undecided": decisions.count("undecided"),
        "fired": fired,
        "cue_median": {name: float(np.median(values)) for name, values in cues.items()},
        "cue_range": {name: [float(np.min(values)), float(np.max(values))] for name, values in cues.items()},
    }


def run_challenge(meshes: Sequence[Any], kind: ChallengeKind, config: KioskConfig) -> bool:
    challenge = ActiveChallenge(kind, started_at=0.0)
    for index, mesh in enumerate(meshes):
        if challenge.feed(challenge_sample(mesh, index / 10.0)).status != "waiting":
            break
    return challenge.state().passed


def challenge_rates(groups: dict[str, list[list[Any]]], config: KioskConfig) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, sequences in groups.items():
        row: dict[str, Any] = {"sequences": len(sequences)}
        for kind in ("blink", "turn-left", "turn-right"):
            row[kind] = sum(run_challenge(seq, kind, config) for seq in sequences)
        out[name] = row
    return out


# ---- main -----------------------------------------------------------------------------------------------------


def fmt(rate_: dict[str, Any]) -> str:
    low, high = rate_["ci95"]
    return f"{rate_['value']:.3f} ({rate_['errors']}/{rate_['trials']}; 95% CI {low:.2f}-{high:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=None, help="Eval data root (default paths.eval_data_dir).")
    parser.add_argument("--lfw", type=int, default=30, help="LFW identities used for print / frozen attacks.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    config = load_config()
    data = args.data or config.paths.eval_data_dir
    if not (data / VIDEO).is_file():
        raise SystemExit(f"no face video at {data / VIDEO}: set KIOSK_DATA or --data")
    started = time.perf_counter()
    analyser = Analyser(create_detector(config), load_face_mesh(config.paths.models), [])
    frames = read_video(data / VIDEO)

    # bona fide: analyse every frame once, then assemble the windows
    per_frame = [analyser.evidence(frame, index / 29.97) for index, frame in enumerate(frames)]
    windows = bona_fide_windows(frames)
    bona_evidence = [[per_frame[i][0] for i in w if per_frame[i][0] is not None] for w in windows]
    bona_meshes = [[per_frame[i][1] for i in w] for w in windows]
    verdicts: dict[str, list[LivenessVerdict]] = {
        "bona-fide": [judge([e for e in ev if e is not None]) for ev in bona_evidence]
    }
    meshes: dict[str, list[list[Any]]] = {"bona-fide": bona_meshes}

    stills = still_indices(frames, analyser)
    lfw = lfw_frames(data, args.lfw, args.seed)
    attack_frames: dict[str, list[list[np.ndarray]]] = {
        "print-video-still": [
            list(pad_attacks.printed_photo(frames[i], WINDOW, args.seed + n * 7 + s))
            for n, i in enumerate(stills)
            for s in range(2)
        ],
        "print-halftone": [
            list(pad_attacks.printed_photo(frames[i], WINDOW, args.seed + 1000 + n, halftone=True))
            for n, i in enumerate(stills)
        ],
        "print-lfw": [list(pad_attacks.printed_photo(f, WINDOW, args.seed + 2000 + n)) for n, f in enumerate(lfw)],
        "screen-replay": [
            list(pad_attacks.screen_replay([frames[i] for i in w], args.seed + 3000 + n))
            for n, w in enumerate(windows[:: STEP * 2])
        ],
    }
    for name, sequences in attack_frames.items():
        evidence_and_meshes = [analyser.window(seq) for seq in sequences]
        verdicts[name] = [judge(ev) for ev, _m in evidence_and_meshes]
        meshes[name] = [m for _ev, m in evidence_and_meshes]
    frozen_verdicts, frozen_meshes = [], []
    for still in [frames[i] for i in stills] + lfw:
        evidence, mesh = analyser.evidence(still, 0.0)  # identical frames give identical evidence: analyse once
        if evidence is None:
            frozen_verdicts.append(judge([]))
            frozen_meshes.append([None] * WINDOW)
            continue
        repeated = [dataclasses.replace(evidence, timestamp=t / 10.0) for t in range(WINDOW)]
        frozen_verdicts.append(judge(repeated))
        frozen_meshes.append([mesh] * WINDOW)
    verdicts["frozen-still"], meshes["frozen-still"] = frozen_verdicts, frozen_meshes

    cue_ms: list[float] = []
    for ev in bona_evidence[:10]:
        mark = time.perf_counter()
        judge([e for e in ev if e is not None])
        cue_ms.append(time.perf_counter() - mark)

    figures: dict[str, Any] = {name: summarise(v, name != "bona-fide") for name, v in verdicts.items()}
    attack_all = [v for name, vs in verdicts.items() if name != "bona-fide" for v in vs]
    figures["all-attacks"] = summarise(attack_all, True)
    figures["face_video.bpcer"] = figures["bona-fide"]["bpcer"]["value"]
    figures["synthetic.apcer"] = {name: figures[name]["apcer"]["value"] for name in verdicts if name != "bona-fide"}
    figures["challenge_passed"] = challenge_rates(meshes, config)
    figures["timing"] = {
        "detect_mesh_evidence_per_frame": percentiles_ms([t / 1000 for t in analyser.times_ms]),
        "judge_per_window_of_20": percentiles_ms(cue_ms),
    }
    figures["thresholds"] = {"passive": dataclasses.asdict(PASSIVE), "challenge": dataclasses.asdict(CHALLENGE)}
    figures["material"] = {"video_frames": len(frames), "stills": stills, "lfw_identities": len(lfw)}
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    write_results("pad", figures, markdown(figures, verdicts))
    print(
        table(
            ["set", "windows", "rate"],
            [[n, figures[n]["windows"], fmt(figures[n].get("apcer") or figures[n]["bpcer"])] for n in verdicts],
        )
    )


def markdown(figures: dict[str, Any], verdicts: dict[str, list[LivenessVerdict]]) -> str:
    rows = []
    for name in [*verdicts, "all-attacks"]:
        block = figures[name]
        metric = "BPCER" if name == "bona-fide" else "APCER"
        value = block.get("apcer") or block["bpcer"]
        medians = ", ".join(f"{k} {v:.3f}" for k, v in block["cue_median"].items())
        fired = ", ".join(f"{k} {v}" for k, v in sorted(block["fired"].items())) or "-"
        rows.append([name, block["windows"], metric, fmt(value), block["undecided"], fired, medians])
    challenge_rows = [
        [name, row["sequences"], row["blink"], row["turn-left"], row["turn-right"]]
        for name, row in figures["challenge_passed"].items()
    ]
    timing = figures["timing"]
    return "\n\n".join(
        [
            "Passive presentation-attack detection (kiosk/identity/liveness.py, default `[pad]` settings) on one "
            "real face video (bona fide) and attacks synthesised from it and from LFW3D (bench/pad_attacks.py). "
            "A window is 2 s of frames at the kiosk's ~10 analysed frames a second.",
            table(["set", "windows", "metric", "rate", "undecided", "cue fired (windows)", "cue medians"], rows),
            "**Active challenge** (kiosk/identity/challenge.py; same sequences, 2 s each, counted passed):",
            table(["set", "sequences", "blink passed", "turn-left passed", "turn-right passed"], challenge_rows),
            f"Per analysed frame, detection + Face Mesh + evidence: p50 "
            f"{timing['detect_mesh_evidence_per_frame']['p50_ms']:.1f} ms; the cues over a 20-frame window: p50 "
            f"{timing['judge_per_window_of_20']['p50_ms']:.1f} ms (shared 2-core machine).",
            "**What these figures cover.** Only what can be made here: one subject's 10 s video (a performer "
            "on stage, H.264, 640x360) as bona fide, and *synthetic* attacks rendered from it and from LFW3D "
            "crops. There is no real printed photo, no real screen and no real camera in front of either: the print "
            "and screen models are approximations written for this benchmark, and the cue thresholds were set "
            "with this same video in view (no held-out bona fide data exists here), so BPCER is optimistic and "
            "APCER says only that the cues catch *these* renderings. The windows overlap and come from one "
            "person, so the confidence intervals (Clopper-Pearson, windows treated as independent) are narrower "
            "than the truth. Not covered at all: 3-D masks, high-quality video replay on a good display at a "
            "distance (no moire), deepfake injection into the camera stream, partial attacks (cut-out eyes). "
            "The rigid cue needs the face to move (a still photo held perfectly still is caught by the frozen "
            "cue only when the feed is noise-free, i.e. injected); a person who does not move at all for 2 s "
            "gives 'live' by default, never a false attack.",
            "**Reading the screen-replay row.** A replayed video keeps the person's real non-rigid motion, so only "
            "the screen's own traces can catch it. The gray spectral cue (0.12-0.48 cycles/pixel) mostly misses the "
            "softened moire of this model; the colour moire cue (red minus blue, 0.03-0.2 cycles/pixel: the RGB "
            "sub-pixels beat with the camera's pixels into coarse colour fringes) catches it. Its threshold "
            "(`PASSIVE.chroma_max_peak`) sits between the bona fide windows (chroma_peak up to "
            f"{figures['bona-fide']['cue_range']['chroma_peak'][1]:.3f}) and the screen replays (from "
            f"{figures['screen-replay']['cue_range']['chroma_peak'][0]:.3f}), both from this one video, so the "
            "margin is small and untested on other cameras, faces and compression: a real screen filmed out of "
            "focus or from afar shows little moire. Undecided screen-replay windows (too few frames with a face, "
            "accepted unless `PASSIVE.block_undecided`): "
            f"{figures['screen-replay']['undecided']}. A missed or undecided replay still has to pass the active "
            "challenge at enrollment and admin access, which a recording passes only if it happens to show the "
            "asked action inside the time limit (the challenge table shows how often this video does in 2 s "
            "windows; the kiosk allows `CHALLENGE.timeout_s`; `challenge.md` runs it as the kiosk does). The "
            "performer never blinks clearly enough in this footage for the blink rule (no blink passes, bona fide "
            "included), so on this material only the "
            "head turn is demonstrated. Missed print-video-still windows: on some stills the Face Mesh fit "
            "wobbles while the picture tilts, which reads as shape change (residual up to 0.55).",
        ]
    )


if __name__ == "__main__":
    main()
