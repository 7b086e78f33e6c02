"""Fix llama.cpp's AMX tile setup in a llama-cpp-python source tree (packaging/llama_build.sh, the "amx" build).

ggml_tile_config_init() (ggml/src/ggml-cpu/amx/mmq.cpp) has two faults, and either one kills the first decode
on an AMX CPU with SIGILL at the first tileloadd, as a native build of llama.cpp does on these CPUs:

1. It fills a tile_config_t and hands it to _tile_loadconfig, but GCC 12 does not see that ldtilecfg reads the
   struct and drops the row and column stores as dead: every tile stays unconfigured. A compiler barrier that
   takes the struct's address keeps them.
2. It loads the configuration once per thread (a thread_local flag), but other AMX code in the same process
   releases or replaces it on the same thread (ONNX Runtime's and oneDNN's int8 kernels, which the kiosk's text
   and face encoders run). Loading it on every call costs one ldtilecfg per matrix product.

    python packaging/patch_llama_amx.py SOURCE_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

MMQ = Path("vendor/llama.cpp/ggml/src/ggml-cpu/amx/mmq.cpp")

ONCE_PER_THREAD = """    static thread_local bool done = false;

    if (done) {
        return;
    }

"""
LOAD = """    _tile_loadconfig(&tc);
    done = true;
"""
FIXED_LOAD = """    asm volatile("" : : "r"(&tc) : "memory");
    _tile_loadconfig(&tc);
"""


def patch(source_dir: Path) -> None:
    path = source_dir / MMQ
    text = path.read_text(encoding="utf-8")
    if ONCE_PER_THREAD not in text or LOAD not in text:
        raise SystemExit(f"patch_llama_amx: {path} is not the ggml_tile_config_init this patch knows")
    path.write_text(text.replace(ONCE_PER_THREAD, "", 1).replace(LOAD, FIXED_LOAD, 1), encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    patch(Path(sys.argv[1]))
