"""The fix of llama.cpp's AMX tile setup applied to a source tree (packaging/patch_llama_amx.py), on the function as
llama-cpp-python 0.3.36 vendors it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "packaging" / "patch_llama_amx.py"
ORIGINAL = """inline void ggml_tile_config_init(void) {
    static thread_local bool done = false;

    if (done) {
        return;
    }

    alignas(64) tile_config_t tc = {};
    tc.palette_id = 1;
    tc.rows[0] = 8;   tc.colsb[0] = 64;

    _tile_loadconfig(&tc);
    done = true;
}
"""


def _patcher():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("patch_llama_amx", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["patch_llama_amx"] = module
    spec.loader.exec_module(module)
    return module


def test_the_tile_configuration_is_loaded_on_every_call_behind_a_compiler_barrier(tmp_path: Path) -> None:
    patcher = _patcher()
    mmq = tmp_path / patcher.MMQ
    mmq.parent.mkdir(parents=True)
    mmq.write_text(ORIGINAL, encoding="utf-8")
    patcher.patch(tmp_path)
    fixed = mmq.read_text(encoding="utf-8")
    assert "thread_local" not in fixed and "done" not in fixed
    barrier = fixed.index('asm volatile("" : : "r"(&tc) : "memory");')
    assert fixed.index("tc.rows[0] = 8;") < barrier < fixed.index("_tile_loadconfig(&tc);")


def test_an_unknown_version_of_the_function_stops_the_build(tmp_path: Path) -> None:
    patcher = _patcher()
    mmq = tmp_path / patcher.MMQ
    mmq.parent.mkdir(parents=True)
    mmq.write_text(ORIGINAL.replace("static thread_local bool done", "static bool done"), encoding="utf-8")
    with pytest.raises(SystemExit, match="not the ggml_tile_config_init"):
        patcher.patch(tmp_path)
    assert "static bool done" in mmq.read_text(encoding="utf-8")  # left as it was
