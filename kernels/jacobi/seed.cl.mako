<%inherit file="/base.cl.mako"/>
<%doc>
  The seed talk's PyOpenCL kernel, kept as written for comparison: work-item dimension 0 runs
  along rows (i), so neighbouring work-items touch memory a whole row apart.
  One Jacobi step; global size (m+2, n+2); x_new and x_old have row_stride elements per row.
</%doc>
__kernel void jacobi_seed(__global real_t *x_new, __global const real_t *x_old,
                          __global const real_t *rhs, int m, int n, int row_stride)
{
    int i = get_global_id(0);
    int j = get_global_id(1);
    if ((i >= 1) && (i < (m + 1)) && (j >= 1) && (j < (n + 1))) {
        x_new[IDX2(i, j, row_stride)] = (real_t)0.25 * (
            x_old[IDX2(i - 1, j, row_stride)] + x_old[IDX2(i + 1, j, row_stride)]
          + x_old[IDX2(i, j - 1, row_stride)] + x_old[IDX2(i, j + 1, row_stride)]
          - rhs[IDX2(i, j, row_stride)]);
    }
}
