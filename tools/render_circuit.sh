#!/bin/sh
# Renders a circuit exported with `dlca export MODEL --format dot --out FILE.dot` as a PNG with
# Graphviz (Debian package graphviz). Usage: tools/render_circuit.sh FILE.dot [OUT.png]
# OUT defaults to FILE.png beside the input. Large circuits take a while; `-Gsize` limits the
# picture, e.g. DOT_FLAGS="-Gsize=40,40" tools/render_circuit.sh c.dot.
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 FILE.dot [OUT.png]" >&2
    exit 2
fi
in=$1
out=${2:-${in%.dot}.png}
if ! command -v dot >/dev/null 2>&1; then
    echo "render_circuit: 'dot' not found: apt-get install graphviz" >&2
    exit 1
fi
# shellcheck disable=SC2086
dot -Tpng ${DOT_FLAGS:-} -o "$out" "$in"
echo "render_circuit: wrote $out"
