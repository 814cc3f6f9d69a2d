<%inherit file="/base.cl.mako"/>
<%namespace name="reduction" file="/reduce.cl.mako"/>
<%doc>
  The seed's picture from a smooth count, on the device: the steps of
  oclsci.mandelbrot.shading.shade_numpy (matplotlib's LightSource.shade with the hot colour map,
  PowerNorm(0.3), vert_exag 1.5 and the HSV blend), in the same operations and order.
  Parameters:
    dtype        real_t, the arithmetic: float64 where the device has it (then equal to NumPy
                 but where OpenCL's pow and glibc's differ in the last bit, which moves a
                 colour-table index only when x * 256 lies that close to an integer)
    src_dtype    the smooth count's type (src_t)
    group_size   work-items per group of mandelbrot_shade_extremes (a power of two)
  The image is the smooth count read bottom-up when flip is set (origin "lower"): image row r is
  smooth row rows-1-r; the hill shading's gradients run along image rows, as NumPy's on the
  flipped array.
  Two kernels:
    mandelbrot_shade_extremes  1-D, a multiple of group_size work-items striding over pixels;
                               per group (kernels/reduce.cl.mako): min and max of the smooth
                               count and of the raw illumination, in partial[4 * group + 0..3]
    mandelbrot_shade           2-D (cols, rows): one pixel each, RGB bytes into rgb
</%doc>
#pragma OPENCL FP_CONTRACT OFF
typedef ${cl_type(src_dtype)} src_t;

// The elevation of image pixel (r, c): vert_exag times the smooth count.
static real_t elevation(__global const src_t *smooth, int rows, int cols, int flip, int r, int c)
{
    const int source_row = flip ? rows - 1 - r : r;
    return (real_t)1.5 * (real_t)smooth[(size_t)source_row * (size_t)cols + (size_t)c];
}

// np.gradient along one axis of unit spacing `step` (-1 along rows, 1 along columns):
// central differences inside, one-sided at the two ends.
static real_t gradient(real_t before, real_t here, real_t after, int at, int last, real_t step)
{
    if (at == 0)
        return (after - here) / step;
    if (at == last)
        return (here - before) / step;
    return (after - before) / ((real_t)2 * step);
}

// matplotlib's hill shading before normalisation (1 where the image is thinner than 2 pixels).
static real_t illumination(__global const src_t *smooth, int rows, int cols, int flip, int r,
                           int c, real_t d0, real_t d1, real_t d2)
{
    if (rows < 2 || cols < 2)
        return 1;
    const real_t here = elevation(smooth, rows, cols, flip, r, c);
    const real_t up = r > 0 ? elevation(smooth, rows, cols, flip, r - 1, c) : here;
    const real_t down = r < rows - 1 ? elevation(smooth, rows, cols, flip, r + 1, c) : here;
    const real_t left = c > 0 ? elevation(smooth, rows, cols, flip, r, c - 1) : here;
    const real_t right = c < cols - 1 ? elevation(smooth, rows, cols, flip, r, c + 1) : here;
    const real_t e_dy = gradient(up, here, down, r, rows - 1, (real_t)-1);
    const real_t e_dx = gradient(left, here, right, c, cols - 1, (real_t)1);
    const real_t norm = sqrt(e_dx * e_dx + e_dy * e_dy + (real_t)1);
    return (-e_dx * d0 - e_dy * d1 + d2) / norm;
}

// NumPy's min and max: a NaN wins (fmin and fmax would drop it).
static real_t nan_min(real_t a, real_t b)
{
    return isnan(a) ? a : isnan(b) ? b : fmin(a, b);
}

static real_t nan_max(real_t a, real_t b)
{
    return isnan(a) ? a : isnan(b) ? b : fmax(a, b);
}

__kernel __attribute__((reqd_work_group_size(${group_size}, 1, 1)))
void mandelbrot_shade_extremes(__global const src_t *restrict smooth, int rows, int cols,
                               int flip, real_t d0, real_t d1, real_t d2,
                               __global real_t *restrict partial)
{
    real_t low = INFINITY, high = -INFINITY, dim = INFINITY, bright = -INFINITY;
    <%reduction:each_item count="(size_t)rows * (size_t)cols" chunked="${False}">
        const int r = (int)(k / (size_t)cols), c = (int)(k % (size_t)cols);
        const real_t value = (real_t)smooth[k];
        const real_t light = illumination(smooth, rows, cols, flip, r, c, d0, d1, d2);
        low = nan_min(low, value);
        high = nan_max(high, value);
        dim = nan_min(dim, light);
        bright = nan_max(bright, light);
    </%reduction:each_item>
${reduction.group_tree(group_size, "real_t", [("low", "nan_min"), ("high", "nan_max"),
                                             ("dim", "nan_min"), ("bright", "nan_max")],
                       "partial")}
}

// NumPy's float remainder by 1 (the result takes the divisor's sign).
static real_t remainder_one(real_t x)
{
    real_t m = fmod(x, (real_t)1);
    if (m != 0 && m < 0)
        m += (real_t)1;
    return m;
}

static uchar to_byte(real_t channel)
{
    return (uchar)clamp(rint(channel * (real_t)255), (real_t)0, (real_t)255);
}

__kernel void mandelbrot_shade(__global const src_t *restrict smooth, int rows, int cols,
                               int flip, real_t d0, real_t d1, real_t d2,
                               real_t vmin, real_t vmax, real_t imin, real_t imax,
                               __global const real_t *restrict table,  // 256 x RGB, hot map
                               __global uchar *restrict rgb)
{
    const int c = (int)get_global_id(0), r = (int)get_global_id(1);
    if (c >= cols || r >= rows)
        return;
    // PowerNorm(0.3) and the hot map's 256-entry table.
    const real_t value = (real_t)smooth[(size_t)(flip ? rows - 1 - r : r) * (size_t)cols + c];
    // (NaN stays NaN through NumPy's clip and power, then the colour map takes it as 0.)
    real_t x = 0;
    if (!(vmax <= vmin)) {
        const real_t scaled = (value - vmin) / (vmax - vmin);
        x = pow(isnan(scaled) ? scaled : fmax(scaled, (real_t)0), (real_t)${0.3});
    }
    x = isnan(x) ? (real_t)0 : x;
    const long index = clamp((long)(x * (real_t)256), 0L, 255L);
    const real_t red = table[3 * index], green = table[3 * index + 1], blue = table[3 * index + 2];
    // Illumination scaled to [0, 1] by its extremes.
    real_t light = illumination(smooth, rows, cols, flip, r, c, d0, d1, d2);
    // A NaN extreme (an overflowing elevation) skips the scaling, as in NumPy; a NaN pixel
    // stays NaN through the clip and leaves its colour unblended.
    if (imax - imin > (real_t)1e-6)
        light = (light - imin) / (imax - imin);
    light = isnan(light) ? light : fmin(fmax(light, (real_t)0), (real_t)1);
    // RGB -> HSV (blue wins ties over green, green over red, as matplotlib).
    const real_t maxc = fmax(fmax(red, green), blue), minc = fmin(fmin(red, green), blue);
    const real_t delta = maxc - minc;
    const real_t safe = delta > 0 ? delta : (real_t)1;
    real_t hue = 0;
    if (red == maxc)
        hue = (green - blue) / safe;
    if (green == maxc)
        hue = (real_t)2 + (blue - red) / safe;
    if (blue == maxc)
        hue = (real_t)4 + (red - green) / safe;
    hue = delta > 0 ? remainder_one(hue / (real_t)6) : (real_t)0;
    real_t sat = maxc > 0 ? delta / maxc : (real_t)0;
    real_t val = maxc;
    // The HSV blend with LightSource's limits (saturation 0..1, value 0..1).
    const real_t l = (real_t)2 * light - (real_t)1;
    const bool coloured = fabs(sat) > (real_t)1e-10;
    if (coloured && l > 0)
        sat = ((real_t)1 - l) * sat + l * (real_t)0;
    if (coloured && l < 0)
        sat = ((real_t)1 + l) * sat - l * (real_t)1;
    if (l > 0)
        val = ((real_t)1 - l) * val + l * (real_t)1;
    if (l < 0)
        val = ((real_t)1 + l) * val - l * (real_t)0;
    sat = clamp(sat, (real_t)0, (real_t)1);
    val = clamp(val, (real_t)0, (real_t)1);
    // HSV -> RGB.
    const real_t h6 = hue * (real_t)6;
    const real_t sector = floor(h6);
    const real_t f = h6 - sector;
    const real_t p = val * ((real_t)1 - sat);
    const real_t q = val * ((real_t)1 - sat * f);
    const real_t t = val * ((real_t)1 - sat * ((real_t)1 - f));
    int i = (int)sector % 6;
    i = i < 0 ? i + 6 : i;
    real_t out_r = val, out_g = val, out_b = val;
    if (sat != 0) {
        out_r = i == 0 || i == 5 ? val : i == 1 ? q : i == 4 ? t : p;
        out_g = i == 0 ? t : i == 1 || i == 2 ? val : i == 3 ? q : p;
        out_b = i == 0 || i == 1 ? p : i == 2 ? t : i == 3 || i == 4 ? val : q;
    }
    const size_t at = 3 * ((size_t)r * (size_t)cols + (size_t)c);
    rgb[at] = to_byte(out_r);
    rgb[at + 1] = to_byte(out_g);
    rgb[at + 2] = to_byte(out_b);
}
