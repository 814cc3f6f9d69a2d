<%inherit file="/base.cl.mako"/>
<%doc>
  One step of a user's stencil (oclsci.stencil): u_new = update(u_old, u_prev, fields, params)
  at every interior cell, one cell per work-item.
  Parameters:
    dims          2 or 3
    radius        the ring of cells around the grid (the stencil's reach), holding the boundary
                  value in u_old and u_new (never written) and zero in the fields (with
                  periodic boundaries, the other side: oclsci/stencil/periodic.py)
    fields        names of the read-only fields, in argument order (arguments f_<name>)
    params        names of the scalar parameters, in argument order (arguments p_<name>)
    uses_prev     whether the update reads the previous level (argument u_prev)
    update        the update as one C expression (oclsci.stencil.codegen): every operation
                  parenthesised in the NumPy reference's order; reads as u_old[at +/- ...]
    stencil_text  the stencil as the user wrote it (for the reader of the source)
    gpu_groups    whether the global size is rounded up to GPU work-groups: then work-items
                  beyond the grid return at once; else the global size is the grid's and no
                  work-item checks (a CPU compiler vectorises along the contiguous axis only
                  without the check, and with size_t indices: PoCL's did neither otherwise)
    windowed      whether the launch writes the layers z_first .. z_stop - 1 along the slowest
                  axis only (rows in 2-D, planes in 3-D; runtime arguments), the others left
                  as they were: an MPI strip's launches, which write only the layers that the
                  steps to the next exchange read (oclsci.stencil.solver.NeededLayers);
                  otherwise the kernel ignores z_first and z_stop
  Layout: every buffer is the padded grid, row-major, rows of row_stride elements (3-D: planes
  of (n + 2 radius) rows); `at` is the cell's index there, rs and ps the strides.
  Global size (n, w) in 2-D, (p, n, w) in 3-D (the contiguous axis first), w = z_stop -
  z_first when windowed, else m.
  Contraction into FMA is off, so each operation is one IEEE operation as in NumPy.
</%doc>
<% R = radius %>
#pragma OPENCL FP_CONTRACT OFF
// Stencil: ${stencil_text}
__kernel void stencil_step(__global real_t *restrict u_new,
                           __global const real_t *restrict u_old,
% if uses_prev:
                           __global const real_t *restrict u_prev,
% endif
% for name in fields:
                           __global const real_t *restrict f_${name},
% endfor
% for name in params:
                           const real_t p_${name},
% endfor
% if dims == 2:
                           int m, int n, int row_stride, int z_first, int z_stop)
{
% if gpu_groups:
    const int j = (int)get_global_id(0);
    const int i = ${"z_first + " if windowed else ""}(int)get_global_id(1);
    if (i >= ${"z_stop" if windowed else "m"} || j >= n)
        return;
% else:
    const size_t j = get_global_id(0);
    const size_t i = ${"(size_t)z_first + " if windowed else ""}get_global_id(1);
% endif
    const size_t rs = (size_t)row_stride;
    const size_t at = (size_t)(i + ${R}) * rs + (size_t)(j + ${R});
% else:
                           int m, int n, int p, int row_stride, int z_first, int z_stop)
{
% if gpu_groups:
    const int k = (int)get_global_id(0), j = (int)get_global_id(1);
    const int i = ${"z_first + " if windowed else ""}(int)get_global_id(2);
    if (i >= ${"z_stop" if windowed else "m"} || j >= n || k >= p)
        return;
% else:
    const size_t k = get_global_id(0), j = get_global_id(1);
    const size_t i = ${"(size_t)z_first + " if windowed else ""}get_global_id(2);
% endif
    const size_t rs = (size_t)row_stride, ps = (size_t)(n + ${2 * R}) * rs;
    const size_t at = (size_t)(i + ${R}) * ps + (size_t)(j + ${R}) * rs + (size_t)(k + ${R});
% endif
    u_new[at] =
#line 1 "stencil"
        ${update};
}
