# Sourced by bootstrap.sh and build_bundle.sh: which llama-cpp-python build a CPU gets, and its wheel.
# llama-cpp-python has no Linux wheel: it compiles (~7 min, once per build), always with GGML_NATIVE=OFF and the
# instruction sets named. "portable" is the AVX2 build every x86-64 kiosk CPU runs; "avx512" adds
# AVX-512/VBMI/VNNI/BF16 without AMX (first token 0.63x, bench/results/latency_50_avx512.md); "amx" adds llama.cpp's
# AMX kernels, compiled from the pinned source with their tile setup fixed (packaging/patch_llama_amx.py): unfixed,
# as in a native build, the first decode on an AMX CPU dies, which is why native builds were said to crash here.
# Each build is made once into its own wheelhouse, as pip's wheel cache does not tell CMAKE_ARGS apart.

LLAMA_AVX512_FLAGS="avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi avx512_vnni avx512_bf16"
LLAMA_AMX_FLAGS="amx_tile amx_int8"
LLAMA_AMX_PATCH=p2  # bump when packaging/patch_llama_amx.py changes: a new wheelhouse, so the build is redone

# "amx" when this CPU has AMX and the kernel lets a process use it, else "avx512" when it has every instruction set
# the avx512 build uses, else "portable".
llama_build_for_this_cpu() {
  local flags flag
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  for flag in $LLAMA_AVX512_FLAGS; do
    case "$flags" in *" $flag "*) ;; *) echo portable; return ;; esac
  done
  for flag in $LLAMA_AMX_FLAGS; do
    case "$flags" in *" $flag "*) ;; *) echo avx512; return ;; esac
  done
  if amx_permitted; then echo amx; else echo avx512; fi
}

# Linux hands out AMX's tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18);
# a kernel or hypervisor that refuses it would make every tile instruction fault.
amx_permitted() {
  "${PYTHON:-python3}" -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).syscall(158, 0x1023, 18) != 0)' 2>/dev/null
}

# The pinned llama-cpp-python source, unpacked into directory $2, with llama.cpp's AMX tile setup fixed
# (packaging/patch_llama_amx.py says what was wrong); prints the source directory.
llama_amx_source() {
  local pin=$1 work=$2 source
  .venv/bin/python -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: -d "$work" "$pin" >&2
  tar xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  source=$(ls -d "$work"/llama_cpp_python-*/)
  .venv/bin/python packaging/patch_llama_amx.py "$source" >&2 || return 2
  echo "$source"
}

# The wheel of llama-cpp-python (the version pinned in pyproject.toml) for build $1, compiled when missing.
llama_wheel() {
  local build=$1 pin cmake no_cache wheelhouse source work avx512
  pin=$(grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)
  source=$pin
  avx512="-DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON"
  case "$build" in
    portable) cmake="-DGGML_NATIVE=OFF"; no_cache="" ;;
    avx512) cmake="$avx512 -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"; no_cache="--no-cache-dir" ;;
    amx) cmake="$avx512 -DGGML_AMX_TILE=ON -DGGML_AMX_INT8=ON -DGGML_AMX_BF16=ON"; no_cache="--no-cache-dir" ;;
    *) echo "llama build is auto, portable, avx512 or amx, not '$build'" >&2; return 2 ;;
  esac
  wheelhouse="${XDG_CACHE_HOME:-$HOME/.cache}/bio-memory-kiosk/llama-$build-${pin#*==}"
  [ "$build" != amx ] || wheelhouse="$wheelhouse-$LLAMA_AMX_PATCH"
  if ! ls "$wheelhouse"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "compiling llama-cpp-python ($build build, ~7 min once)" >&2
    if [ "$build" = amx ]; then
      work=$(mktemp -d)
      source=$(llama_amx_source "$pin" "$work") || return 2
    fi
    CMAKE_ARGS="$cmake" .venv/bin/python -m pip wheel --quiet --disable-pip-version-check $no_cache --no-deps \
      -w "$wheelhouse" "$source" >&2
    [ -z "${work:-}" ] || rm -rf "$work"
  fi
  ls "$wheelhouse"/llama_cpp_python-*.whl | head -n 1
}
