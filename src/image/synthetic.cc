// render_synthetic_image: a procedural dataset a small CNN can learn at
// 64x64. The class fixes the shape (and, past the 12 shapes, a hue family);
// a counter-based RNG keyed by (seed, index, label) fixes everything else,
// so any image can be rendered alone, in any order, on any thread.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "sluice/image.h"

namespace sluice {
namespace {

// splitmix64's output function: a bijective avalanche mix of 64 bits.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

class Rng {
 public:
  explicit Rng(uint64_t key) : state_(key) {}
  uint64_t next() { return mix64(state_ += kGolden); }
  // Uniform in [lo, hi), from the top 24 bits (exact in a float).
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
  }
  bool coin() { return (next() >> 63) != 0; }

 private:
  uint64_t state_;
};

enum class Shape : int {
  kDisc,
  kSquare,
  kTriangle,
  kRing,
  kCross,
  kHorizontalStripes,
  kVerticalStripes,
  kCheckerboard,
  kDiamond,
  kDots,
  kStar,
  kFrame,
};
constexpr int kShapeCount = 12;

struct Rgb {
  float r, g, b;
};

Rgb hsv(float h, float s, float v) {
  const float h6 = (h - std::floor(h)) * 6.0f;
  const int sector = static_cast<int>(h6) % 6;
  const float f = h6 - std::floor(h6);
  const float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  switch (sector) {
    case 0: return {v, t, p};
    case 1: return {q, v, p};
    case 2: return {p, v, t};
    case 3: return {p, q, v};
    case 4: return {t, p, v};
    default: return {v, p, q};
  }
}

float luma(Rgb c) {
  return 0.299f * c.r + 0.587f * c.g + 0.114f * c.b;
}

bool in_square(float u, float v, float half) {
  return std::max(std::abs(u), std::abs(v)) <= half;
}

int band(float x, float half, int bands) {
  return static_cast<int>((x + half) / (2 * half) * static_cast<float>(bands));
}

bool in_star(float u, float v) {
  constexpr float kSector = 2 * std::numbers::pi_v<float> / 5;
  constexpr float kInner = 0.45f;
  float t = std::fmod(std::atan2(v, u) + 2 * std::numbers::pi_v<float>, kSector);
  if (t > kSector / 2) t = kSector - t;
  const float rho = std::sqrt(u * u + v * v);
  const float px = rho * std::cos(t), py = rho * std::sin(t);
  const float bx = kInner * std::cos(kSector / 2), by = kInner * std::sin(kSector / 2);
  // Same side of the edge from the tip (1, 0) to the inner corner as the centre.
  return (bx - 1) * py - by * (px - 1) >= 0;
}

// (u, v): the pixel in the shape's frame, in units of its radius.
bool inside(Shape shape, float u, float v) {
  const float rr = u * u + v * v;
  if (rr > 1.3f) return false;  // every shape lies within this
  switch (shape) {
    case Shape::kDisc: return rr <= 1;
    case Shape::kSquare: return in_square(u, v, 0.8f);
    case Shape::kTriangle:  // equilateral, circumradius 1, inradius 0.5
      return -v <= 0.5f && 0.866f * u + 0.5f * v <= 0.5f && -0.866f * u + 0.5f * v <= 0.5f;
    case Shape::kRing: return rr <= 1 && rr >= 0.55f * 0.55f;
    case Shape::kCross:
      return (std::abs(u) <= 0.28f && std::abs(v) <= 0.95f) ||
             (std::abs(v) <= 0.28f && std::abs(u) <= 0.95f);
    case Shape::kHorizontalStripes: return in_square(u, v, 0.85f) && band(v, 0.85f, 5) % 2 == 0;
    case Shape::kVerticalStripes: return in_square(u, v, 0.85f) && band(u, 0.85f, 5) % 2 == 0;
    case Shape::kCheckerboard:
      return in_square(u, v, 0.85f) && (band(u, 0.85f, 4) + band(v, 0.85f, 4)) % 2 == 0;
    case Shape::kDiamond: return std::abs(u) + std::abs(v) <= 1;
    case Shape::kDots: {
      constexpr float kPitch = 0.62f, kDot = 0.22f;
      const float du = u - kPitch * std::clamp(std::round(u / kPitch), -1.0f, 1.0f);
      const float dv = v - kPitch * std::clamp(std::round(v / kPitch), -1.0f, 1.0f);
      return du * du + dv * dv <= kDot * kDot;
    }
    case Shape::kStar: return in_star(u, v);
    case Shape::kFrame: return in_square(u, v, 0.85f) && !in_square(u, v, 0.5f);
  }
  return false;
}

bool freely_rotated(Shape s) {
  return s == Shape::kTriangle || s == Shape::kStar;
}

struct Scene {
  Shape shape;
  float cx, cy, radius, cos_a, sin_a;
  Rgb fg, bg;
  float gradient_x, gradient_y;  // relative brightness change across the image
  uint64_t noise_key;
};

// Foreground and background far apart in luma, so the shape never fades
// into its background.
void pick_colours(Rng& rng, float fg_hue_lo, float fg_hue_hi, Scene* s) {
  constexpr float kMinContrast = 0.35f;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const bool dark_fg = rng.coin();
    const float fg_v = dark_fg ? rng.uniform(0.1f, 0.45f) : rng.uniform(0.65f, 1.0f);
    const float bg_v = dark_fg ? rng.uniform(0.65f, 0.95f) : rng.uniform(0.1f, 0.4f);
    s->fg = hsv(rng.uniform(fg_hue_lo, fg_hue_hi), rng.uniform(0.45f, 1.0f), fg_v);
    s->bg = hsv(rng.uniform(0, 1), rng.uniform(0, 0.5f), bg_v);
    if (std::abs(luma(s->fg) - luma(s->bg)) >= kMinContrast) return;
  }
  s->fg = {0.95f, 0.95f, 0.95f};
  s->bg = {0.1f, 0.1f, 0.1f};
}

Scene make_scene(int label, int num_classes, uint64_t seed, uint64_t index, int width, int height) {
  const uint64_t key =
      mix64(mix64(mix64(seed) ^ index) ^ (static_cast<uint64_t>(label) * kGolden + 1));
  Rng rng(key);
  Scene s;
  s.shape = static_cast<Shape>(label % kShapeCount);
  const float short_side = static_cast<float>(std::min(width, height));
  s.radius = 0.5f * short_side * rng.uniform(0.3f, 0.8f);
  const float mx = std::min(s.radius, 0.5f * width), my = std::min(s.radius, 0.5f * height);
  s.cx = rng.uniform(mx, static_cast<float>(width) - mx);
  s.cy = rng.uniform(my, static_cast<float>(height) - my);
  constexpr float kPi = std::numbers::pi_v<float>;
  // Small tilts only, so a square never turns into a diamond.
  const float angle =
      freely_rotated(s.shape) ? rng.uniform(0, 2 * kPi) : rng.uniform(-kPi / 12, kPi / 12);
  s.cos_a = std::cos(angle);
  s.sin_a = std::sin(angle);
  // Past the 12 shapes, classes sharing a shape differ by hue family.
  const int families = std::max(1, (num_classes + kShapeCount - 1) / kShapeCount);
  const int family = (label / kShapeCount) % families;
  const float hue_lo = families == 1 ? 0 : (family + 0.15f) / families;
  const float hue_hi = families == 1 ? 1 : (family + 0.85f) / families;
  pick_colours(rng, hue_lo, hue_hi, &s);
  // At most +-15 % across the image: less than the contrast margin.
  s.gradient_x = rng.uniform(-0.15f, 0.15f);
  s.gradient_y = rng.uniform(-0.15f, 0.15f);
  s.noise_key = rng.next();
  return s;
}

uint8_t to_byte(float x) {
  return static_cast<uint8_t>(std::clamp(x, 0.0f, 255.0f) + 0.5f);
}

void render(const Scene& s, Image* image) {
  const float inv_r = 1.0f / s.radius;
  const float inv_w = 1.0f / image->width, inv_h = 1.0f / image->height;
  uint8_t* p = image->pixels.data();
  uint64_t pixel = 0;
  for (int y = 0; y < image->height; ++y) {
    const float dy = (y + 0.5f - s.cy) * inv_r;
    for (int x = 0; x < image->width; ++x, ++pixel, p += 3) {
      const float dx = (x + 0.5f - s.cx) * inv_r;
      const float u = dx * s.cos_a + dy * s.sin_a;
      const float v = -dx * s.sin_a + dy * s.cos_a;
      Rgb c = s.fg;
      if (!inside(s.shape, u, v)) {
        const float shade =
            1 + s.gradient_x * (x * inv_w - 0.5f) + s.gradient_y * (y * inv_h - 0.5f);
        c = {s.bg.r * shade, s.bg.g * shade, s.bg.b * shade};
      }
      // Mild noise, +-8 levels per channel, from the pixel's own counter.
      const uint64_t n = mix64(s.noise_key + pixel * kGolden);
      p[0] = to_byte(c.r * 255 + static_cast<float>(n & 15) - 7.5f);
      p[1] = to_byte(c.g * 255 + static_cast<float>((n >> 8) & 15) - 7.5f);
      p[2] = to_byte(c.b * 255 + static_cast<float>((n >> 16) & 15) - 7.5f);
    }
  }
}

}  // namespace

Image render_synthetic_image(int label, int num_classes, uint64_t seed, uint64_t index, int width,
                             int height) {
  Image image;
  if (width <= 0 || height <= 0) return image;
  image.width = width;
  image.height = height;
  image.channels = 3;
  image.pixels.resize(image.row_bytes() * static_cast<size_t>(height));
  render(make_scene(std::max(label, 0), std::max(num_classes, 1), seed, index, width, height),
         &image);
  return image;
}

}  // namespace sluice
