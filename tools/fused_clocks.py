#!/usr/bin/env python3
"""Reads the clock records of the fused step kernels and prints, per kernel (forward, backward),
the median SM cycles between consecutive marks over every workgroup and CA step, and per
dispatch the spread of workgroup start times and the gap between dispatches.

Usage:
    cmake -S . -B build-clocks -DCMAKE_BUILD_TYPE=Release -DDLCA_CLOCKS=ON && cmake --build build-clocks -j
    DLCA_PERSISTENT=0 build-clocks/dlca bench --preset checkerboard --device 0   # writes fused_clocks.bin
    python3 tools/fused_clocks.py fused_clocks.bin

A DLCA_CLOCKS build compiles probes into fused_step_forward.comp and fused_step_backward.comp
(glsl/fused_clocks.glsl: where the marks are, and the record layout read below); `dlca bench`
writes the last measured step's records to fused_clocks.bin in the working directory. The
persistent kernels (the default on a GPU where they fit) have no probes: DLCA_PERSISTENT=0 runs
the one-dispatch-a-step kernels that do. The marks cost registers, so a kernel near the 128 that
let two workgroups share an SM may run in two waves in this build (docs/bench-notes.md)."""
import array, statistics as st, sys

STEPS, GROUPS, WORDS = 64, 512, 128
words = array.array('I')
words.frombytes(open(sys.argv[1], 'rb').read())


def record(kernel, step, group):
    at = ((kernel * STEPS + step) * GROUPS + group) * WORDS
    return words[at:at + WORDS]


def ns(lo, hi):
    return hi << 32 | lo


for kernel, name in enumerate(('forward', 'backward')):
    steps = [t for t in range(STEPS) if record(kernel, t, 0)[2] > 0]
    if not steps:
        continue
    groups = [g for g in range(GROUPS) if record(kernel, steps[0], g)[2] > 0]
    count = record(kernel, steps[0], 0)[2]  # index past the last mark
    phases = [[] for _ in range(count - 4)]
    rates = []
    for t in steps:
        for g in groups:
            r = record(kernel, t, g)
            for i in range(count - 4):
                phases[i].append((r[4 + i] - r[3 + i]) & 0xffffffff)
            span = ns(r[126], r[127]) - ns(r[0], r[1])
            if span > 0:
                rates.append(((r[count - 1] - r[3]) & 0xffffffff) / span)
    ghz = st.median(rates)
    print(f"{name}: {len(steps)} steps x {len(groups)} workgroups, {count - 4} phases, SM clock ~{ghz:.2f} GHz")
    for i, d in enumerate(phases):
        d.sort()
        print(f"  phase {i:3d}: median {d[len(d) // 2]:7d} cycles ({d[len(d) // 2] / ghz / 1e3:6.3f} us), p90 {d[int(0.9 * (len(d) - 1))]:7d}")
    print(f"  sum of medians: {sum(sorted(d)[len(d) // 2] for d in phases) / ghz / 1e3:.2f} us")
    lengths, skews, gaps, previous_end = [], [], [], None
    for t in (steps if kernel == 0 else steps[::-1]):  # the backward runs last step first
        starts = [ns(*record(kernel, t, g)[0:2]) for g in groups]
        ends = [ns(*record(kernel, t, g)[126:128]) for g in groups]
        lengths.append(max(ends) - min(starts))
        skews.append(max(starts) - min(starts))
        if previous_end is not None:
            gaps.append(min(starts) - previous_end)
        previous_end = max(ends)
    print(f"  per dispatch: first start to last end {st.median(lengths) / 1e3:.2f} us, starts spread over "
          f"{st.median(skews) / 1e3:.2f} us, gap after the previous dispatch {st.median(gaps) / 1e3 if gaps else 0:.2f} us")
