<%inherit file="/base.cl.mako"/>
<%doc>
  Streaming (2.5-D) temporal blocking of a user's stencil (oclsci.stencil), 2-D and 3-D:
  max_steps steps per launch.
  A work-group owns a tile of the plane across the slowest axis (2-D: a run of columns; 3-D:
  a tile of rows x columns) widened by a halo of radius x max_steps cells on each side (the
  span, local_w x cells_x by local_h x cells_y cells, recomputed by the neighbouring groups),
  and marches along the slowest axis over a segment of `seg` planes (runtime), one plane per
  advance. Level 0 is the plane loaded at this advance; level t (1 .. max_steps) computes
  the plane (radius + 1) x t behind, from level t - 1's planes around it, all of which were
  computed at earlier advances: one barrier per advance. Each level below the top keeps Q
  planes in local memory (2 radius + 2, one more when level t reads u.prev from level
  t - 2), in slots that rotate with the plane's number, so a loop of Q advances unrolled
  has every slot as a constant. The top level's plane is written to u_new (and level
  max_steps - 1's to prev_new, with u.prev) for the tile's cells in the segment.
  Cells beyond the grid hold `boundary` at every level; fields are read from global memory
  (zero in the ring of radius cells); u.prev of level 1 comes from u_prev.
  Parameters: dims, radius, fields, params, uses_prev, update (through the macros U(...),
  UPREV, F_<name>(...): oclsci.stencil.codegen.blocked_params), stencil_text, local_w,
  local_h (1 in 2-D), cells_x, cells_y (1 in 2-D), max_steps, windowed.
  Layout as the step kernel's (padded by radius, rows of row_stride elements).
  With windowed, the launch writes the planes z_first .. z_stop - 1 only (runtime), reading
  the max_steps x radius planes on each side that they depend on; without, all planes (the
  kernel ignores z_first and z_stop).
  Global size: 2-D (ceil(n / tile_x) * local_w, ceil(w / seg)); 3-D (ceil(p / tile_x) *
  local_w, ceil(n / tile_y) * local_h, ceil(w / seg)), w = z_stop - z_first; local size
  (local_w[, local_h], 1).
  Contraction into FMA is off: each operation is one IEEE operation, as in NumPy.
</%doc>
<%
    R, K, LW, CX = radius, max_steps, local_w, cells_x
    three = dims == 3
    LH, CY = (local_h, cells_y) if three else (1, 1)
    SX, SY = LW * CX, LH * CY
    H = R * K
    TX, TY = SX - 2 * H, SY - 2 * H
    assert TX >= 1 and (TY >= 1 or not three), "span too small for the halo"
    Q = 2 * R + 2 + (1 if uses_prev and K > 1 else 0)
    cells = [(cy, cx) for cy in range(CY) for cx in range(CX)]
    def region(t, c):
        cy, cx = c
        low, high = R * t, SX - R * t
        test = f"xc_{cy}_{cx} >= {low} && xc_{cy}_{cx} < {high}"
        if three:
            test += f" && yc_{cy}_{cx} >= {R * t} && yc_{cy}_{cx} < {SY - R * t}"
        return test
%>
#pragma OPENCL FP_CONTRACT OFF
#define SX ${SX}
#define SY ${SY}
#define Q ${Q}
// Level t's plane in slot s (the plane's number, counted from the first, modulo Q).
#define LV(t, s, y, x) planes[(((t) * Q + (s)) * SY + (y)) * SX + (x)]
// The update's reads at the cell (XC, YC) of level TM1's plane in slot SU, index AT in
// memory (each block of the kernel defines these four for its level and cell).
% if three:
#define U(di, dj, dk) LV(TM1, (SU + Q + (di)) % Q, YC + (dj), XC + (dk))
% for name in fields:
#define F_${name}(di, dj, dk) f_${name}[AT + (di) * ps + (dj) * rs + (dk)]
% endfor
% else:
#define U(di, dk) LV(TM1, (SU + Q + (di)) % Q, 0, XC + (dk))
% for name in fields:
#define F_${name}(di, dk) f_${name}[AT + (di) * ps + (dk)]
% endfor
% endif
#define UPREV prev_here
<%def name="bind(t, su, c)">\
#undef TM1
#undef SU
#undef XC
#undef YC
#undef AT
#define TM1 ${t - 1}
#define SU ${su}
#define XC xc_${c[0]}_${c[1]}
#define YC yc_${c[0]}_${c[1]}
#define AT ((long)(pt + ${R}) * ps + off_${c[0]}_${c[1]})
</%def>
// Stencil: ${stencil_text}
__kernel __attribute__((reqd_work_group_size(${LW}, ${LH}, 1)))
void stencil_stream(__global real_t *restrict u_new, __global const real_t *restrict u_old,
% if uses_prev:
                    __global real_t *restrict prev_new, __global const real_t *restrict u_prev,
% endif
% for name in fields:
                    __global const real_t *restrict f_${name},
% endfor
% for name in params:
                    const real_t p_${name},
% endfor
                    const real_t boundary,
% if three:
                    int m, int n, int p, int row_stride, int seg, int z_first, int z_stop)
% else:
                    int m, int n, int row_stride, int seg, int z_first, int z_stop)
% endif
{
    __local real_t planes[${K * Q * SY * SX}];  // levels 0 .. max_steps - 1
    const long rs = row_stride;
% if three:
    const long ps = (long)(n + ${2 * R}) * rs;
    const int nx = p, ny = n;
    const int gx0 = (int)get_group_id(0) * ${TX} - ${H}, gy0 = (int)get_group_id(1) * ${TY} - ${H};
    const int z0 = ${"z_first + " if windowed else ""}(int)get_group_id(2) * seg;
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
% else:
    const long ps = rs;
    const int nx = n;
    const int gx0 = (int)get_group_id(0) * ${TX} - ${H};
    const int z0 = ${"z_first + " if windowed else ""}(int)get_group_id(1) * seg;
    const int lx = (int)get_local_id(0), ly = 0;
% endif
    const int z1 = min(z0 + seg, ${"z_stop" if windowed else "m"});
    const int first = z0 - ${H};                       // the first plane level 0 loads
    const int count = z1 - z0 + ${K * (2 * R + 1)};    // advances until the top passes z1
% for cy, cx in cells:
    const int xc_${cy}_${cx} = lx + ${LW * cx}, yc_${cy}_${cx} = ly + ${LH * cy};
    const int gx_${cy}_${cx} = gx0 + xc_${cy}_${cx};
% if three:
    const int gy_${cy}_${cx} = gy0 + yc_${cy}_${cx};
% endif
    const bool in_${cy}_${cx} = gx_${cy}_${cx} >= 0 && gx_${cy}_${cx} < nx${f" && gy_{cy}_{cx} >= 0 && gy_{cy}_{cx} < ny" if three else ""};
    const bool tile_${cy}_${cx} = in_${cy}_${cx} && ${region(K, (cy, cx))};
    const long off_${cy}_${cx} = ${"(long)(gy_%d_%d + %d) * rs + " % (cy, cx, R) if three else ""}(gx_${cy}_${cx} + ${R});
% endfor

    for (int done = 0; done < count; done += Q) {
% for k in range(Q):
        {
            const int a = first + done + ${k};
            const bool plane_in = a >= 0 && a < m;
% for cy, cx in cells:
            LV(0, ${k}, yc_${cy}_${cx}, xc_${cy}_${cx}) = (in_${cy}_${cx} && plane_in)
                ? u_old[(long)(a + ${R}) * ps + off_${cy}_${cx}] : boundary;
% endfor
% for t in range(1, K + 1):
<% su = (k - t * (R + 1)) % Q %>\
            if (done + ${k} >= ${t * (2 * R + 1)}) {  // level ${t}'s plane has its inputs
                const int pt = a - ${t * (R + 1)};
% if t < K:
                const bool level_in = pt >= 0 && pt < m;
% endif
% for c in cells:
${bind(t, su, c)}
% if t < K:
                if (${region(t, c)}) {
                    real_t v = boundary;
                    if (in_${c[0]}_${c[1]} && level_in) {
% if uses_prev:
                        const real_t prev_here = ${"u_prev[AT]" if t == 1 else f"LV({t - 2}, SU, YC, XC)"};
% endif
                        v = ${update};
                    }
                    LV(${t}, SU, YC, XC) = v;
                }
% else:
                if (tile_${c[0]}_${c[1]} && pt >= z0 && pt < z1) {
% if uses_prev:
                    const real_t prev_here = ${"u_prev[AT]" if t == 1 else f"LV({t - 2}, SU, YC, XC)"};
% endif
                    u_new[AT] = ${update};
% if uses_prev:
                    prev_new[AT] = LV(${K - 1}, SU, YC, XC);
% endif
                }
% endif
% endfor
            }
% endfor
            barrier(CLK_LOCAL_MEM_FENCE);
        }
% endfor
    }
}
