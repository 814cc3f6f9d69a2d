<%inherit file="/base.cl.mako"/>
<%namespace name="reduction" file="/reduce.cl.mako"/>
<%doc>
  Kernels of the multigrid Poisson solver (oclsci/poisson/multigrid.py), one level at a time.
  Parameters: dtype (real_t), acc_dtype (sums of dot products), group_size (work-items of a
  dot-product group, a power of two), chunked (each work-item of a dot product sums one
  contiguous run of elements: CPUs; else they stride by the global size: GPUs), coarse_cells
  (most cells of the level that poisson_multigrid_coarse_solve holds in local memory).
  A level's global grid has mg x n unknowns with zero boundary values outside it; a buffer
  holds m of its rows, from global row row0 (all of them on one device, a slab under MPI),
  between two ghost rows: local row i is buffer row i + 1. Ghost rows hold the neighbouring
  slab's rows, or zeros at the grid's boundary, so no kernel tests rows for the boundary.
  The operator is L u = north u[i-1] + south u[i+1] + west u[j-1] + east u[j+1] - diagonal u
  with per-axis coefficients by global row g and column j: rows[g] = north, rows[mg + g] =
  south, cols[j] = west, cols[n + j] = east, diagonal their sum (all 1 on the finest level:
  the 5-point Laplacian of jacobi). 2-D kernels: global size (columns, rows) rounded up to the
  work-group; red-black smoothing gives each work-item one cell of the colour (by global
  row + column), so its global width is ceil(n / 2).
</%doc>
typedef ${cl_type(acc_dtype)} acc_t;

// Sum of the four neighbours of local row i (global g), column j, weighted by their
// coefficients; at = buffer index of the cell.
inline real_t neighbour_sum(__global const real_t *restrict u, size_t at, int g, int j, int mg,
                            int n, __global const real_t *restrict rows,
                            __global const real_t *restrict cols)
{
    real_t sum = rows[g] * u[at - (size_t)n] + rows[mg + g] * u[at + (size_t)n];
    if (j > 0)
        sum += cols[j] * u[at - 1];
    if (j < n - 1)
        sum += cols[n + j] * u[at + 1];
    return sum;
}

inline real_t diagonal(int g, int j, int mg, int n, __global const real_t *restrict rows,
                       __global const real_t *restrict cols)
{
    return (rows[g] + rows[mg + g]) + (cols[j] + cols[n + j]);
}

#define CELL(i, j, n) ((size_t)((i) + 1) * (size_t)(n) + (size_t)(j))

// One colour of a red-black Gauss-Seidel sweep (colour 0: global row + column even).
__kernel void poisson_multigrid_smooth_rb(__global real_t *restrict u, __global const real_t *restrict f,
                           __global const real_t *restrict rows,
                           __global const real_t *restrict cols, int m, int n, int row0,
                           int mg, int colour)
{
    const int i = get_global_id(1), g = i + row0;
    const int j = 2 * (int)get_global_id(0) + ((g + colour) & 1);
    if (i >= m || j >= n)
        return;
    const size_t at = CELL(i, j, n);
    u[at] = (neighbour_sum(u, at, g, j, mg, n, rows, cols) - f[at])
            / diagonal(g, j, mg, n, rows, cols);
}

// One weighted Jacobi sweep: u_out = u_in + weight ((neighbours - f) / diagonal - u_in).
__kernel void poisson_multigrid_smooth_jacobi(__global real_t *restrict u_out,
                               __global const real_t *restrict u_in,
                               __global const real_t *restrict f,
                               __global const real_t *restrict rows,
                               __global const real_t *restrict cols, int m, int n, int row0,
                               int mg, real_t weight)
{
    const int j = get_global_id(0), i = get_global_id(1), g = i + row0;
    if (i >= m || j >= n)
        return;
    const size_t at = CELL(i, j, n);
    const real_t target = (neighbour_sum(u_in, at, g, j, mg, n, rows, cols) - f[at])
                          / diagonal(g, j, mg, n, rows, cols);
    u_out[at] = u_in[at] + weight * (target - u_in[at]);
}

// r = f - L u.
__kernel void poisson_multigrid_residual(__global real_t *restrict r, __global const real_t *restrict u,
                          __global const real_t *restrict f,
                          __global const real_t *restrict rows,
                          __global const real_t *restrict cols, int m, int n, int row0, int mg)
{
    const int j = get_global_id(0), i = get_global_id(1), g = i + row0;
    if (i >= m || j >= n)
        return;
    const size_t at = CELL(i, j, n);
    r[at] = f[at] - (neighbour_sum(u, at, g, j, mg, n, rows, cols)
                     - diagonal(g, j, mg, n, rows, cols) * u[at]);
}

// out = L u.
__kernel void poisson_multigrid_apply(__global real_t *restrict out, __global const real_t *restrict u,
                       __global const real_t *restrict rows,
                       __global const real_t *restrict cols, int m, int n, int row0, int mg)
{
    const int j = get_global_id(0), i = get_global_id(1), g = i + row0;
    if (i >= m || j >= n)
        return;
    const size_t at = CELL(i, j, n);
    out[at] = neighbour_sum(u, at, g, j, mg, n, rows, cols)
              - diagonal(g, j, mg, n, rows, cols) * u[at];
}

// The fine residual r (global mf x n, rows from row0f here) on the coarse grid (mc x nc here,
// from global row row0c): coarse global row G gathers fine global rows
// row_step * G + row_step - 2 + (0, 1, 2) with weights row_weights[3 G + ...] (a fine row
// outside this slab is a ghost row), and columns alike.
__kernel void poisson_multigrid_restrict(__global real_t *restrict coarse, __global const real_t *restrict r,
                          __global const real_t *restrict row_weights,
                          __global const real_t *restrict col_weights,
                          int mc, int nc, int row0c, int n, int row0f, int mf,
                          int row_step, int col_step)
{
    const int J = get_global_id(0), I = get_global_id(1), G = I + row0c;
    if (I >= mc || J >= nc)
        return;
    real_t sum = (real_t)0;
    for (int a = 0; a < 3; ++a) {
        const int fine = row_step * G + row_step - 2 + a;
        const real_t wr = row_weights[3 * G + a];
        if (fine < 0 || fine >= mf || wr == (real_t)0)
            continue;
        real_t row_sum = (real_t)0;
        for (int b = 0; b < 3; ++b) {
            const int j = col_step * J + col_step - 2 + b;
            const real_t wc = col_weights[3 * J + b];
            if (j >= 0 && j < n && wc != (real_t)0)
                row_sum += wc * r[CELL(fine - row0f, j, n)];
        }
        sum += wr * row_sum;
    }
    coarse[CELL(I, J, nc)] = sum;
}

// u (m x n here, from global row row0f) += the coarse correction e (global mc x nc, rows from
// row0c here) interpolated: fine global row g lies between coarse rows row_lower[g] and
// row_lower[g] + 1 with weights row_weights[2 g], [2 g + 1] (columns alike).
__kernel void poisson_multigrid_interpolate_add(__global real_t *restrict u, __global const real_t *restrict e,
                                 __global const int *restrict row_lower,
                                 __global const real_t *restrict row_weights,
                                 __global const int *restrict col_lower,
                                 __global const real_t *restrict col_weights,
                                 int m, int n, int row0f, int nc, int row0c, int mc)
{
    const int j = get_global_id(0), i = get_global_id(1), g = i + row0f;
    if (i >= m || j >= n)
        return;
    real_t sum = (real_t)0;
    for (int a = 0; a < 2; ++a) {
        const int coarse = row_lower[g] + a;
        const real_t wr = row_weights[2 * g + a];
        if (coarse < 0 || coarse >= mc || wr == (real_t)0)
            continue;
        real_t row_sum = (real_t)0;
        for (int b = 0; b < 2; ++b) {
            const int J = col_lower[j] + b;
            const real_t wc = col_weights[2 * j + b];
            if (J >= 0 && J < nc && wc != (real_t)0)
                row_sum += wc * e[CELL(coarse - row0c, J, nc)];
        }
        sum += wr * row_sum;
    }
    u[CELL(i, j, n)] += sum;
}

// The coarsest level, whole on one device (m n <= coarse_cells), solved by `sweeps` red-black
// sweeps in local memory by one work-group; the same updates in the same order as poisson_multigrid_smooth_rb.
__kernel void poisson_multigrid_coarse_solve(__global real_t *restrict u, __global const real_t *restrict f,
                              __global const real_t *restrict rows,
                              __global const real_t *restrict cols, int m, int n, int sweeps)
{
    __local real_t lu[${coarse_cells}], lf[${coarse_cells}], ld[${coarse_cells}];
    const int cells = m * n, lid = get_local_id(0), size = get_local_size(0);
    for (int k = lid; k < cells; k += size) {
        lu[k] = u[k + n];
        lf[k] = f[k + n];
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
        u[k + n] = lu[k];
}

// Partial sums of a[k] * b[k], offset <= k < offset + count, one per work-group, in acc_t
// (kernels/reduce.cl.mako).
__kernel __attribute__((reqd_work_group_size(${group_size}, 1, 1)))
void poisson_multigrid_dot(__global const real_t *restrict a, __global const real_t *restrict b,
                           ulong offset, ulong count, __global acc_t *restrict partial_sums)
{
    a += offset;
    b += offset;
    acc_t sum = 0;
    <%reduction:each_item count="count" chunked="${chunked}">
        sum += (acc_t)a[k] * (acc_t)b[k];
    </%reduction:each_item>
${reduction.group_tree(group_size, "acc_t", [("sum", "+")], "partial_sums")}
}

// z = alpha x + beta y (z may be x or y).
__kernel void poisson_multigrid_axpby(__global real_t *z, real_t alpha, __global const real_t *x,
                       real_t beta, __global const real_t *y, ulong count)
{
    const ulong k = get_global_id(0);
    if (k < count)
        z[k] = alpha * x[k] + beta * y[k];
}

// u = 0.
__kernel void poisson_multigrid_zero(__global real_t *restrict u, ulong count)
{
    const ulong k = get_global_id(0);
    if (k < count)
        u[k] = (real_t)0;
}
