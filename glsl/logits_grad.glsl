// logits_grad.glsl: one gate's d loss / d logits from its S (gates.c: gate_logits_backward):
// dp = M S, dz_i = p_i (dp_i - sum_j p_j dp_j). Shared by logits_grad.comp and the AdamW that
// takes S (adamw.comp with ADAMW_FROM_SUMS), so that both compute the same bits.
#ifndef DLCA_LOGITS_GRAD_GLSL
#define DLCA_LOGITS_GRAD_GLSL

void gate_logits_gradient(float z[16], vec4 s, out float dz[16])
{
    float p[16], dp[16], top = z[0], total = 0.0, mean = 0.0;
    for (uint i = 1; i < 16; i++) top = max(top, z[i]);
    for (uint i = 0; i < 16; i++) total += (p[i] = exp(z[i] - top));
    for (uint i = 0; i < 16; i++) {
        p[i] /= total;
        dp[i] = dot(GATE_OP_MATRIX[i], s);
        mean += p[i] * dp[i];
    }
    for (uint i = 0; i < 16; i++) dz[i] = p[i] * (dp[i] - mean);
}

#endif
