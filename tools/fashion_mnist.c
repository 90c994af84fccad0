/* fashion_mnist.c: example program for the tn autograd module. Trains a 784-128-10 MLP
 * (src/tensor/tn_mlp.h) with Adam and a cosine learning rate on all 60000 Fashion-MNIST training
 * images, on the CPU or on a Vulkan device, and prints the loss per epoch, the test accuracy and
 * the time taken. `fashion_mnist --help` prints the usage. */
#include "error.h"
#include "tn_mlp.h"
#include "tn_vk.h"
#include "vk_context.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *data;
    long epochs, batch, hidden, seed;
    double lr;
    int device; /* -1: the CPU; else a Vulkan device index (`dlca devices` lists them) */
} options;

static const char *usage_text =
    "usage: fashion_mnist [--data DIR] [--epochs N] [--batch N] [--lr X] [--hidden N] [--seed N]\n"
    "                     [--device cpu|N] [--help]\n"
    "  --data DIR     the gzip'd IDX files (default /usr/share/datasets/fashion-mnist;\n"
    "                 Debian: apt-get install dataset-fashion-mnist)\n"
    "  --epochs N     passes over the 60000 training images (default 5)\n"
    "  --batch N      minibatch size, 1 to 1024 (default 128)\n"
    "  --lr X         peak learning rate of Adam's cosine schedule (default 0.002)\n"
    "  --hidden N     hidden units (default 128)\n"
    "  --seed N       weights and batch order (default 1)\n"
    "  --device D     cpu (default), or the index of a Vulkan device (`dlca devices`)\n"
    "  --help         this text\n";

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A bad call: one line on stderr, exit status 2. */
static int usage(const char *why, const char *flag)
{
    fprintf(stderr, "fashion_mnist: %s%s%s (see fashion_mnist --help)\n", why, flag ? ": " : "", flag ? flag : "");
    return 2;
}

static int known_flag(const char *flag)
{
    static const char *const flags[] = {"--data", "--device", "--lr", "--epochs", "--batch", "--hidden", "--seed"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strcmp(flag, flags[i]) == 0) return 1;
    return 0;
}

/* Parses the flags; returns 0, 1 after printing the help (exit 0), or 2 after a one-line error. */
static int parse(int argc, char **argv, options *o)
{
    *o = (options){"/usr/share/datasets/fashion-mnist", 5, 128, 128, 1, 2e-3, -1};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (strncmp(flag, "--", 2) != 0) return usage("not a flag", flag);
        if (!known_flag(flag)) return usage("unknown flag", flag);
        if (!value) return usage("a flag needs a value", flag);
        if (strcmp(flag, "--data") == 0) o->data = value;
        else if (strcmp(flag, "--device") == 0) o->device = strcmp(value, "cpu") == 0 ? -1 : (int)strtol(value, &end, 10);
        else if (strcmp(flag, "--lr") == 0) o->lr = strtod(value, &end);
        else if (strcmp(flag, "--epochs") == 0) o->epochs = strtol(value, &end, 10);
        else if (strcmp(flag, "--batch") == 0) o->batch = strtol(value, &end, 10);
        else if (strcmp(flag, "--hidden") == 0) o->hidden = strtol(value, &end, 10);
        else if (strcmp(flag, "--seed") == 0) o->seed = strtol(value, &end, 10);
        if (end && (*end || end == value)) return usage("not a number", value);
        i++;
    }
    if (o->epochs < 1 || o->batch < 1 || o->batch > 1024 || o->hidden < 1 || !(o->lr > 0) || o->device < -1)
        return usage("epochs, hidden >= 1, batch in [1, 1024], lr > 0, device cpu or >= 0", NULL);
    return 0;
}

static int load(const char *dir, const char *set, tn_idx *images, tn_idx *labels)
{
    char ip[1024], lp[1024];
    snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, set);
    snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, set);
    return tn_idx_load_pair(ip, lp, images, labels);
}

/* Trains and evaluates on `dev` (NULL: the CPU); returns 0 or 1 after printing the error. */
static int run(const options *o, tn_dev *dev, tn_idx *tx, tn_idx *ty, tn_idx *vx, tn_idx *vy)
{
    size_t n = tx->dims[0], pixels = tx->count / n;
    size_t *order = malloc(n * sizeof *order);
    mlp m;
    tn_rng rng;
    int status = order ? mlp_init(&m, pixels, (size_t)o->hidden, 10, (uint64_t)o->seed) : DLCA_ERR_NOMEM;
    if (status == DLCA_OK && dev) status = mlp_to_device(&m, dev);
    tn_optim opt = tn_optim_adam(o->lr, 0.9, 0.999, 1e-8, 0.0);
    tn_lr_schedule lr = tn_lr_cosine(o->lr, o->epochs * (long)((n + (size_t)o->batch - 1) / (size_t)o->batch), 0.0);
    tn_rng_seed(&rng, (uint64_t)o->seed + 1);
    for (size_t i = 0; order && i < n; i++) order[i] = i;
    double t0 = seconds();
    for (long e = 0; status == DLCA_OK && e < o->epochs; e++) {
        double loss = mlp_epoch(&m, &opt, &lr, tx, ty, order, n, (size_t)o->batch, &rng);
        status = isnan(loss) ? DLCA_ERR : DLCA_OK;
        printf("epoch %ld: mean loss %.4f, %.1f s\n", e + 1, loss, seconds() - t0);
    }
    double train_time = seconds() - t0;
    double acc = status == DLCA_OK ? mlp_accuracy(&m, vx, vy, vx->dims[0]) : -1;
    if (acc < 0) fprintf(stderr, "fashion_mnist: %s\n", err_message());
    else printf("test accuracy %.2f%% (%zu images); training %.1f s for %ld epochs of %zu images\n", 100 * acc,
                vx->dims[0], train_time, o->epochs, n);
    tn_optim_free(&opt);
    if (order) mlp_free(&m);
    free(order);
    return acc < 0;
}

int main(int argc, char **argv)
{
    options o;
    tn_idx tx, ty, vx, vy;
    int parsed = parse(argc, argv, &o);
    if (parsed) return parsed == 1 ? 0 : 2;
    if (load(o.data, "train", &tx, &ty) != DLCA_OK || load(o.data, "t10k", &vx, &vy) != DLCA_OK) {
        fprintf(stderr, "fashion_mnist: %s\nhint: apt-get install dataset-fashion-mnist, or pass --data DIR\n",
                err_message());
        tn_idx_free(&tx), tn_idx_free(&ty);
        return 1;
    }
    vk_context vk;
    tn_vk *dev = NULL;
    int rc = 0;
    if (o.device >= 0) {
        memset(&vk, 0, sizeof vk);
        if (vk_context_init(&vk, o.device, NULL) != DLCA_OK || tn_vk_open(&dev, &vk, NULL) != DLCA_OK) {
            fprintf(stderr, "fashion_mnist: %s\n", err_message());
            rc = 1;
        } else {
            printf("device %d: %s\n", o.device, vk.props.deviceName);
        }
    }
    if (!rc) rc = run(&o, dev, &tx, &ty, &vx, &vy);
    if (dev && tn_vk_close(dev) != DLCA_OK) {
        fprintf(stderr, "fashion_mnist: %s\n", err_message());
        rc = 1;
    }
    if (o.device >= 0) vk_context_free(&vk);
    tn_idx_free(&tx), tn_idx_free(&ty), tn_idx_free(&vx), tn_idx_free(&vy);
    return rc;
}
