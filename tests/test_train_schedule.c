/* test_train_schedule: the learning-rate schedules through the trainer. The rate of each step is
 * the tensor library's schedule of the config (warm-up, then step, exp, cosine or onecycle down to
 * lr x lr_final); a run saved half way (the model file keeps the schedule) and resumed logs exactly
 * the losses of an uninterrupted run, for every schedule. The config's weight decay is AdamW's:
 * one step with it moves each logit by -lr x decay x logit more than without. */
#include "ca_file.h"
#include "ca_fixtures.h"
#include "ca_train.h"
#include "check.h"
#include "error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { STEPS = 12, HALF = 5 };

static void small_gol(ca_config *c, ca_lr_kind kind)
{
    ca_config_preset(c, "gol");
    static const int widths[] = {32, 16, 8, 4, 2, 1};
    c->update_depth = 6;
    memcpy(c->update_widths, widths, sizeof widths);
    c->batch = 4, c->train_steps = STEPS, c->learning_rate = 0.1;
    c->lr_schedule = kind, c->warmup = 3, c->lr_final = 0.05;
}

/* Steps [from, to) of a trainer on `model`, their soft losses into loss[from ..]. */
static int train(ca_model *model, const ca_train_state *resume, int to, double *loss, ca_train_state *out)
{
    ca_trainer t;
    ca_options cpu = {.cpu_threads = 1};
    int rc = ca_trainer_init(&t, model, NULL, CA_BACKEND_CPU, NULL, &cpu);
    if (!rc && resume) rc = ca_trainer_resume(&t, resume->step, resume->moment1, resume->moment2);
    while (!rc && t.step < (uint64_t)to) {
        double soft;
        rc = ca_trainer_step(&t, &soft, NULL);
        if (!rc) loss[t.step - 1] = soft;
    }
    if (!rc && out) {
        rc = ca_trainer_sync(&t);
        size_t n = t.gate_values * sizeof(float);
        out->step = t.step, out->seconds = 0.0, out->moment1 = malloc(n), out->moment2 = malloc(n);
        if (!rc && out->moment1 && out->moment2) memcpy(out->moment1, t.moment1, n), memcpy(out->moment2, t.moment2, n);
    }
    if (!rc) ca_trainer_free(&t);
    return rc;
}

static void check_kind(ca_lr_kind kind)
{
    ca_config c;
    small_gol(&c, kind);
    const char *name = ca_lr_names[kind];
    /* the rates: warm-up rising to lr, then the schedule, ending at lr x lr_final where it decays */
    tn_lr_schedule s = ca_lr_schedule_of(&c);
    ca_config cold = c;
    cold.warmup = 0;
    tn_lr_schedule unwarmed = ca_lr_schedule_of(&cold);
    double first = tn_lr_at(&unwarmed, 0);
    CHECK(fabs(tn_lr_at(&s, 0) - first / 4.0) < 1e-12 && tn_lr_at(&s, 1) < tn_lr_at(&s, 2),
          "%s: a linear warm-up to the schedule's first rate %g: %g %g %g", name, first, tn_lr_at(&s, 0),
          tn_lr_at(&s, 1), tn_lr_at(&s, 2));
    double last = tn_lr_at(&s, STEPS - 1);
    if (kind == CA_LR_CONSTANT) CHECK(last == c.learning_rate, "constant: %g at the end", last);
    if (kind == CA_LR_EXP || kind == CA_LR_COSINE)
        CHECK(fabs(last - c.learning_rate * c.lr_final) < 0.3 * c.learning_rate * c.lr_final + 0.02 * c.learning_rate,
              "%s ends near lr x lr_final: %g", name, last);
    if (kind != CA_LR_CONSTANT) CHECK(last < c.learning_rate, "%s decays: %g at the end", name, last);

    double whole[STEPS], parts[STEPS];
    ca_model a, b, loaded;
    ca_train_state half = {0}, state = {0};
    uint8_t *file = NULL;
    size_t size = 0;
    int rc = ca_model_init(&a, &c) || ca_model_init(&b, &c) ? DLCA_ERR : DLCA_OK;
    if (!rc) rc = train(&a, NULL, STEPS, whole, NULL);
    if (!rc) rc = train(&b, NULL, HALF, parts, &half);
    if (!rc) rc = ca_file_save_memory(&file, &size, &b, &half, NULL);
    if (!rc) rc = ca_file_load_memory(file, size, "half.dlca", &loaded, &state, NULL);
    CHECK(rc == DLCA_OK, "%s: train, save, load: %s", name, err_message());
    if (rc) return;
    CHECK(loaded.config.lr_schedule == kind && loaded.config.warmup == 3 && loaded.config.lr_final == 0.05,
          "%s: the model file keeps the schedule", name);
    rc = train(&loaded, &state, STEPS, parts, NULL);
    CHECK(rc == DLCA_OK, "%s: resume: %s", name, err_message());
    CHECK(!rc && memcmp(whole, parts, sizeof whole) == 0, "%s: the resumed run logs exactly the uninterrupted losses",
          name);
    int differs = 0;
    for (int i = 1; i < STEPS; i++) differs |= whole[i] != whole[0];
    CHECK(differs, "%s: the losses move", name);
    free(file);
    ca_train_state_free(&half), ca_train_state_free(&state);
    ca_model_free(&a), ca_model_free(&b), ca_model_free(&loaded);
}

/* One step of a model with weight decay `decay` (constant rate, no warm-up), its logits into `z`. */
static int one_step(double decay, float *z, size_t n)
{
    ca_config c;
    small_gol(&c, CA_LR_CONSTANT);
    c.warmup = 0, c.weight_decay = decay;
    ca_model m;
    double loss[1];
    ca_train_state state = {0}; /* train syncs the logits back into m when it keeps a state */
    if (ca_model_init(&m, &c)) return DLCA_ERR;
    int rc = train(&m, NULL, 1, loss, &state);
    if (!rc) memcpy(z, m.logits, n * sizeof(float));
    ca_model_free(&m), ca_train_state_free(&state);
    return rc;
}

static void check_weight_decay(void)
{
    ca_config c;
    small_gol(&c, CA_LR_CONSTANT);
    ca_model m;
    if (ca_model_init(&m, &c)) {
        CHECK(0, "model: %s", err_message());
        return;
    }
    size_t n = m.gate_count * GATE_OP_COUNT;
    float *start = malloc(n * sizeof(float)), *none = malloc(n * sizeof(float)), *half = malloc(n * sizeof(float));
    memcpy(start, m.logits, n * sizeof(float));
    ca_model_free(&m);
    int rc = one_step(0.0, none, n) || one_step(0.5, half, n);
    CHECK(rc == DLCA_OK, "one step with decay 0 and 0.5: %s", err_message());
    double worst = 0.0, moved = 0.0;
    for (size_t i = 0; !rc && i < n; i++) {
        double want = -c.learning_rate * 0.5 * start[i], got = (double)half[i] - none[i];
        worst = fmax(worst, fabs(got - want)), moved = fmax(moved, fabs(got));
    }
    CHECK(!rc && worst < 1e-5 && moved > 0.3,
          "decay 0.5 moves each logit by -lr x 0.5 x logit more (off by %g, %g the most)", worst, moved);
    free(start), free(none), free(half);
}

int main(void)
{
    for (int k = 0; k < CA_LR_KINDS; k++) check_kind((ca_lr_kind)k);
    check_weight_decay();
    /* the rate differs between schedules, so the runs do */
    return test_finish("test_train_schedule");
}
