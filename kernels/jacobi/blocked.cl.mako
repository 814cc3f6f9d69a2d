<%inherit file="/base.cl.mako"/>
<%doc>
  Temporal blocking: each work-group loads a tile of tile_h x tile_w cells plus a halo of
  halo_width cells into local memory, advances `steps` (<= halo_width) Jacobi steps there, and
  writes the inner tile back. The valid region shrinks by one cell per step, so only the cells
  still needed are updated. Work-group shape local_w x local_h; each work-item loops over cells.
  Global size (ceil(n / tile_w) * local_w, ceil(m / tile_h) * local_h).
</%doc>
<%
    span_w = tile_w + 2 * halo_width
    span_h = tile_h + 2 * halo_width
%>
#define SPAN_W ${span_w}
#define SPAN_H ${span_h}
#define HALO ${halo_width}

__kernel __attribute__((reqd_work_group_size(${local_w}, ${local_h}, 1)))
void jacobi_blocked(__global real_t *restrict x_new, __global const real_t *restrict x_old,
                    __global const real_t *restrict rhs, int m, int n, int row_stride,
                    int steps)
{
    __local real_t tile_a[SPAN_H * SPAN_W];
    __local real_t tile_b[SPAN_H * SPAN_W];
% if rhs_in_local:
    __local real_t tile_rhs[SPAN_H * SPAN_W];
% endif
    const int lx = get_local_id(0), ly = get_local_id(1);
    // Global (row, col) of the tile's first cell, halo included.
    const int row0 = (int)get_group_id(1) * ${tile_h} + 1 - HALO;
    const int col0 = (int)get_group_id(0) * ${tile_w} + 1 - HALO;

    // Load the tile and its halo; cells outside the padded grid read as zero.
    for (int r = ly; r < SPAN_H; r += ${local_h}) {
        const int gi = row0 + r;
        for (int c = lx; c < SPAN_W; c += ${local_w}) {
            const int gj = col0 + c;
            const bool in_grid = gi >= 0 && gi <= m + 1 && gj >= 0 && gj <= n + 1;
            const real_t value = in_grid ? x_old[IDX2(gi, gj, row_stride)] : (real_t)0;
            tile_a[IDX2(r, c, SPAN_W)] = value;
            tile_b[IDX2(r, c, SPAN_W)] = value;
% if rhs_in_local:
            tile_rhs[IDX2(r, c, SPAN_W)] = in_grid ? rhs[IDX2(gi, gj, row_stride)] : (real_t)0;
% endif
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // Advance `steps` steps, ping-ponging between the two local tiles.
    __local real_t *src = tile_a;
    __local real_t *dst = tile_b;
    for (int step = 1; step <= steps; ++step) {
        const int lo = HALO - (steps - step);
        const int hi_r = SPAN_H - lo;
        const int hi_c = SPAN_W - lo;
        for (int r = lo + ly; r < hi_r; r += ${local_h}) {
            const int gi = row0 + r;
            for (int c = lo + lx; c < hi_c; c += ${local_w}) {
                const int gj = col0 + c;
                const int at = IDX2(r, c, SPAN_W);
                if (gi >= 1 && gi <= m && gj >= 1 && gj <= n) {
% if rhs_in_local:
                    const real_t b = tile_rhs[at];
% else:
                    const real_t b = rhs[IDX2(gi, gj, row_stride)];
% endif
                    dst[at] = (real_t)0.25 * (src[at - SPAN_W] + src[at + SPAN_W]
                                              + src[at - 1] + src[at + 1] - b);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        __local real_t *swap = src;
        src = dst;
        dst = swap;
    }

    // Write the inner tile back.
    for (int r = HALO + ly; r < HALO + ${tile_h}; r += ${local_h}) {
        const int gi = row0 + r;
        for (int c = HALO + lx; c < HALO + ${tile_w}; c += ${local_w}) {
            const int gj = col0 + c;
            if (gi <= m && gj <= n)
                x_new[IDX2(gi, gj, row_stride)] = src[IDX2(r, c, SPAN_W)];
        }
    }
}
