// fused_persistent.glsl: what the persistent fused kernels share (fused_forward_persistent.comp,
// fused_step_backward.comp compiled with FUSED_PERSISTENT): they run every CA step of a rollout
// in one dispatch, and a workgroup waits for what other workgroups write during it.
//
// A value is its own flag: the host fills what will be written with FUSED_EMPTY first, and a
// reader polls a value (coherent loads, past the non-coherent caches) until it is something
// else. No fence, no counter, no barrier across workgroups: a flag behind a fence, or a counter
// every workgroup updates, costs about what a dispatch boundary does, and a polled value well
// under half of it (docs/bench-notes.md, round 15).
//
// Waiting on another workgroup is safe only while it runs. Every workgroup takes a ticket when
// it starts and none polls before all P have theirs; if they do not all come within ROLL_POLLS
// reads (the device cannot hold them at once), the roll closes, every workgroup stops, the
// optimizer skips the step (the roll words are its skip flag, tn_optim's skip_flag), and the
// trainer runs it again one dispatch a CA step (src/train/ca_train_gpu.c).
// Needs, declared before: ROLL_BINDING, the binding of the roll counters (zeroed by the host).
#ifndef DLCA_FUSED_PERSISTENT_GLSL
#define DLCA_FUSED_PERSISTENT_GLSL

layout(std430, binding = ROLL_BINDING) coherent volatile buffer roll_buf { uint roll[]; }; // [forward, backward]

const uint ROLL_CLOSED = 0x80000000u; // CA_GPU_ROLL_CLOSED
const uint ROLL_POLLS = 4096u;
const uint ROLL_WAITING = 0u, ROLL_ALL_HERE = 1u, ROLL_GAVE_UP = 2u;
shared uint roll_state;

// Invocation 0: this workgroup's ticket in roll call r.
void roll_arrive(uint r)
{
    roll_state = (atomicAdd(roll[r], 1u) & ROLL_CLOSED) != 0u ? ROLL_GAVE_UP : ROLL_WAITING;
}

// Invocation 0, after its ticket: whether all P workgroups took theirs. Past ROLL_POLLS reads it
// closes the roll, unless the last came meanwhile; closed with fewer than P it stays so (later
// tickets see the bit), so every workgroup reaches the same answer.
uint roll_wait(uint r)
{
    for (uint n = 0u; n < ROLL_POLLS + gl_NumWorkGroups.x + 2u; n++) {
        uint seen = roll[r];
        if ((seen & ROLL_CLOSED) != 0u) return ROLL_GAVE_UP;
        if (seen == gl_NumWorkGroups.x) return ROLL_ALL_HERE;
        if (n >= ROLL_POLLS && atomicCompSwap(roll[r], seen, seen | ROLL_CLOSED) == seen) return ROLL_GAVE_UP;
    }
    return ROLL_GAVE_UP;
}

// The whole workgroup: whether every workgroup of roll call r runs (wait before the first poll).
bool roll_complete(uint r)
{
    if (gl_LocalInvocationID.x == 0u && roll_state == ROLL_WAITING) roll_state = roll_wait(r);
    barrier();
    return roll_state == ROLL_ALL_HERE;
}

// What a value is stored as: a NaN with FUSED_EMPTY's bits as another NaN, so that a reader
// never waits for a value that was written.
float publish(float v) { return floatBitsToUint(v) == FUSED_EMPTY ? uintBitsToFloat(0x7fffffffu) : v; }

#endif
