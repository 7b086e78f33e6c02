"""How many owners the biometric gate lets in, store by store: the LoCoMo protocol's identity draws, no LLM.

.venv/bin/python -m bench.bench_store_gate [--stores 200] [--users 10] [--modalities face,palm]
    [--operating-points tau_d,strict] [--run LABEL=RESULTS.json ...] [--face-embedder EMBEDDER=CALIBRATION ...]

`kiosk eval locomo` binds each of its 10 users to one benchmark identity (one image the gallery, another the
Owner probe; kiosk.eval.assignments.bind_identities, seeded by --seed). An owner whose probe the gate does not
let in is answered without memory, so the Owner figure of a run depends on how many of its 10 owners the gate
verifies, which depends on the draw. This draws the protocol's stores for seeds 0 .. N-1 exactly as the eval
does (the same capture gates, embeddings, calibrated threshold and gate policy, kiosk.identity.gate.decide) and
counts per store: owners verified, owner probes matched to another user, Non-owner probes matched to their
target. `--run` adds `kiosk eval locomo` results (e.g. the same questions under other seeds) as a second table:
owners verified and the Owner / Non-owner F1 each draw gave.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_face_models import with_embedder
from bench.common import table, write_results
from kiosk.calibration.active import active_calibration
from kiosk.calibration.embed import load_embedder
from kiosk.config import KioskConfig, load_config
from kiosk.eval.assignments import benchmark_dir, bind_identities, non_owner_of, read_identity_images
from kiosk.eval.models import calibrated_threshold, capture_refusal, embed_benchmark_image
from kiosk.identity.gate import GateRule, decide


def store_outcomes(gallery: np.ndarray, probes: np.ndarray, threshold: float, margin: float) -> dict[str, int]:
    """One store's gate outcomes: `gallery` and `probes` are (users, d) unit rows, row i belonging to user i."""
    scores = probes @ gallery.T
    users = len(gallery)
    let_in = [
        decide(dict(enumerate(row.tolist())), GateRule(threshold, "best-match", margin)).matched_owner_ids
        for row in scores
    ]
    owners_verified = sum(matched == (user,) for user, matched in enumerate(let_in))
    owners_to_another = sum(bool(matched) and matched != (user,) for user, matched in enumerate(let_in))
    # the eval's Non-owner probe for user u is user u+1's Owner probe (kiosk.eval.assignments.non_owner_of)
    non_owners_in = sum(user in let_in[(user + 1) % users] for user in range(users))
    return {"owners_verified": owners_verified, "owners_to_another": owners_to_another, "non_owners_in": non_owners_in}


def draw_stores(
    config: KioskConfig, modality: str, stores: int, users: int
) -> tuple[list[list[Any]], dict[str, np.ndarray], Any]:
    data_dir = config.paths.eval_data_dir
    images = read_identity_images(data_dir, modality)
    root = benchmark_dir(data_dir, modality)
    embedder = load_embedder(config, modality)
    refusal = capture_refusal(embedder, modality, root)
    names = [f"user-{index}" for index in range(users)]
    draws = [bind_identities(names, images, seed, modality, refusal=refusal) for seed in range(stores)]
    vectors: dict[str, np.ndarray] = {}
    for bindings in draws:
        for binding in bindings:
            for path in (binding.gallery_image, binding.probe_image):
                if path not in vectors:
                    vector = embed_benchmark_image(embedder, modality, root / path)
                    vectors[path] = vector / np.linalg.norm(vector)
    assert non_owner_of(draws[0], 0) is draws[0][1]  # the derangement store_outcomes assumes
    return draws, vectors, embedder


def with_face_embedder(config: KioskConfig, entry: str) -> tuple[KioskConfig, str]:
    name, _, calibration = entry.partition("=")
    variant = with_embedder(config, name)
    gate = config.gate.model_copy(update={"face_calibration": calibration or config.gate.face_calibration})
    return variant.model_copy(update={"gate": gate}), name


def summarise(outcomes: list[dict[str, int]], users: int) -> dict[str, Any]:
    verified = np.array([o["owners_verified"] for o in outcomes])
    counts = Counter(verified.tolist())
    return {
        "owners_verified_mean": float(verified.mean()),
        "owners_verified_fraction": float(verified.mean() / users),
        "stores_all_verified_fraction": float(np.mean(verified == users)),
        "stores_by_owners_verified": {str(k): counts[k] for k in sorted(counts, reverse=True)},
        "owner_probes_to_another_user": int(sum(o["owners_to_another"] for o in outcomes)),
        "non_owner_probes_let_in": int(sum(o["non_owners_in"] for o in outcomes)),
        "probes": len(outcomes) * users,
    }


def run_rows(runs: list[str]) -> tuple[list[list[Any]], dict[str, Any]]:
    rows, figures = [], {}
    for spec in runs:
        label, _, path = spec.partition("=")
        results = json.loads(Path(path).read_text(encoding="utf-8"))
        gate, conditions = results["gate"], results["conditions"]
        owner = conditions["owner"]["scores"]["average"]["f1"]
        non_owner = conditions["non_owner"]["scores"]["average"]["f1"]
        rows.append(
            [
                label,
                results["modality"],
                results["seed"],
                results["counts"]["questions"],
                f"{gate['owner_verified']}/{gate['users']}",
                f"{owner:.2f}",
                f"{non_owner:.2f}",
                f"{owner - non_owner:.2f}",
                f"`{results['command']}`",
            ]
        )
        key = f"locomo.{results['modality']}.seed{results['seed']}"
        figures[f"{key}.owners_verified"] = gate["owner_verified"]
        figures[f"{key}.owner.f1"] = owner
        figures[f"{key}.gap.f1"] = round(owner - non_owner, 2)
    return rows, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=200, help="identity draws (seeds 0 .. N-1)")
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--modalities", default="face,palm")
    parser.add_argument("--operating-points", default="tau_d,strict")
    parser.add_argument("--run", action="append", default=[], help="LABEL=kiosk eval locomo results JSON")
    parser.add_argument("--name", default="store_gate")
    parser.add_argument(
        "--face-embedder",
        dest="face_embedders",
        action="append",
        default=[],
        help="EMBEDDER=CALIBRATION (face.embedder, gate.face_calibration); repeat to compare face models",
    )
    args = parser.parse_args()

    config = load_config()
    margin = config.gate.best_match_margin
    figures: dict[str, Any] = {}
    rows = []
    for modality in args.modalities.split(","):
        variants = [(config, "")]
        if modality == "face" and args.face_embedders:
            variants = [with_face_embedder(config, entry) for entry in args.face_embedders]
        for variant, embedder_name in variants:
            draws, vectors, embedder = draw_stores(variant, modality, args.stores, args.users)
            calibration = active_calibration(variant, modality, embedder.model_sha256)
            label = f"{modality} ({calibration.benchmark})" + (f", {embedder_name}" if embedder_name else "")
            prefix = f"{calibration.benchmark}.store{args.users}." + (f"{embedder_name}." if embedder_name else "")
            for point in args.operating_points.split(","):
                threshold, rule = calibrated_threshold(calibration, point)
                outcomes = []
                for bindings in draws:
                    gallery = np.stack([vectors[b.gallery_image] for b in bindings])
                    probes = np.stack([vectors[b.probe_image] for b in bindings])
                    outcomes.append(store_outcomes(gallery, probes, threshold, margin))
                summary = summarise(outcomes, args.users)
                for key, value in summary.items():
                    figures[f"{prefix}{rule}.{key}"] = value
                figures[f"{prefix}{rule}.threshold"] = threshold
                rows.append(
                    [
                        label,
                        f"{rule} {threshold:.4f}",
                        f"{summary['owners_verified_mean']:.2f}",
                        f"{summary['stores_all_verified_fraction']:.3f}",
                        ", ".join(f"{k}: {v}" for k, v in summary["stores_by_owners_verified"].items()),
                        f"{summary['owner_probes_to_another_user']}/{summary['probes']}",
                        f"{summary['non_owner_probes_let_in']}/{summary['probes']}",
                    ]
                )
    body = [
        f"{args.stores} stores of {args.users} users, identities bound by seeds 0-{args.stores - 1} as `kiosk eval "
        f"locomo` binds them (one gallery image, one Owner probe image per identity; the capture gates replace a "
        f"refused image); gate `best-match`, margin {margin}.",
        "",
        table(
            [
                "modality",
                "operating point (τ)",
                "owners verified per store (mean)",
                "stores with every owner verified",
                "stores by owners verified",
                "owner probes let in as another user",
                "Non-owner probes let in to their target",
            ],
            rows,
        ),
    ]
    if args.run:
        run_table, run_figures = run_rows(args.run)
        figures.update(run_figures)
        body += [
            "",
            "### The LoCoMo answers of some of these draws",
            "",
            table(
                [
                    "run",
                    "modality",
                    "seed",
                    "questions",
                    "owners verified",
                    "Owner F1",
                    "Non-owner F1",
                    "Gap",
                    "command",
                ],
                run_table,
            ),
        ]
    write_results(args.name, figures, "\n".join(body))


if __name__ == "__main__":
    main()
