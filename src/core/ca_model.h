/* ca_model.h: a DiffLogic CA model: its config, the wiring of every layer and the logits.
 * Gate numbering (the logits' and coefficients' row order, shared by CPU, GPU and file):
 *   perception layer l, kernel k, gate g -> perception_gate_base[l] + k * width_l + g
 *   update layer l, gate g                -> update_gate_base[l] + g                       */
#ifndef DLCA_CA_MODEL_H
#define DLCA_CA_MODEL_H

#include "ca_config.h"
#include "gates.h"
#include "wiring.h"

#include <stddef.h>

typedef struct {
    ca_config config;
    wiring perception[CA_MAX_LAYERS]; /* layers 1.. shared by all kernels; layer 0 is moore, of
                                         one neighbour order or one a kernel
                                         (config.perception_wiring; read it with
                                         wiring_moore_neighbour) */
    wiring update[CA_MAX_LAYERS];
    size_t perception_gate_base[CA_MAX_LAYERS];
    size_t update_gate_base[CA_MAX_LAYERS];
    size_t gate_count;
    float *logits; /* [gate_count][16] */
} ca_model;

/* Checks the config, draws the wiring from its seed and sets every gate to pass-through A
 * (logit of op A = 10, the rest 0). */
int ca_model_init(ca_model *model, const ca_config *config);

/* Builds a model from given wirings (perception[0..depth), update[0..depth)), e.g. read from a
 * file: checks each layer's n_in/n_out against the config and layer 0's moore shape, copies
 * them, and zeroes the logits. The model owns its copies. */
int ca_model_init_wired(ca_model *model, const ca_config *config, const wiring *perception, const wiring *update);

void ca_model_free(ca_model *model);

/* The op gate `gate` snaps to: the argmax of its logits (gate_argmax: lowest index on ties). */
int ca_model_gate_op(const ca_model *model, size_t gate);

/* Copies the float logits into a double array of gate_count * 16 (the CPU engine's input). */
void ca_model_logits_to_double(const ca_model *model, double *logits);

#endif
