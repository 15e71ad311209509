#!/usr/bin/env bash
# Build experiments/accelerator/wheels/: the wheels jaxcontam needs that the lent GPU machine lacks (it has no
# network). That machine's Python 3.12 holds jax 0.11, torch, transformers 5.17, tokenizers, safetensors, pyarrow,
# pandas, scipy, matplotlib, click, requests, pyyaml, xxhash, fsspec, huggingface-hub and typer; it lacks gguf,
# datasets (and its dill and multiprocess), universal-pathlib (and pathlib-abc) and zstandard, and pyproject.toml
# asks for transformers >= 5.23. The folder is git-ignored; run.sh installs it with --no-index --no-deps.
#
#   experiments/accelerator/wheels.sh            # PYTHON=python3 by default: any pip that reaches the registry
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
folder="$here/wheels"
python=${PYTHON:-python3}
limit_mb=40
wheels=(  # one version each: two of one name stop the install
  gguf==0.19.0
  datasets==5.2.0
  dill==0.4.1
  multiprocess==0.70.19
  universal-pathlib==0.3.10
  pathlib-abc==0.5.2
  zstandard==0.25.0
  transformers==5.24.0
)
rm -rf "$folder" && mkdir -p "$folder"
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$folder" "${wheels[@]}" 2> >(grep -v "^WARNING: Location" >&2)
count=$(find "$folder" -name '*.whl' | wc -l)
[ "$count" -eq "${#wheels[@]}" ] || { echo "expected ${#wheels[@]} wheels, got $count" >&2; exit 1; }
size_kb=$(du -sk "$folder" | cut -f1)
echo "$folder: $count wheels, $((size_kb / 1024)) MB"
[ "$size_kb" -lt $((limit_mb * 1024)) ] || { echo "over the ${limit_mb} MB limit" >&2; exit 1; }
