<%inherit file="/base.cl.mako"/>
<%doc>
  Lomb-Scargle periodogram, scipy.signal.lombscargle's algorithm (SciPy >= 1.15, unit weights,
  floating_mean=False) in one pass over the samples per frequency w:
    XC = sum y cos(w x), XS = sum y sin(w x), CC = sum cos^2(w x), CS = sum cos sin (all / n),
    SS = 1 - CC, tau = atan2(2 CS, CC - SS) / 2,
    YC = cos(tau) XC + sin(tau) XS, YS = cos(tau) XS - sin(tau) XC   (= sums of y cos(w x - tau),
    CC' = cos^2 CC + 2 cos sin CS + sin^2 SS, SS' = 1 - CC'            y sin(w x - tau), ...)
    CC', SS' at least epsneg; pgram = scale * 2 (YC^2 / CC' + YS^2 / SS')
  where scale is n/4 (power) or 0.5/mean(y^2) (normalize), set by the host.

  Parameters (each one of the seed's tuning steps, see docs/lombscargle.md):
    dtype      float32 / float64: one kernel per type from this template;
    typed      true: every literal and mixed operation written in real_t (explicit casts);
               false: the seed's baseline, double literals (float kernels promote to double
               where a literal appears, on devices with fp64);
    native     true: native_sin / native_cos in float32 (the -use_fast_math analogue, built
               with -cl-fast-relaxed-math by the host; OpenCL has no double native_sin, so
               float64 keeps sincos, as -use_fast_math only changes single precision);
               false: sincos() to full precision;
    local_size >0: __attribute__((reqd_work_group_size(local_size, 1, 1))) (launch bounds);
               0: no attribute, the runtime picks the work-group size;
    stride     true: grid-stride loop over the frequencies (a fixed number of work-items, e.g.
               20 work-groups per compute unit); false: one work-item per frequency;
    paired     true: sincos() (2x faster than sin() + cos() on PoCL); false: sin() and cos()
               (Oclgrind cannot follow sincos's private pointer);
    vector_width 1, or 2/4/8/16: that many consecutive frequencies per work-item in OpenCL
               vectors (CPUs: the vector sincos of PoCL's library); needs typed.
  Arguments: n samples x, y; frequencies freqs[first .. first + count) written to
  pgram[first .. first + count).
</%doc>
<%
    VW = vector_width
    V = "real_t" if VW == 1 else f"{cl_type(dtype)}{VW}"
    R = V if typed else "double"
    lit = (lambda v: f"((real_t){v})") if typed else (lambda v: f"{v}")
    epsneg = float(np.finfo(dtype).epsneg)
%>
<%def name="sin_cos(arg, s, c)">\
% if native and np.dtype(dtype) == np.float32:
${s} = native_sin(${arg}); ${c} = native_cos(${arg});\
% elif paired:
${s} = sincos(${arg}, &${c});\
% else:
${s} = sin(${arg}); ${c} = cos(${arg});\
% endif
</%def>
% if local_size:
__attribute__((reqd_work_group_size(${local_size}, 1, 1)))
% endif
__kernel void lombscargle(const int n, const int first, const int count,
                          __global const real_t *restrict x,
                          __global const real_t *restrict y,
                          __global const real_t *restrict freqs,
                          __global real_t *restrict pgram,
                          const real_t scale)
{
    // Work-item k computes frequencies first + ${VW} k .. first + ${VW} k + ${VW - 1}
    // (buffers padded to a multiple of ${VW} by the host).
    const int items = (count + ${VW - 1}) / ${VW};
% if stride:
    for (int k = get_global_id(0); k < items; k += get_global_size(0)) {
% else:
    {
        const int k = get_global_id(0);
        if (k >= items)
            return;
% endif
        const int i = first + ${VW} * k;
% if VW == 1:
        const ${V} w = freqs[i];
% else:
        const ${V} w = vload${VW}(0, freqs + i);
% endif
        ${V} xc = 0, xs = 0, cc = 0, cs = 0;
        for (int j = 0; j < n; ++j) {
            ${V} s, c;
            ${sin_cos("w * x[j]", "s", "c")}
            const real_t yj = y[j];
            xc += yj * c;
            xs += yj * s;
            cc += c * c;
            cs += c * s;
        }
        const ${"real_t" if typed else "double"} inv_n = ${lit("1.0")} / n;
        xc *= inv_n;
        xs *= inv_n;
        cc *= inv_n;
        cs *= inv_n;
        const ${R} ss = ${lit("1.0")} - cc;
        const ${R} tau = ${lit("0.5")} * atan2(${lit("2.0")} * cs, cc - ss);
        ${V} st, ct;
        ${sin_cos(f"(({V})tau)", "st", "ct")}
        const ${R} yc = ct * xc + st * xs;
        const ${R} ys = ct * xs - st * xc;
        ${R} cc2 = ct * ct * cc + ${lit("2.0")} * ct * st * cs + st * st * ss;
        ${R} ss2 = ${lit("1.0")} - cc2;
        cc2 = fmax(cc2, ${lit(repr(epsneg))});   // SciPy: CC[CC < epsneg] = epsneg
        ss2 = fmax(ss2, ${lit(repr(epsneg))});
        const ${V} p = ${"" if typed else f"({V})"}(scale * ${lit("2.0")} * (yc * yc / cc2 + ys * ys / ss2));
% if VW == 1:
        pgram[i] = p;
% else:
        vstore${VW}(p, 0, pgram + i);
% endif
    }
}
