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
}

}  // namespace onyx
