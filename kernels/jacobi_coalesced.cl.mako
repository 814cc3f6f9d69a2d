<%inherit file="base.cl.mako"/>
<%doc>
  One Jacobi step with work-item dimension 0 along the contiguous axis (columns), so that
  neighbouring work-items read neighbouring addresses (coalesced on GPUs, vectorised by PoCL).
  Each work-item updates rows_per_item rows of one column.
  Global size (round_up(n, L0), round_up(ceil(m / rows_per_item), L1)).
</%doc>
__kernel void jacobi_coalesced(__global real_t *restrict x_new,
                               __global const real_t *restrict x_old,
                               __global const real_t *restrict rhs,
                               int m, int n, int row_stride)
{
    const size_t j = get_global_id(0) + 1;
    const size_t first_row = get_global_id(1) * ${rows_per_item} + 1;
    if (j > (size_t)n)
        return;
    for (size_t i = first_row; i < first_row + ${rows_per_item} && i <= (size_t)m; ++i) {
        const size_t at = IDX2(i, j, (size_t)row_stride);
        // Same order of operations as the NumPy reference, so results agree bit for bit.
        x_new[at] = (real_t)0.25 * (x_old[at - row_stride] + x_old[at + row_stride]
                                    + x_old[at - 1] + x_old[at + 1] - rhs[at]);
    }
}
