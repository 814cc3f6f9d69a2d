<%inherit file="/base.cl.mako"/>
<%doc>
  Periodic boundaries of a user's stencil (oclsci/stencil/periodic.py): fills the ghost cells
  along one axis of a buffer that holds the grid inside `depth` ghost cells on each side of
  every axis with the cells of the grid they stand for, so that the stencil kernels read the
  grid's other side there.
  Parameters:
    dims     2 or 3
    axis     the axis whose ghost cells are filled (0 the slowest)
    word     an unsigned NumPy dtype of the elements' size: elements are copied as bits
    checked  whether work-items beyond the cells return (a global size rounded up to GPU
             work-groups); else the global size is exact and no item checks (a CPU
             compiler then vectorises along the contiguous axis)
    once     whether depth <= the grid's size along the axis (a ghost cell's cell is then
             one size away), else a remainder finds it
  Arguments: the buffer (rows of row_stride elements), its extents (m, n in 2-D; m, n, p in
  3-D, the slowest first: the grid and the ghost cells, without the rows' alignment) and
  depth. Along `axis`, work-item g < depth fills ghost cell g and the others the ghost cell
  size + g (size: the grid's, the extent less 2 depth), each from the cell (ghost - depth)
  mod size + depth: always one of the grid's own along `axis`, so that no item reads a cell
  another writes. Along the other axes the items cover the whole extents, ghost cells
  included: filled axis after axis (0 first), every corner ends with the right cell.
  Global size (contiguous axis first): the extents, 2 depth along `axis` (rounded up to the
  work-groups when checked).
</%doc>
<%
    word_t = cl_type(word)
    names = ("i", "j", "k")[:dims]  # slowest first
    a = names[axis]
    def at(value):
        return ", ".join(value if b == axis else names[b] for b in range(dims))
%>
% if dims == 2:
#define AT(i, j) ((size_t)(i) * (size_t)row_stride + (size_t)(j))
% else:
#define AT(i, j, k) (((size_t)(i) * (size_t)n + (size_t)(j)) * (size_t)row_stride + (size_t)(k))
% endif
__kernel void stencil_wrap(__global ${word_t} *restrict u,
% if dims == 2:
                           int m, int n, int row_stride, int depth)
{
    const int extent = ${("m", "n")[axis]};
    const int j = (int)get_global_id(0), i = (int)get_global_id(1);
% else:
                           int m, int n, int p, int row_stride, int depth)
{
    const int extent = ${("m", "n", "p")[axis]};
    const int k = (int)get_global_id(0), j = (int)get_global_id(1), i = (int)get_global_id(2);
% endif
% if checked:
<% limits = [("2 * depth" if b == axis else ("m", "n", "p")[b]) for b in range(dims)] %>\
    if (${" || ".join(f"{names[b]} >= {limits[b]}" for b in range(dims))})
        return;
% endif
    const int size = extent - 2 * depth;  // the grid's own cells along the axis
    const int ghost = ${a} < depth ? ${a} : ${a} + size;
% if once:
    const int own = ${a} < depth ? ghost + size : ghost - size;
% else:
    const int r = (ghost - depth) % size;
    const int own = (r < 0 ? r + size : r) + depth;
% endif
    u[AT(${at("ghost")})] = u[AT(${at("own")})];
}
