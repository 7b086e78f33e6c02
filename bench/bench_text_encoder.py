"""Text encoder throughput (sentences/s) at batch 1 and 32, OpenVINO vs ONNX Runtime, in one run.

.venv/bin/python bench/bench_text_encoder.py [--fp32 PATH_TO_FP32_ONNX]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.common import table, write_results
from kiosk.config import load_config
from kiosk.models import ModelStore
from kiosk.runtime import load_encoder
from kiosk.text import TextEncoder
from kiosk.text.encoder import TOKENIZER, text_model_path


def sentences_from_locomo(data_dir: Path, count: int) -> list[str]:
    conversations = json.loads((data_dir / "locomo" / "locomo10.json").read_text())
    turns = [
        turn["text"]
        for conversation in conversations
        for key, session in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    return turns[:count]


def throughput(encoder: TextEncoder, sentences: list[str], batch: int, rounds: int = 3) -> float:
    encoder.batch_size = batch
    encoder.encode(sentences[: batch * 2])  # warm-up
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        encoder.encode(sentences)
        rates.append(len(sentences) / (time.perf_counter() - start))
    return sorted(rates)[len(rates) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=256, help="LoCoMo turns encoded per measurement")
    args = parser.parse_args()
    config = load_config()
    models = ModelStore(config.paths.models)
    tokenizer = models.ensure(TOKENIZER)
    variants = {weights: text_model_path(config, models, weights) for weights in ("fp32", "int8")}
    sentences = sentences_from_locomo(config.paths.eval_data_dir, args.sentences)
    figures: dict[str, float] = {}
    rows = []
    for precision, path in variants.items():
        for backend in ("openvino", "onnxruntime"):
            encoder = TextEncoder(load_encoder(path, backend=backend), tokenizer)
            for batch in (1, 32):
                rate = throughput(encoder, sentences if batch > 1 else sentences[:64], batch)
                key = f"locomo_turns.{backend}.{precision}.batch{batch}.sentences_per_s"
                figures[key] = rate
                rows.append([backend, precision, batch, round(rate, 1)])
    for precision in variants:
        for batch in (1, 32):
            ratio = (
                figures[f"locomo_turns.openvino.{precision}.batch{batch}.sentences_per_s"]
                / figures[f"locomo_turns.onnxruntime.{precision}.batch{batch}.sentences_per_s"]
            )
            figures[f"locomo_turns.{precision}.batch{batch}.openvino_over_onnxruntime"] = ratio
    body = (
        f"all-MiniLM-L6-v2 on {len(sentences)} LoCoMo dialogue turns (median of 3 passes; batch 1 on the first 64).\n\n"
        + table(["backend", "weights", "batch", "sentences/s"], rows)
        + "\n\nRatios OpenVINO / ONNX Runtime: "
        + ", ".join(f"{k.split('.', 1)[1]} = {v:.2f}" for k, v in figures.items() if k.endswith("onnxruntime"))
        + "\n"
    )
    write_results("text_encoder", figures, body)
    print(body)


if __name__ == "__main__":
    main()
