// fused_clocks.glsl: clock probes inside the fused step kernels, for builds configured with
// -DDLCA_CLOCKS=ON (CMakeLists.txt passes -DFUSED_CLOCKS to fused_step_forward.comp and
// fused_step_backward.comp; src/gpu binds the clock buffer and dlca bench writes it out for
// tools/fused_clocks.py). Without FUSED_CLOCKS every PROBE_* macro is empty, so a production
// build compiles exactly the kernels it would without this file.
//
// Invocation 0 of workgroups 0..511 writes, for CA steps 0..63 of the last training step, one
// record of 128 words at ((PROBE_KERNEL * 64 + step) * 512 + workgroup) * 128:
//   [0], [1]    the device clock (clockRealtime2x32EXT, ns) at PROBE_START
//   [2]         the index one past its last mark
//   [3]         the SM clock (clock2x32ARB, cycles) at PROBE_START
//   [4..125]    the SM clock at each PROBE_MARK, PROBE_AFTER (or their _IF forms), in program order
//   [126],[127] the device clock at PROBE_END
// A mark after a barrier times the phase before it; PROBE_AFTER_IF(cond, v) takes its clock
// (and PROBE_AFTER(v)) only once v has arrived (it compares v with a value it never has), so it
// times a load.
// Needs, declared before: pc (fused_push). The includer defines PROBE_BINDING (its clock
// buffer's binding, after its others) and PROBE_KERNEL (0 forward, 1 backward) to turn the
// probes on; the persistent kernels define neither and have none.
#ifndef DLCA_FUSED_CLOCKS_GLSL
#define DLCA_FUSED_CLOCKS_GLSL

#if defined(FUSED_CLOCKS) && defined(PROBE_BINDING)
#extension GL_ARB_shader_clock : require
#extension GL_EXT_shader_realtime_clock : require
layout(std430, binding = PROBE_BINDING) buffer clocks_buf { uint clocks[]; };
uint probe_n = 3u;
uint probe_at() { return ((PROBE_KERNEL * 64u + pc.step) * 512u + gl_WorkGroupID.x) * 128u; }
bool probe_on() { return gl_LocalInvocationID.x == 0u && gl_WorkGroupID.x < 512u && pc.step < 64u && probe_n < 126u; }
void probe_start()
{
    if (!probe_on()) return;
    uvec2 r = clockRealtime2x32EXT();
    uint c = clock2x32ARB().x;
    clocks[probe_at()] = r.x, clocks[probe_at() + 1u] = r.y, clocks[probe_at() + 3u] = c;
    probe_n = 4u;
}
void probe_mark()
{
    if (!probe_on()) return;
    clocks[probe_at() + probe_n] = clock2x32ARB().x;
    probe_n++;
}
void probe_after(float v)
{
    if (!probe_on()) return;
    if (v != -12345.0) clocks[probe_at() + probe_n] = clock2x32ARB().x;
    probe_n++;
}
void probe_end()
{
    if (gl_LocalInvocationID.x != 0u || gl_WorkGroupID.x >= 512u || pc.step >= 64u) return;
    probe_n = min(probe_n, 125u);
    clocks[probe_at() + probe_n] = clock2x32ARB().x;
    probe_n++;
    uvec2 r = clockRealtime2x32EXT();
    clocks[probe_at() + 2u] = probe_n;
    clocks[probe_at() + 126u] = r.x, clocks[probe_at() + 127u] = r.y;
}
// Statements, used without a semicolon (so that nothing at all is left where they are empty).
#define PROBE_START() probe_start();
#define PROBE_MARK() probe_mark();
#define PROBE_MARK_IF(condition) if (condition) probe_mark();
#define PROBE_AFTER(value) probe_after(value);
#define PROBE_AFTER_IF(condition, value) if (condition) probe_after(value);
#define PROBE_END() probe_end();
#else
#define PROBE_START()
#define PROBE_MARK()
#define PROBE_MARK_IF(condition)
#define PROBE_AFTER(value)
#define PROBE_AFTER_IF(condition, value)
#define PROBE_END()
#endif

#endif
