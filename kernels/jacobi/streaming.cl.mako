<%inherit file="/base.cl.mako"/>
<%doc>
  One Jacobi step with work-item dimension 0 along the contiguous axis (columns), so that
  neighbouring work-items read neighbouring addresses (coalesced on GPUs, vectorised by PoCL).
  Each work-item updates `vector` consecutive columns (vector loads and stores; 1, 2 or 4:
  PoCL 3.0 miscompiles some wider double vectors) of rows_per_item consecutive rows, keeping the rows above and below in registers.
  With vector == 1, work-item (g0, g1) updates column g0 + 1; with vector > 1 it covers padded
  columns [g0 * vector, g0 * vector + vector), aligned, and cells outside the interior (the
  boundary column 0 and columns beyond n) are written back unchanged.
  Global size (round_up(columns, L0), round_up(ceil(m / rows_per_item), L1)) where columns is
  n (vector 1) or ceil((n + 1) / vector).
</%doc>
<%
    V = context.get("vector", 1)
    R = rows_per_item
    vt = "real_t" if V == 1 else f"{cl_type(dtype)}{V}"
%>
#pragma OPENCL FP_CONTRACT OFF
__kernel void jacobi_streaming(__global real_t *restrict x_new,
                               __global const real_t *restrict x_old,
                               __global const real_t *restrict rhs,
                               int m_, int n_, int row_stride)
{
    const size_t m = (size_t)m_, n = (size_t)n_, rs = (size_t)row_stride;
    const size_t first_row = get_global_id(1) * ${R} + 1;
% if V == 1:
    const size_t j = get_global_id(0) + 1;
    if (j > n || first_row > m)
        return;
    size_t at = first_row * rs + j;
    real_t up = x_old[at - rs], mid = x_old[at];
    for (size_t k = 0; k < ${R}; ++k, at += rs) {
        if (first_row + k > m)
            break;
        const real_t down = x_old[at + rs];
        // Same order of operations as the NumPy reference, so results agree bit for bit.
        x_new[at] = (real_t)0.25 * (up + down + x_old[at - 1] + x_old[at + 1] - rhs[at]);
        up = mid;
        mid = down;
    }
% else:
<%
    lanes = "0123456789abcdef"[:V]
    left = f"({vt})(x_old[at - 1], " + ", ".join(f"mid.s{c}" for c in lanes[:-1]) + ")"
    right = f"({vt})(" + ", ".join(f"mid.s{c}" for c in lanes[1:]) + f", x_old[at + {V}])"
%>
    const size_t j0 = get_global_id(0) * ${V};
    if (j0 > n || first_row > m)
        return;
    // Lanes of this vector that are interior columns (1 <= j <= n) get the update.
    const bool whole = j0 >= 1 && j0 + ${V - 1} <= n;
    const ${vt} lane = (${vt})(${", ".join(f"(real_t){k}" for k in range(V))});
    size_t at = first_row * rs + j0;
    ${vt} up = vload${V}(0, x_old + at - rs), mid = vload${V}(0, x_old + at);
    for (size_t k = 0; k < ${R}; ++k, at += rs) {
        if (first_row + k > m)
            break;
        const ${vt} down = vload${V}(0, x_old + at + rs);
        const ${vt} left = ${left};
        const ${vt} right = ${right};
        // Same order of operations as the NumPy reference, so results agree bit for bit.
        ${vt} y = (real_t)0.25 * (up + down + left + right - vload${V}(0, rhs + at));
        if (!whole) {
            const ${vt} col = (${vt})((real_t)j0) + lane;
            y = (col >= (real_t)1 && col <= (real_t)n) ? y : mid;
        }
        vstore${V}(y, 0, x_new + at);
        up = mid;
        mid = down;
    }
% endif
}
