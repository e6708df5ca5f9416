// Shared definitions of the signal family (DFT, STFT, the cosine-sum windows, MelWeightMatrix):
// shape inference and the CPU kernels resolve axes, lengths and output shapes with the same
// functions.
#pragma once

#include <cstdint>

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

/// How a DFT node transforms its input (all values concrete).
struct DftPlan {
  int64_t axis = 0;      // normalised, in [0, rank - 2]
  int64_t n = 0;         // transform length (dft_length, or its default)
  int64_t in_len = 0;    // input length along axis
  int64_t out_len = 0;   // output length along axis
  int64_t in_comp = 1;   // 1 real, 2 complex input
  int64_t out_comp = 2;  // 2 complex output, 1 for the inverse one-sided transform (IRFFT)
  bool inverse = false;
  bool onesided = false;
  bool irfft() const { return inverse && onesided; }
};

/// DFT axis: the attribute (opset 17, default 1) or the value of input 2 (opset 20, default -2).
/// Valid: [-r, -2] or [0, r - 2]. Returns it normalised; throws naming the node otherwise.
int64_t dft_axis(const Node& node, int64_t rank, int64_t axis);

/// Resolves a DFT over an input of concrete shape `in`; `dft_length` < 0 means "not given".
/// Throws on a bad axis, a bad last dim (1 or 2; real input for the forward one-sided transform,
/// complex for the inverse one) or a non-positive length.
DftPlan dft_plan(const Node& node, const Shape& in, int64_t axis, int64_t dft_length);

/// Output shape of a resolved DFT.
Shape dft_output_shape(const Shape& in, const DftPlan& p);

/// STFT over a [batch, length, 1 or 2] signal.
struct StftPlan {
  int64_t batch = 0, length = 0, comp = 1;
  int64_t step = 0;
  int64_t frame_length = 0;  // transform length
  int64_t frames = 0;
  int64_t bins = 0;          // frame_length / 2 + 1 when onesided, else frame_length
  bool onesided = true;
};

/// `window_length` / `frame_length` < 0: not given. Throws on a signal of bad rank, a
/// non-positive step or frame length, a window that does not match frame_length, a signal
/// shorter than one frame, or a onesided transform of a complex signal.
StftPlan stft_plan(const Node& node, const Shape& signal, int64_t step, int64_t window_length, int64_t frame_length);

/// HannWindow / HammingWindow / BlackmanWindow and MelWeightMatrix output dtype
/// (`output_datatype`, default float); throws if it is not a numeric type.
DType signal_output_dtype(const Node& node);

/// MelWeightMatrix: throws unless num_mel_bins, dft_length and sample_rate are positive.
void mel_check(const Node& node, int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate);

}  // namespace onyx
