// C++ port of the hydrology loop of seeds 002/004 (N. McDonald, "procedural hydrology:
// dynamic rivers and lakes", 2020), used only as a benchmark comparator for
// simcore/hydrology.py (benchmarks/bench_hydrology.py). Written from the article's text
// (Drop::descend, Drop::flood, World::erode) with the parameters of ALGORITHMS.md §4.
//
// As in the article: heights normalised to 0..1 (h = height / SCALE, SCALE = the
// relief in cells, passed in) and the normal computed on SCALE * (h + pool); particles
// start on a uniform random cell; volume 1, volumeFactor 100; the flood is the
// article's recursive 8-neighbour fill with a map-sized "tried" array cleared on every
// try, the article's drain comparison, drainage 0.001, 10 % of the sediment kept, the
// 0.5 approach and at most 10 failed tries; spill 5; the stream map adapts by 0.01
// after each batch. c_eq = volume * |speed| * drop (ALGORITHMS.md). Changes: the fill
// checks row and column bounds (the article's flat-index test lets it wrap across
// rows); rand() is replaced by xorshift64*. The fill recurses as deep as a lake is
// large, so the work runs on a thread with a 1 GiB stack.
//
//   hydrology_ref HEIGHTS.f64 SIZE SCALE PARTICLES BATCH SEED OUT_POOL.f64
// HEIGHTS: SIZE*SIZE doubles in cell units (row-major). Prints one JSON line: size,
// particles, seconds (erosion loop), flood_seconds (inside Drop::flood), floods,
// flood_tries, steps. Writes the pool depths (cell units) to OUT_POOL.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <pthread.h>
#include <vector>

using Clock = std::chrono::steady_clock;

static uint64_t rng_state;
static uint32_t next_rand() {  // xorshift64*, stands in for rand()
  rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 2685821657736338717ULL) >> 32);
}

struct World {
  int dim = 0;
  double scale = 1.0;
  std::vector<double> h, stream, pool;
  std::vector<char> track;
  long long steps = 0, floods = 0, tries = 0;
  double flood_seconds = 0.0;
};

struct Drop {
  double px, py;  // position: px = first index (row), py = second (column)
  double sx = 0.0, sy = 0.0;
  double volume = 1.0;
  double sediment = 0.0;
  const double dt = 1.2, density = 1.0, evapRate = 0.001, depositionRate = 0.1;
  const double minVol = 0.01, friction = 0.05, volumeFactor = 100.0;

  void descend(World& w);
  void flood(World& w);
};

void Drop::descend(World& w) {
  const int dim = w.dim;
  double* h = w.h.data();
  double* p = w.pool.data();
  while (volume > minVol) {
    int ix = (int)px, iy = (int)py;
    int ind = ix * dim + iy;
    w.track[ind] = 1;
    // surface normal of SCALE * (h + pool), central differences (one-sided at edges)
    int l = ix > 0 ? ix - 1 : 0, r = ix < dim - 1 ? ix + 1 : dim - 1;
    int u = iy > 0 ? iy - 1 : 0, d = iy < dim - 1 ? iy + 1 : dim - 1;
    double gx = w.scale * ((h[r * dim + iy] + p[r * dim + iy]) - (h[l * dim + iy] + p[l * dim + iy])) / (r - l);
    double gy = w.scale * ((h[ix * dim + d] + p[ix * dim + d]) - (h[ix * dim + u] + p[ix * dim + u])) / (d - u);
    double inv = 1.0 / std::sqrt(gx * gx + gy * gy + 1.0);
    double effD = depositionRate;
    double effF = friction * (1.0 - 0.5 * w.stream[ind]);
    double effR = evapRate * (1.0 - 0.2 * w.stream[ind]);
    double ax = -gx * inv / (volume * density), ay = -gy * inv / (volume * density);
    sx += dt * ax; sy += dt * ay;
    px += dt * sx; py += dt * sy;
    sx *= (1.0 - dt * effF); sy *= (1.0 - dt * effF);
    w.steps++;
    if (!(px >= 0.0 && py >= 0.0 && (int)px < dim && (int)py < dim)) { volume = 0.0; break; }
    int nind = (int)px * dim + (int)py;
    if (w.stream[nind] > 0.5 && std::sqrt(ax * ax + ay * ay) < 0.01) break;
    if (p[nind] > 0.0) break;
    double speed = std::sqrt(sx * sx + sy * sy);
    double c_eq = volume * speed * (h[ind] - h[nind]);
    if (c_eq < 0.0) c_eq = 0.0;
    double cdiff = c_eq - sediment;
    sediment += dt * effD * cdiff;
    h[ind] -= volume * dt * effD * cdiff;
    sediment /= (1.0 - dt * effR);
    volume *= (1.0 - dt * effR);
  }
}

void Drop::flood(World& w) {
  const int dim = w.dim, size = dim * dim;
  double* height = w.h.data();
  double* pool = w.pool.data();
  int index = (int)px * dim + (int)py;
  double plane = height[index] + pool[index];
  double initialplane = plane;
  std::vector<int> set;
  int fail = 10;
  while (volume > minVol && fail) {
    w.tries++;
    set.clear();
    std::vector<char> tried(size, 0);  // the article's bool tried[size] = {false}
    int drain = 0;
    bool drainfound = false;
    std::function<void(int)> fill = [&](int i) {
      if (tried[i]) return;
      tried[i] = 1;
      if (plane < height[i] + pool[i]) return;
      if (initialplane > height[i] + pool[i]) {
        if (!drainfound) drain = i;
        else if (pool[drain] + height[drain] < pool[i] + height[i]) drain = i;
        drainfound = true;
        return;
      }
      set.push_back(i);
      int r = i / dim, c = i % dim;
      for (int dr = -1; dr <= 1; dr++)
        for (int dc = -1; dc <= 1; dc++) {
          int nr = r + dr, nc = c + dc;
          if ((dr || dc) && nr >= 0 && nr < dim && nc >= 0 && nc < dim) fill(nr * dim + nc);
        }
    };
    fill(index);
    if (drainfound) {
      px = drain / dim; py = drain % dim;
      double drainage = 0.001;
      plane = (1.0 - drainage) * initialplane + drainage * (height[drain] + pool[drain]);
      for (int s : set) pool[s] = (plane > height[s]) ? (plane - height[s]) : 0.0;
      sediment *= 0.1;
      break;
    }
    double tVol = 0.0;
    for (int s : set) tVol += volumeFactor * (plane - (height[s] + pool[s]));
    if (tVol <= volume && initialplane < plane) {
      for (int s : set) pool[s] = plane - height[s];
      volume -= tVol;
      tVol = 0.0;
    } else {
      fail--;
    }
    initialplane = (plane > initialplane) ? plane : initialplane;
    plane += 0.5 * (volume - tVol) / (double)set.size() / volumeFactor;
  }
  if (fail == 0) volume = 0.0;
}

struct Job {
  World* w;
  long long particles;
  int batch;
  double seconds;
};

static void* run(void* arg) {
  Job* job = (Job*)arg;
  World& w = *job->w;
  auto t0 = Clock::now();
  for (long long done = 0; done < job->particles; done += job->batch) {
    std::fill(w.track.begin(), w.track.end(), 0);
    long long n = std::min<long long>(job->batch, job->particles - done);
    for (long long k = 0; k < n; k++) {
      Drop drop{(double)(next_rand() % w.dim), (double)(next_rand() % w.dim)};
      int spill = 5;
      while (drop.volume > drop.minVol && spill != 0) {
        drop.descend(w);
        if (drop.volume > drop.minVol) {
          auto f0 = Clock::now();
          drop.flood(w);
          w.flood_seconds += std::chrono::duration<double>(Clock::now() - f0).count();
          w.floods++;
        }
        spill--;
      }
    }
    const double lrate = 0.01;
    for (int i = 0; i < w.dim * w.dim; i++)
      w.stream[i] = (1.0 - lrate) * w.stream[i] + lrate * (w.track[i] ? 1.0 : 0.0);
  }
  job->seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return nullptr;
}

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s HEIGHTS.f64 SIZE SCALE PARTICLES BATCH SEED OUT_POOL.f64\n", argv[0]);
    return 2;
  }
  World w;
  w.dim = std::atoi(argv[2]);
  w.scale = std::atof(argv[3]);
  long long particles = std::atoll(argv[4]);
  int batch = std::atoi(argv[5]);
  rng_state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)std::atoll(argv[6]);
  const int n = w.dim * w.dim;
  w.h.resize(n); w.stream.assign(n, 0.0); w.pool.assign(n, 0.0); w.track.assign(n, 0);
  FILE* f = std::fopen(argv[1], "rb");
  if (!f || std::fread(w.h.data(), sizeof(double), n, f) != (size_t)n) {
    std::fprintf(stderr, "cannot read %d doubles from %s\n", n, argv[1]);
    return 2;
  }
  std::fclose(f);
  for (double& v : w.h) v /= w.scale;  // the article's normalised heights
  Job job{&w, particles, batch, 0.0};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, (size_t)1 << 30);
  pthread_t thread;
  if (pthread_create(&thread, &attr, run, &job) != 0) { std::fprintf(stderr, "no thread\n"); return 1; }
  pthread_join(thread, nullptr);
  for (double& v : w.pool) v *= w.scale;  // back to cell units
  FILE* out = std::fopen(argv[7], "wb");
  std::fwrite(w.pool.data(), sizeof(double), n, out);
  std::fclose(out);
  std::printf("{\"size\": %d, \"particles\": %lld, \"seconds\": %.6f, \"flood_seconds\": %.6f, "
              "\"floods\": %lld, \"flood_tries\": %lld, \"steps\": %lld}\n",
              w.dim, particles, job.seconds, w.flood_seconds, w.floods, w.tries, w.steps);
  return 0;
}
