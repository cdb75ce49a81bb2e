/*
 * droplet_port.c -- benchmark comparator, NOT part of the add-on.
 *
 * Our droplet algorithm (simcore/hydraulic.py, run_batch) written as a plain,
 * single-threaded C99 loop, so the numba kernel can be timed against compiled C
 * doing exactly the same work: float64 grids (height, bedrock, sediment,
 * eroded, deposited, erodibility as separate row-major arrays), open edges,
 * counter-based splitmix64 streams per droplet, uniform rain, sediment taken
 * before bedrock (scaled by erodibility), the brush normalised over the cells
 * inside the grid and floored at the next height on the path, pits filled while
 * the droplet keeps its speed, and the same strip order (even strips, then odd,
 * droplets in index order per strip, handed over when they leave the band).
 * With -ffp-contract=off the result is bit-identical to the numba kernel
 * (checked by benchmarks/reference/port.py); any reordering of floating-point
 * operations would change it.
 *
 * Built as a shared library and called through ctypes on the very arrays the
 * numba kernel uses (benchmarks/reference/port.py).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STRIP_ROWS 32
#define STREAM_ID 1ULL

typedef struct { /* simcore.hydraulic.Kernel, in that order */
    double Kq, Kw, Kr, Kd, Ki, min_slope, Kg, radius;
    int64_t max_steps;
    double dig_area, deposit_reach, slope_run;
} Kernel;

typedef struct {
    double x, y, dx, dy, v, w, s;
} Droplet;

typedef struct {
    double *height, *bedrock, *sediment, *eroded, *deposited;
    const double *erodibility;
    int64_t rows, cols;
} Grid;

static const uint64_t GOLDEN = 0x9E3779B97F4A7C15ULL;
static const uint64_t MIX1 = 0xBF58476D1CE4E5B9ULL;
static const uint64_t MIX2 = 0x94D049BB133111EBULL;

static inline uint64_t mix64(uint64_t x)
{
    uint64_t z = x + GOLDEN;
    z = (z ^ (z >> 30)) * MIX1;
    z = (z ^ (z >> 27)) * MIX2;
    return z ^ (z >> 31);
}

static inline double next_uniform(uint64_t *state)
{
    uint64_t s = *state + GOLDEN;
    *state = s;
    uint64_t z = (s ^ (s >> 30)) * MIX1;
    z = (z ^ (z >> 27)) * MIX2;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static inline double fmin_(double a, double b) { return b < a ? b : a; }
static inline double fmax_(double a, double b) { return b > a ? b : a; }

/* remove up to dig (sediment first, then bedrock x erodibility), lay down lay */
static inline double exchange(const Grid *g, int64_t k, double dig, double lay)
{
    double s0 = g->sediment[k];
    double from_sed = fmin_(dig, s0);
    double rock = (dig - from_sed) * g->erodibility[k];
    double new_sed = (s0 - from_sed) + lay;
    double new_rock = g->bedrock[k] - rock;
    g->sediment[k] = new_sed;
    g->bedrock[k] = new_rock;
    g->height[k] = new_rock + new_sed;
    double removed = from_sed + rock;
    double dep = g->deposited[k];
    double from_dep = fmin_(removed, dep);
    g->deposited[k] = (dep - from_dep) + lay;
    g->eroded[k] += removed - from_dep;
    return removed;
}

static inline void put_at(const Grid *g, int64_t k, double amount)
{
    g->sediment[k] += amount;
    g->height[k] = g->bedrock[k] + g->sediment[k];
    g->deposited[k] += amount;
}

static inline void put_bilinear(const Grid *g, double x, double y, double amount)
{
    int64_t xi = (int64_t)x, yi = (int64_t)y;
    double fx = x - xi, fy = y - yi;
    int64_t k = yi * g->cols + xi;
    put_at(g, k, amount * (1 - fx) * (1 - fy));
    put_at(g, k + 1, amount * fx * (1 - fy));
    put_at(g, k + g->cols, amount * (1 - fx) * fy);
    put_at(g, k + g->cols + 1, amount * fx * fy);
}

/* the brush's cell box inside the grid, 1/r^2 and the sum of its weights */
static inline double brush(const Grid *g, double xp, double yp, double radius, int64_t *x0p,
                           int64_t *x1p, int64_t *y0p, int64_t *y1p, double *inv_r2p)
{
    double inv_r2 = 1.0 / (radius * radius);
    int64_t x0 = (int64_t)floor(xp - radius) + 1, x1 = (int64_t)floor(xp + radius);
    int64_t y0 = (int64_t)floor(yp - radius) + 1, y1 = (int64_t)floor(yp + radius);
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > g->cols - 1) x1 = g->cols - 1;
    if (y1 > g->rows - 1) y1 = g->rows - 1;
    double total = 0.0;
    for (int64_t y = y0; y <= y1; ++y)
        for (int64_t x = x0; x <= x1; ++x)
            total += fmax_(1.0 - ((x - xp) * (x - xp) + (y - yp) * (y - yp)) * inv_r2, 0.0);
    *x0p = x0; *x1p = x1; *y0p = y0; *y1p = y1; *inv_r2p = inv_r2;
    return total;
}

/* weights 1 - d^2/r^2 normalised over the cells inside the grid, never below floor */
static inline double erode_brush(const Grid *g, double xp, double yp, double amount,
                                 double floor_h, double radius)
{
    double inv_r2;
    int64_t x0, x1, y0, y1;
    double total = brush(g, xp, yp, radius, &x0, &x1, &y0, &y1, &inv_r2);
    double removed = 0.0;
    if (total <= 0.0) return removed;
    double scale = amount / total;
    for (int64_t y = y0; y <= y1; ++y) {
        for (int64_t x = x0; x <= x1; ++x) {
            int64_t k = y * g->cols + x;
            double wgt = 1.0 - ((x - xp) * (x - xp) + (y - yp) * (y - yp)) * inv_r2;
            if (wgt > 0.0) { /* a zero share would change nothing: skip the cell */
                double share = fmin_(wgt * scale, g->height[k] - floor_h);
                if (share > 0.0) removed += exchange(g, k, share, 0.0);
            }
        }
    }
    return removed;
}

/* the 1-D tent max(1 - |i - p|/reach, 0) over cells 0 .. n-1: first, last cell, sum */
static inline double tent(double p, double reach, int64_t n, int64_t *i0p, int64_t *i1p,
                          double *invp)
{
    int64_t i0 = (int64_t)floor(p - reach) + 1, i1 = (int64_t)floor(p + reach);
    if (i0 < 0) i0 = 0;
    if (i1 > n - 1) i1 = n - 1;
    double inv = 1.0 / reach, total = 0.0;
    for (int64_t i = i0; i <= i1; ++i) total += fmax_(1.0 - fabs(i - p) * inv, 0.0);
    *i0p = i0; *i1p = i1; *invp = inv;
    return total;
}

/* lay amount down with the separable tent (1 - |dx|/reach)(1 - |dy|/reach), normalised
   over the grid; at reach 1 the article's bilinear deposit */
static inline void deposit_tent(const Grid *g, double xp, double yp, double amount,
                                double reach)
{
    if (reach <= 1.0) { /* the same weights, without the loops */
        put_bilinear(g, xp, yp, amount);
        return;
    }
    int64_t x0, x1, y0, y1;
    double inv, inv_y;
    double sx = tent(xp, reach, g->cols, &x0, &x1, &inv);
    double sy = tent(yp, reach, g->rows, &y0, &y1, &inv_y);
    double scale = amount / (sx * sy);
    for (int64_t y = y0; y <= y1; ++y) {
        double wy = fmax_(1.0 - fabs(y - yp) * inv, 0.0) * scale;
        for (int64_t x = x0; x <= x1; ++x)
            put_at(g, y * g->cols + x, fmax_(1.0 - fabs(x - xp) * inv, 0.0) * wy);
    }
}

/* run one droplet while its row stays in [lo, hi): -1 ended, -2 left the grid,
   else the row it stepped onto outside the band */
static int64_t segment(const Grid *g, const Kernel *p, Droplet *d, uint64_t *rng,
                       int64_t *steps, int64_t lo, int64_t hi)
{
    const double *height = g->height;
    const int64_t cols = g->cols, rows = g->rows;
    const double Kq = p->Kq, Kw = p->Kw, Kr = p->Kr, Kd = p->Kd, Ki = p->Ki;
    const double min_slope = p->min_slope, Kg = p->Kg, radius = p->radius;
    const double reach = p->deposit_reach, run = p->slope_run;
    const double dig_area = p->dig_area;
    const double inv_area = 0.99 / dig_area;
    const int64_t max_steps = p->max_steps;
    double xp = d->x, yp = d->y, dx = d->dx, dy = d->dy, v = d->v, w = d->w, s = d->s;
    int64_t n = *steps, result = -1;
    int64_t xi = (int64_t)xp, yi = (int64_t)yp;
    int64_t k = yi * cols + xi;
    double h00 = height[k], h10 = height[k + 1], h01 = height[k + cols],
           h11 = height[k + cols + 1];
    double fx = xp - xi, fy = yp - yi;
    double h = (h00 * (1 - fx) + h10 * fx) * (1 - fy) + (h01 * (1 - fx) + h11 * fx) * fy;
    for (;;) {
        if (n >= max_steps) {
            put_bilinear(g, xp, yp, s);
            s = 0.0;
            break;
        }
        if (yi < lo || yi >= hi) {
            result = yi;
            break;
        }
        double gx = h00 + h01 - h10 - h11;
        double gy = h00 + h10 - h01 - h11;
        dx = (dx - gx) * Ki + gx;
        dy = (dy - gy) * Ki + gy;
        double dl = sqrt(dx * dx + dy * dy);
        if (dl <= 1e-12) {
            double a = next_uniform(rng) * 2.0 * M_PI;
            dx = cos(a);
            dy = sin(a);
        } else {
            dx /= dl;
            dy /= dl;
        }
        double nxp = xp + dx, nyp = yp + dy;
        if (nxp < 0.0 || nyp < 0.0 || nxp >= cols - 1 || nyp >= rows - 1) {
            result = -2;
            break;
        }
        int64_t nxi = (int64_t)nxp, nyi = (int64_t)nyp;
        double nfx = nxp - nxi, nfy = nyp - nyi;
        int64_t nk = nyi * cols + nxi;
        double n00 = height[nk], n10 = height[nk + 1], n01 = height[nk + cols],
               n11 = height[nk + cols + 1];
        double nh = (n00 * (1 - nfx) + n10 * nfx) * (1 - nfy) +
                    (n01 * (1 - nfx) + n11 * nfx) * nfy;
        if (nh >= h) { /* fill the pit, keep the speed; stop when the load is used up */
            double ds = (nh - h) + 0.001;
            if (ds >= s) {
                put_bilinear(g, xp, yp, s);
                s = 0.0;
                n += 1;
                break;
            }
            put_bilinear(g, xp, yp, ds);
            h += ds;
            s -= ds;
        }
        double dh = h - nh;
        double slope = dh;
        if (run > 1.0) { /* the slope over run cells ahead (one step off the map) */
            double fxp = xp + dx * run, fyp = yp + dy * run;
            if (fxp >= 0.0 && fyp >= 0.0 && fxp < cols - 1 && fyp < rows - 1) {
                int64_t fxi = (int64_t)fxp, fyi = (int64_t)fyp;
                double ffx = fxp - fxi, ffy = fyp - fyi;
                int64_t fk = fyi * cols + fxi;
                double fh = (height[fk] * (1 - ffx) + height[fk + 1] * ffx) * (1 - ffy) +
                            (height[fk + cols] * (1 - ffx) + height[fk + cols + 1] * ffx) *
                                ffy;
                slope = (h - fh) / run;
            }
        }
        double q = fmax_(slope, min_slope) * v * w * Kq;
        double ds = s - q;
        if (ds >= 0.0) {
            ds *= Kd;
            deposit_tent(g, xp, yp, ds, reach);
            dh += ds * inv_area;
            s -= ds;
        } else {
            ds = fmin_(-ds * Kr, dh * dig_area);
            double got = erode_brush(g, xp, yp, ds, nh, radius);
            dh -= got * inv_area;
            s += got;
        }
        v = sqrt(fmax_(v * v + Kg * dh, 0.0));
        w *= 1.0 - Kw;
        xp = nxp; yp = nyp; xi = nxi; yi = nyi;
        h = nh; h00 = n00; h10 = n10; h01 = n01; h11 = n11;
        n += 1;
    }
    d->x = xp; d->y = yp; d->dx = dx; d->dy = dy; d->v = v; d->w = w; d->s = s;
    *steps = n;
    return result;
}

/* droplets first .. first+count-1; returns the steps taken, *lost = sediment carried
   off the grid. Uniform rain only. The strip margin is given by the caller. */
__attribute__((noinline)) int64_t droplet_port_batch(
    uint64_t seed, int64_t first, int64_t count, const Kernel *p, int64_t margin,
    int64_t rows, int64_t cols, double *height, double *bedrock, double *sediment,
    double *eroded, double *deposited, const double *erodibility, double *lost_out)
{
    Grid g = {height, bedrock, sediment, eroded, deposited, erodibility, rows, cols};
    int64_t nstrips = (rows + STRIP_ROWS - 1) / STRIP_ROWS;
    Droplet *state = calloc((size_t)count + 1, sizeof(Droplet));
    uint64_t *rng = malloc(((size_t)count + 1) * sizeof(uint64_t));
    int64_t *steps = calloc((size_t)count + 1, sizeof(int64_t));
    int64_t *strip = malloc(((size_t)count + 1) * sizeof(int64_t));
    int64_t *order = malloc(((size_t)count + 1) * sizeof(int64_t));
    int64_t *counts = malloc(((size_t)nstrips + 1) * sizeof(int64_t));
    int64_t *fill = malloc(((size_t)nstrips + 1) * sizeof(int64_t));
    double *lost = calloc((size_t)nstrips, sizeof(double));
    for (int64_t k = 0; k < count; ++k) {
        uint64_t st = mix64(mix64(mix64(seed) ^ STREAM_ID) ^ (uint64_t)(first + k));
        next_uniform(&st); /* the rain-map pick, unused for uniform rain */
        double a = next_uniform(&st), b = next_uniform(&st);
        state[k].x = a * (cols - 1);
        state[k].y = b * (rows - 1);
        state[k].w = 1.0;
        rng[k] = st;
        strip[k] = (int64_t)floor(state[k].y) / STRIP_ROWS;
    }
    int64_t live = count;
    while (live > 0) {
        for (int64_t parity = 0; parity < 2; ++parity) {
            memset(counts, 0, ((size_t)nstrips + 1) * sizeof(int64_t));
            for (int64_t k = 0; k < count; ++k)
                if (strip[k] >= 0 && strip[k] % 2 == parity) counts[strip[k] + 1] += 1;
            for (int64_t s = 0; s < nstrips; ++s) counts[s + 1] += counts[s];
            memcpy(fill, counts, (size_t)nstrips * sizeof(int64_t));
            for (int64_t k = 0; k < count; ++k)
                if (strip[k] >= 0 && strip[k] % 2 == parity) order[fill[strip[k]]++] = k;
            for (int64_t s = parity; s < nstrips; s += 2) {
                int64_t lo = s * STRIP_ROWS - margin, hi = (s + 1) * STRIP_ROWS + margin;
                if (lo < 0) lo = 0;
                if (hi > rows) hi = rows;
                for (int64_t j = counts[s]; j < counts[s + 1]; ++j) {
                    int64_t k = order[j];
                    int64_t res = segment(&g, p, &state[k], &rng[k], &steps[k], lo, hi);
                    if (res == -1) {
                        strip[k] = -1;
                    } else if (res == -2) {
                        lost[s] += state[k].s;
                        state[k].s = 0.0;
                        strip[k] = -1;
                    } else {
                        strip[k] = res / STRIP_ROWS;
                    }
                }
            }
        }
        live = 0;
        for (int64_t k = 0; k < count; ++k) live += strip[k] >= 0;
    }
    double total_lost = 0.0;
    for (int64_t s = 0; s < nstrips; ++s) total_lost += lost[s];
    int64_t total_steps = 0;
    for (int64_t k = 0; k < count; ++k) total_steps += steps[k];
    *lost_out = total_lost;
    free(state); free(rng); free(steps); free(strip); free(order); free(counts);
    free(fill); free(lost);
    return total_steps;
}
