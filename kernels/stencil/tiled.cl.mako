<%inherit file="/base.cl.mako"/>
<%doc>
  Temporal blocking of a user's stencil (oclsci.stencil) in local memory, 2-D and 3-D:
  max_steps steps per launch. A work-group owns a tile widened by a halo of radius x
  max_steps cells on each side (the span: local_w x cells_x columns, local_h x cells_y rows,
  in 3-D local_d x cells_z planes), loads the span once, then does max_steps steps in local
  memory, the region it updates shrinking by radius cells per side each step (the halo is
  recomputed by the neighbouring groups), with a barrier after each step. Two levels live in
  local memory, three with u.prev (previous, current, next: level l in buffer l mod 2, or
  (l + 1) mod 3). Only the tile is written back (u_new; with u.prev, prev_new gets the level
  before the last).
  Cells beyond the grid hold `boundary` at every level; fields are read from global memory
  (zero in the ring of radius cells; the other side with periodic boundaries).
  Parameters: dims, radius, fields, params, uses_prev, update (through the macros U(...),
  UPREV, F_<name>(...): oclsci.stencil.codegen.blocked_params), stencil_text, local_w,
  local_h, local_d (3-D), cells_x, cells_y, cells_z (3-D), max_steps, windowed.
  With windowed, the launch writes the layers z_first .. z_stop - 1 along the slowest axis
  only (planes in 3-D, rows in 2-D; runtime arguments), its tiles starting at z_first: an MPI
  strip's launches (oclsci.stencil.solver.NeededLayers); otherwise the kernel ignores them.
  Layout as the step kernel's (padded by radius, rows of row_stride elements).
  Global size: 2-D (ceil(n / tile_x) * local_w, ceil(w / tile_y) * local_h); 3-D
  (ceil(p / tile_x) * local_w, ceil(n / tile_y) * local_h, ceil(w / tile_z) * local_d),
  w = z_stop - z_first when windowed, else m.
  Contraction into FMA is off: each operation is one IEEE operation, as in NumPy.
</%doc>
<%
    R, K = radius, max_steps
    three = dims == 3
    LW, LH, LD = local_w, local_h, (local_d if three else 1)
    CX, CY, CZ = cells_x, cells_y, (cells_z if three else 1)
    SX, SY, SZ = LW * CX, LH * CY, LD * CZ
    H = R * K
    TX, TY, TZ = SX - 2 * H, SY - 2 * H, SZ - 2 * H
    assert TX >= 1 and TY >= 1 and (TZ >= 1 or not three), "span too small for the halo"
    B = 3 if uses_prev else 2
    def buf(level):
        return (level + 1) % 3 if uses_prev else level % 2
    cells = [(cz, cy, cx) for cz in range(CZ) for cy in range(CY) for cx in range(CX)]
    def name(c):
        return "_".join(map(str, c))
    def window(n):  # the layers the launch writes, when it writes some only
        layer = f"gz_{n}" if three else f"gy_{n}"
        return f" && {layer} < z_stop" if windowed else ""
    def region(t, c):
        n = name(c)
        tests = [f"xc_{n} >= {R * t} && xc_{n} < {SX - R * t}",
                 f"yc_{n} >= {R * t} && yc_{n} < {SY - R * t}"]
        if three:
            tests.append(f"zc_{n} >= {R * t} && zc_{n} < {SZ - R * t}")
        return " && ".join(tests)
%>
#pragma OPENCL FP_CONTRACT OFF
#define SX ${SX}
#define SY ${SY}
#define SPAN ${SX * SY * SZ}
#define LV(b, z, y, x) levels[(b) * SPAN + ((z) * SY + (y)) * SX + (x)]
// The update's reads at the cell (ZC, YC, XC) of the span, index AT in memory, from the
// buffers CUR (level t - 1) and PRV (level t - 2): each block defines these for its cell.
% if three:
#define U(di, dj, dk) LV(CUR, ZC + (di), YC + (dj), XC + (dk))
% for f in fields:
#define F_${f}(di, dj, dk) f_${f}[AT + (di) * ps + (dj) * rs + (dk)]
% endfor
% else:
#define U(di, dj) LV(CUR, 0, YC + (di), XC + (dj))
% for f in fields:
#define F_${f}(di, dj) f_${f}[AT + (di) * rs + (dj)]
% endfor
% endif
#define UPREV LV(PRV, ZC, YC, XC)
<%def name="bind(t, n)">\
#undef CUR
#undef PRV
#undef XC
#undef YC
#undef ZC
#undef AT
#define CUR ${buf(t - 1)}
#define PRV ${buf(t - 2)}
#define XC xc_${n}
#define YC yc_${n}
#define ZC zc_${n}
#define AT at_${n}
</%def>
// Stencil: ${stencil_text}
__kernel __attribute__((reqd_work_group_size(${LW}, ${LH}, ${LD})))
void stencil_tiled(__global real_t *restrict u_new, __global const real_t *restrict u_old,
% if uses_prev:
                   __global real_t *restrict prev_new, __global const real_t *restrict u_prev,
% endif
% for f in fields:
                   __global const real_t *restrict f_${f},
% endfor
% for p_name in params:
                   const real_t p_${p_name},
% endfor
                   const real_t boundary,
% if three:
                   int m, int n, int p, int row_stride, int z_first, int z_stop)
% else:
                   int m, int n, int row_stride, int z_first, int z_stop)
% endif
{
    __local real_t levels[${B} * SPAN];
    const long rs = row_stride;
    const int first = ${"z_first" if windowed else "0"};  // the first layer of the first tiles
% if three:
    const long ps = (long)(n + ${2 * R}) * rs;
    const int nx = p, ny = n, nz = m;  // columns, rows, planes
    const int gz0 = first + (int)get_group_id(2) * ${TZ} - ${H}, lz = (int)get_local_id(2);
    const int gy0 = (int)get_group_id(1) * ${TY} - ${H};
% else:
    const long ps = 0;
    const int nx = n, ny = m;
    const int gz0 = 0, lz = 0;
    const int gy0 = first + (int)get_group_id(1) * ${TY} - ${H};
% endif
    const int gx0 = (int)get_group_id(0) * ${TX} - ${H};
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
% for c in cells:
<% n = name(c) %>\
    const int xc_${n} = lx + ${LW * c[2]}, yc_${n} = ly + ${LH * c[1]}, zc_${n} = lz + ${LD * c[0]};
    const int gx_${n} = gx0 + xc_${n}, gy_${n} = gy0 + yc_${n}, gz_${n} = gz0 + zc_${n};
    const bool in_${n} = gx_${n} >= 0 && gx_${n} < nx && gy_${n} >= 0 && gy_${n} < ny${"" if not three else f" && gz_{n} >= 0 && gz_{n} < nz"};
    const long at_${n} = (long)(gz_${n} + ${R if three else 0}) * ps + (long)(gy_${n} + ${R}) * rs
                         + (gx_${n} + ${R});
    LV(${buf(0)}, zc_${n}, yc_${n}, xc_${n}) = in_${n} ? u_old[at_${n}] : boundary;
% if uses_prev:
    LV(${buf(-1)}, zc_${n}, yc_${n}, xc_${n}) = in_${n} ? u_prev[at_${n}] : boundary;
% endif
% endfor
    barrier(CLK_LOCAL_MEM_FENCE);

% for t in range(1, K + 1):
    {   // Step ${t}: level ${t} from level ${t - 1}${f" and {t - 2}" if uses_prev else ""}.
% for c in cells:
<% n = name(c) %>\
${bind(t, n)}
        if (${region(t, c)})
            LV(${buf(t)}, ZC, YC, XC) = in_${n} ? ${update} : boundary;
% endfor
% if t < K:
        barrier(CLK_LOCAL_MEM_FENCE);
% endif
    }
% endfor

    // Write the tile (each work-item its own cells: no barrier needed).
% for c in cells:
<% n = name(c) %>\
    if (in_${n} && ${region(K, c)}${window(n)}) {
        u_new[at_${n}] = LV(${buf(K)}, zc_${n}, yc_${n}, xc_${n});
% if uses_prev:
        prev_new[at_${n}] = LV(${buf(K - 1)}, zc_${n}, yc_${n}, xc_${n});
% endif
    }
% endfor
}
