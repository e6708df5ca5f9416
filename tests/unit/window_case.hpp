// A 2-D window (convolution) case for the kernel tests: channels, plane, kernel, strides,
// dilations and pads (top, left, bottom, right), and its geometry.
#pragma once

#include "ops/nn.hpp"

namespace onyx::test {

struct WindowCase {
  int64_t c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;

  WindowGeometry geometry() const {
    WindowGeometry g;
    g.kernel = Shape{kh, kw};
    g.stride = Shape{sh, sw};
    g.dilation = Shape{dh, dw};
    g.pad_begin = Shape{pt, pl};
    g.pad_end = Shape{pb, pr};
    g.out = Shape{(h + pt + pb - ((kh - 1) * dh + 1)) / sh + 1, (w + pl + pr - ((kw - 1) * dw + 1)) / sw + 1};
    return g;
  }
  /// The input under tap (ki, kj) of output (i, j) in plane `x` (h x w), zero in the padding.
  float tap(const float* x, int64_t i, int64_t j, int64_t ki, int64_t kj) const {
    const int64_t ih = i * sh - pt + ki * dh, iw = j * sw - pl + kj * dw;
    return ih >= 0 && ih < h && iw >= 0 && iw < w ? x[ih * w + iw] : 0.0f;
  }
};

}  // namespace onyx::test
