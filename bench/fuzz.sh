#!/usr/bin/env bash
# Long fuzzing of every parser, one target after another (not run in CI:
# go test runs only the committed corpus of each target).
#
#   bench/fuzz.sh [TARGET...]            e.g. bench/fuzz.sh FuzzOpen FuzzDump
#
# FUZZTIME       time per target (default 5m)
# FUZZPARALLEL   fuzzing processes per target (default: go's, one per CPU)
# FUZZCOPY=1     also copy the new interesting inputs into testdata
#
# Go keeps the inputs that reached new code in its cache ($GOCACHE/fuzz)
# and starts from them on the next run. The committed corpora hold only the
# seeds and the named regressions: a failing input, which go writes into
# the package's testdata/fuzz/TARGET itself, is renamed to say what it
# guards (the name is free text) and committed with its fix. FUZZCOPY=1
# copies the cache there too, for a look; do not commit those. Exits 1 if
# any target failed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5m}
module=$(go list -m)
cache=$(go env GOCACHE)/fuzz

# package:target, every Fuzz function of the repository.
all=(
  sparse:FuzzOpen
  merkle:FuzzParseSuperblock merkle:FuzzDecodeSuperblock merkle:FuzzNewGeometry merkle:FuzzVerifyDamage
  internal/cli:FuzzParseHex internal/cli:FuzzParseUUID internal/cli:FuzzTreeFlags
  fec:FuzzDecodeCodeword fec:FuzzParams
  internal/front/veritycheck:FuzzRootHashFile internal/front/veritycheck:FuzzDump internal/front/veritycheck:FuzzAVBCheck
  verity:FuzzAndroidSparseRuns verity:FuzzBootNames verity:FuzzAppendTail verity:FuzzParseTable verity:FuzzRootHashSignatureFile
  dm:FuzzDecode internal/pkcs7:FuzzParseVerify
  avb:FuzzParseVBMeta avb:FuzzParseImage avb:FuzzDecodePublicKey avb:FuzzSparseTruncate avb:FuzzVerifyVBMetaBlob avb:FuzzVBMetaWalkMemory
)
missing=$(comm -13 <(printf '%s\n' "${all[@]#*:}" | sort) \
  <(grep -rhoE '^func Fuzz[A-Za-z0-9_]+' --include='*_test.go' . | sed 's/^func //' | sort -u))
if [ -n "$missing" ]; then
  echo "fuzz.sh: add these targets to its list: $missing" >&2
  exit 2
fi

selected=()
if [ $# -eq 0 ]; then
  selected=("${all[@]}")
else
  for want in "$@"; do
    found=
    for t in "${all[@]}"; do [ "${t#*:}" = "$want" ] && selected+=("$t") && found=1; done
    [ -n "$found" ] || { echo "fuzz.sh: no target $want" >&2; exit 2; }
  done
fi

parallel=()
[ -n "${FUZZPARALLEL:-}" ] && parallel=(-parallel "$FUZZPARALLEL")
failed=()
for t in "${selected[@]}"; do
  pkg=${t%%:*} name=${t#*:}
  echo "== $pkg $name ($fuzztime)"
  # Minimizing each new input can take the whole default minute early on.
  if ! go test "./$pkg" -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -fuzzminimizetime 10s "${parallel[@]}"; then
    failed+=("$t")
    continue
  fi
  if [ "${FUZZCOPY:-0}" != 0 ] && [ -d "$cache/$module/$pkg/$name" ]; then
    mkdir -p "$pkg/testdata/fuzz/$name"
    n=0
    for f in "$cache/$module/$pkg/$name"/*; do
      [ -e "$pkg/testdata/fuzz/$name/${f##*/}" ] && continue
      cp "$f" "$pkg/testdata/fuzz/$name/" && n=$((n + 1))
    done
    echo "   $n new inputs in $pkg/testdata/fuzz/$name"
    go test "./$pkg" -run "^$name\$" >/dev/null
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failed: ${failed[*]} (inputs in their testdata/fuzz)" >&2
  exit 1
fi
