#version 450
// fused_grid_gather.comp: after the last fused backward step, dL/dgrid_0 of each cell gets what
// its neighbours' moore gates sent it (fused_step_backward.comp does this at its start for every
// other step). One invocation per (cell, channel).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#define FUSED_GRADIENT_BINDINGS
#define TILE_CELLS FORWARD_TILE
#include "ca_fused.glsl"

layout(local_size_x_id = 0) in;

void main()
{
    uint index = global_index(), cell = index % pc.cells, ch = index / pc.cells;
    if (ch >= pc.channels) return;
    dgrid[ch * pc.pitch + cell] += neighbour_gradient(ch, cell);
}
