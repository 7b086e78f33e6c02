"""The whole LoCoMo protocol on a small slice with the real models, and its refusals of bad input.

Slice: the first 2 conversations (2 users in one store), their first session only, 4 questions, all five
conditions, real MiniLM text encoder, real face (FaceNet) / palm (CompCode) embedders with the shipped
calibration, and the smallest real GGUF (SmolLM2-135M). The store and answer caches live in a
session-wide temp dir, so the second modality reuses the store built for the first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kiosk.config import KioskConfig
from kiosk.eval.protocol import CONDITIONS, EvalOptions, run_locomo
from kiosk.llm.answer_form import concise_answer, restates_question
from kiosk.llm.lists import asks_for_several
from kiosk.llm.prompts import UNKNOWN_ANSWER

pytestmark = [pytest.mark.real_models, pytest.mark.real_data, pytest.mark.llm, pytest.mark.slow]


@pytest.fixture(scope="module")
def eval_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("eval-cache")


def _slice_options(modality: str, results_dir: Path, cache_dir: Path) -> EvalOptions:
    return EvalOptions(
        modality=modality,  # type: ignore[arg-type]
        conversations=2,
        sessions=1,
        max_questions=4,
        results_dir=results_dir,
        cache_dir=cache_dir,
        command="pytest slice",
    )


@pytest.mark.parametrize("modality", ["palm", "face"])
def test_small_slice_end_to_end(
    config: KioskConfig, data_dir: Path, tmp_path: Path, eval_cache: Path, modality: str
) -> None:
    config.paths.eval_data_dir = data_dir
    config.llm.model = "smollm2-135m-instruct"
    config.llm.threads = 1
    results_dir = tmp_path / "results"
    results = run_locomo(config, _slice_options(modality, results_dir, eval_cache))

    json_path = results_dir / f"locomo_{modality}_smollm2-135m-instruct.json"
    assert sorted(p.name for p in results_dir.iterdir()) == [json_path.name, json_path.with_suffix(".md").name]
    written: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
    assert written["counts"]["users"] == 2 and written["counts"]["questions"] == 4
    assert written["counts"]["notes"] == 18 + 28  # one note per turn of session 1 of conv-26 and conv-30
    assert set(written["conditions"]) == set(CONDITIONS)
    assert written["gate"]["calibration"].startswith(modality)
    assert 0 < written["gate"]["threshold"] < 1
    assert len(written["assignments"]) == 2
    for binding in written["assignments"]:
        assert binding["gallery_image"] != binding["probe_image"]

    # Gating: a non-owner probe only reaches the target's notes through a biometric false match.
    assert written["leaks"]["notes"] == written["leaks"]["from_false_matches"]
    for row in written["gate"]["per_user"]:
        if not row["non_owner_false_match"]:
            assert row["user"] not in row["non_owner_matched"]
    for answer in written["answers"]:
        user = answer["key"].split("#")[0]
        assert answer["no_memory"]["refs"] == []
        assert all(ref.startswith(f"{user}:") for ref in answer["gold_evidence"]["refs"])
        if user in answer["owner"]["matched"]:
            assert all(ref.startswith(f"{user}:") for ref in answer["owner"]["refs"])
        if user not in answer["non_owner"]["matched"]:
            assert not any(ref.startswith(f"{user}:") for ref in answer["non_owner"]["refs"])
        for condition in CONDITIONS:
            assert 0.0 <= answer[condition]["f1"] <= 1.0
            # the reply as the LLM gave it is kept only when the cut-restatement step cut the restated question from
            # it, and the first answer only when it restated the question and was replaced: answered again from the
            # notes, or "I don't know" without them (steps reask-restated, unknown-restated-without-notes), and the
            # answer before a one-thing answer was completed to a list only when the question asks for several
            # things and notes were given (step complete-lists)
            # ... and the answer before it was withdrawn as one the notes do not give (step unknown-ungrounded)
            listed = answer[condition].get("ungrounded_answer", answer[condition]["prediction"])
            if "ungrounded_answer" in answer[condition]:
                assert answer[condition]["prediction"] == UNKNOWN_ANSWER and answer[condition]["refs"]
            unlisted = answer[condition].get("unlisted_answer", listed)
            if "unlisted_answer" in answer[condition]:
                assert asks_for_several(answer["question"]) and answer[condition]["refs"]
                assert listed.startswith(unlisted.rstrip(" .!") + ", ")
            first = answer[condition].get("first_answer", unlisted)
            reply = answer[condition].get("reply", first)
            assert first == concise_answer(answer["question"], reply)
            if "first_answer" in answer[condition]:
                assert restates_question(answer["question"], first)
                shown = answer[condition]["prediction"]
                if answer[condition]["refs"]:
                    assert not restates_question(answer["question"], shown)
                else:
                    assert shown == UNKNOWN_ANSWER
    for condition in CONDITIONS:
        before = written["conditions"][condition]["before_concise"]
        assert before["changed"] == sum(1 for answer in written["answers"] if "reply" in answer[condition])
        assert before["better"] + before["worse"] <= before["changed"]
        again = written["conditions"][condition]["before_restated"]
        assert again["changed"] == sum(1 for answer in written["answers"] if "first_answer" in answer[condition])
        # the default profile completes no lists; it only strikes errands done, which these questions are not
        assert written["conditions"][condition]["before_lists"]["changed"] == 0
        assert not any("unlisted_answer" in answer[condition] for answer in written["answers"])
    # Gold evidence holds every evidence turn by construction.
    assert written["conditions"]["gold_evidence"]["evidence_recall_at_k"] == 1.0
    markdown = json_path.with_suffix(".md").read_text(encoding="utf-8")
    assert "| Owner |" in markdown and "| Non-owner |" in markdown and "Ungated A-Mem" in markdown
    assert results["store"]["key"] == written["store"]["key"]


def test_another_k_gives_each_prompt_that_many_notes_and_reports_recall_at_it(
    config: KioskConfig, data_dir: Path, tmp_path: Path, eval_cache: Path
) -> None:
    """Retrieval only (no LLM): --k 3 retrieves at most 3 owner notes per question, all of them among the
    protocol's 10, and names its recall figure by its K."""
    config.paths.eval_data_dir = data_dir

    def run(k: int) -> dict[str, Any]:
        options = _slice_options("palm", tmp_path / f"results-k{k}", eval_cache)
        options.max_questions, options.answer, options.k = 8, False, k
        options.conditions = ("owner",)
        return run_locomo(config, options)

    protocol, fewer = run(10), run(3)
    assert protocol["k"] == 10 and fewer["k"] == 3
    assert any(len(row["owner"]["refs"]) > 3 for row in protocol["answers"]), "no question had over 3 notes"
    for ten, three in zip(protocol["answers"], fewer["answers"], strict=True):
        assert len(three["owner"]["refs"]) <= 3
        assert set(three["owner"]["refs"]) <= set(ten["owner"]["refs"])
    assert "locomo.palm.owner.evidence_recall_at_3.fraction" in fewer["metrics"]


def _kiosk(args: list[str], data_dir: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KIOSK_DATA": str(data_dir), "KIOSK_HOME": str(home)}
    env.pop("KIOSK_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "kiosk", "eval", "locomo", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _assert_refused(result: subprocess.CompletedProcess[str], expected: str, results_dir: Path) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert expected in result.stderr
    assert not results_dir.exists() or not any(results_dir.iterdir())


def test_missing_data_dir_is_one_clear_error(tmp_path: Path) -> None:
    results_dir = tmp_path / "results"
    result = _kiosk(["--modality", "face", "--output", str(results_dir)], tmp_path / "no-data", tmp_path / "home")
    _assert_refused(result, "does not exist", results_dir)


def test_conversation_missing_a_field_names_it(tmp_path: Path, data_dir: Path) -> None:
    broken = tmp_path / "data"
    (broken / "locomo").mkdir(parents=True)
    samples = json.loads((data_dir / "locomo" / "locomo10.json").read_bytes())[:2]
    del samples[1]["conversation"]["speaker_b"]
    (broken / "locomo" / "locomo10.json").write_text(json.dumps(samples), encoding="utf-8")
    (broken / "lfw3d_frontalized").symlink_to(data_dir / "lfw3d_frontalized")
    results_dir = tmp_path / "results"
    result = _kiosk(["--modality", "face", "--output", str(results_dir)], broken, tmp_path / "home")
    _assert_refused(result, "conversation conv-30: missing field 'speaker_b'", results_dir)


def test_identity_with_one_image_is_refused(tmp_path: Path, data_dir: Path) -> None:
    results_dir = tmp_path / "results"
    args = ["--modality", "face", "--conversations", "2", "--identities", "George_W_Bush,AJ_Cook"]
    result = _kiosk([*args, "--output", str(results_dir)], data_dir, tmp_path / "home")
    _assert_refused(result, "identity 'AJ_Cook' has only one image", results_dir)
