#!/usr/bin/env bash
# Rehearse the GPU benchmark's command (docs/performance.md#gpu-benchmark) on this CPU machine, before a GPU
# session spends device minutes on it: an environment shaped like the bare CUDA image (what it has, not what
# the checkout's .venv has), a copy of the working tree without .git, the same wheel install line, and
# `gpu_bench.py --quick`. Session 34 found with these steps that an environment with the checkout's packages
# hides faults of the bare one (there the command's 8 languages left tiny:llama no training example; fixed).
# The tiny models are built here, with the checkout's packages, as the docs' command builds random:* here.
#
#   scripts/gpu_rehearsal.sh [extra gpu_bench.py options]     (needs PyPI; ~8 min on 2 cores)
#
# Python 3.11 here stands in for the image's 3.12 (the wheels are built for the Python that runs them).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${GPU_REHEARSAL_DIR:-/tmp/multimsd-gpu-rehearsal}
PY=${PYTHON:-python3}
PYV=$($PY -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
rm -rf "$WORK" && mkdir -p "$WORK/box" "$WORK/out"

# The image's packages that multimsd's training, decoding and scoring reach (scripts/wheelhouse.py lists the
# whole image); torch first, on its own: the CPU build (a plain requirement pulls the CUDA one).
$PY -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q torch==2.13.0
"$WORK/venv/bin/pip" install -q transformers==5.24.0 peft==0.21.2 accelerate==1.15.0 sentence-transformers \
    pyarrow pandas xxhash sacrebleu matplotlib scikit-learn pytest

# What the docs tell the user to prepare where PyPI is reachable: the wheels the image lacks, the models'
# tokenizers and configurations (here also the tiny models --quick uses), the commit.
cd "$ROOT"
.venv/bin/python scripts/wheelhouse.py --python-version "$PYV" --only datasets hydra-core liger-kernel bitsandbytes \
    --dest "$WORK/box/.gpu/wheels" >/dev/null
MULTIMSD_CACHE="$WORK/cache" .venv/bin/python -c "
from multimsd.training.models.offline import resolve_model_path as r
for name in ('tiny:llama', 'tiny:mbart'):
    r(name)"
tar -C "$WORK/cache" -cJf "$WORK/box/.gpu/cache.tar.xz" .
git rev-parse HEAD >"$WORK/box/.gpu/COMMIT"
git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$WORK/box"  # the tree, as the box gets it

# The box's command, as docs/performance.md writes it, with --quick.
cd "$WORK/box"
export PATH="$WORK/venv/bin:$PATH" OUT="$WORK/out"
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --target "$WORK/site" .gpu/wheels/*.whl
mkdir -p "$WORK/unpacked" && tar -xJf .gpu/cache.tar.xz -C "$WORK/unpacked"
export PYTHONPATH="$WORK/site:." MULTIMSD_CACHE="$WORK/unpacked" MULTIMSD_COMMIT="$(cat .gpu/COMMIT)" \
    PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_attention.py tests/test_kernels.py  # skip here: no CUDA
python3 benchmarks/gpu_bench.py --quick --languages de,en,es,fr,it,pt,ru,zh --models mbart --models qlora \
    --models llama --out "$OUT/bench.md" "$@"
echo "rehearsal passed: $OUT/bench.md"
