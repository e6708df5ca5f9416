// index family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_index_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
