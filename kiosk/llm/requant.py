"""The GGUF file the llama.cpp backend runs: the manifest's model, or on a build with AMX the same model requantised
to the type its manifest entry names (amx_type: Q8_0 for the default 0.5B model).

llama.cpp's AMX kernels multiply int8 tiles and take Q4_0, Q4_1, Q8_0 and the K-quants, but not Q5_0, which most
weights of the shipped Qwen2.5-Coder-0.5B Q4_K_M file are (its 896-wide rows do not fit K-quant blocks). Those
would stay on the AVX-512 path, so on an AMX build the verified file is requantised once to Q8_0 (llama.cpp's own
llama_model_quantize, allow_requantize): every Q5_0/Q4_K/Q6_K weight is re-rounded to 8 bits, finer than it was,
so the answers barely change (bench/results/amx_f1.md) while prompt processing, most of the first-token time, runs
on AMX (bench/results/llama_builds.md). The result is a ModelStore derived file, made again only when the source's
sha256 or this module's version changes.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from kiosk.config import LLMConfig
from kiosk.errors import ModelError
from kiosk.llm.cpu_support import built_for, verified_llama_build
from kiosk.models import ModelStore
from kiosk.models.store import sha256_file

REQUANT_VERSION = "1"
# On an AMX build, run a manifest model that names an amx_type requantised to it (the module docstring says why).
AMX_REQUANTIZE = True
SHA_FILE = "sha256"


def build_has_amx(system_info: str | None = None) -> bool:
    """Was the installed llama.cpp compiled with its AMX kernels (the bootstrap's "amx" build)?"""
    return "AMX_INT8" in built_for(verified_llama_build() if system_info is None else system_info)


def requantize(source: Path, target: Path, kind: str, threads: int = 2) -> None:
    """`source` requantised to llama.cpp type `kind` at `target` (llama_model_quantize; ModelError if it fails)."""
    import llama_cpp

    try:  # llama.cpp logs a line per tensor at INFO; Llama(verbose=False) quiets it the same way
        from llama_cpp._logger import set_verbose

        set_verbose(False)
    except ImportError:
        pass
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{kind.upper()}")
    params.allow_requantize = True
    params.nthread = threads
    if llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), ctypes.byref(params)) != 0:
        raise ModelError(f"llama.cpp could not requantise {source.name} to {kind}", "run `kiosk models pull` again")


def requantized_model(models: ModelStore, name: str, kind: str) -> tuple[Path, str]:
    """(path, sha256) of manifest model `name` requantised to `kind`, made once into the derived models."""
    file_name = f"{Path(models.manifest.get(name).file).stem}.{kind}.gguf"

    def build(source: Path, out_dir: Path) -> None:
        target = out_dir / file_name
        requantize(source, target, kind)
        (out_dir / SHA_FILE).write_text(sha256_file(target))

    out_dir = models.derived(f"{name}-{kind}", name, REQUANT_VERSION, build)
    return out_dir / file_name, (out_dir / SHA_FILE).read_text().strip()


def runtime_model(settings: LLMConfig, models: ModelStore, amx_requantize: bool = AMX_REQUANTIZE) -> tuple[Path, str]:
    """(path, sha256) of the GGUF the backend loads for these settings: the deployer's `gguf_path` as given (its
    sha256 left empty: the caller hashes it if it needs to), else the manifest model, requantised to its
    `amx_type` when it names one, the build has AMX and `amx_requantize` is on."""
    if settings.gguf_path is not None:
        return settings.gguf_path, ""
    entry = models.manifest.get(settings.model)
    if amx_requantize and entry.amx_type and build_has_amx():
        return requantized_model(models, settings.model, entry.amx_type)
    return models.ensure(settings.model), entry.sha256
