/* test_tn_linreg.c: integration. Linear regression by autograd and SGD with momentum recovers
 * y = 2x + 3 from 256 noisy samples: weight and bias within 0.05 of the truth. */
#include "check.h"
#include "error.h"
#include "tn_ops.h"
#include "tn_optim.h"

#define SAMPLES 256

int main(void)
{
    tn_rng rng;
    tn_rng_seed(&rng, 99);
    double xs[SAMPLES], ys[SAMPLES];
    for (int i = 0; i < SAMPLES; i++) {
        xs[i] = -2.0 + 4.0 * tn_rng_uniform(&rng);
        ys[i] = 2.0 * xs[i] + 3.0 + 0.1 * tn_rng_normal(&rng);
    }
    tn_tensor *x = tn_from_f64(TN_F32, TN_SHAPE(SAMPLES, 1), xs);
    tn_tensor *y = tn_from_f64(TN_F32, TN_SHAPE(SAMPLES, 1), ys);

    tn_params p;
    tn_params_init(&p, TN_F32);
    tn_tensor *w = tn_params_add(&p, TN_SHAPE(1, 1)), *b = tn_params_add(&p, TN_SHAPE(1));
    tn_fill_normal(w, &rng, 0.0, 0.1);
    tn_optim opt = tn_optim_sgd(0.05, 0.9, 0.0, 0);
    double loss_value = 0;
    for (int step = 0; step < 300; step++) {
        tn_tensor *xw = tn_matmul(x, w);
        tn_tensor *pred = tn_add(xw, b);
        tn_tensor *loss = tn_mse_loss(pred, y, TN_REDUCE_MEAN);
        tn_params_zero_grad(&p);
        int ok = loss && tn_backward(loss) == DLCA_OK && tn_optim_step(&opt, &p) == DLCA_OK;
        if (!ok) CHECK(0, "step %d: %s", step, err_message());
        loss_value = ok ? tn_item(loss) : NAN;
        tn_free(xw);
        tn_free(pred);
        tn_free(loss);
        if (!ok) break;
    }
    printf("w = %.4f, b = %.4f, mse = %.5f\n", tn_get(w, 0), tn_get(b, 0), loss_value);
    CHECK(fabs(tn_get(w, 0) - 2.0) < 0.05, "weight %.4f", tn_get(w, 0));
    CHECK(fabs(tn_get(b, 0) - 3.0) < 0.05, "bias %.4f", tn_get(b, 0));
    CHECK(loss_value < 0.02, "final mse %.4f should be near the noise variance 0.01", loss_value);

    tn_optim_free(&opt);
    tn_params_free(&p);
    tn_free(x);
    tn_free(y);
    return test_finish("test_tn_linreg");
}
