#version 450
// task_round.comp: a training round's start grid and target on the GPU, the same bits as
// ca_task.c (ca_task_start + ca_task_target) draws on the CPU, so a training step needs no
// upload. One invocation per (channel, cell) of the grid.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer grid_buf { float grid[]; };     // [C][pitch]
layout(std430, binding = 1) writeonly buffer target_buf { float target[]; }; // [loss_channels][pitch]
layout(std430, binding = 2) readonly buffer image_buf { float image[]; };    // [loss_channels][H][W]
layout(push_constant) uniform push_block { task_push pc; };

const uint START_BOARDS = 0, START_RANDOM = 1, START_ZEROS = 2, START_SEED_CELL = 3;
const uint TARGET_LIFE = 0, TARGET_CHECKERBOARD = 1, TARGET_IMAGE = 2;

uint draw(uint index) { return rng_hash32(pc.stream ^ rng_hash32(index + 0x9e3779b9u)); }

float start_value(uint ch, uint cell)
{
    uint plane = pc.height * pc.width, yx = cell % plane;
    if (pc.start == START_RANDOM) return float(draw(ch * pc.cells + cell) >> 31);
    if (pc.start == START_SEED_CELL) return yx == (pc.height / 2) * pc.width + pc.width / 2 ? 1.0 : 0.0;
    if (pc.start == START_BOARDS && ch == 0) return float((draw(cell / plane) % 512u) >> (yx / pc.width * 3 + yx % pc.width) & 1u);
    return 0.0;
}

float life_target(uint cell)
{
    uint count = 0;
    for (int j = 0; j < 9; j++) {
        if (j == 4) continue;
        int at = shifted_cell(cell, pc.height, pc.width, pc.periodic, j / 3 - 1, j % 3 - 1);
        if (at >= 0 && start_value(0, uint(at)) > 0.5) count++;
    }
    return count == 3 || (start_value(0, cell) > 0.5 && count == 2) ? 1.0 : 0.0;
}

void main()
{
    uint index = global_index();
    if (index >= pc.channels * pc.cells) return;
    uint ch = index / pc.cells, cell = index % pc.cells, yx = cell % (pc.height * pc.width);
    grid[ch * pc.pitch + cell] = start_value(ch, cell);
    if (ch >= pc.loss_channels) return;
    float t;
    if (pc.target == TARGET_LIFE) t = life_target(cell);
    else if (pc.target == TARGET_CHECKERBOARD) t = float(((yx / pc.width) / 2 + (yx % pc.width) / 2) & 1u);
    else t = image[ch * pc.height * pc.width + yx];
    target[ch * pc.pitch + cell] = t;
}
