/* ca_model.c: building a model from its config and seed. */
#include "ca_model.h"

#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RNG_STREAM_WIRING = 1 };

static void layout_gates(ca_model *m)
{
    const ca_config *c = &m->config;
    size_t gate = 0;
    for (int l = 0; l < c->perception_depth; l++) {
        m->perception_gate_base[l] = gate;
        gate += (size_t)c->kernels * (size_t)c->perception_widths[l];
    }
    for (int l = 0; l < c->update_depth; l++) {
        m->update_gate_base[l] = gate;
        gate += (size_t)c->update_widths[l];
    }
    m->gate_count = gate;
}

/* Prefixes the wiring's message with the layer it belongs to. */
static int layer_error(const char *part, int layer)
{
    char reason[512];
    snprintf(reason, sizeof reason, "%s", err_message());
    return err_set(DLCA_ERR, "%s layer %d: %s", part, layer, reason);
}

static int build_wiring(ca_model *m)
{
    const ca_config *c = &m->config;
    rng_state rng;
    rng_init(&rng, c->seed, RNG_STREAM_WIRING);
    for (int l = 0; l < c->perception_depth; l++) {
        int n_in = l == 0 ? 9 : c->perception_widths[l - 1];
        if (wiring_init(&m->perception[l], l == 0 ? WIRING_MOORE : WIRING_UNIQUE, n_in, c->perception_widths[l], &rng))
            return layer_error("perception", l);
    }
    for (int l = 0; l < c->update_depth; l++) {
        int n_in = l == 0 ? ca_config_update_inputs(c) : c->update_widths[l - 1];
        if (wiring_init(&m->update[l], c->update_wiring, n_in, c->update_widths[l], &rng))
            return layer_error("update", l);
    }
    return DLCA_OK;
}

int ca_model_init(ca_model *m, const ca_config *config)
{
    memset(m, 0, sizeof *m);
    if (ca_config_check(config)) return DLCA_ERR;
    m->config = *config;
    layout_gates(m);
    if (build_wiring(m)) {
        ca_model_free(m);
        return DLCA_ERR;
    }
    m->logits = calloc(m->gate_count * GATE_OP_COUNT, sizeof(float));
    if (!m->logits) {
        ca_model_free(m);
        return err_set(DLCA_ERR_NOMEM, "out of memory for %zu gates' logits", m->gate_count);
    }
    for (size_t g = 0; g < m->gate_count; g++) m->logits[g * GATE_OP_COUNT + GATE_A] = 10.0f;
    return DLCA_OK;
}

void ca_model_free(ca_model *m)
{
    for (int l = 0; l < CA_MAX_LAYERS; l++) {
        wiring_free(&m->perception[l]);
        wiring_free(&m->update[l]);
    }
    free(m->logits);
    memset(m, 0, sizeof *m);
}

void ca_model_logits_to_double(const ca_model *m, double *logits)
{
    for (size_t i = 0; i < m->gate_count * GATE_OP_COUNT; i++) logits[i] = m->logits[i];
}
