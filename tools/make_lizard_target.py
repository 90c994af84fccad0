#!/usr/bin/env python3
"""make_lizard_target.py: renders the lizard emoji (U+1F98E) as the 20x20 lizard target.

Called by make_lizard_target.sh, which installs the font and Pillow and explains the steps.
Another emoji's code point gives another silhouette of the same size (assets/targets/); a margin
draws it smaller, in the middle of a border of that many empty cells on every side.
Usage: make_lizard_target.py NotoColorEmoji.ttf out.png [U+XXXX [MARGIN]]
"""
import sys

from PIL import Image, ImageDraw, ImageFont

NATIVE_PX = 109  # the only bitmap strike in NotoColorEmoji's CBDT table
SIZE = 20
LIZARD = 0x1F98E


def render(font_path, code):
    font = ImageFont.truetype(font_path, NATIVE_PX)
    canvas = Image.new("RGBA", (2 * NATIVE_PX, 2 * NATIVE_PX), (0, 0, 0, 0))
    ImageDraw.Draw(canvas).text((NATIVE_PX // 4, NATIVE_PX // 4), chr(code), font=font, embedded_color=True)
    box = canvas.getchannel("A").getbbox()
    if box is None:
        sys.exit("make_lizard_target: the font drew nothing for U+%04X" % code)
    return canvas.crop(box)


def pad_square(glyph):
    side = max(glyph.size)
    square = Image.new("RGBA", (side, side), (0, 0, 0, 0))
    square.paste(glyph, ((side - glyph.width) // 2, (side - glyph.height) // 2))
    return square


def main():
    if len(sys.argv) not in (3, 4, 5):
        sys.exit(__doc__)
    code, margin = LIZARD, 0
    if len(sys.argv) == 5:
        if not sys.argv[4].isdigit() or int(sys.argv[4]) > 8:
            sys.exit("make_lizard_target: margin '%s' is not a whole number of cells from 0 to 8" % sys.argv[4])
        margin = int(sys.argv[4])
    if len(sys.argv) >= 4:
        text = sys.argv[3].upper()
        digits = text[2:]
        if not text.startswith("U+") or not 4 <= len(digits) <= 6 or any(c not in "0123456789ABCDEF" for c in digits) \
                or int(digits, 16) > 0x10FFFF:
            sys.exit("make_lizard_target: code point '%s' is not U+XXXX, 4 to 6 hex digits up to U+10FFFF"
                     % sys.argv[3])
        code = int(digits, 16)
    square = pad_square(render(sys.argv[1], code))
    inner = SIZE - 2 * margin
    small = square.convert("RGBa").resize((inner, inner), Image.BOX)
    r, g, b, _ = small.split()  # already multiplied by alpha
    framed = Image.new("RGB", (SIZE, SIZE), (0, 0, 0))
    framed.paste(Image.merge("RGB", (r, g, b)), (margin, margin))
    framed.save(sys.argv[2], optimize=True)
    print("make_lizard_target: wrote", sys.argv[2])


if __name__ == "__main__":
    main()
