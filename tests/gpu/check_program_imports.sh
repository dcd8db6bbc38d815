#!/usr/bin/env bash
# Checks that every given CUDA program imports only runtime entry points listed in
# the supported-API file, so that the GPU suite tests the shim on what it
# implements rather than on cudaErrorNotSupported.
#
# Usage: check_program_imports.sh SUPPORTED_API_FILE PROGRAM...
# Exit status: 0 if every import is listed, 1 otherwise (each offender printed).
set -euo pipefail

supported_file="$1"
shift
declare -A supported=()
while read -r symbol _; do
  [[ -z "$symbol" || "$symbol" == \#* ]] && continue
  supported[$symbol]=1
done <"$supported_file"

status=0
for program in "$@"; do
  imports="$(nm -D --undefined-only "$program" | awk '{print $2}' | sed 's/@.*//' | grep -E '^_*cuda' || true)"
  count=0
  for symbol in $imports; do
    count=$((count + 1))
    if [[ -z "${supported[$symbol]:-}" ]]; then
      echo "FAIL: $(basename "$program") imports $symbol, which is not in $(basename "$supported_file")"
      status=1
    fi
  done
  echo "$(basename "$program"): $count CUDA imports checked"
done
exit "$status"
