/* test_ca_gpu: the Vulkan engine against the CPU engine, kernel by kernel and end to end, on
 * small configs of every preset's shape, of other perception shapes and on tiny grids (sync and
 * async, 1- and 2-bit perception, one boundary here): coefficients, every step's activations and
 * grids, one step of backward from the trainer's loss gradient (1e-4 of the largest magnitude),
 * full BPTT's S and start-grid gradient (1e-3), on the per-layer and the fused kernels; full and
 * checkpoint caches give identical bits, two runs give identical bits. (The loss, the gate
 * softmax and AdamW around the engine are the tensor library's, checked by test_tn_vk_*.)
 * test_ca_gpu_shapes.c runs the same checks on more shapes (ca_gpu_checks.h). */
#include "ca_gpu_checks.h"

int main(int argc, char **argv)
{
    if (test_gpu_options(argc, argv, "test_ca_gpu")) return 2;
    if (test_vk_context_init(&vk, -1)) return test_no_vulkan("test_ca_gpu", err_message());
    static const char *const presets[] = {"gol", "checkerboard", "checkerboard-async", "lizard", "image"};
    for (size_t i = 0; i < 5; i++) {
        ca_config config;
        small_preset(&config, presets[i]);
        check_case(&config, presets[i]);
    }
    check_tiny_configs(CA_BOUNDARY_ZERO); /* periodic in test_ca_gpu_shapes.c */
    /* Perception circuits of other shapes than the presets' (the fused kernels specialise on
     * them): the moore layer alone, and two layers with an odd width. */
    ca_config shallow;
    tiny_config(&shallow, CA_BOUNDARY_PERIODIC, 1.0, 2, 3);
    shallow.perception_depth = 1; /* 2 + 2 x 2 x 8 = 34 update inputs */
    shallow.update_depth = 5;
    shallow.update_widths[0] = 18, shallow.update_widths[1] = 10, shallow.update_widths[2] = 6;
    shallow.update_widths[3] = 4, shallow.update_widths[4] = 2;
    check_case(&shallow, "tiny moore-only perception");
    ca_config odd_width;
    tiny_config(&odd_width, CA_BOUNDARY_ZERO, 0.6, 2, 3);
    odd_width.perception_depth = 2, odd_width.perception_widths[1] = 5; /* 2 + 2 x 2 x 5 = 22 inputs */
    odd_width.update_depth = 4;
    odd_width.update_widths[0] = 12, odd_width.update_widths[1] = 6, odd_width.update_widths[2] = 4;
    odd_width.update_widths[3] = 2;
    check_case(&odd_width, "tiny perception 8-5, async");
    /* 16 channels: the fused backward sums a kernel's S over 8 channels in a subgroup on
     * lavapipe (its subgroup size), 16 on a 32-lane GPU, before its partial rows. */
    ca_config channels16;
    small_preset(&channels16, "checkerboard");
    channels16.channels = 16; /* 16 + 3 x 16 x 2 = 112 update inputs */
    channels16.update_widths[0] = 64, channels16.update_widths[1] = 32, channels16.update_widths[2] = 16;
    check_case(&channels16, "checkerboard, 16 channels");
    /* An odd number of cells: the last fused tile of two has one, its second column scratch. */
    ca_config odd_cells;
    tiny_config(&odd_cells, CA_BOUNDARY_PERIODIC, 0.6, 2, 3);
    odd_cells.width = 5, odd_cells.batch = 3; /* 45 cells */
    check_case(&odd_cells, "tiny 3x5 batch 3, a last tile of one cell");
    /* A moore order a kernel: the fused backward's moore rows are by direction, not by gate. */
    ca_config per_kernel;
    small_preset(&per_kernel, "checkerboard");
    per_kernel.perception_wiring = CA_PERCEPTION_PER_KERNEL;
    check_case(&per_kernel, "checkerboard, a moore order a kernel");
    tiny_config(&per_kernel, CA_BOUNDARY_ZERO, 0.6, 2, 3);
    per_kernel.perception_wiring = CA_PERCEPTION_PER_KERNEL;
    check_case(&per_kernel, "tiny async 2-bit, a moore order a kernel");
    check_fused_forced();
    check_buffer_bytes();
    for (size_t i = 0; i < 5; i++) check_task_round(presets[i]);
    for (size_t i = 0; i < 5; i++) check_constants_shared(presets[i]);
    int validation_errors = vk.validation_errors;
    vk_context_free(&vk);
    CHECK(validation_errors == 0, "%d Vulkan validation messages", validation_errors);
    return test_finish("test_ca_gpu");
}
