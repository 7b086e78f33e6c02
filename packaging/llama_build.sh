# Sourced by bootstrap.sh and build_bundle.sh: which llama-cpp-python build a CPU gets, and its wheel.
# llama-cpp-python has no Linux wheel: it compiles (~7 min, once per build). A native build segfaults on the
# first decode on AMX CPUs, hence GGML_NATIVE=OFF. "portable" is the AVX2 build every x86-64 kiosk CPU runs;
# "avx512" adds AVX-512/VBMI/VNNI/BF16 without AMX (first token 0.63x, bench/results/latency_50_avx512.md).
# Each build is made once into its own wheelhouse, as pip's wheel cache does not tell CMAKE_ARGS apart.

LLAMA_AVX512_FLAGS="avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi avx512_vnni avx512_bf16"

# "avx512" when this CPU has every instruction set the avx512 build uses, else "portable".
llama_build_for_this_cpu() {
  local flags flag
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  for flag in $LLAMA_AVX512_FLAGS; do
    case "$flags" in *" $flag "*) ;; *) echo portable; return ;; esac
  done
  echo avx512
}

# The wheel of llama-cpp-python (the version pinned in pyproject.toml) for build $1, compiled when missing.
llama_wheel() {
  local build=$1 pin cmake no_cache wheelhouse
  pin=$(grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)
  case "$build" in
    portable) cmake="-DGGML_NATIVE=OFF"; no_cache="" ;;
    avx512)
      cmake="-DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON \
        -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
      no_cache="--no-cache-dir" ;;
    *) echo "llama build is auto, portable or avx512, not '$build'" >&2; return 2 ;;
  esac
  wheelhouse="${XDG_CACHE_HOME:-$HOME/.cache}/bio-memory-kiosk/llama-$build-${pin#*==}"
  if ! ls "$wheelhouse"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "compiling llama-cpp-python ($build build, ~7 min once)" >&2
    CMAKE_ARGS="$cmake" .venv/bin/python -m pip wheel --quiet --disable-pip-version-check $no_cache --no-deps \
      -w "$wheelhouse" "$pin" >&2
  fi
  ls "$wheelhouse"/llama_cpp_python-*.whl | head -n 1
}
