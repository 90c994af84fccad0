/* test_robust_limits: tiny files and flags that ask for huge runs. A model file's config obeys
 * the same limits as the command line's flags (grid 4096, T 10000, batch 65536, train steps
 * 1..1e8), so a 3 KB file cannot ask for an 8192x8192 grid or T = 100000; every command refuses
 * such a file with one line before allocating from it. Runs run under an address-space limit
 * (RLIMIT_AS, except under ASan, whose shadow memory needs far more), so a refusal that came
 * after a large allocation would show as a different message. */
#include "ca_fixtures.h"
#include "robust_model.h"
#include "vk_context.h"

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
    ca_train_state state = {2, 1.0, zeros, zeros};
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
    if (vk_context_init(&vk, -1) != DLCA_OK) {
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
    snprintf(lizard, sizeof lizard, "%s/models/lizard.dlca", DLCA_ASSET_DIR);
    snprintf(gol, sizeof gol, "%s/models/gol.dlca", DLCA_ASSET_DIR);
    int status = robust_run(err, sizeof err, "eval '%s' --device cpu", lizard);
    last_stdout(out, sizeof out);
    CHECK(status == 1, "eval of the shipped lizard (its checks fail, README) exits 1, not %d", status);
    CHECK(strstr(out, "0 of 2 checks passed") && strstr(out, "FAIL"), "the checks are still printed: %s", out);
    CHECK(robust_lines(err) == 1 && strstr(err, "dlca eval: 2 of 2 checks failed"), "one line says so: %s", err);
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

int main(int argc, char **argv)
{
    (void)argc;
    if (robust_init(argv[0], "robust_limits")) return 1;
    test_file_obeys_flag_limits();
    test_device_choice();
    test_eval_and_damage();
    robust_cleanup();
    return test_finish("test_robust_limits");
}
