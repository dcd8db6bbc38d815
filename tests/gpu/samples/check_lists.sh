#!/usr/bin/env bash
# check_lists.sh: the CPU-side check of the cuda-samples step (ctest samples_lists, label cpu).
#
#   1. samples.list and skipped.list are well-formed: CATEGORY/NAME entries, no sample twice, no
#      two samples of one NAME (the bundle keeps samples/NAME/NAME), no sample in both lists, a
#      reason on every skipped line, no quotes or shell characters in the arguments (run_samples.sh
#      splits them on spaces); every line of samples-static.list is a line of samples.list;
#   2. normalize_output.sh drops what it says it drops and keeps the rest (its examples below);
#   3. against the samples' tree, when there is one: every listed sample exists, and every sample
#      of Samples/*/ is in exactly one list. The tree is AGILEOS_CUDA_SAMPLES_SRC (a work tree), or
#      the mirror AGILEOS_CUDA_SAMPLES_MIRROR (/work/.mirror/NVIDIA+cuda-samples/repo) at
#      AGILEOS_CUDA_SAMPLES_REF (v13.0), read with git ls-tree. Without either (CI: a clean checkout,
#      no network), 1 and 2 still run and fail the test if they fail; then it says
#      "SKIPPED: ..." and exits 77.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
list="${1:-$here/samples.list}"
skipped="${2:-$here/skipped.list}"
problems=0
problem() {
  echo "FAIL $*"
  problems=$((problems + 1))
}

entries() { sed -e 's/#.*//' "$1" | awk 'NF'; }

# ------------------------------------------------------------------ 1. the lists' form

declare -A listed=() names=() skip_reason=()
while read -r sample arguments; do
  [[ "$sample" =~ ^[0-9]_[A-Za-z_]+/[A-Za-z0-9_]+$ ]] || problem "samples.list: '$sample' is not CATEGORY/NAME"
  [[ -z "${listed[$sample]:-}" ]] || problem "samples.list: $sample is listed twice"
  listed[$sample]=1
  name="${sample##*/}"
  [[ -z "${names[$name]:-}" ]] || problem "samples.list: two samples named $name (${names[$name]}, $sample)"
  names[$name]="$sample"
  if [[ "$arguments" =~ [\"\'\`\$\;\&\|\<\>\(\)\\] ]]; then
    problem "samples.list: $sample: arguments with quotes or shell characters ($arguments)"
  fi
done < <(entries "$list")

while read -r sample reason; do
  [[ "$sample" =~ ^[0-9]_[A-Za-z_]+/([A-Za-z0-9_]+|\*)$ ]] || problem "skipped.list: '$sample' is not CATEGORY/NAME or CATEGORY/*"
  [[ -n "$reason" ]] || problem "skipped.list: $sample has no reason"
  [[ -z "${skip_reason[$sample]:-}" ]] || problem "skipped.list: $sample is there twice"
  skip_reason[$sample]="${reason:-?}"
  [[ -z "${listed[$sample]:-}" ]] || problem "$sample is in samples.list and in skipped.list"
done < <(entries "$skipped")
((${#listed[@]} > 0)) || problem "samples.list names no sample"
echo "lists: ${#listed[@]} samples to run, ${#skip_reason[@]} skipped entries"

# samples-static.list: each line is a line of samples.list (the same sample, the same arguments).
static_list="${3:-$here/samples-static.list}"
declare -A list_lines=()
while read -r line; do list_lines["$line"]=1; done < <(entries "$list" | sed -e 's/[[:space:]]*$//' -e 's/[[:space:]]\+/ /g')
while read -r line; do
  [[ -n "${list_lines[$line]:-}" ]] || problem "samples-static.list: '$line' is not a line of samples.list"
done < <(entries "$static_list" | sed -e 's/[[:space:]]*$//' -e 's/[[:space:]]\+/ /g')

# varies_natively.list: sample, anchor, first and last line after it (tab-separated), for a
# sample samples.list names.
while IFS=$'\t' read -r sample anchor first last extra; do
  [[ -n "${names[$sample]:-}" ]] || problem "varies_natively.list: $sample is not a sample of samples.list"
  [[ -n "$anchor" && -z "$extra" ]] || problem "varies_natively.list: $sample: want 4 tab-separated fields"
  if ! [[ "$first" =~ ^[0-9]+$ && "$last" =~ ^[0-9]+$ ]] || ((first > last)); then
    problem "varies_natively.list: $sample: '$first' to '$last' is not a range of lines"
  fi
done < <(grep -v -E '^(#|$)' "$here/varies_natively.list")

# ------------------------------------------------------------------ 2. the normalizer

normalized="$(
  "$here/normalize_output.sh" <<'EOF'
GPU Device 0: "Hopper" with compute capability 9.0
CUDA Driver Version / Runtime Version          13.0 / 13.0
Performance= 1234.56 GFlop/s, Time= 0.107 msec, Size= 131072 Ops, WorkgroupSize= 1024 threads/block
Processing time: 12.345000 (ms)
time spent executing by the GPU: 3.21
Bandwidth = 44.5 GB/s
Throughput = 0.1234 GB/s, Time = 0.00012 s, Size = 16777216 Elements
Elapsed: 0.5
Speedup 3.2x
Kernel took 12ms
 8 x 8 blocks: 1.23 us
pointer 0x7f3a2c000000 and value 0x10
Using 4 streams, 100 times, sum = 42
Result = PASS
EOF
)"
expected='GPU Device 0: "Hopper" with compute capability 9.0
CUDA Driver Version / Runtime Version          13.0 / 13.0
pointer 0xADDR and value 0x10
Using 4 streams, 100 times, sum = 42
Result = PASS'
if [[ "$normalized" != "$expected" ]]; then
  problem "normalize_output.sh: unexpected output:"
  diff <(echo "$expected") <(echo "$normalized") | sed 's/^/    /'
fi

# ------------------------------------------------------------------ 3. against the tree

mirror="${AGILEOS_CUDA_SAMPLES_MIRROR:-/work/.mirror/NVIDIA+cuda-samples/repo}"
ref="${AGILEOS_CUDA_SAMPLES_REF:-v13.0}"
tree=()
if [[ -n "${AGILEOS_CUDA_SAMPLES_SRC:-}" && -d "$AGILEOS_CUDA_SAMPLES_SRC/Samples" ]]; then
  source_name="$AGILEOS_CUDA_SAMPLES_SRC"
  mapfile -t tree < <(cd "$AGILEOS_CUDA_SAMPLES_SRC" && find Samples -mindepth 3 -maxdepth 3 -name CMakeLists.txt |
    sed 's|^Samples/||; s|/CMakeLists.txt$||' | sort)
elif git --git-dir="$mirror" rev-parse --verify -q "$ref^{commit}" >/dev/null 2>&1; then
  source_name="$mirror at $ref"
  mapfile -t tree < <(git --git-dir="$mirror" ls-tree -r --name-only "$ref" -- Samples |
    awk -F/ 'NF == 4 && $4 == "CMakeLists.txt" { print $2 "/" $3 }' | sort)
fi

if ((${#tree[@]} == 0)); then
  ((problems == 0)) || { echo "$problems problem(s)"; exit 1; }
  echo "SKIPPED: the check against the samples' tree (no cuda-samples here: set AGILEOS_CUDA_SAMPLES_SRC," \
    "or AGILEOS_CUDA_SAMPLES_MIRROR to a mirror with $ref); the lists' form and the normalizer passed"
  exit 77
fi

declare -A in_tree=()
for sample in "${tree[@]}"; do
  in_tree[$sample]=1
  if [[ -z "${listed[$sample]:-}" && -z "${skip_reason[$sample]:-}" && -z "${skip_reason[${sample%%/*}/*]:-}" ]]; then
    problem "$sample is in neither samples.list nor skipped.list"
  fi
done
for sample in "${!listed[@]}"; do
  [[ -n "${in_tree[$sample]:-}" ]] || problem "samples.list: $sample is not in $source_name"
done
for sample in "${!skip_reason[@]}"; do
  [[ "$sample" == */\* || -n "${in_tree[$sample]:-}" ]] || problem "skipped.list: $sample is not in $source_name"
done
echo "tree: ${#tree[@]} samples in $source_name"
if ((problems)); then
  echo "$problems problem(s)"
  exit 1
fi
echo "PASS the samples' lists"
