/* test_cli_config: a model's config as text (src/core/ca_config_text.h). Every preset printed
 * and read back is the same config; the architecture flags of `dlca train` (--channels,
 * --kernels, --perception, --update, --wiring, --steps-per-rollout) shape the model; `dlca info
 * m.dlca > m.conf; dlca train --config m.conf` repeats the run: the same wiring and logits at step
 * 0, and after the same steps the same model file byte for byte but for the training time it
 * records (the f64 seconds, which a clock measures); flags override the file; info and export
 * give the same gate counts; and bad files and values are refused in one line that names the
 * file, the line and the key. */
#include "ca_config_text.h"
#include "ca_file.h"
#include "check.h"
#include "error.h"

#include <libgen.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dlca[1024], scratch[256];

/* Runs `dlca <args>` in the scratch folder with stdout into `out_name`, stderr into `err`. */
static int run_dlca(char *err, size_t err_size, const char *out_name, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
static int run_dlca(char *err, size_t err_size, const char *out_name, const char *format, ...)
{
    char args[4096], command[8192];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(command, sizeof command, "cd '%s' && '%s' %s > '%s' 2> stderr.txt", scratch, dlca, args, out_name);
    int status = system(command);
    snprintf(command, sizeof command, "%s/stderr.txt", scratch);
    FILE *f = fopen(command, "r");
    size_t n = f ? fread(err, 1, err_size - 1, f) : 0;
    err[n] = '\0';
    if (f) fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static const char *in_scratch(const char *name)
{
    static char paths[2][600];
    static int next;
    next ^= 1;
    snprintf(paths[next], sizeof paths[next], "%s/%s", scratch, name);
    return paths[next];
}

static void write_text(const char *name, const char *text)
{
    FILE *f = fopen(in_scratch(name), "w");
    if (f) fputs(text, f), fclose(f);
}

/* A model file's bytes, with its training time set to 0 (every other byte as trained). */
static uint8_t *model_bytes(const char *name, size_t *size)
{
    ca_model m;
    ca_train_state state;
    ca_target_image target;
    uint8_t *data = NULL;
    *size = 0;
    if (ca_file_load(in_scratch(name), &m, &state, &target)) return NULL;
    state.seconds = 0.0;
    if (ca_file_save_memory(&data, size, &m, state.moment1 ? &state : NULL, target.bits ? &target : NULL)) data = NULL;
    ca_model_free(&m), ca_train_state_free(&state), ca_target_image_free(&target);
    return data;
}

/* The model file of a fresh model of `config` (wiring and logits at step 0), as bytes. */
static uint8_t *fresh_bytes(const ca_config *config, size_t *size)
{
    ca_model m;
    uint8_t *data = NULL;
    *size = 0;
    if (ca_model_init(&m, config)) return NULL;
    if (ca_file_save_memory(&data, size, &m, NULL, NULL)) data = NULL;
    ca_model_free(&m);
    return data;
}

static int same_fresh_model(const ca_config *a, const ca_config *b)
{
    size_t n, m;
    uint8_t *x = fresh_bytes(a, &n), *y = fresh_bytes(b, &m);
    int same = x && y && n == m && memcmp(x, y, n) == 0;
    free(x), free(y);
    return same;
}

/* Every preset, printed and read back, is the same config (the same fresh model). */
static void test_presets_round_trip(void)
{
    for (int i = 0; ca_preset_names[i]; i++) {
        ca_config c, back;
        ca_config_preset(&c, ca_preset_names[i]);
        c.seed = 12345678901234ull, c.learning_rate = 0.1 + 1e-12, c.fire_rate = 0.3;
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        ca_config_print(&c, f);
        fclose(f);
        ca_config_assignments list;
        memset(&list, 0, sizeof list);
        int rc = ca_config_parse_text(&list, text, size, "printed");
        if (!rc) rc = ca_config_build(&back, &list, "gol");
        CHECK(rc == 0, "%s: its printed config reads back: %s", ca_preset_names[i], err_message());
        CHECK(rc == 0 && back.seed == c.seed && back.learning_rate == c.learning_rate && back.fire_rate == c.fire_rate &&
                  memcmp(back.update_widths, c.update_widths, sizeof c.update_widths) == 0 &&
                  strcmp(back.preset, c.preset) == 0,
              "%s: every field comes back exactly", ca_preset_names[i]);
        if (i < 3) CHECK(rc == 0 && same_fresh_model(&c, &back), "%s: the same fresh model", ca_preset_names[i]);
        ca_config_assignments_free(&list);
        free(text);
    }
}

static const char *const train_flags =
    "--preset checkerboard --grid 6x6 --steps-per-rollout 3 --channels 4 --kernels 2 --perception 8,4 "
    "--update 32x3,16,4 --wiring random --async 0.7 --lr 0.03 --seed 7 --steps 4 --every 1 --device cpu";

static void test_flags_and_round_trip(void)
{
    char err[4096];
    int status = run_dlca(err, sizeof err, "train.txt", "train %s --out a.dlca", train_flags);
    CHECK(status == 0, "train with the architecture flags exits 0: %s", err);
    ca_model a;
    if (ca_file_load(in_scratch("a.dlca"), &a, NULL, NULL)) {
        CHECK(0, "load a.dlca: %s", err_message());
        return;
    }
    const ca_config *c = &a.config;
    static const int update[] = {32, 32, 32, 16, 4};
    CHECK(c->height == 6 && c->width == 6 && c->steps == 3 && c->channels == 4 && c->kernels == 2 &&
              c->perception_depth == 2 && c->perception_widths[1] == 4 && c->update_depth == 5 &&
              memcmp(c->update_widths, update, sizeof update) == 0 && c->update_wiring == WIRING_RANDOM &&
              c->fire_rate == 0.7 && c->learning_rate == 0.03 && c->seed == 7 && c->train_steps == 4,
          "the flags shape the model (C %d, K %d, %d update layers)", c->channels, c->kernels, c->update_depth);
    status = run_dlca(err, sizeof err, "a.conf", "info a.dlca");
    CHECK(status == 0, "dlca info exits 0: %s", err);
    /* info and export count the same gates: the model's, and the circuit's with each of the
     * 2 x (8 + 4) perception gates once for each of the 4 channels */
    size_t gates = a.gate_count, circuit = a.gate_count + 24 * 3;
    FILE *f = fopen(in_scratch("a.conf"), "r");
    char info[4096] = "", want[256];
    if (f) info[fread(info, 1, sizeof info - 1, f)] = '\0', fclose(f);
    snprintf(want, sizeof want, "# gates: %zu in the model, %zu in its boolean circuit before pruning", gates, circuit);
    CHECK(strstr(info, want) != NULL, "info says '%s':\n%s", want, info);
    status = run_dlca(err, sizeof err, "export.txt", "export a.dlca --format c --out a.c");
    FILE *e = fopen(in_scratch("export.txt"), "r");
    char exported[1024] = "";
    if (e) exported[fread(exported, 1, sizeof exported - 1, e)] = '\0', fclose(e);
    snprintf(want, sizeof want, "from %zu in the circuit: the model's %zu gates", circuit, gates);
    CHECK(status == 0 && strstr(exported, want), "export says '%s': %s", want, exported);
    ca_config_assignments list;
    ca_config back;
    memset(&list, 0, sizeof list);
    int rc = ca_config_load_text(&list, in_scratch("a.conf"));
    if (!rc) rc = ca_config_build(&back, &list, "gol");
    CHECK(rc == 0, "dlca info's output reads back as a config: %s", err_message());
    CHECK(rc == 0 && same_fresh_model(c, &back), "the same wiring and logits at step 0");
    ca_config_assignments_free(&list);
    ca_model_free(&a);
    status = run_dlca(err, sizeof err, "train.txt", "train --config a.conf --device cpu --every 1 --out b.dlca");
    CHECK(status == 0, "train --config a.conf exits 0: %s", err);
    size_t n, m;
    uint8_t *x = model_bytes("a.dlca", &n), *y = model_bytes("b.dlca", &m);
    CHECK(x && y && n == m && memcmp(x, y, n) == 0,
          "the rerun's model file is a.dlca's byte for byte (%zu, %zu bytes), its training time aside", n, m);
    free(x), free(y);
    /* A flag after the file wins over it. */
    status = run_dlca(err, sizeof err, "train.txt", "train --config a.conf --steps 2 --seed 8 --device cpu --out c.dlca");
    ca_model later;
    if (status == 0 && ca_file_load(in_scratch("c.dlca"), &later, NULL, NULL) == 0) {
        CHECK(later.config.train_steps == 2 && later.config.seed == 8 && later.config.channels == 4,
              "--steps 2 --seed 8 override the file's 4 and 7, the rest is the file's");
        ca_model_free(&later);
    } else {
        CHECK(0, "train --config a.conf --steps 2 exits 0: %s", err);
    }
    /* channels without update: the last update layer follows (checkerboard's ends in 8). */
    status = run_dlca(err, sizeof err, "train.txt",
                      "train --preset checkerboard --grid 6x6 --T 2 --channels 4 --steps 1 --device cpu --out d.dlca");
    if (status == 0 && ca_file_load(in_scratch("d.dlca"), &later, NULL, NULL) == 0) {
        CHECK(later.config.update_widths[later.config.update_depth - 1] == 4, "--channels 4 alone makes the last update layer 4");
        ca_model_free(&later);
    } else {
        CHECK(0, "train --channels 4 alone exits 0: %s", err);
    }
}

/* A config file `text` is refused: one line naming `needle`, no model written. */
static void refused_file(const char *text, const char *needle, const char *extra)
{
    char err[4096];
    write_text("bad.conf", text);
    int status = run_dlca(err, sizeof err, "out.txt", "train --config bad.conf --device cpu --out bad.dlca %s", extra);
    size_t lines = 0;
    for (const char *p = err; *p; p++) lines += *p == '\n';
    struct stat st;
    CHECK(status == 1 && lines == 1 && strstr(err, needle), "refused naming '%s' in one line (%d): %s", needle, status, err);
    CHECK(stat(in_scratch("bad.dlca"), &st) != 0, "no model written for '%s'", needle);
}

static void test_bad_files(void)
{
    refused_file("preset = gol\n# a comment\ncolour = blue\n", "bad.conf:3: colour: unknown key 'colour' (keys: preset, grid", "");
    refused_file("preset = gol\nchannels = many\n", "bad.conf:2: channels: 'many' is not a whole number", "");
    refused_file("seed = 1\n\nsteps = 3\nseed = 2\n", "bad.conf:4: seed: already set on line 1", "");
    refused_file("grid 4x4\n", "bad.conf:1: 'grid 4x4' is not 'key = value'", "");
    refused_file("grid =\n", "bad.conf:1: grid: no value after '='", "");
    refused_file("T = 4\n", "bad.conf:1: T: in a file the key is 'steps-per-rollout'", "");
    refused_file("preset = checkerboard\nupdate = 16,8\nchannels = 3   # too few\n",
                 "bad.conf:3: channels = 3: config: the last update layer must have C = 3 gates, not 8", "");
    refused_file("preset = checkerboard\nperception = 4,2\n",
                 "bad.conf:2: perception = 4,2: config: the first perception layer is moore wiring", "");
    refused_file("preset = checkerboard\nloss-channels = 9\n", "bad.conf:2: loss-channels = 9: config: loss channels = 9", "");
    refused_file("preset = gol\n", "--preset checkerboard contradicts bad.conf:1: preset = gol", "--preset checkerboard");
    refused_file("fire-rate = 0\n", "bad.conf:1: fire-rate: 0 is outside", "");
    refused_file("update = 64x33\n", "bad.conf:1: update: 33 is outside 1..32", "");
    refused_file("weight-decay = 1.5\n", "bad.conf:1: weight-decay: 1.5 is outside", "");
    refused_file("preset = image\npool-starts = 2\n", "pool-starts = 2 needs a pool", "");
    char err[4096];
    int status = run_dlca(err, sizeof err, "out.txt", "train --config missing.conf --device cpu --out bad.dlca");
    CHECK(status == 1 && strstr(err, "cannot open missing.conf"), "a missing file is named: %s", err);
    mkdir(in_scratch("folder.conf"), 0777);
    status = run_dlca(err, sizeof err, "out.txt", "train --config folder.conf --device cpu --out bad.dlca");
    CHECK(status == 1 && strstr(err, "folder.conf: not a regular file"), "a folder is refused: %s", err);
    status = run_dlca(err, sizeof err, "out.txt", "train --resume a.dlca --config a.conf --device cpu");
    CHECK(status != 0 && strstr(err, "--resume continues a run as it was configured"), "--config with --resume is refused: %s", err);
    status = run_dlca(err, sizeof err, "out.txt", "train --config a.conf --config a.conf --device cpu --out bad.dlca");
    CHECK(status == 2 && strstr(err, "--config: one file only"), "two --config files are refused: %s", err);
    status = run_dlca(err, sizeof err, "out.txt", "train --update 8,8,3 --preset checkerboard --channels 4 --device cpu --out bad.dlca");
    CHECK(status == 1 && strstr(err, "config: the last update layer must have C = 4 gates, not 3"),
          "flags that disagree are refused: %s", err);
    status = run_dlca(err, sizeof err, "help.txt", "train --help");
    char help[8192] = "";
    FILE *f = fopen(in_scratch("help.txt"), "r");
    if (f) help[fread(help, 1, sizeof help - 1, f)] = '\0', fclose(f);
    int every_key = 1;
    for (int i = 0; i < ca_config_key_count; i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s ", ca_config_keys[i].key);
        every_key &= strstr(help, flag) != NULL;
    }
    CHECK(status == 0 && every_key && strstr(help, "--config FILE"), "train --help lists --config and every key");
}

int main(int argc, char **argv)
{
    char self[900];
    (void)argc;
    snprintf(self, sizeof self, "%s", argv[0]);
    char *dir = dirname(self), cwd[512];
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd)) snprintf(dlca, sizeof dlca, "%s/%s/dlca", cwd, dir);
    else snprintf(dlca, sizeof dlca, "%s/dlca", dir);
    snprintf(scratch, sizeof scratch, "/tmp/dlca_config_XXXXXX");
    if (!mkdtemp(scratch)) return fprintf(stderr, "cannot make a scratch folder\n"), 1;
    test_presets_round_trip();
    test_flags_and_round_trip();
    test_bad_files();
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    if (!getenv("DLCA_TEST_KEEP") && system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch);
    return test_finish("test_cli_config");
}
