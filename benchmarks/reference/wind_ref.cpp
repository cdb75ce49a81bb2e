// C++ port of the wind erosion loop of seed 000 (N. McDonald, particle wind erosion),
// used only as a benchmark comparator for simcore/wind.py (benchmarks/bench_wind.py).
//
// Follows the article's Wind::fly, Wind::cascade and World::erode: float position and
// speed, double maps, pspeed (1, 0, 1), dt 0.25, suspension/abrasion 1e-4, roughness
// 0.005, settling 0.01, gravity 0.01, path rate 0.01, particles spawned at integer
// points on the two upwind edges. Heights are in the article's unit (cell units / 40,
// its "scale"); the normal is the article's surfaceNormal idea computed from central
// differences of the scaled heights (the article does not print its surfaceNormal).
// No glm: the few vector operations are written out.
//
//   wind_ref HEIGHTS.f32 SEDIMENT.f32 SIZE PARTICLES BATCHES SEED
// prints one JSON line: size, particles, batches, steps, ms (erosion loop only), finite.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

static const double SCALE = 40.0;

struct Vec3 { float x, y, z; };

static uint64_t rng_state;
static uint32_t next_rand() {  // xorshift64*, stands in for rand()
  rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 2685821657736338717ULL) >> 32);
}

struct World {
  int dx, dy;
  std::vector<double> h, s, path;
  std::vector<char> track;
  long long steps = 0;

  Vec3 normal(int ix, int iy) const {
    int l = ix > 0 ? ix - 1 : 0, r = ix < dx - 1 ? ix + 1 : dx - 1;
    int u = iy > 0 ? iy - 1 : 0, d = iy < dy - 1 ? iy + 1 : dy - 1;
    double gx = SCALE * ((h[r * dy + iy] + s[r * dy + iy]) - (h[l * dy + iy] + s[l * dy + iy])) / (r - l);
    double gz = SCALE * ((h[ix * dy + d] + s[ix * dy + d]) - (h[ix * dy + u] + s[ix * dy + u])) / (d - u);
    double inv = 1.0 / std::sqrt(gx * gx + gz * gz + 1.0);
    return Vec3{(float)(-gx * inv), (float)inv, (float)(-gz * inv)};
  }
};

struct Wind {
  float px, py;  // position (x, "y" = second index)
  float height = 0.0f;
  Vec3 pspeed{1.0f, 0.0f, 1.0f};
  Vec3 speed = pspeed;
  double sediment = 0.0;
  const float dt = 0.25f;
  const double suspension = 0.0001, abrasion = 0.0001, roughness = 0.005, settling = 0.01;

  void cascade(int i, World& w) {
    const int nx[8] = {-1, -1, -1, 0, 0, 1, 1, 1};
    const int ny[8] = {-1, 0, 1, -1, 1, -1, 0, 1};
    int ix = i / w.dy, iy = i % w.dy;
    for (int m = 0; m < 8; m++) {
      int jx = ix + nx[m], jy = iy + ny[m];
      if (jx < 0 || jy < 0 || jx >= w.dx || jy >= w.dy) continue;
      int n = jx * w.dy + jy;
      float diff = (w.h[i] + w.s[i]) - (w.h[n] + w.s[n]);
      float excess = std::fabs(diff) - roughness;
      if (excess <= 0) continue;
      float transfer;
      if (diff > 0) transfer = std::fmin(w.s[i], excess / 2.0);
      else transfer = -std::fmin(w.s[n], excess / 2.0);
      w.s[i] -= dt * settling * transfer;
      w.s[n] += dt * settling * transfer;
    }
  }

  void fly(World& w) {
    double* h = w.h.data();
    double* s = w.s.data();
    while (true) {
      int ix = (int)px, iy = (int)py;
      int ind = ix * w.dy + iy;
      w.steps++;
      if (height < h[ind] + s[ind]) height = h[ind] + s[ind];
      Vec3 n = w.normal(ix, iy);
      if (height > h[ind] + s[ind]) {
        speed.y -= dt * 0.01f;
      } else {
        w.track[ind] = 1;
        // cross(cross(speed, n), n)
        Vec3 a{speed.y * n.z - speed.z * n.y, speed.z * n.x - speed.x * n.z,
               speed.x * n.y - speed.y * n.x};
        Vec3 b{a.y * n.z - a.z * n.y, a.z * n.x - a.x * n.z, a.x * n.y - a.y * n.x};
        speed.x += dt * b.x; speed.y += dt * b.y; speed.z += dt * b.z;
      }
      speed.x += 0.1f * dt * (pspeed.x - speed.x);
      speed.y += 0.1f * dt * (pspeed.y - speed.y);
      speed.z += 0.1f * dt * (pspeed.z - speed.z);
      px += dt * speed.x;
      py += dt * speed.z;
      height += dt * speed.y;
      if (!(px >= 0 && py >= 0) || (int)px >= w.dx || (int)py >= w.dy) break;
      int nind = (int)px * w.dy + (int)py;
      float len = std::sqrt(speed.x * speed.x + speed.y * speed.y + speed.z * speed.z);
      if (height <= h[nind] + s[nind]) {
        double force = len * (s[nind] + h[nind] - height);
        if (s[ind] <= 0) {
          s[ind] = 0;
          h[ind] -= dt * abrasion * force * sediment;
          s[ind] += dt * abrasion * force * sediment;
        } else if (s[ind] > dt * suspension * force) {
          s[ind] -= dt * suspension * force;
          sediment += dt * suspension * force;
          cascade(ind, w);
        } else {
          s[ind] = 0;
        }
      } else {
        sediment -= dt * suspension * sediment;
        s[nind] += 0.5 * dt * suspension * sediment;
        s[ind] += 0.5 * dt * suspension * sediment;
        cascade(nind, w);
        cascade(ind, w);
      }
      if (len < 0.01) break;
    }
  }
};

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s HEIGHTS.f32 SEDIMENT.f32 SIZE PARTICLES BATCHES SEED\n", argv[0]);
    return 2;
  }
  int size = std::atoi(argv[3]);
  long particles = std::atol(argv[4]);
  int batches = std::atoi(argv[5]);
  rng_state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)std::atoll(argv[6]);
  World w;
  w.dx = w.dy = size;
  size_t cells = (size_t)size * size;
  std::vector<float> buf(cells);
  w.h.resize(cells); w.s.resize(cells); w.path.assign(cells, 0.0); w.track.assign(cells, 0);
  for (int k = 0; k < 2; k++) {
    FILE* f = std::fopen(argv[1 + k], "rb");
    if (!f || std::fread(buf.data(), sizeof(float), cells, f) != cells) {
      std::fprintf(stderr, "cannot read %s\n", argv[1 + k]);
      return 1;
    }
    std::fclose(f);
    std::vector<double>& dst = k == 0 ? w.h : w.s;
    for (size_t i = 0; i < cells; i++) dst[i] = buf[i] / SCALE;  // article height unit
  }
  auto t0 = std::chrono::steady_clock::now();
  for (int b = 0; b < batches; b++) {
    std::fill(w.track.begin(), w.track.end(), 0);
    for (long i = 0; i < particles; i++) {
      int shift = next_rand() % (2 * size);
      Wind wind;
      if (shift < size) { wind.px = shift; wind.py = 1; }
      else { wind.px = 1; wind.py = shift - size; }
      wind.fly(w);
    }
    const double lrate = 0.01;
    for (size_t i = 0; i < cells; i++)
      w.path[i] = (1.0 - lrate) * w.path[i] + lrate * (w.track[i] ? 1.0 : 0.0);
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  bool finite = true;
  for (size_t i = 0; i < cells; i++) finite = finite && std::isfinite(w.h[i] + w.s[i]);
  std::printf("{\"size\": %d, \"particles\": %ld, \"batches\": %d, \"steps\": %lld, "
              "\"ms\": %.3f, \"finite\": %s}\n", size, particles, batches, w.steps, ms,
              finite ? "true" : "false");
  return 0;
}
