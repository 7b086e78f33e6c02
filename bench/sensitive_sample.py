"""The 200 LoCoMo turns hand-labelled for sensitive-note classification: how they were drawn.

`python -m bench.sensitive_sample` prints the sample (sample id, dia id, speaker, text) for labelling; the
labels themselves live in bench/labels/sensitive_locomo200.csv (ids and labels only, no LoCoMo text).

Sampling (seed 13): 100 turns drawn uniformly from the turns a broad screen flags as possibly sensitive,
100 drawn uniformly from all other turns. The screen is a deliberately wide word list (doctor, money,
password, address, ...), separate from the classifier's rules, so positives exist in the sample; the
oversampling means precision/recall are measured on this sample, not on LoCoMo's base rate.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SEED = 13
PER_STRATUM = 100
SCREEN = re.compile(
    r"\b(doctor|hospital|clinic|sick|ill|illness|health|therapy|therapist|surgery|injur\w*|pain|medic\w*|"
    r"diagnos\w*|cancer|pregnan\w*|anxiety|depress\w*|mental|disease|allerg\w*|accident|"
    r"money|bank|loan|debt|salary|paid|pay|rent|mortgage|savings|invest\w*|budget|afford|\$\d+|"
    r"password|pin|account|card|login|"
    r"address|street|apartment|live at|moved to|neighborhood|"
    r"divorce|affair|arrest\w*|court|lawyer|funeral|died|passed away|breakup|broke up)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Turn:
    sample_id: str
    dia_id: str
    speaker: str
    text: str

    @property
    def key(self) -> str:
        return f"{self.sample_id}/{self.dia_id}"


def load_turns(locomo_json: Path) -> list[Turn]:
    samples = json.loads(locomo_json.read_text(encoding="utf-8"))
    turns: list[Turn] = []
    for sample in samples:
        conversation = sample["conversation"]
        sessions = sorted(
            (k for k, v in conversation.items() if re.fullmatch(r"session_\d+", k) and isinstance(v, list)),
            key=lambda k: int(k.split("_")[1]),
        )
        for session in sessions:
            for turn in conversation[session]:
                turns.append(Turn(sample["sample_id"], turn["dia_id"], turn["speaker"], turn["text"]))
    return turns


def draw(turns: list[Turn]) -> list[Turn]:
    """The labelled sample, in a fixed order (screened stratum first, then the rest)."""
    rng = np.random.default_rng(SEED)
    flagged = [t for t in turns if SCREEN.search(t.text)]
    rest = [t for t in turns if not SCREEN.search(t.text)]
    picked = [flagged[i] for i in sorted(rng.choice(len(flagged), PER_STRATUM, replace=False))]
    picked += [rest[i] for i in sorted(rng.choice(len(rest), PER_STRATUM, replace=False))]
    return picked


def main() -> None:
    from kiosk.config import load_config

    data = Path(sys.argv[1]) if len(sys.argv) > 1 else load_config().paths.eval_data_dir / "locomo" / "locomo10.json"
    turns = load_turns(data)
    for index, turn in enumerate(draw(turns)):
        print(f"{index}\t{turn.key}\t{turn.speaker}\t{turn.text}")


if __name__ == "__main__":
    main()
