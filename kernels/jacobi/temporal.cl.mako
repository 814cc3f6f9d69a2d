<%inherit file="/base.cl.mako"/>
<%doc>
  Temporal blocking in registers, for GPUs. A work-group of local_w x local_h work-items owns
  a span of (local_h * rows) x (local_w * cols) cells; each work-item keeps its own block of
  rows x cols cells, and the right-hand side of those cells, in registers for the whole launch.
  Per step, work-items publish the four edges of their block in local memory, wait at one
  barrier (two with buffers=1), read their neighbours' edges and update the block. Up to
  max_steps steps per launch (runtime `steps` <= max_steps); the span's outer max_steps cells
  are a halo recomputed by the neighbouring groups, and only the inner tile is written.
  Each update evaluates ((((up + down) + left) + right) - b) * 0.25 exactly as NumPy does, so
  the result is bit-exact. Cells outside the interior keep their value.
  With row_window, the tiles start at row row_first (runtime: only the rows a caller reads,
  from there); without, at row 1 (the kernel ignores row_first).
  Global size (ceil(n / tile_w) * local_w, ceil(h / tile_h) * local_h), tile = span - 2 halo,
  h the rows from row_first that the tiles cover (m with row_first 1).
</%doc>
<%
    R, C, LW, LH, K = rows, cols, local_w, local_h, max_steps
    SW, SH = LW * C, LH * R
    TW, TH = SW - 2 * K, SH - 2 * K
    first_row = "row_first" if row_window else "1"  # the first tile's first row
    assert TW >= 1 and TH >= 1, "span too small for the halo"
    double_buffer = buffers == 2
    rr = range(R)
    cc = range(C)
%>
#pragma OPENCL FP_CONTRACT OFF
#define LW ${LW}
#define LH ${LH}
// Edge arrays, indexed so that neighbouring work-items (dimension 0) touch neighbouring words.
#define EW(buf, r) ((buf) * ${SH * LW} + (r) * LW)
#define EN(buf, c) ((buf) * ${LH * C * LW} + (c) * LW)

__kernel __attribute__((reqd_work_group_size(LW, LH, 1)))
void jacobi_temporal(__global real_t *restrict x_new, __global const real_t *restrict x_old,
                     __global const real_t *restrict rhs, int m, int n, int row_stride,
                     int steps, int row_first)
{
    __local real_t west[${buffers * SH * LW}];    // left column of each block
    __local real_t east[${buffers * SH * LW}];    // right column
    __local real_t north[${buffers * LH * C * LW}];  // top row
    __local real_t south[${buffers * LH * C * LW}];  // bottom row
    const int lx = get_local_id(0), ly = get_local_id(1);
    // Global (row, column) of this work-item's first cell.
    const int i0 = (int)get_group_id(1) * ${TH} + ${first_row} - ${K} + ly * ${R};
    const int j0 = (int)get_group_id(0) * ${TW} + 1 - ${K} + lx * ${C};
    // Neighbours' indices, clamped at the span's edge (the halo's outer cells may be wrong).
    const int lxw = max(lx - 1, 0), lxe = min(lx + 1, LW - 1);
    const int lyn = max(ly - 1, 0), lys = min(ly + 1, LH - 1);

% for r in rr:
    const bool row_in_${r} = i0 + ${r} >= 1 && i0 + ${r} <= m;
    const bool row_ok_${r} = i0 + ${r} >= 0 && i0 + ${r} <= m + 1;
% endfor
% for c in cc:
    const bool col_in_${c} = j0 + ${c} >= 1 && j0 + ${c} <= n;
    const bool col_ok_${c} = j0 + ${c} >= 0 && j0 + ${c} <= n + 1;
% endfor
    const bool all_in = ${" && ".join([f"row_in_{r}" for r in rr] + [f"col_in_{c}" for c in cc])};

    // Load the block and its right-hand side; cells outside the padded grid read as zero.
% for r in rr:
%   for c in cc:
    real_t x_${r}_${c} = 0, b_${r}_${c} = 0;
    if (row_ok_${r} && col_ok_${c}) {
        const size_t at = (size_t)(i0 + ${r}) * row_stride + (size_t)(j0 + ${c});
        x_${r}_${c} = x_old[at];
        b_${r}_${c} = rhs[at];
    }
%   endfor
% endfor

    for (int s = 0; s < steps; ++s) {
% if double_buffer:
        const int buf = s & 1;
% else:
        const int buf = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
% endif
        // Publish this block's edges.
% for r in rr:
        west[EW(buf, ly * ${R} + ${r}) + lx] = x_${r}_0;
        east[EW(buf, ly * ${R} + ${r}) + lx] = x_${r}_${C - 1};
% endfor
% for c in cc:
        north[EN(buf, ly * ${C} + ${c}) + lx] = x_0_${c};
        south[EN(buf, ly * ${C} + ${c}) + lx] = x_${R - 1}_${c};
% endfor
        barrier(CLK_LOCAL_MEM_FENCE);
        // Neighbours' edges.
% for r in rr:
        const real_t w_${r} = east[EW(buf, ly * ${R} + ${r}) + lxw];
        const real_t e_${r} = west[EW(buf, ly * ${R} + ${r}) + lxe];
% endfor
% for c in cc:
        const real_t n_${c} = south[EN(buf, lyn * ${C} + ${c}) + lx];
        const real_t s_${c} = north[EN(buf, lys * ${C} + ${c}) + lx];
% endfor
        // Update the block (same operations, same order as the NumPy reference).
<%
    def up(r, c): return f"x_{r-1}_{c}" if r > 0 else f"n_{c}"
    def down(r, c): return f"x_{r+1}_{c}" if r < R - 1 else f"s_{c}"
    def left(r, c): return f"x_{r}_{c-1}" if c > 0 else f"w_{r}"
    def right(r, c): return f"x_{r}_{c+1}" if c < C - 1 else f"e_{r}"
%>
% for r in rr:
%   for c in cc:
        const real_t y_${r}_${c} = (real_t)0.25 * (${up(r, c)} + ${down(r, c)} + ${left(r, c)} + ${right(r, c)} - b_${r}_${c});
%   endfor
% endfor
        if (all_in) {
% for r in rr:
            ${" ".join(f"x_{r}_{c} = y_{r}_{c};" for c in cc)}
% endfor
        } else {
% for r in rr:
            ${" ".join(f"x_{r}_{c} = (row_in_{r} && col_in_{c}) ? y_{r}_{c} : x_{r}_{c};" for c in cc)}
% endfor
        }
    }

    // Write the inner tile back.
    const int lo_i = (int)get_group_id(1) * ${TH} + ${first_row}, lo_j = (int)get_group_id(0) * ${TW} + 1;
% for r in rr:
%   for c in cc:
    if (row_in_${r} && col_in_${c} && i0 + ${r} >= lo_i && i0 + ${r} < lo_i + ${TH}
        && j0 + ${c} >= lo_j && j0 + ${c} < lo_j + ${TW})
        x_new[(size_t)(i0 + ${r}) * row_stride + (size_t)(j0 + ${c})] = x_${r}_${c};
%   endfor
% endfor
}
