#!/usr/bin/env python3
"""make_other_targets.py: writes assets/targets/, pictures the presets were never tuned on.

The image and lizard presets' defaults were chosen by sweeps on their own targets; these check
that the defaults carry to other pictures of the same sizes (`dlca sweep --preset image --target
assets/targets/boat16.png`, tools/scans/other-targets.txt):
  boat16.png, letters16.png  16x16 in the 8 binary colours, for the image preset (its start: zeros);
  letter20.png               a 20x20 silhouette (white on black), for the lizard preset (one seed cell).
The emoji silhouettes beside them come from tools/make_lizard_target.sh with another code point.
Drawn from the character maps below, standard library only (make_image16.py's PNG writer).
Usage: make_other_targets.py [out_dir]   (default: assets/targets beside this tools/ folder)
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in tools/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_image16  # noqa: E402  (the PNG writer and the 8 colours)

# A sailing boat on the sea under a yellow sun; a white sail, a red hull, a magenta flag.
BOAT = [
    "cccccccccccccccc",
    "ccyycccccccmmccc",
    "cyyyyccccccwcccc",
    "cyyyyccccccwwccc",
    "ccyyccccccwwwccc",
    "cccccccccwwwwwcc",
    "ccccccccwwwwwwcc",
    "cccccccwwwwwwwwc",
    "ccccccccccckcccc",
    "cccrrrrrrrrrrrrc",
    "ccccrrrrrrrrrrcc",
    "cccccrrrrrrrrccc",
    "bbbbbbbbbbbbbbbb",
    "bcbbbbcbbbbbcbbb",
    "bbbbbbbbbbbbbbbb",
    "bbbcbbbbbcbbbbbb",
]

# "DL" over "CA" in four colours on black: thin strokes, corners and gaps one cell wide.
LETTERS = [
    "kkkkkkkkkkkkkkkk",
    "kyyyykkkkmkkkkkk",
    "kykkkykkkmkkkkkk",
    "kykkkykkkmkkkkkk",
    "kykkkykkkmkkkkkk",
    "kyyyykkkkmmmmmkk",
    "kkkkkkkkkkkkkkkk",
    "kkkkkkkkkkkkkkkk",
    "kkcccckkkkkrrkkk",
    "kcckkkkkkkrkkrkk",
    "kcckkkkkkrkkkkrk",
    "kcckkkkkkrrrrrrk",
    "kcckkkkkkrkkkkrk",
    "kkcccckkkrkkkkrk",
    "kkkkkkkkkkkkkkkk",
    "gggggggggggggggg",
]

# The letter A, two cells thick, on black: a silhouette with a hole, unlike the lizard.
LETTER20 = [
    "kkkkkkkkkkkkkkkkkkkk",
    "kkkkkkkkkkkkkkkkkkkk",
    "kkkkkkkkwwwwkkkkkkkk",
    "kkkkkkkkwwwwkkkkkkkk",
    "kkkkkkkwwwwwwkkkkkkk",
    "kkkkkkkwwkkwwkkkkkkk",
    "kkkkkkwwwkkwwwkkkkkk",
    "kkkkkkwwkkkkwwkkkkkk",
    "kkkkkwwwkkkkwwwkkkkk",
    "kkkkkwwkkkkkkwwkkkkk",
    "kkkkwwwwwwwwwwwwkkkk",
    "kkkkwwwwwwwwwwwwkkkk",
    "kkkwwwkkkkkkkkwwwkkk",
    "kkkwwkkkkkkkkkkwwkkk",
    "kkwwwkkkkkkkkkkwwwkk",
    "kkwwkkkkkkkkkkkkwwkk",
    "kwwwkkkkkkkkkkkkwwwk",
    "kwwkkkkkkkkkkkkkkwwk",
    "kkkkkkkkkkkkkkkkkkkk",
    "kkkkkkkkkkkkkkkkkkkk",
]

PICTURES = [("boat16.png", BOAT, 16), ("letters16.png", LETTERS, 16), ("letter20.png", LETTER20, 20)]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "assets", "targets")
    os.makedirs(out_dir, exist_ok=True)
    for name, rows, side in PICTURES:
        assert len(rows) == side and all(len(row) == side for row in rows), name
        path = os.path.join(out_dir, name)
        with open(path, "wb") as f:
            f.write(make_image16.png_rgb8(rows))
        print("make_other_targets: wrote", path)


if __name__ == "__main__":
    main()
