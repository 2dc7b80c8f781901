#!/usr/bin/env bash
# Builds crates/weft-wasm for the browser and Node.js: web/pkg/ gets
# weft_wasm.js (ES module glue), weft_wasm.d.ts and weft_wasm_bg.wasm.
#
# Needs wasm-bindgen-cli at the version of the wasm-bindgen crate in
# Cargo.lock (`cargo install wasm-bindgen-cli --version <it>`). Builds with
# rustup's own wasm32-unknown-unknown target where it is installed
# (`rustup target add wasm32-unknown-unknown`, the normal route). Where
# rustup has no such target and cannot download it (some build machines),
# it falls back to Debian's rustc-web, cargo-web, rust-web-src and lld,
# linked as the rustup toolchain "web", building std from source.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
target=wasm32-unknown-unknown
export CARGO_TARGET_DIR="$root/target/wasm"
# The release profile (fat LTO), with panics aborting: wasm32 has no
# unwinding.
abort=(--config 'profile.release.panic="abort"')

if rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    cargo build --release "${abort[@]}" -p weft-wasm --target "$target"
else
    if ! rustup toolchain list | grep -q '^web'; then
        if [ ! -x /usr/bin/rustc ] || [ ! -d /usr/lib/rustlib/src ] || ! command -v wasm-ld >/dev/null; then
            echo "no wasm32 toolchain: run 'rustup target add $target', or install Debian's rustc-web cargo-web rust-web-src lld" >&2
            exit 1
        fi
        rustup toolchain link web /usr
    fi
    RUSTC_BOOTSTRAP=1 RUSTFLAGS="-C linker=wasm-ld" \
        cargo +web build --release "${abort[@]}" -p weft-wasm --target "$target" \
        -Zbuild-std=std,panic_abort
fi

wasm="$CARGO_TARGET_DIR/$target/release/weft_wasm.wasm"
want="$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')"
have="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')"
if [ "$have" != "$want" ]; then
    echo "wasm-bindgen-cli $want is needed (found '${have:-none}'): cargo install wasm-bindgen-cli --version $want" >&2
    exit 1
fi
# --debug: the glue checks argument types (a number where a string goes
# would otherwise corrupt memory, a trap); a typeof per argument.
wasm-bindgen --target web --weak-refs --debug --out-dir web/pkg "$wasm"
ls -l web/pkg
