<%inherit file="/base.cl.mako"/>
<%doc>
  Copies ranges of elements between buffers in one launch: the rows that a rank's sub-slabs
  exchange on its device (oclsci/mpi/rowcopy.py), in place of one buffer copy per range.
  Parameters: copies (how many ranges), word (an unsigned NumPy dtype that divides the
  elements' size: elements are copied as bits, NaN payloads and -0.0 as they are).
  Arguments per range c: its source and destination buffers (one buffer may be the source of
  one range and the destination of another: the ranges differ, so no restrict), the first
  word read and the first word written, and end c: the words of ranges 0..c summed. Item k
  copies word k - end (c - 1) of the range c with end (c - 1) <= k < end c.
  1-D global size: at least the last end (items beyond it do nothing); any local size.
</%doc>
<% word_t = cl_type(word) %>
__kernel void mpi_copy_rows(
% for c in range(copies):
    __global const ${word_t} *src${c}, __global ${word_t} *dst${c},
    ulong from${c}, ulong to${c}, ulong end${c}${"," if c + 1 < copies else ")"}
% endfor
{
    const ulong k = get_global_id(0);
% for c in range(copies):
    ${"if" if c == 0 else "else if"} (k < end${c}) {
        const ulong i = k${f" - end{c - 1}" if c else ""};
        dst${c}[to${c} + i] = src${c}[from${c} + i];
    }
% endfor
}
