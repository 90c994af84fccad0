// loss_terms.glsl: what one grid value on a loss channel adds to the loss (ca_cpu.c:
// ca_cpu_loss_forward, ca_cpu_loss_backward): (dL/dvalue, squared error) = (2 (value - target),
// (value - target)^2). Shared by loss_grad.comp and the persistent forward's last step
// (fused_forward_persistent.comp), so that both compute the same bits.
#ifndef DLCA_LOSS_TERMS_GLSL
#define DLCA_LOSS_TERMS_GLSL

vec2 loss_terms(float value, float target_value)
{
    float diff = value - target_value;
    return vec2(2.0 * diff, diff * diff);
}

#endif
