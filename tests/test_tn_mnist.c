/* test_tn_mnist.c: integration. A 784-128-10 MLP (src/tensor/tn_mlp.h) trained with Adam and a
 * cosine learning rate on Fashion-MNIST (Debian package dataset-fashion-mnist, gzip'd IDX
 * files) reaches at least 85% on the 10000-image test set. Two epochs over the 60000 training
 * images take about 10 s on 2 cores (RelWithDebInfo); TRAIN_ITEMS selects a seeded random
 * subset if that is ever too slow. Skips (77) when the data is not installed, unless
 * DLCA_REQUIRE_DATA=1; DLCA_FASHION_MNIST_DIR overrides the directory. */
#include "check.h"

#include "tn_mlp.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define TRAIN_ITEMS 60000
#define EPOCHS 2
#define BATCH 128

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int load(const char *dir, const char *set, tn_idx *images, tn_idx *labels)
{
    char ip[512], lp[512];
    snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, set);
    snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, set);
    return tn_idx_load_pair(ip, lp, images, labels);
}

int main(void)
{
    const char *dir = getenv("DLCA_FASHION_MNIST_DIR");
    const char *require = getenv("DLCA_REQUIRE_DATA");
    tn_idx train_x, train_y, test_x, test_y;
    if (!dir) dir = "/usr/share/datasets/fashion-mnist";
    if (load(dir, "train", &train_x, &train_y) != DLCA_OK) {
        fprintf(stderr, "test_tn_mnist: %s\nhint: apt-get install dataset-fashion-mnist\n", err_message());
        return require && require[0] == '1' ? 1 : 77;
    }
    CHECK(load(dir, "t10k", &test_x, &test_y) == DLCA_OK, "test set: %s", err_message());
    CHECK(train_x.dims[0] == 60000 && train_x.count == 60000 * 784 && test_x.dims[0] == 10000, "dataset shape");

    double t0 = seconds();
    mlp m;
    tn_rng rng;
    tn_rng_seed(&rng, 2024);
    size_t *order = malloc(train_x.dims[0] * sizeof *order);
    for (size_t i = 0; i < train_x.dims[0]; i++) order[i] = i;
    tn_rng_shuffle(&rng, order, train_x.dims[0]); /* the first TRAIN_ITEMS are the subset */
    CHECK(mlp_init(&m, 784, 128, 10, 1) == DLCA_OK, "init: %s", err_message());
    tn_optim opt = tn_optim_adam(2e-3, 0.9, 0.999, 1e-8, 0.0);
    tn_lr_schedule lr = tn_lr_cosine(2e-3, EPOCHS * ((TRAIN_ITEMS + BATCH - 1) / BATCH), 0.0);
    for (int e = 0; e < EPOCHS; e++) {
        double loss = mlp_epoch(&m, &opt, &lr, &train_x, &train_y, order, TRAIN_ITEMS, BATCH, &rng);
        CHECK(isfinite(loss), "epoch %d: %s", e, err_message());
        printf("epoch %d: mean loss %.4f (%.1f s)\n", e, loss, seconds() - t0);
    }
    double acc = test_x.data ? mlp_accuracy(&m, &test_x, &test_y, test_x.dims[0]) : -1;
    printf("test accuracy %.2f%% after %d epochs on %d images, %.1f s\n", 100 * acc, EPOCHS, TRAIN_ITEMS,
           seconds() - t0);
    CHECK(acc >= 0.85, "accuracy %.4f below 0.85", acc);

    tn_optim_free(&opt);
    mlp_free(&m);
    free(order);
    tn_idx_free(&train_x), tn_idx_free(&train_y), tn_idx_free(&test_x), tn_idx_free(&test_y);
    return test_finish("test_tn_mnist");
}
