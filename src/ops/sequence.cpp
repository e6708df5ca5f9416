// sequence family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_sequence_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
