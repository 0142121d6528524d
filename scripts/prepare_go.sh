#!/bin/bash
# Compile the Go packages every HumanEval-X Go program imports (testify's assert, plus require,
# and their dependencies go-spew, go-difflib, yaml.v3) ONCE, offline, with Debian's Go, into a
# GOPATH the sandbox can see read-only (it sees /usr). Builds in the sandbox put this GOPATH
# first (then Debian's /usr/share/gocode): the go command finds the installed archives up to
# date and links them instead of compiling ~2 MB of testify and yaml sources per build.
# Measured: a cold `go test -c` of a HumanEval-X program takes ~7 s of compiling from source,
# ~2 s with these archives. Without this script Go still works, only slower.
#
# The archives are only used if the go command computes the same build IDs in the sandbox as
# here, which depend on the package directories, the toolchain and the build settings: so the
# packages are installed in place at $DEST (never moved afterwards) with the same settings the
# sandbox build uses (src/assay/languages/go.py), and the script checks at the end that `go list`
# reports them up to date. Idempotent: does nothing when $DEST holds a build made by the same
# go from the same sources. Run as root (make install does).
set -euo pipefail

GO=/usr/bin/go
SRC=/usr/share/gocode/src
DEST=${ASSAY_GO_DIR:-/usr/local/lib/assay/go}
# Source trees copied (whole repositories) and the packages installed from them.
TREES=(github.com/stretchr/testify github.com/davecgh/go-spew github.com/pmezard/go-difflib
    gopkg.in/yaml.v3)
PACKAGES=(github.com/stretchr/testify/assert github.com/stretchr/testify/require
    github.com/davecgh/go-spew/spew github.com/pmezard/go-difflib/difflib gopkg.in/yaml.v3)

if [ ! -x "$GO" ]; then
    echo "prepare_go: $GO is missing (apt-get install golang-go)" >&2
    exit 1
fi
for tree in "${TREES[@]}"; do
    if [ ! -d "$SRC/$tree" ]; then
        echo "prepare_go: no $tree in $SRC (apt-get install golang-github-stretchr-testify-dev)" >&2
        exit 1
    fi
done

# What the build depends on: the toolchain and the exact sources.
identity="$("$GO" version)
$(cd "$SRC" && find "${TREES[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum)"
if [ -f "$DEST/identity" ] && [ "$(cat "$DEST/identity")" = "$identity" ]; then
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The same settings as the sandbox build (assay.languages.go), except GOCACHE and GOMAXPROCS,
# which do not enter build IDs.
go_env() {
    env -i PATH=/usr/bin:/bin HOME="$work" TMPDIR="$work" GO111MODULE=off \
        GOPATH="$DEST:/usr/share/gocode" GOCACHE="$work/cache" GOENV=off GOFLAGS= GOPROXY=off \
        GOTOOLCHAIN=local CGO_ENABLED=1 "$@"
}

echo "prepare_go: installing ${PACKAGES[*]} with $("$GO" version)"
rm -rf "$DEST"
mkdir -p "$DEST/src"
for tree in "${TREES[@]}"; do
    mkdir -p "$DEST/src/$(dirname "$tree")"
    cp -r "$SRC/$tree" "$DEST/src/$tree"
done
go_env "$GO" install "${PACKAGES[@]}"

stale=$(go_env "$GO" list -f '{{if .Stale}}{{.ImportPath}}: {{.StaleReason}}{{end}}' "${PACKAGES[@]}")
if [ -n "$stale" ]; then
    echo "prepare_go: installed packages are not up to date for the go command:" >&2
    echo "$stale" >&2
    exit 1
fi
chmod -R a+rX,go-w "$DEST"
# Written last: its presence means the build is complete.
printf '%s\n' "$identity" >"$DEST/identity"
chmod 644 "$DEST/identity"
echo "prepare_go: installed $(find "$DEST/pkg" -name '*.a' | wc -l) package archives in $DEST"
