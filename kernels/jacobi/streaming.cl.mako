<%inherit file="/base.cl.mako"/>
<%doc>
  Streaming (2.5-D) temporal blocking, for GPUs. A work-group of local_w work-items owns a
  strip of local_w * cols columns and walks down seg_h rows of it, one row per advance, doing
  max_steps steps in one pass: level 0 is the row loaded at this advance, level t the row
  skew * t above it after t steps. Each work-item keeps cols columns of skew + 2 rows per level
  in registers (the rows above, at and below the cells level t + 1 updates, and with skew 2
  the level's new row: then the levels of one advance do not depend on each other), so the
  vertical neighbours never leave it; left and right neighbours come from the neighbouring
  work-items through local memory, one barrier per advance (edges double-buffered by the
  advance's parity). Only the strip's sides are a halo (left: the multiple of cols >=
  max_steps, right: at least max_steps), recomputed by the neighbouring strips; the segment's
  top and bottom cost (1 + skew) * max_steps extra advances. Level 0's next row and level 1's
  right-hand side are loaded one advance ahead, the other levels' right-hand side (which the
  level below read skew advances earlier, so cached) before the barrier. Advances and
  work-items wholly inside the grid, in full launches, take a path without tests per cell.
  Levels above `steps` (runtime, <= max_steps) pass their row through. Columns are aligned
  to cols (rows start aligned: row_stride is a multiple of 16), so loads and stores are
  vectors. Each update evaluates ((((up + down) + left) + right) - b) * 0.25 exactly as NumPy
  does: bit-exact. Cells outside the interior keep their value.
  Global size (ceil((n + 1) / tile_w) * local_w, ceil(m / seg_h)), local size (local_w, 1).
</%doc>
<%
    C, LW, T, SH, D = cols, local_w, max_steps, seg_h, skew
    S = D + 2                          # row slots per level
    L = C * -(-T // C)                 # left halo: a multiple of C >= T
    TW = (LW * C - L - T) // C * C     # tile: a multiple of C, right halo >= T
    assert TW >= C, "strip too narrow for the halo"
    vt = "real_t" if C == 1 else f"{cl_type(dtype)}{C}"
    lanes = "0123456789abcdef"[:C]
    def lane(v, c):
        return v if C == 1 else f"{v}.s{lanes[c]}"
    def load(ptr):
        return f"({ptr})[0]" if C == 1 else f"vload{C}(0, {ptr})"
    def reg(t, slot):
        return f"x{t}_{slot}"
%>
#pragma OPENCL FP_CONTRACT OFF
#define LW ${LW}
// Edge arrays [parity][level][work-item]: neighbouring work-items touch neighbouring words.
#define EDGE(buf, t, item) (((buf) * ${T} + (t)) * LW + (item))

__kernel __attribute__((reqd_work_group_size(LW, 1, 1)))
void jacobi_streaming(__global real_t *restrict x_new, __global const real_t *restrict x_old,
                      __global const real_t *restrict rhs, int m, int n, int row_stride,
                      int steps)
{
    __local real_t west[${2 * T * LW}];   // each level's current row: leftmost column
    __local real_t east[${2 * T * LW}];   // rightmost column
    const int lx = get_local_id(0);
    const int j0 = (int)get_group_id(0) * ${TW} - ${L} + lx * ${C};  // first column
    const int r0 = (int)get_group_id(1) * ${SH} + 1;                 // the segment's rows
    const int r1 = min(r0 + ${SH}, m + 1);
    const int lxw = max(lx - 1, 0), lxe = min(lx + 1, LW - 1);
    // Whole vector inside the allocated row (row_stride is a multiple of 16, j0 of cols).
    const bool in_memory = j0 >= 0 && j0 + ${C} <= row_stride;
% for c in range(C):
    const bool col_in_${c} = j0 + ${c} >= 1 && j0 + ${c} <= n;
% endfor
    const bool all_cols_in = ${" && ".join(f"col_in_{c}" for c in range(C))};
    const bool item_inside = all_cols_in && in_memory;
    const bool in_tile = lx * ${C} >= ${L} && lx * ${C} < ${L + TW};
    const ${vt} zero = (${vt})0;

    // skew + 2 rows per level below the top one, in slots that rotate each advance.
% for t in range(T):
    ${vt} ${", ".join(f"{reg(t, s)} = zero" for s in range(S))};
% endfor

<%def name="update(k, t, checked)">
<%
    above, at, below, new = k % S, (k + 1) % S, (k + 2) % S, (k + S - 1) % S
    src_above, src_at, src_below = (reg(t - 1, s) for s in (above, at, below))
    left, right = f"left_{t - 1}", f"right_{t - 1}"
    if C > 1:
        left = f"({vt})({left}, " + ", ".join(lane(src_at, c) for c in range(C - 1)) + ")"
        right = f"({vt})(" + ", ".join(lane(src_at, c) for c in range(1, C)) + f", {right})"
    y = f"(real_t)0.25 * ({src_above} + {src_below} + {left} + {right} - b_{t})"
%>
% if not checked:
        ${reg(t, new) if t < T else "top"} = ${y};
% else:
        {
            // Level ${t}: row a - ${D * t}, from level ${t - 1}'s rows around it.
            const ${vt} y = ${y};
            ${vt} keep = ${src_at};
            if (update_${t} && all_cols_in) {
                keep = y;
            } else if (update_${t}) {
% for c in range(C):
                ${lane("keep", c)} = col_in_${c} ? ${lane("y", c)} : ${lane("keep", c)};
% endfor
            }
            ${reg(t, new) if t < T else "top"} = keep;
        }
% endif
</%def>

<%def name="advance(k)">
<%
    at, new = (k + 1) % S, (k + S - 1) % S
%>
    {
        const int a = first + ${k};
        const int buf = a & 1;
        const size_t at_a = (size_t)a * row_stride + j0;
        // Plain: every level updates every column of this item (no test per cell).
        const bool plain = item_inside && steps == ${T} && a - ${D * T} >= 1 && a <= m + 1;
% for t in range(1, T + 1):
        const bool update_${t} = ${t} <= steps && a - ${D * t} >= 1 && a - ${D * t} <= m;
% endfor
        // Level 0's new row (row a) and level 1's right-hand side were loaded one advance
        // ago; load the next ones now, and the other levels' right-hand side (cached: level
        // t - 1 read it skew advances ago), so that the loads overlap the barrier.
        ${reg(0, new)} = next_x;
        ${vt} ${", ".join(f"b_{t}" for t in range(1, T + 1))};
        b_1 = next_b;
        {
            const int ahead = a + 1;
            const size_t at_ahead = at_a + (size_t)row_stride;
            if (item_inside && ahead - ${D} >= 1 && ahead <= m + 1) {
                next_x = ${load("x_old + at_ahead")};
                next_b = ${load(f"rhs + (at_ahead - {D} * (size_t)row_stride)")};
            } else {
                next_x = (ahead >= 0 && ahead <= m + 1 && in_memory)
                    ? ${load("x_old + at_ahead")} : zero;
                next_b = (ahead - ${D} >= 1 && ahead - ${D} <= m && in_memory)
                    ? ${load(f"rhs + (at_ahead - {D} * (size_t)row_stride)")} : zero;
            }
        }
        if (plain) {
% for t in range(2, T + 1):
            b_${t} = ${load(f"rhs + (at_a - {D * t} * (size_t)row_stride)")};
% endfor
        } else {
% for t in range(2, T + 1):
            b_${t} = (update_${t} && in_memory)
                ? ${load(f"rhs + (at_a - {D * t} * (size_t)row_stride)")} : zero;
% endfor
        }
        // Publish the edges of each level's row at the update (computed one advance ago).
% for t in range(T):
        west[EDGE(buf, ${t}, lx)] = ${lane(reg(t, at), 0)};
        east[EDGE(buf, ${t}, lx)] = ${lane(reg(t, at), C - 1)};
% endfor
        barrier(CLK_LOCAL_MEM_FENCE);
% for t in range(T):
        const real_t left_${t} = east[EDGE(buf, ${t}, lxw)];
        const real_t right_${t} = west[EDGE(buf, ${t}, lxe)];
% endfor
        // Level t: row a - skew t, from level t - 1's rows a - skew t - 1 .. a - skew t + 1.
        ${vt} top;
        if (plain) {
% for t in range(1, T + 1):
${update(k, t, False)}
% endfor
        } else {
% for t in range(1, T + 1):
${update(k, t, True)}
% endfor
        }
        // The top level's row: write it if it is in this tile and segment.
        const int row = a - ${D * T};
        if (in_tile && row >= r0 && row < r1) {
            __global real_t *out = x_new + (size_t)row * row_stride + j0;
            if (all_cols_in) {
% if C == 1:
                out[0] = top;
% else:
                vstore${C}(top, 0, out);
% endif
            } else {
% for c in range(C):
                if (col_in_${c})
                    out[${c}] = ${lane("top", c)};
% endfor
            }
        }
    }
</%def>

    // The first advance's rows.
    ${vt} next_x = zero, next_b = zero;
    {
        const int a = r0 - ${T};
        if (a >= 0 && a <= m + 1 && in_memory)
            next_x = ${load("x_old + ((size_t)a * row_stride + j0)")};
        if (a - ${D} >= 1 && a - ${D} <= m && in_memory)
            next_b = ${load(f"rhs + ((size_t)(a - {D}) * row_stride + j0)")};
    }
    // Advances r0 - max_steps .. r1 + skew max_steps - 1, skew + 2 per pass (the slots'
    // rotation); the few extra advances at the end compute rows past the segment and write
    // nothing.
    for (int first = r0 - ${T}; first < r1 + ${D * T}; first += ${S}) {
% for k in range(S):
${advance(k)}
% endfor
    }
}
