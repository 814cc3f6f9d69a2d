<%doc>
  Base of every oclsci kernel template.
  Parameters: dtype (NumPy dtype or None), uses_fp64 (set by oclsci.programs.render).
  Gives each kernel: the fp64 pragma only when needed, real_t typedef'd from dtype,
  and the shared index macros.
</%doc>
% if uses_fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
% if dtype is not None:
typedef ${cl_type(dtype)} real_t;
% endif

// Linear index of (row, col) in a row-major array with row_stride elements per row.
#define IDX2(row, col, row_stride) ((row) * (row_stride) + (col))

${self.body()}
