<%inherit file="/base.cl.mako"/>
<%doc>
  Mandelbrot escape counts with the semantics of the seed's NumPy code (oclsci.mandelbrot_reference):
  for n in 0..maxiter-1: stop once |z| >= horizon; count = n; z = z*z + c.  Counts equal to
  maxiter-1 become 0.  Optionally the final z and the smooth count
  count + 1 - log2(log|z|) + log_horizon (NaN -> 0, +-inf -> +-max, as np.nan_to_num).

  Parameters: dtype (float32/float64), vector_width (1: one pixel per work-item, branchy, for
  GPUs; 4/8/16: VW consecutive pixels of a row per work-item in OpenCL vectors, for CPUs),
  numpy_fma (compute Re(z*z) as fma(zr, zr, -zi*zi) like NumPy's SIMD complex64 square),
  want_z, want_smooth (write those arrays; the counts are always written), unroll (vector
  kernel: that many independent vectors per work-item, VW * unroll consecutive pixels).
  Work-item dimension 0 runs along x (the contiguous axis), dimension 1 along the rows of the
  band.  Global size (round_up(ceil(width / (VW * unroll)), L0), round_up(rows, L1)).
  x holds the abscissae padded to a multiple of VW * unroll; y the ordinates of the band's rows.
</%doc>
// Same rounding as NumPy: no contraction of a*b + c into fma unless written out.
#pragma OPENCL FP_CONTRACT OFF

// PoCL calls builtins such as fma() and any() out of line (with register spills) in the hot
// loop; Clang's elementwise builtin and a hand-written reduction stay inline.
#if defined(__has_builtin)
#if __has_builtin(__builtin_elementwise_fma)
#define VFMA(a, b, c) __builtin_elementwise_fma(a, b, c)
#endif
#endif
#ifndef VFMA
#define VFMA(a, b, c) fma(a, b, c)
#endif
<%
    VW = vector_width
    real_v = "real_t" if VW == 1 else f"{cl_type(dtype)}{VW}"
    count_v = "int" if VW == 1 else f"int{VW}"
    mask_v = "int" if VW == 1 else ((f"int{VW}") if np.dtype(dtype) == np.float32 else f"long{VW}")
    to_count = "" if VW == 1 else (f"" if np.dtype(dtype) == np.float32 else f"convert_int{VW}")
    real_max = "FLT_MAX" if np.dtype(dtype) == np.float32 else "DBL_MAX"
    ln2 = "M_LN2_F" if np.dtype(dtype) == np.float32 else "M_LN2"
%>
// |z| as NumPy computes it for complex numbers: L * sqrt(fma(r, r, 1)) with r = S / L,
// L = max(|re|, |im|), S = min(|re|, |im|); inf if either part is inf, NaN if one is NaN.
inline ${real_v} numpy_abs(${real_v} re, ${real_v} im)
{
    const ${real_v} a = fabs(re), b = fabs(im);
    const ${real_v} large = fmax(a, b), small = fmin(a, b);
    const ${real_v} ratio = small / large;
    ${real_v} result = large * sqrt(fma(ratio, ratio, (${real_v})1));
    result = (large == (${real_v})0) ? (${real_v})0 : result;
    result = (isnan(a) || isnan(b)) ? a + b : result;
    result = (isinf(a) || isinf(b)) ? (${real_v})INFINITY : result;
    return result;
}

% if VW > 1:
// any(): true when the sign bit of some lane is set (written out, as PoCL calls any()).
inline int lanes_any(${mask_v} mask)
{
<%
    width, expr, lines = VW, "mask", []
    mask_scalar = mask_v.rstrip("0123456789")
    while width > 2:
        width //= 2
        lines.append(f"const {mask_scalar}{width} m{width} = {expr}.lo | {expr}.hi;")
        expr = f"m{width}"
%>
% if VW == 16:
    // 16 lanes: the builtin (PoCL does not compile this width usefully anyway, and Oclgrind
    // reports the .lo/.hi reduction of 16-wide vectors as reading uninitialised lanes).
    return any(mask);
% else:
% for line in lines:
    ${line}
% endfor
    return (${expr}.x | ${expr}.y) < 0;
% endif
}

% endif
__kernel void mandelbrot(__global int *restrict counts,
                         __global real_t *restrict z_out,
                         __global real_t *restrict smooth_out,
                         __global const real_t *restrict x,
                         __global const real_t *restrict y,
                         const int width, const int rows, const int maxiter,
                         const real_t horizon,   // compare |z| < horizon as NumPy does ...
                         const real_t low2,      // ... but only when |z|^2 is not clearly
                         const real_t high2,     // below low2 or above high2
                         const real_t log_horizon)
{
    const size_t j0 = get_global_id(0) * ${VW * unroll};
    const size_t row = get_global_id(1);
    if (j0 >= (size_t)width || row >= (size_t)rows)
        return;
    const size_t at = row * (size_t)width + j0;
% if VW == 1:
    const real_t cr = x[j0], ci = y[row];
    real_t zr = 0, zi = 0;
    int count = 0;
    for (int n = 0; n < maxiter; ++n) {
        const real_t zi2 = zi * zi;
        const real_t m2 = fma(zr, zr, zi2);
        // |z| >= horizon (or NaN): escaped, z stays as it is.
        if (!(m2 < low2) && (m2 > high2 || !(numpy_abs(zr, zi) < horizon)))
            break;
        count = n;
    % if numpy_fma:
        const real_t sq_re = fma(zr, zr, -zi2);
    % else:
        const real_t sq_re = zr * zr - zi2;
    % endif
        // = zr*zi + zi*zr (NumPy) exactly, and immune to fma contraction.
        const real_t sq_im = 2 * (zr * zi);
        zr = sq_re + cr;
        zi = sq_im + ci;
    }
    count = (count == maxiter - 1) ? 0 : count;
    counts[at] = count;
    % if want_z:
    z_out[2 * at] = zr;
    z_out[2 * at + 1] = zi;
    % endif
    % if want_smooth:
    real_t s = (real_t)(count + 1) - log(log(numpy_abs(zr, zi))) / ${ln2} + log_horizon;
    s = isnan(s) ? (real_t)0 : s;
    s = isinf(s) ? copysign((real_t)${real_max}, s) : s;
    smooth_out[at] = s;
    % endif
% else:
<% U = unroll %>
    // ${U} independent vectors of ${VW} pixels: their iterations overlap (latency hiding).
    const ${real_v} ci = (${real_v})(y[row]);
% for u in range(U):
    const ${real_v} cr${u} = vload${VW}(${u}, x + j0);
    ${real_v} zr${u} = 0, zi${u} = 0;
    ${count_v} count${u} = 0;
    ${mask_v} active${u} = (${mask_v})(-1);
% endfor
    for (int n = 0; n < maxiter; ++n) {
% for u in range(U):
        const ${real_v} zi2_${u} = zi${u} * zi${u};
        const ${real_v} m2_${u} = VFMA(zr${u}, zr${u}, zi2_${u});
        ${mask_v} inside${u} = m2_${u} < low2;
        if (lanes_any(active${u} & ~inside${u}))
            inside${u} |= (m2_${u} <= high2) & (numpy_abs(zr${u}, zi${u}) < horizon);
        active${u} &= inside${u};
% endfor
        if (!lanes_any(${" | ".join(f"active{u}" for u in range(U))}))
            break;
% for u in range(U):
        count${u} = ${to_count}(active${u}) ? (${count_v})(n) : count${u};
    % if numpy_fma:
        const ${real_v} sq_re${u} = VFMA(zr${u}, zr${u}, -zi2_${u});
    % else:
        const ${real_v} sq_re${u} = zr${u} * zr${u} - zi2_${u};
    % endif
        const ${real_v} sq_im${u} = 2 * (zr${u} * zi${u});  // = zr*zi + zi*zr
        zr${u} = active${u} ? sq_re${u} + cr${u} : zr${u};
        zi${u} = active${u} ? sq_im${u} + ci : zi${u};
% endfor
    }
% for u in range(U):
    {
        const size_t j = j0 + ${u * VW};
        const size_t at = row * (size_t)width + j;
        const ${real_v} zr = zr${u}, zi = zi${u};
        ${count_v} count = count${u};
        count = (count == (${count_v})(maxiter - 1)) ? (${count_v})0 : count;
    % if want_smooth:
        ${real_v} s = convert_${real_v}(count + 1) - log(log(numpy_abs(zr, zi))) / ${ln2}
                       + log_horizon;
        s = isnan(s) ? (${real_v})0 : s;
        s = isinf(s) ? copysign((${real_v})${real_max}, s) : s;
    % endif
        if (j + ${VW} <= (size_t)width) {
            vstore${VW}(count, 0, counts + at);
    % if want_z:
            // Interleave (re, im) pairs like complex numbers.
            real_t re_[${VW}], im_[${VW}];
            vstore${VW}(zr, 0, re_);
            vstore${VW}(zi, 0, im_);
            for (int k = 0; k < ${VW}; ++k) {
                z_out[2 * (at + k)] = re_[k];
                z_out[2 * (at + k) + 1] = im_[k];
            }
    % endif
    % if want_smooth:
            vstore${VW}(s, 0, smooth_out + at);
    % endif
        } else if (j < (size_t)width) {
            // The end of a row whose width is not a multiple of ${VW * U}.
            int count_[${VW}];
            vstore${VW}(count, 0, count_);
    % if want_z:
            real_t re_[${VW}], im_[${VW}];
            vstore${VW}(zr, 0, re_);
            vstore${VW}(zi, 0, im_);
    % endif
    % if want_smooth:
            real_t s_[${VW}];
            vstore${VW}(s, 0, s_);
    % endif
            for (size_t k = 0; j + k < (size_t)width; ++k) {
                counts[at + k] = count_[k];
    % if want_z:
                z_out[2 * (at + k)] = re_[k];
                z_out[2 * (at + k) + 1] = im_[k];
    % endif
    % if want_smooth:
                smooth_out[at + k] = s_[k];
    % endif
            }
        }
    }
% endfor
% endif
}
