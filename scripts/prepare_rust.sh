#!/bin/bash
# Build the crates every HumanEval-X Rust program uses (rand, regex, md5, and their
# dependencies) ONCE, offline, with Debian's rustc and cargo, into a directory the sandbox can
# see read-only (it sees /usr). Programs are then compiled in the sandbox with plain rustc:
#   rustc -L dependency=$DEST --extern rand=$DEST/librand-<hash>.rlib ...
# Cargo cannot run in the sandbox (no network, no writable registry cache, and resolving a
# workspace per submission costs seconds); prebuilt rlibs make a program's compile a single
# rustc invocation.
#
# Sources: Debian's librust-*-dev packages under /usr/share/cargo/registry, used as a cargo
# "directory source" (no crates.io). Idempotent: does nothing when $DEST already holds a build
# made by the same rustc from the same crate sources. Run as root (make install does).
set -euo pipefail

RUSTC=/usr/bin/rustc
CARGO=/usr/bin/cargo
REGISTRY=/usr/share/cargo/registry
DEST=/usr/local/lib/assay/rust  # assay.languages.rust.CRATE_DIR
CRATES=(rand regex md5)
# Cargo.toml requirements, matching Debian bookworm's librust-rand-dev, -regex-dev, -md5-dev.
REQS=('rand = "0.8"' 'regex = "1"' 'md5 = "0.7"')

for tool in "$RUSTC" "$CARGO"; do
    if [ ! -x "$tool" ]; then
        echo "prepare_rust: $tool is missing (apt-get install rustc cargo)" >&2
        exit 1
    fi
done
for crate in "${CRATES[@]}"; do
    if ! compgen -G "$REGISTRY/$crate-[0-9]*" >/dev/null; then
        echo "prepare_rust: no $crate sources in $REGISTRY (apt-get install librust-$crate-dev)" >&2
        exit 1
    fi
done

# What the build depends on: the compiler and the exact crate sources available.
identity="$("$RUSTC" -vV)
$(cd "$REGISTRY" && ls -d -- */ | LC_ALL=C sort | tr -d /)
${REQS[*]}"
if [ -f "$DEST/identity" ] && [ -f "$DEST/externs" ] && [ "$(cat "$DEST/identity")" = "$identity" ]; then
    exit 0
fi

work=$(mktemp -d)
stage="$DEST.new.$$"
trap 'rm -rf "$work" "$stage"' EXIT
rm -rf "$DEST".new.*
mkdir -p "$work/crate/src" "$work/home"
cat >"$work/home/config.toml" <<CFG
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "$REGISTRY"

[net]
offline = true
CFG
{
    echo '[package]'
    echo 'name = "assay-rust-crates"'
    echo 'version = "0.0.0"'
    echo 'edition = "2021"'
    echo
    echo '[dependencies]'
    printf '%s\n' "${REQS[@]}"
    echo
    echo '[profile.release]'
    echo 'opt-level = 3'
    echo 'debug = false'
} >"$work/crate/Cargo.toml"
printf 'pub use md5;\npub use rand;\npub use regex;\n' >"$work/crate/src/lib.rs"

echo "prepare_rust: building ${CRATES[*]} with $("$RUSTC" --version)"
(
    cd "$work/crate"
    # A clean environment: no rustup shims on PATH, no user cargo config or flags.
    env -i PATH=/usr/bin:/bin HOME="$work/home" CARGO_HOME="$work/home" \
        RUSTC="$RUSTC" CARGO_TARGET_DIR="$work/target" \
        "$CARGO" build --release --offline --quiet --jobs 2
)

mkdir -p "$stage"
cp "$work/target/release/deps/"lib*.rlib "$stage/"
rm -f "$stage"/libassay_rust_crates-*.rlib
: >"$stage/externs"
for crate in "${CRATES[@]}"; do
    found=("$stage/lib$crate"-*.rlib)
    if [ "${#found[@]}" -ne 1 ] || [ ! -f "${found[0]}" ]; then
        echo "prepare_rust: expected one lib$crate-*.rlib, found: ${found[*]}" >&2
        exit 1
    fi
    echo "$crate=$(basename "${found[0]}")" >>"$stage/externs"
done
printf '%s\n' "$identity" >"$stage/identity"
chmod 755 "$stage"
chmod 644 "$stage"/*

mkdir -p "$(dirname "$DEST")"
rm -rf "$DEST.old"
if [ -e "$DEST" ]; then mv "$DEST" "$DEST.old"; fi
mv "$stage" "$DEST"
rm -rf "$DEST.old"
echo "prepare_rust: installed $(wc -l <"$DEST/externs") crates and their dependencies in $DEST"
