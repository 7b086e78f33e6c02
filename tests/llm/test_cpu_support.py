"""The llama.cpp build is checked against the CPU before it can die of an illegal instruction."""

from __future__ import annotations

import pytest

from kiosk.errors import ModelError
from kiosk.llm.cpu_support import built_for, check_llama_build, cpu_features

PORTABLE = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 |"
AVX512 = PORTABLE.replace("BMI2 = 1 |", "BMI2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 0 |")
HASWELL = {"SSE3": True, "SSSE3": True, "AVX": True, "AVX2": True, "F16C": True, "FMA3": True, "BMI2": True}


def test_reads_the_compiled_in_sets_only() -> None:
    assert built_for(PORTABLE) == ["SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"]
    assert built_for(AVX512)[-2:] == ["AVX512", "AVX512_VNNI"]


def test_an_avx512_build_on_a_cpu_without_it_is_a_clear_error() -> None:
    check_llama_build(PORTABLE, HASWELL)
    with pytest.raises(ModelError, match="AVX512, AVX512_VNNI") as raised:
        check_llama_build(AVX512, HASWELL)
    assert "LLAMA_BUILD=portable" in raised.value.one_line()


def test_the_installed_build_runs_on_this_cpu() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    info = llama_cpp.llama_print_system_info().decode()
    assert "AVX2" in built_for(info)
    check_llama_build(info)
    assert cpu_features()["AVX2"]
