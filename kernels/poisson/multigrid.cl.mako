<%inherit file="/base.cl.mako"/>
<%doc>
  Kernels of the multigrid Poisson solver (oclsci/poisson/multigrid.py), one level at a time.
  Parameters: dtype (real_t), acc_dtype (sums of dot products), group_size (work-items of a
  dot-product group, a power of two), chunked (each work-item of a dot product sums one
  contiguous run of elements: CPUs; else they stride by the global size: GPUs), coarse_cells
  (most cells of the level that mg_coarse_solve holds in local memory).
  A level is an m x n row-major array of unknowns with zero boundary values outside it. Its
  operator is L u = north u[i-1] + south u[i+1] + west u[j-1] + east u[j+1] - diagonal u with
  per-axis coefficients: rows[i] = north, rows[m + i] = south, cols[j] = west, cols[n + j] =
  east, diagonal their sum (all 1 on the finest level: the 5-point Laplacian of jacobi).
  2-D kernels: global size (columns, rows) rounded up to the work-group; red-black smoothing
  gives each work-item one cell of the colour, so its global width is ceil(n / 2).
</%doc>
typedef ${cl_type(acc_dtype)} acc_t;

// Sum of the four neighbours of (i, j) weighted by their coefficients; zero outside.
inline real_t neighbour_sum(__global const real_t *restrict u, int i, int j, int m, int n,
                            __global const real_t *restrict rows,
                            __global const real_t *restrict cols)
{
    const size_t at = (size_t)i * (size_t)n + (size_t)j;
    real_t sum = (real_t)0;
    if (i > 0)
        sum += rows[i] * u[at - (size_t)n];
    if (i < m - 1)
        sum += rows[m + i] * u[at + (size_t)n];
    if (j > 0)
        sum += cols[j] * u[at - 1];
    if (j < n - 1)
        sum += cols[n + j] * u[at + 1];
    return sum;
}

inline real_t diagonal(int i, int j, int m, int n, __global const real_t *restrict rows,
                       __global const real_t *restrict cols)
{
    return (rows[i] + rows[m + i]) + (cols[j] + cols[n + j]);
}

// One colour of a red-black Gauss-Seidel sweep (colour 0: i + j even).
__kernel void mg_smooth_rb(__global real_t *restrict u, __global const real_t *restrict f,
                           __global const real_t *restrict rows,
                           __global const real_t *restrict cols, int m, int n, int colour)
{
    const int i = get_global_id(1);
    const int j = 2 * (int)get_global_id(0) + ((i + colour) & 1);
    if (i >= m || j >= n)
        return;
    const size_t at = (size_t)i * (size_t)n + (size_t)j;
    u[at] = (neighbour_sum(u, i, j, m, n, rows, cols) - f[at]) / diagonal(i, j, m, n, rows, cols);
}

// One weighted Jacobi sweep: u_out = u_in + weight ((neighbours - f) / diagonal - u_in).
__kernel void mg_smooth_jacobi(__global real_t *restrict u_out,
                               __global const real_t *restrict u_in,
                               __global const real_t *restrict f,
                               __global const real_t *restrict rows,
                               __global const real_t *restrict cols, int m, int n,
                               real_t weight)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i >= m || j >= n)
        return;
    const size_t at = (size_t)i * (size_t)n + (size_t)j;
    const real_t target = (neighbour_sum(u_in, i, j, m, n, rows, cols) - f[at])
                          / diagonal(i, j, m, n, rows, cols);
    u_out[at] = u_in[at] + weight * (target - u_in[at]);
}

// r = f - L u.
__kernel void mg_residual(__global real_t *restrict r, __global const real_t *restrict u,
                          __global const real_t *restrict f,
                          __global const real_t *restrict rows,
                          __global const real_t *restrict cols, int m, int n)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i >= m || j >= n)
        return;
    const size_t at = (size_t)i * (size_t)n + (size_t)j;
    r[at] = f[at] - (neighbour_sum(u, i, j, m, n, rows, cols)
                     - diagonal(i, j, m, n, rows, cols) * u[at]);
}

// out = L u.
__kernel void mg_apply(__global real_t *restrict out, __global const real_t *restrict u,
                       __global const real_t *restrict rows,
                       __global const real_t *restrict cols, int m, int n)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i >= m || j >= n)
        return;
    const size_t at = (size_t)i * (size_t)n + (size_t)j;
    out[at] = neighbour_sum(u, i, j, m, n, rows, cols) - diagonal(i, j, m, n, rows, cols) * u[at];
}

// The fine residual r (m x n) on the coarse grid (mc x nc): coarse (I, J) gathers fine rows
// row_step * I + row_step - 2 + (0, 1, 2) with weights row_weights[3 I + ...], and columns alike.
__kernel void mg_restrict(__global real_t *restrict coarse, __global const real_t *restrict r,
                          __global const real_t *restrict row_weights,
                          __global const real_t *restrict col_weights,
                          int mc, int nc, int m, int n, int row_step, int col_step)
{
    const int J = get_global_id(0), I = get_global_id(1);
    if (I >= mc || J >= nc)
        return;
    real_t sum = (real_t)0;
    for (int a = 0; a < 3; ++a) {
        const int i = row_step * I + row_step - 2 + a;
        const real_t wr = row_weights[3 * I + a];
        if (i < 0 || i >= m || wr == (real_t)0)
            continue;
        real_t row_sum = (real_t)0;
        for (int b = 0; b < 3; ++b) {
            const int j = col_step * J + col_step - 2 + b;
            const real_t wc = col_weights[3 * J + b];
            if (j >= 0 && j < n && wc != (real_t)0)
                row_sum += wc * r[(size_t)i * (size_t)n + (size_t)j];
        }
        sum += wr * row_sum;
    }
    coarse[(size_t)I * (size_t)nc + (size_t)J] = sum;
}

// u (m x n) += the coarse correction e (mc x nc) interpolated: fine row i lies between coarse
// rows row_lower[i] and row_lower[i] + 1 with weights row_weights[2 i], [2 i + 1] (columns alike).
__kernel void mg_interpolate_add(__global real_t *restrict u, __global const real_t *restrict e,
                                 __global const int *restrict row_lower,
                                 __global const real_t *restrict row_weights,
                                 __global const int *restrict col_lower,
                                 __global const real_t *restrict col_weights,
                                 int m, int n, int mc, int nc)
{
    const int j = get_global_id(0), i = get_global_id(1);
    if (i >= m || j >= n)
        return;
    real_t sum = (real_t)0;
    for (int a = 0; a < 2; ++a) {
        const int I = row_lower[i] + a;
        const real_t wr = row_weights[2 * i + a];
        if (I < 0 || I >= mc || wr == (real_t)0)
            continue;
        real_t row_sum = (real_t)0;
        for (int b = 0; b < 2; ++b) {
            const int J = col_lower[j] + b;
            const real_t wc = col_weights[2 * j + b];
            if (J >= 0 && J < nc && wc != (real_t)0)
                row_sum += wc * e[(size_t)I * (size_t)nc + (size_t)J];
        }
        sum += wr * row_sum;
    }
    u[(size_t)i * (size_t)n + (size_t)j] += sum;
}

// The coarsest level (m n <= coarse_cells) solved by `sweeps` red-black sweeps in local memory,
// by one work-group; the same updates in the same order as mg_smooth_rb.
__kernel void mg_coarse_solve(__global real_t *restrict u, __global const real_t *restrict f,
                              __global const real_t *restrict rows,
                              __global const real_t *restrict cols, int m, int n, int sweeps)
{
    __local real_t lu[${coarse_cells}], lf[${coarse_cells}], ld[${coarse_cells}];
    const int cells = m * n, lid = get_local_id(0), size = get_local_size(0);
    for (int k = lid; k < cells; k += size) {
        lu[k] = u[k];
        lf[k] = f[k];
        ld[k] = diagonal(k / n, k % n, m, n, rows, cols);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int sweep = 0; sweep < sweeps; ++sweep) {
        for (int colour = 0; colour < 2; ++colour) {
            for (int k = lid; k < cells; k += size) {
                const int i = k / n, j = k % n;
                if (((i + j) & 1) != colour)
                    continue;
                real_t sum = (real_t)0;
                if (i > 0)
                    sum += rows[i] * lu[k - n];
                if (i < m - 1)
                    sum += rows[m + i] * lu[k + n];
                if (j > 0)
                    sum += cols[j] * lu[k - 1];
                if (j < n - 1)
                    sum += cols[n + j] * lu[k + 1];
                lu[k] = (sum - lf[k]) / ld[k];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    for (int k = lid; k < cells; k += size)
        u[k] = lu[k];
}

// Partial sums of a[k] * b[k], k < count, one per work-group, in acc_t.
__kernel __attribute__((reqd_work_group_size(${group_size}, 1, 1)))
void mg_dot(__global acc_t *restrict partial_sums, __global const real_t *restrict a,
            __global const real_t *restrict b, ulong count)
{
    __local acc_t sums[${group_size}];
    acc_t sum = 0;
% if chunked:
    const ulong chunk = (count + get_global_size(0) - 1) / get_global_size(0);
    const ulong first = get_global_id(0) * chunk;
    const ulong last = min(first + chunk, count);
    for (ulong k = first; k < last; ++k)
        sum += (acc_t)a[k] * (acc_t)b[k];
% else:
    for (ulong k = get_global_id(0); k < count; k += get_global_size(0))
        sum += (acc_t)a[k] * (acc_t)b[k];
% endif
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

// z = alpha x + beta y (z may be x or y).
__kernel void mg_axpby(__global real_t *z, real_t alpha, __global const real_t *x,
                       real_t beta, __global const real_t *y, ulong count)
{
    const ulong k = get_global_id(0);
    if (k < count)
        z[k] = alpha * x[k] + beta * y[k];
}

// u = 0.
__kernel void mg_zero(__global real_t *restrict u, ulong count)
{
    const ulong k = get_global_id(0);
    if (k < count)
        u[k] = (real_t)0;
}
