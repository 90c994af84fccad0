/* fashion_mnist.c: example program for the tn autograd module. Trains a 784-128-10 MLP
 * (tools/tn_mlp.h) with Adam and a cosine learning rate on all 60000 Fashion-MNIST training
 * images and prints the loss per epoch, the test accuracy and the time taken.
 *
 * usage: fashion_mnist [--data DIR] [--epochs N] [--batch N] [--lr X] [--hidden N] [--seed N]
 * DIR defaults to /usr/share/datasets/fashion-mnist (Debian: apt-get install dataset-fashion-mnist). */
#include "tn_mlp.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *data;
    long epochs, batch, hidden, seed;
    double lr;
} options;

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int usage(const char *why)
{
    fprintf(stderr, "fashion_mnist: %s\nusage: fashion_mnist [--data DIR] [--epochs N] [--batch N] [--lr X] "
                    "[--hidden N] [--seed N]\n", why);
    return 2;
}

/* Parses the flags; returns 0, or 2 after printing usage. */
static int parse(int argc, char **argv, options *o)
{
    *o = (options){"/usr/share/datasets/fashion-mnist", 5, 128, 128, 1, 2e-3};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!value) return usage("a flag needs a value");
        if (strcmp(flag, "--data") == 0) o->data = value;
        else if (strcmp(flag, "--lr") == 0) o->lr = strtod(value, &end);
        else if (strcmp(flag, "--epochs") == 0) o->epochs = strtol(value, &end, 10);
        else if (strcmp(flag, "--batch") == 0) o->batch = strtol(value, &end, 10);
        else if (strcmp(flag, "--hidden") == 0) o->hidden = strtol(value, &end, 10);
        else if (strcmp(flag, "--seed") == 0) o->seed = strtol(value, &end, 10);
        else return usage("unknown flag");
        if (end && *end) return usage("not a number");
        i++;
    }
    if (o->epochs < 1 || o->batch < 1 || o->batch > 1024 || o->hidden < 1 || !(o->lr > 0))
        return usage("epochs, hidden >= 1, batch in [1, 1024], lr > 0");
    return 0;
}

static int load(const char *dir, const char *set, tn_idx *images, tn_idx *labels)
{
    char ip[1024], lp[1024];
    snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, set);
    snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, set);
    return tn_idx_load_pair(ip, lp, images, labels);
}

/* Trains and evaluates; returns 0 or 1 after printing the error. */
static int run(const options *o, tn_idx *tx, tn_idx *ty, tn_idx *vx, tn_idx *vy)
{
    size_t n = tx->dims[0], pixels = tx->count / n;
    size_t *order = malloc(n * sizeof *order);
    mlp m;
    tn_rng rng;
    int status = order ? mlp_init(&m, pixels, (size_t)o->hidden, 10, (uint64_t)o->seed) : DLCA_ERR_NOMEM;
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
    if (parse(argc, argv, &o)) return 2;
    if (load(o.data, "train", &tx, &ty) != DLCA_OK || load(o.data, "t10k", &vx, &vy) != DLCA_OK) {
        fprintf(stderr, "fashion_mnist: %s\nhint: apt-get install dataset-fashion-mnist, or pass --data DIR\n",
                err_message());
        tn_idx_free(&tx), tn_idx_free(&ty);
        return 1;
    }
    int rc = run(&o, &tx, &ty, &vx, &vy);
    tn_idx_free(&tx), tn_idx_free(&ty), tn_idx_free(&vx), tn_idx_free(&vy);
    return rc;
}
