// TensorProto / SparseTensorProto / SequenceProto / OptionalProto: decoding into onyx values and
// encoding back (for `onyx run --save` and tests).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ir/graph.hpp"
#include "model/mapped_file.hpp"
#include "model/proto.hpp"
#include "ir/symbols.hpp"

namespace onyx {

/// Where tensor bytes live while a model is loaded.
struct TensorSource {
  std::shared_ptr<MappedFile> file;  // the buffer ProtoReaders point into (zero-copy views keep it alive)
  std::string base_dir;              // directory for external data ("" = not allowed)
  /// External data files mapped so far (shared by all tensors of a model).
  std::shared_ptr<std::map<std::string, std::shared_ptr<MappedFile>>> external =
      std::make_shared<std::map<std::string, std::shared_ptr<MappedFile>>>();
};

/// Decodes a TensorProto. `name` receives its name.
Tensor parse_tensor_proto(ProtoReader r, const TensorSource& src, std::string* name);
/// Decodes a SparseTensorProto into a dense tensor.
Tensor parse_sparse_tensor_proto(ProtoReader r, const TensorSource& src, std::string* name);
/// Decodes a TypeProto. Symbolic dims (dim_param) are interned in `symbols`; dims with neither
/// a value nor a name get fresh symbols.
TypeInfo parse_type_proto(ProtoReader r, SymbolTable& symbols, int depth = 0);

/// Reads a backend-test `.pb` file: a TensorProto, or, when `type` says the value is a sequence
/// or an optional, a SequenceProto / OptionalProto. `name` receives the stored name.
Value read_value_file(const std::string& path, const TypeInfo* type, std::string* name);

/// Encodes a tensor as a TensorProto (raw_data; string_data for strings).
std::string encode_tensor_proto(const Tensor& t, const std::string& name);
/// Encodes a value: TensorProto for a tensor, SequenceProto, OptionalProto.
std::string encode_value_proto(const Value& v, const std::string& name);
/// Writes encode_value_proto(v, name) to `path`.
void write_value_file(const std::string& path, const Value& v, const std::string& name);

}  // namespace onyx
