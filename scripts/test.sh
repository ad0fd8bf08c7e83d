#!/usr/bin/env bash
# Install harness with its test dependencies and run the test suite.
# Usage: bash scripts/test.sh [pytest args]     e.g. bash scripts/test.sh -m "not slow"
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet -e '.[torch,test]'
# The tests install plugin packages (tests/fixtures/harness_demo_plugin,
# examples/harness-examplechip) offline with --no-build-isolation: their build backend must be
# here. The examplechip tests train through the PyTorch plugin (torch, transformers: above).
python3 -m pip install --quiet 'setuptools>=68'
# Headless Chromium renders the HTML report in tests/harness/report (Debian package).
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "warning: chromium not installed; browser tests will skip"
fi
# A one-node Slurm cluster (slurmctld, slurmd, munged) runs on localhost in the slow Slurm test.
if ! command -v slurmctld >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null) \
    || echo "warning: slurm-wlm/munge not installed; the Slurm test will skip"
fi
python3 -m pytest "$@"
