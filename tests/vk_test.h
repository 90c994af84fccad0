/* vk_test.h: how the GPU tests open a Vulkan device: the one DLCA_DEVICE names (else the best),
 * with the options the command line reads from the environment (so DLCA_VALIDATE=1 runs them
 * under the validation layers, as CI's second pass does), and a hang timeout generous enough for
 * a loaded 2-core machine: a real hang still ends in the fence's message, before ctest's limit. */
#ifndef DLCA_VK_TEST_H
#define DLCA_VK_TEST_H

#include "cli_env.h"
#include "error.h"
#include "vk_context.h"

enum { TEST_VK_TIMEOUT_S = 480 };

/* The context options of the environment, with the tests' timeout. */
static inline vk_context_options test_vk_options(void)
{
    ca_options o;
    if (cli_env_read(&o)) {
        fprintf(stderr, "test: %s\n", err_message());
        exit(1);
    }
    o.vk.timeout_s = TEST_VK_TIMEOUT_S;
    return o.vk;
}

/* vk_context_init on the device the environment names (device_index < 0), or on device_index. */
static inline int test_vk_context_init(vk_context *vk, int device_index)
{
    vk_context_options options = test_vk_options();
    if (device_index >= 0) return vk_context_init(vk, device_index, &options);
    ca_options o;
    if (cli_env_read(&o)) return DLCA_ERR;
    return vk_context_init_spec(vk, o.device, &options);
}

#endif
