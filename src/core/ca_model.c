/* ca_model.c: building a model from its config and seed, or from given wirings (a model file). */
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
    int n_in, n_out;
    for (int l = 0; l < c->perception_depth; l++) {
        ca_config_layer_shape(c, 0, l, &n_in, &n_out);
        if (wiring_init(&m->perception[l], l == 0 ? WIRING_MOORE : WIRING_UNIQUE, n_in, n_out, &rng))
            return layer_error("perception", l);
    }
    for (int l = 0; l < c->update_depth; l++) {
        ca_config_layer_shape(c, 1, l, &n_in, &n_out);
        if (wiring_init(&m->update[l], c->update_wiring, n_in, n_out, &rng)) return layer_error("update", l);
    }
    return DLCA_OK;
}

/* The moore layer reads b = the centre cell (4) and a = each of the 8 neighbours once an order
 * (8 gates). */
static int check_moore(const wiring *w)
{
    int seen[9] = {0};
    for (int g = 0; g < w->n_out; g++) {
        int a = w->input_a[g];
        if (g % 8 == 0) memset(seen, 0, sizeof seen);
        if (w->input_b[g] != 4)
            return err_set(DLCA_ERR, "gate %d reads b = %d, but moore wiring reads the centre cell 4", g, w->input_b[g]);
        if (a < 0 || a > 8 || a == 4 || seen[a]++)
            return err_set(DLCA_ERR, "gate %d reads a = %d, but moore wiring reads each of the 8 neighbours once "
                           "an order", g, a);
    }
    return DLCA_OK;
}

/* Copies one given layer after checking its shape against the config. */
static int copy_layer(wiring *dst, const wiring *src, const ca_config *c, int update, int l)
{
    int n_in, n_out;
    ca_config_layer_shape(c, update, l, &n_in, &n_out);
    if (src->n_in != n_in || src->n_out != n_out)
        return err_set(DLCA_ERR, "wiring is %d -> %d, but the config implies %d -> %d", src->n_in, src->n_out, n_in,
                       n_out);
    if (!update && l == 0 && check_moore(src)) return DLCA_ERR;
    return wiring_init_from(dst, n_in, n_out, src->input_a, src->input_b);
}

static int copy_wiring(ca_model *m, const wiring *perception, const wiring *update)
{
    const ca_config *c = &m->config;
    for (int l = 0; l < c->perception_depth; l++)
        if (copy_layer(&m->perception[l], &perception[l], c, 0, l)) return layer_error("perception", l);
    for (int l = 0; l < c->update_depth; l++)
        if (copy_layer(&m->update[l], &update[l], c, 1, l)) return layer_error("update", l);
    return DLCA_OK;
}

/* The part both constructors share: a checked copy of the config and the gate layout. */
static int model_begin(ca_model *m, const ca_config *config)
{
    memset(m, 0, sizeof *m);
    if (ca_config_check(config)) return DLCA_ERR;
    m->config = *config;
    layout_gates(m);
    return DLCA_OK;
}

static int alloc_logits(ca_model *m)
{
    m->logits = calloc(m->gate_count * GATE_OP_COUNT, sizeof(float));
    if (!m->logits) return err_set(DLCA_ERR_NOMEM, "out of memory for %zu gates' logits", m->gate_count);
    return DLCA_OK;
}

int ca_model_init(ca_model *m, const ca_config *config)
{
    if (model_begin(m, config)) return DLCA_ERR;
    if (build_wiring(m)) {
        ca_model_free(m);
        return DLCA_ERR;
    }
    if (alloc_logits(m)) {
        ca_model_free(m);
        return DLCA_ERR_NOMEM;
    }
    for (size_t g = 0; g < m->gate_count; g++) m->logits[g * GATE_OP_COUNT + GATE_A] = (float)config->init_logit;
    return DLCA_OK;
}

int ca_model_init_wired(ca_model *m, const ca_config *config, const wiring *perception, const wiring *update)
{
    if (model_begin(m, config)) return DLCA_ERR;
    int status = copy_wiring(m, perception, update);
    if (status == DLCA_OK) status = alloc_logits(m);
    if (status != DLCA_OK) ca_model_free(m);
    return status;
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

int ca_model_gate_op(const ca_model *m, size_t gate)
{
    double z[GATE_OP_COUNT];
    for (int i = 0; i < GATE_OP_COUNT; i++) z[i] = m->logits[gate * GATE_OP_COUNT + (size_t)i];
    return gate_argmax(z);
}

void ca_model_logits_to_double(const ca_model *m, double *logits)
{
    for (size_t i = 0; i < m->gate_count * GATE_OP_COUNT; i++) logits[i] = m->logits[i];
}
