<%inherit file="/base.cl.mako"/>
<%doc>
  Counts the interior cells whose bits differ between two padded grids a and b (the tuner's
  exactness check, on the device so that large grids need not be read back).
  1-D global size: any; work-items stride over the m * n interior cells.
</%doc>
<% bits = "uint" if dtype.itemsize == 4 else "ulong" %>
__kernel void jacobi_compare(__global const real_t *restrict a, __global const real_t *restrict b,
                             int m, int n, int row_stride, __global uint *restrict count)
{
    const size_t cells = (size_t)m * (size_t)n;
    uint differ = 0;
    for (size_t k = get_global_id(0); k < cells; k += get_global_size(0)) {
        const size_t at = (k / (size_t)n + 1) * (size_t)row_stride + k % (size_t)n + 1;
        differ += as_${bits}(a[at]) != as_${bits}(b[at]);
    }
    if (differ)
        atomic_add(count, differ);
}
