/* test_tn_vk_mnist.c: the Fashion-MNIST MLP of src/tensor/tn_mlp.h (what tools/fashion_mnist
 * trains) on the CPU and on Vulkan from the same weights: 100 Adam steps on a small deterministic
 * subset (the first 3200 training images in file order, batches of 32, hidden 64, the tool's
 * cosine learning rate). The losses of every step agree within 1e-5 relative and the weights at
 * the end within 1e-4 relative: |gpu - cpu| <= 1e-4 |cpu| + 1e-5 max|w| (the floor, a
 * hundred-thousandth of the tensor's largest weight, is for weights that crossed zero: float
 * against double sums leave them ~3e-7 apart). Needs the dataset (apt-get install dataset-fashion-mnist, or
 * DLCA_FASHION_MNIST_DIR): without it the test skips (77), and fails with DLCA_REQUIRE_DATA=1.
 * With DLCA_VALIDATE=1 any validation message fails the test. */
#include "check.h"
#include "vk_test.h"

#include "tn_mlp.h"
#include "tn_vk.h"
#include "vk_context.h"

#include <stdio.h>
#include <string.h>

#define ITEMS 3200
#define BATCH 32
#define STEPS (ITEMS / BATCH)
#define HIDDEN 64

static const char *test_name = "test_tn_vk_mnist";

/* 100 steps from seed 1 on dev (NULL: the CPU); losses[STEPS], then the weights into w. */
static int train(tn_dev *dev, const tn_idx *x, const tn_idx *y, double *losses, double *w, size_t *n_w)
{
    mlp m;
    size_t order[ITEMS];
    for (size_t i = 0; i < ITEMS; i++) order[i] = i;
    int rc = mlp_init(&m, 784, HIDDEN, 10, 1);
    if (!rc && dev) rc = mlp_to_device(&m, dev);
    tn_optim opt = tn_optim_adam(2e-3, 0.9, 0.999, 1e-8, 0.0);
    tn_lr_schedule lr = tn_lr_cosine(2e-3, STEPS, 0.0);
    for (int s = 0; !rc && s < STEPS; s++) {
        opt.lr = tn_lr_at(&lr, opt.step);
        losses[s] = mlp_step(&m, &opt, x, y, order + (size_t)s * BATCH, BATCH);
        if (isnan(losses[s])) rc = DLCA_ERR;
    }
    *n_w = m.params.numel;
    if (!rc) rc = tn_read(m.params.values, w);
    tn_optim_free(&opt);
    mlp_free(&m);
    return rc;
}

int main(void)
{
    const char *dir = getenv("DLCA_FASHION_MNIST_DIR"), *require = getenv("DLCA_REQUIRE_DATA");
    char ip[512], lp[512];
    tn_idx x, y;
    if (!dir) dir = "/usr/share/datasets/fashion-mnist";
    snprintf(ip, sizeof ip, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(lp, sizeof lp, "%s/train-labels-idx1-ubyte.gz", dir);
    if (tn_idx_load_pair(ip, lp, &x, &y) != DLCA_OK) {
        fprintf(stderr, "%s: %s\nhint: apt-get install dataset-fashion-mnist\n", test_name, err_message());
        return require && require[0] == '1' ? 1 : 77;
    }
    vk_context vk;
    int rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) {
        tn_idx_free(&x), tn_idx_free(&y);
        return test_no_vulkan(test_name, err_message());
    }
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    tn_vk *dev = NULL;
    if (!rc) rc = tn_vk_open(&dev, &vk, NULL);
    CHECK(rc == DLCA_OK, "tn_vk_open: %s", err_message());
    size_t n_w = (784 + 1) * HIDDEN + (HIDDEN + 1) * 10, n_cpu = 0, n_gpu = 0;
    static double lc[STEPS], lg[STEPS];
    double *wc = malloc(n_w * sizeof *wc), *wg = malloc(n_w * sizeof *wg);
    if (!rc) {
        printf("%s: %s, validation %s\n", test_name, vk.props.deviceName, vk.validate ? "on" : "off");
        CHECK(train(NULL, &x, &y, lc, wc, &n_cpu) == DLCA_OK, "cpu training: %s", err_message());
        CHECK(train(dev, &x, &y, lg, wg, &n_gpu) == DLCA_OK, "vulkan training: %s", err_message());
        CHECK(n_cpu == n_w && n_gpu == n_w, "weights: %zu, %zu of %zu", n_cpu, n_gpu, n_w);
    }
    double worst_loss = 0, worst_w = 0;
    int worst_step = 0;
    for (int s = 0; !rc && s < STEPS; s++) {
        double rel = fabs(lg[s] - lc[s]) / fabs(lc[s]);
        if (!(rel <= worst_loss)) worst_loss = rel, worst_step = s;
    }
    /* each of the four tensors (w1, b1, w2, b2) with the floor from its own largest weight; worst_w
     * is the largest error as a fraction of the tolerance */
    const size_t ends[4] = {784 * HIDDEN, 785 * HIDDEN, 785 * HIDDEN + HIDDEN * 10, n_w};
    for (size_t t = 0, start = 0; !rc && n_cpu == n_w && t < 4; start = ends[t++]) {
        double scale = 0;
        for (size_t i = start; i < ends[t]; i++) scale = fmax(scale, fabs(wc[i]));
        for (size_t i = start; i < ends[t]; i++) {
            double err = fabs(wg[i] - wc[i]) / (1e-4 * fabs(wc[i]) + 1e-5 * scale);
            if (!(err <= worst_w)) worst_w = err;
        }
    }
    printf("%s: loss %.5f -> %.5f; losses differ by at most %.2e relative (step %d), weights by %.2f of the "
           "tolerance\n", test_name,
           lc[0], lc[STEPS - 1], worst_loss, worst_step, worst_w);
    CHECK(rc || lc[STEPS - 1] < 0.8 * lc[0], "the loss falls: %g -> %g", lc[0], lc[STEPS - 1]);
    CHECK(worst_loss <= 1e-5, "losses differ by %.3g relative at step %d", worst_loss, worst_step);
    CHECK(worst_w <= 1.0, "weights differ by %.3g of the tolerance", worst_w);
    free(wc), free(wg);
    tn_idx_free(&x), tn_idx_free(&y);
    CHECK(tn_vk_close(dev) == DLCA_OK, "tn_vk_close: %s", err_message());
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    return test_finish(test_name);
}
