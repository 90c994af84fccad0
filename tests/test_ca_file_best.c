/* test_ca_file_best: the model file's flag 2, the best circuit a run keeps (ca_file.h): it
 * round-trips bit for bit beside the state and the target; a file without it loads with a zeroed
 * best; every truncation inside it is refused naming the field; a best without a training
 * state, a step of 0, an exact flag of 2, a NaN logit or a negative second moment (CRC fixed up,
 * so the right check fires) are refused; and a save of a best with a NaN is refused. */
#include "ca_file.h"
#include "ca_fixtures.h"
#include "check.h"
#include "crc32.h"
#include "error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void put_le32(uint8_t *at, uint32_t v)
{
    for (int i = 0; i < 4; i++) at[i] = (uint8_t)(v >> (8 * i));
}

static void fix_crc(uint8_t *data, size_t size) { put_le32(data + size - 4, crc32_update(0, data, size - 4)); }

static float *random_array(size_t n, rng_state *rng, double lo, double hi)
{
    float *a = malloc(n * sizeof(float));
    for (size_t i = 0; a && i < n; i++) a[i] = (float)(lo + (hi - lo) * rng_uniform(rng));
    return a;
}

/* A tiny model with a state that carries a best circuit. */
static void make(ca_model *m, ca_train_state *s, ca_target_image *t)
{
    ca_config c;
    tiny_config(&c, CA_BOUNDARY_PERIODIC, 1.0, 1, 2);
    if (ca_model_init(m, &c)) fprintf(stderr, "%s\n", err_message()), exit(1);
    size_t n = m->gate_count * GATE_OP_COUNT;
    rng_state rng;
    rng_init(&rng, 7, 0);
    memset(s, 0, sizeof *s);
    s->step = 41, s->seconds = 2.5;
    s->moment1 = random_array(n, &rng, -1e-2, 1e-2), s->moment2 = random_array(n, &rng, 0.0, 1e-4);
    s->best = (ca_best_state){30, 30, 0.0, 0.125, 1, random_array(n, &rng, -3.0, 3.0),
                              random_array(n, &rng, -1e-2, 1e-2), random_array(n, &rng, 0.0, 1e-4)};
    *t = (ca_target_image){c.loss_channels, c.height, c.width, calloc((size_t)c.height * c.width, 1)};
}

static void expect_refused(const uint8_t *data, size_t size, const char *needle)
{
    ca_model m;
    ca_train_state s;
    int status = ca_file_load_memory(data, size, "best.dlca", &m, &s, NULL);
    CHECK(status != DLCA_OK, "refused: %s", needle);
    CHECK(strstr(err_message(), needle) != NULL, "the message names '%s': %s", needle, err_message());
    if (status == DLCA_OK) ca_model_free(&m), ca_train_state_free(&s);
}

int main(void)
{
    ca_model m, loaded;
    ca_train_state s, ls;
    ca_target_image t, lt;
    make(&m, &s, &t);
    size_t n = m.gate_count * GATE_OP_COUNT, floats = 3 * n * 4, best_bytes = 8 + 8 + 8 + 8 + 4 + floats;
    uint8_t *data, *bad;
    size_t size;
    CHECK(ca_file_save_memory(&data, &size, &m, &s, &t) == DLCA_OK, "save: %s", err_message());
    CHECK(data[12] == 7, "flags: state, target and best (%d)", data[12]);
    int ok = ca_file_load_memory(data, size, "best.dlca", &loaded, &ls, &lt) == DLCA_OK;
    CHECK(ok, "load: %s", err_message());
    if (ok) {
        const ca_best_state *a = &ls.best, *b = &s.best;
        CHECK(a->step == 30 && a->exact_step == 30 && a->wrong == 0.0 && a->soft == 0.125 && a->exact == 1,
              "the best's step, exact step, losses and flag");
        CHECK(memcmp(a->logits, b->logits, n * 4) == 0 && memcmp(a->moment1, b->moment1, n * 4) == 0 &&
                  memcmp(a->moment2, b->moment2, n * 4) == 0,
              "the best's logits and moments bit for bit");
        CHECK(ls.step == 41 && memcmp(ls.moment1, s.moment1, n * 4) == 0, "the state beside it");
        ca_model_free(&loaded), ca_train_state_free(&ls), ca_target_image_free(&lt);
    }

    /* Without a best: no flag 2, and a zeroed best after loading. */
    ca_best_state keep = s.best;
    s.best = (ca_best_state){0};
    uint8_t *plain;
    size_t plain_size;
    CHECK(ca_file_save_memory(&plain, &plain_size, &m, &s, &t) == DLCA_OK && plain[12] == 3 &&
              plain_size + best_bytes == size,
          "without a best: flags 3 and %zu bytes fewer", best_bytes);
    ok = ca_file_load_memory(plain, plain_size, "plain.dlca", &loaded, &ls, NULL) == DLCA_OK;
    CHECK(ok && ls.best.step == 0 && !ls.best.logits, "loads with a zeroed best: %s", err_message());
    if (ok) ca_model_free(&loaded), ca_train_state_free(&ls);
    free(plain);
    s.best = keep;

    /* Every cut inside the best section. */
    int refused = 0, named = 0;
    for (size_t cut = size - 4 - best_bytes; cut < size; cut++) {
        int status = ca_file_load_memory(data, cut, "cut.dlca", &loaded, &ls, NULL);
        refused += status != DLCA_OK;
        named += strstr(err_message(), "truncated at") != NULL;
        if (status == DLCA_OK) ca_model_free(&loaded), ca_train_state_free(&ls);
    }
    CHECK(refused == (int)best_bytes + 4 && named == refused, "every cut in the best section is refused (%d of %zu)",
          refused, best_bytes + 4);

    bad = malloc(size);
    size_t at = size - 4 - best_bytes; /* the best section */
    float nan_value = NAN, negative = -1.0f;
    memcpy(bad, data, size), put_le32(bad + 12, 16), fix_crc(bad, size);
    expect_refused(bad, size, "unknown flags 0x00000010");
    memcpy(bad, data, size), put_le32(bad + 12, 6), fix_crc(bad, size);
    expect_refused(bad, size, "without a training state");
    memcpy(bad, data, size), memset(bad + at, 0, 8), fix_crc(bad, size);
    expect_refused(bad, size, "step is 0");
    memcpy(bad, data, size), put_le32(bad + at + 32, 2), fix_crc(bad, size);
    expect_refused(bad, size, "exact flag is 2");
    memcpy(bad, data, size), memcpy(bad + at + 36 + 4 * 5, &nan_value, 4), fix_crc(bad, size);
    expect_refused(bad, size, "best logits[5]");
    memcpy(bad, data, size), memcpy(bad + at + 36 + 8 * n + 4 * 3, &negative, 4), fix_crc(bad, size);
    expect_refused(bad, size, "best moment2[3]");
    free(bad);

    s.best.logits[2] = NAN;
    uint8_t *none = NULL;
    size_t none_size = 0;
    CHECK(ca_file_save_memory(&none, &none_size, &m, &s, &t) != DLCA_OK && strstr(err_message(), "best circuit"),
          "a best with a NaN is not saved: %s", err_message());
    free(none), free(data);
    ca_model_free(&m), ca_train_state_free(&s), ca_target_image_free(&t);
    return test_finish("test_ca_file_best");
}
