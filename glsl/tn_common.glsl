// tn_common.glsl: shared by the tn_*.comp kernels (src/tensor_vk). Include it after
// common.glsl and after declaring the metadata buffer `int meta[]`; a kernel without one
// defines TN_NO_ITER first.
//
// Holds the op codes (mirrors of tn_ufn / tn_bfn in src/tensor/tn_internal.h, pinned there by
// _Static_assert on the counts), the strided iterator read from the metadata buffer, and
// float exp / log / tanh / pow with a few ulp of error over their whole range: builtins may be
// far worse (Vulkan allows log an absolute error of 2^-21 near 1, and tanh inherits the
// cancellation of its exp formula near 0), and every kernel must match the double CPU
// reference within 1e-5 relative.
#ifndef DLCA_TN_COMMON_GLSL
#define DLCA_TN_COMMON_GLSL

// ---- op codes ----

const uint TN_U_COPY = 0, TN_U_NEG = 1, TN_U_EXP = 2, TN_U_LOG = 3, TN_U_SQRT = 4, TN_U_ABS = 5,
           TN_U_RELU = 6, TN_U_SIGMOID = 7, TN_U_TANH = 8, TN_U_CLAMP = 9, TN_U_POWS = 10,
           TN_U_ADDS = 11, TN_U_MULS = 12;
const uint TN_VK_FILL = 64; // out = s0, no input

const uint TN_B_ADD = 0, TN_B_SUB = 1, TN_B_MUL = 2, TN_B_DIV = 3, TN_B_POW = 4, TN_B_RELU_BWD = 5,
           TN_B_ABS_BWD = 6, TN_B_CLAMP_BWD = 7, TN_B_SIGMOID_BWD = 8, TN_B_TANH_BWD = 9,
           TN_B_SQRT_BWD = 10, TN_B_POWS_BWD = 11;

// ---- the strided iterator (written by iter_write in src/tensor_vk/tn_vk_kernels.c) ----
// At meta[base]: ndim, shape[8], then per operand k < 3: offset, stride[8] (in elements).
// Element i in C order of the shape sits at offset + sum(coord[d] * stride[d]) of operand k.
const uint TN_ITER_WORDS = 36;

#ifndef TN_NO_ITER
ivec3 tn_iter_offsets(uint base, uint i)
{
    int nd = meta[base];
    ivec3 off = ivec3(meta[base + 9u], meta[base + 18u], meta[base + 27u]);
    for (int d = nd - 1; d >= 0; d--) {
        uint ext = uint(meta[base + 1u + uint(d)]);
        int c = int(i % ext);
        i /= ext;
        off += c * ivec3(meta[base + 10u + uint(d)], meta[base + 19u + uint(d)], meta[base + 28u + uint(d)]);
    }
    return off;
}
#endif

// ---- float functions ----

const float TN_LN2_HI = 0.693145751953125;  // 15 significant bits: k * TN_LN2_HI is exact for |k| < 512
const float TN_LN2_LO = 1.428606765330187e-6;
const float TN_LOG2E = 1.4426950408889634;

float tn_inf() { return uintBitsToFloat(0x7f800000u); }
float tn_nan() { return uintBitsToFloat(0x7fc00000u); }

// 2^k x without forming 2^k on its own (2^128 would overflow while the product does not)
float tn_ldexp(float x, int k) { return ldexp(ldexp(x, k / 2), k - k / 2); }

// exp(r) - 1 for |r| <= ln2 / 2: Taylor to r^8, truncation below 1e-9 relative
float tn_expm1_small(float r)
{
    return r * (1.0 + r * (1.0 / 2.0 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 +
           r * (1.0 / 5040.0 + r * (1.0 / 40320.0))))))));
}

// x = k ln2 + r with |r| <= ln2 / 2 (Cody-Waite: the high product is exact)
float tn_reduce_ln2(float x, out int k)
{
    float kf = round(x * TN_LOG2E);
    k = int(kf);
    precise float r = (x - kf * TN_LN2_HI) - kf * TN_LN2_LO;
    return r;
}

float tn_exp(float x)
{
    if (isnan(x)) return x;
    if (x > 88.72283) return tn_inf();
    if (x < -87.33655) return 0.0; // below the smallest normal float (GPUs may flush denormals)
    int k;
    float r = tn_reduce_ln2(x, k);
    return tn_ldexp(1.0 + tn_expm1_small(r), k);
}

// exp(x) - 1, accurate near 0 (for tanh)
float tn_expm1(float x)
{
    if (isnan(x)) return x;
    if (x > 88.72283) return tn_inf();
    if (x < -17.0) return -1.0; // exp(x) < 2^-24
    int k;
    float q = tn_expm1_small(tn_reduce_ln2(x, k));
    if (k == 0) return q;
    return tn_ldexp(q, k) + (tn_ldexp(1.0, k) - 1.0); // 2^k (1 + q) - 1 without rounding 1 + q first
}

// log(x) = e ln2 + 2 atanh(s), x = m 2^e with m in [sqrt(1/2), sqrt(2)), s = (m - 1) / (m + 1)
float tn_log(float x)
{
    if (isnan(x) || x < 0.0) return tn_nan();
    if (x == 0.0) return -tn_inf();
    if (isinf(x)) return x;
    int e;
    float m = frexp(x, e);
    if (m < 0.70710678) {
        m *= 2.0;
        e -= 1;
    }
    float s = (m - 1.0) / (m + 1.0); // m - 1 is exact (Sterbenz)
    float s2 = s * s;                // |s| < 0.1716: the series below is exact to 1e-10
    float p = s * (2.0 + s2 * (2.0 / 3.0 + s2 * (2.0 / 5.0 + s2 * (2.0 / 7.0 + s2 * (2.0 / 9.0 + s2 * (2.0 / 11.0))))));
    float k = float(e);
    return k * TN_LN2_HI + (k * TN_LN2_LO + p);
}

float tn_tanh(float x)
{
    float ax = abs(x);
    if (ax > 10.0) return sign(x); // 1 - tanh(10) < 2^-27
    float e = tn_expm1(2.0 * ax);
    return sign(x) * (e / (e + 2.0));
}

// split by sign so exp never overflows, as the CPU reference does
float tn_sigmoid(float x)
{
    if (x >= 0.0) return 1.0 / (1.0 + tn_exp(-x));
    float e = tn_exp(x);
    return e / (1.0 + e);
}

// C's pow for the cases tn meets: negative bases with integer exponents, zero bases
float tn_pow(float a, float b)
{
    if (b == 0.0) return 1.0;
    if (isnan(a) || isnan(b)) return tn_nan();
    if (a == 0.0) return b > 0.0 ? 0.0 : tn_inf();
    bool negate = false;
    if (a < 0.0) {
        if (b != floor(b)) return tn_nan();
        negate = mod(b, 2.0) == 1.0;
        a = -a;
    }
    float r = tn_exp(b * tn_log(a));
    return negate ? -r : r;
}

float tn_unary_fn(uint op, float x, float s0, float s1)
{
    switch (op) {
    case TN_U_COPY: return x;
    case TN_U_NEG: return -x;
    case TN_U_EXP: return tn_exp(x);
    case TN_U_LOG: return tn_log(x);
    case TN_U_SQRT: return sqrt(x);
    case TN_U_ABS: return abs(x);
    case TN_U_RELU: return x > 0.0 ? x : 0.0;
    case TN_U_SIGMOID: return tn_sigmoid(x);
    case TN_U_TANH: return tn_tanh(x);
    case TN_U_CLAMP: return x < s0 ? s0 : x > s1 ? s1 : x;
    case TN_U_POWS: return tn_pow(x, s0);
    case TN_U_ADDS: return x + s0;
    case TN_U_MULS: return x * s0;
    case TN_VK_FILL: return s0;
    }
    return tn_nan();
}

float tn_binary_fn(uint op, float a, float b, float s0, float s1)
{
    switch (op) {
    case TN_B_ADD: return a + b;
    case TN_B_SUB: return a - b;
    case TN_B_MUL: return a * b;
    case TN_B_DIV: return a / b;
    case TN_B_POW: return tn_pow(a, b);
    case TN_B_RELU_BWD: return b > 0.0 ? a : 0.0;
    case TN_B_ABS_BWD: return b > 0.0 ? a : b < 0.0 ? -a : 0.0;
    case TN_B_CLAMP_BWD: return b >= s0 && b <= s1 ? a : 0.0;
    case TN_B_SIGMOID_BWD: return a * b * (1.0 - b);
    case TN_B_TANH_BWD: return a * ((1.0 - b) * (1.0 + b)); // 1 - b b cancels for |b| near 1
    case TN_B_SQRT_BWD: return a / (2.0 * b);
    case TN_B_POWS_BWD: return s0 == 0.0 ? 0.0 : a * s0 * tn_pow(b, s0 - 1.0);
    }
    return tn_nan();
}

// ---- counter-based noise: tn__noise_bits / tn__noise_value of src/tensor/tn_cpu_fused.c ----

// 32 random bits of element `index` of the stream keyed `key` (rng_hash32: common.glsl).
uint tn_noise_bits(uint key, uint index) { return rng_hash32(key ^ rng_hash32(index)); }

// Uniform in (0, 1) from the top 23 bits and a half: 24 significant bits, exact in float, the
// CPU's value.
float tn_noise_uniform(uint bits) { return (float(bits >> 9) + 0.5) * (1.0 / 8388608.0); }

#endif
