/* test_ca_gpu_shapes: test_ca_gpu's checks (ca_gpu_checks.h) on the shapes that exercise the
 * engines' edges: one boundary, sync and async, 1- and 2-bit perception on tiny grids; more
 * cells than one chunk of S partials; a full cache split over buffers; fused tiles that leave
 * the last workgroup short, tiles of one cell, fewer backward workgroups than tiles; layers wider
 * than a fused workgroup; as many update layers as a model may have. */
#include "ca_gpu_checks.h"

int main(int argc, char **argv)
{
    if (test_gpu_options(argc, argv, "test_ca_gpu_shapes")) return 2;
    if (test_vk_context_init(&vk, -1)) return test_no_vulkan("test_ca_gpu_shapes", err_message());
    check_tiny_configs(CA_BOUNDARY_PERIODIC); /* zero in test_ca_gpu.c */
    ca_config odd_cells;
    tiny_config(&odd_cells, CA_BOUNDARY_PERIODIC, 0.6, 2, 3);
    odd_cells.width = 5, odd_cells.batch = 3; /* 45 cells */
    /* Tiles of one cell (the kernels' constant path for them, as image and lizard run). */
    const ca_gpu_options automatic = gpu_options;
    gpu_options.tile = 1, gpu_options.tile_backward = 1;
    check_case(&odd_cells, "tiny 3x5 batch 3, fused tiles of 1");
    /* ... taken 7 a backward workgroup in turn, as lizard's are (its perception S summed over
     * the subgroup there too, unlike on shared slots of two-cell tiles). */
    gpu_options.max_slots = 7;
    check_case(&odd_cells, "tiny 3x5 batch 3, fused tiles of 1, 7 backward workgroups");
    gpu_options = automatic;
    /* More cells than one chunk of gate_backward: 7 chunks of 64, then 3 of 192 (the last short). */
    ca_config wide;
    small_preset(&wide, "checkerboard-async");
    wide.batch = 14;
    check_case(&wide, "checkerboard-async batch 14");
    check_case_with(&wide, "checkerboard-async batch 14, 3 cells a lane", 3);
    /* A full cache split over buffers, as one larger than maxMemoryAllocationSize is. */
    gpu_options.blocks_per_buffer = 2;
    check_case(&wide, "checkerboard-async batch 14, 2 step blocks a buffer");
    gpu_options = automatic;
    /* Fused tiles that leave the last workgroup short: 390 cells in tiles of 7 forward, 4 back. */
    ca_config odd;
    small_preset(&odd, "checkerboard-async");
    odd.batch = 13;
    gpu_options.tile = 7, gpu_options.tile_backward = 4;
    check_case(&odd, "checkerboard-async batch 13, fused tiles of 7 and 4");
    gpu_options = automatic;
    /* Fewer fused backward workgroups than tiles: each takes every third tile, into one slot. */
    gpu_options.max_slots = 3;
    check_case(&odd, "checkerboard-async batch 13, 3 fused backward workgroups");
    gpu_options = automatic;
    /* Layers wider than a fused workgroup (256 invocations): an invocation takes a second gate,
     * input and gate of the layer below, with their parameters loaded where they are used. */
    ca_config broad;
    small_preset(&broad, "checkerboard");
    static const int broad_widths[] = {300, 270, 136, 68, 34, 17, 9};
    broad.update_depth = 8;
    for (int l = 0; l < 7; l++) broad.update_widths[l] = broad_widths[l];
    broad.update_widths[7] = broad.channels;
    check_case(&broad, "checkerboard, update layers of 300 and 270 gates");
    /* Every update layer the fused kernels unroll (CA_MAX_LAYERS), in the copies compiled for
     * more than 8 (the other cases run those for 8). */
    ca_config deep;
    tiny_config(&deep, CA_BOUNDARY_PERIODIC, 1.0, 2, 2);
    deep.update_depth = CA_MAX_LAYERS;
    for (int l = 0; l < CA_MAX_LAYERS - 2; l++) deep.update_widths[l] = l % 2 ? 6 : 8;
    deep.update_widths[CA_MAX_LAYERS - 2] = 4, deep.update_widths[CA_MAX_LAYERS - 1] = deep.channels;
    check_case(&deep, "tiny, 32 update layers");
    int validation_errors = vk.validation_errors;
    vk_context_free(&vk);
    CHECK(validation_errors == 0, "%d Vulkan validation messages", validation_errors);
    return test_finish("test_ca_gpu_shapes");
}
