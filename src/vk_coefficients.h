/* vk_coefficients.h: the GPU version of gate_coefficients / gate_hard_coefficients (gates.h):
 * logits [gate_count][16] -> coefficients [gate_count][4], once per training step. */
#ifndef DLCA_VK_COEFFICIENTS_H
#define DLCA_VK_COEFFICIENTS_H

#include "vk_buffer.h"

/* Records the dispatch: coeffs[g] = M^T softmax(logits[g]), or with `hard` the row of M of
 * argmax logits[g] (lowest index on ties). Views must hold gate_count*16 and gate_count*4
 * floats; the caller puts barriers around it. */
int vk_gate_coefficients(vk_context *vk, VkCommandBuffer cmd, vk_view logits, vk_view coeffs, uint32_t gate_count,
                         int hard);

#endif
