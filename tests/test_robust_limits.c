/* test_robust_limits: tiny files and flags that ask for huge runs. A model file's config obeys
 * the same limits as the command line's flags (grid 4096, T 10000, batch 65536, train steps
 * 1..1e8), so a 3 KB file cannot ask for an 8192x8192 grid or T = 100000; every command refuses
 * such a file with one line before allocating from it. Runs run under an address-space limit
 * (RLIMIT_AS, except under ASan, whose shadow memory needs far more), so a refusal that came
 * after a large allocation would show as a different message. */
#define _DEFAULT_SOURCE /* wait4, for a child's own peak memory */
#include "ca_fixtures.h"
#include "robust_model.h"
#include "vk_context.h"
#include "vk_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define ROBUST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ROBUST_ASAN 1
#endif
#endif
#ifndef ROBUST_ASAN
#define ROBUST_ASAN 0
#endif

/* Address space a refused command may use: the binary, libpng, threads, and no grid. */
enum { LIMIT_MIB = 1024 };

/* `dlca <args>` under the address-space limit (none under ASan); stderr into err, exit status. */
static int run_limited(char *err, size_t size, const char *args)
{
    char command[8192], err_path[600];
    snprintf(err_path, sizeof err_path, "%s", robust_path("stderr_limited.txt"));
    char limit[64] = "";
    if (!ROBUST_ASAN) snprintf(limit, sizeof limit, "ulimit -v %d && ", LIMIT_MIB * 1024);
    snprintf(command, sizeof command, "%sexec '%s' %s > '%s' 2> '%s'", limit, robust_dlca, args,
             robust_path("stdout_limited.txt"), err_path);
    int status = system(command);
    robust_read_text(err_path, err, size);
    robust_drop_sanitizer_warnings(err);
    return status == -1 ? 127 : robust_status(status);
}

/* robust_refused, under the address-space limit. */
static void refused_limited(const char *needle, const char *left, const char *args)
{
    char err[8192];
    if (left) remove(robust_path(left));
    int status = run_limited(err, sizeof err, args);
    CHECK(status == 1 || status == 2, "'%s' exits 1 or 2, not %d: %s", args, status, err);
    CHECK(robust_lines(err) == 1, "'%s' prints one line, got %zu: %s", args, robust_lines(err), err);
    CHECK(strstr(err, needle) != NULL, "'%s': message '%s' names '%s'", args, err, needle);
    CHECK(!left || !robust_exists(robust_path(left)), "'%s' leaves no %s", args, left);
}

/* Every command that reads a model refuses `path` with `needle`, writing nothing. */
static void every_command_refuses(const char *path, const char *needle)
{
    static const char *const commands[] = {"info '%s'", "eval '%s' --device cpu", "run '%s' --device cpu --out '%s'",
                                           "export '%s' --format c --out '%s'",
                                           "train --resume '%s' --device cpu --out '%s'"};
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        char args[4096];
        snprintf(args, sizeof args, commands[k], path, robust_path("x.out"));
        refused_limited(needle, "x.out", args);
        refused_limited(path, "x.out", args);
    }
}

/* Fields one past what the flags allow, and the sizes of the security report (an 8192x8192
 * grid: 8.7 GB in eval; 16384x16384: 7 GB in run; T = 100000: 5 minutes of eval). */
static void test_file_obeys_flag_limits(void)
{
    static const struct {
        const char *field;
        int32_t value;
        const char *needle;
    } cases[] = {
        {"height", CA_MAX_SIDE + 1, "grid height = 4097 is outside 1..4096"},
        {"width", 8192, "grid width = 8192 is outside 1..4096"},
        {"height", 16384, "grid height = 16384 is outside 1..4096"},
        {"steps", CA_MAX_T + 1, "steps T = 10001 is outside 1..10000"},
        {"steps", 100000, "steps T = 100000 is outside 1..10000"},
        {"batch", CA_MAX_BATCH + 1, "batch = 65537 is outside 1..65536"},
    };
    ca_config c;
    ca_model m;
    tiny_config(&c, CA_BOUNDARY_ZERO, 1.0, 2, 3);
    if (ca_model_init(&m, &c) != DLCA_OK) {
        CHECK(0, "model: %s", err_message());
        return;
    }
    float *zeros = calloc(m.gate_count * GATE_OP_COUNT, sizeof(float));
    ca_train_state state = {2, 1.0, zeros, zeros, {0}, NULL};
    char path[512];
    snprintf(path, sizeof path, "%s", robust_path("limits.dlca"));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (robust_save_patched(path, &m, &state, NULL, cases[i].field, cases[i].value) != 0) {
            CHECK(0, "writing %s = %d", cases[i].field, cases[i].value);
            continue;
        }
        every_command_refuses(path, cases[i].needle);
    }
    /* The two reals, to the flags' ranges: --lr 1e-8..100, --async 1e-6..1. */
    size_t size;
    uint8_t *data = robust_model_bytes(&m, &state, NULL, &size);
    if (data) {
        robust_put_f64(data + robust_field_at(&c, "learning_rate"), 1000.0);
        robust_fix_crc(data, size);
        CHECK(robust_write_bytes(path, data, size) == 0, "write %s", path);
        every_command_refuses(path, "learning rate 1000 is outside 1e-08..100");
        robust_put_f64(data + robust_field_at(&c, "learning_rate"), c.learning_rate);
        robust_put_f64(data + robust_field_at(&c, "fire_rate"), 1e-9);
        robust_fix_crc(data, size);
        CHECK(robust_write_bytes(path, data, size) == 0, "write %s", path);
        every_command_refuses(path, "fire rate 1e-09 is outside 1e-06..1");
    }
    free(data), free(zeros), ca_model_free(&m);
}

/* The estimate a command gives for `args`: its message with --max-memory 0.001, in MiB; -1 when
 * it was not refused that way. */
static double estimate_mib(const char *args)
{
    char err[8192], with_limit[4200];
    snprintf(with_limit, sizeof with_limit, "%s --max-memory 0.001", args);
    int status = robust_run(err, sizeof err, "%s", with_limit);
    const char *at = strstr(err, "needs about ");
    double value;
    char unit[8];
    if (status != 1 || !at || sscanf(at, "needs about %lf %3s", &value, unit) != 2) {
        CHECK(0, "'%s' is refused with an estimate (%d): %s", with_limit, status, err);
        return -1.0;
    }
    return strcmp(unit, "GiB") == 0 ? value * 1024.0 : value;
}

/* Peak resident memory in MiB of `dlca <args>` run to the end (exit status in *status). */
static double peak_mib(const char *args, int *status)
{
    char command[8192];
    snprintf(command, sizeof command, "exec '%s' %s > '%s' 2>&1", robust_dlca, args, robust_path("peak.txt"));
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    int raw = 0;
    struct rusage usage;
    memset(&usage, 0, sizeof usage);
    *status = pid > 0 && wait4(pid, &raw, 0, &usage) == pid ? robust_status(raw) : -1;
    return (double)usage.ru_maxrss / 1024.0;
}

/* stdout of the last robust_run. */
static void last_stdout(char *text, size_t size) { robust_read_text(robust_path("stdout.txt"), text, size); }

/* DLCA_DEVICE is read in one place, the commands' device choice: eval honours it like train
 * and run (it ran on the CPU whatever it said), a value that names no device is refused with a
 * line naming the variable, --device wins over it, and an empty --device is refused. */
static void test_device_choice(void)
{
    char model[600], args[4096], err[8192], out[8192];
    snprintf(model, sizeof model, "%s/models/gol.dlca", DLCA_ASSET_DIR);
    static const char *const commands[][2] = {
        {"eval '%s'", NULL},
        {"run '%s' --grid 8x8 --steps 2 --out '%s'", "x.png"},
        {"train --preset checkerboard --grid 8x8 --T 2 --steps 1 --out '%s%s'", "x.dlca"},
    };
    setenv("DLCA_DEVICE", "abc", 1);
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        snprintf(args, sizeof args, commands[k][0], k == 2 ? "" : model,
                 commands[k][1] ? robust_path(commands[k][1]) : "");
        robust_refused("DLCA_DEVICE=abc: ", commands[k][1], args);
    }
    snprintf(args, sizeof args, "eval '%s' --device cpu", model);
    int status = robust_run(err, sizeof err, "%s", args);
    last_stdout(out, sizeof out);
    CHECK(status == 0 && strstr(out, "preset gol on cpu"), "--device cpu wins over DLCA_DEVICE=abc (%d): %s%s", status,
          out, err);
    setenv("DLCA_DEVICE", "cpu", 1);
    snprintf(args, sizeof args, "eval '%s'", model);
    status = robust_run(err, sizeof err, "%s", args);
    last_stdout(out, sizeof out);
    CHECK(status == 0 && strstr(out, "preset gol on cpu"), "eval with DLCA_DEVICE=cpu runs on the CPU (%d): %s%s", status,
          out, err);
    unsetenv("DLCA_DEVICE");
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        char with_flag[4200];
        snprintf(args, sizeof args, commands[k][0], k == 2 ? "" : model,
                 commands[k][1] ? robust_path(commands[k][1]) : "");
        snprintf(with_flag, sizeof with_flag, "%s --device ''", args);
        robust_refused("--device: empty", commands[k][1], with_flag);
    }
    /* A Vulkan device named by DLCA_DEVICE, even a CPU driver that auto would pass over. */
    vk_context vk;
    if (test_vk_context_init(&vk, -1) != DLCA_OK) {
        CHECK(getenv("DLCA_REQUIRE_VULKAN") == NULL, "no Vulkan device: %s", err_message());
        return;
    }
    char index[16], name[300];
    snprintf(index, sizeof index, "%d", vk.device_index);
    snprintf(name, sizeof name, "preset gol on %s", vk.props.deviceName);
    vk_context_free(&vk);
    setenv("DLCA_DEVICE", index, 1);
    status = robust_run(err, sizeof err, "eval '%s'", model);
    last_stdout(out, sizeof out);
    CHECK(status == 0 && strstr(out, name), "eval with DLCA_DEVICE=%s runs on '%s' (%d): %s%s", index, name, status, out,
          err);
    unsetenv("DLCA_DEVICE");
}

/* eval's exit status tells a failed check (it printed "0 of 2 checks passed" and exited 0), and
 * run refuses a --damage rectangle it would never apply (it ignored one outside the grid). */
static void test_eval_and_damage(void)
{
    char lizard[600], gol[600], args[4096], err[8192], out[8192];
    snprintf(lizard, sizeof lizard, "%s/models/lizard-torus.dlca", DLCA_ASSET_DIR);
    snprintf(gol, sizeof gol, "%s/models/gol.dlca", DLCA_ASSET_DIR);
    int status = robust_run(err, sizeof err, "eval '%s' --device cpu", lizard);
    last_stdout(out, sizeof out);
    CHECK(status == 1, "eval of lizard-torus (its torus check fails, README) exits 1, not %d", status);
    CHECK(strstr(out, "1 of 2 checks passed") && strstr(out, "FAIL"), "the checks are still printed: %s", out);
    CHECK(robust_lines(err) == 1 && strstr(err, "dlca eval: 1 of 2 checks failed"), "one line says so: %s", err);
    status = robust_run(err, sizeof err, "eval '%s' --device cpu", gol);
    last_stdout(out, sizeof out);
    CHECK(status == 0 && strstr(out, "2 of 2 checks passed") && err[0] == '\0', "eval of gol passes, exit 0 (%d): %s%s",
          status, out, err);
    static const struct {
        const char *damage, *needle;
    } bad[] = {
        {"8,0,2,2@1-2", "--damage 8,0,2,2@1-2: the rectangle is outside the 8x8 grid (x 0..7, y 0..7)"},
        {"0,8,2,2@1", "--damage 0,8,2,2@1-1: the rectangle is outside the 8x8 grid"},
        {"-3,0,3,2@1", "--damage -3,0,3,2@1-1: the rectangle is outside the 8x8 grid"},
        {"0,-5,1,5@1", "--damage 0,-5,1,5@1-1: the rectangle is outside the 8x8 grid"},
        {"100,100,5,5@0-3", "the rectangle is outside the 8x8 grid"},
        {"2,2,2,2@4-9", "--damage 2,2,2,2@4-9: the run has 4 steps (damage applies before steps 0..3)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "run '%s' --device cpu --grid 8x8 --steps 4 --damage 1,1,2,2@1 --damage %s --out '%s'",
                 gol, bad[i].damage, robust_path("x.png"));
        robust_refused(bad[i].needle, "x.png", args);
    }
    /* Partly inside: clipped, as before. */
    status = robust_run(err, sizeof err, "run '%s' --device cpu --grid 8x8 --steps 4 --damage 6,-1,5,3@3 --out '%s'", gol,
                        robust_path("x.png"));
    CHECK(status == 0 && robust_exists(robust_path("x.png")), "a rectangle partly in the grid is clipped (%d): %s", status,
          err);
}

/* A valid 3 KB model at the limits (a 4096x4096 grid) must not make eval, train --resume or run
 * take gigabytes before failing: each estimates its memory first and refuses past --max-memory
 * (default 4 GiB) in one line that says how much to give, under a 1 GiB address-space limit. */
static void test_memory_estimates_refuse(void)
{
    ca_config c;
    tiny_config(&c, CA_BOUNDARY_PERIODIC, 1.0, 2, 3);
    c.height = c.width = CA_MAX_SIDE;
    char path[512], args[4096], err[8192];
    snprintf(path, sizeof path, "%s", robust_path("big_grid.dlca"));
    if (robust_save_model(path, &c, 1, NULL) != 0) return;
    static const struct {
        const char *args, *needle, *left;
    } cases[] = {
        {"eval '%s' --device cpu", "eval of %s (a batch of 2 grids of 4096x4096, 2 channels) needs about", NULL},
        {"train --resume '%s' --device cpu --out '%s'", "training tiny (a batch of 2 grids of 4096x4096, 2 channels, T = 3) needs about", "x.dlca"},
        {"run '%s' --device cpu --scale 1 --steps 40 --every 1 --out '%s'",
         "run of %s (a 4096x4096 grid, 2 channels, 41 frames kept) needs about", "frames"},
        {"run '%s' --device cpu --scale 1 --soft --out '%s'", "run of %s (a 4096x4096 grid, 2 channels, 4 frames kept) needs about", "x.png"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char needle[1024];
        snprintf(args, sizeof args, cases[i].args, path, cases[i].left ? robust_path(cases[i].left) : "");
        snprintf(needle, sizeof needle, cases[i].needle, path);
        refused_limited(needle, cases[i].left, args);
        refused_limited("over the --max-memory limit of 4.0 GiB: give --max-memory ", cases[i].left, args);
    }
    snprintf(args, sizeof args, "info '%s'", path);
    CHECK(run_limited(err, sizeof err, args) == 0, "info on the valid file exits 0: %s", err);
    /* On a Vulkan device whose memory is host memory (lavapipe), the device's buffers count. */
    vk_context vk;
    if (test_vk_context_init(&vk, -1) == DLCA_OK) {
        int host = vk.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU || vk.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
        int index = vk.device_index;
        vk_context_free(&vk);
        if (host) {
            snprintf(args, sizeof args, "eval '%s' --device %d", path, index);
            robust_refused("over the --max-memory limit of 4.0 GiB", NULL, args);
            snprintf(args, sizeof args, "train --resume '%s' --device %d --out '%s'", path, index, robust_path("x.dlca"));
            robust_refused("over the --max-memory limit of 4.0 GiB", "x.dlca", args);
        }
    }
    /* Batch 65536 and T 10000, each allowed: petabytes, more than the flag can give. */
    c.batch = CA_MAX_BATCH, c.steps = CA_MAX_T;
    if (robust_save_model(path, &c, 1, NULL) != 0) return;
    snprintf(args, sizeof args, "train --resume '%s' --device cpu --out '%s' --max-memory 1048576", path, robust_path("x.dlca"));
    refused_limited("more than --max-memory can allow", "x.dlca", args);
    snprintf(args, sizeof args, "eval '%s' --device cpu", path);
    refused_limited("more than --max-memory can allow", NULL, args);
}

/* --max-memory raises (or lowers) the limit on purpose, and its value is range-checked. */
static void test_max_memory_flag(void)
{
    char gol[600], args[4096], err[8192];
    snprintf(gol, sizeof gol, "%s/models/gol.dlca", DLCA_ASSET_DIR);
    snprintf(args, sizeof args, "run '%s' --device cpu --grid 1024x1024 --scale 1 --steps 2 --out '%s' --max-memory 0.01",
             gol, robust_path("x.png"));
    refused_limited("over the --max-memory limit of 11 MiB: give --max-memory 0.1 to allow it", "x.png", args);
    snprintf(args, sizeof args, "run '%s' --device cpu --grid 1024x1024 --scale 1 --steps 2 --out '%s' --max-memory 0.1",
             gol, robust_path("x.png"));
    int status = run_limited(err, sizeof err, args);
    CHECK(status == 0 && robust_exists(robust_path("x.png")), "with the advised --max-memory it runs (%d): %s", status, err);
    static const char *const values[] = {"0", "-1", "lots", "1e9", "nan", "''"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        snprintf(args, sizeof args, "run '%s' --device cpu --out '%s' --max-memory %s", gol, robust_path("x.png"), values[i]);
        robust_refused("--max-memory", "x.png", args);
        snprintf(args, sizeof args, "eval '%s' --device cpu --max-memory %s", gol, values[i]);
        robust_refused("--max-memory", NULL, args);
        snprintf(args, sizeof args, "train --device cpu --steps 1 --out '%s' --max-memory %s", robust_path("x.dlca"),
                 values[i]);
        robust_refused("--max-memory", "x.dlca", args);
    }
    snprintf(args, sizeof args, "info '%s' --max-memory 1", gol);
    robust_refused("unknown option '--max-memory'", NULL, args);
}

/* The estimates are upper bounds of what the runs take (peak RSS, less a fixed allowance for the
 * binary and libraries), and not wildly above it. Not under ASan, whose shadow memory and
 * quarantine are part of the RSS. */
static void test_estimates_are_honest(void)
{
    if (ROBUST_ASAN) return;
    char gol[600], args[4096];
    snprintf(gol, sizeof gol, "%s/models/checkerboard.dlca", DLCA_ASSET_DIR);
    const char *const runs[] = {
        "train --preset checkerboard --grid 128x128 --T 6 --batch 2 --steps 1 --device cpu --out '%s'",
        "run '%s' --grid 64x64 --steps 4 --scale 1 --soft --device cpu --out '%s'",
        "run '%s' --grid 1024x1024 --steps 4 --scale 1 --device cpu --out '%s'",
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        if (i == 0) snprintf(args, sizeof args, runs[i], robust_path("x.dlca"));
        else snprintf(args, sizeof args, runs[i], gol, robust_path("x.png"));
        double estimate = estimate_mib(args);
        int status;
        double peak = peak_mib(args, &status);
        CHECK(status == 0, "'%s' runs (%d)", args, status);
        CHECK(estimate >= 0 && peak <= estimate + 48.0, "'%s': peak %.0f MiB is over the estimate of %.0f MiB", args, peak,
              estimate);
        CHECK(estimate >= 0 && estimate <= 4.0 * peak + 48.0, "'%s': the estimate of %.0f MiB is far over the peak %.0f MiB",
              args, estimate, peak);
    }
}

/* Output sizes are checked before the run: --grid 4096x4096 --scale 64 took 3.1 GB before the
 * strip was refused. */
static void test_output_size_first(void)
{
    char gol[600], args[4096];
    snprintf(gol, sizeof gol, "%s/models/gol.dlca", DLCA_ASSET_DIR);
    snprintf(args, sizeof args, "run '%s' --device cpu --grid 4096x4096 --scale 64 --out '%s'", gol, robust_path("x.png"));
    refused_limited("a strip of 2359304x262166 pixels is too large", "x.png", args);
    snprintf(args, sizeof args, "run '%s' --device cpu --grid 4096x4096 --scale 64 --out '%s'", gol, robust_path("frames"));
    refused_limited("a frame of 262144x262144 pixels is too large", "frames", args);
    snprintf(args, sizeof args, "run '%s' --device cpu --grid 2048x2048 --scale 8 --steps 40 --every 1 --out '%s'", gol,
             robust_path("x.png"));
    refused_limited("a strip of 671784x16406 pixels is too large", "x.png", args);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (robust_init(argv[0], "robust_limits")) return 1;
    test_file_obeys_flag_limits();
    test_device_choice();
    test_eval_and_damage();
    test_memory_estimates_refuse();
    test_max_memory_flag();
    test_estimates_are_honest();
    test_output_size_first();
    robust_cleanup();
    return test_finish("test_robust_limits");
}
