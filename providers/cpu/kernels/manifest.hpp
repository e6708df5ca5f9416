// The CPU EP's kernel manifest: one function per kernel family file, each returning that file's
// KernelDef table. provider.cpp registers exactly these.
#pragma once

#include <span>

#include "ep/kernel.hpp"

namespace onyx::cpu {

std::span<const KernelDef> elementwise_kernels();   // kernels/elementwise.cpp
std::span<const KernelDef> unary_kernels();         // kernels/unary.cpp
std::span<const KernelDef> tensor_kernels();        // kernels/tensor.cpp
std::span<const KernelDef> nn_kernels();            // kernels/nn.cpp (normalisations, Dropout)
std::span<const KernelDef> conv_kernels();          // kernels/conv.cpp
std::span<const KernelDef> pool_kernels();          // kernels/pool.cpp
std::span<const KernelDef> conv_nhwc_kernels();     // kernels/conv_nhwc.cpp (onyx.nhwc forms)
std::span<const KernelDef> qconv_kernels();         // kernels/qconv.cpp (8-bit onyx.nhwc forms)
std::span<const KernelDef> qmatmul_kernels();       // kernels/qmatmul.cpp (8-bit products on qgemm)
std::span<const KernelDef> linalg_kernels();        // kernels/linalg.cpp
std::span<const KernelDef> reduce_kernels();        // kernels/reduce.cpp
std::span<const KernelDef> control_flow_kernels();  // kernels/control_flow.cpp
std::span<const KernelDef> sequence_kernels();      // kernels/sequence.cpp
std::span<const KernelDef> index_kernels();         // kernels/index.cpp
std::span<const KernelDef> image_kernels();         // kernels/image.cpp
std::span<const KernelDef> image_decoder_kernels();  // kernels/image_decoder.cpp
std::span<const KernelDef> loss_kernels();          // kernels/loss.cpp
std::span<const KernelDef> text_kernels();          // kernels/text.cpp
std::span<const KernelDef> rnn_kernels();           // kernels/rnn.cpp
std::span<const KernelDef> quant_kernels();         // kernels/quant.cpp
std::span<const KernelDef> signal_kernels();        // kernels/signal.cpp
std::span<const KernelDef> random_kernels();        // kernels/random.cpp
std::span<const KernelDef> training_kernels();      // kernels/training.cpp
std::span<const KernelDef> einsum_kernels();        // kernels/einsum.cpp
std::span<const KernelDef> gradient_kernels();      // kernels/gradient.cpp
std::span<const KernelDef> attention_kernels();     // kernels/attention.cpp (onyx::Attention)
std::span<const KernelDef> transformer_kernels();   // kernels/transformer.cpp (Attention, RotaryEmbedding, ...)
std::span<const KernelDef> ml_kernels();            // kernels/ml.cpp (domain ai.onnx.ml)
std::span<const KernelDef> ml_tree_kernels();       // kernels/ml_trees.cpp (ai.onnx.ml tree ensembles)
std::span<const KernelDef> ml_svm_kernels();        // kernels/ml_svm.cpp (ai.onnx.ml support vector machines)
std::span<const KernelDef> ml_feature_kernels();    // kernels/ml_features.cpp (Imputer, OneHotEncoder, ...)
std::span<const KernelDef> qlinear_contrib_kernels();  // kernels/qlinear_contrib.cpp (com.microsoft QLinear* ops)
std::span<const KernelDef> contrib_nn_kernels();       // kernels/contrib_nn.cpp (com.microsoft Gelu family, norms, ...)
std::span<const KernelDef> contrib_attention_kernels();  // kernels/contrib_attention.cpp (com.microsoft Attention, MHA, ...)
std::span<const KernelDef> gqa_kernels();              // kernels/gqa.cpp (GroupQueryAttention, com.microsoft RotaryEmbedding)
std::span<const KernelDef> matmul_nbits_kernels();     // kernels/matmul_nbits.cpp (MatMulNBits)
std::span<const KernelDef> dq_lstm_kernels();          // kernels/dq_lstm.cpp (DynamicQuantizeLSTM)

inline constexpr std::span<const KernelDef> (*kKernelFamilies[])() = {
    elementwise_kernels, unary_kernels, tensor_kernels, nn_kernels, conv_kernels, pool_kernels,
    linalg_kernels,      reduce_kernels, control_flow_kernels, sequence_kernels,
    index_kernels,       image_kernels,  loss_kernels,         text_kernels,
    rnn_kernels,         quant_kernels,  signal_kernels,       random_kernels,
    training_kernels,    einsum_kernels,  gradient_kernels,     attention_kernels,
    transformer_kernels, ml_kernels,     ml_tree_kernels,      ml_svm_kernels,
    ml_feature_kernels,  image_decoder_kernels, conv_nhwc_kernels, qconv_kernels, qmatmul_kernels, qlinear_contrib_kernels,
    contrib_nn_kernels,  contrib_attention_kernels, gqa_kernels, matmul_nbits_kernels,
    dq_lstm_kernels,
};

}  // namespace onyx::cpu
