"""The llama.cpp build is checked against the CPU before it can die of an illegal instruction."""

from __future__ import annotations

import signal
import sys

import pytest

from kiosk.errors import ModelError
from kiosk.llm.cpu_support import built_for, check_llama_build, cpu_features, probe_llama_build

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


def test_this_cpu_has_what_the_portable_build_needs() -> None:
    check_llama_build(PORTABLE, cpu_features())


def test_a_build_that_dies_of_an_illegal_instruction_is_a_clear_error() -> None:
    dies = [sys.executable, "-c", f"import os; os.kill(os.getpid(), {int(signal.SIGILL)})"]
    with pytest.raises(ModelError, match="CPU instructions this machine does not have") as raised:
        probe_llama_build(dies)
    assert "LLAMA_BUILD=portable" in raised.value.one_line()


def test_a_build_that_cannot_load_says_why() -> None:
    with pytest.raises(ModelError, match=r"cannot be loaded .*no libllama"):
        probe_llama_build([sys.executable, "-c", "raise OSError('no libllama')"])


def test_the_child_process_reads_the_installed_build() -> None:
    pytest.importorskip("llama_cpp")
    assert "AVX2" in built_for(probe_llama_build())
