/*
 * droplet_ref.c -- benchmark comparator, NOT part of the add-on.
 *
 * A plain C99, single-threaded port of the droplet loop
 * HeightmapData::genDropletErosion() from the hydraulic-erosion article kept in
 * shared/seeds/001_54a2342f1eecc431.txt ("Code sample" section). It exists only
 * so our numba kernel can be timed side by side with a straightforward compiled
 * version of the same algorithm (build: gcc -O3 -march=native).
 *
 * Kept as in the article: float32 heightmap with wrap-around indexing
 * (HMAP_INDEX masks x and z with size-1, so size must be a power of two),
 * the 4-corner gradient, direction inertia Ki, a random direction when the
 * gradient vanishes, bilinear sampling of the next height, pit filling up to
 * the next height + 0.001, capacity q = max(slope,minSlope)*v*w*Kq, bilinear
 * deposition of (s-q)*Kd, erosion min((q-s)*Kr, dh*0.99) spread with the
 * radius-2 bell brush over x,z in [i-1, i+2], the per-cell erosion/deposition
 * record (Point2 r,d as in the ERODE macro), v = sqrt(v*v + 2*g*dh),
 * w *= 1-Kw, MAX_PATH_LEN = 4*size. Default parameters as in the article:
 * Kq=10 Kw=0.001 Kr=0.9 Kd=0.02 Ki=0.1 minSlope=0.05 g=20.
 *
 * Left out: the surface-colour calls params.deposit()/params.erode() (and the
 * scolor they carry), the progress splash and the debug log. game_rnd()/frnd()
 * are replaced by xorshift64*.
 *
 * Usage: droplet_ref <heights.f32> <size> <droplets> <seed> [out.f32]
 *   heights.f32: raw little-endian float32, size*size values, row-major
 *   (row = z, column = x). Prints one line of JSON to stdout; "seconds" is the
 *   wall time (CLOCK_MONOTONIC) of the droplet loop only. If out.f32 is given
 *   the eroded heights are written there in the same format.
 */
#define _POSIX_C_SOURCE 199309L
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct { float x, y; } Point2; /* x: removed (r), y: deposited (d) */

typedef struct {
    float Kq, Kw, Kr, Kd, Ki, minSlope, g;
} ErosionParams;

static uint64_t rng_state;

static inline uint64_t game_rnd(void) /* xorshift64* */
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline float frnd(void) /* [0, 1) */
{
    return (float)(game_rnd() >> 40) * (1.0f / 16777216.0f);
}

static inline int intfloorf(float v) { return (int)floorf(v); }

typedef struct {
    uint64_t steps, long_paths, random_dirs;
} Stats;

static Stats gen_droplet_erosion(float *hmap, Point2 *erosion, int size,
                                 unsigned iterations, const ErosionParams *params)
{
    const float Kq = params->Kq, Kw = params->Kw, Kr = params->Kr, Kd = params->Kd,
                Ki = params->Ki, minSlope = params->minSlope, Kg = params->g * 2;
    const int mask = size - 1;
    const unsigned MAX_PATH_LEN = (unsigned)size * 4;
    const float TWOPI = 6.283185307179586f;

#define HMAP_INDEX(X, Z) ((((Z) & mask) * size) + ((X) & mask))
#define HMAP(X, Z) hmap[HMAP_INDEX((X), (Z))]

    /* params.deposit(scolor, surface[...], delta) left out */
#define DEPOSIT_AT(X, Z, W)                       \
    {                                             \
        float delta = ds * (W);                   \
        erosion[HMAP_INDEX((X), (Z))].y += delta; \
        hmap[HMAP_INDEX((X), (Z))] += delta;      \
    }

#define DEPOSIT(H)                             \
    DEPOSIT_AT(xi, zi, (1 - xf) * (1 - zf))    \
    DEPOSIT_AT(xi + 1, zi, xf * (1 - zf))      \
    DEPOSIT_AT(xi, zi + 1, (1 - xf) * zf)      \
    DEPOSIT_AT(xi + 1, zi + 1, xf * zf)        \
    (H) += ds;

    uint64_t longPaths = 0, randomDirs = 0, sumLen = 0;

    for (unsigned iter = 0; iter < iterations; ++iter) {
        int xi = (int)(game_rnd() & (uint64_t)mask);
        int zi = (int)(game_rnd() & (uint64_t)mask);

        float xp = (float)xi, zp = (float)zi;
        float xf = 0, zf = 0;

        float h = HMAP(xi, zi);
        float s = 0, v = 0, w = 1;

        float h00 = h;
        float h10 = HMAP(xi + 1, zi);
        float h01 = HMAP(xi, zi + 1);
        float h11 = HMAP(xi + 1, zi + 1);

        float dx = 0, dz = 0;

        unsigned numMoves = 0;
        for (; numMoves < MAX_PATH_LEN; ++numMoves) {
            /* calc gradient */
            float gx = h00 + h01 - h10 - h11;
            float gz = h00 + h10 - h01 - h11;

            /* calc next pos */
            dx = (dx - gx) * Ki + gx;
            dz = (dz - gz) * Ki + gz;

            float dl = sqrtf(dx * dx + dz * dz);
            if (dl <= FLT_EPSILON) {
                /* pick random dir */
                float a = frnd() * TWOPI;
                dx = cosf(a);
                dz = sinf(a);
                ++randomDirs;
            } else {
                dx /= dl;
                dz /= dl;
            }

            float nxp = xp + dx;
            float nzp = zp + dz;

            /* sample next height */
            int nxi = intfloorf(nxp);
            int nzi = intfloorf(nzp);
            float nxf = nxp - nxi;
            float nzf = nzp - nzi;

            float nh00 = HMAP(nxi, nzi);
            float nh10 = HMAP(nxi + 1, nzi);
            float nh01 = HMAP(nxi, nzi + 1);
            float nh11 = HMAP(nxi + 1, nzi + 1);

            float nh = (nh00 * (1 - nxf) + nh10 * nxf) * (1 - nzf) +
                       (nh01 * (1 - nxf) + nh11 * nxf) * nzf;

            /* if higher than current, try to deposit sediment up to neighbour height */
            if (nh >= h) {
                float ds = (nh - h) + 0.001f;

                if (ds >= s) {
                    /* deposit all sediment and stop */
                    ds = s;
                    DEPOSIT(h)
                    s = 0;
                    break;
                }

                DEPOSIT(h)
                s -= ds;
                v = 0;
            }

            /* compute transport capacity */
            float dh = h - nh;
            float slope = dh;

            float q = fmaxf(slope, minSlope) * v * w * Kq;

            /* deposit/erode (don't erode more than dh) */
            float ds = s - q;
            if (ds >= 0) {
                /* deposit */
                ds *= Kd;

                DEPOSIT(dh)
                s -= ds;
            } else {
                /* erode */
                ds *= -Kr;
                ds = fminf(ds, dh * 0.99f);

                /* params.erode(scolor, surface[...], s, delta) left out */
#define ERODE(X, Z, W)                                  \
    {                                                   \
        float delta = ds * (W);                         \
        hmap[HMAP_INDEX((X), (Z))] -= delta;            \
        Point2 *e = &erosion[HMAP_INDEX((X), (Z))];     \
        float r = e->x, d = e->y;                       \
        if (delta <= d)                                 \
            d -= delta;                                 \
        else {                                          \
            r += delta - d;                             \
            d = 0;                                      \
        }                                               \
        e->x = r;                                       \
        e->y = d;                                       \
    }

                for (int z = zi - 1; z <= zi + 2; ++z) {
                    float zo = z - zp;
                    float zo2 = zo * zo;

                    for (int x = xi - 1; x <= xi + 2; ++x) {
                        float xo = x - xp;

                        /* "w" in the article (shadows the water amount) */
                        float bw = 1 - (xo * xo + zo2) * 0.25f;
                        if (bw <= 0) continue;
                        bw *= 0.1591549430918953f;

                        ERODE(x, z, bw)
                    }
                }

                dh -= ds;

#undef ERODE

                s += ds;
            }

            /* move to the neighbour */
            v = sqrtf(v * v + Kg * dh);
            w *= 1 - Kw;

            xp = nxp; zp = nzp;
            xi = nxi; zi = nzi;
            xf = nxf; zf = nzf;

            h = nh;
            h00 = nh00;
            h10 = nh10;
            h01 = nh01;
            h11 = nh11;
        }

        if (numMoves >= MAX_PATH_LEN) ++longPaths;

        sumLen += numMoves;
    }

#undef DEPOSIT
#undef DEPOSIT_AT
#undef HMAP
#undef HMAP_INDEX

    Stats st = {sumLen, longPaths, randomDirs};
    return st;
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s <heights.f32> <size> <droplets> <seed> [out.f32]\n", argv[0]);
        return 2;
    }
    long size = strtol(argv[2], NULL, 10);
    unsigned long droplets = strtoul(argv[3], NULL, 10);
    unsigned long long seed = strtoull(argv[4], NULL, 10);
    if (size < 2 || size > (1L << 15) || (size & (size - 1)) != 0) {
        fprintf(stderr, "size must be a power of two (2..32768), got %ld\n", size);
        return 2;
    }
    size_t n = (size_t)size * (size_t)size;

    float *hmap = malloc(n * sizeof(float));
    Point2 *erosion = calloc(n, sizeof(Point2)); /* zero-filled, as fillMem32(0.0f) */
    if (!hmap || !erosion) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    if (fread(hmap, sizeof(float), n, f) != n) {
        fprintf(stderr, "%s: expected %zu float32 values\n", argv[1], n);
        return 1;
    }
    fclose(f);

    /* xorshift must not start at 0; splitmix the seed once */
    uint64_t z = (uint64_t)seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    rng_state = z ? z : 0x853C49E6748FEA9BULL;

    ErosionParams params = {10.0f, 0.001f, 0.9f, 0.02f, 0.1f, 0.05f, 20.0f};

    double t0 = now_sec();
    Stats st = gen_droplet_erosion(hmap, erosion, (int)size, (unsigned)droplets, &params);
    double t1 = now_sec();
    double secs = t1 - t0;

    /* summaries, outside the timed loop (also keeps the erosion record live) */
    double removed = 0, deposited = 0;
    int finite = 1;
    for (size_t i = 0; i < n; ++i) {
        removed += erosion[i].x;
        deposited += erosion[i].y;
        if (!isfinite(hmap[i])) finite = 0;
    }

    printf("{\"size\":%ld,\"droplets\":%lu,\"steps\":%llu,\"seconds\":%.9f,"
           "\"ns_per_step\":%.4f,\"long_paths\":%llu,\"random_dirs\":%llu,"
           "\"removed\":%.6g,\"deposited\":%.6g,\"finite\":%s}\n",
           size, droplets, (unsigned long long)st.steps, secs,
           st.steps ? secs * 1e9 / (double)st.steps : 0.0,
           (unsigned long long)st.long_paths, (unsigned long long)st.random_dirs,
           removed, deposited, finite ? "true" : "false");

    if (argc == 6) {
        FILE *o = fopen(argv[5], "wb");
        if (!o) { perror(argv[5]); return 1; }
        if (fwrite(hmap, sizeof(float), n, o) != n) { perror(argv[5]); return 1; }
        fclose(o);
    }

    free(hmap);
    free(erosion);
    return 0;
}
