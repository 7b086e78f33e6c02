"""One TOML configuration with documented defaults, unknown keys rejected, and env overrides.

Resolution order: defaults < TOML file (``--config``, ``KIOSK_CONFIG`` or ``<config dir>/kiosk.toml``)
< environment (``KIOSK_<SECTION>__<FIELD>=value``, the value parsed as TOML when it can be).
Shortcuts: ``KIOSK_HOME`` sets ``paths.data_dir``; ``KIOSK_DATA`` sets ``paths.eval_data_dir``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kiosk.errors import ConfigError

APP_NAME = "bio-memory-kiosk"
PROJECT_ROOT = Path(__file__).resolve().parent.parent


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class PathsConfig(Section):
    data_dir: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir(APP_NAME)),
        description="Per-user data directory holding models, the memory DB and logs.",
    )
    models_dir: Path | None = Field(
        default=None, description="Where pulled and converted models live; default <data_dir>/models."
    )
    db_path: Path | None = Field(default=None, description="Memory database file; default <data_dir>/memory.db.")
    calibration_dir: Path = Field(
        default=PROJECT_ROOT / "calibration",
        description="Directory of calibration JSON files (the shipped ones by default).",
    )
    eval_data_dir: Path = Field(
        default=PROJECT_ROOT.parent / "shared" / "data",
        description="Evaluation data (LoCoMo, LFW, Tongji, face video); env KIOSK_DATA overrides.",
    )
    log_dir: Path | None = Field(default=None, description="Log directory; default <data_dir>/logs.")

    @property
    def models(self) -> Path:
        return self.models_dir or self.data_dir / "models"

    @property
    def db(self) -> Path:
        return self.db_path or self.data_dir / "memory.db"

    @property
    def logs(self) -> Path:
        return self.log_dir or self.data_dir / "logs"


class RuntimeConfig(Section):
    backend: Literal["openvino", "onnxruntime"] = Field(
        default="openvino",
        description="Inference runtime for encoders; OpenVINO measured faster here (bench/results/text_encoder.md).",
    )
    threads: int = Field(default=0, ge=0, description="Inference threads per encoder; 0 lets the runtime choose.")
    openvino_precision: Literal["auto", "f32", "bf16"] = Field(
        default="auto", description="OpenVINO inference precision hint; auto uses bf16 where the CPU has it."
    )


class TextConfig(Section):
    model: str = Field(default="minilm-l6-int8", description="Manifest name of the sentence encoder graph (ONNX).")
    weights: Literal["fp32", "int8"] = Field(
        default="fp32",
        description="fp32 swaps the original weights into the graph at preparation (parity with "
        "sentence-transformers >= 0.9999 cosine); int8 uses the quantised graph as shipped (up to 0.002 off).",
    )
    fp32_weights: str = Field(
        default="minilm-l6-safetensors", description="Manifest name of the fp32 safetensors weights."
    )
    tokenizer: str = Field(default="minilm-l6-tokenizer", description="Manifest name of its tokenizer.json.")
    max_tokens: int = Field(default=256, ge=8, le=512, description="Truncation length in word pieces.")
    batch_size: int = Field(default=32, ge=1, description="Sentences per inference batch.")


class CaptureConfig(Section):
    face_source: str = Field(
        default="0",
        description="Face camera: an index ('0'), a device path, a video file, an image folder or a URL.",
    )
    palm_source: str | None = Field(
        default=None, description="Palm scanner: same forms as face_source; None when the terminal has none."
    )
    loop_video: bool = Field(default=True, description="Loop a video file source instead of ending.")
    reconnect_max_backoff_s: float = Field(
        default=5.0, gt=0, description="Longest wait between reconnect attempts to a lost camera."
    )


class FaceConfig(Section):
    detector: Literal["mediapipe", "mtcnn"] = Field(
        default="mediapipe", description="Face detector: MediaPipe BlazeFace short-range or MTCNN (ONNX)."
    )
    embedder: Literal["facenet+sface", "facenet", "sface", "arcface-onnx"] = Field(
        default="facenet+sface",
        description="Face embedding model: FaceNet and SFace fused into one template (LFW3D EER 0.050 -> 0.039, "
        "bench/results/face_models.md), FaceNet alone (OpenVINO IR), SFace alone, or a deployer's ArcFace ONNX. "
        "Each needs its own calibration (gate.face_calibration).",
    )
    fusion_facenet_weight: float = Field(
        default=0.5,
        gt=0,
        lt=1,
        description="facenet+sface: FaceNet's share of the fused cosine (SFace gets the rest); equal by default.",
    )
    arcface_model_path: Path | None = Field(
        default=None, description="Path of an ArcFace-style ONNX (112x112 input) when embedder='arcface-onnx'."
    )
    min_face_px: int = Field(default=60, ge=8, description="Smallest face side (pixels) accepted by quality gates.")
    min_sharpness: float = Field(
        default=25.0, ge=0, description="Minimum Laplacian variance of the inner face resized to 96 px (bench_face)."
    )
    max_turn: float = Field(
        default=0.5, ge=0, le=1, description="Largest head turn: nose offset from the eyes' midline (0 frontal)."
    )
    min_brightness: float = Field(default=30.0, ge=0, le=255, description="Minimum mean gray level of the face.")
    min_detection_score: float = Field(
        default=0.6, ge=0, le=1, description="Detector confidence below which a face is ignored."
    )
    detect_max_side: int = Field(
        default=960,
        ge=128,
        description="Frames are downscaled to this longest side for detection (crops stay full-res).",
    )
    crop_margin: float = Field(
        default=0.7,
        ge=0,
        le=2,
        description="Margin added to the landmark face box for FaceNet, in eye-to-mouth distances (~MTCNN box+32px).",
    )
    precropped_margin: float = Field(
        default=0.36,
        ge=0,
        le=1,
        description="Tight pre-cropped faces (LFW crops) get this fraction of their height added by reflection.",
    )
    precropped_margin_x: float | None = Field(
        default=0.1, ge=0, le=1, description="Same for the width of pre-cropped faces; None = precropped_margin."
    )
    flip_augment: bool = Field(
        default=True, description="Embed the face and its mirror image and sum both (test-time augmentation)."
    )
    fuse_frames: int = Field(default=5, ge=1, description="Recent good frames fused into the query probe.")
    fuse_max_age_s: float = Field(default=1.0, gt=0, description="Oldest frame age (s) allowed in the probe.")
    enroll_min_samples: int = Field(
        default=3, ge=1, description="Usable samples (after outlier rejection) an enrollment needs."
    )
    enroll_outlier_min_cosine: float = Field(
        default=0.5,
        ge=-1,
        le=1,
        description="Enrollment samples whose cosine to the samples' medoid is below this are rejected.",
    )
    enroll_max_templates: int = Field(
        default=10, ge=1, description="Templates kept per user and modality (evenly spread over the samples)."
    )


class PadConfig(Section):
    """Presentation-attack detection for the face path (kiosk/identity/liveness.py, challenge.py)."""

    enabled: bool = Field(
        default=True, description="Run the passive liveness cues at query time; an attack verdict hides memory."
    )
    mesh: bool = Field(
        default=True, description="Run the Face Mesh landmark model on analysed frames (needed by the rigid cue)."
    )
    window_s: float = Field(default=2.0, gt=0, description="Seconds of recent frames the passive cues look at.")
    min_frames: int = Field(
        default=6, ge=2, description="Frames with a face needed in the window before the passive cues decide."
    )
    frozen_max_diff: float = Field(
        default=0.35,
        ge=0,
        description="Median gray-level difference between consecutive face regions below which the feed is frozen.",
    )
    rigid_min_motion: float = Field(
        default=0.05,
        ge=0,
        description="Landmark motion (inter-ocular distances) above which the rigid-motion cue may judge.",
    )
    rigid_max_residual: float = Field(
        default=0.06,
        ge=0,
        description="Landmark shape change beyond one planar homography (inter-ocular distances) below which a "
        "moving face is called a flat picture.",
    )
    spectral_max_peak: float = Field(
        default=1.25,
        ge=0,
        description="Median spectral peak excess (log10 amplitude over its frequency ring) above which a screen's "
        "moire, refresh banding or print halftone is suspected.",
    )
    chroma_max_peak: float = Field(
        default=0.8,
        ge=0,
        description="Median low-frequency spectral peak excess of the face's red-minus-blue difference above which "
        "a filmed screen's RGB sub-pixel grid (colour moire) is suspected.",
    )
    block_undecided: bool = Field(
        default=False,
        description="Hide personal memory while the passive cues have too few frames to decide (stricter).",
    )
    challenge: Literal["blink", "turn", "either"] = Field(
        default="either",
        description="Active challenge at enrollment and admin actions: blink, head turn, or both kinds.",
    )
    challenge_timeout_s: float = Field(default=6.0, gt=0, description="Time allowed to complete the challenge.")
    blink_closed_ratio: float = Field(
        default=0.65,
        gt=0,
        lt=1,
        description="Eye openness below this fraction of the open-eye baseline is a closed eye.",
    )
    blink_open_ratio: float = Field(
        default=0.85, gt=0, le=1, description="Eye openness back above this fraction of the baseline ends the blink."
    )
    turn_min_yaw: float = Field(
        default=0.35, gt=0, le=1, description="Head yaw (nose between the cheeks, 0 frontal .. 1 profile) to reach."
    )
    turn_centre_yaw: float = Field(
        default=0.15, gt=0, le=1, description="Yaw within which the head counts as facing the camera again."
    )


class PalmConfig(Section):
    encoder: Literal["compcode", "onnx"] = Field(
        default="compcode", description="Palm encoder: training-free competitive code, or a trained ONNX model."
    )
    onnx_model_path: Path | None = Field(
        default=None, description="Path of a trained palm ONNX (128x128 input) when encoder='onnx'."
    )
    roi_size: int = Field(default=128, ge=32, description="Side of the normalised palm ROI in pixels.")
    min_image_px: int = Field(default=64, ge=16, description="Smallest image side (pixels) accepted as a palm image.")
    min_palm_px: float = Field(
        default=48.0, ge=8, description="Smallest index-to-pinky knuckle distance (pixels) of a full-hand image."
    )
    min_finger_extension: float = Field(
        default=1.45,
        gt=0,
        description="Open-hand gate: mean over four fingers of tip-to-wrist / knuckle-to-wrist distance.",
    )
    min_sharpness: float = Field(
        default=5.0, ge=0, description="Minimum Laplacian variance of the ROI before contrast normalisation."
    )
    min_brightness: float = Field(default=40.0, ge=0, le=255, description="Minimum mean gray level of the ROI.")
    min_contrast: float = Field(default=4.0, ge=0, description="Minimum gray-level standard deviation of the ROI.")
    max_background_fraction: float = Field(
        default=0.10,
        ge=0,
        le=1,
        description="Largest share of near-black ROI pixels (background beside the hand: a crop that slipped off the "
        "palm). Of Tongji's 907 ROIs it refuses the 3 failed crops (22-31 % background); the rest have at most 4 % "
        "(small wedges from the ROI rotation). 1 turns it off.",
    )
    hand_confidence: float = Field(
        default=0.5, ge=0, le=1, description="MediaPipe hand detection/presence confidence needed to accept a hand."
    )
    roi_input: bool = Field(
        default=False,
        description="The palm scanner delivers ready palm ROIs (ROI scanner): skip hand landmarks and cropping.",
    )
    fuse_frames: int = Field(default=3, ge=1, description="Good scanner frames averaged into one palm probe.")
    fuse_max_age_s: float = Field(default=2.0, gt=0, description="Oldest scanner frame age (s) allowed in a probe.")
    enroll_min_samples: int = Field(
        default=3, ge=1, description="Usable palm samples (after outlier rejection) an enrollment needs."
    )
    enroll_outlier_min_cosine: float = Field(
        default=0.3,
        ge=-1,
        le=1,
        description="Palm samples below this cosine to the samples' medoid are rejected (Tongji FAR 1e-3 ~ 0.30).",
    )
    enroll_max_templates: int = Field(
        default=10, ge=1, description="Palm templates kept per user (evenly spread over the samples)."
    )


class MemoryConfig(Section):
    construction: Literal["fast", "llm"] = Field(
        default="llm", description="Note construction: A-Mem with the LLM, or fast (no LLM call) for bulk import."
    )
    link_candidates: int = Field(default=5, ge=0, description="Nearest same-owner notes considered for links.")
    evolve: bool = Field(default=True, description="Let new notes update neighbours' tags/context (A-Mem).")
    link_similarity: float = Field(
        default=0.55, ge=-1, le=1, description="Fast mode: link to same-owner notes at least this cosine-similar."
    )
    keywords: int = Field(default=5, ge=1, le=20, description="Fast mode: keywords picked per note (KeyBERT-style).")
    reply_context_words: int = Field(
        default=30,
        ge=0,
        description="Fast mode, imported conversations: the context of a turn quotes up to this many words of the "
        "turn it replies to, so a bare reply ('5 years already!') is found by the question it answers (0 = off).",
    )
    max_content_chars: int = Field(
        default=8000,
        ge=1,
        description="Longest note content accepted, in characters; longer messages are rejected, not truncated.",
    )
    construction_max_tokens: int = Field(
        default=192, ge=32, description="LLM mode: token budget of each structured construction reply."
    )
    classify_sensitive: bool = Field(
        default=True,
        description="Mark sensitive notes (health, finance, credentials, location, third parties) at construction "
        "by rules (bench/results/sensitive.md).",
    )
    sensitivity_llm: bool = Field(
        default=False,
        description="LLM construction also asks the LLM (one short JSON call) about notes the rules leave unmarked. "
        "Off by default: the default 0.5B model marked 160 of 168 non-sensitive LoCoMo turns (precision 0.17, "
        "bench/results/sensitive.md); turn it on with a larger model after measuring it.",
    )


class LLMConfig(Section):
    backend: Literal["llamacpp", "openai"] = Field(
        default="llamacpp", description="LLM backend: llama-cpp-python on a GGUF, or an OpenAI-compatible server."
    )
    model: str = Field(default="qwen2.5-coder-0.5b-instruct", description="Manifest name of the GGUF model.")
    gguf_path: Path | None = Field(default=None, description="A deployer's GGUF file; overrides `model`.")
    endpoint_url: str | None = Field(
        default=None, description="Base URL of an OpenAI-compatible server (llama.cpp server, Ollama, vLLM)."
    )
    endpoint_model: str = Field(default="default", description="Model name sent to the OpenAI-compatible server.")
    api_key_env: str = Field(default="KIOSK_LLM_API_KEY", description="Env variable holding the server's API key.")
    n_ctx: int = Field(default=4096, ge=512, description="Context window in tokens.")
    threads: int = Field(default=0, ge=0, description="CPU threads for llama.cpp; 0 = all cores.")
    max_answer_tokens: int = Field(default=96, ge=1, description="Longest answer in tokens.")
    temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature (0 = greedy).")
    answer_prompt: Literal["compact", "detailed"] = Field(
        default="compact",
        description="compact: notes under their date with the speaker, short exact answers, 'I don't know' when "
        "the notes lack it (fewer prompt tokens: faster first token); detailed: the earlier prompt with each "
        "note's context sentence (bench/results/latency.md).",
    )
    answer_reply_words: int = Field(
        default=0,
        ge=0,
        le=60,
        description="Compact prompt: an imported reply whose turn is not the line before it quotes up to this many "
        "words of that turn (from the note's context, memory.reply_context_words), so the model sees what it "
        "answers; 0 = off.",
    )
    concise_answers: bool = Field(
        default=True,
        description="Cut the answer's restatement of the question: its opening words when they are the question's "
        "own ('Grandma's gift to Caroline was | a necklace') and a closing clause that repeats it; a question "
        "asking when is answered by the one date the answer anchors ('last week (the week before 7 July 2023)') "
        "(kiosk/llm/answer_form.py). The prompt asks for short answers and the 0.5B model often ignores it: LoCoMo "
        "owner F1 on 745 held-out questions 30.31 -> 31.84, 69 answers better and 25 worse, the non-owner's "
        "unchanged (bench/results/concise_answers_heldout.md).",
    )
    reask_restated: bool = Field(
        default=True,
        description="When notes were given and the answer only restates the question's words ('What kind of "
        "flowers does Audrey have a tattoo of?' -> 'flowers'), answer once more with that answer's words banned "
        "as the first word (llama.cpp only; kiosk/llm/reask.py).",
    )
    unknown_restated_without_notes: bool = Field(
        default=True,
        description="When no note was given (nobody verified, or nothing of theirs matched) and the answer only "
        "restates the question's words ('What kind of pot did Mel make?' -> 'Pot'), show 'I don't know' "
        "(kiosk/llm/reask.py).",
    )
    reask_speaker_names: bool = Field(
        default=True,
        description="When notes were given and the answer is only the name of one of their speakers ('Who inspired "
        "Dave's passion for car engineering?' -> 'Calvin', the friend he talks to), answer once more with that "
        "answer's words and every speaker's name banned as the first word; every second answer (also that of "
        "llm.reask_restated) then has the speakers' names banned as its first word and is not shown when it only "
        "names a speaker (llama.cpp only; kiosk/llm/reask.py). LoCoMo owner F1 on the 811 held-out questions unread "
        "in design 31.61 -> 31.95, 8 answers better and 4 worse (bench/results/speaker_names_owner.md).",
    )
    complete_lists: bool = Field(
        default=True,
        description="When notes were given, the question asks for several things ('What instruments does Melanie "
        "play?') and the answer names one ('Clarinet'), continue the reply after a comma and add each further item "
        "whose words the notes hold ('Clarinet, violin') (llama.cpp only; kiosk/llm/lists.py). LoCoMo owner F1 on "
        "the 811 held-out questions unread in design 31.02 -> 31.61, 15 answers better and 2 worse "
        "(bench/results/complete_lists_owner.md).",
    )
    reuse_system_prompt: bool = Field(
        default=True,
        description="llama.cpp: keep the KV state of each fixed system prompt and restore it before an answer "
        "instead of processing it again (same answer, less prompt processing).",
    )
    prefill_while_typing: bool = Field(
        default=True,
        description="While the person types, retrieve for the words so far and process that prompt on the idle "
        "LLM; the final prompt reuses whatever it shares. Stops at once when a real request comes.",
    )
    keep_prepared_notes: bool = Field(
        default=False,
        description="At send, keep the notes of the prompt prefilled while typing (first, as prefilled) and add the "
        "final retrieval's other notes after them, so the prefilled block is reused and "
        "only the new notes and the question are processed; every finally retrieved note is still used (kiosk/"
        "prepared.py). Off by default: it cuts the first token p50 from 3.77 s to 0.98 s on the AVX-512 build (50 "
        "questions, bench/results/latency_50_levers.md) but the 0.5B "
        "model answers worse from extra notes and notes out of date order (144 LoCoMo questions, owner F1: kept "
        "35.29 -> 30.93, at most 2 extra notes 36.51 -> 32.50; bench/results/keep_prepared_f1.md).",
    )
    keep_prepared_max_extra: int = Field(
        default=10,
        ge=0,
        description="With keep_prepared_notes: at most this many kept prepared notes that the final retrieval did "
        "not choose (the prepared block is cut before the next one); 0 keeps exactly the final notes, the "
        "prefilled ones first.",
    )
    cache_reuse_min_tokens: int = Field(
        default=0,
        ge=0,
        description="llama.cpp: at send, also keep the runs of at least this many tokens of the prefilled prompt "
        "that the final prompt has further on (its notes after the first one that changed), moved to their new "
        "positions, and evaluate only the tokens between them (kiosk/llm/kv_reuse.py; like llama.cpp server's "
        "--cache-reuse). The prompt stays the usual one, in date order, but a kept note's KV was computed after the "
        "old notes. Off (0): with 8 the 0.5B model's owner F1 fell from 35.29 to 29.72 on 144 LoCoMo questions "
        "(8 answers better, 21 worse; bench/results/cache_reuse_f1.md).",
    )
    amx_requantize: bool = Field(
        default=True,
        description="On a llama.cpp build with AMX (the bootstrap's choice where the CPU and kernel allow it), run "
        "`model` requantised to the type its manifest entry names (amx_type: Q8_0 for the default 0.5B), made once "
        "from the verified file: AMX's int8 kernels take Q8_0 but not the Q5_0 most of the shipped 0.5B file holds "
        "(kiosk/llm/requant.py, bench/results/llama_builds.md, amx_f1.md). Ignored with gguf_path, on other builds "
        "and for models without amx_type.",
    )
    flash_attn: bool = Field(
        default=True,
        description="llama.cpp flash attention: first token 0.89x with the 0.5B model (2 threads, AVX-512 build; "
        "0.86x on the portable build in an earlier 12-question run), and its other rounding changes no owner F1 "
        "measurably (432 LoCoMo questions answer by answer, bench/results/latency_50_flash.md, flash_attn_f1.md).",
    )


class RetrievalConfig(Section):
    k: int = Field(default=10, ge=1, description="Notes given to the LLM (top-K inside the matched pool).")
    mode: Literal["adaptive", "familiarity", "recollection"] = Field(
        default="adaptive", description="RF-Mem path: adaptive chooses per query."
    )
    relevance_floor: float = Field(
        default=0.4125,
        ge=0,
        le=1,
        description="When the best retrieved note's cosine similarity to the question is below this, no note is "
        "used and the answer says no memory matched; 0 turns it off. Calibrated on the text encoder "
        "(calibration/relevance-<encoder sha>.json, made by bench.bench_relevance --write-calibration).",
    )
    k_probe: int = Field(default=15, ge=1, description="Similarities used for the familiarity signal.")
    theta_high: float = Field(
        default=-1.0,
        ge=-1,
        le=1,
        description="Mean top-k similarity at or above which familiarity runs; chosen on calibration questions for "
        "the text encoder (calibration/adaptive-<encoder sha>.json, made by bench.bench_hybrid --write-calibration). "
        "-1 (cosine's floor) = never recollection: on LoCoMo it lost recall on every category "
        "(bench/results/hybrid.md).",
    )
    theta_low: float = Field(
        default=-1.0,
        ge=-1,
        le=1,
        description="Mean top-k similarity at or below which recollection runs; calibrated like theta_high.",
    )
    tau_entropy: float = Field(
        default=2.7081,
        gt=0,
        description="Entropy above which recollection runs between the two means; calibrated like theta_high "
        "(ln k_probe = the entropy's maximum: never).",
    )
    softmax_lambda: float = Field(
        default=50.0,
        gt=0,
        description="Inverse temperature lambda of the similarity softmax; 50 spreads MiniLM cosines' entropy "
        "across tau_entropy (at 10 it stays near its maximum ln k_probe and the test never passes).",
    )
    beam: int = Field(default=2, ge=1, description="Beam width B (also the number of k-means clusters).")
    fanout: int = Field(default=2, ge=1, description="Mixed queries kept per beam query per round.")
    rounds: int = Field(default=4, ge=1, description="Recollection rounds R.")
    candidates: int = Field(default=20, ge=1, description="Candidates N retrieved per beam query per round.")
    cache_ttl_ms: float = Field(default=350.0, ge=0, description="Familiarity result cache lifetime; 0 disables.")
    recollection_alpha: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Query weight alpha in alpha*q + (1-alpha)*centroid; None uses 0.3 + 0.5*min(1, K/50).",
    )
    kmeans_seed: int = Field(default=0, ge=0, description="Seed of the recollection k-means (deterministic).")
    recollection_ranking: Literal["fuse", "rocchio", "weighted-max"] = Field(
        default="fuse",
        description="How recollection orders what it collected: fuse (the question's top half, then the expanded "
        "queries round-robin), rocchio (cosine to the mean of the issued queries), weighted-max.",
    )
    fusion: Literal["rrf", "weighted", "off"] = Field(
        default="weighted",
        description="How the lexical (FTS5 BM25) ranking joins the dense one inside the matched pool: weighted "
        "(min-max normalised scores; best on LoCoMo, bench/results/hybrid.md), rrf (reciprocal rank fusion), "
        "off (dense only).",
    )
    dense_weight: float = Field(
        default=1.0, ge=0, description="Weight of the dense (cosine) ranking in the fusion; 0 = lexical only."
    )
    lexical_weight: float = Field(
        default=3.0,
        ge=0,
        description="Weight of the lexical (BM25) ranking in the fusion; 0 = dense only. 3: on LoCoMo BM25 alone "
        "finds more evidence than MiniLM alone (bench/results/hybrid.md).",
    )
    date_weight: float = Field(
        default=1.0,
        ge=0,
        description="Weight of a third ranking in the fusion when the question names a date with a year ('on 13 "
        "March, 2023', 'in mid-August 2023'): the pool's notes from that time, by cosine; 0 = off "
        "(bench/results/dates.md).",
    )
    person_weight: float = Field(
        default=1.0,
        ge=0,
        description="Weight of a fourth ranking in the fusion when the question names a person ('What exercises "
        "has John done?'): the pool's notes that person said (the first name of the note's context), by cosine; "
        "0 = off (kiosk/retrieval/people.py, bench/results/people.md).",
    )
    date_window_days: int = Field(
        default=30,
        ge=0,
        le=366,
        description="A named date's window runs from the day before it to this many days after it: a note said "
        "soon after an event tells it as 'yesterday' or 'last week' (kiosk/retrieval/dates.py).",
    )
    rrf_k: float = Field(
        default=10.0, gt=0, description="RRF constant k in weight / (k + rank): larger flattens the rank curve."
    )
    fusion_depth: int = Field(
        default=50,
        ge=1,
        description="Candidates each ranking hands to the fusion (dense familiarity and lexical top-N).",
    )
    clustering: Literal["kmeans", "dbscan", "adaptive"] = Field(
        default="kmeans",
        description="How recollection groups each query's candidates: k-means (B groups), DBSCAN (dense groups, "
        "stragglers left out), or adaptive (DBSCAN when the candidates' density is uneven; "
        "bench/results/clustering.md).",
    )
    dbscan_min_samples: int = Field(
        default=3, ge=2, description="DBSCAN: points (itself included) within eps that make a point core."
    )
    dbscan_eps_quantile: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="DBSCAN: eps is this quantile of the candidates' distances to their (min_samples-1)-th neighbour.",
    )
    density_threshold: float = Field(
        default=0.25,
        ge=0,
        description="adaptive: DBSCAN when the coefficient of variation of k-th-neighbour distances exceeds this.",
    )
    pool_cache_owners: int = Field(
        default=16,
        ge=1,
        description="Matched pools whose embeddings recollection keeps in RAM (about 1.5 MB per 1,000 notes).",
    )


class ScopesConfig(Section):
    alpha: float = Field(
        default=1.0, ge=0, description="Weight of semantic similarity in score = alpha*semantic + beta*scope relevance."
    )
    beta: float = Field(
        default=0.05,
        ge=0,
        description="Weight of scope relevance; small, so it only reorders notes of nearly equal similarity.",
    )
    personal_relevance: float = Field(
        default=1.0, ge=0, le=1, description="Scope relevance of the requester's personal notes (0..1)."
    )
    group_relevance: float = Field(
        default=0.5, ge=0, le=1, description="Scope relevance of notes of the requester's groups (0..1)."
    )
    public_relevance: float = Field(
        default=0.0, ge=0, le=1, description="Scope relevance of public notes, visible to everyone (0..1)."
    )


class ForgettingConfig(Section):
    half_life_days: float = Field(
        default=180.0,
        gt=0,
        description="Days after which a never-reinforced note's strength has halved: s = 2^(-elapsed/half-life).",
    )
    reinforcement_growth: float = Field(
        default=2.0,
        ge=1,
        description="Each retrieval that is used multiplies the note's half-life by this (stronger decays slower).",
    )
    max_half_life_days: float = Field(
        default=3650.0, gt=0, description="Cap on a reinforced note's half-life, in days."
    )
    weight: float = Field(
        default=0.0,
        ge=0,
        description="Weight gamma of strength in ranking (score += gamma*strength); 0 keeps ranking decay-free "
        "(bench/results/scopes.md: on LoCoMo decay never raised the fused default's recall@10, 0.666; gamma 0.2 "
        "cut it to 0.657-0.661, and dense familiarity's by a quarter).",
    )
    archive_below: float = Field(
        default=0.0,
        ge=0,
        lt=1,
        description="Strength floor: notes below it leave retrieval (archived, listed, restorable); 0 never archives.",
    )
    sweep_interval_s: float = Field(
        default=3600.0, ge=0, description="Least time between two archive sweeps of one pool while answering."
    )


class GateConfig(Section):
    policy: Literal["threshold", "best-match"] = Field(
        default="best-match",
        description="threshold: every note whose owner template passes tau; best-match: only the best identity.",
    )
    best_match_margin: float = Field(
        default=0.05, ge=0, description="best-match: the winner must beat the runner-up by this cosine margin."
    )
    face_calibration: str = Field(
        default="face-lfw.json", description="Active face calibration file (relative to paths.calibration_dir)."
    )
    palm_calibration: str = Field(
        default="palm-tongji.json", description="Active palm calibration file (relative to paths.calibration_dir)."
    )


class SensitiveConfig(Section):
    verification: Literal["threshold", "face+palm"] = Field(
        default="threshold",
        description="What a sensitive note needs to be used: 'threshold' = the verified person's score reaches the "
        "stricter threshold below; 'face+palm' = a face probe and a palm probe both verify the same person.",
    )
    threshold_margin: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="'threshold': cosine added to the modality's calibrated tau for sensitive notes "
        "(unless face_threshold / palm_threshold set it outright).",
    )
    face_threshold: float | None = Field(
        default=None, gt=-1, le=1, description="'threshold': absolute face cosine for sensitive notes; above face tau."
    )
    palm_threshold: float | None = Field(
        default=None, gt=-1, le=1, description="'threshold': absolute palm cosine for sensitive notes; above palm tau."
    )
    tap_to_reveal: bool = Field(
        default=True,
        description="Kiosk (full-screen) mode: sensitive notes, and answers that used them, stay covered until tapped.",
    )


class UIConfig(Section):
    idle_timeout_s: float = Field(default=60.0, gt=0, description="Inactivity before the idle screen clears the chat.")
    fullscreen: bool = Field(default=True, description="Kiosk mode runs full-screen without window chrome.")
    admin_pin_attempts: int = Field(
        default=5, ge=1, description="Wrong admin PINs in a row until a lock-out (the last one locks)."
    )
    admin_lockout_s: float = Field(
        default=60.0,
        ge=0,
        description="First lock-out after too many wrong PINs; doubles with each further one up to "
        "security.backoff_max_s.",
    )
    remember_construction: Literal["fast", "llm"] = Field(
        default="fast",
        description="How what people say at the kiosk becomes a note: fast keeps the LLM free for answers.",
    )
    verify_timeout_s: float = Field(
        default=1.5, gt=0, description="Longest wait at send time for a frame captured after the question."
    )
    analysis_fps: float = Field(
        default=10.0, gt=0, description="Camera frames analysed per second at most (leaves CPU for the LLM)."
    )


class SecurityConfig(Section):
    encrypt_at_rest: bool = Field(
        default=True,
        description="Seal note contents, keywords, tags, context, history and templates with AES-256-GCM "
        "(vectors for search and the lexical token index stay in clear; see README, Security).",
    )
    key_source: Literal["auto", "keyring", "file"] = Field(
        default="auto",
        description="Where the master key lives: auto uses an existing key file, else a usable OS keyring, "
        "else creates the key file.",
    )
    key_file: Path | None = Field(
        default=None, description="Master key file (created 0600 at first run); default <data_dir>/keys/master.key."
    )
    keyring_service: str = Field(default="bio-memory-kiosk", description="OS keyring service name of the key.")
    audit_max_bytes: int = Field(
        default=1_000_000, ge=10_000, description="Size at which the audit log is rotated to audit.log.1."
    )
    audit_backups: int = Field(default=10, ge=1, description="Rotated audit log files kept.")
    verify_free_failures: int = Field(
        default=3, ge=1, description="Failed verifications in a row allowed before the kiosk starts backing off."
    )
    backoff_base_s: float = Field(
        default=2.0, gt=0, description="First back-off after the free failures; doubles with every further one."
    )
    backoff_max_s: float = Field(default=300.0, gt=0, description="Longest back-off, for verifications and PINs.")
    backoff_reset_s: float = Field(
        default=900.0, gt=0, description="Quiet time after which the failure count of verifications starts over."
    )
    admin_challenge: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Admin unlock and destructive admin actions (remove a user, apply a calibration, delete a "
        "group) also need a passed blink / head-turn liveness challenge at the face camera: auto = when a face "
        "camera is configured (capture.face_source) and the Face Mesh liveness checks are on (pad.enabled, "
        "pad.mesh), PIN only otherwise (palm-only terminals); on = always (refused when the challenge cannot run); "
        "off = PIN only. A failed challenge counts as a wrong PIN for the admin back-off.",
    )
    admin_challenge_fresh_s: float = Field(
        default=120.0,
        gt=0,
        description="Seconds a passed admin challenge also covers destructive admin actions; later ones ask again.",
    )

    def key_path(self, data_dir: Path) -> Path:
        return self.key_file or data_dir / "keys" / "master.key"


class StoreConfig(Section):
    url: str = Field(
        default="",
        description="Memory store: empty = the SQLite file paths.db; 'sqlite:PATH' = another SQLite file; "
        "'postgresql://USER:PASSWORD@HOST:PORT/DB' = the fleet store shared by many terminals (PostgreSQL + pgvector).",
    )
    offline_queue: Path | None = Field(
        default=None,
        description="Fleet store: SQLite file queuing notes written while the database is unreachable (synced "
        "when it returns) and caching users/templates for the gate; default <data_dir>/fleet-queue.db.",
    )


class KioskConfig(Section):
    paths: PathsConfig = Field(default_factory=PathsConfig, description="Where things live.")
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig, description="Encoder inference runtime.")
    text: TextConfig = Field(default_factory=TextConfig, description="Sentence encoder for notes and queries.")
    capture: CaptureConfig = Field(default_factory=CaptureConfig, description="Cameras and scanners.")
    face: FaceConfig = Field(default_factory=FaceConfig, description="Face pipeline.")
    pad: PadConfig = Field(default_factory=PadConfig, description="Face presentation-attack detection (liveness).")
    palm: PalmConfig = Field(default_factory=PalmConfig, description="Palm pipeline.")
    memory: MemoryConfig = Field(default_factory=MemoryConfig, description="Note construction.")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="Language model.")
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig, description="RF-Mem retrieval.")
    gate: GateConfig = Field(default_factory=GateConfig, description="Biometric gate.")
    sensitive: SensitiveConfig = Field(
        default_factory=SensitiveConfig, description="Sensitive memories: the stronger proof they need, and display."
    )
    scopes: ScopesConfig = Field(default_factory=ScopesConfig, description="Note scopes and their ranking term.")
    forgetting: ForgettingConfig = Field(
        default_factory=ForgettingConfig, description="Memory strength decay, reinforcement and archiving."
    )
    ui: UIConfig = Field(default_factory=UIConfig, description="Qt app.")
    security: SecurityConfig = Field(
        default_factory=SecurityConfig, description="Encryption at rest, audit log and back-off."
    )
    store: StoreConfig = Field(default_factory=StoreConfig, description="Memory store backend (SQLite or fleet).")


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "kiosk.toml"


def _parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _env_overrides(environ: dict[str, str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for key, raw in environ.items():
        if not key.startswith("KIOSK_") or "__" not in key:
            continue
        section, _, field = key[len("KIOSK_") :].lower().partition("__")
        overrides.setdefault(section, {})[field] = _parse_env_value(raw)
    if "KIOSK_HOME" in environ:
        overrides.setdefault("paths", {})["data_dir"] = environ["KIOSK_HOME"]
    if "KIOSK_DATA" in environ:
        overrides.setdefault("paths", {})["eval_data_dir"] = environ["KIOSK_DATA"]
    return overrides


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _describe(error: ValidationError, source: str) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    if first["type"] == "extra_forbidden":
        return f"{source}: unknown setting '{where}'"
    return f"{source}: setting '{where}': {first['msg']}"


def load_config(path: Path | None = None, environ: dict[str, str] | None = None) -> KioskConfig:
    """Load the configuration; every problem becomes one ConfigError line naming the setting."""
    environ = dict(os.environ) if environ is None else environ
    explicit = path or (Path(environ["KIOSK_CONFIG"]) if environ.get("KIOSK_CONFIG") else None)
    file_path = explicit or default_config_path()
    data: dict[str, Any] = {}
    if file_path.exists():
        try:
            data = tomllib.loads(file_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {file_path} is not valid TOML ({exc})", "fix the syntax") from exc
    elif explicit is not None:
        raise ConfigError(f"config file {file_path} does not exist", "give an existing TOML file")
    data = _merge(data, _env_overrides(environ))
    try:
        return KioskConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            _describe(exc, str(file_path)), "see `kiosk config show` for every setting and its default"
        ) from exc
