#!/bin/sh
# make_lizard_target.sh: builds assets/lizard20.png, the lizard preset's target (docs/design.md section 4).
#
# How the target is made, exactly:
#   1. Debian's fonts-noto-color-emoji provides NotoColorEmoji.ttf, a CBDT font whose only strike is
#      109 px (its colour bitmaps are 136x128). Pillow (python3-pil) renders the lizard U+1F98E from it
#      at that native size with embedded_color=True onto a transparent RGBA canvas.
#   2. The canvas is cropped to the glyph's alpha bounding box and padded with transparency to a
#      centred square, so the lizard fills the frame the same way whatever the glyph's side bearings.
#   3. The square is converted to premultiplied alpha (Pillow's "RGBa") and shrunk to 20x20 with the
#      box (area-average) filter; averaging premultiplied values keeps transparent pixels from
#      bleeding colour into the edge.
#   4. The premultiplied R, G, B are written as an 8-bit RGB PNG with no alpha channel: that is the
#      emoji composited onto black. Because alpha is 1 everywhere, the loader's own premultiply
#      leaves it unchanged, and image_load_target(IMAGE_SILHOUETTE) marks a cell on where any
#      channel > 0.26.
#
# Usage: tools/make_lizard_target.sh [output.png [U+XXXX [MARGIN]]]   (default: assets/lizard20.png in
#        the repo; another emoji's code point draws its silhouette instead, as assets/targets/ holds;
#        MARGIN, 0 to 8 cells (default 0), shrinks the drawing to leave that many empty cells on every side)
# Needs root or sudo to install the two Debian packages if they are missing.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/../assets/lizard20.png"}
code=${2:-U+1F98E}
packages="fonts-noto-color-emoji python3-pil"

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ]; then as_root=""; else as_root="sudo"; fi
    echo "make_lizard_target: installing$missing"
    $as_root apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends $missing
fi

font=$(dpkg -L fonts-noto-color-emoji | grep '/NotoColorEmoji\.ttf$' | head -n 1)
if [ -z "$font" ]; then
    echo "make_lizard_target: NotoColorEmoji.ttf not found in fonts-noto-color-emoji" >&2
    exit 1
fi
# Debian's interpreter, where python3-pil is installed (a pyenv or venv python3 on PATH lacks it).
/usr/bin/python3 "$here/make_lizard_target.py" "$font" "$out" "$code" ${3:+"$3"}
