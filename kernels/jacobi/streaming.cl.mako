<%inherit file="/base.cl.mako"/>
<%doc>
  Streaming (2.5-D) temporal blocking, for GPUs. A work-group of local_w work-items owns a
  strip of local_w * cols columns and walks down seg_h rows of it, rows rows per advance,
  doing max_steps steps in one pass: level 0 is the rows loaded at this advance, level t the
  rows d * t above them after t steps, where d = rows + skew - 1. Each work-item keeps cols
  columns of d + 1 + rows rows per level in registers (the level's rows of this advance and
  the d + 1 before them), so the vertical neighbours never leave it; left and right
  neighbours come from the neighbouring work-items through local memory, one barrier per
  advance (edges double-buffered by the advance's parity): the rows level t + 1 needs from
  level t were computed at earlier advances (d >= rows), and with skew 2 the row below too,
  so that the levels of one advance do not depend on each other. Only the strip's sides are
  a halo (left: the multiple of cols >= max_steps, right: at least max_steps), recomputed by
  the neighbouring strips; the segment's top and bottom cost (1 + d) * max_steps extra rows.
  The edges of edge_levels levels share one (vector) element of local memory, so one store
  and one load. Level 0's next rows and level 1's right-hand side are loaded prefetch
  advances ahead, through registers that shift by one each advance; the other levels'
  right-hand side is loaded before the barrier (the level below read it earlier, so it is
  cached) or, with rhs_in_regs (skew 1 only), taken from the registers where the level below
  kept it at the previous advance (no load: (max_steps - 1) * rows more values in
  registers). Advances and work-items wholly inside the grid, in full launches, take a path
  without tests per cell. Levels above `steps` (runtime, <= max_steps) pass their rows
  through. Columns are aligned to cols (rows start aligned: row_stride is a multiple of 16),
  so loads and stores are vectors. Cells outside the interior keep their value (the ring
  holds the boundary: zero for Jacobi, the stencil's constant for oclsci.stencil).
  The update is pluggable: `update` is the cell's new value as C text (a str.format pattern)
  over the operands {up}, {down}, {left}, {right}, {centre} (the cell and its neighbours at
  the level below: vectors of cols cells) and one operand per read-only field, named by its
  register prefix; `fields` lists the read-only fields streamed like B, each (kernel
  argument, register prefix), loaded at the row being updated (offset 0 only); `scalars`
  names the real_t kernel arguments after them. Jacobi (oclsci/jacobi/specs/streaming.py):
  "(real_t)0.25 * ({up} + {down} + {left} + {right} - {b})" with fields (("rhs", "b"),), no
  scalars: ((((up + down) + left) + right) - b) * 0.25 exactly as NumPy does, bit-exact.
  A stencil (oclsci/stencil/specs/streaming.py): its fully parenthesised update
  (oclsci.stencil.codegen), its fields, parameters and boundary value.
  Global size (ceil((n + 1) / tile_w) * local_w, ceil(m / seg_h)), local size (local_w, 1).
  The spec derives the geometry (rows_apart, halo, tile_w, slots, period, edge_groups) once
  and passes it in with the parameters.
</%doc>
<%
    C, LW, T, SH, R, V, Q = cols, local_w, max_steps, seg_h, rows, edge_levels, prefetch
    # The geometry, derived once by the spec (oclsci/jacobi/specs/streaming.py, geometry):
    # G groups of V levels whose edges share one access; D rows between consecutive levels;
    # S row slots per level (d + 1 + rows live, rounded up to a multiple of rows so that the
    # slots' rotation repeats after P advances: the compiler keeps only the live ones); a
    # left halo of L columns (a multiple of C >= T) and a tile of TW (a multiple of C, right
    # halo >= T).
    G, D, S, P, L, TW = edge_groups, rows_apart, slots, period, halo, tile_w
    et = "real_t" if V == 1 else f"{cl_type(dtype)}{V}"
    assert TW >= C, "strip too narrow for the halo"
    assert not rhs_in_regs or skew == 1, "B kept in registers needs skew 1"
    vt = "real_t" if C == 1 else f"{cl_type(dtype)}{C}"
    lanes = "0123456789abcdef"[:C]
    def lane(v, c):
        return v if C == 1 else f"{v}.s{lanes[c]}"
    def load(ptr):
        return f"({ptr})[0]" if C == 1 else f"vload{C}(0, {ptr})"
    def edges(k, g, i, c):
        # Column c of the rows that levels g V .. g V + V - 1 publish at advance k (zero past
        # the top level).
        values = [lane(reg(t, slot(k, i, -D)), c) if t < T else "(real_t)0"
                  for t in range(g * V, g * V + V)]
        return values[0] if V == 1 else f"({et})({', '.join(values)})"
    def edge_lane(v, l):
        return v if V == 1 else f"{v}.s{l}"
    def reg(t, slot):
        return f"x{t}_{slot % S}"
    def slot(k, i, offset=0):
        # Slot of the row offset + i of the rows level t computes at advance k, counted
        # on level t - 1 when offset is -d - 1 .. -d + 1 (the rows around it).
        return (k * R + i - 1 + offset) % S
    def signature():
        # The kernel's arguments, wrapped as lines of at most 96 characters.
        args = ["__global real_t *restrict x_new", "__global const real_t *restrict x_old"]
        args += [f"__global const real_t *restrict {buffer}" for buffer, _ in fields]
        args += [f"const real_t {name}" for name in scalars]
        args += ["int m", "int n", "int row_stride", "int steps"]
        lines, line = [], "void jacobi_streaming("
        for index, arg in enumerate(args):
            text = arg + (")" if index == len(args) - 1 else ",")
            if not line.endswith("(") and len(line) + 1 + len(text) > 96:
                lines.append(line)
                line = " " * 22 + text
            else:
                line += ("" if line.endswith("(") else " ") + text
        return "\n".join(lines + [line])
%>
#pragma OPENCL FP_CONTRACT OFF
#define LW ${LW}
// Edge arrays [parity][group of levels][row][work-item], each element the edges of
// ${V} level(s): neighbouring work-items touch neighbouring elements.
#define EDGE(buf, g, i, item) ((((buf) * ${G} + (g)) * ${R} + (i)) * LW + (item))

__kernel __attribute__((reqd_work_group_size(LW, 1, 1)))
${signature()}
{
    __local ${et} west[${2 * G * R * LW}];   // the edge rows of each level: leftmost column
    __local ${et} east[${2 * G * R * LW}];   // rightmost column
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

    // d + 1 + rows rows per level below the top one, in slots that rotate each advance.
% for t in range(T):
    ${vt} ${", ".join(f"x{t}_{s} = zero" for s in range(S))};
% endfor
% if rhs_in_regs and T > 1 and fields:
    // B of each level's rows but the top one's, kept for the level above at the next
    // advance (zero until loaded: the rows that use it then are not yet valid).
% for _, f in fields:
    ${vt} ${", ".join(f"r{f}_{t}_{i} = zero" for t in range(1, T) for i in range(R))};
% endfor
% endif

<%def name="update_row(k, t, i, checked)">
<%
    # Level t's row a - d t + i, from level t - 1's rows around it (d + 1 rows lower in
    # level t - 1's own count).
    src_above, src_at, src_below = (reg(t - 1, slot(k, i, o - D)) for o in (-1, 0, 1))
    left, right = f"left_{t - 1}_{i}", f"right_{t - 1}_{i}"
    if C > 1:
        left = f"({vt})({left}, " + ", ".join(lane(src_at, c) for c in range(C - 1)) + ")"
        right = f"({vt})(" + ", ".join(lane(src_at, c) for c in range(1, C)) + f", {right})"
    y = update.format(up=src_above, down=src_below, left=left, right=right, centre=src_at,
                      **{f: f"{f}_{t}_{i}" for _, f in fields})
    target = reg(t, slot(k, i)) if t < T else f"top_{i}"
%>
% if not checked:
            ${target} = ${y};
% else:
            {
                const ${vt} y = ${y};
                ${vt} keep = ${src_at};
                if (update_${t}_${i} && all_cols_in) {
                    keep = y;
                } else if (update_${t}_${i}) {
% for c in range(C):
                    ${lane("keep", c)} = col_in_${c} ? ${lane("y", c)} : ${lane("keep", c)};
% endfor
                }
                ${target} = keep;
            }
% endif
</%def>

<%def name="advance(k)">
    {
        const int a = first + ${k * R};
        const int buf = ${"a & 1" if R == 1 else f"((a - r0 + {T}) / {R}) & 1"};  // parity
        const size_t at_a = (size_t)a * row_stride + j0;
        // Plain: every level updates every column of this item (no test per cell).
        const bool plain = item_inside && steps == ${T} && a - ${D * T} >= 1
                           && a + ${R - 1} <= m + 1;
% for t in range(1, T + 1):
% for i in range(R):
        const bool update_${t}_${i} = ${t} <= steps && a - ${D * t - i} >= 1
                                      && a - ${D * t - i} <= m;
% endfor
% endfor
        // Level 0's new rows (rows a ..) and level 1's right-hand side were loaded
        // ${Q} advance(s) ago; load the ones ${Q} advance(s) ahead now, and the other
        // levels' right-hand side (cached: level t - 1 read it earlier), so that the loads
        // overlap the barrier and the levels' arithmetic.
% for i in range(R):
        ${reg(0, slot(k, i))} = next_x_0_${i};
% endfor
% for _, f in fields:
        ${vt} ${", ".join(f"{f}_{t}_{i}" for t in range(1, T + 1) for i in range(R))};
% for i in range(R):
        ${f}_1_${i} = next_${f}_0_${i};
% endfor
% endfor
% for q in range(Q - 1):
% for i in range(R):
        next_x_${q}_${i} = next_x_${q + 1}_${i};
% for _, f in fields:
        next_${f}_${q}_${i} = next_${f}_${q + 1}_${i};
% endfor
% endfor
% endfor
        {
            const int ahead = a + ${Q * R};
            const size_t at_ahead = at_a + ${Q * R} * (size_t)row_stride;
            if (item_inside && ahead - ${D} >= 1 && ahead + ${R - 1} <= m + 1) {
% for i in range(R):
                next_x_${Q - 1}_${i} = ${load(f"x_old + (at_ahead + {i} * (size_t)row_stride)")};
% for buffer, f in fields:
                next_${f}_${Q - 1}_${i} =
                    ${load(f"{buffer} + (at_ahead + {i - D} * (ptrdiff_t)row_stride)")};
% endfor
% endfor
            } else {
% for i in range(R):
                next_x_${Q - 1}_${i} = (ahead + ${i} >= 0 && ahead + ${i} <= m + 1 && in_memory)
                    ? ${load(f"x_old + (at_ahead + {i} * (size_t)row_stride)")} : zero;
% for buffer, f in fields:
                next_${f}_${Q - 1}_${i} = (ahead + ${i - D} >= 1 && ahead + ${i - D} <= m
                                        && in_memory)
                    ? ${load(f"{buffer} + (at_ahead + {i - D} * (ptrdiff_t)row_stride)")} : zero;
% endfor
% endfor
            }
        }
% if rhs_in_regs:
        // Level t's rows are level t - 1's rows of the previous advance: so is their B.
% for _, f in fields:
% for t in range(2, T + 1):
% for i in range(R):
        ${f}_${t}_${i} = r${f}_${t - 1}_${i};
% endfor
% endfor
% endfor
% elif fields:
        if (plain) {
% for buffer, f in fields:
% for t in range(2, T + 1):
% for i in range(R):
            ${f}_${t}_${i} = ${load(f"{buffer} + (at_a - {D * t - i} * (ptrdiff_t)row_stride)")};
% endfor
% endfor
% endfor
        } else {
% for buffer, f in fields:
% for t in range(2, T + 1):
% for i in range(R):
            ${f}_${t}_${i} = (update_${t}_${i} && in_memory)
                ? ${load(f"{buffer} + (at_a - {D * t - i} * (ptrdiff_t)row_stride)")} : zero;
% endfor
% endfor
% endfor
        }
% endif
        // Publish the edges of the rows level t + 1 updates (computed at earlier advances).
% for g in range(G):
% for i in range(R):
        west[EDGE(buf, ${g}, ${i}, lx)] = ${edges(k, g, i, 0)};
        east[EDGE(buf, ${g}, ${i}, lx)] = ${edges(k, g, i, C - 1)};
% endfor
% endfor
        barrier(CLK_LOCAL_MEM_FENCE);
% for g in range(G):
% for i in range(R):
        const ${et} from_west_${g}_${i} = east[EDGE(buf, ${g}, ${i}, lxw)];
        const ${et} from_east_${g}_${i} = west[EDGE(buf, ${g}, ${i}, lxe)];
% for t in range(g * V, min(g * V + V, T)):
        const real_t left_${t}_${i} = ${edge_lane(f"from_west_{g}_{i}", t - g * V)};
        const real_t right_${t}_${i} = ${edge_lane(f"from_east_{g}_{i}", t - g * V)};
% endfor
% endfor
% endfor
        // Level t: rows a - d t .., from level t - 1's rows a - d t - 1 .. a - d t + rows.
        ${vt} ${", ".join(f"top_{i}" for i in range(R))};
        if (plain) {
% for t in range(1, T + 1):
% for i in range(R):
${update_row(k, t, i, False)}
% endfor
% endfor
        } else {
% for t in range(1, T + 1):
% for i in range(R):
${update_row(k, t, i, True)}
% endfor
% endfor
        }
% if rhs_in_regs:
% for _, f in fields:
% for t in range(1, T):
% for i in range(R):
        r${f}_${t}_${i} = ${f}_${t}_${i};
% endfor
% endfor
% endfor
% endif
        // The top level's rows: write those in this tile and segment.
% for i in range(R):
        {
            const int row = a - ${D * T - i};
            if (in_tile && row >= r0 && row < r1) {
                __global real_t *out = x_new + (size_t)row * row_stride + j0;
                if (all_cols_in) {
% if C == 1:
                    out[0] = top_${i};
% else:
                    vstore${C}(top_${i}, 0, out);
% endif
                } else {
% for c in range(C):
                    if (col_in_${c})
                        out[${c}] = ${lane(f"top_{i}", c)};
% endfor
                }
            }
        }
% endfor
    }
</%def>

    // The first ${Q} advance(s)' rows.
% for q in range(Q):
    ${vt} ${", ".join(", ".join([f"next_x_{q}_{i} = zero"]
                                + [f"next_{f}_{q}_{i} = zero" for _, f in fields])
                      for i in range(R))};
% endfor
% for q in range(Q):
    {
        const int a = r0 - ${T - q * R};
% for i in range(R):
        if (a + ${i} >= 0 && a + ${i} <= m + 1 && in_memory)
            next_x_${q}_${i} = ${load(f"x_old + ((size_t)(a + {i}) * row_stride + j0)")};
% for buffer, f in fields:
        if (a + ${i - D} >= 1 && a + ${i - D} <= m && in_memory)
            next_${f}_${q}_${i} = ${load(f"{buffer} + ((size_t)(a + {i - D}) * row_stride + j0)")};
% endfor
% endfor
    }
% endfor
    // Advances from r0 - max_steps until level max_steps has passed r1, rows rows each,
    // ${P} per pass (the slots' rotation); the few extra advances at the end compute rows
    // past the segment and write nothing.
    for (int first = r0 - ${T}; first < r1 + ${D * T}; first += ${P * R}) {
% for k in range(P):
${advance(k)}
% endfor
    }
}
