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
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kiosk.config_history import hint_for
from kiosk.errors import ConfigError
from kiosk.local_time import check_zone_name

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
        default="openvino", description="Inference runtime for the face, palm and text encoders."
    )
    threads: int = Field(default=0, ge=0, description="Inference threads per encoder; 0 lets the runtime choose.")


class TextConfig(Section):
    model: str = Field(default="minilm-l6-int8", description="Manifest name of the sentence encoder graph (ONNX).")


class CaptureConfig(Section):
    face_source: str = Field(
        default="0",
        description="Face camera: an index ('0'), a device path, a video file, an image folder or a URL.",
    )
    palm_source: str | None = Field(
        default=None, description="Palm scanner: same forms as face_source; None when the terminal has none."
    )


class ArcFaceSettings(Section):
    """The `arcface-onnx` face embedder's own settings (face.arcface)."""

    model_path: Path | None = Field(
        default=None, description="ArcFace-style ONNX file (112x112 input) used when face.embedder = 'arcface-onnx'."
    )


class FaceConfig(Section):
    detector: Literal["mediapipe", "mtcnn"] = Field(
        default="mediapipe", description="Face detector: MediaPipe BlazeFace short-range or MTCNN (ONNX)."
    )
    embedder: Literal["facenet+sface", "facenet", "sface", "arcface-onnx"] = Field(
        default="facenet+sface",
        description="Face embedding model: FaceNet and SFace fused, either alone, or an ArcFace ONNX (face.arcface).",
    )
    min_face_px: int = Field(default=60, ge=8, description="Smallest face side (pixels) accepted by quality gates.")
    enroll_min_samples: int = Field(
        default=3, ge=1, description="Usable samples (after outlier rejection) an enrollment needs."
    )
    arcface: ArcFaceSettings = Field(
        default_factory=ArcFaceSettings, description="Settings of the arcface-onnx embedder."
    )


class PadConfig(Section):
    """Presentation-attack detection for the face path (kiosk/identity/liveness.py, challenge.py)."""

    enabled: bool = Field(
        default=True, description="Run the passive liveness cues at query time; an attack verdict hides memory."
    )
    challenge: Literal["blink", "turn", "either"] = Field(
        default="either",
        description="Active challenge at enrollment and admin actions: blink, head turn, or both kinds.",
    )


class PalmOnnxSettings(Section):
    """The `onnx` palm encoder's own settings (palm.onnx)."""

    model_path: Path | None = Field(
        default=None, description="Trained palm ONNX file (128x128 input) used when palm.encoder = 'onnx'."
    )


class PalmConfig(Section):
    encoder: Literal["compcode", "onnx"] = Field(
        default="compcode", description="Palm encoder: training-free competitive code, or a trained ONNX (palm.onnx)."
    )
    roi_input: bool = Field(
        default=False,
        description="The palm scanner delivers ready palm ROIs (ROI scanner): skip hand landmarks and cropping.",
    )
    enroll_min_samples: int = Field(
        default=3, ge=1, description="Usable palm samples (after outlier rejection) an enrollment needs."
    )
    alignment_search: bool = Field(
        default=True,
        description="Score palm probes as the best cosine over 27 small shifts/rotations of the ROI (needs a "
        "calibration made with it).",
    )
    onnx: PalmOnnxSettings = Field(default_factory=PalmOnnxSettings, description="Settings of the onnx palm encoder.")


class MemoryConfig(Section):
    construction: Literal["fast", "llm"] = Field(
        default="llm", description="Note construction: A-Mem with the LLM, or fast (no LLM call) for bulk import."
    )
    classify_sensitive: bool = Field(
        default=True,
        description="Mark sensitive notes (health, finance, credentials, location, third parties) by rules.",
    )


class OpenAISettings(Section):
    """The `openai` LLM backend's own settings (llm.openai)."""

    endpoint_url: str | None = Field(
        default=None, description="Base URL of an OpenAI-compatible server (llama.cpp server, Ollama, vLLM)."
    )
    endpoint_model: str = Field(default="default", description="Model name sent to the OpenAI-compatible server.")
    api_key_env: str = Field(default="KIOSK_LLM_API_KEY", description="Env variable holding the server's API key.")


class LLMConfig(Section):
    backend: Literal["llamacpp", "openai"] = Field(
        default="llamacpp", description="LLM backend: llama-cpp-python on a GGUF, or an OpenAI-compatible server."
    )
    model: str = Field(default="qwen2.5-coder-0.5b-instruct", description="Manifest name of the GGUF model.")
    gguf_path: Path | None = Field(default=None, description="A deployer's GGUF file; overrides `model`.")
    threads: int = Field(default=0, ge=0, description="CPU threads for llama.cpp; 0 = all cores.")
    max_answer_tokens: int = Field(default=96, ge=1, description="Longest answer in tokens.")
    answer_profile: Literal["small-model", "careful", "checked", "lists", "weighed", "plain"] = Field(
        default="checked",
        description=(
            "Steps from reply to shown answer: checked (small-model + a day, number or name the notes do not "
            "hold, or a choice they contradict -> I don't know), small-model, careful (+ unsure -> I don't "
            "know), lists, weighed (+ a yes or no the notes argue against -> I don't know), plain."
        ),
    )
    prefill_while_typing: bool = Field(
        default=True,
        description="While the person types, process the prompt of the words so far on the idle LLM (same answer).",
    )
    openai: OpenAISettings = Field(
        default_factory=OpenAISettings, description="Settings of the openai backend (llm.backend = 'openai')."
    )


class RetrievalConfig(Section):
    k: int = Field(default=10, ge=1, description="Notes given to the LLM (top-K inside the matched pool).")


class ForgettingConfig(Section):
    half_life_days: float = Field(
        default=180.0, gt=0, description="Days after which a never-used note's strength has halved."
    )
    weight: float = Field(
        default=0.0, ge=0, description="Weight of memory strength in ranking (score += weight * strength); 0 = off."
    )
    archive_below: float = Field(
        default=0.0,
        ge=0,
        lt=1,
        description="Strength floor: notes below it leave retrieval (archived, listed, restorable); 0 never archives.",
    )


class GateConfig(Section):
    policy: Literal["threshold", "best-match"] = Field(
        default="best-match",
        description="threshold: every user whose score reaches tau; best-match: only the best, clear of the runner-up.",
    )
    best_match_margin: float = Field(
        default=0.05, ge=0, description="best-match: cosine by which the best user must beat the runner-up."
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
        description="Proof a sensitive note needs: a stricter cosine (threshold) or face and palm of one person.",
    )
    threshold_margin: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description=(
            "'threshold': cosine added to the modality's tau for sensitive notes, when neither set outright nor "
            "calibrated for the active encoder (calibration/sensitive-<modality>.json)."
        ),
    )
    face_threshold: float | None = Field(
        default=None, gt=-1, le=1, description="'threshold': absolute face cosine for sensitive notes; above face tau."
    )
    palm_threshold: float | None = Field(
        default=None, gt=-1, le=1, description="'threshold': absolute palm cosine for sensitive notes; above palm tau."
    )
    tap_to_reveal: bool = Field(
        default=True,
        description="Kiosk mode: sensitive notes, and answers that used them, stay covered until tapped.",
    )


class UIConfig(Section):
    idle_timeout_s: float = Field(
        default=60.0, gt=0, description="Inactivity (s) before the idle screen clears the chat."
    )
    fullscreen: bool = Field(default=True, description="Kiosk mode runs full-screen without window chrome.")
    admin_pin_attempts: int = Field(
        default=5, ge=1, description="Wrong admin PINs in a row until a lock-out (the last one locks)."
    )
    admin_lockout_s: float = Field(
        default=60.0, ge=0, description="First lock-out (s) after too many wrong PINs; doubles with each further one."
    )
    remember_construction: Literal["fast", "llm"] = Field(
        default="fast",
        description="How what people say at the kiosk becomes a note: fast keeps the LLM free for answers.",
    )
    enrich_notes_when_idle: bool = Field(
        default=False,
        description="Enrich fast-built notes with the LLM (specific tags, context, links) while the terminal is idle.",
    )
    verify_timeout_s: float = Field(
        default=1.5, gt=0, description="Longest wait (s) at send time for a frame captured after the question."
    )
    time_zone: str = Field(
        default="",
        description="IANA time zone (e.g. 'Europe/Berlin') notes are dated, shown and read in; empty = the system's.",
    )

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        return check_zone_name(name)


class SecurityConfig(Section):
    encrypt_at_rest: bool = Field(
        default=True, description="Seal note texts and templates with AES-256-GCM (search vectors stay in clear)."
    )
    key_source: Literal["auto", "keyring", "file"] = Field(
        default="auto", description="Master key location: auto = existing key file, else OS keyring, else new file."
    )
    key_file: Path | None = Field(
        default=None, description="Master key file (created 0600); default <data_dir>/keys/master.key."
    )
    keyring_service: str = Field(default="bio-memory-kiosk", description="OS keyring service name of the key.")
    audit_max_bytes: int = Field(
        default=1_000_000, ge=10_000, description="Size (bytes) at which the audit log is rotated to audit.log.1."
    )
    verify_free_failures: int = Field(
        default=3, ge=1, description="Failed verifications in a row allowed before the kiosk starts backing off."
    )
    backoff_max_s: float = Field(default=300.0, gt=0, description="Longest back-off (s), for verifications and PINs.")
    admin_challenge: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Admin actions also need a blink / head-turn check: auto = with a face camera and pad.enabled.",
    )

    def key_path(self, data_dir: Path) -> Path:
        return self.key_file or data_dir / "keys" / "master.key"


class StoreConfig(Section):
    url: str = Field(
        default="",
        description="Memory store: empty = paths.db; 'sqlite:PATH'; 'postgresql://USER:PW@HOST:PORT/DB' = fleet store.",
    )
    offline_queue: Path | None = Field(
        default=None,
        description="Fleet store: local SQLite file of notes queued while offline; default <data_dir>/fleet-queue.db.",
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
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig, description="Notes retrieved per question.")
    gate: GateConfig = Field(default_factory=GateConfig, description="Biometric gate.")
    sensitive: SensitiveConfig = Field(
        default_factory=SensitiveConfig, description="Sensitive memories: the stronger proof they need, and display."
    )
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


def _env_overrides(environ: dict[str, str]) -> tuple[dict[str, Any], dict[tuple[str, str], str]]:
    """The settings the environment sets, and for each (section, field) the variable that set it."""
    overrides: dict[str, Any] = {}
    variables: dict[tuple[str, str], str] = {}
    for key, raw in environ.items():
        if not key.startswith("KIOSK_") or "__" not in key:
            continue
        section, _, field = key[len("KIOSK_") :].lower().partition("__")
        overrides.setdefault(section, {})[field] = _parse_env_value(raw)
        variables[(section, field)] = key
    for key, field in (("KIOSK_HOME", "data_dir"), ("KIOSK_DATA", "eval_data_dir")):
        if key in environ:
            overrides.setdefault("paths", {})[field] = environ[key]
            variables[("paths", field)] = key
    return overrides, variables


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _describe(error: ValidationError, file_source: str, env_variables: dict[tuple[str, str], str]) -> str:
    first = error.errors()[0]
    loc = tuple(str(part) for part in first["loc"])
    where = ".".join(loc)
    from_env = [name for (section, field), name in env_variables.items() if loc[:2] in ((section, field), (section,))]
    source = f"environment variable {from_env[0]}" if from_env else file_source
    if first["type"] == "extra_forbidden":
        earlier = hint_for(where)
        return f"{source}: unknown setting '{where}'" + (f"; {earlier}" if earlier else "")
    return f"{source}: setting '{where}': {first['msg']}"


def load_config(path: Path | None = None, environ: dict[str, str] | None = None) -> KioskConfig:
    """Load the configuration; every problem becomes one ConfigError line naming the setting."""
    environ = dict(os.environ) if environ is None else environ
    explicit = path or (Path(environ["KIOSK_CONFIG"]) if environ.get("KIOSK_CONFIG") else None)
    file_path = explicit or default_config_path()
    data: dict[str, Any] = {}
    if file_path.is_dir():
        raise ConfigError(f"config file {file_path} is a directory", "give a TOML file, such as kiosk.toml")
    if file_path.exists():
        try:
            data = tomllib.loads(file_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {file_path} is not valid TOML ({exc})", "fix the syntax") from exc
        except OSError as exc:
            raise ConfigError(f"config file {file_path} cannot be read ({exc.strerror})", "check its path") from exc
    elif explicit is not None:
        raise ConfigError(f"config file {file_path} does not exist", "give an existing TOML file")
    overrides, env_variables = _env_overrides(environ)
    data = _merge(data, overrides)
    try:
        return KioskConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            _describe(exc, str(file_path), env_variables), "see `kiosk config show` for every setting and its default"
        ) from exc
