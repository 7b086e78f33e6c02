"""Does this CPU have every instruction set the installed llama.cpp build was compiled for?

A llama.cpp built for instructions a CPU lacks (an AVX-512 build copied to an older machine, or the AVX2
build on a CPU without AVX2) dies of SIGILL as soon as its library loads, with no message, and takes the
kiosk with it (seen under `qemu-x86_64 -cpu Haswell`). So the library is first loaded in a child process,
and its compiled-in feature list is compared with the CPU's (numpy reads it with CPUID): either way the
person at the terminal gets a clear error instead of a vanished window.
"""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

from kiosk.errors import ModelError

REBUILD = "rebuild it on this machine: LLAMA_BUILD=portable bash packaging/bootstrap.sh"
READ_SYSTEM_INFO = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode(errors='replace'))"

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
            REBUILD,
        )


def probe_llama_build(command: Sequence[str] | None = None, timeout_s: float = 120.0) -> str:
    """The installed build's system-info line, read by a child process; ModelError if it cannot run here.

    `command` runs Python code that prints the line (default: this interpreter importing llama_cpp)."""
    argv = list(command) if command is not None else [sys.executable, "-c", READ_SYSTEM_INFO]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelError(f"could not start a check of llama-cpp-python ({exc})", "run `kiosk doctor`") from exc
    if result.returncode == -signal.SIGILL:
        raise ModelError("the installed llama-cpp-python uses CPU instructions this machine does not have", REBUILD)
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[-1]
        raise ModelError(f"llama-cpp-python cannot be loaded ({reason})", "run packaging/bootstrap.sh again")
    info = result.stdout.strip()
    check_llama_build(info)
    return info


@functools.cache
def verified_llama_build() -> str:
    """probe_llama_build() once per process; a frozen bundle (no interpreter to start) carries its own build."""
    if getattr(sys, "frozen", False):
        return ""
    return probe_llama_build()
