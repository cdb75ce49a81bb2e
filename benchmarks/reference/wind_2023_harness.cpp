// Headless driver for the 2023 SimpleWindErosion simulation loop (github
// weigert/SimpleWindErosion, source/world.hpp + wind.hpp), used only as a benchmark
// comparator by benchmarks/bench_wind.py. It is compiled against a fetched copy of
// that repository in a temporary folder (never committed here); this file only stubs
// the renderer types its headers mention and times World::erode.
//
//   wind_2023 heights.f32 side particles_per_frame frames seed out.f32
//
// heights.f32: side*side float32 in the 2023 code's own unit (cell units / mapscale),
// row-major by its x (the wind's axis, pspeed = +x). Prints one JSON line.
#include <glm/glm.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <vector>
using namespace glm;
using namespace std;

struct Vertex {};
template <typename T> struct Vertexpool {  // the renderer's vertex pool: no-ops
  vector<uint> indices;
  uint* section(int, int, vec3, size_t) { return nullptr; }
  void resize(uint*, size_t) {}
  void index() {}
  void update() {}
  template <typename... A> void fill(A...) {}
};

#include "source/world.hpp"

mappool::pool<quad::cell> cellpool;

int main(int argc, char** argv) {
  if (argc < 7) { fprintf(stderr, "usage: heights side per_frame frames seed out\n"); return 2; }
  const int side = atoi(argv[2]), per_frame = atoi(argv[3]), frames = atoi(argv[4]);
  if (side != quad::size) { fprintf(stderr, "built for %d, got %d\n", quad::size, side); return 2; }
  srand(atoi(argv[5]));
  vector<float> h(side * side);
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(h.data(), 4, h.size(), f) != h.size()) { fprintf(stderr, "read\n"); return 2; }
  fclose(f);
  Vertexpool<Vertex> vp;
  cellpool.reserve(quad::area);
  World::map.init(vp, cellpool, 1);
  for (int x = 0; x < side; x++)
    for (int y = 0; y < side; y++) World::map.getCell(ivec2(x, y))->height = h[x * side + y];
  auto t0 = chrono::steady_clock::now();
  for (int i = 0; i < frames; i++) World::erode(per_frame);
  double ms = chrono::duration<double, milli>(chrono::steady_clock::now() - t0).count();
  for (int x = 0; x < side; x++)
    for (int y = 0; y < side; y++) h[x * side + y] = World::map.getCell(ivec2(x, y))->height;
  f = fopen(argv[6], "wb");
  fwrite(h.data(), 4, h.size(), f);
  fclose(f);
  printf("{\"side\": %d, \"particles\": %ld, \"ms\": %.3f}\n", side,
         (long)per_frame * frames, ms);
  return 0;
}
