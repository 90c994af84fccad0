/* test_ca_backend: how many queues a command's context opens. One a model trained side by side,
 * at most CA_BACKEND_QUEUES_MAX (every queue costs the device's creation), and DLCA_QUEUES's
 * number (options.vk.queues) instead where it is set; never more than the device's family has. */
#include "ca_backend.h"
#include "check.h"
#include "vk_test.h"

#include <stdio.h>

static int validation_errors;

static void test_rule(void)
{
    static const int models[] = {-1, 0, 1, 2, 3, 4, 5, 64};
    static const uint32_t want[] = {1, 1, 1, 2, 3, 4, 4, 4};
    for (int i = 0; i < (int)(sizeof models / sizeof models[0]); i++)
        CHECK(ca_backend_queues(models[i]) == want[i], "%d models side by side: %u queues, want %u", models[i],
              ca_backend_queues(models[i]), want[i]);
    CHECK(CA_BACKEND_QUEUES_MAX >= 2 && CA_BACKEND_QUEUES_MAX <= VK_MAX_QUEUES, "the cap %d is within 2..%d",
          CA_BACKEND_QUEUES_MAX, VK_MAX_QUEUES);
}

/* ca_backend_open on device `spec` with `models` and `queues` (DLCA_QUEUES's place): the queues
 * it opened, 0 when it failed. */
static uint32_t opened(const char *spec, int models, int queues)
{
    ca_options o = {0};
    o.vk = test_vk_options();
    o.device = spec, o.models = models, o.vk.queues = queues;
    vk_context vk;
    ca_backend backend;
    if (ca_backend_open(&o, &vk, &backend) || backend != CA_BACKEND_GPU) {
        CHECK(0, "--device %s: %s", spec, err_message());
        return 0;
    }
    uint32_t n = vk.queue_count;
    vk_context_free(&vk);
    validation_errors += vk.validation_errors;
    return n;
}

static uint32_t min_u(uint32_t a, uint32_t b) { return a < b ? a : b; }

/* Returns 0, or 1 when there is no Vulkan device. */
static int test_opened(void)
{
    vk_context all;
    if (test_vk_context_init(&all, -1) != DLCA_OK) return 1;
    char spec[16];
    snprintf(spec, sizeof spec, "%d", all.device_index);
    uint32_t family = all.queue_count; /* the test options ask for every queue unless DLCA_QUEUES caps them */
    vk_context_free(&all);
    validation_errors += all.validation_errors;
    ca_options env;
    if (cli_env_read(&env)) {
        CHECK(0, "%s", err_message());
        return 0;
    }
    if (env.vk.queues > 0) {
        printf("DLCA_QUEUES=%d is set: only its number is checked\n", env.vk.queues);
        CHECK(opened(spec, 64, env.vk.queues) == min_u((uint32_t)env.vk.queues, family), "DLCA_QUEUES decides");
        return 0;
    }
    printf("device %s: its compute family has %u queue%s\n", spec, family, family == 1 ? "" : "s");
    static const int models[] = {0, 1, 2, 3, 4, 64};
    for (int i = 0; i < (int)(sizeof models / sizeof models[0]); i++) {
        uint32_t got = opened(spec, models[i], 0), want = min_u(ca_backend_queues(models[i]), family);
        CHECK(got == want, "%d models side by side opened %u queues, want %u", models[i], got, want);
    }
    CHECK(opened(spec, 64, 1) == 1, "DLCA_QUEUES=1 opens one queue for a population");
    CHECK(opened(spec, 0, VK_MAX_QUEUES) == family, "DLCA_QUEUES=%d opens the family's %u for one model",
          VK_MAX_QUEUES, family);
    CHECK(validation_errors == 0, "%d validation messages", validation_errors);
    return 0;
}

int main(void)
{
    test_rule();
    if (test_opened()) return test_no_vulkan("test_ca_backend", err_message());
    return test_finish("test_ca_backend");
}
