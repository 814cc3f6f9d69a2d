<%inherit file="/base.cl.mako"/>
<%doc>
  Partial sums of the squared residual r = (x_up + x_down + x_left + x_right - 4 x) - rhs over
  padded rows first_row .. first_row+rows-1, one per work-group (group_size work-items, a power of two), in acc_t.
  1-D global size: a multiple of group_size; work-items stride over the interior cells.
</%doc>
typedef ${cl_type(acc_dtype)} acc_t;

__kernel __attribute__((reqd_work_group_size(${group_size}, 1, 1)))
void jacobi_residual(__global const real_t *restrict x, __global const real_t *restrict rhs,
                     int first_row, int rows, int n, int row_stride,
                     __global acc_t *restrict partial_sums)
{
    __local acc_t sums[${group_size}];
    const size_t cells = (size_t)rows * (size_t)n;
    acc_t sum = 0;
    for (size_t k = get_global_id(0); k < cells; k += get_global_size(0)) {
        const size_t i = k / (size_t)n + (size_t)first_row, j = k % (size_t)n + 1;
        const size_t at = IDX2(i, j, (size_t)row_stride);
        const acc_t r = (acc_t)x[at - row_stride] + (acc_t)x[at + row_stride] + (acc_t)x[at - 1]
                      + (acc_t)x[at + 1] - (acc_t)4 * (acc_t)x[at] - (acc_t)rhs[at];
        sum += r * r;
    }
    // Reduce within the work-group.
    const size_t lid = get_local_id(0);
    sums[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t width = ${group_size} / 2; width > 0; width /= 2) {
        if (lid < width)
            sums[lid] += sums[lid + width];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial_sums[get_group_id(0)] = sums[0];
}
