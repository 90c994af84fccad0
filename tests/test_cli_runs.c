/* test_cli_runs: `dlca runs DIR` on a folder of good, damaged and foreign files. Models are
 * listed by name (*.dlca, or any file with the model magic), each with its preset, steps done of
 * the total and the losses of its CSV's last row at or before the model's step ('-' without a
 * CSV); junk, a truncated model and a folder named *.dlca are listed as unreadable with the
 * reason, and the listing goes on (exit 0); CSVs, plots, notes and hidden files are not listed;
 * a folder that cannot be read is one clear line and exit 1. */
#include "check.h"

#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dlca[1024], scratch[256];

static int shell(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int shell(const char *format, ...)
{
    char args[4096], command[8192];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(command, sizeof command, "cd '%s' && %s", scratch, args);
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static char *slurp(const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = calloc(1, 1 << 16);
    if (text) text[fread(text, 1, (1 << 16) - 1, f)] = '\0';
    fclose(f);
    return text;
}

/* The line of `out` that starts with `name` followed by a space, or NULL. */
static const char *line_of(const char *out, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ') return p;
    return NULL;
}

/* Does the line of `name` hold the words of `want` in order (spaces between them free)? */
static int line_says(const char *out, const char *name, const char *const *want, int count)
{
    const char *line = line_of(out, name);
    if (!line) return 0;
    const char *end = strchr(line, '\n');
    for (int i = 0; i < count; i++) {
        const char *hit = strstr(line, want[i]);
        if (!hit || (end && hit > end)) return 0;
        line = hit + strlen(want[i]);
    }
    return 1;
}

/* The eval column is dlca eval's verdict: for each shipped model (some pass, lizard-torus fails)
 * "pass" exactly when `dlca eval` exits 0; --no-eval leaves "-". */
static void test_verdicts(void)
{
    static const char *const models[] = {"checkerboard.dlca", "gol.dlca", "image.dlca", "lizard.dlca",
                                         "lizard-torus.dlca"};
    int status = shell("'%s' runs '%s/models' > verdicts.txt 2> err.txt", dlca, DLCA_ASSET_DIR);
    char *out = slurp("verdicts.txt");
    CHECK(status == 0 && out, "dlca runs of the shipped models exits 0 (%d)", status);
    int passes = 0, fails = 0;
    for (size_t i = 0; out && i < sizeof models / sizeof models[0]; i++) {
        int eval = shell("'%s' eval '%s/models/%s' --device cpu > /dev/null 2>&1", dlca, DLCA_ASSET_DIR, models[i]);
        const char *line = line_of(out, models[i]);
        const char *word = eval == 0 ? " pass " : " FAIL ";
        const char *end = line ? strchr(line, '\n') : NULL;
        const char *hit = line ? strstr(line, word) : NULL;
        CHECK(hit && (!end || hit < end), "%s: '%s' as dlca eval exits %d:\n%s", models[i], word, eval, out);
        passes += eval == 0, fails += eval != 0;
    }
    CHECK(passes > 0 && fails > 0, "the shipped models hold both verdicts (%d pass, %d fail)", passes, fails);
    free(out);
    status = shell("'%s' runs --no-eval '%s/models' > verdicts.txt 2> err.txt", dlca, DLCA_ASSET_DIR);
    out = slurp("verdicts.txt");
    CHECK(status == 0 && out && !strstr(out, " pass ") && !strstr(out, " FAIL ") && line_of(out, "gol.dlca"),
          "--no-eval lists the models without a verdict:\n%s", out ? out : "");
    free(out);
}

int main(int argc, char **argv)
{
    char self[900], cwd[512];
    (void)argc;
    snprintf(self, sizeof self, "%s", argv[0]);
    char *dir = dirname(self);
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd)) snprintf(dlca, sizeof dlca, "%s/%s/dlca", cwd, dir);
    else snprintf(dlca, sizeof dlca, "%s/dlca", dir);
    snprintf(scratch, sizeof scratch, "/tmp/dlca_runs_XXXXXX");
    if (!mkdtemp(scratch)) return fprintf(stderr, "cannot make a scratch folder\n"), 1;
    int status = shell("mkdir runs && '%s' train --preset checkerboard --grid 8x8 --T 4 --steps 4 --every 2 --device cpu "
                       "--out runs/good.dlca > /dev/null 2>&1", dlca);
    CHECK(status == 0, "train the good model (%d)", status);
    /* copy.dlca: no CSV; model.bin: a model by its magic; early: its CSV runs past its step 4;
     * cut.dlca: truncated; bad.dlca: junk; sub.dlca: a folder; the rest is not a model */
    status = shell("cd runs && cp good.dlca copy.dlca && cp good.dlca model.bin && cp good.dlca early.dlca && "
                   "{ cat good.csv; echo '6,0.5,7,1.0'; } > early.csv && head -c 300 good.dlca > cut.dlca && "
                   "echo 'not a model' > bad.dlca && mkdir sub.dlca && echo notes > notes.txt && "
                   "cp good.dlca .hidden.dlca");
    CHECK(status == 0, "make the folder (%d)", status);
    status = shell("'%s' runs runs > out.txt 2> err.txt", dlca);
    char *out = slurp("out.txt"), *err = slurp("err.txt"), *csv = slurp("runs/good.csv");
    CHECK(status == 0 && err && !err[0], "dlca runs exits 0 with nothing on stderr (%d): %s", status, err ? err : "");
    if (!out || !csv) return test_finish("test_cli_runs");
    /* the expected losses: good.csv's last row (step 4), as dlca runs prints them */
    double step = -1, soft = 0, hard = 0;
    char soft_text[32] = "?", hard_text[32] = "?";
    for (const char *line = csv; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (sscanf(line, "%lf,%lf,%lf", &step, &soft, &hard) == 3)
            snprintf(soft_text, sizeof soft_text, "%.4g", soft), snprintf(hard_text, sizeof hard_text, "%.4g", hard);
    CHECK(step == 4, "good.csv's last row is step 4 (%g)", step);
    const char *const good[] = {"checkerboard", "4/4", soft_text, hard_text};
    CHECK(line_says(out, "good.dlca", good, 4), "good.dlca: preset, 4/4 steps, the CSV's last losses:\n%s", out);
    CHECK(line_says(out, "early.dlca", good, 4), "early.dlca: the row of step 4, not the later step 6:\n%s", out);
    CHECK(line_says(out, "model.bin", (const char *const[]){"checkerboard", "4/4", "-", "-"}, 4),
          "model.bin: a model by its magic bytes, no CSV beside it:\n%s", out);
    CHECK(line_says(out, "copy.dlca", (const char *const[]){"checkerboard", "4/4", "-", "-"}, 4), "copy.dlca: no CSV:\n%s", out);
    CHECK(line_says(out, "bad.dlca", (const char *const[]){"unreadable:", "bad.dlca: not a dlca model"}, 2),
          "bad.dlca is listed with the reason:\n%s", out);
    CHECK(line_says(out, "cut.dlca", (const char *const[]){"unreadable:", "cut.dlca"}, 2), "cut.dlca is listed:\n%s", out);
    CHECK(line_says(out, "sub.dlca", (const char *const[]){"unreadable:", "sub.dlca"}, 2), "a folder named .dlca:\n%s", out);
    CHECK(!line_of(out, "notes.txt") && !line_of(out, "good.csv") && !line_of(out, "good-loss.png") &&
              !line_of(out, ".hidden.dlca"),
          "no CSV, plot, note or hidden file is listed:\n%s", out);
    static const char *const order[] = {"file ", "bad.dlca", "copy.dlca", "cut.dlca", "early.dlca", "good.dlca", "model.bin", "sub.dlca"};
    int sorted = 1;
    const char *p = out;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        size_t n = strlen(order[i]);
        sorted &= p && strncmp(p, order[i], n) == 0;
        p = p ? strchr(p, '\n') : NULL;
        if (p) p++;
    }
    CHECK(sorted && p && !*p, "a header, then one line a model, sorted by name:\n%s", out);
    free(out), free(err);
    test_verdicts();
    status = shell("'%s' runs no-such-folder > out.txt 2> err.txt", dlca);
    err = slurp("err.txt");
    CHECK(status == 1 && err && strstr(err, "cannot list no-such-folder") && strchr(err, '\n') == strrchr(err, '\n'),
          "a missing folder: one line, exit 1 (%d): %s", status, err ? err : "");
    free(err);
    status = shell("'%s' runs runs runs > out.txt 2> err.txt", dlca);
    CHECK(status == 2, "two folders: a usage error (%d)", status);
    status = shell("cd runs && '%s' runs > ../here.txt 2> ../err.txt", dlca);
    out = slurp("here.txt");
    CHECK(status == 0 && out && line_of(out, "good.dlca"), "without DIR it lists the working folder");
    free(out), free(csv);
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    if (!getenv("DLCA_TEST_KEEP") && system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch);
    return test_finish("test_cli_runs");
}
