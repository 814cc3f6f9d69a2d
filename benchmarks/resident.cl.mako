<%doc>
  Experiment for issue 19, item 3 (benchmarks/gpu_resident.py; not a registry kernel): the
  `temporal` kernel's register blocking made persistent. One launch runs all its steps in
  phases of max_steps: each phase every tile loads its span (tile plus a halo of max_steps)
  from the source buffer, steps in registers with edges through local memory, and writes its
  inner tile to the other buffer; then a grid-wide barrier, and the buffers swap.

  Which groups take part is found at run time (occupancy discovery, Sorensen et al., OOPSLA
  2016): a group that registers while the poll is open was running while every other
  registered group was, and running groups stay resident, so the barrier among the
  registered groups cannot wait on a group that never starts. Groups that arrive after the
  poll closed leave at once; the registered ones share the tiles.

  sync[0] holds the poll: epoch << 13 | closed bit (0x1000) | count; sync[1] counts barrier
  arrivals. `epoch` must differ from the previous launch's (1 and 2 alternate), which resets
  the poll without a host-side fill.

  fences="device": OpenCL C 3.0 atomics and fences with memory_scope_device (build with
  -cl-std=CL3.0). fences="work_group": OpenCL 1.2 atomics and mem_fence, which NVIDIA's
  compiler turns into membar.cta, too weak for other groups' stores: kept to measure what the
  device-scope fence costs, not for results (with plain loads it gave wrong results on an
  H100; volatile_loads=True makes the loads bypass L1).

  Same arithmetic, same order as the NumPy reference: bit-exact where the fences hold.
  Global size (groups * local_w, local_h); tiles in rows of tiles_x.
</%doc>
<%
    R, C, LW, LH, K = rows, cols, local_w, local_h, max_steps
    SW, SH = LW * C, LH * R
    TW, TH = SW - 2 * K, SH - 2 * K
    assert TW >= 1 and TH >= 1, "span too small for the halo"
    rr, cc = range(R), range(C)
    src = "((volatile __global real_t *)src)" if volatile_loads else "src"

    def up(r, c): return f"x_{r - 1}_{c}" if r > 0 else f"n_{c}"
    def down(r, c): return f"x_{r + 1}_{c}" if r < R - 1 else f"s_{c}"
    def left(r, c): return f"x_{r}_{c - 1}" if c > 0 else f"w_{r}"
    def right(r, c): return f"x_{r}_{c + 1}" if c < C - 1 else f"e_{r}"
%>
<%def name="step(buf)">
            // Publish this block's edges, wait, read the neighbours', update.
% for r in rr:
            west[EW(${buf}, ly * ${R} + ${r}) + lx] = x_${r}_0;
            east[EW(${buf}, ly * ${R} + ${r}) + lx] = x_${r}_${C - 1};
% endfor
% for c in cc:
            north[EN(${buf}, ly * ${C} + ${c}) + lx] = x_0_${c};
            south[EN(${buf}, ly * ${C} + ${c}) + lx] = x_${R - 1}_${c};
% endfor
            barrier(CLK_LOCAL_MEM_FENCE);
            {
% for r in rr:
                const real_t w_${r} = east[EW(${buf}, ly * ${R} + ${r}) + lxw];
                const real_t e_${r} = west[EW(${buf}, ly * ${R} + ${r}) + lxe];
% endfor
% for c in cc:
                const real_t n_${c} = south[EN(${buf}, lyn * ${C} + ${c}) + lx];
                const real_t s_${c} = north[EN(${buf}, lys * ${C} + ${c}) + lx];
% endfor
% for r in rr:
%   for c in cc:
                const real_t y_${r}_${c} = (real_t)0.25 * (${up(r, c)} + ${down(r, c)} + ${left(r, c)} + ${right(r, c)} - b_${r}_${c});
%   endfor
% endfor
                if (all_in) {
% for r in rr:
                    ${" ".join(f"x_{r}_{c} = y_{r}_{c};" for c in cc)}
% endfor
                } else {
% for r in rr:
                    ${" ".join(f"x_{r}_{c} = (row_in_{r} && col_in_{c}) ? y_{r}_{c} : x_{r}_{c};" for c in cc)}
% endfor
                }
            }
</%def>
#pragma OPENCL FP_CONTRACT OFF
typedef float real_t;
#define LW ${LW}
#define LH ${LH}
#define EW(buf, r) ((buf) * ${SH * LW} + (r) * LW)
#define EN(buf, c) ((buf) * ${LH * C * LW} + (c) * LW)
#define CLOSED 0x1000
#define COUNT 0xfff
% if fences == "device":
typedef volatile __global atomic_int sync_t;
#define LOAD_RELAXED(p) atomic_load_explicit((p), memory_order_relaxed, memory_scope_device)
#define STORE_RELAXED(p, v) atomic_store_explicit((p), (v), memory_order_relaxed, memory_scope_device)
#define FETCH_OR(p, v) atomic_fetch_or_explicit((p), (v), memory_order_acq_rel, memory_scope_device)
#define FETCH_INC(p) atomic_fetch_add_explicit((p), 1, memory_order_relaxed, memory_scope_device)
#define RELEASE() atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device)
#define ACQUIRE() atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acquire, memory_scope_device)

// Compare-and-swap returning the value found (as atomic_cmpxchg does).
int compare_swap(sync_t *p, int expected, int desired)
{
    atomic_compare_exchange_strong_explicit(p, &expected, desired, memory_order_acq_rel,
                                            memory_order_acquire, memory_scope_device);
    return expected;
}
% else:
typedef volatile __global int sync_t;
#define LOAD_RELAXED(p) (*(p))
#define STORE_RELAXED(p, v) (*(p) = (v))
#define FETCH_OR(p, v) atomic_or((p), (v))
#define FETCH_INC(p) atomic_inc(p)
#define RELEASE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#define ACQUIRE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#define compare_swap(p, expected, desired) atomic_cmpxchg((p), (expected), (desired))
% endif

__kernel __attribute__((reqd_work_group_size(LW, LH, 1)))
void jacobi_resident(__global real_t *xa, __global real_t *xb,
                     __global const real_t *restrict rhs, int m, int n, int row_stride,
                     int steps, int tiles_x, int tiles, sync_t *sync, int epoch)
{
    __local real_t west[${2 * SH * LW}], east[${2 * SH * LW}];
    __local real_t north[${2 * LH * C * LW}], south[${2 * LH * C * LW}];
    __local int shared_id, shared_groups;
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int lxw = max(lx - 1, 0), lxe = min(lx + 1, LW - 1);
    const int lyn = max(ly - 1, 0), lys = min(ly + 1, LH - 1);
    const bool leader = lx == 0 && ly == 0;

    // Occupancy discovery (one work-item per group).
    if (leader) {
        int id = -1, groups = 0;
        int old = LOAD_RELAXED(&sync[0]);
        for (;;) {
            int seen;
            if ((old >> 13) != epoch) {            // last launch's poll: open a new one
                seen = compare_swap(&sync[0], old, (epoch << 13) | 1);
                if (seen == old) { id = 0; break; }
            } else if (old & CLOSED) {
                break;                              // too late: leave
            } else {
                seen = compare_swap(&sync[0], old, old + 1);
                if (seen == old) { id = old & COUNT; break; }
            }
            old = seen;
        }
        if (id == 0) {
            // The first group resets the barrier, waits (boundedly) for the others to
            // register, and closes the poll.
            STORE_RELAXED(&sync[1], 0);
            RELEASE();
            const int launched = get_num_groups(0) * get_num_groups(1);
            for (int spin = 0; spin < ${spin} && (LOAD_RELAXED(&sync[0]) & COUNT) < launched;
                 ++spin)
                ;
            groups = FETCH_OR(&sync[0], CLOSED) & COUNT;
        } else if (id > 0) {
            while (!((old = LOAD_RELAXED(&sync[0])) & CLOSED))
                ;
            groups = old & COUNT;
        }
        ACQUIRE();
        shared_id = id;
        shared_groups = groups;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int id = shared_id, groups = shared_groups;
    if (id < 0)
        return;

    __global real_t *src = xa, *dst = xb;
    for (int done = 0, phase = 1; done < steps; done += ${K}, ++phase) {
        const int k = min(${K}, steps - done);
        for (int t = id; t < tiles; t += groups) {
            // The last tile's last step may have read the edges that this tile's first step
            // writes.
            barrier(CLK_LOCAL_MEM_FENCE);
            const int gy = t / tiles_x, gx = t - gy * tiles_x;
            const int i0 = gy * ${TH} + 1 - ${K} + ly * ${R};
            const int j0 = gx * ${TW} + 1 - ${K} + lx * ${C};
% for r in rr:
            const bool row_in_${r} = i0 + ${r} >= 1 && i0 + ${r} <= m;
            const bool row_ok_${r} = i0 + ${r} >= 0 && i0 + ${r} <= m + 1;
% endfor
% for c in cc:
            const bool col_in_${c} = j0 + ${c} >= 1 && j0 + ${c} <= n;
            const bool col_ok_${c} = j0 + ${c} >= 0 && j0 + ${c} <= n + 1;
% endfor
            const bool all_in = ${" && ".join([f"row_in_{r}" for r in rr] + [f"col_in_{c}" for c in cc])};
% for r in rr:
%   for c in cc:
            real_t x_${r}_${c} = 0, b_${r}_${c} = 0;
            if (row_ok_${r} && col_ok_${c}) {
                const size_t at = (size_t)(i0 + ${r}) * row_stride + (size_t)(j0 + ${c});
                x_${r}_${c} = ${src}[at];
                b_${r}_${c} = rhs[at];
            }
%   endfor
% endfor
            int s = 0;
            for (; s + 1 < k; s += 2) {
${step(0)}
${step(1)}
            }
            if (s < k) {
${step(0)}
            }
            // Write the inner tile.
            const int lo_i = gy * ${TH} + 1, lo_j = gx * ${TW} + 1;
% for r in rr:
%   for c in cc:
            if (row_in_${r} && col_in_${c} && i0 + ${r} >= lo_i && i0 + ${r} < lo_i + ${TH}
                && j0 + ${c} >= lo_j && j0 + ${c} < lo_j + ${TW})
                dst[(size_t)(i0 + ${r}) * row_stride + (size_t)(j0 + ${c})] = x_${r}_${c};
%   endfor
% endfor
        }
        if (done + ${K} >= steps)
            break;
        // Grid-wide barrier among the registered groups; then the buffers swap.
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        if (leader) {
            RELEASE();
            FETCH_INC(&sync[1]);
            while (LOAD_RELAXED(&sync[1]) < phase * groups)
                ;
            ACQUIRE();
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        __global real_t *swap = src;
        src = dst;
        dst = swap;
    }
}
