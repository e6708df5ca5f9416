// reduce family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_reduce_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
