/* test_robust_gpu: the Vulkan engine fails clearly instead of crashing or hanging. Out of device
 * memory (a batch or T no GPU can hold) gives one line naming the size and what to change; a
 * submission that outlives its timeout is reported as a hang and poisons no later call; a NaN
 * stops GPU training naming the step; SIGTERM saves; and a Vulkan validation message is counted
 * (vk_validation_message_count) and fails `dlca` when DLCA_VALIDATE=1. Any validation message
 * from the work that should be clean fails this test. */
#include "ca_file.h"
#include "error.h"
#include "robust.h"
#include "vk_buffer.h"
#include "vk_command.h"
#include "vk_context.h"
#include "vk_test.h"

static int device_index;

/* --max-memory at its largest: on a device whose memory is host memory (lavapipe) dlca's own
 * estimate would refuse these first (test_robust_limits tests that); here the engine's checks are. */
static void expect_gpu_refusal(const char *flags, const char *needle, const char *hint)
{
    char args[4096], err[8192];
    snprintf(args, sizeof args, "train --preset checkerboard --device %d --population 1 --steps 1 --max-memory 1048576 --out '%s' %s",
             device_index, robust_path("oom.dlca"), flags);
    time_t start = time(NULL);
    robust_refused(needle, "oom.dlca", args);
    robust_run(err, sizeof err, "%s", args);
    CHECK(strstr(err, hint) != NULL, "'%s': the message suggests '%s': %s", flags, hint, err);
    CHECK(time(NULL) - start < 120, "'%s' took %ld s to fail", flags, (long)(time(NULL) - start));
}

static void test_out_of_memory(void)
{
    /* 72 GiB of floats in one step block: over the 32-bit indexing limit before any allocation. */
    expect_gpu_refusal("--batch 65536", "77309411328 floats", "smaller batch");
    /* T = 10000 caches ~700 GB of activations in the per-layer kernels: more than any device has
     * (the fused kernels keep none: where they fit, this would train). */
    setenv("DLCA_FUSED", "0", 1);
    expect_gpu_refusal("--T 10000 --batch 16", "out of GPU memory for a device buffer of 720000.0 MiB",
                       "--cache checkpoint");
    unsetenv("DLCA_FUSED");
}

/* One long command buffer with a 1 ns timeout: reported as a hang, later submissions refused at
 * once, and the context still frees. */
static void test_hang(void)
{
    vk_context vk;
    if (test_vk_context_init(&vk, device_index) != DLCA_OK) {
        CHECK(0, "init: %s", err_message());
        return;
    }
    vk_buffer buf;
    VkCommandBuffer cmd;
    int rc = vk_buffer_create(&vk, &buf, 64u << 20, VK_BUFFER_DEVICE);
    CHECK(rc == DLCA_OK, "64 MiB buffer: %s", err_message());
    if (!rc && vk_cmd_begin(&vk, &cmd) == DLCA_OK) {
        /* Long enough on lavapipe (~1 s) to be running still when the buffer is freed below. */
        for (uint32_t i = 0; i < 64; i++) vk_buffer_fill(cmd, vk_view_all(&buf), i);
        vk.timeout_ns = 1;
        rc = vk_cmd_finish(&vk, cmd);
        CHECK(rc != DLCA_OK && strstr(err_message(), "did not finish within"), "a 1 ns timeout is a hang: %s",
              err_message());
        CHECK(vk.hung, "the context knows it hung");
        VkCommandBuffer again;
        if (vk_cmd_begin(&vk, &again) == DLCA_OK) {
            rc = vk_cmd_finish(&vk, again);
            CHECK(rc != DLCA_OK && strstr(err_message(), "hung earlier"), "after a hang, submissions are refused: %s",
                  err_message());
        }
    }
    vk_buffer_free(&vk, &buf); /* waits for the fills still running: freed under them, lavapipe crashed */
    CHECK(!vk.hung || vk.hung_drained, "freeing after a hang waited for the device first");
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages in the hang test", vk.validation_errors);
}

static long long checkpoint_step(const char *path)
{
    ca_model m;
    ca_train_state state;
    if (ca_file_load(path, &m, &state, NULL) != DLCA_OK) return fprintf(stderr, "%s\n", err_message()), -1;
    long long step = state.moment1 ? (long long)state.step : -1;
    ca_model_free(&m), ca_train_state_free(&state);
    return step;
}

static void test_nan_and_signal(void)
{
    char out[512], log[512], index[16], text[16384], last[2048];
    snprintf(out, sizeof out, "%s", robust_path("gpu.dlca"));
    snprintf(log, sizeof log, "%s", robust_path("gpu.txt"));
    snprintf(index, sizeof index, "%d", device_index);
    char *nan_run[] = {NULL, "train", "--preset", "checkerboard", "--grid", "8x8", "--T", "4", "--device", index,
                       "--population", "1", "--steps", "10", "--every", "1", "--out", out, NULL};
    int status = robust_wait(robust_spawn(nan_run, log, "DLCA_TEST_INJECT_NAN", "3", 0));
    robust_read_text(log, text, sizeof text);
    robust_last_line(text, last, sizeof last);
    CHECK(status == 1 && strstr(last, "not finite at step 3") && strstr(last, "is intact and holds step 2"),
          "GPU NaN at step 3: exit 1 (%d), names step 3 and the kept step 2: %s", status, last);
    CHECK(checkpoint_step(out) == 2, "GPU NaN: the checkpoint holds step 2");

    remove(out);
    char *long_run[] = {NULL, "train", "--preset", "checkerboard", "--grid", "8x8", "--T", "4", "--device", index,
                        "--population", "1", "--steps", "100000000", "--every", "5", "--out", out, NULL};
    pid_t pid = robust_spawn(long_run, log, NULL, NULL, 0);
    for (int i = 0; i < 12000 && !robust_exists(out); i++) robust_sleep_ms(10);
    kill(pid, SIGTERM);
    status = robust_wait(pid);
    robust_read_text(log, text, sizeof text);
    CHECK(status == 0, "GPU SIGTERM: exit 0, got %d: %s", status, text);
    CHECK(checkpoint_step(out) >= 5, "GPU SIGTERM: a checkpoint with step >= 5 (%lld)", checkpoint_step(out));
}

/* A deliberate misuse (a buffer of 0 bytes) under the layer is counted, in the context and in
 * the process; and the binary, under best-practice checks, fails its run on the messages. */
static void test_validation_counts(void)
{
    vk_context_options validate = test_vk_options();
    validate.validate = 1;
    vk_context bad;
    int rc = vk_context_init(&bad, device_index, &validate);
    if (rc != DLCA_OK) {
        const char *required = getenv("DLCA_REQUIRE_VULKAN");
        CHECK(!(required && required[0] == '1'), "no validation layer: %s", err_message());
        printf("validation: skipped (%s)\n", err_message());
        return;
    }
    int before = vk_validation_message_count();
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = 0,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkBuffer buffer = VK_NULL_HANDLE;
    fprintf(stderr, "test_robust_gpu: a validation error follows on purpose\n");
    if (vkCreateBuffer(bad.device, &info, NULL, &buffer) == VK_SUCCESS && buffer) vkDestroyBuffer(bad.device, buffer, NULL);
    CHECK(bad.validation_errors > 0, "a 0-byte buffer is reported by the layer");
    CHECK(vk_validation_message_count() > before, "and counted for the process (%d -> %d)", before,
          vk_validation_message_count());
    vk_context_free(&bad);

    /* Room for every best-practice warning (one or more a buffer), so that the last line read is dlca's. */
    static char err[1 << 17];
    char args[2048], last[2048];
    snprintf(args, sizeof args,
             "train --preset checkerboard --grid 8x8 --T 2 --steps 1 --device %d --population 1 --out '%s'", device_index,
             robust_path("v.dlca"));
    char command[8192];
    snprintf(command, sizeof command,
             "DLCA_VALIDATE=1 VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT '%s' %s 2> '%s'",
             robust_dlca, args, robust_path("v.txt"));
    int status = system(command);
    robust_read_text(robust_path("v.txt"), err, sizeof err);
    robust_last_line(err, last, sizeof last);
    CHECK(strstr(err, "vulkan validation") != NULL, "best-practice checks report something on a training run");
    CHECK(status != -1 && robust_status(status) == 1 && strstr(last, "Vulkan validation message"),
          "dlca fails a run with validation messages (%d): %s", robust_status(status), last);
}

int main(int argc, char **argv)
{
    (void)argc;
    vk_context vk;
    if (test_vk_context_init(&vk, -1) != DLCA_OK) return test_no_vulkan("test_robust_gpu", err_message());
    device_index = vk.device_index;
    vk_context_free(&vk);
    if (robust_init(argv[0], "robust_gpu")) return 1;
    test_out_of_memory();
    test_hang();
    test_nan_and_signal();
    test_validation_counts();
    robust_cleanup();
    return test_finish("test_robust_gpu");
}
