/* test_vk_context.c: device choice and listing, buffers (round trip, fills, accounting,
 * errors), spreading command buffers over queues, timestamps, the shader registry and the pipeline table. With DLCA_VALIDATE=1 any
 * validation message fails the test. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "vk_buffer.h"
#include "vk_command.h"
#include "vk_context.h"
#include "vk_pipeline.h"

static const char *test_name = "test_vk_context";
static int validation_errors; /* from contexts already freed */

static uint64_t xorshift_state = 0x9e3779b97f4a7c15ull;
static uint64_t xorshift_next(void)
{
    xorshift_state ^= xorshift_state << 13;
    xorshift_state ^= xorshift_state >> 7;
    xorshift_state ^= xorshift_state << 17;
    return xorshift_state;
}

static void test_list_devices(const vk_context *vk)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    CHECK(out != NULL, "open_memstream");
    if (!out) return;
    int rc = vk_list_devices(out);
    fclose(out);
    CHECK(rc == DLCA_OK, "vk_list_devices: %s", err_message());
    CHECK(text && strstr(text, vk->props.deviceName), "listing names the device: %s", text ? text : "");
    CHECK(text && strstr(text, "MiB") && strstr(text, "Vulkan 1."), "listing has memory and version: %s", text ? text : "");
    printf("%s", text ? text : "");
    free(text);
}

static void test_device_choice(const vk_context *vk)
{
    vk_context other;
    int rc = test_vk_context_init(&other, 999);
    CHECK(rc == DLCA_ERR, "index 999 gives DLCA_ERR, got %d", rc);
    CHECK(strstr(err_message(), "999") && strstr(err_message(), "out of range"), "message names the index: %s",
          err_message());
    validation_errors += other.validation_errors;

    rc = vk_context_init_spec(&other, "no-such-device-xyz", NULL);
    CHECK(rc == DLCA_ERR && strstr(err_message(), "no-such-device-xyz"), "unknown spec: rc %d, %s", rc, err_message());
    validation_errors += other.validation_errors;

    rc = vk_context_init_spec(&other, vk_device_type_name(vk->props.deviceType), NULL);
    CHECK(rc == DLCA_OK, "spec by type \"%s\": %s", vk_device_type_name(vk->props.deviceType), err_message());
    CHECK(rc || other.props.deviceType == vk->props.deviceType, "spec by type picks that type");
    vk_context_free(&other);
    validation_errors += other.validation_errors;

    vk_context zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    vk_context_free(&zeroed); /* must not crash */
    CHECK(zeroed.instance == VK_NULL_HANDLE, "free on a zeroed context");
}

static void test_round_trip(vk_context *vk)
{
    /* Larger than one staging chunk (64 MiB), at an odd offset, so chunking and offsets are covered. */
    const size_t bytes = (65u << 20) + 13, offset = 7;
    size_t before = vk->device_bytes;
    vk_buffer buf;
    int rc = vk_buffer_create(vk, &buf, bytes + offset + 100, VK_BUFFER_DEVICE);
    CHECK(rc == DLCA_OK, "create: %s", err_message());
    if (rc) return;
    CHECK(vk->device_bytes >= before + bytes && vk->peak_device_bytes >= vk->device_bytes, "device bytes %zu peak %zu",
          vk->device_bytes, vk->peak_device_bytes);
    unsigned char *in = malloc(bytes), *out = malloc(bytes);
    CHECK(in && out, "host memory");
    if (in && out) {
        for (size_t i = 0; i < bytes; i++) in[i] = (unsigned char)(xorshift_next() >> 56);
        memset(out, 0, bytes);
        rc = vk_buffer_upload(vk, &buf, offset, in, bytes);
        CHECK(rc == DLCA_OK, "upload: %s", err_message());
        rc = vk_buffer_download(vk, &buf, offset, out, bytes);
        CHECK(rc == DLCA_OK, "download: %s", err_message());
        CHECK(memcmp(in, out, bytes) == 0, "round trip of %zu random bytes", bytes);
    }
    CHECK(vk_buffer_upload(vk, &buf, buf.size - 3, in, 4) == DLCA_ERR, "upload past the end is refused");
    CHECK(strstr(err_message(), "overruns") != NULL, "overrun message: %s", err_message());
    free(in);
    free(out);
    vk_buffer_free(vk, &buf);
    CHECK(vk->device_bytes == before, "device bytes back to %zu, got %zu", before, vk->device_bytes);
}

static void test_fill(vk_context *vk)
{
    vk_buffer buf;
    VkCommandBuffer cmd;
    float got[64];
    if (vk_buffer_create(vk, &buf, sizeof got, VK_BUFFER_DEVICE) || vk_cmd_begin(vk, &cmd)) {
        CHECK(0, "set-up: %s", err_message());
        return;
    }
    int rc = vk_buffer_fill_float(cmd, vk_view_all(&buf), 1.5f);
    vk_cmd_barrier_compute_to_transfer(cmd);
    if (!rc) rc = vk_buffer_zero(cmd, vk_view_of(&buf, 16 * sizeof(float), 8 * sizeof(float)));
    CHECK(vk_buffer_fill(cmd, vk_view_of(&buf, 2, 8), 0) == DLCA_ERR, "unaligned fill is refused");
    CHECK(vk_buffer_fill(cmd, vk_view_of(&buf, 0, sizeof got + 4), 0) == DLCA_ERR, "fill past the end is refused");
    if (!rc) rc = vk_cmd_finish(vk, cmd);
    if (!rc) rc = vk_buffer_download(vk, &buf, 0, got, sizeof got);
    CHECK(rc == DLCA_OK, "fill: %s", err_message());
    int wrong = 0;
    for (int i = 0; i < 64; i++) wrong += got[i] != ((i >= 16 && i < 24) ? 0.0f : 1.5f);
    CHECK(!rc && wrong == 0, "%d filled values wrong", wrong);
    vk_buffer_free(vk, &buf);
}

/* vk_spread: command buffer k fills words [4k, 4k + 4) with k + 1 (+ 10 on the second round) and
 * is submitted once recorded, spread over every queue, then over one: each region is its
 * buffer's once the wait returns. Nothing submitted is no error. A context asked for one queue
 * opens one. */
static void test_submit_spread(vk_context *vk)
{
    enum { COUNT = 5, WORDS = 4 * COUNT };
    CHECK(vk->queue_count >= 1 && vk->queue_count <= VK_MAX_QUEUES && vk->queue == vk->queues[0],
          "the context opened 1 to %d queues, the first its submit-and-wait queue (%u)", VK_MAX_QUEUES, vk->queue_count);
    vk_buffer buf;
    if (vk_buffer_create(vk, &buf, WORDS * sizeof(uint32_t), VK_BUFFER_DEVICE)) {
        CHECK(0, "set-up: %s", err_message());
        return;
    }
    for (uint32_t queues = 0; queues <= 1; queues++) {
        VkCommandBuffer cmds[COUNT] = {0};
        vk_spread spread;
        vk_spread_begin(vk, &spread, queues);
        int rc = DLCA_OK;
        for (uint32_t k = 0; !rc && k < COUNT; k++) {
            rc = vk_cmd_begin(vk, &cmds[k]);
            if (!rc) rc = vk_buffer_fill(cmds[k], vk_view_of(&buf, 16 * k, 16), k + 1 + 10 * queues);
            if (!rc) rc = vk_cmd_end(cmds[k]);
            if (!rc) rc = vk_spread_submit(&spread, cmds[k]);
        }
        int waited = vk_spread_wait(&spread);
        if (!rc) rc = waited;
        CHECK(spread.submitted == COUNT && spread.queues == (queues ? 1 : vk->queue_count),
              "%u submitted on %u queues", spread.submitted, spread.queues);
        for (int k = 0; k < COUNT; k++) vk_cmd_free(vk, cmds[k]);
        uint32_t got[WORDS];
        if (!rc) rc = vk_buffer_download(vk, &buf, 0, got, sizeof got);
        CHECK(rc == DLCA_OK, "spread over %u queues: %s", spread.queues, err_message());
        int wrong = 0;
        for (uint32_t i = 0; !rc && i < WORDS; i++) wrong += got[i] != i / 4 + 1 + 10 * queues;
        CHECK(!rc && wrong == 0, "spread over %u queues: %d words not their command buffer's", spread.queues, wrong);
    }
    vk_spread none;
    vk_spread_begin(vk, &none, 0);
    CHECK(vk_spread_wait(&none) == DLCA_OK, "nothing submitted: the wait returns at once");
    vk_buffer_free(vk, &buf);
    vk_context one;
    vk_context_options options = test_vk_options();
    options.queues = 1;
    int rc = vk_context_init(&one, vk->device_index, &options);
    CHECK(rc == DLCA_OK && one.queue_count == 1, "a context asked for one queue opens one (%u): %s", one.queue_count,
          rc ? err_message() : "");
    vk_context_free(&one);
    validation_errors += one.validation_errors;
}

static void test_buffer_errors(vk_context *vk)
{
    vk_buffer buf;
    size_t before = vk->device_bytes;
    CHECK(vk_buffer_create(vk, &buf, 0, VK_BUFFER_DEVICE) == DLCA_ERR, "zero-size buffer refused");
    int rc = vk_buffer_create(vk, &buf, (VkDeviceSize)1 << 50, VK_BUFFER_DEVICE);
    CHECK(rc == DLCA_ERR && strstr(err_message(), "1073741824.0 MiB"), "huge buffer names its MiB: %s", err_message());
    CHECK(buf.buffer == VK_NULL_HANDLE && vk->device_bytes == before, "failed create leaves nothing behind");
}

static void test_timestamps(vk_context *vk)
{
    vk_buffer buf;
    VkCommandBuffer cmd;
    uint64_t ns[3] = {0, 0, 0};
    if (vk_buffer_create(vk, &buf, 16u << 20, VK_BUFFER_DEVICE) || vk_cmd_begin(vk, &cmd)) {
        CHECK(0, "set-up: %s", err_message());
        return;
    }
    int rc = vk_cmd_timestamps_reset(vk, cmd, 0, 4);
    if (!rc) rc = vk_cmd_timestamp(vk, cmd, 0);
    if (!rc) rc = vk_buffer_fill(cmd, vk_view_all(&buf), 0x3f800000u);
    if (!rc) rc = vk_cmd_timestamp(vk, cmd, 1);
    vk_cmd_barrier_compute_to_transfer(cmd);
    if (!rc) rc = vk_buffer_zero(cmd, vk_view_all(&buf));
    if (!rc) rc = vk_cmd_timestamp(vk, cmd, 2);
    CHECK(vk_cmd_timestamp(vk, cmd, VK_TIMESTAMP_COUNT) == DLCA_ERR, "timestamp index out of the pool refused");
    if (!rc) rc = vk_cmd_finish(vk, cmd);
    if (!rc) rc = vk_timestamps_read(vk, 0, 3, ns);
    CHECK(rc == DLCA_OK, "timestamps: %s", err_message());
    if (vk->timestamp_valid_bits) {
        CHECK(ns[0] <= ns[1] && ns[1] <= ns[2], "monotonic: %llu %llu %llu", (unsigned long long)ns[0],
              (unsigned long long)ns[1], (unsigned long long)ns[2]);
        CHECK(ns[2] - ns[0] < 60000000000ull, "plausible span %llu ns", (unsigned long long)(ns[2] - ns[0]));
        CHECK(vk_timestamps_read(vk, 3, 1, ns) == DLCA_ERR, "reset but unwritten timestamp is an error");
        printf("%s: fill 16 MiB: %.3f ms\n", test_name, (double)(ns[1] - ns[0]) * 1e-6);
    } else {
        CHECK(ns[0] == 0 && ns[2] == 0, "no timestamp support reads zeros");
    }
    vk_buffer_free(vk, &buf);
}

static void test_pipelines(vk_context *vk)
{
    CHECK(vk_shader_count() >= 1, "shaders embedded");
    const vk_shader_code *code = vk_shader_find("gate_coefficients");
    CHECK(code && code->size % 4 == 0 && code->code[0] == 0x07230203u, "gate_coefficients is SPIR-V");
    CHECK(vk_shader_find("no_such_shader") == NULL, "unknown shader is NULL");
    int rc = vk_pipelines_create_all(vk);
    CHECK(rc == DLCA_OK, "every pipeline in the table matches its shader: %s", err_message());
    /* Descriptor types come from the SPIR-V: the fused kernels' layer table is a uniform block. */
    const vk_pipeline *fused = NULL, *plain = NULL;
    if (!vk_pipeline_get(vk, VK_PIPE_FUSED_STEP_FORWARD, &fused) && !vk_pipeline_get(vk, VK_PIPE_GATE_SUMS_REDUCE, &plain)) {
        CHECK(fused->uniform_bindings == 1u << 3, "fused_step_forward: binding 3 alone is uniform (mask %#x)",
              fused->uniform_bindings);
        CHECK(plain->uniform_bindings == 0, "gate_sums_reduce: storage buffers only (mask %#x)", plain->uniform_bindings);
    }
}

/* Specialised pipelines: the same constants give the one pipeline, kept until its last holder
 * lets go; other constants give another. */
static void test_specialized_sharing(vk_context *vk)
{
    const uint32_t one[1] = {1}, two[1] = {2};
    vk_pipeline a = {0}, b = {0}, c = {0};
    int rc = vk_pipeline_create_specialized(vk, VK_PIPE_GATE_COEFFICIENTS, one, 1, &a);
    rc = rc ? rc : vk_pipeline_create_specialized(vk, VK_PIPE_GATE_COEFFICIENTS, one, 1, &b);
    rc = rc ? rc : vk_pipeline_create_specialized(vk, VK_PIPE_GATE_COEFFICIENTS, two, 1, &c);
    CHECK(rc == DLCA_OK, "specialised pipelines: %s", err_message());
    CHECK(a.pipeline && a.pipeline == b.pipeline, "the same constants share one pipeline");
    CHECK(c.pipeline && c.pipeline != a.pipeline, "other constants get their own");
    vk_pipeline_destroy(vk, &a);
    CHECK(!a.pipeline && vk->specialized && b.pipeline, "a holder lets go: the pipeline stays for the other");
    vk_pipeline_destroy(vk, &b);
    vk_pipeline_destroy(vk, &c);
    CHECK(!b.pipeline && !c.pipeline && !vk->specialized, "the last holder lets go: destroyed");
}

/* Several specialised pipelines compiled at once: duplicates and ones already made are shared,
 * the new ones counted; a bad job fails the call with its message and holds nothing. */
static void test_specialized_many(vk_context *vk)
{
    const uint32_t one[1] = {1}, two[1] = {2}, three[1] = {3};
    vk_pipeline made = {0}, a = {0}, b = {0}, c = {0}, d = {0};
    int rc = vk_pipeline_create_specialized(vk, VK_PIPE_GATE_COEFFICIENTS, three, 1, &made);
    uint32_t created = vk->pipelines_created;
    const vk_specialize_job jobs[] = {{VK_PIPE_GATE_COEFFICIENTS, one, 1, &a},
                                      {VK_PIPE_GATE_COEFFICIENTS, one, 1, &b},
                                      {VK_PIPE_GATE_COEFFICIENTS, two, 1, &c},
                                      {VK_PIPE_GATE_COEFFICIENTS, three, 1, &d}};
    rc = rc ? rc : vk_pipeline_create_specialized_many(vk, jobs, 4, 2);
    CHECK(rc == DLCA_OK, "specialised pipelines at once: %s", err_message());
    CHECK(a.pipeline && a.pipeline == b.pipeline && c.pipeline && c.pipeline != a.pipeline &&
              d.pipeline == made.pipeline,
          "at once: the same constants share one pipeline, an earlier one is reused");
    CHECK(vk->pipelines_created == created + 2, "two compiled (%u)", vk->pipelines_created - created);
    vk_pipeline_destroy(vk, &a), vk_pipeline_destroy(vk, &b), vk_pipeline_destroy(vk, &c);
    vk_pipeline_destroy(vk, &d), vk_pipeline_destroy(vk, &made);
    CHECK(!vk->specialized, "every holder let go: all destroyed");

    uint32_t many[VK_SPEC_EXTRA_MAX + 1] = {0};
    const vk_specialize_job bad[] = {{VK_PIPE_GATE_COEFFICIENTS, one, 1, &a},
                                     {VK_PIPE_GATE_COEFFICIENTS, many, VK_SPEC_EXTRA_MAX + 1, &b}};
    rc = vk_pipeline_create_specialized_many(vk, bad, 2, 2);
    CHECK(rc != DLCA_OK && strstr(err_message(), "specialisation constants") && !a.pipeline && !b.pipeline &&
              !vk->specialized,
          "too many constants: refused, nothing held (%s)", err_message());
    const vk_specialize_job unknown[] = {{VK_PIPE_COUNT, one, 1, &a}};
    rc = vk_pipeline_create_specialized_many(vk, unknown, 1, 1);
    CHECK(rc != DLCA_OK && strstr(err_message(), "not in the table") && !a.pipeline, "an unknown id: %s",
          err_message());
}

/* Pipeline statistics asked for: a device with VK_KHR_pipeline_executable_properties prints each
 * pipeline's statistics, one without it says so once; either way every pipeline still builds. */
static void test_pipeline_statistics(const vk_context *vk)
{
    vk_context_options stats = test_vk_options();
    stats.pipeline_stats = 1;
    vk_context other;
    int rc = vk_context_init(&other, vk->device_index, &stats);
    CHECK(rc == DLCA_OK, "context with pipeline statistics: %s", err_message());
    if (!rc) {
        printf("%s: pipeline statistics %s\n", test_name, other.pipeline_statistics ? "on" : "not offered");
        rc = vk_pipelines_create_all(&other);
        CHECK(rc == DLCA_OK, "every pipeline builds with statistics asked for: %s", err_message());
        validation_errors += other.validation_errors;
        vk_context_free(&other);
    }
}

int main(void)
{
    vk_context vk;
    int rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    printf("%s: device %d: %s (%s), timestamps %u bits, validation %s\n", test_name, vk.device_index,
           vk.props.deviceName, vk_device_type_name(vk.props.deviceType), vk.timestamp_valid_bits,
           vk.validate ? "on" : "off");
    test_list_devices(&vk);
    test_device_choice(&vk);
    test_round_trip(&vk);
    test_fill(&vk);
    test_submit_spread(&vk);
    test_buffer_errors(&vk);
    test_timestamps(&vk);
    test_pipelines(&vk);
    test_specialized_sharing(&vk);
    test_specialized_many(&vk);
    test_pipeline_statistics(&vk);
    vk_context_free(&vk);
    validation_errors += vk.validation_errors;
    CHECK(validation_errors == 0, "%d validation messages", validation_errors);
    return test_finish(test_name);
}
