#!/usr/bin/env bash
# The GPU check of jaxcontam (experiments/accelerator/README.md). Writes accelerator.json and accelerator.md under
# $OUT, or ./accelerator-out where $OUT is unset.
#
#   experiments/accelerator/run.sh            # the GPU machine: install from the checkout and wheels/, then measure
#   experiments/accelerator/run.sh --smoke    # anywhere: every step at tiny sizes on the CPU, jaxcontam as installed
#   experiments/accelerator/run.sh --smoke --install   # the same after the GPU machine's install (a rehearsal)
#   experiments/accelerator/run.sh --script compile_cache.py   # another script of this folder, installed the same way
#
# The GPU machine has no network: jaxcontam goes in with `pip install --no-index --no-deps` from this checkout
# (its build backend, setuptools, is there) and from wheels/ (the packages it lacks; built by wheels.sh here and
# carried along, being git-ignored), into a folder put first on PYTHONPATH. Other arguments go to check.py
# (`python -m experiments.accelerator.check`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${OUT:-$repo/accelerator-out}
python=${PYTHON:-python3}
smoke=0 forced=0 script=check.py args=()
expect_script=0
for arg in "$@"; do
  if [ "$expect_script" = 1 ]; then script=$arg expect_script=0; continue; fi
  case "$arg" in
    --script) expect_script=1 ;;
    --smoke) smoke=1 args+=("$arg") ;;
    --install) forced=1 ;;
    *) args+=("$arg") ;;
  esac
done
install=$(( forced || !smoke ))
[ -n "${JAXCONTAM_CHECK_NO_INSTALL:-}" ] && install=0
mkdir -p "$out"
if [ "$install" = 1 ]; then
  site=${JAXCONTAM_CHECK_SITE:-/tmp/jaxcontam-site}
  compgen -G "$here/wheels/*.whl" >/dev/null || {
    echo "no wheels in $here/wheels: run experiments/accelerator/wheels.sh, and carry that folder" >&2
    exit 2
  }
  start=$(date +%s)
  "$python" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir --upgrade \
    --target "$site" "$here"/wheels/*.whl "$repo"
  echo "installed jaxcontam and $(ls "$here"/wheels/*.whl | wc -l) wheels into $site in $(( $(date +%s) - start )) s"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"
fi
if [ "$smoke" = 1 ]; then  # tiny programs: XLA's optimisation passes would cost more than they save
  export JAX_PLATFORMS=${JAX_PLATFORMS:-cpu} JAX_DISABLE_MOST_OPTIMIZATIONS=${JAX_DISABLE_MOST_OPTIMIZATIONS:-1}
else
  export XLA_PYTHON_CLIENT_PREALLOCATE=false  # torch shares the GPU in this process
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
# the script runs as a module of the experiments package: the checkout last on PYTHONPATH (after an install's site, so
# the installed jaxcontam wins there) and -P so that the working folder is not put first
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$repo"
exec "$python" -P -m "experiments.accelerator.${script%.py}" --out "$out" "${args[@]}"
