<%inherit file="/base.cl.mako"/>
<%doc>
  Jacobi for CPUs: no barriers, no local memory, size_t-style (long) indices.
  Each work-item ("worker") takes tiles of band_h rows x band_w columns (band_w 0: the whole
  width) round-robin and advances each tile `steps` (<= max_steps) Jacobi steps in a private
  slot of the global `scratch` buffer (two halves, ping-pong), recomputing a halo that shrinks
  by one cell per step; only the last step writes x_new. Every cell update evaluates the
  same expression as the NumPy reference, so the result is bit-exact.
  The inner loop runs along the contiguous axis, so the compiler vectorises it.
  Global size: the number of workers (1-D); local size 1.
  scratch_row: elements per scratch row (>= band columns + 2*max_steps);
  scratch_half: elements of one half of a slot (>= scratch_row * (band_h + 2*max_steps)).
</%doc>
#pragma OPENCL FP_CONTRACT OFF

// dst[j] for j in [jlo, jhi): one Jacobi update of a row, in the reference's order.
inline void update_row(__global real_t *restrict dst, __global const real_t *restrict up,
                       __global const real_t *restrict mid, __global const real_t *restrict down,
                       __global const real_t *restrict b, long jlo, long jhi)
{
    for (long j = jlo; j < jhi; ++j)
        dst[j] = (real_t)0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1] - b[j]);
}

__kernel void jacobi_bands(__global real_t *restrict x_new, __global const real_t *restrict x_old,
                           __global const real_t *restrict rhs, int m_, int n_, int row_stride_,
                           int steps, __global real_t *restrict scratch, int scratch_row_,
                           long scratch_half)
{
    const long m = m_, n = n_, rs = row_stride_, sr = scratch_row_;
    const long band_h = ${band_h};
    const long band_w = ${band_w} > 0 ? ${band_w} : n;
    const long halo = ${max_steps};
    const long tiles_w = (n + band_w - 1) / band_w;
    const long tiles = tiles_w * ((m + band_h - 1) / band_h);
    __global real_t *const slot0 = scratch + (long)get_global_id(0) * 2 * scratch_half;
    __global real_t *const slot1 = slot0 + scratch_half;

    for (long t = get_global_id(0); t < tiles; t += get_global_size(0)) {
        const long r0 = 1 + (t / tiles_w) * band_h, r1 = min(r0 + band_h, m + 1);
        const long c0 = 1 + (t % tiles_w) * band_w, c1 = min(c0 + band_w, n + 1);
        // Scratch element of global (i, j) is (i - wr0) * sr + (j - c0 + halo).
        const long wr0 = r0 - halo;
        if (steps > 1) {
            // The boundary (rows 0 and m+1, columns 0 and n+1) never changes: copy the part
            // that steps 2.. read into both halves of the slot (slot0, slot1).
            const long lo = max(0L, r0 - steps), hi = min(m + 1, r1 + steps - 1);
            const long jlo = max(0L, c0 - steps), jhi = min(n + 1, c1 + steps - 1);
            for (long i = lo; i <= hi; ++i) {
                const long at = (i - wr0) * sr + halo - c0;   // + j: column j
                if (i == 0 || i == m + 1) {
                    for (long j = jlo; j <= jhi; ++j) {
                        slot0[at + j] = x_old[i * rs + j];
                        slot1[at + j] = x_old[i * rs + j];
                    }
                    continue;
                }
                if (jlo == 0) {
                    slot0[at] = x_old[i * rs];
                    slot1[at] = x_old[i * rs];
                }
                if (jhi == n + 1) {
                    slot0[at + n + 1] = x_old[i * rs + n + 1];
                    slot1[at + n + 1] = x_old[i * rs + n + 1];
                }
            }
        }
        for (int s = 1; s <= steps; ++s) {
            const long h = steps - s;      // halo still to compute after this step
            const long lo = max(1L, r0 - h), hi = min(m + 1, r1 + h);
            const long jlo = max(1L, c0 - h) - c0, jhi = min(n + 1, c1 + h) - c0;
            // Row pointers point at column c0 (slot column `halo`); indices are j - c0.
            for (long i = lo; i < hi; ++i) {
                __global const real_t *b = rhs + i * rs + c0;
                if (s == 1) {
                    __global const real_t *mid = x_old + i * rs + c0;
                    if (s == steps)
                        update_row(x_new + i * rs + c0, mid - rs, mid, mid + rs, b, jlo, jhi);
                    else
                        update_row(slot1 + (i - wr0) * sr + halo, mid - rs, mid, mid + rs, b,
                                   jlo, jhi);
                } else {
                    __global const real_t *mid = ((s & 1) ? slot0 : slot1)
                                                 + (i - wr0) * sr + halo;
                    if (s == steps)
                        update_row(x_new + i * rs + c0, mid - sr, mid, mid + sr, b, jlo, jhi);
                    else
                        update_row(((s & 1) ? slot1 : slot0) + (i - wr0) * sr + halo,
                                   mid - sr, mid, mid + sr, b, jlo, jhi);
                }
            }
        }
    }
}
