/* test_robust_cli: every flag of every dlca command is range-checked through the binary: each
 * out-of-range, malformed, unknown, missing or contradictory value gives a non-zero exit and
 * one line naming the flag, and writes nothing. Also: a device index that does not exist (or no
 * Vulkan at all) names the index; --resume refuses preset overrides and a step count it has
 * already passed. A fresh run never replaces a model it did not start (without --force), and
 * says what to do instead; export refuses to write over its own model. CPU only (device errors
 * are found before any GPU work). The environment's settings (DLCA_QUEUES, DLCA_TIMEOUT, ...) are
 * checked as flags are. */
#define _DEFAULT_SOURCE /* realpath */
#include "robust.h"

static char model[512];

/* A tiny trained model for run/eval/info/export and --resume: 2 steps of 8x8 checkerboard (its
 * final circuit, whatever step measured the fewest wrong cells). */
static int make_model(void)
{
    char err[8192];
    snprintf(model, sizeof model, "%s", robust_path("model.dlca"));
    int status = robust_run(err, sizeof err,
                            "train --preset checkerboard --grid 8x8 --T 4 --steps 2 --every 2 --keep-final --device cpu "
                            "--out '%s'",
                            model);
    CHECK(status == 0, "training the test model exits 0 (%d): %s", status, err);
    return status;
}

/* `dlca <command> <flag> <value>`: refused, naming `needle`, and no x.dlca / x.png written. */
static void bad_value(const char *command, const char *flag_and_value, const char *needle)
{
    char args[4096];
    const char *is_train = strcmp(command, "train") == 0 ? "x.dlca" : "x.png";
    if (strcmp(command, "train") == 0)
        snprintf(args, sizeof args, "train --device cpu --steps 1 --out '%s' %s", robust_path("x.dlca"), flag_and_value);
    else if (strcmp(command, "run") == 0)
        snprintf(args, sizeof args, "run '%s' --device cpu --out '%s' %s", model, robust_path("x.png"), flag_and_value);
    else
        snprintf(args, sizeof args, "%s '%s' %s", command, model, flag_and_value);
    robust_refused(needle, is_train, args);
}

static void test_train_ranges(void)
{
    static const char *const cases[][2] = {
        {"--steps 0", "--steps"}, {"--steps 100000001", "--steps"}, {"--steps -3", "--steps"},
        {"--steps 1e3", "--steps"}, {"--steps ''", "--steps"}, {"--steps 99999999999999999999", "--steps"},
        {"--batch 0", "--batch"}, {"--batch 65537", "--batch"}, {"--batch two", "--batch"},
        {"--T 0", "--T"}, {"--T 10001", "--T"},
        {"--grid 0x4", "--grid"}, {"--grid 4097x4", "--grid"}, {"--grid 4x", "--grid"}, {"--grid x4", "--grid"},
        {"--grid 4x4x4", "--grid"}, {"--grid 16", "--grid"}, {"--grid -4x4", "--grid"},
        {"--lr 0", "--lr"}, {"--lr -0.1", "--lr"}, {"--lr 101", "--lr"}, {"--lr nan", "--lr"}, {"--lr inf", "--lr"},
        {"--lr 1e999", "--lr"},
        {"--async 0", "--async"}, {"--async 1.5", "--async"}, {"--async nan", "--async"},
        {"--seed -1", "--seed"}, {"--seed 9223372036854775808", "--seed"},
        {"--every 0", "--every"}, {"--every 1000000001", "--every"},
        {"--cache some", "--cache"}, {"--boundary round", "--boundary"}, {"--preset glider", "glider"},
        {"--bogus 1", "--bogus"}, {"-s 1", "-s"}, {"stray", "stray"}, {"--steps", "--steps needs a value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) bad_value("train", cases[i][0], cases[i][1]);
}

static void test_run_ranges(void)
{
    static const char *const cases[][2] = {
        {"--steps -1", "--steps"}, {"--steps 1000001", "--steps"}, {"--scale 0", "--scale"}, {"--scale 65", "--scale"},
        {"--every 0", "--every"}, {"--async 0", "--async"}, {"--async 2", "--async"}, {"--grid 0x0", "--grid"},
        {"--grid 5000x5", "--grid"}, {"--seed -5", "--seed"}, {"--view sepia", "--view"},
        {"--damage 1,2,3", "--damage"}, {"--damage 1,2,0,3@4", "--damage"}, {"--damage 1,2,3,4@5-4", "--damage"},
        {"--damage 1,2,3,4@-1", "--damage"}, {"--damage 2000000000,0,2000000000,1@0", "--damage"},
        {"--damage 1,1,1,1@1x", "--damage"}, {"--hard --soft", "--hard and --soft"}, {"--soft --hard", "--hard and --soft"},
        {"--bogus 2", "--bogus"}, {"second.dlca", "second.dlca"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) bad_value("run", cases[i][0], cases[i][1]);
    /* A repeated mode is no contradiction. */
    char err[8192];
    int status = robust_run(err, sizeof err, "run '%s' --device cpu --soft --soft --steps 2 --out '%s'", model,
                            robust_path("soft.png"));
    CHECK(status == 0, "--soft --soft runs (%d): %s", status, err);
    /* Each flag in range, the picture not: 21 frames of 64x64 cells at 64 pixels a cell. */
    char args[4096];
    snprintf(args, sizeof args, "run '%s' --device cpu --grid 64x64 --scale 64 --steps 20 --every 1 --out '%s'", model,
             robust_path("x.png"));
    robust_refused("pixels is too large", "x.png", args);
    robust_refused("--out", NULL, "run model.dlca --device cpu");
    robust_refused("MODEL", NULL, "run --out x.png");
}

static void test_other_commands(void)
{
    char args[1024];
    bad_value("eval", "--bogus", "--bogus");
    bad_value("eval", "other.dlca", "other.dlca");
    bad_value("eval", "--device", "--device needs a value");
    bad_value("info", "--device 0", "--device");
    bad_value("export", "--format c", "--out");
    bad_value("export", "--out x.c", "--format");
    bad_value("export", "--format fortran --out x.f", "fortran");
    bad_value("export", "--format c --out x.c --bogus", "--bogus");
    robust_refused("MODEL", NULL, "eval");
    robust_refused("MODEL", NULL, "info");
    robust_refused("no model file", NULL, "export --format c --out x.c");
    robust_refused("unknown command 'frobnicate'", NULL, "frobnicate --steps 3");
    snprintf(args, sizeof args, "info '%s'", robust_path("missing.dlca"));
    robust_refused("missing.dlca", NULL, args);
    char err[8192];
    CHECK(robust_run(err, sizeof err, "%s", "") == 2, "dlca without a command exits 2 (usage)");
}

/* The index is named whether it is past the devices there are, absurdly large, or asked for
 * where there is no Vulkan at all (VK_ICD_FILENAMES pointing nowhere). */
static void test_device_index(void)
{
    char args[4096];
    const char *common = "train --preset checkerboard --grid 8x8 --T 4 --steps 1 --out";
    snprintf(args, sizeof args, "%s '%s' --device 4294967296", common, robust_path("x.dlca"));
    robust_refused("4294967296", "x.dlca", args);
    snprintf(args, sizeof args, "%s '%s' --device 18446744073709551617", common, robust_path("x.dlca"));
    robust_refused("18446744073709551617", "x.dlca", args);
    snprintf(args, sizeof args, "VK_ICD_FILENAMES=/nonexistent/icd.json '%s' %s '%s' --device 7", robust_dlca, common,
             robust_path("x.dlca"));
    /* through the shell by hand, so the variable applies to dlca only */
    char command[8192], err[8192];
    snprintf(command, sizeof command, "%s 2> '%s'", args, robust_path("stderr_nodev.txt"));
    int status = system(command);
    robust_read_text(robust_path("stderr_nodev.txt"), err, sizeof err);
    CHECK(status != -1 && robust_status(status) == 1, "--device 7 without Vulkan exits 1: %s", err);
    CHECK(robust_lines(err) == 1 && strstr(err, "--device 7"), "without Vulkan the message names --device 7: %s", err);
    snprintf(args, sizeof args, "run '%s' --device 99 --out '%s'", model, robust_path("x.png"));
    robust_refused("99", "x.png", args);
    snprintf(args, sizeof args, "eval '%s' --device 99", model);
    robust_refused("99", NULL, args);
    snprintf(args, sizeof args, "eval '%s' --device no-such-gpu", model);
    robust_refused("no-such-gpu", NULL, args);
}

static void test_resume_conflicts(void)
{
    static const char *const overrides[] = {"--preset gol", "--batch 4", "--T 3", "--seed 2", "--lr 0.1",
                                            "--async 0.5", "--grid 4x4", "--boundary zero", "--target x.png"};
    char args[2048];
    for (size_t i = 0; i < sizeof overrides / sizeof overrides[0]; i++) {
        snprintf(args, sizeof args, "train --resume '%s' --device cpu --out '%s' %s", model, robust_path("x.dlca"),
                 overrides[i]);
        robust_refused("--resume continues a run as it was configured", "x.dlca", args);
    }
    snprintf(args, sizeof args, "train --resume '%s' --device cpu --steps 2 --out '%s'", model, robust_path("x.dlca"));
    robust_refused("has already done 2 steps", "x.dlca", args);
    snprintf(args, sizeof args, "train --resume '%s' --device cpu --steps 1 --out '%s'", model, robust_path("x.dlca"));
    robust_refused("has already done 2 steps", "x.dlca", args);
}

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    *size = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        rewind(f);
        data = malloc(n > 0 ? (size_t)n : 1);
        if (data) *size = fread(data, 1, (size_t)(n > 0 ? n : 0), f);
    }
    fclose(f);
    return data;
}

static int same_as(const char *path, const unsigned char *bytes, size_t size)
{
    size_t n;
    unsigned char *now = read_all(path, &n);
    int same = now && bytes && n == size && memcmp(now, bytes, n) == 0;
    free(now);
    return same;
}

/* Runs never clobber: an existing --out that this run does not --resume is refused, byte for byte
 * intact, with the three ways on; --force replaces it; --resume into itself needs no --force. */
static void test_no_clobber(void)
{
    char args[4096], want[2048], err[8192];
    size_t size;
    unsigned char *bytes = read_all(model, &size);
    snprintf(want, sizeof want, "%s exists: pass --force to replace it, --resume %s to continue it, or --out NEW", model,
             model);
    snprintf(args, sizeof args, "train --preset checkerboard --grid 8x8 --T 4 --steps 2 --device cpu --out '%s'", model);
    robust_refused(want, NULL, args);
    CHECK(same_as(model, bytes, size), "the refused run left %s as it was", model);
    /* --resume one model into another existing one is clobbering it too. */
    char other[512];
    snprintf(other, sizeof other, "%s", robust_path("other.dlca"));
    FILE *f = fopen(other, "wb");
    if (f) fwrite(bytes, 1, size, f), fclose(f);
    snprintf(args, sizeof args, "train --resume '%s' --device cpu --steps 4 --out '%s'", model, other);
    robust_refused("other.dlca exists: pass --force", NULL, args);
    CHECK(same_as(other, bytes, size), "and left other.dlca as it was");
    /* The default --out (<preset>.dlca in the working directory) too. */
    char command[4096], *dlca = realpath(robust_dlca, NULL);
    snprintf(command, sizeof command, "cd '%s' && cp '%s' checkerboard.dlca && '%s' train --preset checkerboard --grid 8x8 "
             "--T 4 --steps 2 --device cpu 2> '%s'", robust_scratch, model, dlca ? dlca : robust_dlca, robust_path("default.txt"));
    free(dlca);
    int status = system(command);
    robust_read_text(robust_path("default.txt"), err, sizeof err);
    CHECK(status != -1 && robust_status(status) == 1 && strstr(err, "checkerboard.dlca exists: pass --force"),
          "the default --out is not clobbered either (%d): %s", robust_status(status), err);
    status = robust_run(err, sizeof err, "train --resume '%s' --device cpu --steps 4 --out '%s' --force", model, other);
    CHECK(status == 0 && !same_as(other, bytes, size), "--force replaces other.dlca (%d): %s", status, err);
    status = robust_run(err, sizeof err, "train --resume '%s' --device cpu --steps 6", other);
    CHECK(status == 0, "--resume into itself needs no --force (%d): %s", status, err);
    free(bytes);
}

/* dlca export MODEL --out MODEL (or a spelling of it) would replace the model with C source. */
static void test_export_onto_model(void)
{
    char args[4096], relative[1200];
    size_t size;
    unsigned char *bytes = read_all(model, &size);
    snprintf(args, sizeof args, "export '%s' --format c --out '%s'", model, model);
    robust_refused("is the model", NULL, args);
    snprintf(relative, sizeof relative, "%s/../%s/model.dlca", robust_scratch, strrchr(robust_scratch, '/') + 1);
    snprintf(args, sizeof args, "export '%s' --format verilog --out '%s'", model, relative);
    robust_refused("itself: give another --out", NULL, args);
    CHECK(same_as(model, bytes, size), "%s is intact", model);
    free(bytes);
}

/* The environment's settings are range-checked like flags: a bad value is one line naming the
 * variable, before any work. */
static void test_environment(void)
{
    static const char *cases[][2] = {{"DLCA_QUEUES", "0"},       {"DLCA_QUEUES", "17"},    {"DLCA_QUEUES", "two"},
                                     {"DLCA_TIMEOUT", "0"},      {"DLCA_THREADS", "-1"},   {"DLCA_PERSISTENT", "maybe"},
                                     {"DLCA_VALIDATE", "2"},     {"DLCA_CACHE", "half"},   {"DLCA_TILE", "65"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv(cases[i][0], cases[i][1], 1);
        bad_value("train", "--preset gol", cases[i][0]);
        unsetenv(cases[i][0]);
    }
}

/* train --help names --force and what the signals do; dlca --help the environment a user sets. */
static void test_help(void)
{
    char err[8192], out[16384];
    int status = robust_run(err, sizeof err, "train --help");
    robust_read_text(robust_path("stdout.txt"), out, sizeof out);
    CHECK(status == 0 && strstr(out, "--force") && strstr(out, "SIGHUP") && strstr(out, "symbolic link"),
          "train --help documents --force, SIGHUP and symbolic links: %s", out);
    status = robust_run(err, sizeof err, "--help");
    robust_read_text(robust_path("stdout.txt"), out, sizeof out);
    static const char *const names[] = {"DLCA_DEVICE=", "DLCA_VALIDATE=", "DLCA_ASSETS=", "DLCA_PIPELINE_CACHE=",
                                        "DLCA_QUEUES="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        CHECK(status == 0 && strstr(out, names[i]), "dlca --help names %s: %s", names[i], out);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (robust_init(argv[0], "robust_cli")) return 1;
    if (make_model() == 0) {
        test_train_ranges();
        test_run_ranges();
        test_other_commands();
        test_device_index();
        test_resume_conflicts();
        test_no_clobber();
        test_export_onto_model();
    }
    test_environment();
    test_help();
    robust_cleanup();
    return test_finish("test_robust_cli");
}
