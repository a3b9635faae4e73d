#!/usr/bin/env bash
# Run the test suite in .venv (created by scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export ORT_DISABLE_TELEMETRY=1 ANONYMIZED_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export MPLBACKEND=Agg
exec .venv/bin/python -m pytest -q "$@"
