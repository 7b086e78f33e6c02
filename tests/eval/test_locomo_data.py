"""LoCoMo loading, validation, the fixed question subset, and identity bindings."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kiosk.config import KioskConfig
from kiosk.errors import DataError
from kiosk.eval.assignments import benchmark_dir, bind_identities, non_owner_of, read_identity_images
from kiosk.eval.locomo import (
    load_conversations,
    locomo_path,
    parse_evidence,
    select_questions,
)
from kiosk.eval.models import capture_refusal, embed_benchmark_image, load_embedder


def _sample(sample_id: str = "conv-x") -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog called Rex."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a dog on grass"},
            ],
            "session_2_date_time": "10:04 am on 9 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Rex learned to sit."}],
            "session_3_date_time": "10:04 am on 9 July, 2023",  # a date with no session, as in conv-26
        },
        "qa": [
            {"question": "What is Ann's dog called?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
            {"question": "When did Rex learn to sit?", "answer": 2023, "evidence": ["D2:1"], "category": 2},
            {"question": "Trick?", "adversarial_answer": "x", "evidence": [], "category": 5},
            {"question": "Pets?", "answer": "dog", "evidence": ["D1:1; D2:1"], "category": 1},
        ],
    }


def _write(tmp_path: Path, samples: list[dict[str, Any]]) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def test_loads_sessions_dates_and_evaluated_questions(tmp_path: Path) -> None:
    (conversation,) = load_conversations(_write(tmp_path, [_sample()]))
    assert [s.index for s in conversation.sessions] == [1, 2]
    assert conversation.sessions[0].timestamp.isoformat() == "2023-05-08T13:56:00+00:00"
    assert conversation.turns[1].image_caption == "a dog on grass"
    assert conversation.session_dates() == {1: "1:56 pm on 8 May, 2023", 2: "10:04 am on 9 June, 2023"}
    assert conversation.asked_at.isoformat() == "2023-06-10T10:04:00+00:00"  # a day after the last session
    # category 5 is dropped; an integer answer becomes text; packed evidence is split
    assert [(q.category, q.answer) for q in conversation.questions] == [(4, "Rex"), (2, "2023"), (1, "dog")]
    assert conversation.questions[2].evidence == ("D1:1", "D2:1")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: s.pop("qa"), "conversation conv-x: missing field 'qa'"),
        (lambda s: s["conversation"].pop("speaker_b"), "conversation conv-x: missing field 'speaker_b'"),
        (lambda s: s["conversation"].pop("session_2_date_time"), "missing field 'session_2_date_time'"),
        (lambda s: s["conversation"]["session_1"][0].pop("dia_id"), "session_1[0]: missing field 'dia_id'"),
        (lambda s: s["qa"][0].pop("answer"), "conversation conv-x qa[0]: missing field 'answer'"),
        (lambda s: s.pop("sample_id"), "conversation #0: missing field 'sample_id'"),
        (lambda s: s["conversation"].update(session_1_date_time="yesterday"), "session date 'yesterday'"),
    ],
)
def test_missing_fields_name_the_conversation_and_field(tmp_path: Path, mutate: Any, expected: str) -> None:
    sample = copy.deepcopy(_sample())
    mutate(sample)
    with pytest.raises(DataError) as info:
        load_conversations(_write(tmp_path, [sample]))
    assert expected in info.value.message


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        locomo_path(tmp_path / "nowhere")
    with pytest.raises(DataError, match=r"locomo10\.json is missing"):
        locomo_path(tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        load_conversations(broken)
    with pytest.raises(DataError, match="appears twice"):
        load_conversations(_write(tmp_path, [_sample(), _sample()]))


def test_parse_evidence_repairs_locomo_quirks() -> None:
    assert parse_evidence(["D8:6; D9:17", "D", "D:11:26", "D9:1 D4:4"]) == ("D8:6", "D9:17", "D11:26", "D9:1", "D4:4")


@pytest.mark.real_data
def test_subset_is_stratified_fixed_and_seeded(data_dir: Path) -> None:
    conversations = load_conversations(locomo_path(data_dir))
    first = select_questions(conversations, 0.1, seed=0)
    assert len(first) == 144  # round(0.1 n) per conversation x category: 28 multi-hop, 32 temporal, 84 single-hop
    assert sorted({q.category for q in first}) == [1, 2, 4]
    assert [q.key for q in select_questions(conversations, 0.1, seed=0)] == [q.key for q in first]
    assert [q.key for q in select_questions(conversations, 0.1, seed=1)] != [q.key for q in first]
    # every conversation contributes to every category it has
    assert {(q.conversation_id, q.category) for q in first} == {
        (c.sample_id, q.category) for c in conversations for q in c.questions
    }
    with pytest.raises(DataError):
        select_questions(conversations, 0.0, seed=0)


@pytest.mark.real_data
def test_held_out_set_never_shares_a_question_with_the_sample(data_dir: Path) -> None:
    conversations = load_conversations(locomo_path(data_dir))
    sample = {q.key for q in select_questions(conversations, 0.1, seed=0)}
    held_out = select_questions(conversations, 0.1, seed=1, held_out_from=0)
    assert len(held_out) == len(sample)
    assert not sample & {q.key for q in held_out}
    assert [q.key for q in select_questions(conversations, 0.1, seed=1, held_out_from=0)] == [q.key for q in held_out]
    every_held_out = {q.key for q in select_questions(conversations, 1.0, seed=0, held_out_from=0)}
    assert len(every_held_out) == len(select_questions(conversations, 1.0, seed=0)) - len(sample)
    assert not sample & every_held_out and {q.key for q in held_out} <= every_held_out


@pytest.mark.real_data
@pytest.mark.parametrize("modality", ["face", "palm"])
def test_bindings_use_two_distinct_images_of_one_identity(data_dir: Path, modality: str) -> None:
    images = read_identity_images(data_dir, modality)
    users = [f"conv-{i}" for i in range(10)]
    bindings = bind_identities(users, images, seed=3, modality=modality)
    assert bindings == bind_identities(users, images, seed=3, modality=modality)
    assert len({b.identity for b in bindings}) == 10
    for binding in bindings:
        assert binding.gallery_image != binding.probe_image
        assert {binding.gallery_image, binding.probe_image} <= set(images[binding.identity])
        assert (
            data_dir / ("lfw3d_frontalized" if modality == "face" else "palm_tongji_palmnet") / binding.probe_image
        ).is_file()
    assert non_owner_of(bindings, 9) == bindings[0]


def test_an_image_the_capture_gates_refuse_is_replaced_and_the_other_bindings_stay() -> None:
    images = {f"id{i}": [f"id{i}/{n}.png" for n in range(5)] for i in range(6)}
    users = [f"u{i}" for i in range(4)]
    plain = bind_identities(users, images, seed=1, modality="palm")
    bad = plain[1].gallery_image
    gated = bind_identities(
        users, images, seed=1, modality="palm", refusal=lambda path: "slipped off the palm" if path == bad else None
    )
    assert [b for i, b in enumerate(gated) if i != 1] == [b for i, b in enumerate(plain) if i != 1]
    changed = gated[1]
    assert changed.identity == plain[1].identity and changed.probe_image == plain[1].probe_image
    assert changed.gallery_image not in (bad, changed.probe_image)
    assert changed.gallery_image in images[changed.identity]
    assert changed.refused_images == (f"{bad}: slipped off the palm",)
    assert gated == bind_identities(
        users, images, seed=1, modality="palm", refusal=lambda path: "slipped off the palm" if path == bad else None
    )


@pytest.mark.real_data
def test_a_failed_tongji_crop_never_becomes_a_gallery(data_dir: Path, base_config: KioskConfig) -> None:
    """Seed 8 draws 0027_0002 (the hand's edge on a dark background) as conv-26's gallery: the palm gates refuse
    it, so another sample of palm 0027 takes its place and that owner is verified like the others."""
    embedder = load_embedder(base_config, "palm")
    root = benchmark_dir(data_dir, "palm")
    users = [f"conv-{i}" for i in range(10)]
    images = read_identity_images(data_dir, "palm")
    plain = bind_identities(users, images, seed=8, modality="palm")
    assert plain[0].gallery_image == "images/0027_0002.bmp"
    gated = bind_identities(users, images, seed=8, modality="palm", refusal=capture_refusal(embedder, "palm", root))
    assert gated[1:] == plain[1:]
    assert gated[0].gallery_image != "images/0027_0002.bmp" and gated[0].probe_image == plain[0].probe_image
    assert gated[0].refused_images[0].startswith("images/0027_0002.bmp: palm does not fill the image")
    vectors = [
        embed_benchmark_image(embedder, "palm", root / path) for path in (gated[0].gallery_image, gated[0].probe_image)
    ]
    assert float(vectors[0] @ vectors[1]) > 0.5


def test_an_identity_without_two_accepted_images_is_a_clear_error() -> None:
    images = {"Pair": ["a.png", "b.png"], "Other": ["c.png", "d.png"]}
    with pytest.raises(DataError, match="'Pair' has fewer than two images the capture gates accept"):
        bind_identities(
            ["u1", "u2"],
            images,
            seed=0,
            modality="palm",
            identities=["Pair", "Other"],
            refusal=lambda path: "blurred" if path == "a.png" else None,
        )


def test_identity_with_one_image_is_refused() -> None:
    images = {"Solo_Person": ["images/Solo_Person/Solo_Person_0001.jpg"], "Pair": ["a.jpg", "b.jpg"]}
    with pytest.raises(DataError, match="'Solo_Person' has only one image"):
        bind_identities(["u1", "u2"], images, seed=0, modality="face", identities=["Pair", "Solo_Person"])
    with pytest.raises(DataError, match="only 1 face identities have two or more images"):
        bind_identities(["u1", "u2"], images, seed=0, modality="face")
    with pytest.raises(DataError, match="not in the face manifest"):
        bind_identities(["u1", "u2"], images, seed=0, modality="face", identities=["Pair", "Nobody"])
