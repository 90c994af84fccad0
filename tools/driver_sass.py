#!/usr/bin/env python3
"""driver_sass.py: the machine code the NVIDIA driver compiled for dlca's shaders, with the
scheduling fields of each instruction, to see what a kernel waits for.

The Vulkan driver offers no internal representations (vkGetPipelineExecutableInternal-
RepresentationsKHR returns none on the 580 driver), but its shader disk cache keeps every
compiled pipeline. Three steps (docs/bench-notes.md, round 10):

  1. on the GPU machine, run dlca with the cache in a folder of your own:
       __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=/tmp/glc \\
       __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 dlca bench --preset checkerboard --steps 2
  2. python3 tools/driver_sass.py extract /tmp/glc OUT    (needs the `zstd` command)
     writes OUT/kernel-K.raw, one per compiled shader, in the cache's order
  3. python3 tools/driver_sass.py show OUT/kernel-K.raw [--arch SM90] [--from A --to B]
     runs `nvdisasm -b ARCH` (CUDA toolkit) and prints each instruction with its stall
     cycles, the scoreboards it sets (W: result, R: operands read late) and those it waits
     on. A wait on a scoreboard waits for every load still counted on it, however recent.

The cache format is the driver's own and undocumented: entries are zstd frames; a shader's
frame starts with "NVDA", the word at 0x50 (+8) is where its code starts, and the code ends
with the usual EXIT; BRA-to-self. What this script relies on is that, nothing more.
"""
import os
import re
import struct
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BRANCH_TO_SELF = b"\x47\x79\xfc\x00\xfc\xff\xff\xff"  # the last instruction of a kernel


def cache_frames(folder):
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            if not name.endswith(".bin"):
                continue
            data = open(os.path.join(root, name), "rb").read()
            starts = [m.start() for m in re.finditer(re.escape(ZSTD_MAGIC), data)] + [len(data)]
            for a, b in zip(starts, starts[1:]):
                out = subprocess.run(["zstd", "-d", "-c", "-q"], input=data[a:b], capture_output=True).stdout
                if out:
                    yield out


def shader_code(frame):
    if not frame.startswith(b"NVDA") or len(frame) < 0x58:
        return None
    start = struct.unpack_from("<I", frame, 0x50)[0] + 8
    end = frame.find(BRANCH_TO_SELF, start)
    if end < 0 or (end - start) % 16:
        return None
    return frame[start:end + 16]


def extract(folder, out):
    os.makedirs(out, exist_ok=True)
    codes = [c for c in (shader_code(f) for f in cache_frames(folder)) if c]
    if not codes:
        sys.exit(f"driver_sass.py: no compiled shaders found under {folder}")
    for k, code in enumerate(codes):
        path = os.path.join(out, f"kernel-{k}.raw")
        open(path, "wb").write(code)
        print(f"{path}: {len(code) // 16} instructions")


def control(code, addr):
    """Volta-and-later scheduling fields: the top 23 bits of each 128-bit instruction."""
    high = int.from_bytes(code[addr + 8:addr + 16], "little") >> 41
    stall, yield_, write, read, wait = high & 15, (high >> 4) & 1, (high >> 5) & 7, (high >> 8) & 7, (high >> 11) & 63
    mark = lambda sb: "-" if sb == 7 else str(sb)
    waits = "".join(str(sb) for sb in range(6) if wait >> sb & 1)
    return f"S{stall:2d}{'Y' if yield_ else ' '} W{mark(write)} R{mark(read)} wait[{waits:6s}]"


def show(raw, arch, first, last):
    code = open(raw, "rb").read()
    listing = subprocess.run(["nvdisasm", "-b", arch, raw], capture_output=True, text=True)
    if listing.returncode != 0:
        sys.exit(f"driver_sass.py: nvdisasm failed on {raw}: {listing.stderr.strip()}")
    for line in listing.stdout.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s*(.*?)\s*;", line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        if first <= addr <= last:
            print(f"{addr:6x} {control(code, addr)} {m.group(2)}")


def main(argv):
    if len(argv) >= 3 and argv[0] == "extract":
        return extract(argv[1], argv[2])
    if len(argv) >= 2 and argv[0] == "show":
        arch, first, last, rest = "SM90", 0, 1 << 40, argv[2:]
        while rest:
            flag, value, rest = rest[0], rest[1] if len(rest) > 1 else None, rest[2:]
            if value is None or flag not in ("--arch", "--from", "--to"):
                sys.exit(f"driver_sass.py: unknown or incomplete option {flag}")
            if flag == "--arch":
                arch = value
            elif flag == "--from":
                first = int(value, 16)
            else:
                last = int(value, 16)
        return show(argv[1], arch, first, last)
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
