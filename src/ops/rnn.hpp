// Shared definitions of the rnn family (RNN, GRU, LSTM): attribute parsing and the shape checks,
// used by shape inference and by the CPU kernels so both agree on dims and error messages.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "ir/graph.hpp"
#include "onyx/shape.hpp"

namespace onyx {

enum class RnnKind : uint8_t { kRnn, kGru, kLstm };

/// The kind of an RNN / GRU / LSTM node.
RnnKind rnn_kind(const Node& node);
/// Gates per direction: 1 (RNN), 3 (GRU: z, r, h), 4 (LSTM: i, o, f, c).
inline int64_t rnn_gates(RnnKind k) { return k == RnnKind::kRnn ? 1 : k == RnnKind::kGru ? 3 : 4; }
/// Activation functions per direction: 1 (RNN), 2 (GRU), 3 (LSTM).
inline int rnn_num_activations(RnnKind k) { return k == RnnKind::kRnn ? 1 : k == RnnKind::kGru ? 2 : 3; }

enum class RnnDirection : uint8_t { kForward, kReverse, kBidirectional };
/// The `direction` attribute (throws on an unknown value).
RnnDirection rnn_direction(const Node& node);
inline int64_t rnn_num_directions(RnnDirection d) { return d == RnnDirection::kBidirectional ? 2 : 1; }
/// `layout` (opset 14): 0 = time-major [seq, batch, ...], 1 = batch-major [batch, seq, ...].
bool rnn_batch_major(const Node& node);
/// Whether `name` (any case) is one of the recurrent ops' activation functions.
bool rnn_activation_known(std::string_view name);

/// "No dim at all" (distinct from symbols, which are negative too).
inline constexpr int64_t kNoDim = std::numeric_limits<int64_t>::min();

/// Resolved dims of one RNN node; during inference a negative value is a symbol.
struct RnnDims {
  int64_t seq = kNoDim, batch = kNoDim, input = kNoDim, hidden = kNoDim, dirs = 1;
};

/// Checks the shapes of the inputs present (null = omitted) against each other and against the
/// node's attributes, and returns the dims. Unknown (negative) dims are not checked. Every
/// mismatch throws onyx::Error (kInvalidArgument) naming the input. `hidden_attr` is the
/// hidden_size attribute, or <= 0 when absent (then R's last dim gives it).
/// Inputs: X, W, R, B, sequence_lens, initial_h, initial_c, P (the last two for LSTM).
RnnDims rnn_check_shapes(const Node& node, RnnKind kind, int64_t dirs, bool batch_major, int64_t hidden_attr,
                         const Shape& x, const Shape& w, const Shape& r, const Shape* b, const Shape* seq_lens,
                         const Shape* initial_h, const Shape* initial_c, const Shape* p);

}  // namespace onyx
