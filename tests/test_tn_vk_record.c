/* test_tn_vk_record.c: recording into a caller's command buffer, the caching allocator, and
 * buffers shared with another engine, on a training step shaped like the CA trainer's: gate
 * coefficients softmax(logits) @ M, an "engine" rollout as a custom function (its forward copies
 * the coefficients into the engine's own buffer with its own command and returns a wrap of it;
 * its backward copies the output gradient into tn's input gradient the same way), a product with
 * the inputs, the SSE loss, backward, and AdamW with fused clipping and the non-finite skip.
 *  - The same 12 steps run on one device in tn's own command buffer (the loss read each step)
 *    and on a second device recorded into the caller's command buffer, one submission a step by
 *    the test: the losses and the final parameters agree bit for bit, and the recording device
 *    submits nothing itself.
 *  - Steps 2..12 create no Vulkan buffer on either device (the allocator's free lists).
 *  - While recording, and after tn_vk_record_end until tn_vk_retire, host reads and ops needing
 *    tn's own command buffer fail with a message; so do closing and retiring at the wrong time.
 *  - tn_vk_wrap of a caller's buffer at an offset, tn_vk_view of tn tensors (with the alignment
 *    rule), tensors of two devices that do not mix.
 * With DLCA_VALIDATE=1 any validation message fails the test. */
#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "gates.h"
#include "tn_function.h"
#include "tn_ops.h"
#include "tn_vk.h"
#include "vk_command.h"
#include "vk_context.h"

#include <string.h>

#define GATES 96
#define STEPS 12

static const char *test_name = "test_tn_vk_record";
static vk_context vk;

/* ---- the "engine": a buffer of its own and commands it records itself ---- */

typedef struct {
    tn_vk *dev;
    vk_buffer buf; /* the engine's state: GATES x 4 floats */
    int forwards, backwards;
} engine;

/* Records a copy of src's region into dst's (both contiguous device tensors or regions). */
static int engine_copy(tn_vk *dev, vk_view src, vk_view dst)
{
    VkCommandBuffer cmd;
    int rc = tn_vk_command(dev, &cmd);
    if (rc) return rc;
    vkCmdCopyBuffer(cmd, src.buffer->buffer, dst.buffer->buffer, 1, &(VkBufferCopy){src.offset, dst.offset, src.size});
    return tn_vk_barrier(dev);
}

static tn_tensor *engine_forward(void *ctx, tn_tensor **in, int n_in)
{
    engine *e = ctx;
    vk_view src;
    e->forwards++;
    if (tn_vk_view(in[0], &src) != DLCA_OK) return NULL;
    if (engine_copy(e->dev, src, vk_view_of(&e->buf, 0, src.size)) != DLCA_OK) return NULL;
    return tn_vk_wrap(e->dev, &e->buf, 0, in[0]->ndim, in[0]->shape);
}

static int engine_backward(void *ctx, tn_tensor **in, int n_in, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    engine *e = ctx;
    vk_view src, dst;
    e->backwards++;
    if (tn_vk_view(g, &src) != DLCA_OK || tn_vk_view(gin[0], &dst) != DLCA_OK) return DLCA_ERR;
    return engine_copy(e->dev, src, dst);
}

static const tn_function engine_fn = {"engine", engine_forward, engine_backward, NULL, TN_FUNCTION_OVERWRITES_GRADS};

/* ---- one model on one device ---- */

typedef struct {
    tn_vk *dev;
    engine eng;
    tn_params params;
    tn_tensor *logits, *m, *x, *target;
    tn_optim opt;
    double loss[STEPS];
} model;

static int model_init(model *md, tn_vk *dev)
{
    tn_rng rng;
    double mat[16 * 4];
    memset(md, 0, sizeof *md);
    md->dev = dev;
    md->eng.dev = dev;
    int rc = vk_buffer_create(&vk, &md->eng.buf, GATES * 4 * sizeof(float), VK_BUFFER_DEVICE);
    tn_rng_seed(&rng, 3);
    tn_params_init(&md->params, TN_F32);
    md->params.align = 64;
    md->logits = tn_params_add(&md->params, TN_SHAPE(GATES, 16));
    tn_fill_normal(md->logits, &rng, 0.0, 1.0);
    if (!rc) rc = tn_params_to_device(&md->params, dev);
    for (int op = 0; op < 16; op++)
        for (int k = 0; k < 4; k++) mat[op * 4 + k] = gate_op_matrix[op][k];
    tn_tensor *m = tn_from_f64(TN_F32, TN_SHAPE(16, 4), mat);
    tn_tensor *x = tn_zeros(TN_F32, TN_SHAPE(GATES, 4)), *t = tn_zeros(TN_F32, TN_SHAPE(GATES, 4));
    tn_fill_uniform(x, &rng, -1, 1);
    tn_fill_uniform(t, &rng, 0, 1);
    md->m = tn_to_device(m, dev);
    md->x = tn_to_device(x, dev);
    md->target = tn_to_device(t, dev);
    tn_free(m), tn_free(x), tn_free(t);
    md->opt = tn_optim_adamw(0.05, 0.9, 0.999, 1e-8, 0.01);
    md->opt.clip_value = 0.5;
    md->opt.skip_nonfinite = 1;
    return !rc && md->target ? DLCA_OK : DLCA_ERR;
}

static void model_free(model *md)
{
    tn_optim_free(&md->opt);
    tn_params_free(&md->params);
    tn_free(md->m), tn_free(md->x), tn_free(md->target);
    vk_buffer_free(&vk, &md->eng.buf);
}

/* Builds one training step; the loss (a device scalar) into *loss_out. */
static int model_step(model *md, tn_tensor **loss_out)
{
    tn_tensor *coeff = tn_softmax_matmul(md->logits, md->m);
    tn_tensor *rolled = coeff ? tn_apply(&engine_fn, &md->eng, 1, &coeff) : NULL;
    tn_tensor *pred = tn_mul(rolled, md->x);
    tn_tensor *loss = tn_sse_loss(pred, md->target);
    tn_params_zero_grad(&md->params);
    int rc = loss ? tn_backward(loss) : DLCA_ERR;
    if (!rc) rc = tn_optim_step(&md->opt, &md->params);
    tn_free(coeff), tn_free(rolled), tn_free(pred);
    *loss_out = loss;
    return rc;
}

/* The caller's side of a recorded step: begin, record, end, submit once, wait, retire. */
static int recorded_step(model *md, tn_tensor **loss)
{
    VkCommandBuffer cmd;
    int rc = vk_cmd_begin(&vk, &cmd);
    if (rc) return rc;
    rc = tn_vk_record_begin(md->dev, cmd);
    if (!rc) {
        rc = model_step(md, loss);
        if (!rc) CHECK(tn_item(*loss) != tn_item(*loss) && strstr(err_message(), "while recording"),
                       "a host read while recording fails: %s", err_message());
        if (!rc) CHECK(tn_vk_sync(md->dev) == DLCA_ERR && tn_vk_retire(md->dev) == DLCA_ERR, "sync, retire refused");
        int end = tn_vk_record_end(md->dev);
        rc = rc ? rc : end;
    }
    if (!rc) {
        tn_tensor *again = tn_add(*loss, *loss);
        CHECK(!again && strstr(err_message(), "not retired"), "an op after the recording ended: %s", err_message());
        CHECK(tn_vk_close(md->dev) == DLCA_ERR && strstr(err_message(), "not retired"), "close: %s", err_message());
        tn_optim_status st;
        CHECK(tn_optim_status_read(&md->opt, &st) == DLCA_ERR, "status before retire");
        rc = vk_cmd_end(cmd);
    }
    if (!rc) rc = vk_cmd_submit_wait(&vk, cmd);
    vk_cmd_free(&vk, cmd);
    int retired = tn_vk_retire(md->dev);
    return rc ? rc : retired;
}

static void test_recording(tn_vk *own_dev, tn_vk *rec_dev)
{
    static model a, b;
    CHECK(model_init(&a, own_dev) == DLCA_OK && model_init(&b, rec_dev) == DLCA_OK, "models: %s", err_message());
    tn_vk_stats sa, sb, sa1 = {0}, sb1 = {0};
    uint64_t rec_submissions = 0;
    /* the uploads of model_init are tn's own work: submitted now, not counted below */
    CHECK(tn_vk_sync(rec_dev) == DLCA_OK, "sync: %s", err_message());
    for (int s = 0; s < STEPS; s++) {
        tn_tensor *la = NULL, *lb = NULL;
        CHECK(model_step(&a, &la) == DLCA_OK, "own step %d: %s", s, err_message());
        a.loss[s] = tn_item(la);
        tn_vk_stats_get(rec_dev, &sb);
        uint64_t before = sb.submissions, dispatches = vk.dispatches;
        CHECK(recorded_step(&b, &lb) == DLCA_OK, "recorded step %d: %s", s, err_message());
        if (s == STEPS - 1) /* softmax_matmul, mul, sse; seed, sse, mul, softmax_matmul, grad add; zero_grad; check, adamw */
            printf("%s: %llu tn dispatches in a recorded step\n", test_name,
                   (unsigned long long)(vk.dispatches - dispatches));
        tn_vk_stats_get(rec_dev, &sb);
        rec_submissions += sb.submissions - before;
        b.loss[s] = tn_item(lb); /* after retire: a host read works again */
        tn_free(la), tn_free(lb);
        if (s == 0) tn_vk_stats_get(own_dev, &sa1), tn_vk_stats_get(rec_dev, &sb1);
    }
    tn_vk_stats_get(own_dev, &sa);
    tn_vk_stats_get(rec_dev, &sb);
    printf("%s: losses %.6f -> %.6f; buffers created: own %llu (%llu after step 1), recorded %llu (%llu); "
           "reused %llu / %llu\n", test_name, a.loss[0], a.loss[STEPS - 1], (unsigned long long)sa.buffers_created,
           (unsigned long long)sa1.buffers_created, (unsigned long long)sb.buffers_created,
           (unsigned long long)sb1.buffers_created, (unsigned long long)sa.buffers_reused,
           (unsigned long long)sb.buffers_reused);
    CHECK(memcmp(a.loss, b.loss, sizeof a.loss) == 0, "recorded and own runs give the same losses bit for bit");
    CHECK(a.loss[STEPS - 1] < a.loss[0], "the loss falls (%g -> %g)", a.loss[0], a.loss[STEPS - 1]);
    double pa[GATES * 16], pb[GATES * 16];
    CHECK(tn_read(a.params.values, pa) == DLCA_OK && tn_read(b.params.values, pb) == DLCA_OK &&
          memcmp(pa, pb, sizeof pa) == 0, "the same parameters bit for bit");
    CHECK(rec_submissions == 0, "the recording device submitted %llu times itself", (unsigned long long)rec_submissions);
    CHECK(sa.buffers_created == sa1.buffers_created && sb.buffers_created == sb1.buffers_created,
          "steps 2..%d create no buffer (own %llu -> %llu, recorded %llu -> %llu)", STEPS,
          (unsigned long long)sa1.buffers_created, (unsigned long long)sa.buffers_created,
          (unsigned long long)sb1.buffers_created, (unsigned long long)sb.buffers_created);
    tn_optim_status st;
    CHECK(tn_optim_status_read(&b.opt, &st) == DLCA_OK && st.applied == STEPS && st.skipped == 0,
          "status after retire: applied %ld skipped %ld", st.applied, st.skipped);
    CHECK(a.eng.forwards == STEPS && a.eng.backwards == STEPS, "the engine ran each step");
    model_free(&a);
    model_free(&b);
}

/* ---- sharing buffers ---- */

static void test_wrap_and_view(tn_vk *dev, tn_vk *other)
{
    float host[64], back[15];
    for (int i = 0; i < 64; i++) host[i] = (float)i;
    vk_buffer buf;
    CHECK(vk_buffer_create(&vk, &buf, sizeof host, VK_BUFFER_DEVICE) == DLCA_OK &&
          vk_buffer_upload(&vk, &buf, 0, host, sizeof host) == DLCA_OK, "engine buffer: %s", err_message());
    tn_tensor *w = tn_vk_wrap(dev, &buf, 16, TN_SHAPE(3, 5)); /* floats 4 .. 18 */
    tn_tensor *s = tn_sum(w);
    CHECK(s && tn_item(s) == 165.0 && tn_get(w, 14) == 18.0, "wrap at byte 16: sum %g", s ? tn_item(s) : NAN);
    tn_tensor *w2 = tn_mul_scalar(w, 2.0);
    vk_view v;
    CHECK(tn_vk_view(w2, &v) == DLCA_OK && v.offset == 0 && v.size == 60, "view of a tn tensor");
    CHECK(tn_vk_sync(dev) == DLCA_OK && vk_buffer_download(&vk, v.buffer, v.offset, back, sizeof back) == DLCA_OK &&
          back[0] == 8.0f && back[14] == 36.0f, "the viewed region holds the tensor");
    tn_tensor *t = tn_transpose(w, 0, 1);
    CHECK(tn_vk_view(t, &v) == DLCA_ERR && strstr(err_message(), "contiguous"), "non-contiguous: %s", err_message());
    CHECK(tn_vk_wrap(dev, &buf, 2, TN_SHAPE(3)) == NULL && tn_vk_wrap(dev, &buf, 0, TN_SHAPE(65)) == NULL,
          "misaligned or too large wraps");
    tn_free(w), tn_free(s), tn_free(w2), tn_free(t);
    CHECK(vk_buffer_download(&vk, &buf, 0, back, 4 * sizeof(float)) == DLCA_OK && back[3] == 3.0f,
          "the caller's buffer outlives its wraps");
    /* parameters: packed ones may sit at offsets no engine can bind; align fixes that */
    if (vk.props.limits.minStorageBufferOffsetAlignment > 4) {
        tn_params p;
        tn_params_init(&p, TN_F32);
        tn_params_add(&p, TN_SHAPE(5));
        tn_tensor *q = tn_params_add(&p, TN_SHAPE(4));
        tn_params_to_device(&p, dev);
        CHECK(tn_vk_view(q, &v) == DLCA_ERR && strstr(err_message(), "minStorageBufferOffsetAlignment"),
              "packed parameter at element 5: %s", err_message());
        tn_params_free(&p);
        tn_params_init(&p, TN_F32);
        p.align = 64;
        tn_params_add(&p, TN_SHAPE(5));
        q = tn_params_add(&p, TN_SHAPE(4));
        tn_params_to_device(&p, dev);
        CHECK(tn_vk_view(q, &v) == DLCA_OK && v.offset == 256, "aligned parameter at byte %llu",
              (unsigned long long)v.offset);
        tn_params_free(&p);
    }
    /* two devices on one context: their tensors do not mix */
    tn_tensor *a = tn_zeros_on(dev, TN_F32, TN_SHAPE(3)), *b = tn_zeros_on(other, TN_F32, TN_SHAPE(3));
    tn_tensor *c = tn_add(a, b);
    CHECK(!c && strstr(err_message(), "two device objects"), "devices do not mix: %s", err_message());
    tn_tensor *cpu = tn_zeros(TN_F32, TN_SHAPE(3));
    CHECK(tn_vk_of(a) == dev && tn_vk_of(b) == other && tn_vk_of(cpu) == NULL, "tn_vk_of");
    tn_free(a), tn_free(b), tn_free(cpu);
    vk_buffer_free(&vk, &buf);
}

int main(void)
{
    int rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    printf("%s: %s, validation %s\n", test_name, vk.props.deviceName, vk.validate ? "on" : "off");
    tn_vk *own = NULL, *rec = NULL;
    rc = tn_vk_open(&own, &vk, NULL);
    if (!rc) rc = tn_vk_open(&rec, &vk, NULL);
    CHECK(rc == DLCA_OK, "tn_vk_open: %s", err_message());
    if (rc) return test_finish(test_name);
    test_recording(own, rec);
    test_wrap_and_view(own, rec);
    tn_vk_stats s1, s2;
    tn_vk_stats_get(own, &s1);
    tn_vk_stats_get(rec, &s2);
    CHECK(s1.live_storages == 0 && s2.live_storages == 0, "storages leaked: %ld, %ld", s1.live_storages,
          s2.live_storages);
    CHECK(tn_vk_close(own) == DLCA_OK && tn_vk_close(rec) == DLCA_OK, "tn_vk_close: %s", err_message());
    CHECK(vk.device_bytes == 0, "%zu bytes of device buffers left", vk.device_bytes);
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    return test_finish(test_name);
}
