/* ca_hard_host.c: the hard loss measured on the host (ca_hard_host.h). */
#include "ca_hard_host.h"

#include "ca_exact.h"
#include "error.h"
#include "gates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ca_hard_host_init(ca_hard_host *h, const ca_model *model, const double *image)
{
    memset(h, 0, sizeof *h);
    h->model = *model;
    h->model.logits = calloc(model->gate_count * GATE_OP_COUNT, sizeof(float));
    if (!h->model.logits) return err_set(DLCA_ERR_NOMEM, "out of memory for the host's hard circuit");
    h->image = image;
    return DLCA_OK;
}

void ca_hard_host_free(ca_hard_host *h)
{
    if (!h) return;
    if (h->running) {
        double ignored;
        ca_hard_host_wait(h, &ignored);
    }
    free(h->model.logits);
    memset(h, 0, sizeof *h);
}

static void *measure(void *arg)
{
    ca_hard_host *h = arg;
    h->rc = ca_exact_round_wrong(&h->model, h->image, h->round, &h->wrong);
    if (h->rc) snprintf(h->error, sizeof h->error, "%s", err_message());
    return NULL;
}

int ca_hard_host_start(ca_hard_host *h, const uint8_t *ops, uint64_t round)
{
    if (h->running) return err_set(DLCA_ERR, "the host's hard loss: a measurement is under way already");
    size_t gates = h->model.gate_count;
    memset(h->model.logits, 0, gates * GATE_OP_COUNT * sizeof(float));
    for (size_t g = 0; g < gates; g++) {
        if (ops[g] >= GATE_OP_COUNT) return err_set(DLCA_ERR, "the host's hard loss: gate %zu has op %u", g, ops[g]);
        h->model.logits[g * GATE_OP_COUNT + ops[g]] = 1.0f;
    }
    h->round = round, h->rc = DLCA_OK, h->wrong = 0.0, h->error[0] = '\0';
    h->running = 1;
    h->on_thread = pthread_create(&h->thread, NULL, measure, h) == 0;
    if (!h->on_thread) measure(h);
    return DLCA_OK;
}

int ca_hard_host_wait(ca_hard_host *h, double *wrong)
{
    if (!h->running) return err_set(DLCA_ERR, "the host's hard loss: no measurement under way");
    if (h->on_thread) pthread_join(h->thread, NULL);
    h->running = h->on_thread = 0;
    if (h->rc) return err_set(h->rc, "%s", h->error);
    *wrong = h->wrong;
    return DLCA_OK;
}
