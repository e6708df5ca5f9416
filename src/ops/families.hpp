// The op families. Each family file registers its schemas; this is the one list of families.
#pragma once

namespace onyx {

class OpRegistry;

void register_elementwise_ops(OpRegistry& r);   // ops/elementwise.cpp
void register_tensor_ops(OpRegistry& r);        // ops/tensor.cpp
void register_nn_ops(OpRegistry& r);            // ops/nn.cpp
void register_linalg_ops(OpRegistry& r);        // ops/linalg.cpp
void register_reduce_ops(OpRegistry& r);        // ops/reduce.cpp
void register_control_flow_ops(OpRegistry& r);  // ops/control_flow.cpp
void register_sequence_ops(OpRegistry& r);      // ops/sequence.cpp
void register_index_ops(OpRegistry& r);         // ops/index.cpp
void register_image_ops(OpRegistry& r);         // ops/image.cpp
void register_loss_ops(OpRegistry& r);          // ops/loss.cpp
void register_text_ops(OpRegistry& r);          // ops/text.cpp
void register_rnn_ops(OpRegistry& r);           // ops/rnn.cpp
void register_quant_ops(OpRegistry& r);         // ops/quant.cpp
void register_signal_ops(OpRegistry& r);        // ops/signal.cpp
void register_random_ops(OpRegistry& r);        // ops/random.cpp
void register_training_ops(OpRegistry& r);      // ops/training.cpp
void register_einsum_ops(OpRegistry& r);        // ops/einsum.cpp
void register_layout_ops(OpRegistry& r);        // ops/layout.cpp (channels-last forms)
void register_transformer_ops(OpRegistry& r);   // ops/transformer.cpp (Attention, RotaryEmbedding, ...)
void register_ml_ops(OpRegistry& r);            // ops/ml.cpp (domain ai.onnx.ml)
void register_contrib_quant_ops(OpRegistry& r);  // ops/contrib_quant.cpp (com.microsoft QLinear* ops)
void register_contrib_transformer_ops(OpRegistry& r);  // ops/contrib_transformer.cpp (com.microsoft transformer ops)
void register_contrib_gqa_ops(OpRegistry& r);    // ops/contrib_gqa.cpp (GroupQueryAttention, RotaryEmbedding)
void register_contrib_nbits_ops(OpRegistry& r);  // ops/contrib_nbits.cpp (MatMulNBits)
void register_contrib_rnn_ops(OpRegistry& r);    // ops/contrib_rnn.cpp (DynamicQuantizeLSTM)

inline void register_all_op_families(OpRegistry& r) {
  register_elementwise_ops(r);
  register_tensor_ops(r);
  register_nn_ops(r);
  register_linalg_ops(r);
  register_reduce_ops(r);
  register_control_flow_ops(r);
  register_sequence_ops(r);
  register_index_ops(r);
  register_image_ops(r);
  register_loss_ops(r);
  register_text_ops(r);
  register_rnn_ops(r);
  register_quant_ops(r);
  register_signal_ops(r);
  register_random_ops(r);
  register_training_ops(r);
  register_einsum_ops(r);
  register_layout_ops(r);
  register_transformer_ops(r);
  register_ml_ops(r);
  register_contrib_quant_ops(r);
  register_contrib_transformer_ops(r);
  register_contrib_gqa_ops(r);
  register_contrib_nbits_ops(r);
  register_contrib_rnn_ops(r);
}

}  // namespace onyx
