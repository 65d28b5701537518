#!/bin/sh
# Runtime.ExportsOnlyItsOwnAndLibcNames: every name libstrata.so exports is
# its C API (strata_*) or a function of the C library it interposes. Any
# other exported name (a C++ template the runtime instantiated, an internal
# helper left in the extern "C" region) would bind the traced program's own
# definition of that name to the runtime's, the runtime being preloaded first
# in the global scope.
#   exports_check.sh path/to/libstrata.so
set -eu
lib=$1
libc=$(ldd "$lib" | awk '$1 == "libc.so.6" { print $3 }')
[ -f "$libc" ] || { echo "libc.so.6 of $lib not found (ldd)"; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
names() { nm -D --defined-only "$1" | awk '{ print $3 }' | sed 's/@.*//' | sort -u; }
names "$lib" > "$dir/ours"
names "$libc" > "$dir/libc"
# The check must see the library's exports: the API and an interposer.
grep -qx 'strata_enabled' "$dir/ours" || { echo "$lib exports no strata_enabled"; exit 2; }
grep -qx 'open64' "$dir/ours" || { echo "$lib exports no open64"; exit 2; }
grep -v '^strata_' "$dir/ours" | comm -23 - "$dir/libc" > "$dir/others"
if [ -s "$dir/others" ]; then
  echo "$lib exports names that are neither strata_* nor the C library's:"
  cat "$dir/others"
  exit 1
fi
echo "$(wc -l < "$dir/ours") names exported, all strata_* or the C library's"
