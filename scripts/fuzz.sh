#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (Swift's fuzzer instrumentation).
#
#   scripts/fuzz.sh --list                      the targets
#   scripts/fuzz.sh TARGET [--seconds N] [--jobs J] [-- LIBFUZZER-FLAGS...]
#   scripts/fuzz.sh --all --seconds N           every target, N seconds each
#   scripts/fuzz.sh --build                     only build them
#
# The targets live in Fuzz/Targets/<Target>/ and are declared in Package.swift only when
# SCMESH_FUZZ is set, so the normal build never sees them; they build here in release
# mode with AddressSanitizer (LeakSanitizer included) and libFuzzer's coverage
# instrumentation, in their own scratch path (.build-fuzz). Each run starts from the
# committed seeds in Fuzz/Corpus/<Target>/ and keeps what it learns in
# .build-fuzz/corpus/<Target>/ (not committed). Exit status: 0 when the time ran out with
# nothing found; non-zero on a crash, a leak, a timeout (-timeout=10 s per input) or an
# out-of-memory input (-rss_limit_mb=2048); the input is written to
# .build-fuzz/findings/<Target>/ — add it to the corpus once the bug is fixed.
# FUZZ_CONFIG=debug builds them unoptimized instead (same sanitizers and coverage; fewer
# runs a second, but the build of the node-level targets takes about half as long):
# scripts/test.sh's few seconds per target are a smoke run, not a search.
# FUZZ_PREBUILT=1 skips the build of targets already built (see the end of this file).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(FuzzFrame FuzzReassembler FuzzHandshake FuzzIdentityProof FuzzEnvelope FuzzControlRequest FuzzConfig FuzzATT)
SCRATCH=.build-fuzz
CONFIG=${FUZZ_CONFIG:-release}
case "$CONFIG" in release|debug) ;; *) echo "fuzz.sh: FUZZ_CONFIG must be release or debug, not '$CONFIG'" >&2; exit 64 ;; esac
RUNTIME_DIR=$(dirname "$(readlink -f "$(command -v swift)")")/../lib/clang
NO_MAIN=$(ls "$RUNTIME_DIR"/*/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a 2>/dev/null | head -1 || true)

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 64; }

build() {
  [ -n "$NO_MAIN" ] || { echo "fuzz.sh: libclang_rt.fuzzer_no_main not found under $RUNTIME_DIR" >&2; exit 1; }
  # -sanitize=fuzzer goes to the frontend only (coverage instrumentation); the link gets
  # libFuzzer without its main(), since SwiftPM gives each executable its own main,
  # which hands over to LLVMFuzzerRunDriver (Fuzz/Support).
  local flags=(-c "$CONFIG" --scratch-path "$SCRATCH"
    -Xswiftc -sanitize=address -Xswiftc -Xfrontend -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING
    -Xlinker "$NO_MAIN" -Xlinker -lstdc++)
  local target
  for target in "$@"; do
    SCMESH_FUZZ=1 swift build "${flags[@]}" --product "$target" 2>&1 \
      | grep -v -e "Cannot export local symbol" -e "^\[" || true
    [ -x "$SCRATCH/$CONFIG/$target" ] || { echo "fuzz.sh: building $target failed" >&2; exit 1; }
  done
}

run() {
  local target=$1 seconds=$2 jobs=$3; shift 3
  local corpus=$SCRATCH/corpus/$target findings=$SCRATCH/findings/$target
  mkdir -p "$corpus" "$findings"
  local seeds=Fuzz/Corpus/$target
  [ -d "$seeds" ] || seeds=
  local binary=$SCRATCH/$CONFIG/$target
  echo "== $target: ${seconds}s" >&2
  local log=$SCRATCH/$target.log status=0
  local fork=()
  [ "$jobs" -gt 1 ] && fork=(-fork="$jobs" -ignore_crashes=0)
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    "$binary" "$corpus" $seeds -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$findings/" -print_final_stats=1 "${fork[@]}" "$@" >"$log" 2>&1 || status=$?
  grep -E "stat::number_of_executed_units|^Done|ERROR|SUMMARY|Test unit written|fuzz check failed" "$log" >&2 || true
  if [ $status -ne 0 ]; then
    echo "fuzz.sh: $target found a problem (exit $status); log: $log, input in $findings/" >&2
  fi
  return $status
}

[ $# -ge 1 ] || usage
case "$1" in
  --list) printf '%s\n' "${TARGETS[@]}"; exit 0 ;;
  --build) build "${TARGETS[@]}"; exit 0 ;;
  -h|--help) usage ;;
esac

selected=() seconds=60 jobs=1 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --all) selected=("${TARGETS[@]}") ;;
    --seconds) seconds=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) usage ;;
    *) printf '%s\n' "${TARGETS[@]}" | grep -qx "$1" || { echo "fuzz.sh: no target $1 (see --list)" >&2; exit 64; }
       selected+=("$1") ;;
  esac
  shift
done
[ ${#selected[@]} -gt 0 ] || usage

# FUZZ_PREBUILT=1: run what an earlier `--build` made (scripts/test.sh builds them in the
# background beside its other steps); a target not built yet is still built.
if [ "${FUZZ_PREBUILT:-}" = 1 ]; then
  missing=()
  for target in "${selected[@]}"; do [ -x "$SCRATCH/$CONFIG/$target" ] || missing+=("$target"); done
  [ ${#missing[@]} -eq 0 ] || build "${missing[@]}"
else
  build "${selected[@]}"
fi
failed=0
for target in "${selected[@]}"; do
  run "$target" "$seconds" "$jobs" "${extra[@]}" || failed=1
done
exit $failed
