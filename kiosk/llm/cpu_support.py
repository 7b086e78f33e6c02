"""Does this CPU have every instruction set the installed llama.cpp build was compiled for?

A build made for AVX-512 (packaging/bootstrap.sh picks it on CPUs that have it) and then copied to a
machine without it dies of SIGILL on its first matrix product, with no message. Checking the build's own
feature list against the CPU's (numpy reads it with CPUID) turns that into a clear error at load time.
"""

from __future__ import annotations

from collections.abc import Mapping

from kiosk.errors import ModelError

# llama.cpp's system-info names -> numpy's CPU feature names
BUILD_TO_CPU = {
    "SSE3": "SSE3",
    "SSSE3": "SSSE3",
    "AVX": "AVX",
    "AVX2": "AVX2",
    "F16C": "F16C",
    "FMA": "FMA3",
    "BMI2": "BMI2",
    "AVX512": "AVX512F",
    "AVX512_VBMI": "AVX512VBMI",
    "AVX512_VNNI": "AVX512VNNI",
    "AVX512_BF16": "AVX512BF16",
    "AMX_INT8": "AVX512_SPR",
}


def built_for(system_info: str) -> list[str]:
    """The instruction sets a llama.cpp system-info line says are compiled in ("AVX2 = 1 | ...")."""
    features = []
    for part in system_info.replace(":", "|").split("|"):
        name, _, value = part.partition("=")
        if value.strip() == "1" and name.strip() in BUILD_TO_CPU:
            features.append(name.strip())
    return features


def cpu_features() -> Mapping[str, bool]:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__  # type: ignore[no-redef]
    return dict(__cpu_features__)


def missing_instruction_sets(system_info: str, cpu: Mapping[str, bool]) -> list[str]:
    return [name for name in built_for(system_info) if not cpu.get(BUILD_TO_CPU[name], False)]


def check_llama_build(system_info: str, cpu: Mapping[str, bool] | None = None) -> None:
    """ModelError naming what is missing when the build needs instructions this CPU lacks."""
    missing = missing_instruction_sets(system_info, cpu_features() if cpu is None else cpu)
    if missing:
        raise ModelError(
            f"the installed llama-cpp-python was built for {', '.join(missing)}, which this CPU does not have",
            "rebuild it here: LLAMA_BUILD=portable bash packaging/bootstrap.sh",
        )
