<%inherit file="/base.cl.mako"/>
<%namespace name="reduction" file="/reduce.cl.mako"/>
<%doc>
  Partial sums of the squared residual r = (x_up + x_down + x_left + x_right - 4 x) - rhs over
  padded rows first_row .. first_row+rows-1, one per work-group (group_size work-items, a power
  of two; the tree of kernels/reduce.cl.mako), in acc_t.
  With rhs_only, r = rhs (the scale of the relative residual; x is not read).
  1-D global size: a multiple of group_size. Work-items stride over the interior cells
  (neighbouring work-items read neighbouring cells: GPUs), or with by_rows each sums whole rows,
  every global-size-th one (one work-item reads along a row: CPUs, where the strided walk of
  PoCL's work-item loops ran about 50x slower).
</%doc>
<%def name="add_cell()">
% if rhs_only:
        const acc_t r = (acc_t)rhs[at];
% else:
        const acc_t r = (acc_t)x[at - row_stride] + (acc_t)x[at + row_stride] + (acc_t)x[at - 1]
                      + (acc_t)x[at + 1] - (acc_t)4 * (acc_t)x[at] - (acc_t)rhs[at];
% endif
        sum += r * r;
</%def>
typedef ${cl_type(acc_dtype)} acc_t;

__kernel __attribute__((reqd_work_group_size(${group_size}, 1, 1)))
void jacobi_residual(__global const real_t *restrict x, __global const real_t *restrict rhs,
                     int first_row, int rows, int n, int row_stride,
                     __global acc_t *restrict partial_sums)
{
    acc_t sum = 0;
% if by_rows:
    for (size_t row = get_global_id(0); row < (size_t)rows; row += get_global_size(0)) {
        const size_t i = row + (size_t)first_row;
        for (size_t j = 1; j <= (size_t)n; ++j) {
            const size_t at = IDX2(i, j, (size_t)row_stride);
        ${add_cell()}
        }
    }
% else:
    // Cell k = (i - first_row) * n + (j - 1), striding by the global size; its row and column
    // advance by the stride's quotient and remainder (one division per work-item, not per cell).
    const size_t cells = (size_t)rows * (size_t)n;
    const size_t stride = get_global_size(0);
    const size_t row_step = stride / (size_t)n, column_step = stride % (size_t)n;
    size_t i = get_global_id(0) / (size_t)n + (size_t)first_row;
    size_t j = get_global_id(0) % (size_t)n + 1;
    for (size_t k = get_global_id(0); k < cells; k += stride) {
        const size_t at = IDX2(i, j, (size_t)row_stride);
    ${add_cell()}
        i += row_step;
        j += column_step;
        if (j > (size_t)n) {
            j -= (size_t)n;
            i += 1;
        }
    }
% endif
${reduction.group_tree(group_size, "acc_t", [("sum", "+")], "partial_sums")}
}
