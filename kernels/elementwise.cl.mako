<%inherit file="/base.cl.mako"/>
<%doc>
  A CuPy-style elementwise kernel (oclsci.elementwise.ElementwiseKernel).
  Parameters:
    kernel_name  the OpenCL name of the kernel (the user's name)
    params       tuple of (name, cl type, is_array, is_written): the kernel's parameters, each
                 name once (an in-place output is one parameter, read and written)
    operation    the user's C statements; every parameter is a variable of its type, `i` is the
                 element index and `n` the number of elements
    preamble     user C code placed before the kernel (helper functions)
    per_item     elements per work-item (strided by the work-group size, so still coalesced)
    fp_contract  allow a*b + c to become fma (off by default: results equal NumPy's)
  Each array parameter comes with an element offset; each element is loaded into a private
  variable, the operation runs, and written parameters are stored back.
  Two kernels: NAME for the full work-groups, without bounds checks (global size
  floor(n / (L * per_item)) * L), and NAME_tail for the rest (one group, global offset where
  NAME stopped), which checks i < n.
</%doc>
% if not fp_contract:
#pragma OPENCL FP_CONTRACT OFF
% endif
${preamble}

<%def name="kernel(suffix, checked)">
__kernel void ${kernel_name}${suffix}(
% for pname, ctype, is_array, is_written in params:
% if is_array:
    __global ${"" if is_written else "const "}${ctype} *oclsci_${pname}, const ulong oclsci_${pname}_offset,
% else:
    const ${ctype} oclsci_${pname},
% endif
% endfor
    const ulong n)
{
% if per_item == 1:
    const size_t i = get_global_id(0);
% if checked:
    if (i >= n)
        return;
% endif
    {
% else:
    const size_t base = (get_global_id(0) - get_local_id(0)) * ${per_item} + get_local_id(0);
    for (int oclsci_k = 0; oclsci_k < ${per_item}; ++oclsci_k) {
        const size_t i = base + (size_t)oclsci_k * get_local_size(0);
% if checked:
        if (i >= n)
            break;
% endif
% endif
% for pname, ctype, is_array, is_written in params:
% if is_array:
        ${"" if is_written else "const "}${ctype} ${pname} = oclsci_${pname}[oclsci_${pname}_offset + i];
% else:
        const ${ctype} ${pname} = oclsci_${pname};
% endif
% endfor
        {
#line 1 "operation"
${operation}
;
        }
% for pname, ctype, is_array, is_written in params:
% if is_written:
        oclsci_${pname}[oclsci_${pname}_offset + i] = ${pname};
% endif
% endfor
    }
}
</%def>
// Full work-groups: no bounds check, so that PoCL vectorises without masks.
${kernel("", False)}

// The last, partial work-group (launched with a global offset).
${kernel("_tail", True)}
