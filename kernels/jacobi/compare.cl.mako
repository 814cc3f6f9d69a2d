<%inherit file="/base.cl.mako"/>
<%namespace name="reduction" file="/reduce.cl.mako"/>
<%doc>
  Counts the interior cells whose bits differ between two padded grids a and b (the tuner's
  exactness check, on the device so that large grids need not be read back): one count per
  work-group in counts (kernels/reduce.cl.mako), added on the host.
  Parameters: dtype (real_t), group_size (work-items per group, a power of two).
  1-D global size: a multiple of group_size; work-items stride over the m * n interior cells.
</%doc>
<% bits = "uint" if dtype.itemsize == 4 else "ulong" %>
__kernel __attribute__((reqd_work_group_size(${group_size}, 1, 1)))
void jacobi_compare(__global const real_t *restrict a, __global const real_t *restrict b,
                    int m, int n, int row_stride, __global uint *restrict counts)
{
    uint differ = 0;
    <%reduction:each_item count="(size_t)m * (size_t)n" chunked="${False}">
        const size_t at = (k / (size_t)n + 1) * (size_t)row_stride + k % (size_t)n + 1;
        differ += as_${bits}(a[at]) != as_${bits}(b[at]);
    </%reduction:each_item>
${reduction.group_tree(group_size, "uint", [("differ", "+")], "counts")}
}
