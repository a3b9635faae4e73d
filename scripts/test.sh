#!/usr/bin/env bash
# Run the test suite in .venv (created by scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export ORT_DISABLE_TELEMETRY=1 ANONYMIZED_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export MPLBACKEND=Agg
# --random-order: modules in a random order and the tests within each too, so a test that leaks
# state into another fails here; the seed is printed first and under the result line
# ("random order: seed N, ...", tests/conftest.py) and `bash scripts/test.sh --random-order-seed=N`
# repeats that order.
exec .venv/bin/python -m pytest -q --random-order "$@"
