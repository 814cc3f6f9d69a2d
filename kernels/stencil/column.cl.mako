<%inherit file="/base.cl.mako"/>
<%doc>
  Register streaming with temporal blocking for 3-D star stencils (oclsci.stencil):
  max_steps steps per launch.
  A work-group owns a tile of rows x columns widened by a halo of radius x max_steps cells on
  each side (the span, local_w x cells_x by local_h x cells_y cells, recomputed by the
  neighbouring groups) and marches along the planes over a segment of `seg` planes
  (runtime), one plane per advance. Each work-item keeps, for each of its cells and each
  level t below the top, the 2 radius + 1 values of level t along the planes in registers
  (a ring: slot j holds plane c - radius + j, c the plane level t + 1 computes next); its
  cells_y cells are consecutive rows, so that a read along the rows within them comes from
  their rings too; other neighbours across the plane come from local memory, where each
  level leaves its rings' middle plane: one plane per level, one barrier per level and
  advance.
  At an advance that loads plane a, level t computes plane a - radius x t, after level
  t - 1 (levels 1 .. max_steps in order), from level t - 1's ring (the planes) and its
  plane in local memory (across the plane); the top level's plane is written to u_new (and
  level max_steps - 1's to prev_new, with u.prev). Rings start filled with `boundary`;
  levels compute from the first advance: the planes they compute before their inputs are
  in place lie below every plane the tile's output needs.
  u.prev of level t is level t - 2's value at the same plane, its ring's slot 0 (level 1:
  u_prev). Cells beyond the grid hold `boundary` at every level; fields are read from
  global memory (zero in the ring of radius cells).
  Star stencils only: every read of u moves along one axis at most (the spec checks).
  With pack_x, a work-item's cells_x cells of a row are consecutive columns (else local_w
  apart), and a read along the row within them comes from their rings too.
  With prefetch, each work-item loads its cells of plane a + 1 at advance a, into registers
  (the global load's latency then passes while the levels compute plane a's steps).
  Parameters: radius, fields, params, uses_prev, update (through the macros U(i, j, k),
  UPREV, F_<name>(i, j, k): oclsci.stencil.codegen.blocked_params), stencil_text, local_w,
  local_h, cells_x, cells_y, max_steps, pack_x, prefetch, windowed.
  Layout as the step kernel's (padded by radius, rows of row_stride elements).
  With windowed, the launch writes the planes z_first .. z_stop - 1 only (runtime), reading
  the radius x max_steps planes on each side that they depend on; without, all planes (the
  kernel then ignores z_first and z_stop: NVIDIA's code for it ran 4% faster).
  Global size (ceil(p / tile_x) * local_w, ceil(n / tile_y) * local_h, ceil(w / seg)),
  w = z_stop - z_first; local size (local_w, local_h, 1).
  Contraction into FMA is off: each operation is one IEEE operation, as in NumPy.
</%doc>
<%
    R, K, LW, LH, CX, CY = radius, max_steps, local_w, local_h, cells_x, cells_y
    SX, SY = LW * CX, LH * CY
    H = R * K
    TX, TY = SX - 2 * H, SY - 2 * H
    assert TX >= 1 and TY >= 1, "span too small for the halo"
    W = 2 * R + 1
    cells = [(cy, cx) for cy in range(CY) for cx in range(CX)]
    def region(t, c):
        cy, cx = c
        return (f"xc_{cy}_{cx} >= {R * t} && xc_{cy}_{cx} < {SX - R * t} && "
                f"yc_{cy}_{cx} >= {R * t} && yc_{cy}_{cx} < {SY - R * t}")
%>
#pragma OPENCL FP_CONTRACT OFF
#define SX ${SX}
#define SY ${SY}
// Level t's plane across the slowest axis, in local memory.
#define LV(t, y, x) planes[((t) * SY + (y)) * SX + (x)]
// The update's reads of level TM1 for the cell (CY_, CX_) of the work-item's rings RINGS
// (cells_x by cells_y), at (XC, YC) of the plane, index AT in memory (each block defines these
// for its level and cell). A read along the planes, or of the cell itself, comes from the
// cell's ring; one across the rows to another of the work-item's cells (or, with pack_x,
// along the row) from that cell's ring; any other from local memory.
#define ROW(dj) ((CY_ + (dj)) < 0 ? 0 : (CY_ + (dj)) > ${CY - 1} ? ${CY - 1} : CY_ + (dj))
#define COL(dk) ((CX_ + (dk)) < 0 ? 0 : (CX_ + (dk)) > ${CX - 1} ? ${CX - 1} : CX_ + (dk))
#define U(di, dj, dk) ((di) != 0 || ((dj) == 0 && (dk) == 0) ? RINGS[CX_][CY_][${R} + (di)] \
    : (dk) == 0 && CY_ + (dj) >= 0 && CY_ + (dj) < ${CY} ? RINGS[CX_][ROW(dj)][${R}] \
    : ${1 if pack_x else 0} && (dj) == 0 && CX_ + (dk) >= 0 && CX_ + (dk) < ${CX} \
      ? RINGS[COL(dk)][CY_][${R}] \
    : LV(TM1, YC + (dj), XC + (dk)))
% for name in fields:
#define F_${name}(di, dj, dk) f_${name}[AT + (di) * ps + (dj) * rs + (dk)]
% endfor
#define UPREV prev_here
<%def name="bind(t, c)">\
#undef TM1
#undef RINGS
#undef CY_
#undef CX_
#undef XC
#undef YC
#undef AT
#define TM1 ${t - 1}
#define RINGS r${t - 1}
#define CY_ ${c[0]}
#define CX_ ${c[1]}
#define XC xc_${c[0]}_${c[1]}
#define YC yc_${c[0]}_${c[1]}
#define AT ((long)(pt + ${R}) * ps + off_${c[0]}_${c[1]})
</%def>
<%def name="push(t, c, value)">\
% for j in range(W - 1):
                r${t}[${c[1]}][${c[0]}][${j}] = r${t}[${c[1]}][${c[0]}][${j + 1}];
% endfor
                r${t}[${c[1]}][${c[0]}][${W - 1}] = ${value};
</%def>
// Stencil: ${stencil_text}
__kernel __attribute__((reqd_work_group_size(${LW}, ${LH}, 1)))
void stencil_column(__global real_t *restrict u_new, __global const real_t *restrict u_old,
% if uses_prev:
                    __global real_t *restrict prev_new, __global const real_t *restrict u_prev,
% endif
% for name in fields:
                    __global const real_t *restrict f_${name},
% endfor
% for name in params:
                    const real_t p_${name},
% endfor
                    const real_t boundary, int m, int n, int p, int row_stride, int seg,
                    int z_first, int z_stop)
{
    __local real_t planes[${K * SY * SX}];  // levels 0 .. max_steps - 1
    const long rs = row_stride;
    const long ps = (long)(n + ${2 * R}) * rs;
    const int gx0 = (int)get_group_id(0) * ${TX} - ${H}, gy0 = (int)get_group_id(1) * ${TY} - ${H};
% if windowed:
    const int z0 = z_first + (int)get_group_id(2) * seg;
    const int z1 = min(z0 + seg, z_stop);
% else:
    const int z0 = (int)get_group_id(2) * seg;  // every plane (z_first 0, z_stop m)
    const int z1 = min(z0 + seg, m);
% endif
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
% for cy, cx in cells:
    const int xc_${cy}_${cx} = ${f"lx * {CX} + {cx}" if pack_x else f"lx + {LW * cx}"}, yc_${cy}_${cx} = ly * ${CY} + ${cy};
    const int gx_${cy}_${cx} = gx0 + xc_${cy}_${cx}, gy_${cy}_${cx} = gy0 + yc_${cy}_${cx};
    const bool in_${cy}_${cx} = gx_${cy}_${cx} >= 0 && gx_${cy}_${cx} < p && gy_${cy}_${cx} >= 0 && gy_${cy}_${cx} < n;
    const bool tile_${cy}_${cx} = in_${cy}_${cx} && ${region(K, (cy, cx))};
    const long off_${cy}_${cx} = (long)(gy_${cy}_${cx} + ${R}) * rs + (gx_${cy}_${cx} + ${R});
% endfor
% for t in range(K):
    real_t r${t}[${CX}][${CY}][${W}];
% for cx in range(CX):
% for cy in range(CY):
% for j in range(W):
    r${t}[${cx}][${cy}][${j}] = boundary;
% endfor
% endfor
% endfor
% endfor

<%def name="load(c, plane)">\
(in_${c[0]}_${c[1]} && ${plane} >= 0 && ${plane} < m) ? u_old[(long)(${plane} + ${R}) * ps + off_${c[0]}_${c[1]}] : boundary\
</%def>
% if prefetch:
% for c in cells:
    real_t ahead_${c[0]}_${c[1]} = ${load(c, f"(z0 - {H})")};
% endfor
% endif
    for (int a = z0 - ${H}; a < z1 + ${H}; ++a) {
        {  // level 0: plane a from global memory (with prefetch: loaded at the last advance)
% for c in cells:
<% cy, cx = c %>\
% if prefetch:
            const real_t here_${cy}_${cx} = ahead_${cy}_${cx};
            ahead_${cy}_${cx} = ${load(c, "(a + 1)")};
${push(0, c, f"here_{cy}_{cx}")}\
% else:
${push(0, c, capture(load, c, "a"))}\
% endif
            LV(0, yc_${cy}_${cx}, xc_${cy}_${cx}) = r0[${cx}][${cy}][${R}];
% endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
% for t in range(1, K + 1):
        {  // level ${t}: plane a - ${R * t}
            const int pt = a - ${R * t};
% if t < K:
            const bool level_in = pt >= 0 && pt < m;
% endif
% for c in cells:
${bind(t, c)}\
% if t < K:
            {
                real_t v = boundary;
                if (in_${c[0]}_${c[1]} && level_in && ${region(t, c)}) {
% if uses_prev:
                    const real_t prev_here = ${"u_prev[AT]" if t == 1 else f"r{t - 2}[{c[1]}][{c[0]}][0]"};
% endif
                    v = ${update};
                }
${push(t, c, "v")}\
            }
% else:
            if (tile_${c[0]}_${c[1]} && pt >= z0 && pt < z1) {
% if uses_prev:
                const real_t prev_here = ${"u_prev[AT]" if t == 1 else f"r{t - 2}[{c[1]}][{c[0]}][0]"};
% endif
                u_new[AT] = ${update};
% if uses_prev:
                prev_new[AT] = r${K - 1}[${c[1]}][${c[0]}][${R}];
% endif
            }
% endif
% endfor
% if t < K:
% for cy, cx in cells:
            LV(${t}, yc_${cy}_${cx}, xc_${cy}_${cx}) = r${t}[${cx}][${cy}][${R}];
% endfor
% endif
        }
% if t < K:
        barrier(CLK_LOCAL_MEM_FENCE);
% endif
% endfor
% if K == 1:
        barrier(CLK_LOCAL_MEM_FENCE);  // level 0's plane is written again at the next advance
% endif
    }
}
