/* ca_backend.c: device choice shared by train, run, eval, bench and the viewer. */
#include "ca_backend.h"

#include "error.h"

#include <stdio.h>
#include <string.h>

uint32_t ca_backend_queues(int models)
{
    return models <= 1 ? 1 : models < CA_BACKEND_QUEUES_MAX ? (uint32_t)models : CA_BACKEND_QUEUES_MAX;
}

int ca_backend_open(const ca_options *options, vk_context *vk, ca_backend *backend)
{
    vk_context_options made = options->vk;
    if (made.queues <= 0) made.queues = (int)ca_backend_queues(options->models);
    const char *spec = options->device ? options->device : "auto";
    char source[160];
    if (options->device_from_environment)
        snprintf(source, sizeof source, "DLCA_DEVICE=%.120s", spec);
    else
        snprintf(source, sizeof source, "--device %.120s", spec);
    memset(vk, 0, sizeof *vk);
    *backend = CA_BACKEND_CPU;
    if (!spec[0])
        return err_set(DLCA_ERR, "--device: empty: give auto, cpu, a Vulkan device index or part of its name "
                                 "(see `dlca devices`)");
    if (strcmp(spec, "cpu") == 0) return DLCA_OK;
    if (strcmp(spec, "auto") == 0) {
        if (vk_context_init_spec(vk, "auto", &made) != DLCA_OK) {
            err_clear();
            return DLCA_OK;
        }
        if (vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
            vk_context_free(vk);
            return DLCA_OK;
        }
        *backend = CA_BACKEND_GPU;
        return DLCA_OK;
    }
    int status = vk_context_init_spec(vk, spec, &made);
    if (status != DLCA_OK) {
        /* "no Vulkan device found" alone would not say which device was asked for, or where. */
        char reason[768];
        snprintf(reason, sizeof reason, "%s", err_message());
        err_set(status, "%s: %s", source, reason);
        return DLCA_ERR;
    }
    *backend = CA_BACKEND_GPU;
    return DLCA_OK;
}

const char *ca_backend_name(ca_backend backend, const vk_context *vk)
{
    return backend == CA_BACKEND_GPU ? vk->props.deviceName : "cpu";
}
