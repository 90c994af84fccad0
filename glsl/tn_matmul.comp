#version 450
// tn_matmul.comp: out [batch][n][m] = a [batch][n][k] x b [batch][k][m] on strided views, in
// 16 x 16 output tiles staged through shared memory (local size 256 = 16 x 16, set in the
// pipeline table). Workgroup (x, y) is the tile at column x, row y; z walks batch elements.
// meta: iterator over the batch dims (operands 0 out, 1 a, 2 b) at 0, then the row and column
// strides of the last two dims: out at [36], [37], a at [38], [39], b at [40], [41].
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer out_buf { float out_v[]; };
layout(std430, binding = 1) readonly buffer a_buf { float a_v[]; };
layout(std430, binding = 2) readonly buffer b_buf { float b_v[]; };
layout(std430, binding = 3) readonly buffer meta_buf { int meta[]; };
layout(push_constant) uniform push_block { tn_matmul_push pc; };

#include "tn_common.glsl"

const uint TILE = 16;
shared float tile_a[TILE][TILE];
shared float tile_b[TILE][TILE];

void main()
{
    uint lid = gl_LocalInvocationID.x, tx = lid % TILE, ty = lid / TILE;
    uint row = gl_WorkGroupID.y * TILE + ty, col = gl_WorkGroupID.x * TILE + tx;
    int so0 = meta[36], so1 = meta[37], sa0 = meta[38], sa1 = meta[39], sb0 = meta[40], sb1 = meta[41];
    for (uint z = gl_WorkGroupID.z; z < pc.batch; z += gl_NumWorkGroups.z) {
        ivec3 base = tn_iter_offsets(0u, z);
        float acc = 0.0;
        for (uint t = 0u; t < pc.k; t += TILE) {
            uint ka = t + tx, kb = t + ty;
            tile_a[ty][tx] = row < pc.n && ka < pc.k ? a_v[base.y + int(row) * sa0 + int(ka) * sa1] : 0.0;
            tile_b[ty][tx] = kb < pc.k && col < pc.m ? b_v[base.z + int(kb) * sb0 + int(col) * sb1] : 0.0;
            barrier();
            for (uint p = 0u; p < TILE; p++) acc += tile_a[ty][p] * tile_b[p][tx];
            barrier();
        }
        if (row < pc.n && col < pc.m) out_v[base.x + int(row) * so0 + int(col) * so1] = acc;
    }
}
